
/*
 * ngx_http_goblin_module: the content handler (method, key, then GET and
 * HEAD, PUT or DELETE) and what every goblin request shares.  Its context
 * takes completions through a ring slot (ngx_http_goblin_ring.c) and is
 * finalized once; whatever it holds of storaged's (a pin, rx buffers, a
 * writer, a tx buffer, the mapping) goes back when nginx frees it.  An
 * error is answered with a status while no header went out, else by
 * cutting the connection.
 */


#include "ngx_http_goblin_module.h"
#include "ngx_http_goblin_http.h"


static ngx_int_t ngx_http_goblin_key(ngx_http_request_t *r,
    ngx_http_goblin_loc_conf_t *glcf, ngx_str_t *key);
static ngx_int_t ngx_http_goblin_not_allowed(ngx_http_request_t *r,
    ngx_http_goblin_loc_conf_t *glcf);
static void ngx_http_goblin_cleanup(void *data);
static void ngx_http_goblin_timeout(ngx_event_t *ev);


/* ---- the content handler ---- */


ngx_int_t
ngx_http_goblin_handler(ngx_http_request_t *r)
{
    ngx_int_t                    rc;
    ngx_str_t                    key;
    ngx_http_goblin_ctx_t       *ctx;
    ngx_http_goblin_link_t      *link = ngx_http_goblin_link;
    ngx_http_goblin_loc_conf_t  *glcf;

    glcf = ngx_http_get_module_loc_conf(r, ngx_http_goblin_module);

    link->stats.requests++;

    if (!(r->method & glcf->methods)) {
        return ngx_http_goblin_not_allowed(r, glcf);
    }

    if (link->state != NGX_HTTP_GOBLIN_UP) {
        link->stats.unavailable++;
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "goblin: storaged is not attached (yet)");
        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    rc = ngx_http_goblin_key(r, glcf, &key);
    if (rc != NGX_OK) {
        return rc;
    }

    if (r->method == NGX_HTTP_PUT) {
        return ngx_http_goblin_put_handler(r, &key);
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    ctx = ngx_http_goblin_create_ctx(r);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->key = key;

    if (!r->discard_body) {
        r->read_event_handler = ngx_http_test_reading;
    }

    ngx_http_goblin_submit_key(ctx, r->method == NGX_HTTP_DELETE
                                    ? RING_OP_DELETE : RING_OP_LOOKUP, 0);
    ngx_http_goblin_wait(ctx);

    r->main->count++;

    return NGX_DONE;
}


/* The key: goblin_key, else the URI after the location prefix. */
static ngx_int_t
ngx_http_goblin_key(ngx_http_request_t *r, ngx_http_goblin_loc_conf_t *glcf,
    ngx_str_t *key)
{
    size_t                     prefix_len;
    ngx_int_t                  valid;
    const u_char              *data;
    ngx_http_core_loc_conf_t  *clcf;

    if (glcf->key) {
        if (ngx_http_complex_value(r, glcf->key, key) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        valid = ngx_http_goblin_key_valid(key->data, key->len, RING_KEY_MAX);

    } else {
        clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

        prefix_len = (
#if (NGX_PCRE)
                      clcf->regex == NULL &&
#endif
                      !clcf->named) ? clcf->name.len : 0;

        valid = ngx_http_goblin_key_map(r->uri.data, r->uri.len,
                                        clcf->name.data, prefix_len,
                                        RING_KEY_MAX, &data, &key->len);
        key->data = (u_char *) data;
    }

    if (!valid) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "goblin: a key of %uz bytes (1 to %d, no space or "
                      "control character)", key->len, RING_KEY_MAX);
        return NGX_HTTP_BAD_REQUEST;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_goblin_not_allowed(ngx_http_request_t *r,
    ngx_http_goblin_loc_conf_t *glcf)
{
    u_char              *p;
    ngx_str_t            allow;
    ngx_conf_bitmask_t  *m;

    p = ngx_pnalloc(r->pool, sizeof("GET, HEAD, PUT, DELETE") - 1);
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    allow.data = p;

    for (m = ngx_http_goblin_methods_mask; m->name.len; m++) {
        if (glcf->methods & m->mask) {
            if (p != allow.data) {
                *p++ = ','; *p++ = ' ';
            }

            p = ngx_cpymem(p, m->name.data, m->name.len);
        }
    }

    allow.len = p - allow.data;

    if (ngx_http_goblin_add_header(r, "Allow", &allow) == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_HTTP_NOT_ALLOWED;
}


/* ---- the request context ---- */


ngx_http_goblin_ctx_t *
ngx_http_goblin_create_ctx(ngx_http_request_t *r)
{
    ngx_http_cleanup_t     *cln;
    ngx_http_goblin_ctx_t  *ctx;

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_goblin_ctx_t));
    if (ctx == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     ctx->out = NULL;
     *     ctx->busy = NULL;
     *     ctx->free = NULL;
     *     ctx->body = NULL;
     *     ctx->pinned = 0;
     *     ctx->done = 0;
     */

    ctx->request = r;
    ctx->tx_buf = -1;

    ctx->timer.handler = ngx_http_goblin_timeout;
    ctx->timer.data = ctx;
    ctx->timer.log = r->connection->log;

    cln = ngx_http_cleanup_add(r, 0);
    if (cln == NULL) {
        return NULL;
    }

    if (ngx_http_goblin_register(ctx) != NGX_OK) {
        return NULL;
    }

    cln->handler = ngx_http_goblin_cleanup;
    cln->data = ctx;

    ngx_http_set_ctx(r, ctx, ngx_http_goblin_module);

    return ctx;
}


/*
 * The request is being freed: its pin, the rx buffers it still holds, an
 * unfinished writer and a half-filled tx buffer go back to storaged, a
 * body still in the heap is freed.
 */
static void
ngx_http_goblin_cleanup(void *data)
{
    ngx_http_goblin_ctx_t *ctx = data;

    ngx_uint_t    i, linked;
    ngx_chain_t  *cl;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    ctx->done = 1;
    ngx_http_goblin_unregister(ctx);
    ngx_http_goblin_put_cleanup(ctx);

    linked = ngx_http_goblin_linked(ctx);

    for (i = 0; i < 2; i++) {
        for (cl = i ? ctx->out : ctx->busy; cl; cl = cl->next) {
            ngx_http_goblin_buf_done(ctx, cl->buf);
        }
    }

    if (linked) {
        if (ctx->pinned) {
            ngx_http_goblin_submit_handle(ctx, RING_OP_RELEASE, 0, 0, 0);
        }

        if (ctx->writer && !ctx->finishing) {
            ngx_http_goblin_submit_handle(ctx, RING_OP_WABORT, 0, 0, 0);
        }

        /* one in flight comes back as an orphan TXDONE */
        if (ctx->tx_buf >= 0 && !ctx->tx_busy) {
            ngx_http_goblin_tx_put((uint32_t) ctx->tx_buf);
        }
    }

    ctx->busy = NULL;
    ctx->out = NULL;
    ctx->pinned = 0;
    ctx->writer = 0;
    ctx->tx_buf = -1;

    if (ctx->map) {
        ngx_http_goblin_map_unref(ctx->map);
        ctx->map = NULL;
    }
}


/* A completion for one of this request's submissions. */
void
ngx_http_goblin_complete(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    switch (cqe->op) {

    case RING_OP_LOOKUP:
        ngx_http_goblin_got_object(ctx, cqe);
        break;

    case RING_OP_DATA:
        ngx_http_goblin_got_data(ctx, cqe);
        break;

    case RING_OP_READ:
        ngx_http_goblin_read_done(ctx, cqe);
        break;

    case RING_OP_WOPEN:
        ngx_http_goblin_got_writer(ctx, cqe);
        break;

    case RING_OP_WFINISH:
        ngx_http_goblin_stored(ctx, cqe);
        break;

    case RING_OP_DELETE:
        ngx_http_goblin_deleted(ctx, cqe);
        break;

    case RING_OP_STATS:
        ngx_http_goblin_got_stats(ctx, cqe);
        break;

    case RING_OP_TXDONE:
        ngx_http_goblin_txdone(ctx);
        break;

    default:
        break;
    }
}


/* storaged went away under the request. */
void
ngx_http_goblin_link_lost(ngx_http_goblin_ctx_t *ctx)
{
    if (ctx->status) {
        ngx_http_goblin_status_lost(ctx);
        return;
    }

    ngx_log_error(NGX_LOG_ERR, ctx->request->connection->log, 0,
                  "goblin: storaged lost while serving \"%V\"", &ctx->key);

    ngx_http_goblin_fail(ctx, NGX_HTTP_BAD_GATEWAY);
}


/* Ends the request once; later completions for it are orphans. */
void
ngx_http_goblin_finalize(ngx_http_goblin_ctx_t *ctx, ngx_int_t rc)
{
    if (ctx->done) {
        return;
    }

    ctx->done = 1;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    if (ctx->put_timer.timer_set) {
        ngx_del_timer(&ctx->put_timer);
    }

    ngx_http_goblin_unregister(ctx);

    ngx_http_finalize_request(ctx->request, rc);
}


/* An error: its status while nothing was sent, else a cut connection. */
void
ngx_http_goblin_fail(ngx_http_goblin_ctx_t *ctx, ngx_int_t rc)
{
    ngx_http_goblin_link_t  *link = ngx_http_goblin_link;

    if (ctx->header_sent) {
        link->stats.cut_responses++;
        ngx_http_goblin_finalize(ctx, NGX_ERROR);
        return;
    }

    if (rc == NGX_HTTP_BAD_GATEWAY) {
        link->stats.bad_gateway++;
    }

    ngx_http_goblin_finalize(ctx, rc);
}


static void
ngx_http_goblin_timeout(ngx_event_t *ev)
{
    ngx_connection_t       *c;
    ngx_http_goblin_ctx_t  *ctx;

    ctx = ev->data;
    c = ctx->request->connection;

    ngx_log_error(NGX_LOG_ERR, c->log, NGX_ETIMEDOUT,
                  "goblin: storaged did not answer for \"%V\" in time",
                  &ctx->key);

    ngx_http_goblin_link->stats.timeouts++;

    ngx_http_goblin_fail(ctx, ctx->status ? NGX_HTTP_SERVICE_UNAVAILABLE
                                          : NGX_HTTP_GATEWAY_TIME_OUT);

    ngx_http_run_posted_requests(c);
}


ngx_int_t
ngx_http_goblin_error_status(ngx_http_request_t *r, int res)
{
    switch (res) {

    case -ENOENT:
        return NGX_HTTP_NOT_FOUND;

    case -E2BIG:
        return NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;

    case -ENOMEM:
        return NGX_HTTP_INSUFFICIENT_STORAGE;

    case -EBUSY:
        return ngx_http_goblin_retry_later(r);

    case -EINVAL:
        return NGX_HTTP_BAD_REQUEST;

    default:
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
}


/* 503 for a busy moment (storaged's EBUSY, no tx buffer in time), with
 * Retry-After. */
ngx_int_t
ngx_http_goblin_retry_later(ngx_http_request_t *r)
{
    static ngx_str_t  one = ngx_string("1");

    if (ngx_http_goblin_add_header(r, "Retry-After", &one) == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_HTTP_SERVICE_UNAVAILABLE;
}


ngx_table_elt_t *
ngx_http_goblin_add_header(ngx_http_request_t *r, const char *key,
    ngx_str_t *value)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NULL;
    }

    h->hash = 1;
    h->key.data = (u_char *) key;
    h->key.len = ngx_strlen(key);
    h->value = *value;

    return h;
}


/* ETag from the object's <cas>, for GET, HEAD and PUT alike. */
ngx_int_t
ngx_http_goblin_set_etag(ngx_http_request_t *r, uint64_t cas)
{
    ngx_str_t         etag;
    ngx_table_elt_t  *h;

    etag.data = ngx_pnalloc(r->pool, NGX_HTTP_GOBLIN_ETAG_LEN);
    if (etag.data == NULL) {
        return NGX_ERROR;
    }

    etag.len = ngx_http_goblin_etag(etag.data, cas);

    h = ngx_http_goblin_add_header(r, "ETag", &etag);
    if (h == NULL) {
        return NGX_ERROR;
    }

    r->headers_out.etag = h;

    return NGX_OK;
}
