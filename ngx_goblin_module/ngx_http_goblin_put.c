
/*
 * ngx_http_goblin_module: PUT.
 *
 * PUT: the body is read unbuffered.  Its first tx buffer's worth (or all
 * of a smaller body) is read into the heap before the PUT takes a tx
 * buffer and opens a writer, so a client that sends less and stalls holds
 * nothing of the ring's; from then on the body is copied into the tx
 * buffer as it comes, and every full one is shipped.  A PUT waits for a tx
 * buffer goblin_put_wait at most, behind goblin_put_queue others at most
 * (else 503 with Retry-After), and holds one while its client sends the
 * next buffer's worth goblin_body_timeout at most (else 408, the writer
 * aborted).  201 or 204 only once the daemon has stored every byte.
 *
 * A body of unknown size (chunked, or HTTP/2 without Content-Length) is
 * stored by a writer of RING_SIZE_UNKNOWN, unless it is all in before the
 * writer opens; past goblin_max_object it is 413 and the writer aborted,
 * nothing stored.  The PUT's metadata (Content-Type, Content-Encoding,
 * Content-Language, Content-Disposition, Cache-Control, Expires) is stored
 * as the object's attributes (ngx_http_goblin_attr.c): the first attr_len
 * bytes of the WDATA stream.  Preconditions (ngx_http_goblin_cond.c) are
 * settled before the body is read, and their outcome rides on WFINISH.
 */


#include "ngx_http_goblin_module.h"
#include "ngx_http_goblin_http.h"


static ngx_int_t ngx_http_goblin_put_attr(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_put_checked(ngx_http_goblin_ctx_t *ctx);
static ngx_int_t ngx_http_goblin_put_start(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_put_body(ngx_http_request_t *r);
static void ngx_http_goblin_put_read(ngx_http_request_t *r);
static void ngx_http_goblin_pump_body(ngx_http_goblin_ctx_t *ctx);
static ngx_int_t ngx_http_goblin_take_body(ngx_http_goblin_ctx_t *ctx);
static ngx_int_t ngx_http_goblin_heap_room(ngx_http_goblin_ctx_t *ctx,
    size_t n);
static void ngx_http_goblin_body_in(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_open_writer(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_tx_ready(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_got_writer(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static void ngx_http_goblin_wdata(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_txdone(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static void ngx_http_goblin_put_timeout(ngx_event_t *ev);
static void ngx_http_goblin_finish(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_stored(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);


/* The completions of a PUT: its preconditions' LOOKUP, its writer, its tx
 * buffer back, stored. */
static const ngx_http_goblin_completion_t  ngx_http_goblin_put_completions[] = {
    { RING_OP_LOOKUP, ngx_http_goblin_precondition_found },
    { RING_OP_WOPEN, ngx_http_goblin_got_writer },
    { RING_OP_TXDONE, ngx_http_goblin_txdone },
    { RING_OP_WFINISH, ngx_http_goblin_stored },
    { 0, NULL }
};


/* ---- PUT ---- */


/* The content handler's PUT, with the <key> it was checked for. */
ngx_int_t
ngx_http_goblin_put_handler(ngx_http_request_t *r, ngx_str_t *key)
{
    ngx_int_t                    rc;
    ngx_http_goblin_ctx_t       *ctx;
    ngx_http_goblin_loc_conf_t  *glcf;

    glcf = ngx_http_get_module_loc_conf(r, ngx_http_goblin_module);

    if (r->headers_in.content_length_n > glcf->max_object) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "goblin: a %O-byte PUT is over goblin_max_object "
                      "%O", r->headers_in.content_length_n,
                      glcf->max_object);
        ngx_http_goblin_count(put_errors, 1);
        return NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
    }

    ctx = ngx_http_goblin_create_ctx(r, ngx_http_goblin_put_completions);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->tx_ready = ngx_http_goblin_tx_ready;
    ctx->key = *key;

    /* -1: known once it is all in (chunked; HTTP/2 without a length); an
     * HTTP/1 request with neither has none */
    ctx->body_size = r->headers_in.content_length_n;

    if (ctx->body_size < 0 && !r->headers_in.chunked
#if (NGX_HTTP_V2)
        && r->stream == NULL
#endif
       )
    {
        ctx->body_size = 0;
    }

    ctx->put_timer.handler = ngx_http_goblin_put_timeout;
    ctx->put_timer.data = ctx;
    ctx->put_timer.log = r->connection->log;

    rc = ngx_http_goblin_put_attr(ctx);
    if (rc != NGX_OK) {
        return rc;
    }

    rc = ngx_http_goblin_precondition(ctx, ngx_http_goblin_put_checked, 1);

    if (rc == NGX_AGAIN) {
        r->main->count++;
        return NGX_DONE;
    }

    if (ctx->wplan == NGX_HTTP_GOBLIN_WRITE_FAILED) {
        ngx_http_goblin_count(precondition_failed, 1);
        return NGX_HTTP_PRECONDITION_FAILED;
    }

    return ngx_http_goblin_put_start(ctx);
}


/*
 * The PUT's metadata headers as the object's attributes, at the start of
 * the heap: the WDATA stream carries them first.  None: no attributes.
 */
static ngx_int_t
ngx_http_goblin_put_attr(ngx_http_goblin_ctx_t *ctx)
{
    ngx_int_t            rc;
    ngx_http_request_t  *r;

    r = ctx->request;

    rc = ngx_http_goblin_attr_request(r, &ctx->attr);

    if (rc == NGX_DECLINED) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "goblin: the metadata headers of the PUT of \"%V\" "
                      "are over the %ud bytes an object keeps", &ctx->key,
                      RING_ATTR_MAX);
        ngx_http_goblin_count(put_errors, 1);
        return NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
    }

    if (rc != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ctx->attr.len == 0) {
        return NGX_OK;
    }

    if (ngx_http_goblin_heap_room(ctx, ctx->attr.len) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_memcpy(ctx->heap, ctx->attr.data, ctx->attr.len);
    ctx->heap_len = ctx->attr.len;
    ngx_http_goblin_link->put_heap_bytes += ctx->attr.len;

    return NGX_OK;
}


/* The preconditions' LOOKUP settled them: 412, or the body is read. */
static void
ngx_http_goblin_put_checked(ngx_http_goblin_ctx_t *ctx)
{
    ngx_int_t            rc;
    ngx_http_request_t  *r = ctx->request;

    if (ctx->wplan == NGX_HTTP_GOBLIN_WRITE_FAILED) {
        ngx_http_goblin_count(precondition_failed, 1);
        ngx_http_goblin_finalize(ctx, NGX_HTTP_PRECONDITION_FAILED);
        return;
    }

    rc = ngx_http_goblin_put_start(ctx);

    if (rc != NGX_DONE) {
        ngx_http_goblin_finalize(ctx, rc);
        return;
    }

    /* the reference ngx_http_read_client_request_body() took */
    ngx_http_finalize_request(r, NGX_DONE);
}


/* Starts reading the body; NGX_DONE, or the status to answer. */
static ngx_int_t
ngx_http_goblin_put_start(ngx_http_goblin_ctx_t *ctx)
{
    ngx_int_t            rc;
    ngx_http_request_t  *r = ctx->request;

    r->request_body_no_buffering = 1;

    rc = ngx_http_read_client_request_body(r, ngx_http_goblin_put_body);
    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


/* Called once the body starts coming. */
static void
ngx_http_goblin_put_body(ngx_http_request_t *r)
{
    ngx_http_goblin_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_goblin_module);

    if (ctx == NULL || ctx->done || ctx->body_started) {
        return;
    }

    ctx->body_started = 1;
    r->read_event_handler = ngx_http_goblin_put_read;

    ngx_http_goblin_pump_body(ctx);
}


static void
ngx_http_goblin_put_read(ngx_http_request_t *r)
{
    ngx_http_goblin_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_goblin_module);

    if (ctx && !ctx->done) {
        ngx_http_goblin_pump_body(ctx);
    }
}


/*
 * Reads the body into the heap (before the PUT has a tx buffer) or into
 * its tx buffer, and moves on whenever one is full or the body is all in.
 * While the PUT waits for a tx buffer, for the writer, or for its buffer
 * back (TXDONE), nginx reads no more of the body: that is how a slow store
 * slows the client down, and such a wait is storaged's, not the client's.
 */
static void
ngx_http_goblin_pump_body(ngx_http_goblin_ctx_t *ctx)
{
    ngx_int_t                    rc;
    ngx_connection_t            *c;
    ngx_http_request_t          *r;
    ngx_http_goblin_loc_conf_t  *glcf;

    r = ctx->request;
    c = r->connection;

    for ( ;; ) {
        if (ctx->done) {
            return;
        }

        if (ctx->waiting_tx || ctx->tx_busy || ctx->finishing
            || (ctx->tx_buf >= 0 && !ctx->writer))
        {
            /* client_body_timeout counts only the client's waits */
            if (c->read->timer_set) {
                ngx_del_timer(c->read);
            }

            return;
        }

        rc = ngx_http_goblin_take_body(ctx);

        if (rc == NGX_ERROR) {
            ngx_http_goblin_finalize(ctx, NGX_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }

        if (rc == NGX_DECLINED) {
            /* the writer, if any, is aborted as the request goes */
            ngx_http_goblin_count(put_errors, 1);
            ngx_http_goblin_finalize(ctx, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE);
            return;
        }

        if (rc == NGX_DONE) {
            ngx_http_goblin_body_in(ctx);
            continue;
        }

        /* all nginx had read is taken: read on */

        if (!r->reading_body && ctx->body_size < 0) {
            /* a body of unknown size is all in: its size is known now */
            ctx->body_size = ctx->body_copied;
            continue;
        }

        if (!r->reading_body) {
            ngx_log_error(NGX_LOG_ERR, c->log, 0,
                          "goblin: request body ended at %O of %O bytes",
                          ctx->body_copied, ctx->body_size);
            ngx_http_goblin_finalize(ctx, NGX_HTTP_BAD_REQUEST);
            return;
        }

        rc = ngx_http_read_unbuffered_request_body(r);

        if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
            ngx_http_goblin_count(put_errors, 1);
            ngx_http_goblin_finalize(ctx, rc);
            return;
        }

        if (r->request_body->bufs == NULL) {
            /* nothing more for now: a PUT holding a tx buffer gets
             * goblin_body_timeout for the buffer's worth */
            if (ctx->writer && !ctx->put_timer.timer_set) {
                glcf = ngx_http_get_module_loc_conf(r,
                                                    ngx_http_goblin_module);
                ngx_add_timer(&ctx->put_timer, glcf->body_timeout);
            }

            return;
        }
    }
}


/*
 * Moves the body bytes nginx has read into the heap or the tx buffer.
 * NGX_DONE: the heap holds the first buffer's worth, the tx buffer is
 * full, or the body is all in; NGX_OK: all nginx had is taken;
 * NGX_DECLINED: a body of unknown size is over goblin_max_object.
 */
static ngx_int_t
ngx_http_goblin_take_body(ngx_http_goblin_ctx_t *ctx)
{
    size_t                        n, room;
    u_char                       *dst;
    ngx_buf_t                    *b;
    ngx_http_request_t           *r;
    ngx_http_request_body_t      *rb;
    ngx_http_goblin_loc_conf_t   *glcf;

    r = ctx->request;
    rb = r->request_body;
    glcf = ngx_http_get_module_loc_conf(r, ngx_http_goblin_module);

    for ( ;; ) {
        if (ctx->body_copied == ctx->body_size) {
            return NGX_DONE;
        }

        if (ctx->body_size < 0 && ctx->body_copied > glcf->max_object) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "goblin: a PUT of unknown size went over "
                          "goblin_max_object %O", glcf->max_object);
            return NGX_DECLINED;
        }

        room = (ctx->tx_buf >= 0 ? ctx->tx_len : ctx->heap_len);
        room = ctx->map->ring.buf_size - room;

        if (room == 0) {
            return NGX_DONE;
        }

        if (ctx->body == NULL) {
            ctx->body = rb->bufs;
            rb->bufs = NULL;

            if (ctx->body == NULL) {
                return NGX_OK;
            }
        }

        b = ctx->body->buf;

        if (b->in_file) {
            ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                          "goblin: a request body buffered to a file");
            return NGX_ERROR;
        }

        if (b->pos == b->last) {
            ctx->body = ctx->body->next;
            continue;
        }

        n = ngx_min((size_t) (b->last - b->pos), room);

        if (ctx->body_size >= 0) {
            n = ngx_min(n, (size_t) (ctx->body_size - ctx->body_copied));

        } else {
            /* one byte past goblin_max_object is enough to tell */
            n = ngx_min(n, (size_t) (glcf->max_object + 1
                                     - ctx->body_copied));
        }

        if (ctx->tx_buf >= 0) {
            dst = (u_char *) ring_tx_buf(&ctx->map->ring,
                                         (uint32_t) ctx->tx_buf)
                  + ctx->tx_len;
            ctx->tx_len += n;

        } else {
            if (ngx_http_goblin_heap_room(ctx, n) != NGX_OK) {
                return NGX_ERROR;
            }

            dst = ctx->heap + ctx->heap_len;
            ctx->heap_len += n;
            ngx_http_goblin_link->put_heap_bytes += n;
        }

        ngx_memcpy(dst, b->pos, n);
        b->pos += n;
        ctx->body_copied += n;
    }
}


/* Room for <n> more bytes in the heap: at most twice what the client has
 * sent, never more than the first buffer's worth (attributes included). */
static ngx_int_t
ngx_http_goblin_heap_room(ngx_http_goblin_ctx_t *ctx, size_t n)
{
    u_char  *heap;
    size_t   size, want;

    want = ctx->heap_len + n;

    if (want <= ctx->heap_size) {
        return NGX_OK;
    }

    size = ngx_max(want, 2 * ctx->heap_size);
    size = ngx_min(size, (size_t) ctx->map->ring.buf_size);

    if (ctx->body_size >= 0) {
        size = ngx_min(size, ctx->attr.len + (size_t) ctx->body_size);
    }

    heap = ngx_alloc(size, ctx->request->connection->log);
    if (heap == NULL) {
        return NGX_ERROR;
    }

    if (ctx->heap_len) {
        ngx_memcpy(heap, ctx->heap, ctx->heap_len);
    }

    ngx_free(ctx->heap);
    ctx->heap = heap;
    ctx->heap_size = size;

    return NGX_OK;
}


/*
 * A buffer's worth is in (or the whole body): in the heap, a tx buffer is
 * taken for it; in the tx buffer, it is shipped, and once the body is all
 * in the writer is finished.
 */
static void
ngx_http_goblin_body_in(ngx_http_goblin_ctx_t *ctx)
{
    ngx_int_t                    rc;
    ngx_http_request_t          *r;
    ngx_http_goblin_loc_conf_t  *glcf;

    r = ctx->request;

    if (ctx->tx_buf < 0) {
        rc = ngx_http_goblin_tx_take(ctx);

        if (rc >= 0) {
            ctx->tx_buf = rc;
            ngx_http_goblin_open_writer(ctx);
            return;
        }

        if (rc == NGX_AGAIN) {
            glcf = ngx_http_get_module_loc_conf(r, ngx_http_goblin_module);
            ngx_add_timer(&ctx->put_timer, glcf->put_wait);
            return;
        }

        if (rc == NGX_BUSY) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "goblin: PUT of \"%V\" refused: every tx buffer "
                          "is taken and goblin_put_queue PUTs wait",
                          &ctx->key);
            ngx_http_goblin_count(puts_rejected, 1);
            ngx_http_goblin_finalize(ctx, ngx_http_goblin_retry_later(r));
            return;
        }

        ngx_http_goblin_fail(ctx, NGX_HTTP_BAD_GATEWAY);
        return;
    }

    if (ctx->body_size < 0 || ctx->body_copied < ctx->body_size) {
        ngx_http_goblin_wdata(ctx);
        return;
    }

    if (ctx->tx_len) {
        ngx_http_goblin_wdata(ctx);

    } else if (ctx->put_timer.timer_set) {
        ngx_del_timer(&ctx->put_timer);
    }

    ctx->finishing = 1;
    ngx_http_goblin_finish(ctx);
    ngx_http_goblin_wait(ctx);
    r->read_event_handler = ngx_http_block_reading;

    if (!ctx->tx_busy) {
        ngx_http_goblin_tx_put((uint32_t) ctx->tx_buf);
        ctx->tx_buf = -1;
    }
}


/* The PUT has its tx buffer: the body read so far goes in, the writer is
 * asked for. */
static void
ngx_http_goblin_open_writer(ngx_http_goblin_ctx_t *ctx)
{
    struct ring_sqe  sqe;

    if (ctx->heap_len) {
        ngx_memcpy(ring_tx_buf(&ctx->map->ring, (uint32_t) ctx->tx_buf),
                   ctx->heap, ctx->heap_len);
    }

    ctx->tx_len = ctx->heap_len;
    ngx_http_goblin_heap_free(ctx);

    ngx_memzero(&sqe, sizeof(struct ring_sqe));
    sqe.op = RING_OP_WOPEN;
    sqe.klen = (uint16_t) ctx->key.len;
    ngx_memcpy(sqe.key, ctx->key.data, ctx->key.len);
    sqe.len = ctx->body_size >= 0 ? (uint64_t) ctx->body_size
                                  : RING_SIZE_UNKNOWN;
    sqe.attr_len = (uint32_t) ctx->attr.len;

    ngx_http_goblin_submit(ctx, &sqe);
    ngx_http_goblin_wait(ctx);
}


/* The body is all in: WFINISH, under the preconditions' outcome. */
static void
ngx_http_goblin_finish(ngx_http_goblin_ctx_t *ctx)
{
    struct ring_sqe  sqe;

    ngx_memzero(&sqe, sizeof(struct ring_sqe));
    sqe.op = RING_OP_WFINISH;
    sqe.handle = ctx->handle;

    switch (ctx->wplan) {

    case NGX_HTTP_GOBLIN_WRITE_ABSENT:
        sqe.cond = RING_IF_ABSENT;
        break;

    case NGX_HTTP_GOBLIN_WRITE_PRESENT:
        sqe.cond = RING_IF_PRESENT;
        break;

    case NGX_HTTP_GOBLIN_WRITE_CAS:
        sqe.cond = RING_IF_CAS;
        sqe.off = ctx->wcas;
        break;

    default:
        sqe.cond = RING_IF_ANY;
        break;
    }

    ngx_http_goblin_submit(ctx, &sqe);
}


/* A tx buffer came free for a PUT that waited for one (ctx->tx_buf). */
static void
ngx_http_goblin_tx_ready(ngx_http_goblin_ctx_t *ctx)
{
    if (ctx->put_timer.timer_set) {
        ngx_del_timer(&ctx->put_timer);
    }

    ngx_http_goblin_open_writer(ctx);
}


static void
ngx_http_goblin_got_writer(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    ngx_http_request_t  *r = ctx->request;

    if (cqe->res != 0) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, -cqe->res,
                      "goblin: storaged refused %O bytes for \"%V\"",
                      ctx->body_size, &ctx->key);
        ngx_http_goblin_count(put_errors, 1);
        ngx_http_goblin_finalize(ctx,
                                 ngx_http_goblin_error_status(r, cqe->res));
        return;
    }

    ctx->writer = 1;
    ctx->handle = cqe->handle;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    ngx_http_goblin_pump_body(ctx);
}


static void
ngx_http_goblin_wdata(ngx_http_goblin_ctx_t *ctx)
{
    ngx_http_goblin_count(put_bytes, ctx->tx_len);

    if (ctx->put_timer.timer_set) {
        ngx_del_timer(&ctx->put_timer);
    }

    ngx_http_goblin_submit_handle(ctx, RING_OP_WDATA, (uint32_t) ctx->tx_buf,
                                  0, (off_t) ctx->tx_len);
    ctx->tx_busy = 1;
    ngx_http_goblin_wait(ctx);
}


/* The PUT's tx buffer is back: more of the body, or its job is done. */
static void
ngx_http_goblin_txdone(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
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


/*
 * goblin_put_wait passed with no tx buffer free: 503; or goblin_body_timeout
 * passed while the PUT held one and its client sent less than a buffer's
 * worth: 408, as nginx ends a body that times out (the connection closes).
 */
static void
ngx_http_goblin_put_timeout(ngx_event_t *ev)
{
    ngx_connection_t            *c;
    ngx_http_request_t          *r;
    ngx_http_goblin_ctx_t       *ctx;
    ngx_http_goblin_loc_conf_t  *glcf;

    ctx = ev->data;
    r = ctx->request;
    c = r->connection;
    glcf = ngx_http_get_module_loc_conf(r, ngx_http_goblin_module);

    if (ctx->waiting_tx) {
        ngx_log_error(NGX_LOG_ERR, c->log, 0,
                      "goblin: PUT of \"%V\" refused: no tx buffer came "
                      "free in goblin_put_wait %M", &ctx->key,
                      glcf->put_wait);
        ngx_http_goblin_count(puts_rejected, 1);
        ngx_http_goblin_finalize(ctx, ngx_http_goblin_retry_later(r));

    } else {
        ngx_log_error(NGX_LOG_INFO, c->log, NGX_ETIMEDOUT,
                      "goblin: PUT of \"%V\" too slow: %O of %O bytes, "
                      "less than %uD more in goblin_body_timeout %M",
                      &ctx->key, ctx->body_copied, ctx->body_size,
                      ctx->map->ring.buf_size, glcf->body_timeout);
        ngx_http_goblin_count(body_timeouts, 1);
        c->timedout = 1;
        ngx_http_goblin_finalize(ctx, NGX_HTTP_REQUEST_TIME_OUT);
    }

    ngx_http_run_posted_requests(c);
}


static void
ngx_http_goblin_stored(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    ngx_http_request_t      *r;

    r = ctx->request;
    ctx->writer = 0;

    if ((cqe->res == -EEXIST || cqe->res == -ENOENT)
        && ctx->wplan != NGX_HTTP_GOBLIN_WRITE_ANY)
    {
        /* its preconditions no longer held when it landed */
        ngx_http_goblin_count(precondition_failed, 1);
        ngx_http_goblin_finalize(ctx, NGX_HTTP_PRECONDITION_FAILED);
        return;
    }

    if (cqe->res != 0) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, -cqe->res,
                      "goblin: storing \"%V\" failed", &ctx->key);
        ngx_http_goblin_count(put_errors, 1);
        ngx_http_goblin_finalize(ctx,
                                 ngx_http_goblin_error_status(r, cqe->res));
        return;
    }

    if (cqe->len) {
        ngx_http_goblin_count(puts_replaced, 1);
        r->headers_out.status = NGX_HTTP_NO_CONTENT;

    } else {
        ngx_http_goblin_count(puts_created, 1);
        r->headers_out.status = NGX_HTTP_CREATED;
        r->headers_out.content_length_n = 0;
    }

    if (ngx_http_goblin_set_etag(ctx, cqe->meta.cas) != NGX_OK) {
        ngx_http_goblin_finalize(ctx, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    r->header_only = 1;

    ngx_http_goblin_finalize(ctx, ngx_http_send_header(r));
}
