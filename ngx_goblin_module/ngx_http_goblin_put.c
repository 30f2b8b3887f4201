
/*
 * ngx_http_goblin_module: PUT and DELETE.
 *
 * PUT: the body is read unbuffered and copied into tx buffers as it
 * comes; when none is free nginx stops reading the client.  201 or 204
 * only once the daemon has stored every byte.
 *
 * DELETE: 204, or 404 when there was nothing to delete.
 */


#include "ngx_http_goblin_module.h"


static void ngx_http_goblin_put_body(ngx_http_request_t *r);
static void ngx_http_goblin_open_writer(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_put_read(ngx_http_request_t *r);
static void ngx_http_goblin_pump_body(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_wdata(ngx_http_goblin_ctx_t *ctx);


/* ---- PUT ---- */


/* The content handler's PUT, with the <key> it was checked for. */
ngx_int_t
ngx_http_goblin_put_handler(ngx_http_request_t *r, ngx_str_t *key)
{
    ngx_int_t                    rc;
    ngx_http_goblin_ctx_t       *ctx;
    ngx_http_goblin_loc_conf_t  *glcf;

    glcf = ngx_http_get_module_loc_conf(r, ngx_http_goblin_module);

    if (r->headers_in.chunked || r->headers_in.content_length_n < 0) {
        return NGX_HTTP_LENGTH_REQUIRED;
    }

    if (r->headers_in.content_length_n > glcf->max_object) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "goblin: a %O-byte PUT is over goblin_max_object "
                      "%O", r->headers_in.content_length_n,
                      glcf->max_object);
        ngx_http_goblin_link->stats.put_errors++;
        return NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
    }

    ctx = ngx_http_goblin_create_ctx(r);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->key = *key;
    ctx->body_size = r->headers_in.content_length_n;

    r->request_body_no_buffering = 1;

    rc = ngx_http_read_client_request_body(r, ngx_http_goblin_put_body);
    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


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


/* A tx buffer came free for a PUT that waited to start (ctx->tx_buf). */
void
ngx_http_goblin_tx_ready(ngx_http_goblin_ctx_t *ctx)
{
    ngx_http_goblin_open_writer(ctx);
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


void
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
void
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


void
ngx_http_goblin_stored(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
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

    if (ngx_http_goblin_set_etag(r, cqe->meta.cas) != NGX_OK) {
        ngx_http_goblin_finalize(ctx, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    r->header_only = 1;

    ngx_http_goblin_finalize(ctx, ngx_http_send_header(r));
}


/* ---- DELETE ---- */


void
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
