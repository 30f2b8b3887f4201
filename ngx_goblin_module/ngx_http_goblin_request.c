
/*
 * ngx_http_goblin_module: what every goblin request shares.  Its context
 * takes completions through a ring slot (ngx_http_goblin_ring.c), handed
 * to the handlers of its kind (GET and HEAD, PUT, DELETE, status), and is
 * finalized once; whatever it holds of storaged's (a pin, rx buffers, a
 * writer, a tx buffer, the mapping) goes back when nginx frees it.  An
 * error is answered with a status while no header went out, else by
 * cutting the connection.
 */


#include "ngx_http_goblin_module.h"
#include "ngx_http_goblin_http.h"


static void ngx_http_goblin_cleanup(void *data);
static void ngx_http_goblin_link_lost(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_timeout(ngx_event_t *ev);


/* ---- the request context ---- */


/* A context whose completions go to the rows of <completions>, its kind's. */
ngx_http_goblin_ctx_t *
ngx_http_goblin_create_ctx(ngx_http_request_t *r,
    const ngx_http_goblin_completion_t *completions)
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
    ctx->completions = completions;
    ctx->lost = ngx_http_goblin_link_lost;
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

    if (ctx->put_timer.timer_set) {
        ngx_del_timer(&ctx->put_timer);
    }

    ngx_http_goblin_heap_free(ctx);

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


/* storaged went away under the request. */
static void
ngx_http_goblin_link_lost(ngx_http_goblin_ctx_t *ctx)
{
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
    if (ctx->header_sent) {
        ngx_http_goblin_count(cut_responses, 1);
        ngx_http_goblin_finalize(ctx, NGX_ERROR);
        return;
    }

    if (rc == NGX_HTTP_BAD_GATEWAY) {
        ngx_http_goblin_count(bad_gateway, 1);
    }

    ngx_http_goblin_finalize(ctx, rc);
}


/* A body buffer nginx is done with (or the request is): its memory goes
 * back. */
void
ngx_http_goblin_buf_done(ngx_http_goblin_ctx_t *ctx, ngx_buf_t *b)
{
    if (b->num >= 0) {
        ngx_http_goblin_link->rx_held--;

        if (ngx_http_goblin_linked(ctx)) {
            ngx_http_goblin_submit_handle(ctx, RING_OP_BUFREL, b->num, 0, 0);
        }

    } else if (b->num == NGX_HTTP_GOBLIN_HEAP_BUF) {
        ngx_free(b->start);
    }

    b->num = NGX_HTTP_GOBLIN_HEAD_BUF;
}


/* A PUT body read before its tx buffer came is freed. */
void
ngx_http_goblin_heap_free(ngx_http_goblin_ctx_t *ctx)
{
    if (ngx_http_goblin_link) {
        ngx_http_goblin_link->put_heap_bytes -= ctx->heap_len;
    }

    ngx_free(ctx->heap);
    ctx->heap = NULL;
    ctx->heap_len = 0;
    ctx->heap_size = 0;
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

    ngx_http_goblin_count(timeouts, 1);

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


/* ETag from the object's <cas> in the store <ctx> is attached to, for GET,
 * HEAD and PUT alike. */
ngx_int_t
ngx_http_goblin_set_etag(ngx_http_goblin_ctx_t *ctx, uint64_t cas)
{
    ngx_http_request_t  *r = ctx->request;

    ngx_str_t         etag;
    ngx_table_elt_t  *h;

    etag.data = ngx_pnalloc(r->pool, NGX_HTTP_GOBLIN_ETAG_LEN);
    if (etag.data == NULL) {
        return NGX_ERROR;
    }

    etag.len = ngx_http_goblin_etag(etag.data, ctx->map->store_id, cas);

    h = ngx_http_goblin_add_header(r, "ETag", &etag);
    if (h == NULL) {
        return NGX_ERROR;
    }

    r->headers_out.etag = h;

    return NGX_OK;
}
