
/*
 * ngx_http_goblin_module: cache mode, the client's side.
 *
 * GET: LOOKUP with RING_LOOKUP_FILLING.  A stored object is answered as a
 * plain goblin GET does (ngx_http_goblin_handler.c: stored headers
 * replayed, head and disk, ranges, conditionals).  An object still being
 * filled, here or by another worker, is read along: its stored status and
 * headers at once, then every byte as it lands (a READ of unknown length
 * for a chunked origin); a fill that is aborted cuts the client
 * (connection closed, HTTP/2 stream reset), never a short body that looks
 * complete.  A miss starts this worker's fill of the key
 * (ngx_http_goblin_fill.c) or waits on the one that runs; once the fill's
 * writer holds the headers, every waiter looks up again and reads along.
 * A response the cache does not store (not 200, no-store, private,
 * Set-Cookie, too large), a fill that failed before it was findable, or a
 * second miss: the client goes to goblin_origin itself (an internal
 * redirect: the origin's answer as it is).  HEAD on a miss goes to the
 * origin (as HEAD: no body is pulled).
 *
 * A Range not from byte 0 on an object not stored yet goes to the origin
 * with its Range (answered from its offset at the origin's first byte)
 * while the whole object is filled beside it.
 *
 * A stored object the request's Cache-Control (or Pragma: no-cache) does
 * not accept (no-cache, max-age, min-fresh: RFC 9111 5.2.1) is filled anew
 * and read along (BYPASS), and so is a stale one kept for stale-if-error
 * (EXPIRED), served (STALE) if that fill fails; only-if-cached is 504.
 *
 * Other methods go to goblin_origin unchanged; a 2xx or 3xx answer deletes
 * the stored key (RFC 9111 4.4).
 */


#include "ngx_http_goblin_cache.h"


static void ngx_http_goblin_cache_lookup(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_cache_found(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static void ngx_http_goblin_cache_miss(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_cache_variant(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe, ngx_int_t rc);
static void ngx_http_goblin_cache_refresh(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_cache_keep_attr(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static void ngx_http_goblin_cache_join(ngx_http_goblin_cache_t *cache,
    ngx_http_goblin_fill_t *fill);
static void ngx_http_goblin_cache_woken(ngx_http_goblin_cache_t *cache);
static void ngx_http_goblin_cache_read_along(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static void ngx_http_goblin_cache_read_done(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static void ngx_http_goblin_cache_redirect(ngx_http_goblin_ctx_t *ctx,
    ngx_http_goblin_cache_status_e status);
static void ngx_http_goblin_cache_cleanup(void *data);
static void ngx_http_goblin_cache_set_status(ngx_http_request_t *r,
    ngx_http_goblin_cache_status_e status);
static ngx_int_t ngx_http_goblin_cache_status_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


/* The completions of a GET or HEAD in cache mode. */
static const ngx_http_goblin_completion_t  ngx_http_goblin_cache_completions[]
    = {
    { RING_OP_LOOKUP, ngx_http_goblin_cache_found },
    { RING_OP_DATA, ngx_http_goblin_got_data },
    { RING_OP_READ, ngx_http_goblin_cache_read_done },
    { 0, NULL }
};


/* An unsafe method passed on: its DELETE comes back an orphan. */
static const ngx_http_goblin_completion_t  ngx_http_goblin_cache_none[] = {
    { 0, NULL }
};


static ngx_str_t  ngx_http_goblin_cache_status_name =
    ngx_string("goblin_cache_status");

ngx_str_t  ngx_http_goblin_cache_statuses[] = {
    ngx_null_string,
    ngx_string("MISS"),
    ngx_string("BYPASS"),
    ngx_string("EXPIRED"),
    ngx_string("STALE"),
    ngx_string("UPDATING"),
    ngx_string("REVALIDATED"),
    ngx_string("HIT")
};

ngx_int_t  ngx_http_goblin_cache_status_index = NGX_ERROR;


/* The content handler in cache mode, with the request's <key>. */
ngx_int_t
ngx_http_goblin_cache_handler(ngx_http_request_t *r, ngx_str_t *key)
{
    ngx_int_t                 rc;
    ngx_http_cleanup_t       *cln;
    ngx_http_goblin_ctx_t    *ctx;
    ngx_http_goblin_cache_t  *cache;

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        ctx = ngx_http_goblin_create_ctx(r, ngx_http_goblin_cache_none);
        if (ctx == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        ctx->key = *key;

        if (ngx_http_goblin_invalidate_add(ctx) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        return ngx_http_goblin_cache_pass(r, NGX_HTTP_GOBLIN_CACHE_BYPASS);
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    ctx = ngx_http_goblin_create_ctx(r, ngx_http_goblin_cache_completions);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cache = ngx_pcalloc(r->pool, sizeof(ngx_http_goblin_cache_t));
    if (cache == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cln = ngx_http_cleanup_add(r, 0);
    if (cln == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cln->handler = ngx_http_goblin_cache_cleanup;
    cln->data = cache;

    cache->ctx = ctx;
    cache->wake = ngx_http_goblin_cache_woken;
    ctx->cache = cache;
    ctx->key = *key;

    ngx_http_goblin_policy_request(r, &cache->req);

    if (!r->discard_body) {
        r->read_event_handler = ngx_http_test_reading;
    }

    ngx_http_goblin_cache_lookup(ctx);

    r->main->count++;

    return NGX_DONE;
}


static void
ngx_http_goblin_cache_lookup(ngx_http_goblin_ctx_t *ctx)
{
    struct ring_sqe  sqe;

    ctx->cache->lookups++;

    ngx_memzero(&sqe, sizeof(struct ring_sqe));
    sqe.op = RING_OP_LOOKUP;
    sqe.opflags = RING_LOOKUP_FILLING;
    sqe.klen = (uint16_t) ctx->key.len;
    ngx_memcpy(sqe.key, ctx->key.data, ctx->key.len);

    ngx_http_goblin_submit(ctx, &sqe);
    ngx_http_goblin_wait(ctx);
}


/* LOOKUP: stored, being filled, or a miss. */
static void
ngx_http_goblin_cache_found(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    ngx_int_t            rc;
    ngx_http_request_t  *r = ctx->request;

    if (cqe->res == -ENOENT) {
        ngx_http_goblin_cache_miss(ctx);
        return;
    }

    if (cqe->res != 0) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, -cqe->res,
                      "goblin: lookup of \"%V\" failed, passed to the "
                      "origin", &ctx->key);
        ngx_http_goblin_cache_redirect(ctx, NGX_HTTP_GOBLIN_CACHE_BYPASS);
        return;
    }

    rc = ngx_http_goblin_vary_found(ctx, cqe, ctx->cache->variant);

    if (rc != NGX_OK) {
        ngx_http_goblin_cache_variant(ctx, cqe, rc);
        return;
    }

    if (cqe->meta.state & RING_META_FILLING) {
        if (ngx_http_goblin_policy_far_range(r)) {
            ngx_http_goblin_cache_redirect(ctx, NGX_HTTP_GOBLIN_CACHE_MISS);
            return;
        }

        ngx_http_goblin_cache_read_along(ctx, cqe);
        return;
    }

    if (ctx->cache->lookups == 1) {
        rc = ngx_http_goblin_policy_usable(ctx, cqe);

        if (rc == NGX_BUSY) {
            /* stale-while-revalidate: this one now, a new one behind it */
            ngx_http_goblin_cache_set_status(r,
                                             NGX_HTTP_GOBLIN_CACHE_UPDATING);
            ngx_http_goblin_cache_keep_attr(ctx, cqe);
            ngx_http_goblin_cache_refresh(ctx);
            ngx_http_goblin_got_object(ctx, cqe);
            return;
        }

        if (rc != NGX_OK) {
            /* stale, or not what the request accepts: filled anew */
            ctx->pinned = 1;
            ctx->handle = cqe->handle;

            if (cqe->buf != RING_NO_BUF) {
                if (rc == NGX_AGAIN) {
                    /* its validators make the fill a revalidation */
                    ngx_http_goblin_cache_keep_attr(ctx, cqe);
                }

                ngx_http_goblin_submit_handle(ctx, RING_OP_BUFREL, cqe->buf,
                                              0, 0);
            }

            ngx_http_goblin_submit_handle(ctx, RING_OP_RELEASE, 0, 0, 0);
            ctx->pinned = 0;

            if (rc == NGX_AGAIN) {
                ctx->cache->stale = 1;

            } else {
                ctx->cache->bypass = 1;
            }

            ngx_http_goblin_cache_miss(ctx);
            return;
        }

        ngx_http_goblin_cache_set_status(r, NGX_HTTP_GOBLIN_CACHE_HIT);
    }

    ngx_http_goblin_got_object(ctx, cqe);
}


/* The object found is another variant: the request's own is looked up
 * (NGX_DECLINED: ctx->key is its variant key now), filled anew
 * (NGX_ABORT), or the origin answers (NGX_ERROR). */
static void
ngx_http_goblin_cache_variant(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe, ngx_int_t rc)
{
    ngx_http_goblin_cache_t  *cache = ctx->cache;

    ctx->pinned = 1;
    ctx->handle = cqe->handle;

    if (cqe->buf != RING_NO_BUF) {
        ngx_http_goblin_submit_handle(ctx, RING_OP_BUFREL, cqe->buf, 0, 0);
    }

    ngx_http_goblin_submit_handle(ctx, RING_OP_RELEASE, 0, 0, 0);
    ctx->pinned = 0;

    /* the other variant's fill, waited on or read along, is let go */
    ngx_http_goblin_cache_cleanup(cache);
    cache->stale = 0;
    cache->bypass = 0;

    if (rc == NGX_DECLINED) {
        cache->variant = 1;
        cache->lookups = 0;
        ngx_http_goblin_cache_lookup(ctx);
        return;
    }

    if (rc == NGX_ABORT) {
        ngx_http_goblin_cache_miss(ctx);
        return;
    }

    ngx_http_goblin_cache_redirect(ctx, NGX_HTTP_GOBLIN_CACHE_BYPASS);
}


/* Not stored, not being filled: this worker's fill of the key, joined or
 * started, or the origin. */
static void
ngx_http_goblin_cache_miss(ngx_http_goblin_ctx_t *ctx)
{
    ngx_http_request_t      *r;
    ngx_http_goblin_fill_t  *fill;

    r = ctx->request;

    ngx_http_goblin_count(misses, 1);

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    fill = ngx_http_goblin_fill_find(&ctx->key);

    if (ctx->cache->req.only_if_cached) {
        /* nothing stored answers it (RFC 9111 5.2.1.7) */
        ngx_http_goblin_finalize(ctx, NGX_HTTP_GATEWAY_TIME_OUT);
        return;
    }

    if (ngx_http_goblin_policy_far_range(r)) {
        /* the range from the origin now, the whole object beside it */
        if (ctx->cache->lookups == 1) {
            ngx_http_goblin_cache_refresh(ctx);
        }

        ngx_http_goblin_cache_redirect(ctx, NGX_HTTP_GOBLIN_CACHE_MISS);
        return;
    }

    if (fill) {
        if (fill->state <= NGX_HTTP_GOBLIN_FILL_OPEN && !fill->announced) {
            ngx_http_goblin_cache_join(ctx->cache, fill);
            return;
        }

        /* findable by now, yet not found: it ended, or this store does
         * not show fills; the origin answers */
        ngx_http_goblin_cache_redirect(ctx, NGX_HTTP_GOBLIN_CACHE_MISS);
        return;
    }

    if (ctx->cache->lookups > 1 || r->method == NGX_HTTP_HEAD
        || ngx_http_goblin_fill_passed(&ctx->key))
    {
        ngx_http_goblin_cache_redirect(ctx, NGX_HTTP_GOBLIN_CACHE_MISS);
        return;
    }

    fill = ngx_http_goblin_fill_start(r, &ctx->key);

    if (fill == NULL) {
        ngx_http_goblin_cache_redirect(ctx, NGX_HTTP_GOBLIN_CACHE_MISS);
        return;
    }

    ctx->cache->started = 1;
    ngx_http_goblin_cache_join(ctx->cache, fill);
}


/* A copy of the attributes <cqe> brought, for the fill that revalidates
 * them (none when there is no memory: the fill is then unconditional). */
static void
ngx_http_goblin_cache_keep_attr(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe)
{
    ngx_str_t  *a = &ctx->cache->stale_attr;

    a->data = ngx_pnalloc(ctx->request->pool, cqe->meta.attr_len);
    ctx->cache->stale_cas = cqe->meta.cas;

    if (a->data) {
        a->len = cqe->meta.attr_len;
        ngx_memcpy(a->data, ring_rx_buf(&ctx->map->ring, cqe->buf), a->len);
    }
}


/* A fill of the key that nobody waits on (unless none runs already): the
 * object is filled anew behind the request served now. */
static void
ngx_http_goblin_cache_refresh(ngx_http_goblin_ctx_t *ctx)
{
    ngx_http_goblin_fill_t  *fill;

    if (ngx_http_goblin_fill_find(&ctx->key)
        || ngx_http_goblin_fill_passed(&ctx->key))
    {
        return;
    }

    fill = ngx_http_goblin_fill_start(ctx->request, &ctx->key);

    if (fill) {
        fill->detached = 1;
    }
}


static void
ngx_http_goblin_cache_join(ngx_http_goblin_cache_t *cache,
    ngx_http_goblin_fill_t *fill)
{
    ngx_http_goblin_cache_set_status(cache->ctx->request,
                                     cache->stale
                                     ? NGX_HTTP_GOBLIN_CACHE_EXPIRED
                                     : cache->bypass
                                     ? NGX_HTTP_GOBLIN_CACHE_BYPASS
                                     : NGX_HTTP_GOBLIN_CACHE_MISS);

    cache->fill = fill;
    cache->waiting = 1;
    fill->refs++;
    ngx_queue_insert_tail(&fill->waiters, &cache->wait);
}


/* The fill this request waits on is findable, or will never be. */
static void
ngx_http_goblin_cache_woken(ngx_http_goblin_cache_t *cache)
{
    ngx_http_goblin_ctx_t   *ctx = cache->ctx;
    ngx_http_goblin_fill_t  *fill;

    fill = cache->fill;

    ngx_queue_remove(&cache->wait);
    cache->waiting = 0;

    if (fill->state == NGX_HTTP_GOBLIN_FILL_OPEN
        || fill->state == NGX_HTTP_GOBLIN_FILL_STORED
        || fill->state == NGX_HTTP_GOBLIN_FILL_BUSY)
    {
        if (cache->stale && fill->revalidated) {
            ngx_http_goblin_cache_set_status(ctx->request,
                                     NGX_HTTP_GOBLIN_CACHE_REVALIDATED);
        }

        /* a reader from now on: the fill is not abandoned while its
         * LOOKUP is on the way (the cleanup lets go) */
        cache->reader = 1;
        fill->readers++;
        ngx_http_goblin_cache_lookup(ctx);
        return;
    }

    cache->fill = NULL;

    if (cache->stale && ngx_time() < cache->stale_error
        && (fill->state == NGX_HTTP_GOBLIN_FILL_FAILED
            || fill->status >= NGX_HTTP_INTERNAL_SERVER_ERROR))
    {
        /* stale-if-error (RFC 5861): the stale object, still stored */
        ngx_http_goblin_cache_set_status(ctx->request,
                                         NGX_HTTP_GOBLIN_CACHE_STALE);
        ngx_http_goblin_fill_unref(fill);
        ngx_http_goblin_cache_lookup(ctx);
        return;
    }

    if (fill->state == NGX_HTTP_GOBLIN_FILL_HANDOFF && cache->started
        && fill->ctx)
    {
        /* the origin's answer to the request that asked: not asked again */
        ngx_http_goblin_handoff_send(ctx, fill);

    } else {
        ngx_http_goblin_cache_redirect(ctx, NGX_HTTP_GOBLIN_CACHE_MISS);
    }

    ngx_http_goblin_fill_unref(fill);
}


/*
 * An object still being filled: its stored headers now, its bytes as they
 * land.  Its size is the origin's Content-Length, or unknown until the
 * READ ends (the response is then chunked, or closed over HTTP/1.0).
 */
static void
ngx_http_goblin_cache_read_along(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe)
{
    u_char                   *p;
    ngx_int_t                 rc;
    struct ring_sqe           sqe;
    ngx_http_request_t       *r;
    ngx_http_goblin_attr_t    a;
    ngx_http_goblin_fill_t   *fill;
    ngx_http_goblin_cache_t  *cache;

    r = ctx->request;
    cache = ctx->cache;

    ctx->pinned = 1;
    ctx->handle = cqe->handle;
    ctx->meta = cqe->meta;
    cache->filling = 1;

    fill = ngx_http_goblin_fill_find(&ctx->key);

    if (fill && !cache->reader) {
        /* a reader of this worker's fill: it is not abandoned under it */
        cache->fill = fill;
        cache->reader = 1;
        fill->refs++;
        fill->readers++;
    }

    if (cache->lookups == 1) {
        ngx_http_goblin_cache_set_status(r, NGX_HTTP_GOBLIN_CACHE_MISS);
    }

    rc = NGX_OK;

    if (cqe->buf != RING_NO_BUF) {
        p = (u_char *) ring_rx_buf(&ctx->map->ring, cqe->buf);
        rc = ngx_http_goblin_attr_parse(r, p, ctx->meta.attr_len, &a);

        if (rc == NGX_OK) {
            rc = ngx_http_goblin_attr_replay(r, &a);
        }

        ngx_http_goblin_submit_handle(ctx, RING_OP_BUFREL, cqe->buf, 0, 0);
    }

    if (rc != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "goblin: \"%V\" being filled has malformed attributes",
                      &ctx->key);
        ngx_http_goblin_fail(ctx, NGX_HTTP_BAD_GATEWAY);
        return;
    }

    r->headers_out.status = NGX_HTTP_OK;
    ctx->start = 0;

    if (ctx->meta.size != RING_SIZE_UNKNOWN) {
        ctx->end = (off_t) ctx->meta.size;
        r->headers_out.content_length_n = ctx->end;
        /* nginx's range filter cuts what is read along */
        r->allow_ranges = 1;

    } else {
        ctx->end = NGX_MAX_OFF_T_VALUE;
        r->headers_out.content_length_n = -1;
    }

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        ngx_http_goblin_finalize(ctx, rc);
        return;
    }

    ctx->header_sent = 1;

    if (ctx->end == 0) {
        ngx_http_goblin_finalize(ctx, ngx_http_send_special(r, NGX_HTTP_LAST));
        return;
    }

    ngx_memzero(&sqe, sizeof(struct ring_sqe));
    sqe.op = RING_OP_READ;
    sqe.handle = ctx->handle;
    sqe.off = 0;
    sqe.len = ctx->meta.size;
    sqe.grant = (uint64_t) NGX_HTTP_GOBLIN_GRANT_BUFS
                * ctx->map->ring.buf_size;
    ngx_http_goblin_submit(ctx, &sqe);

    ctx->next = 0;
    ctx->granted = (off_t) sqe.grant;
    ngx_http_goblin_wait(ctx);
}


/* The READ ended: of an object read along, with its final size, or cut
 * (-ECONNABORTED: its writer was aborted). */
static void
ngx_http_goblin_cache_read_done(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe)
{
    ngx_buf_t           *b;
    ngx_chain_t         *cl, **ll;
    ngx_http_request_t  *r;

    if (!ctx->cache->filling) {
        ngx_http_goblin_read_done(ctx, cqe);
        return;
    }

    r = ctx->request;

    if (cqe->res != 0 || (off_t) cqe->len != ctx->next) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log,
                      cqe->res ? -cqe->res : 0,
                      "goblin: the fill of \"%V\" ended at %O of %uL "
                      "bytes: the response is cut", &ctx->key, ctx->next,
                      cqe->len);
        ngx_http_goblin_fail(ctx, NGX_HTTP_BAD_GATEWAY);
        return;
    }

    if (ctx->last_passed) {
        return;
    }

    /* the size was unknown until now: the body's end goes out */

    cl = ngx_alloc_chain_link(r->pool);
    if (cl == NULL) {
        ngx_http_goblin_fail(ctx, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        ngx_http_goblin_fail(ctx, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    b->num = NGX_HTTP_GOBLIN_HEAD_BUF;
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;
    b->tag = (ngx_buf_tag_t) &ngx_http_goblin_module;
    cl->buf = b;
    cl->next = NULL;

    ctx->end = ctx->next;
    ctx->last_passed = 1;

    for (ll = &ctx->out; *ll; ll = &(*ll)->next) { /* void */ }
    *ll = cl;

    ngx_http_goblin_send(ctx);
}


/* A request still waiting for its first byte goes to the origin. */
static void
ngx_http_goblin_cache_redirect(ngx_http_goblin_ctx_t *ctx,
    ngx_http_goblin_cache_status_e status)
{
    ngx_http_request_t  *r = ctx->request;

    if (ctx->pinned) {
        ngx_http_goblin_submit_handle(ctx, RING_OP_RELEASE, 0, 0, 0);
        ctx->pinned = 0;
    }

    (void) ngx_http_goblin_cache_pass(r, status);

    /* the redirect holds the request now */
    ngx_http_goblin_finalize(ctx, NGX_DONE);
}


/* Passes <r> to goblin_origin as it came; returns NGX_DONE. */
ngx_int_t
ngx_http_goblin_cache_pass(ngx_http_request_t *r,
    ngx_http_goblin_cache_status_e status)
{
    ngx_http_goblin_loc_conf_t  *glcf;

    glcf = ngx_http_get_module_loc_conf(r, ngx_http_goblin_module);

    ngx_http_goblin_cache_set_status(r, status);

    return ngx_http_named_location(r, &glcf->origin);
}


/* The request is freed: it no longer waits on or reads along a fill. */
static void
ngx_http_goblin_cache_cleanup(void *data)
{
    ngx_http_goblin_cache_t *cache = data;

    ngx_http_goblin_fill_t  *fill;

    fill = cache->fill;

    if (fill == NULL) {
        return;
    }

    cache->fill = NULL;

    if (cache->waiting) {
        ngx_queue_remove(&cache->wait);
        cache->waiting = 0;
    }

    if (cache->reader) {
        fill->readers--;
        cache->reader = 0;
    }

    ngx_http_goblin_fill_unref(fill);
}


/* ---- $goblin_cache_status ---- */


ngx_int_t
ngx_http_goblin_cache_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var;

    var = ngx_http_add_variable(cf, &ngx_http_goblin_cache_status_name, 0);
    if (var == NULL) {
        return NGX_ERROR;
    }

    var->get_handler = ngx_http_goblin_cache_status_variable;

    ngx_http_goblin_cache_status_index =
        ngx_http_get_variable_index(cf, &ngx_http_goblin_cache_status_name);

    return ngx_http_goblin_cache_status_index == NGX_ERROR ? NGX_ERROR
                                                           : NGX_OK;
}


/* The value is kept in the request's variables, so an internal redirect
 * to the origin keeps it. */
static void
ngx_http_goblin_cache_set_status(ngx_http_request_t *r,
    ngx_http_goblin_cache_status_e status)
{
    ngx_http_variable_value_t  *v;

    if (ngx_http_goblin_cache_status_index == NGX_ERROR) {
        return;
    }

    v = &r->variables[ngx_http_goblin_cache_status_index];

    v->data = ngx_http_goblin_cache_statuses[status].data;
    v->len = ngx_http_goblin_cache_statuses[status].len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
}


static ngx_int_t
ngx_http_goblin_cache_status_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    v->not_found = 1;

    return NGX_OK;
}
