
/*
 * ngx_http_goblin_module: conditional writes and DELETE.
 *
 * A PUT or DELETE with If-Match, If-None-Match or If-Unmodified-Since
 * (RFC 9110 13.1) takes effect only if they hold, atomically: what they
 * say is settled by the daemon when the write lands (WFINISH's sqe.cond,
 * DELETE's CAS in sqe.off), never by a look taken earlier.  If-None-Match:
 * * is create-only (RING_IF_ABSENT), If-Match: * needs an object
 * (RING_IF_PRESENT), If-Match with one ETag of this store is a CAS
 * (RING_IF_CAS); lists and If-Unmodified-Since look the object up first
 * and then write only if it is still that object (its CAS) or still none.
 * An ETag of another store identity never matches.  412 when they fail.
 *
 * DELETE: 204, 404 when there was nothing to delete, 412 when a condition
 * fails (or its object went away).
 */


#include "ngx_http_goblin_module.h"
#include "ngx_http_goblin_http.h"


static void ngx_http_goblin_wcond(ngx_http_goblin_ctx_t *ctx,
    ngx_http_goblin_wcond_t *c);
static void ngx_http_goblin_delete_checked(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_deleted(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);


/* The completions of a DELETE: its preconditions' LOOKUP, the DELETE. */
static const ngx_http_goblin_completion_t
    ngx_http_goblin_delete_completions[] = {
    { RING_OP_LOOKUP, ngx_http_goblin_precondition_found },
    { RING_OP_DELETE, ngx_http_goblin_deleted },
    { 0, NULL }
};


/* ---- preconditions ---- */


/* The request's preconditions in the store <ctx> is attached to. */
static void
ngx_http_goblin_wcond(ngx_http_goblin_ctx_t *ctx, ngx_http_goblin_wcond_t *c)
{
    ngx_table_elt_t     *h;
    ngx_http_request_t  *r;

    r = ctx->request;

    ngx_memzero(c, sizeof(ngx_http_goblin_wcond_t));
    c->if_unmodified_since = -1;
    c->store_id = ctx->map->store_id;

    h = r->headers_in.if_match;
    if (h) {
        c->if_match = h->value.data;
        c->if_match_len = h->value.len;
    }

    h = r->headers_in.if_none_match;
    if (h) {
        c->if_none_match = h->value.data;
        c->if_none_match_len = h->value.len;
    }

    h = r->headers_in.if_unmodified_since;
    if (h) {
        /* not a date: ignored (RFC 9110 13.1.4) */
        c->if_unmodified_since = ngx_parse_http_time(h->value.data,
                                                     h->value.len);
    }
}


/*
 * Settles how the write of <ctx> goes on (ctx->wplan, ctx->wcas: one of
 * NGX_HTTP_GOBLIN_WRITE_ANY, _ABSENT, _PRESENT, _CAS, _FAILED).  NGX_OK:
 * settled now; NGX_AGAIN: the object is being looked up, <checked> is
 * called once it is (its kind's completions have a LOOKUP row with
 * ngx_http_goblin_precondition_found).  <absent_ok>: whether "only if
 * none" can be left to the daemon (PUT: RING_IF_ABSENT; DELETE cannot).
 */
ngx_int_t
ngx_http_goblin_precondition(ngx_http_goblin_ctx_t *ctx,
    ngx_http_goblin_handler_pt checked, ngx_uint_t absent_ok)
{
    uint64_t                 cas;
    ngx_int_t                plan;
    ngx_http_goblin_wcond_t  c;

    ngx_http_goblin_wcond(ctx, &c);

    cas = 0;
    plan = ngx_http_goblin_write_plan(&c, &cas);

    if (plan == NGX_HTTP_GOBLIN_WRITE_ABSENT && !absent_ok) {
        plan = NGX_HTTP_GOBLIN_WRITE_LOOKUP;
    }

    if (plan != NGX_HTTP_GOBLIN_WRITE_LOOKUP) {
        ctx->wplan = plan;
        ctx->wcas = cas;
        return NGX_OK;
    }

    ctx->checked = checked;

    ngx_http_goblin_submit_key(ctx, RING_OP_LOOKUP, 0);
    ngx_http_goblin_wait(ctx);

    return NGX_AGAIN;
}


/* The preconditions' LOOKUP: the object (or none) decides, its pin and
 * attributes go back at once. */
void
ngx_http_goblin_precondition_found(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe)
{
    ngx_int_t                present;
    ngx_http_request_t      *r;
    ngx_http_goblin_wcond_t  c;

    r = ctx->request;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    if (cqe->res != 0 && cqe->res != -ENOENT) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, -cqe->res,
                      "goblin: lookup of \"%V\" for its preconditions failed",
                      &ctx->key);
        ngx_http_goblin_finalize(ctx,
                                 ngx_http_goblin_error_status(r, cqe->res));
        return;
    }

    present = (cqe->res == 0);

    if (present) {
        ctx->handle = cqe->handle;
        ngx_http_goblin_submit_handle(ctx, RING_OP_RELEASE, 0, 0, 0);

        if (cqe->buf != RING_NO_BUF) {
            ngx_http_goblin_submit_handle(ctx, RING_OP_BUFREL, cqe->buf, 0, 0);
        }
    }

    ngx_http_goblin_wcond(ctx, &c);

    ctx->wcas = present ? cqe->meta.cas : 0;
    ctx->wplan = ngx_http_goblin_write_check(&c, present, cqe->meta.cas,
                                             cqe->meta.mtime);

    ctx->checked(ctx);
}


/* ---- DELETE ---- */


/* The content handler's DELETE, with the <key> it was checked for. */
ngx_int_t
ngx_http_goblin_delete_handler(ngx_http_request_t *r, ngx_str_t *key)
{
    ngx_int_t               rc;
    ngx_http_goblin_ctx_t  *ctx;

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    ctx = ngx_http_goblin_create_ctx(r, ngx_http_goblin_delete_completions);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->key = *key;

    if (!r->discard_body) {
        r->read_event_handler = ngx_http_test_reading;
    }

    rc = ngx_http_goblin_precondition(ctx, ngx_http_goblin_delete_checked, 0);

    if (rc == NGX_OK) {
        if (ctx->wplan == NGX_HTTP_GOBLIN_WRITE_FAILED) {
            ngx_http_goblin_count(precondition_failed, 1);
            return NGX_HTTP_PRECONDITION_FAILED;
        }

        ngx_http_goblin_delete_checked(ctx);
    }

    r->main->count++;

    return NGX_DONE;
}


/* Its preconditions are settled: the DELETE goes, by CAS when they
 * named (or found) the object. */
static void
ngx_http_goblin_delete_checked(ngx_http_goblin_ctx_t *ctx)
{
    struct ring_sqe          sqe;

    switch (ctx->wplan) {

    case NGX_HTTP_GOBLIN_WRITE_FAILED:
        ngx_http_goblin_count(precondition_failed, 1);
        ngx_http_goblin_finalize(ctx, NGX_HTTP_PRECONDITION_FAILED);
        return;

    case NGX_HTTP_GOBLIN_WRITE_ABSENT:
        /* nothing there, as the preconditions wanted: nothing to delete */
        ngx_http_goblin_count(delete_misses, 1);
        ngx_http_goblin_finalize(ctx, NGX_HTTP_NOT_FOUND);
        return;
    }

    ngx_memzero(&sqe, sizeof(struct ring_sqe));
    sqe.op = RING_OP_DELETE;
    sqe.klen = (uint16_t) ctx->key.len;
    ngx_memcpy(sqe.key, ctx->key.data, ctx->key.len);

    if (ctx->wplan == NGX_HTTP_GOBLIN_WRITE_CAS) {
        /* a CAS is never 0: 0 is "any" */
        sqe.off = ctx->wcas;
    }

    ngx_http_goblin_submit(ctx, &sqe);
    ngx_http_goblin_wait(ctx);
}


static void
ngx_http_goblin_deleted(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    ngx_http_request_t      *r = ctx->request;

    if (cqe->res == -EEXIST
        || (cqe->res == -ENOENT && ctx->wplan != NGX_HTTP_GOBLIN_WRITE_ANY))
    {
        /* another object now, or none where the preconditions needed one */
        ngx_http_goblin_count(precondition_failed, 1);
        ngx_http_goblin_finalize(ctx, NGX_HTTP_PRECONDITION_FAILED);
        return;
    }

    if (cqe->res != 0) {
        if (cqe->res == -ENOENT) {
            ngx_http_goblin_count(delete_misses, 1);
        }

        ngx_http_goblin_finalize(ctx,
                                 ngx_http_goblin_error_status(r, cqe->res));
        return;
    }

    ngx_http_goblin_count(deletes, 1);

    r->headers_out.status = NGX_HTTP_NO_CONTENT;
    r->header_only = 1;

    ngx_http_goblin_finalize(ctx, ngx_http_send_header(r));
}
