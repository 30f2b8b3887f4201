
/*
 * ngx_http_goblin_module: cache mode, a fill's response captured.
 *
 * This module's header and body filters come before every other and take
 * the response of a fill's request (ngx_http_goblin_origin.c): a 200 that
 * may be stored becomes the object's attributes (ngx_http_goblin_attr.c)
 * and a shared writer (WOPEN with RING_WOPEN_SHARED, the size the origin
 * said or RING_SIZE_UNKNOWN); the body goes into the fill's tx buffer and
 * out in WDATAs, each as soon as the one before came back (the first also
 * carries the attributes: once it is back the object is findable with its
 * headers, and the fill's waiters are told).  While the tx buffer is away
 * the body waits in the buffers nginx read it into (proxy_buffers, or
 * its temp file) and the filter answers NGX_AGAIN, so the origin is read
 * no faster than the store takes it, in bounded memory.  The body's end
 * is WFINISH; a body that is not the size the origin said aborts the
 * writer (so does an origin that fails: nginx ends the request, its
 * context's cleanup sends WABORT), and every reader is cut.  A response
 * the cache does not store (not 200, no-store, private, no-cache,
 * Set-Cookie, Vary: *, over goblin_max_object, no freshness left; asked with
 * Cache-Control: no-store, or with Authorization and not public,
 * s-maxage or must-revalidate) is read no further (header_only).  What is
 * stored expires in the store when it stops being fresh
 * (ngx_http_goblin_fresh.c: s-maxage, max-age or Expires, else
 * goblin_cache_valid, less the Age it came with), or as much later as its
 * stale-if-error or stale-while-revalidate allows; its attributes say when
 * it stops being fresh.
 */


#include "ngx_http_goblin_cache.h"
#include "ngx_http_goblin_http.h"


/* r->buffered: the fill holds body bytes the store has not taken */
#define NGX_HTTP_GOBLIN_CAPTURE_BUFFERED  0x08


static ngx_int_t ngx_http_goblin_capture_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_goblin_capture_age(ngx_http_request_t *r,
    int64_t *age);
static ngx_int_t ngx_http_goblin_capture_cacheable(ngx_http_request_t *r,
    ngx_http_goblin_fill_t *fill, ngx_array_t *kept);
static ngx_int_t ngx_http_goblin_capture_revalidated(ngx_http_request_t *r,
    ngx_http_goblin_ctx_t *ctx, ngx_http_goblin_fill_t *fill);
static void ngx_http_goblin_capture_looked(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static void ngx_http_goblin_capture_refreshed(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static void ngx_http_goblin_capture_settle(ngx_http_goblin_ctx_t *ctx,
    ngx_http_goblin_fill_state_e state);
static void ngx_http_goblin_capture_opened(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static void ngx_http_goblin_capture_txdone(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static void ngx_http_goblin_capture_stored(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static ngx_int_t ngx_http_goblin_capture_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
static ngx_int_t ngx_http_goblin_capture_pump(ngx_http_goblin_fill_t *fill);
static void ngx_http_goblin_capture_nudge(ngx_http_goblin_fill_t *fill);


/* The completions of a fill's writer. */
const ngx_http_goblin_completion_t  ngx_http_goblin_capture_completions[] = {
    { RING_OP_WOPEN, ngx_http_goblin_capture_opened },
    { RING_OP_TXDONE, ngx_http_goblin_capture_txdone },
    { RING_OP_WFINISH, ngx_http_goblin_capture_stored },
    { RING_OP_LOOKUP, ngx_http_goblin_capture_looked },
    { RING_OP_SETATTR, ngx_http_goblin_capture_refreshed },
    { 0, NULL }
};


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;


ngx_int_t
ngx_http_goblin_capture_init(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_goblin_capture_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_goblin_capture_body_filter;

    return NGX_OK;
}


static ngx_int_t
ngx_http_goblin_capture_header_filter(ngx_http_request_t *r)
{
    ngx_int_t                rc;
    ngx_http_goblin_ctx_t   *ctx;
    ngx_http_goblin_fill_t  *fill;

    ctx = ngx_http_get_module_ctx(r, ngx_http_goblin_module);

    if (ctx == NULL || ctx->fill == NULL || r != r->main) {
        return ngx_http_next_header_filter(r);
    }

    fill = ctx->fill;

    if (fill->state != NGX_HTTP_GOBLIN_FILL_ASKING) {
        r->header_only = 1;
        return NGX_OK;
    }

    fill->status = r->headers_out.status;

    if (fill->old_attr.len && fill->status == NGX_HTTP_NOT_MODIFIED) {
        return ngx_http_goblin_capture_revalidated(r, ctx, fill);
    }

    rc = ngx_http_goblin_capture_cacheable(r, fill, NULL);

    if (rc != NGX_OK) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "goblin: the origin's %ui for \"%V\" is not stored",
                      r->headers_out.status, &fill->key);

        if (rc == NGX_DECLINED) {
            rc = ngx_http_goblin_handoff_begin(r, fill);

            if (rc != NGX_DECLINED) {
                return rc;      /* its body, for the request that started
                                   the fill */
            }
        }

        /* read no further; the waiters go to the origin */
        r->header_only = 1;
        fill->fail(fill, NGX_HTTP_GOBLIN_FILL_PASS);
        return NGX_OK;
    }

    fill->length = r->headers_out.content_length_n;
    fill->state = NGX_HTTP_GOBLIN_FILL_OPENING;

    rc = ngx_http_goblin_tx_take(ctx);

    if (rc >= 0) {
        ctx->tx_buf = rc;
        ngx_http_goblin_capture_open(ctx);
        return NGX_OK;
    }

    if (rc == NGX_AGAIN) {
        /* ngx_http_goblin_capture_open() once one is free */
        return NGX_OK;
    }

    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                  "goblin: no tx buffer to fill \"%V\"", &fill->key);

    r->header_only = 1;
    fill->fail(fill, NGX_HTTP_GOBLIN_FILL_PASS);

    return NGX_OK;
}


/* The response's Age in *<age> (RFC 9111 5.1: the first line's first
 * member; a malformed one makes it stale); NGX_DECLINED for a response
 * with Set-Cookie, which is not stored. */
static ngx_int_t
ngx_http_goblin_capture_age(ngx_http_request_t *r, int64_t *age)
{
    ngx_uint_t                 seen;
    ngx_table_elt_t           *h;
    ngx_http_goblin_headers_t  it;

    *age = 0;
    seen = 0;

    ngx_http_goblin_headers_init(&it, &r->headers_out.headers);

    while ((h = ngx_http_goblin_headers_next(&it)) != NULL) {

        if (h->hash == 0) {
            continue;
        }

        if (h->key.len == 10
            && ngx_strncasecmp(h->key.data, (u_char *) "Set-Cookie", 10)
               == 0)
        {
            return NGX_DECLINED;
        }

        if (h->key.len == 3 && !seen
            && ngx_strncasecmp(h->key.data, (u_char *) "Age", 3) == 0)
        {
            *age = ngx_http_goblin_age(h->value.data, h->value.len);
            *age = *age < 0 ? NGX_HTTP_GOBLIN_DELTA_MAX : *age;
            seen = 1;
        }
    }

    return NGX_OK;
}


/* A response the cache stores: a 200 that says nothing against it, not
 * over goblin_max_object (or a 304 whose stale object keeps the headers
 * in <kept>), with freshness left; its attributes are built and its
 * expiry set.  NGX_DECLINED: not; fill->uncacheable when the response
 * said so (not its request, not a 5xx, which may pass). */
static ngx_int_t
ngx_http_goblin_capture_cacheable(ngx_http_request_t *r,
    ngx_http_goblin_fill_t *fill, ngx_array_t *kept)
{
    time_t                     now, expires, date;
    int64_t                    age, left, keep;
    ngx_int_t                  rc;
    ngx_str_t                 *v;
    ngx_uint_t                 i;
    ngx_array_t               *extra;
    ngx_table_elt_t          **cc;
    ngx_http_goblin_cc_t       ccv;

    fill->uncacheable = r->headers_out.status < NGX_HTTP_INTERNAL_SERVER_ERROR;

    if (kept == NULL
        && (r->headers_out.status != NGX_HTTP_OK
            || r->headers_out.content_length_n > fill->max_object))
    {
        return NGX_DECLINED;
    }

    extra = kept ? kept : ngx_array_create(r->pool, 1,
                                           sizeof(ngx_table_elt_t));

    if (extra == NULL
        || ngx_http_goblin_validate_stored(r, extra, &date) != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_http_goblin_cc_init(&ccv);

    cc = r->headers_out.cache_control.elts;

    for (i = 0; i < r->headers_out.cache_control.nelts; i++) {
        v = &cc[i]->value;
        ngx_http_goblin_cc_parse(v->data, v->len, &ccv);
    }

    expires = NGX_HTTP_GOBLIN_NO_EXPIRES;

    if (r->headers_out.expires) {
        v = &r->headers_out.expires->value;
        expires = ngx_parse_http_time(v->data, v->len);

        if (expires == NGX_ERROR) {
            expires = 0;    /* malformed: in the past (RFC 9111 5.3) */
        }
    }

    if (ngx_http_goblin_capture_age(r, &age) != NGX_OK) {
        return NGX_DECLINED;
    }

    if (fill->no_store
        || (fill->authorized && !ngx_http_goblin_cc_authorized(&ccv)))
    {
        fill->uncacheable = 0;      /* for its request's sake */
        return NGX_DECLINED;
    }

    now = ngx_time();
    left = ngx_http_goblin_lifetime(&ccv, expires, date, age, fill->valid);

    if (left == 0) {
        return NGX_DECLINED;
    }

    /* kept past its freshness for as long as a stale window allows, or,
     * with a validator, goblin_cache_revalidate */
    keep = ngx_http_goblin_cc_stale_ok(&ccv)
           ? ngx_max(ngx_max(ccv.stale_if_error, ccv.stale_while_revalidate),
                     0)
           : 0;

    if (kept || r->headers_out.etag || r->headers_out.last_modified
        || r->headers_out.last_modified_time != -1)
    {
        keep = ngx_max(keep, (int64_t) fill->revalidate);
    }

    fill->exptime = now + (time_t) (left + keep);

    /* received as if it came without an Age: a hit's Age counts from it */
    rc = ngx_http_goblin_attr_build(r, NGX_HTTP_OK, now - (time_t) age,
                                    now + (time_t) left, extra, &fill->attr);
    if (rc != NGX_OK) {
        return rc;
    }

    /* with Vary, what the fill's request selected (Vary: * is not stored) */
    rc = ngx_http_goblin_vary_attr(r, kept, &fill->attr);

    if (rc == NGX_OK) {
        fill->uncacheable = 0;
    }

    return rc;
}


/*
 * The origin said 304 to a stale object's validators (RFC 9111 4.3.3): its
 * headers with the 304's in their place, its new freshness, are set on the
 * stored object (a LOOKUP that pins it, then SETATTR with the expiry);
 * its bytes stay.  Not storable as the 304 says: the waiters go to the
 * origin.
 */
static ngx_int_t
ngx_http_goblin_capture_revalidated(ngx_http_request_t *r,
    ngx_http_goblin_ctx_t *ctx, ngx_http_goblin_fill_t *fill)
{
    ngx_int_t     rc;
    ngx_array_t  *kept;

    r->header_only = 1;

    kept = ngx_http_goblin_validate_kept(r, &fill->old_attr);

    if (kept == NULL
        || ngx_http_goblin_capture_cacheable(r, fill, kept) != NGX_OK)
    {
        fill->fail(fill, NGX_HTTP_GOBLIN_FILL_PASS);
        return NGX_OK;
    }

    fill->state = NGX_HTTP_GOBLIN_FILL_OPENING;
    fill->revalidating = 1;
    r->buffered |= NGX_HTTP_GOBLIN_CAPTURE_BUFFERED;

    rc = ngx_http_goblin_tx_take(ctx);

    if (rc >= 0) {
        ctx->tx_buf = rc;
        ngx_http_goblin_capture_open(ctx);

    } else if (rc != NGX_AGAIN) {
        fill->revalidating = 0;
        r->buffered &= ~NGX_HTTP_GOBLIN_CAPTURE_BUFFERED;
        fill->fail(fill, NGX_HTTP_GOBLIN_FILL_FAILED);
    }

    return NGX_OK;
}


/* The fill has its tx buffer (ctx->tx_buf): the attributes go first in
 * it, and the shared writer is asked for. */
void
ngx_http_goblin_capture_open(ngx_http_goblin_ctx_t *ctx)
{
    struct ring_sqe          sqe;
    ngx_http_goblin_fill_t  *fill;

    fill = ctx->fill;

    if (fill->state != NGX_HTTP_GOBLIN_FILL_OPENING) {
        /* it failed while it waited for the buffer */
        ngx_http_goblin_tx_put((uint32_t) ctx->tx_buf);
        ctx->tx_buf = -1;
        return;
    }

    ngx_memzero(&sqe, sizeof(struct ring_sqe));
    sqe.klen = (uint16_t) ctx->key.len;
    ngx_memcpy(sqe.key, ctx->key.data, ctx->key.len);

    if (fill->revalidating) {
        /* the stale object, pinned for its SETATTR */
        sqe.op = RING_OP_LOOKUP;
        ngx_http_goblin_submit(ctx, &sqe);
        ngx_http_goblin_wait(ctx);
        return;
    }

    ngx_memcpy(ring_tx_buf(&ctx->map->ring, (uint32_t) ctx->tx_buf),
               fill->attr.data, fill->attr.len);
    ctx->tx_len = fill->attr.len;

    sqe.op = RING_OP_WOPEN;
    sqe.len = fill->length >= 0 ? (uint64_t) fill->length : RING_SIZE_UNKNOWN;
    sqe.opflags = RING_WOPEN_SHARED;
    sqe.exptime = fill->exptime;
    sqe.attr_len = (uint32_t) fill->attr.len;

    ngx_http_goblin_submit(ctx, &sqe);
    ngx_http_goblin_wait(ctx);
}


static void
ngx_http_goblin_capture_opened(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    ngx_http_goblin_fill_t  *fill = ctx->fill;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    if (cqe->res == -EBUSY) {
        /* another worker fills the key: the waiters read along that */
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ctx->request->connection->log, 0,
                       "goblin: \"%V\" is filled elsewhere", &fill->key);
        fill->fail(fill, NGX_HTTP_GOBLIN_FILL_BUSY);
        return;
    }

    if (cqe->res != 0) {
        ngx_log_error(NGX_LOG_ERR, ctx->request->connection->log, -cqe->res,
                      "goblin: storaged refused a writer for \"%V\"",
                      &fill->key);
        fill->fail(fill, NGX_HTTP_GOBLIN_FILL_PASS);
        return;
    }

    ctx->writer = 1;
    ctx->handle = cqe->handle;
    fill->state = NGX_HTTP_GOBLIN_FILL_OPEN;

    if (ngx_http_goblin_capture_pump(fill) != NGX_OK) {
        fill->fail(fill, NGX_HTTP_GOBLIN_FILL_FAILED);
        return;
    }

    ngx_http_goblin_capture_nudge(fill);
}


/* The tx buffer is back: the first one brought the attributes, so the
 * object is findable and the waiters can read along; then more body. */
static void
ngx_http_goblin_capture_txdone(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    ngx_http_goblin_fill_t  *fill = ctx->fill;

    ctx->tx_busy = 0;
    ctx->tx_len = 0;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    if (!fill->announced) {
        fill->announced = 1;
        fill->announce(fill);

        if (fill->ctx == NULL) {
            return;
        }
    }

    if (ngx_http_goblin_capture_pump(fill) != NGX_OK) {
        fill->fail(fill, NGX_HTTP_GOBLIN_FILL_FAILED);
        return;
    }

    ngx_http_goblin_capture_nudge(fill);
}


/* The stale object a 304 refreshes is pinned (or gone, or replaced: the
 * fill failed, as it has nothing to store): its new attributes and expiry
 * go. */
static void
ngx_http_goblin_capture_looked(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe)
{
    struct ring_sqe          sqe;
    ngx_http_goblin_fill_t  *fill = ctx->fill;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    if (cqe->res == 0) {
        ctx->pinned = 1;
        ctx->handle = cqe->handle;

        if (cqe->buf != RING_NO_BUF) {
            /* its attributes came along (every LOOKUP asks for them) */
            ngx_http_goblin_submit_handle(ctx, RING_OP_BUFREL, cqe->buf,
                                          0, 0);
        }
    }

    /* another object under the key since: not the one the 304 is for */
    if (cqe->res != 0 || (cqe->meta.state & RING_META_FILLING)
        || cqe->meta.cas != fill->old_cas
        || fill->state != NGX_HTTP_GOBLIN_FILL_OPENING)
    {
        ngx_log_error(NGX_LOG_INFO, ctx->request->connection->log,
                      cqe->res ? -cqe->res : 0,
                      "goblin: \"%V\" went while the origin revalidated it",
                      &fill->key);
        ngx_http_goblin_capture_settle(ctx, NGX_HTTP_GOBLIN_FILL_FAILED);
        return;
    }

    ngx_memcpy(ring_tx_buf(&ctx->map->ring, (uint32_t) ctx->tx_buf),
               fill->attr.data, fill->attr.len);

    ngx_memzero(&sqe, sizeof(struct ring_sqe));
    sqe.op = RING_OP_SETATTR;
    sqe.handle = ctx->handle;
    sqe.buf = (uint32_t) ctx->tx_buf;
    sqe.len = fill->attr.len;
    sqe.exptime = fill->exptime;
    ngx_http_goblin_submit(ctx, &sqe);

    ctx->tx_busy = 1;
    ngx_http_goblin_wait(ctx);
}


/* SETATTR is done: the stale object is fresh again, its waiters read it;
 * its tx buffer came back with it. */
static void
ngx_http_goblin_capture_refreshed(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe)
{
    ngx_http_goblin_fill_t  *fill = ctx->fill;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    ctx->tx_busy = 0;

    if (cqe->res != 0) {
        ngx_log_error(NGX_LOG_ERR, ctx->request->connection->log, -cqe->res,
                      "goblin: refreshing \"%V\" after a 304 failed",
                      &fill->key);
        ngx_http_goblin_capture_settle(ctx, NGX_HTTP_GOBLIN_FILL_FAILED);
        return;
    }

    fill->revalidated = 1;
    ngx_http_goblin_capture_settle(ctx, NGX_HTTP_GOBLIN_FILL_STORED);
}


/* A revalidation ends in <state>: the pin and the tx buffer go back, the
 * waiters hear it, the fill's request may end. */
static void
ngx_http_goblin_capture_settle(ngx_http_goblin_ctx_t *ctx,
    ngx_http_goblin_fill_state_e state)
{
    ngx_http_goblin_fill_t  *fill = ctx->fill;

    if (ctx->pinned) {
        ngx_http_goblin_submit_handle(ctx, RING_OP_RELEASE, 0, 0, 0);
        ctx->pinned = 0;
    }

    if (ctx->tx_buf >= 0) {
        ngx_http_goblin_tx_put((uint32_t) ctx->tx_buf);
        ctx->tx_buf = -1;
    }

    fill->revalidating = 0;
    ctx->request->buffered &= ~NGX_HTTP_GOBLIN_CAPTURE_BUFFERED;

    if (state == NGX_HTTP_GOBLIN_FILL_STORED) {
        fill->state = state;
        fill->announced = 1;
        fill->announce(fill);

    } else {
        fill->fail(fill, state);
    }

    ngx_http_goblin_capture_nudge(fill);
}


static void
ngx_http_goblin_capture_stored(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    ngx_http_goblin_fill_t  *fill = ctx->fill;

    ctx->writer = 0;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    if (cqe->res != 0) {
        ngx_log_error(NGX_LOG_ERR, ctx->request->connection->log, -cqe->res,
                      "goblin: storing the fill of \"%V\" failed",
                      &fill->key);
        fill->state = NGX_HTTP_GOBLIN_FILL_FAILED;

    } else {
        fill->state = NGX_HTTP_GOBLIN_FILL_STORED;
    }

    ngx_http_goblin_capture_nudge(fill);
}


static ngx_int_t
ngx_http_goblin_capture_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_chain_t             *cl;
    ngx_http_goblin_ctx_t   *ctx;
    ngx_http_goblin_fill_t  *fill;

    ctx = ngx_http_get_module_ctx(r, ngx_http_goblin_module);

    if (ctx == NULL || ctx->fill == NULL || r != r->main) {
        return ngx_http_next_body_filter(r, in);
    }

    fill = ctx->fill;

    if (fill->handing) {
        return ngx_http_goblin_handoff_body(r, fill, in);
    }

    if (fill->state > NGX_HTTP_GOBLIN_FILL_OPEN) {
        /* not stored: what still comes is dropped */
        for (cl = in; cl; cl = cl->next) {
            cl->buf->pos = cl->buf->last;
            cl->buf->file_pos = cl->buf->file_last;
        }

        return NGX_OK;
    }

    if (in && ngx_chain_add_copy(r->pool, &fill->held, in) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_goblin_capture_pump(fill) != NGX_OK) {
        fill->fail(fill, NGX_HTTP_GOBLIN_FILL_FAILED);
        return NGX_ERROR;
    }

    return fill->held ? NGX_AGAIN : NGX_OK;
}


/*
 * Moves what the fill holds into its tx buffer and ships it (WDATA) when
 * the buffer is not away; at the body's end, WFINISH (or an abort, when
 * the body is not the size the origin said).  NGX_ERROR: the fill fails.
 */
static ngx_int_t
ngx_http_goblin_capture_pump(ngx_http_goblin_fill_t *fill)
{
    off_t                   size;
    u_char                 *dst;
    size_t                  n, room;
    ssize_t                 got;
    ngx_buf_t              *b;
    ngx_chain_t            *cl;
    struct ring_sqe         sqe;
    ngx_http_request_t     *r;
    ngx_http_goblin_ctx_t  *ctx;

    ctx = fill->ctx;
    r = ctx->request;

    if (ctx->writer && !ctx->tx_busy && !ctx->finishing) {

        dst = (u_char *) ring_tx_buf(&ctx->map->ring, (uint32_t) ctx->tx_buf);

        while (fill->held && ctx->tx_len < ctx->map->ring.buf_size) {
            b = fill->held->buf;
            room = ctx->map->ring.buf_size - ctx->tx_len;

            if (b->last_buf) {
                fill->last = 1;
            }

            size = ngx_buf_size(b);
            n = (size_t) ngx_min((off_t) room, size);

            if (n && ngx_buf_in_memory(b)) {
                ngx_memcpy(dst + ctx->tx_len, b->pos, n);
                b->pos += n;

            } else if (n) {
                got = ngx_read_file(b->file, dst + ctx->tx_len, n,
                                    b->file_pos);
                if (got != (ssize_t) n) {
                    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                                  "goblin: reading the origin's body of "
                                  "\"%V\" from its temp file failed",
                                  &fill->key);
                    return NGX_ERROR;
                }

                b->file_pos += n;
            }

            ctx->tx_len += n;
            fill->received += n;

            if (ngx_buf_size(b) == 0) {
                if (ngx_buf_in_memory(b)) {
                    b->file_pos = b->file_last;
                }

                cl = fill->held;
                fill->held = cl->next;
                ngx_free_chain(r->pool, cl);
            }
        }

        if (fill->length >= 0 && fill->received > fill->length) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "goblin: the origin sent more than its "
                          "Content-Length %O for \"%V\"", fill->length,
                          &fill->key);
            return NGX_ERROR;
        }

        if (ctx->tx_len) {
            ngx_http_goblin_submit_handle(ctx, RING_OP_WDATA,
                                          (uint32_t) ctx->tx_buf, 0,
                                          (off_t) ctx->tx_len);
            ctx->tx_busy = 1;
            ngx_http_goblin_wait(ctx);

        } else if (fill->last && fill->held == NULL) {

            if (fill->length >= 0 && fill->received != fill->length) {
                ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                              "goblin: the origin's body of \"%V\" ended at "
                              "%O of %O bytes", &fill->key, fill->received,
                              fill->length);
                return NGX_ERROR;
            }

            ctx->finishing = 1;

            ngx_memzero(&sqe, sizeof(struct ring_sqe));
            sqe.op = RING_OP_WFINISH;
            sqe.handle = ctx->handle;
            sqe.cond = RING_IF_ANY;
            ngx_http_goblin_submit(ctx, &sqe);
            ngx_http_goblin_wait(ctx);

            ngx_http_goblin_tx_put((uint32_t) ctx->tx_buf);
            ctx->tx_buf = -1;
        }
    }

    if (fill->held || ctx->tx_busy || (fill->last && !ctx->finishing)
        || fill->revalidating)
    {
        r->buffered |= NGX_HTTP_GOBLIN_CAPTURE_BUFFERED;

    } else {
        r->buffered &= ~NGX_HTTP_GOBLIN_CAPTURE_BUFFERED;
    }

    return NGX_OK;
}


/* The fill's request goes on: nginx reads the origin into the buffers the
 * fill gave back, or ends the request once nothing is held. */
static void
ngx_http_goblin_capture_nudge(ngx_http_goblin_fill_t *fill)
{
    ngx_connection_t  *c;

    if (fill->ctx == NULL) {
        return;
    }

    c = fill->ctx->request->connection;

    if (!c->write->posted) {
        ngx_post_event(c->write, &ngx_posted_events);
    }
}
