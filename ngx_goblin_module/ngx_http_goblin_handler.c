
/*
 * ngx_http_goblin_module: GET and HEAD.
 *
 * GET/HEAD: LOOKUP pins the object; the response goes out as one buffer
 * pointing into the mapped head region (no copy) followed by rx buffers
 * the daemon fills with the disk part, sent in order and given back
 * (BUFREL) as soon as the socket has taken them.  The disk READ is
 * submitted before the head is sent.  A range skips what it does not
 * need, head included.  The pin and any buffer still held go back when
 * the request is freed (ngx_http_goblin_request.c).
 */


#include "ngx_http_goblin_module.h"
#include "ngx_http_goblin_http.h"


static ngx_int_t ngx_http_goblin_send_header(ngx_http_goblin_ctx_t *ctx);
static ngx_int_t ngx_http_goblin_header_out(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_read_disk(ngx_http_goblin_ctx_t *ctx, off_t disk);
static ngx_int_t ngx_http_goblin_queue_head(ngx_http_goblin_ctx_t *ctx);
static ngx_int_t ngx_http_goblin_set_headers(ngx_http_goblin_ctx_t *ctx);
static ngx_int_t ngx_http_goblin_set_content_type(ngx_http_goblin_ctx_t *ctx);
static ngx_int_t ngx_http_goblin_conditional_range(ngx_http_goblin_ctx_t *ctx);
static ngx_chain_t *ngx_http_goblin_chain(ngx_http_goblin_ctx_t *ctx);
static ngx_int_t ngx_http_goblin_copy_aside(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_write_handler(ngx_http_request_t *r);


/* The completions of a GET or HEAD: its LOOKUP, DATA, the READ's end. */
const ngx_http_goblin_completion_t  ngx_http_goblin_get_completions[] = {
    { RING_OP_LOOKUP, ngx_http_goblin_got_object },
    { RING_OP_DATA, ngx_http_goblin_got_data },
    { RING_OP_READ, ngx_http_goblin_read_done },
    { 0, NULL }
};


/* ---- GET and HEAD: the header ---- */


/* LOOKUP found the object (or not): the header, the disk READ, the head. */
void
ngx_http_goblin_got_object(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    off_t                    disk, head_end;
    ngx_int_t                rc;
    struct ring_meta        *m;
    ngx_http_request_t      *r;

    r = ctx->request;

    if (cqe->res != 0) {
        if (cqe->res == -ENOENT) {
            ngx_http_goblin_count(misses, 1);

        } else {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, -cqe->res,
                          "goblin: lookup of \"%V\" failed", &ctx->key);
        }

        ngx_http_goblin_finalize(ctx,
                                 ngx_http_goblin_error_status(r, cqe->res));
        return;
    }

    ctx->pinned = 1;
    ctx->handle = cqe->handle;
    ctx->meta = cqe->meta;
    m = &ctx->meta;

    ngx_http_goblin_count(hits, 1);

    /* the stored headers, replayed before ours */
    rc = ngx_http_goblin_attr_found(ctx, cqe);

    if (rc != NGX_OK) {
        ngx_http_goblin_fail(ctx, rc == NGX_DECLINED
                                  ? NGX_HTTP_BAD_GATEWAY
                                  : NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

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
        ngx_http_goblin_read_disk(ctx, disk);

    } else if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    if (ctx->start < head_end
        && ngx_http_goblin_queue_head(ctx) != NGX_OK)
    {
        ngx_http_goblin_fail(ctx, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    ngx_http_goblin_send(ctx);
}


/* Sends the response header; NGX_OK to go on with the body, else the
 * request is finalized (ctx may be gone). */
static ngx_int_t
ngx_http_goblin_send_header(ngx_http_goblin_ctx_t *ctx)
{
    ngx_int_t  rc;

    rc = ngx_http_goblin_header_out(ctx);

    if (rc != NGX_OK) {
        ngx_http_goblin_finalize(ctx, rc == NGX_DONE ? NGX_OK : rc);
        return NGX_DONE;
    }

    return NGX_OK;
}


/* Sends the response header; NGX_OK to go on with the body, else the code
 * to finalize the request with, NGX_DONE standing for NGX_OK (the caller
 * finalizes, when it is done with ctx). */
static ngx_int_t
ngx_http_goblin_header_out(ngx_http_goblin_ctx_t *ctx)
{
    ngx_int_t            rc;
    ngx_http_request_t  *r;

    r = ctx->request;
    ctx->header_deferred = 0;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc == NGX_OK ? NGX_DONE : rc;
    }

    ctx->header_sent = 1;

    return NGX_OK;
}


/* Asks for bytes [<disk>, end) from disk, staged a grant at a time. */
static void
ngx_http_goblin_read_disk(ngx_http_goblin_ctx_t *ctx, off_t disk)
{
    struct ring_sqe  sqe;

    ngx_memzero(&sqe, sizeof(struct ring_sqe));
    sqe.op = RING_OP_READ;
    sqe.handle = ctx->handle;
    sqe.off = (uint64_t) disk;
    sqe.len = (uint64_t) (ctx->end - disk);
    sqe.grant = (uint64_t) NGX_HTTP_GOBLIN_GRANT_BUFS
                 * ctx->map->ring.buf_size;
    ngx_http_goblin_submit(ctx, &sqe);

    ctx->next = disk;
    ctx->granted = disk + (off_t) sqe.grant;
    ngx_http_goblin_wait(ctx);
}


/* Queues the part of the head region the response sends, uncopied. */
static ngx_int_t
ngx_http_goblin_queue_head(ngx_http_goblin_ctx_t *ctx)
{
    off_t                head_end;
    u_char              *head;
    ngx_buf_t           *b;
    ngx_chain_t         *cl;
    ngx_http_request_t  *r;

    r = ctx->request;
    head = ctx->map->region + ctx->meta.head_off;
    head_end = (off_t) ctx->meta.head_len;

    cl = ngx_http_goblin_chain(ctx);
    if (cl == NULL) {
        return NGX_ERROR;
    }

    b = cl->buf;
    b->memory = 1;
    b->num = NGX_HTTP_GOBLIN_HEAD_BUF;
    b->start = head + ctx->start;
    b->pos = b->start;
    b->last = head + ngx_min(ctx->end, head_end);
    b->end = b->last;

    if (ctx->end <= head_end) {
        b->last_buf = (r == r->main) ? 1 : 0;
        b->last_in_chain = 1;
        ctx->last_passed = 1;
    }

    ngx_http_goblin_count(head_bytes, b->last - b->pos);

    ctx->out = cl;

    return NGX_OK;
}


/*
 * Status, validators, type and range of a found object.  Returns NGX_OK
 * (send ctx->start..end), NGX_DONE (a 304 or 416 without body) or
 * NGX_ERROR.
 */
static ngx_int_t
ngx_http_goblin_set_headers(ngx_http_goblin_ctx_t *ctx)
{
    ngx_str_t            value;
    ngx_table_elt_t     *h;
    ngx_http_request_t  *r;

    r = ctx->request;

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = (off_t) ctx->meta.size;

    /* a stored Last-Modified or ETag (an origin's) stands */

    if (r->headers_out.last_modified == NULL) {
        r->headers_out.last_modified_time = (time_t) ctx->meta.mtime;
    }

    if (r->headers_out.etag == NULL
        && ngx_http_goblin_set_etag(ctx, ctx->meta.cas) != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_str_set(&value, "bytes");
    h = ngx_http_goblin_add_header(r, "Accept-Ranges", &value);
    if (h == NULL) {
        return NGX_ERROR;
    }

    r->headers_out.accept_ranges = h;

    if (ngx_http_goblin_set_content_type(ctx) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_goblin_conditional_range(ctx);
}


/* Content-Type from the key's extension, by nginx's own types {}. */
static ngx_int_t
ngx_http_goblin_set_content_type(ngx_http_goblin_ctx_t *ctx)
{
    size_t               len;
    ngx_int_t            rc;
    ngx_str_t            exten;
    const u_char        *data;
    ngx_http_request_t  *r;

    r = ctx->request;

    if (r->headers_out.content_type.len) {
        /* stored with the object */
        return NGX_OK;
    }

    ngx_http_goblin_key_exten(ctx->key.data, ctx->key.len, &data, &len);

    exten = r->exten;
    r->exten.data = (u_char *) data;
    r->exten.len = len;

    rc = ngx_http_set_content_type(r);
    r->exten = exten;

    return rc == NGX_OK ? NGX_OK : NGX_ERROR;
}


/*
 * If-None-Match, If-Range and Range (ngx_http_goblin_conditional()): sets
 * ctx->start..end, and the status and Content-Range of a 304, 206 or 416.
 * Returns NGX_OK, NGX_DONE (no body) or NGX_ERROR.
 */
static ngx_int_t
ngx_http_goblin_conditional_range(ngx_http_goblin_ctx_t *ctx)
{
    int                      rc;
    int64_t                  start = 0, end = 0;
    ngx_str_t               *v;
    ngx_table_elt_t         *h;
    ngx_http_request_t      *r;
    ngx_http_goblin_cond_t   cond;

    r = ctx->request;

    ngx_memzero(&cond, sizeof(ngx_http_goblin_cond_t));
    cond.etag = r->headers_out.etag->value.data;
    cond.etag_len = r->headers_out.etag->value.len;
    cond.mtime = r->headers_out.last_modified_time;
    cond.size = (off_t) ctx->meta.size;
    cond.if_range_time = -1;

    if (r->headers_in.if_none_match) {
        v = &r->headers_in.if_none_match->value;
        cond.if_none_match = v->data;
        cond.if_none_match_len = v->len;
    }

    if (r->headers_in.range && r == r->main) {
        v = &r->headers_in.range->value;
        cond.range = v->data;
        cond.range_len = v->len;
    }

    if (r->headers_in.if_range) {
        v = &r->headers_in.if_range->value;
        cond.if_range = v->data;
        cond.if_range_len = v->len;
        cond.if_range_time = ngx_parse_http_time(v->data, v->len);
    }

    ctx->start = 0;
    ctx->end = (off_t) ctx->meta.size;

    rc = ngx_http_goblin_conditional(&cond, &start, &end);

    if (rc == NGX_HTTP_GOBLIN_NOT_MODIFIED) {
        ngx_http_goblin_count(not_modified, 1);
        r->headers_out.status = NGX_HTTP_NOT_MODIFIED;
        ngx_http_clear_content_length(r);
        return NGX_DONE;
    }

    if (rc == NGX_HTTP_GOBLIN_RANGE_WHOLE) {
        return NGX_OK;
    }

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Content-Range");

    h->value.data = ngx_pnalloc(r->pool, NGX_HTTP_GOBLIN_CONTENT_RANGE_LEN);
    if (h->value.data == NULL) {
        return NGX_ERROR;
    }

    r->headers_out.content_range = h;

    h->value.len = ngx_http_goblin_content_range(h->value.data, rc, start,
                                                 end, ctx->meta.size);

    if (rc == NGX_HTTP_GOBLIN_RANGE_UNSATISFIABLE) {
        ngx_http_goblin_count(unsatisfiable, 1);
        r->headers_out.status = NGX_HTTP_RANGE_NOT_SATISFIABLE;
        r->headers_out.content_length_n = 0;
        return NGX_DONE;
    }

    ngx_http_goblin_count(ranges, 1);
    ctx->start = (off_t) start;
    ctx->end = (off_t) end;
    r->headers_out.status = NGX_HTTP_PARTIAL_CONTENT;
    r->headers_out.content_length_n = ctx->end - ctx->start;

    return NGX_OK;
}


/* ---- GET and HEAD: the body ---- */


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


/*
 * Staged disk bytes: the next piece of the body, in order.  A buffer the
 * disk read into in place starts where its chunk does, so it may hold
 * bytes before the next one the body needs (<off> < ctx->next): they are
 * skipped.
 */
void
ngx_http_goblin_got_data(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    off_t                    skip;
    ngx_int_t                rc;
    ngx_buf_t               *b;
    ngx_chain_t             *cl, **ll;
    ngx_http_request_t      *r;
    ngx_http_goblin_link_t  *link = ngx_http_goblin_link;

    r = ctx->request;

    skip = ctx->next - (off_t) cqe->off;

    if (skip < 0 || (uint64_t) skip >= cqe->len
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

    if (ctx->header_deferred) {
        rc = ngx_http_goblin_header_out(ctx);

        if (rc != NGX_OK) {
            /* the buffer goes back before finalizing may free ctx */
            ngx_http_goblin_submit_handle(ctx, RING_OP_BUFREL, cqe->buf, 0, 0);
            ngx_http_goblin_finalize(ctx, rc == NGX_DONE ? NGX_OK : rc);
            return;
        }
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
    b->pos = b->start + skip;
    b->last = b->start + cqe->len;
    b->end = b->last;

    ctx->next += (off_t) cqe->len - skip;
    ngx_http_goblin_count(staged_bytes, cqe->len - skip);

    if (ctx->next == ctx->end) {
        b->last_buf = (r == r->main) ? 1 : 0;
        b->last_in_chain = 1;
        ctx->last_passed = 1;
    }

    for (ll = &ctx->out; *ll; ll = &(*ll)->next) { /* void */ }
    *ll = cl;

    ngx_http_goblin_send(ctx);
}


void
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

        ngx_http_goblin_count(spilled_bytes, size);
    }

    return NGX_OK;
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
 * the READ's grant.
 */
void
ngx_http_goblin_send(ngx_http_goblin_ctx_t *ctx)
{
    off_t                      pending, accepted, grant, more;
    ngx_int_t                  rc;
    ngx_chain_t               *cl, **ll;
    ngx_event_t               *wev;
    ngx_http_request_t        *r;
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
        ngx_http_goblin_count(cut_responses, 1);
        ngx_http_goblin_finalize(ctx, NGX_ERROR);
        return;
    }

    if (ctx->last_passed) {
        /* nginx's own writer flushes the rest; cleanup gives back */
        ngx_http_goblin_finalize(ctx, rc);
        return;
    }

    /* let the READ stage up to a grant past what the client took */

    if (ctx->granted < ctx->end) {
        grant = (off_t) NGX_HTTP_GOBLIN_GRANT_BUFS
                 * ctx->map->ring.buf_size;
        accepted = ctx->next - pending;

        if (ctx->granted - accepted <= grant / 2) {
            more = ngx_min(ctx->end, accepted + grant) - ctx->granted;
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
        ngx_http_goblin_count(cut_responses, 1);
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
