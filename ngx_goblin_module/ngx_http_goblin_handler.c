
/*
 * ngx_http_goblin_module: the HTTP side.
 *
 * GET/HEAD: LOOKUP pins the object; the response goes out as one buffer
 * pointing into the mapped head region (no copy) followed by rx buffers
 * the daemon fills with the disk part, sent in order and given back
 * (BUFREL) as soon as the socket has taken them.  The disk READ is
 * submitted before the head is sent.  A range skips what it does not
 * need, head included.  The pin and any buffer still held go back when
 * the request is freed.
 *
 * PUT: the body is read unbuffered and copied into tx buffers as it
 * comes; when none is free nginx stops reading the client.  201 or 204
 * only once the daemon has stored every byte.
 */


#include "ngx_http_goblin_module.h"
#include "ngx_http_goblin_http.h"

#include <jansson.h>


static ngx_int_t ngx_http_goblin_key(ngx_http_request_t *r,
    ngx_http_goblin_loc_conf_t *glcf, ngx_str_t *key);
static ngx_http_goblin_ctx_t *ngx_http_goblin_create_ctx(
    ngx_http_request_t *r);
static void ngx_http_goblin_cleanup(void *data);
static void ngx_http_goblin_finalize(ngx_http_goblin_ctx_t *ctx,
    ngx_int_t rc);
static void ngx_http_goblin_wait(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_timeout(ngx_event_t *ev);
static ngx_int_t ngx_http_goblin_error_status(int res);
static void ngx_http_goblin_fail(ngx_http_goblin_ctx_t *ctx, ngx_int_t rc);
static ngx_int_t ngx_http_goblin_not_allowed(ngx_http_request_t *r,
    ngx_http_goblin_loc_conf_t *glcf);
static void ngx_http_goblin_submit_key(ngx_http_goblin_ctx_t *ctx,
    ngx_uint_t op, off_t len);
static void ngx_http_goblin_submit_handle(ngx_http_goblin_ctx_t *ctx,
    ngx_uint_t op, uint32_t buf, off_t off, off_t len);

static ngx_int_t ngx_http_goblin_send_header(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_got_object(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static ngx_int_t ngx_http_goblin_set_headers(ngx_http_goblin_ctx_t *ctx);
static ngx_table_elt_t *ngx_http_goblin_add_header(ngx_http_request_t *r,
    const char *key, ngx_str_t *value);
static ngx_int_t ngx_http_goblin_range(ngx_http_goblin_ctx_t *ctx);
static ngx_chain_t *ngx_http_goblin_chain(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_got_data(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static void ngx_http_goblin_read_done(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static ngx_int_t ngx_http_goblin_copy_aside(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_buf_done(ngx_http_goblin_ctx_t *ctx,
    ngx_buf_t *b);
static void ngx_http_goblin_send(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_write_handler(ngx_http_request_t *r);

static void ngx_http_goblin_put_body(ngx_http_request_t *r);
static void ngx_http_goblin_open_writer(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_put_read(ngx_http_request_t *r);
static void ngx_http_goblin_got_writer(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static void ngx_http_goblin_pump_body(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_wdata(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_txdone(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_stored(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static void ngx_http_goblin_deleted(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);

static void ngx_http_goblin_got_stats(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static ngx_int_t ngx_http_goblin_send_status(ngx_http_request_t *r,
    json_t *storaged);


/* ---- entry points ---- */


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

        if (r->headers_in.chunked || r->headers_in.content_length_n < 0) {
            return NGX_HTTP_LENGTH_REQUIRED;
        }

        if (r->headers_in.content_length_n > glcf->max_object) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "goblin: a %O-byte PUT is over goblin_max_object "
                          "%O", r->headers_in.content_length_n,
                          glcf->max_object);
            link->stats.put_errors++;
            return NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
        }

    } else {
        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    ctx = ngx_http_goblin_create_ctx(r);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->key = key;

    if (r->method == NGX_HTTP_PUT) {
        ctx->body_size = r->headers_in.content_length_n;

        r->request_body_no_buffering = 1;

        rc = ngx_http_read_client_request_body(r, ngx_http_goblin_put_body);
        if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
            return rc;
        }

        return NGX_DONE;
    }

    if (!r->discard_body) {
        r->read_event_handler = ngx_http_test_reading;
    }

    ngx_http_goblin_submit_key(ctx, r->method == NGX_HTTP_DELETE
                                    ? RING_OP_DELETE : RING_OP_LOOKUP, 0);
    ngx_http_goblin_wait(ctx);

    r->main->count++;

    return NGX_DONE;
}


ngx_int_t
ngx_http_goblin_status_handler(ngx_http_request_t *r)
{
    ngx_int_t                rc;
    struct ring_sqe          sqe;
    ngx_http_goblin_ctx_t   *ctx;
    ngx_http_goblin_link_t  *link = ngx_http_goblin_link;

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    if (link->state != NGX_HTTP_GOBLIN_UP) {
        return ngx_http_goblin_send_status(r, NULL);
    }

    ctx = ngx_http_goblin_create_ctx(r);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->status = 1;

    ngx_memzero(&sqe, sizeof(struct ring_sqe));
    sqe.op = RING_OP_STATS;
    ngx_http_goblin_submit(ctx, &sqe);
    ngx_http_goblin_wait(ctx);

    r->main->count++;

    return NGX_DONE;
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
        ngx_http_goblin_finalize(ctx,
                               ngx_http_goblin_send_status(ctx->request, NULL));
        return;
    }

    ngx_log_error(NGX_LOG_ERR, ctx->request->connection->log, 0,
                  "goblin: storaged lost while serving \"%V\"", &ctx->key);

    ngx_http_goblin_fail(ctx, NGX_HTTP_BAD_GATEWAY);
}


/* A tx buffer came free for a PUT that waited to start (ctx->tx_buf). */
void
ngx_http_goblin_tx_ready(ngx_http_goblin_ctx_t *ctx)
{
    ngx_http_goblin_open_writer(ctx);
}


/* ---- request plumbing ---- */


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


static ngx_http_goblin_ctx_t *
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
 * unfinished writer and a half-filled tx buffer go back to storaged.
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


/* Ends the request once; later completions for it are orphans. */
static void
ngx_http_goblin_finalize(ngx_http_goblin_ctx_t *ctx, ngx_int_t rc)
{
    if (ctx->done) {
        return;
    }

    ctx->done = 1;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    ngx_http_goblin_unregister(ctx);

    ngx_http_finalize_request(ctx->request, rc);
}


/* An error: its status while nothing was sent, else a cut connection. */
static void
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
ngx_http_goblin_wait(ngx_http_goblin_ctx_t *ctx)
{
    ngx_http_goblin_loc_conf_t  *glcf;

    glcf = ngx_http_get_module_loc_conf(ctx->request, ngx_http_goblin_module);

    ngx_add_timer(&ctx->timer, glcf->read_timeout);
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


static ngx_int_t
ngx_http_goblin_error_status(int res)
{
    switch (res) {

    case -ENOENT:
        return NGX_HTTP_NOT_FOUND;

    case -E2BIG:
        return NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;

    case -ENOMEM:
        return NGX_HTTP_INSUFFICIENT_STORAGE;

    case -EBUSY:
        return NGX_HTTP_SERVICE_UNAVAILABLE;

    case -EINVAL:
        return NGX_HTTP_BAD_REQUEST;

    default:
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
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


static void
ngx_http_goblin_submit_key(ngx_http_goblin_ctx_t *ctx, ngx_uint_t op,
    off_t len)
{
    struct ring_sqe  sqe;

    ngx_memzero(&sqe, sizeof(struct ring_sqe));
    sqe.op = (uint8_t) op;
    sqe.klen = (uint16_t) ctx->key.len;
    sqe.len = (uint64_t) len;
    ngx_memcpy(sqe.key, ctx->key.data, ctx->key.len);

    ngx_http_goblin_submit(ctx, &sqe);
}


static void
ngx_http_goblin_submit_handle(ngx_http_goblin_ctx_t *ctx, ngx_uint_t op,
    uint32_t buf, off_t off, off_t len)
{
    struct ring_sqe  sqe;

    ngx_memzero(&sqe, sizeof(struct ring_sqe));
    sqe.op = (uint8_t) op;
    sqe.handle = ctx->handle;
    sqe.buf = buf;
    sqe.off = (uint64_t) off;
    sqe.len = (uint64_t) len;

    ngx_http_goblin_submit(ctx, &sqe);
}


/* ---- GET and HEAD ---- */


/* Sends the response header; NGX_OK to go on with the body, else the
 * request is finalized. */
static ngx_int_t
ngx_http_goblin_send_header(ngx_http_goblin_ctx_t *ctx)
{
    ngx_int_t            rc;
    ngx_http_request_t  *r;

    r = ctx->request;
    ctx->header_deferred = 0;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        ngx_http_goblin_finalize(ctx, rc);
        return NGX_DONE;
    }

    ctx->header_sent = 1;

    return NGX_OK;
}


static void
ngx_http_goblin_got_object(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    off_t                    disk, head_end;
    ngx_int_t                rc;
    ngx_buf_t               *b;
    ngx_chain_t             *cl;
    struct ring_sqe          sqe;
    struct ring_meta        *m;
    ngx_http_request_t      *r;
    ngx_http_goblin_link_t  *link = ngx_http_goblin_link;

    r = ctx->request;

    if (cqe->res != 0) {
        if (cqe->res == -ENOENT) {
            link->stats.misses++;

        } else {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, -cqe->res,
                          "goblin: lookup of \"%V\" failed", &ctx->key);
        }

        ngx_http_goblin_finalize(ctx, ngx_http_goblin_error_status(cqe->res));
        return;
    }

    ctx->pinned = 1;
    ctx->handle = cqe->handle;
    ctx->meta = cqe->meta;
    m = &ctx->meta;

    link->stats.hits++;

    if (m->head_len > m->size || m->head_off > ctx->map->region_size
        || m->head_len > ctx->map->region_size - m->head_off)
    {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      "goblin: \"%V\" has its head outside the region",
                      &ctx->key);
        ngx_http_goblin_fail(ctx, NGX_HTTP_BAD_GATEWAY);
        return;
    }

    rc = ngx_http_goblin_set_headers(ctx);

    if (rc == NGX_ERROR) {
        ngx_http_goblin_finalize(ctx, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    if (rc == NGX_DONE) {
        /* 304 or 416: headers only */
        r->header_only = 1;
        ngx_http_goblin_finalize(ctx, ngx_http_send_header(r));
        return;
    }

    head_end = (off_t) m->head_len;
    disk = ngx_max(ctx->start, head_end);

    /*
     * With no head bytes to send, the header waits for the first disk
     * bytes, so a failed read can still be answered 502 instead of a cut.
     */
    if (ctx->start >= head_end && ctx->end > disk && !r->header_only) {
        ctx->header_deferred = 1;

    } else if (ngx_http_goblin_send_header(ctx) != NGX_OK) {
        return;
    }

    if (ctx->start == ctx->end) {
        ngx_http_goblin_finalize(ctx, ngx_http_send_special(r, NGX_HTTP_LAST));
        return;
    }

    /* the disk part first: its read has the longest way to go */

    if (ctx->end > disk) {
        ngx_memzero(&sqe, sizeof(struct ring_sqe));
        sqe.op = RING_OP_READ;
        sqe.handle = ctx->handle;
        sqe.off = (uint64_t) disk;
        sqe.len = (uint64_t) (ctx->end - disk);
        sqe.window = (uint64_t) NGX_HTTP_GOBLIN_WINDOW_BUFS
                     * ctx->map->ring.buf_size;
        ngx_http_goblin_submit(ctx, &sqe);

        ctx->next = disk;
        ctx->granted = disk + (off_t) sqe.window;
        ngx_http_goblin_wait(ctx);

    } else if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    if (ctx->start < head_end) {
        cl = ngx_http_goblin_chain(ctx);
        if (cl == NULL) {
            ngx_http_goblin_fail(ctx, NGX_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }

        b = cl->buf;
        b->memory = 1;
        b->num = NGX_HTTP_GOBLIN_HEAD_BUF;
        b->start = ctx->map->region + m->head_off + ctx->start;
        b->pos = b->start;
        b->last = ctx->map->region + m->head_off
                  + ngx_min(ctx->end, head_end);
        b->end = b->last;

        if (ctx->end <= head_end) {
            b->last_buf = (r == r->main) ? 1 : 0;
            b->last_in_chain = 1;
            ctx->last_passed = 1;
        }

        link->stats.head_bytes += b->last - b->pos;

        ctx->out = cl;
    }

    ngx_http_goblin_send(ctx);
}


/*
 * Status, validators, type and range of a found object.  Returns NGX_OK
 * (send ctx->start..end), NGX_DONE (a 304 or 416 without body) or
 * NGX_ERROR.
 */
static ngx_int_t
ngx_http_goblin_set_headers(ngx_http_goblin_ctx_t *ctx)
{
    u_char                  *p, *last;
    ngx_int_t                rc;
    ngx_str_t                etag, exten, value;
    struct ring_meta        *m;
    ngx_table_elt_t         *h;
    ngx_http_request_t      *r;
    ngx_http_goblin_link_t  *link = ngx_http_goblin_link;

    r = ctx->request;
    m = &ctx->meta;

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = (off_t) m->size;
    r->headers_out.last_modified_time = (time_t) m->mtime;

    etag.data = ngx_pnalloc(r->pool, NGX_INT64_LEN + 2);
    if (etag.data == NULL) {
        return NGX_ERROR;
    }

    etag.len = ngx_sprintf(etag.data, "\"%xL\"", m->cas) - etag.data;

    h = ngx_http_goblin_add_header(r, "ETag", &etag);
    if (h == NULL) {
        return NGX_ERROR;
    }

    r->headers_out.etag = h;

    ngx_str_set(&value, "bytes");
    h = ngx_http_goblin_add_header(r, "Accept-Ranges", &value);
    if (h == NULL) {
        return NGX_ERROR;
    }

    r->headers_out.accept_ranges = h;

    /* Content-Type from the key's extension, by nginx's own types */

    exten = r->exten;
    ngx_str_null(&r->exten);
    last = ctx->key.data + ctx->key.len;

    for (p = last; p > ctx->key.data && p[-1] != '/'; p--) {
        if (p[-1] == '.') {
            r->exten.data = p;
            r->exten.len = last - p;
            break;
        }
    }

    rc = ngx_http_set_content_type(r);
    r->exten = exten;

    if (rc != NGX_OK) {
        return NGX_ERROR;
    }

    ctx->start = 0;
    ctx->end = (off_t) m->size;

    if (r->headers_in.if_none_match
        && ngx_http_goblin_etag_match(r->headers_in.if_none_match->value.data,
                                      r->headers_in.if_none_match->value.len,
                                      etag.data, etag.len))
    {
        link->stats.not_modified++;
        r->headers_out.status = NGX_HTTP_NOT_MODIFIED;
        ngx_http_clear_content_length(r);
        return NGX_DONE;
    }

    rc = ngx_http_goblin_range(ctx);

    if (rc == NGX_DECLINED) {
        return NGX_OK;
    }

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Content-Range");

    h->value.data = ngx_pnalloc(r->pool,
                                sizeof("bytes -/") - 1 + 3 * NGX_OFF_T_LEN);
    if (h->value.data == NULL) {
        return NGX_ERROR;
    }

    r->headers_out.content_range = h;

    if (rc == NGX_HTTP_RANGE_NOT_SATISFIABLE) {
        link->stats.unsatisfiable++;
        h->value.len = ngx_sprintf(h->value.data, "bytes */%uL", m->size)
                       - h->value.data;
        r->headers_out.status = NGX_HTTP_RANGE_NOT_SATISFIABLE;
        r->headers_out.content_length_n = 0;
        return NGX_DONE;
    }

    link->stats.ranges++;
    h->value.len = ngx_sprintf(h->value.data, "bytes %O-%O/%uL", ctx->start,
                               ctx->end - 1, m->size)
                   - h->value.data;
    r->headers_out.status = NGX_HTTP_PARTIAL_CONTENT;
    r->headers_out.content_length_n = ctx->end - ctx->start;

    return NGX_OK;
}


static ngx_table_elt_t *
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


/*
 * A single "bytes=" range: NGX_OK with ctx->start/end, NGX_DECLINED to
 * send the whole object (no, several, malformed or If-Range-stale
 * ranges), or NGX_HTTP_RANGE_NOT_SATISFIABLE.
 */
static ngx_int_t
ngx_http_goblin_range(ngx_http_goblin_ctx_t *ctx)
{
    off_t                size;
    time_t               t;
    int64_t              start, end;
    ngx_str_t           *v, *etag;
    ngx_http_request_t  *r;

    r = ctx->request;
    size = (off_t) ctx->meta.size;

    if (r->headers_in.range == NULL || r != r->main) {
        return NGX_DECLINED;
    }

    v = &r->headers_in.range->value;

    if (v->len < 7 || ngx_strncasecmp(v->data, (u_char *) "bytes=", 6) != 0) {
        return NGX_DECLINED;
    }

    if (r->headers_in.if_range) {
        etag = &r->headers_out.etag->value;
        v = &r->headers_in.if_range->value;

        if (v->len >= 2 && v->data[v->len - 1] == '"') {
            if (v->len != etag->len
                || ngx_strncmp(v->data, etag->data, etag->len) != 0)
            {
                return NGX_DECLINED;
            }

        } else {
            t = ngx_parse_http_time(v->data, v->len);
            if (t == NGX_ERROR || t != (time_t) ctx->meta.mtime) {
                return NGX_DECLINED;
            }
        }

        v = &r->headers_in.range->value;
    }

    switch (ngx_http_goblin_range_parse(v->data, v->len, size, &start,
                                        &end))
    {
    case NGX_HTTP_GOBLIN_RANGE_PART:
        ctx->start = (off_t) start;
        ctx->end = (off_t) end;
        return NGX_OK;

    case NGX_HTTP_GOBLIN_RANGE_UNSATISFIABLE:
        return NGX_HTTP_RANGE_NOT_SATISFIABLE;

    default:
        return NGX_DECLINED;
    }
}


static ngx_chain_t *
ngx_http_goblin_chain(ngx_http_goblin_ctx_t *ctx)
{
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    cl = ctx->free;

    if (cl) {
        ctx->free = cl->next;
        b = cl->buf;
        ngx_memzero(b, sizeof(ngx_buf_t));

    } else {
        cl = ngx_alloc_chain_link(ctx->request->pool);
        if (cl == NULL) {
            return NULL;
        }

        b = ngx_calloc_buf(ctx->request->pool);
        if (b == NULL) {
            return NULL;
        }

        cl->buf = b;
    }

    cl->next = NULL;
    b->tag = (ngx_buf_tag_t) &ngx_http_goblin_module;

    return cl;
}


/* Staged disk bytes: the next piece of the body, in order. */
static void
ngx_http_goblin_got_data(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    ngx_buf_t               *b;
    ngx_chain_t             *cl, **ll;
    ngx_http_request_t      *r;
    ngx_http_goblin_link_t  *link = ngx_http_goblin_link;

    r = ctx->request;

    if ((off_t) cqe->off != ctx->next || cqe->len == 0
        || (off_t) (cqe->off + cqe->len) > ctx->end)
    {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      "goblin: storaged staged bytes %uL+%uL of \"%V\", "
                      "%O expected", cqe->off, cqe->len, &ctx->key,
                      ctx->next);
        ngx_http_goblin_submit_handle(ctx, RING_OP_BUFREL, cqe->buf, 0, 0);
        ngx_http_goblin_fail(ctx, NGX_HTTP_BAD_GATEWAY);
        return;
    }

    if (ctx->header_deferred && ngx_http_goblin_send_header(ctx) != NGX_OK) {
        ngx_http_goblin_submit_handle(ctx, RING_OP_BUFREL, cqe->buf, 0, 0);
        return;
    }

    cl = ngx_http_goblin_chain(ctx);
    if (cl == NULL) {
        ngx_http_goblin_submit_handle(ctx, RING_OP_BUFREL, cqe->buf, 0, 0);
        ngx_http_goblin_fail(ctx, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    b = cl->buf;
    b->memory = 1;
    b->num = (int) cqe->buf;
    b->start = (u_char *) ring_rx_buf(&ctx->map->ring, cqe->buf);
    link->rx_held++;
    b->pos = b->start;
    b->last = b->start + cqe->len;
    b->end = b->last;

    ctx->next += cqe->len;
    link->stats.staged_bytes += cqe->len;

    if (ctx->next == ctx->end) {
        b->last_buf = (r == r->main) ? 1 : 0;
        b->last_in_chain = 1;
        ctx->last_passed = 1;
    }

    for (ll = &ctx->out; *ll; ll = &(*ll)->next) { /* void */ }
    *ll = cl;

    ngx_http_goblin_send(ctx);
}


static void
ngx_http_goblin_read_done(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    if (cqe->res == 0 && ctx->next == ctx->end) {
        return;
    }

    ngx_log_error(NGX_LOG_ERR, ctx->request->connection->log,
                  cqe->res ? -cqe->res : 0,
                  "goblin: reading \"%V\" from storaged failed at %O",
                  &ctx->key, ctx->next);

    ngx_http_goblin_fail(ctx, NGX_HTTP_BAD_GATEWAY);
}


/*
 * The rx buffers queued in ctx->out (not passed on yet) go out uncopied
 * only while nothing passed earlier waits for this client and the
 * worker's clients hold few rx buffers; else they are copied to the heap
 * and go back to storaged now.
 */
static ngx_int_t
ngx_http_goblin_copy_aside(ngx_http_goblin_ctx_t *ctx)
{
    u_char                  *p;
    size_t                   size;
    ngx_buf_t               *b;
    ngx_uint_t               n, limit, waiting;
    ngx_chain_t             *cl;
    ngx_http_goblin_link_t  *link = ngx_http_goblin_link;

    waiting = 0;

    for (cl = ctx->busy; cl; cl = cl->next) {
        if (ngx_buf_size(cl->buf)) {
            waiting = 1;
            break;
        }
    }

    n = 0;

    for (cl = ctx->out; cl; cl = cl->next) {
        if (cl->buf->num >= 0) {
            n++;
        }
    }

    limit = ngx_max(ctx->map->ring.n_rx / NGX_HTTP_GOBLIN_RX_HELD_SHARE, 1);

    if (n == 0 || (!waiting && link->rx_held <= limit)) {
        return NGX_OK;
    }

    for (cl = ctx->out; cl; cl = cl->next) {
        b = cl->buf;

        if (b->num < 0) {
            continue;
        }

        size = b->last - b->pos;

        p = ngx_alloc(size, ctx->request->connection->log);
        if (p == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(p, b->pos, size);
        ngx_http_goblin_submit_handle(ctx, RING_OP_BUFREL, b->num, 0, 0);
        link->rx_held--;

        b->start = p;
        b->pos = p;
        b->last = p + size;
        b->end = b->last;
        b->num = NGX_HTTP_GOBLIN_HEAP_BUF;

        link->stats.spilled_bytes += size;
    }

    return NGX_OK;
}


/* A body buffer nginx is done with (or the request is): its memory goes
 * back. */
static void
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


/*
 * Passes what is queued on and gives back every buffer nginx has sent
 * (ngx_chain_update_chains(): the busy chain in order, a buffer is done
 * when its size is 0).  A buffer passed on is never touched again: HTTP/2
 * frames, sub_filter and gzip keep their own references to its memory
 * (shadow buffers) after ngx_http_output_filter() returns.  So while bytes
 * passed earlier still wait for the client, new rx buffers are copied
 * aside BEFORE they are passed and go back to storaged at once: a slow
 * client holds at most the rx buffers of one pass, and heap copies up to
 * the READ's window.
 */
static void
ngx_http_goblin_send(ngx_http_goblin_ctx_t *ctx)
{
    off_t                      pending, accepted, window, more;
    ngx_int_t                  rc;
    ngx_chain_t               *cl, **ll;
    ngx_event_t               *wev;
    ngx_http_request_t        *r;
    ngx_http_goblin_link_t    *link = ngx_http_goblin_link;
    ngx_http_core_loc_conf_t  *clcf;

    r = ctx->request;

    if (ngx_http_goblin_copy_aside(ctx) != NGX_OK) {
        ngx_http_goblin_finalize(ctx, NGX_ERROR);
        return;
    }

    rc = ngx_http_output_filter(r, ctx->out);

    for (ll = &ctx->busy; *ll; ll = &(*ll)->next) { /* void */ }
    *ll = ctx->out;
    ctx->out = NULL;

    while (ctx->busy && ngx_buf_size(ctx->busy->buf) == 0) {
        cl = ctx->busy;
        ctx->busy = cl->next;
        ngx_http_goblin_buf_done(ctx, cl->buf);
        cl->next = ctx->free;
        ctx->free = cl;
    }

    pending = 0;

    for (cl = ctx->busy; cl; cl = cl->next) {
        if (cl->buf->num != NGX_HTTP_GOBLIN_HEAD_BUF) {
            pending += ngx_buf_size(cl->buf);
        }
    }

    if (rc == NGX_ERROR) {
        link->stats.cut_responses++;
        ngx_http_goblin_finalize(ctx, NGX_ERROR);
        return;
    }

    if (ctx->last_passed) {
        /* nginx's own writer flushes the rest; cleanup gives back */
        ngx_http_goblin_finalize(ctx, rc);
        return;
    }

    /* let the READ stage up to a window past what the client took */

    if (ctx->granted < ctx->end) {
        window = (off_t) NGX_HTTP_GOBLIN_WINDOW_BUFS
                 * ctx->map->ring.buf_size;
        accepted = ctx->next - pending;

        if (ctx->granted - accepted <= window / 2) {
            more = ngx_min(ctx->end, accepted + window) - ctx->granted;
            ngx_http_goblin_submit_handle(ctx, RING_OP_MORE, 0, 0, more);
            ctx->granted += more;
        }
    }

    /* goblin_read_timeout runs while storaged owes bytes, not while the
     * client is slow to take them (send_timeout is for that) */

    if (ctx->next < ctx->granted) {
        ngx_http_goblin_wait(ctx);

    } else if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    if (rc != NGX_AGAIN) {
        return;
    }

    r->write_event_handler = ngx_http_goblin_write_handler;

    wev = r->connection->write;
    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    if (!wev->delayed) {
        ngx_add_timer(wev, clcf->send_timeout);
    }

    if (ngx_handle_write_event(wev, clcf->send_lowat) != NGX_OK) {
        ngx_http_goblin_finalize(ctx, NGX_ERROR);
    }
}


static void
ngx_http_goblin_write_handler(ngx_http_request_t *r)
{
    ngx_event_t               *wev;
    ngx_http_goblin_ctx_t     *ctx;
    ngx_http_core_loc_conf_t  *clcf;

    ctx = ngx_http_get_module_ctx(r, ngx_http_goblin_module);
    wev = r->connection->write;

    if (ctx == NULL || ctx->done) {
        return;
    }

    if (wev->timedout) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, NGX_ETIMEDOUT,
                      "client timed out");
        r->connection->timedout = 1;
        ngx_http_goblin_link->stats.cut_responses++;
        ngx_http_goblin_finalize(ctx, NGX_HTTP_REQUEST_TIME_OUT);
        return;
    }

    if (wev->delayed) {
        clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

        if (ngx_handle_write_event(wev, clcf->send_lowat) != NGX_OK) {
            ngx_http_goblin_finalize(ctx, NGX_ERROR);
        }

        return;
    }

    if (wev->timer_set) {
        ngx_del_timer(wev);
    }

    ngx_http_goblin_send(ctx);
}


/* ---- PUT ---- */


/* Called once the body starts coming: a tx buffer first, then the writer. */
static void
ngx_http_goblin_put_body(ngx_http_request_t *r)
{
    ngx_http_goblin_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_goblin_module);

    if (ctx == NULL || ctx->done || ctx->writer || ctx->tx_buf >= 0) {
        return;
    }

    r->read_event_handler = ngx_http_goblin_put_read;

    ctx->tx_buf = ngx_http_goblin_tx_take(ctx);

    if (ctx->tx_buf >= 0) {
        ngx_http_goblin_open_writer(ctx);
    }
}


static void
ngx_http_goblin_open_writer(ngx_http_goblin_ctx_t *ctx)
{
    ctx->tx_len = 0;

    ngx_http_goblin_submit_key(ctx, RING_OP_WOPEN, ctx->body_size);
    ngx_http_goblin_wait(ctx);
}


static void
ngx_http_goblin_put_read(ngx_http_request_t *r)
{
    ngx_http_goblin_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_goblin_module);

    if (ctx && !ctx->done && ctx->writer && !ctx->waiting_tx) {
        ngx_http_goblin_pump_body(ctx);
    }
}


static void
ngx_http_goblin_got_writer(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    ngx_http_request_t  *r = ctx->request;

    if (cqe->res != 0) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, -cqe->res,
                      "goblin: storaged refused %O bytes for \"%V\"",
                      ctx->body_size, &ctx->key);
        ngx_http_goblin_link->stats.put_errors++;
        ngx_http_goblin_finalize(ctx, ngx_http_goblin_error_status(cqe->res));
        return;
    }

    ctx->writer = 1;
    ctx->handle = cqe->handle;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    ngx_http_goblin_pump_body(ctx);
}


/*
 * Moves body bytes into the PUT's tx buffer and ships it whenever it is
 * full, or nginx has read nothing more for now; the TXDONE brings the
 * buffer back for the next bytes.  While it is away nginx reads no more
 * of the body, which is how a slow store slows the client down.
 */
static void
ngx_http_goblin_pump_body(ngx_http_goblin_ctx_t *ctx)
{
    size_t                    n;
    ngx_int_t                 rc;
    ngx_buf_t                *b;
    ngx_http_request_t       *r;
    ngx_http_request_body_t  *rb;

    r = ctx->request;
    rb = r->request_body;

    if (ctx->tx_busy || ctx->finishing || !ctx->writer) {
        return;
    }

    for ( ;; ) {
        if (ctx->body == NULL && rb->bufs) {
            ctx->body = rb->bufs;
            rb->bufs = NULL;
        }

        while (ctx->body && ctx->body_copied < ctx->body_size) {
            b = ctx->body->buf;

            if (b->in_file) {
                ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                              "goblin: a request body buffered to a file");
                ngx_http_goblin_finalize(ctx, NGX_HTTP_INTERNAL_SERVER_ERROR);
                return;
            }

            if (b->pos == b->last) {
                ctx->body = ctx->body->next;
                continue;
            }

            n = ngx_min((size_t) (b->last - b->pos),
                        ctx->map->ring.buf_size - ctx->tx_len);
            n = ngx_min(n, (size_t) (ctx->body_size - ctx->body_copied));

            ngx_memcpy(ring_tx_buf(&ctx->map->ring, (uint32_t) ctx->tx_buf)
                       + ctx->tx_len, b->pos, n);

            b->pos += n;
            ctx->tx_len += n;
            ctx->body_copied += n;

            if (ctx->tx_len == ctx->map->ring.buf_size
                && ctx->body_copied < ctx->body_size)
            {
                ngx_http_goblin_wdata(ctx);
                return;
            }
        }

        if (ctx->body_copied == ctx->body_size) {
            if (ctx->tx_len) {
                ngx_http_goblin_wdata(ctx);
            }

            ctx->finishing = 1;
            ngx_http_goblin_submit_handle(ctx, RING_OP_WFINISH, 0, 0, 0);
            ngx_http_goblin_wait(ctx);
            r->read_event_handler = ngx_http_block_reading;

            if (!ctx->tx_busy) {
                ngx_http_goblin_tx_put((uint32_t) ctx->tx_buf);
                ctx->tx_buf = -1;
            }

            return;
        }

        if (!r->reading_body) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "goblin: request body ended at %O of %O bytes",
                          ctx->body_copied, ctx->body_size);
            ngx_http_goblin_finalize(ctx, NGX_HTTP_BAD_REQUEST);
            return;
        }

        rc = ngx_http_read_unbuffered_request_body(r);

        if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
            ngx_http_goblin_link->stats.put_errors++;
            ngx_http_goblin_finalize(ctx, rc);
            return;
        }

        if (rb->bufs == NULL) {
            /* nothing more for now: ship what is staged, wait to read */
            if (ctx->tx_len) {
                ngx_http_goblin_wdata(ctx);
            }

            return;
        }
    }
}


static void
ngx_http_goblin_wdata(ngx_http_goblin_ctx_t *ctx)
{
    ngx_http_goblin_link->stats.put_bytes += ctx->tx_len;

    ngx_http_goblin_submit_handle(ctx, RING_OP_WDATA, (uint32_t) ctx->tx_buf,
                                  0, (off_t) ctx->tx_len);
    ctx->tx_busy = 1;
    ngx_http_goblin_wait(ctx);
}


/* The PUT's tx buffer is back: more of the body, or its job is done. */
static void
ngx_http_goblin_txdone(ngx_http_goblin_ctx_t *ctx)
{
    ctx->tx_busy = 0;
    ctx->tx_len = 0;

    if (ctx->finishing) {
        ngx_http_goblin_tx_put((uint32_t) ctx->tx_buf);
        ctx->tx_buf = -1;
        return;
    }

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    ngx_http_goblin_pump_body(ctx);
}


static void
ngx_http_goblin_stored(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    ngx_str_t                etag;
    ngx_table_elt_t         *h;
    ngx_http_request_t      *r;
    ngx_http_goblin_link_t  *link = ngx_http_goblin_link;

    r = ctx->request;
    ctx->writer = 0;

    if (cqe->res != 0) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, -cqe->res,
                      "goblin: storing \"%V\" failed", &ctx->key);
        link->stats.put_errors++;
        ngx_http_goblin_finalize(ctx, ngx_http_goblin_error_status(cqe->res));
        return;
    }

    if (cqe->len) {
        link->stats.puts_replaced++;
        r->headers_out.status = NGX_HTTP_NO_CONTENT;

    } else {
        link->stats.puts_created++;
        r->headers_out.status = NGX_HTTP_CREATED;
        r->headers_out.content_length_n = 0;
    }

    etag.data = ngx_pnalloc(r->pool, NGX_INT64_LEN + 2);
    if (etag.data == NULL) {
        ngx_http_goblin_finalize(ctx, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    etag.len = ngx_sprintf(etag.data, "\"%xL\"", cqe->meta.cas) - etag.data;

    h = ngx_http_goblin_add_header(r, "ETag", &etag);
    if (h == NULL) {
        ngx_http_goblin_finalize(ctx, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    r->headers_out.etag = h;
    r->header_only = 1;

    ngx_http_goblin_finalize(ctx, ngx_http_send_header(r));
}


/* ---- DELETE ---- */


static void
ngx_http_goblin_deleted(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    ngx_http_request_t      *r = ctx->request;
    ngx_http_goblin_link_t  *link = ngx_http_goblin_link;

    if (cqe->res != 0) {
        if (cqe->res == -ENOENT) {
            link->stats.delete_misses++;
        }

        ngx_http_goblin_finalize(ctx, ngx_http_goblin_error_status(cqe->res));
        return;
    }

    link->stats.deletes++;

    r->headers_out.status = NGX_HTTP_NO_CONTENT;
    r->header_only = 1;

    ngx_http_goblin_finalize(ctx, ngx_http_send_header(r));
}


/* ---- goblin_status ---- */


/* "name value" lines from storaged into a JSON object of numbers. */
static void
ngx_http_goblin_got_stats(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    u_char              *p, *last, *name, *eol;
    json_t              *storaged;
    ngx_int_t            rc;
    ngx_str_t            value;
    uint64_t             n;
    ngx_http_request_t  *r;

    r = ctx->request;

    if (cqe->res != 0) {
        ngx_http_goblin_finalize(ctx, ngx_http_goblin_error_status(cqe->res));
        return;
    }

    storaged = json_object();
    if (storaged == NULL) {
        ngx_http_goblin_submit_handle(ctx, RING_OP_BUFREL, cqe->buf, 0, 0);
        ngx_http_goblin_finalize(ctx, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    p = (u_char *) ring_rx_buf(&ctx->map->ring, cqe->buf);
    last = p + cqe->len;

    for ( /* void */ ; p < last; p = eol + 1) {
        eol = ngx_strlchr(p, last, '\n');
        if (eol == NULL) {
            eol = last;
        }

        name = p;
        p = ngx_strlchr(name, eol, ' ');
        if (p == NULL || p == name) {
            continue;
        }

        value.data = p + 1;
        value.len = eol - value.data;

        for (n = 0; value.len && *value.data >= '0' && *value.data <= '9';
             value.data++, value.len--)
        {
            n = n * 10 + (*value.data - '0');
        }

        *p = '\0';      /* the buffer is ours until BUFREL */
        json_object_set_new(storaged, (char *) name, json_integer(n));
        *p = ' ';
    }

    ngx_http_goblin_submit_handle(ctx, RING_OP_BUFREL, cqe->buf, 0, 0);

    rc = ngx_http_goblin_send_status(r, storaged);

    ngx_http_goblin_finalize(ctx, rc);
}


/*
 * {"pid":..., "link":"up"|"down", "module":{...}, "storaged":{...}|null};
 * 503 when storaged could not be asked.  Takes <storaged>.
 */
static ngx_int_t
ngx_http_goblin_send_status(ngx_http_request_t *r, json_t *storaged)
{
    char                    *text;
    json_t                  *root, *module;
    size_t                   len;
    ngx_int_t                rc;
    ngx_buf_t               *b;
    ngx_chain_t              out;
    ngx_http_goblin_link_t  *link = ngx_http_goblin_link;

    root = json_object();
    module = json_object();

    if (root == NULL || module == NULL) {
        json_decref(root);
        json_decref(module);
        json_decref(storaged);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    json_object_set_new(root, "pid", json_integer(ngx_pid));
    json_object_set_new(root, "link",
                        json_string(link->state == NGX_HTTP_GOBLIN_UP
                                    ? "up" : "down"));

#define NGX_HTTP_GOBLIN_STAT_JSON(name)                                       \
    json_object_set_new(module, #name, json_integer(link->stats.name));
    NGX_HTTP_GOBLIN_STATS(NGX_HTTP_GOBLIN_STAT_JSON)
#undef NGX_HTTP_GOBLIN_STAT_JSON

    json_object_set_new(module, "rx_held", json_integer(link->rx_held));
    json_object_set_new(root, "module", module);
    json_object_set_new(root, "storaged", storaged ? storaged : json_null());

    text = json_dumps(root, JSON_INDENT(2));
    json_decref(root);

    if (text == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    len = ngx_strlen(text);

    b = ngx_create_temp_buf(r->pool, len + 1);
    if (b == NULL) {
        free(text);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->last = ngx_cpymem(b->pos, text, len);
    *b->last++ = '\n';
    free(text);

    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    r->headers_out.status = storaged ? NGX_HTTP_OK
                                     : NGX_HTTP_SERVICE_UNAVAILABLE;
    r->headers_out.content_length_n = b->last - b->pos;
    ngx_str_set(&r->headers_out.content_type, "application/json");
    r->headers_out.content_type_len = r->headers_out.content_type.len;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}
