
/*
 * ngx_http_goblin_module: cache mode, one fill per key and worker.
 *
 * A miss starts this worker's fill of the key, or waits on the one that
 * runs: a request of its own into goblin_origin (ngx_http_goblin_origin.c)
 * whose response is captured into a shared writer
 * (ngx_http_goblin_capture.c).  The fill holds no client: a slow one does
 * not pace it, one that goes away does not end it.  It lives while its
 * request, a waiter or a reader of this worker holds it.  Its waiters hear
 * when the object is findable with its headers (they read along), or that
 * it never will be (they go to the origin themselves).
 *
 * goblin_cache_abandon N (default 10): once no request of this worker
 * waits on or reads along a fill while less than N% of it arrived (any
 * part of one of unknown size), it is stopped and its writer aborted;
 * "off" lets every fill run to its end; so does a fill started for a Range
 * the origin answers (nobody reads it).  Readers in other workers are not
 * seen: an abandoned fill cuts them as an origin that failed would.
 *
 * goblin_cache_pass T (default 2m): a key whose response was not stored
 * for what the response said (its status, Set-Cookie, Cache-Control,
 * Vary: *, its size) is passed to the origin without a fill for T, by
 * this worker (Varnish's hit-for-miss): concurrent requests do not wait on
 * a fill whose answer is theirs only to be passed on (the one that started
 * it has the fill's own answer: ngx_http_goblin_handoff.c).  Marks live in
 * a table of NGX_HTTP_GOBLIN_PASS_SLOTS by a hash of the key; one that
 * takes another's slot only costs that key a fill.
 */


#include "ngx_http_goblin_cache.h"


static void ngx_http_goblin_fill_free(ngx_http_goblin_fill_t *fill);
static void ngx_http_goblin_fill_gone(void *data);
static void ngx_http_goblin_fill_announce(ngx_http_goblin_fill_t *fill);
static void ngx_http_goblin_fill_wake(ngx_http_goblin_fill_t *fill);
static void ngx_http_goblin_fill_fail(ngx_http_goblin_fill_t *fill,
    ngx_http_goblin_fill_state_e state);
static void ngx_http_goblin_fill_stop_handler(ngx_event_t *ev);
static void ngx_http_goblin_fill_lost(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_fill_timeout(ngx_event_t *ev);
static void ngx_http_goblin_fill_abort_handler(ngx_event_t *ev);


#define NGX_HTTP_GOBLIN_PASS_SLOTS  4096


typedef struct {
    uint32_t                       hash;
    time_t                         until;
} ngx_http_goblin_pass_t;


/* this worker's fills by key (few at a time: one per key being filled) */
static ngx_queue_t  ngx_http_goblin_fills;

/* this worker's goblin_cache_pass marks */
static ngx_http_goblin_pass_t  ngx_http_goblin_passes[NGX_HTTP_GOBLIN_PASS_SLOTS];


ngx_int_t
ngx_http_goblin_fill_init(ngx_conf_t *cf)
{
    ngx_queue_init(&ngx_http_goblin_fills);

    return ngx_http_goblin_capture_init(cf);
}




/* This worker's fill of <key>, while its request runs. */
ngx_http_goblin_fill_t *
ngx_http_goblin_fill_find(ngx_str_t *key)
{
    ngx_queue_t             *q;
    ngx_http_goblin_fill_t  *fill;

    for (q = ngx_queue_head(&ngx_http_goblin_fills);
         q != ngx_queue_sentinel(&ngx_http_goblin_fills);
         q = ngx_queue_next(q))
    {
        fill = ngx_queue_data(q, ngx_http_goblin_fill_t, queue);

        if (fill->key.len == key->len
            && ngx_memcmp(fill->key.data, key->data, key->len) == 0)
        {
            return fill;
        }
    }

    return NULL;
}


/* Whether <key> goes to the origin without a fill (goblin_cache_pass). */
ngx_uint_t
ngx_http_goblin_fill_passed(ngx_str_t *key)
{
    uint32_t                 hash;
    ngx_http_goblin_pass_t  *p;

    hash = ngx_crc32_long(key->data, key->len);
    p = &ngx_http_goblin_passes[hash % NGX_HTTP_GOBLIN_PASS_SLOTS];

    return p->hash == hash && p->until > ngx_time();
}


/* Starts the fill of <key> for client request <r>: its request goes into
 * goblin_origin at the next turn of the event loop (so <r> can wait on it
 * first).  NULL when it cannot (logged). */
ngx_http_goblin_fill_t *
ngx_http_goblin_fill_start(ngx_http_request_t *r, ngx_str_t *key)
{
    ngx_str_t                   *old;
    ngx_connection_t            *c;
    ngx_http_cleanup_t          *cln;
    ngx_http_request_t          *fr;
    ngx_http_goblin_ctx_t       *ctx;
    ngx_http_goblin_fill_t      *fill;
    ngx_http_core_loc_conf_t    *clcf;
    ngx_http_goblin_loc_conf_t  *glcf;

    glcf = ngx_http_get_module_loc_conf(r, ngx_http_goblin_module);

    clcf = ngx_http_goblin_origin_location(r);
    if (clcf == NULL) {
        return NULL;
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_goblin_module);
    old = (ctx && ctx->cache) ? &ctx->cache->stale_attr : NULL;

    fill = ngx_calloc(sizeof(ngx_http_goblin_fill_t) + key->len
                      + (old ? old->len : 0), r->connection->log);
    if (fill == NULL) {
        return NULL;
    }

    fill->key.data = (u_char *) (fill + 1);
    fill->key.len = key->len;
    ngx_memcpy(fill->key.data, key->data, key->len);

    if (old && old->len) {
        /* a stale object's: the fill asks the origin whether it changed */
        fill->old_attr.data = fill->key.data + key->len;
        fill->old_attr.len = old->len;
        ngx_memcpy(fill->old_attr.data, old->data, old->len);
        fill->old_cas = ctx->cache->stale_cas;
    }

    ngx_queue_init(&fill->waiters);
    fill->length = -1;
    fill->abandon = glcf->abandon;
    fill->valid = glcf->valid;
    fill->revalidate = glcf->revalidate;
    fill->pass = glcf->pass;
    fill->max_object = glcf->max_object;
    fill->authorized = r->headers_in.authorization != NULL;
    fill->no_store = ctx && ctx->cache && ctx->cache->req.no_store;
    fill->refs = 1;     /* its request's */
    fill->fail = ngx_http_goblin_fill_fail;
    fill->announce = ngx_http_goblin_fill_announce;

    fill->abort.handler = ngx_http_goblin_fill_abort_handler;
    fill->abort.data = fill;
    fill->abort.log = ngx_cycle->log;
    fill->stop.handler = ngx_http_goblin_fill_stop_handler;
    fill->stop.data = fill;
    fill->stop.log = ngx_cycle->log;

    fr = ngx_http_goblin_origin_request(r, clcf);
    if (fr == NULL) {
        ngx_free(fill);
        return NULL;
    }

    if (fill->old_attr.len
        && ngx_http_goblin_validate_request(r, fr, &fill->old_attr) != NGX_OK)
    {
        goto failed;
    }

    ctx = ngx_http_goblin_create_ctx(fr, ngx_http_goblin_capture_completions);
    if (ctx == NULL) {
        goto failed;
    }

    ctx->key = fill->key;
    ctx->fill = fill;
    ctx->lost = ngx_http_goblin_fill_lost;
    ctx->tx_ready = ngx_http_goblin_capture_open;
    ctx->timer.handler = ngx_http_goblin_fill_timeout;
    fill->ctx = ctx;

    /* runs before the context's cleanup aborts an unfinished writer */
    cln = ngx_http_cleanup_add(fr, 0);
    if (cln == NULL) {
        goto failed;
    }

    cln->handler = ngx_http_goblin_fill_gone;
    cln->data = fill;

    ngx_queue_insert_tail(&ngx_http_goblin_fills, &fill->queue);
    fill->linked = 1;

    ngx_post_event(fr->connection->write, &ngx_posted_events);

    return fill;

failed:

    /* the context's cleanup lets go of its slot */
    c = fr->connection;
    ngx_http_free_request(fr, 0);
    ngx_http_close_connection(c);
    ngx_free(fill);

    return NULL;
}


/* A waiter, reader or the fill's request lets go of <fill>. */
void
ngx_http_goblin_fill_unref(ngx_http_goblin_fill_t *fill)
{
    off_t  part;

    if (--fill->refs == 0) {
        ngx_http_goblin_fill_free(fill);
        return;
    }

    /* nobody of this worker waits or reads: abandoned while little came */

    if (fill->ctx == NULL || fill->readers || !ngx_queue_empty(&fill->waiters)
        || fill->abandon == 0 || fill->detached
        || fill->state > NGX_HTTP_GOBLIN_FILL_OPEN || fill->abort.posted)
    {
        return;
    }

    if (fill->length > 0) {
        part = fill->received * 100 / fill->length;

        if (part >= (off_t) fill->abandon) {
            return;
        }
    }

    ngx_post_event(&fill->abort, &ngx_posted_events);
}


static void
ngx_http_goblin_fill_free(ngx_http_goblin_fill_t *fill)
{
    if (fill->abort.posted) {
        ngx_delete_posted_event(&fill->abort);
    }

    if (fill->stop.posted) {
        ngx_delete_posted_event(&fill->stop);
    }

    if (fill->linked) {
        ngx_queue_remove(&fill->queue);
    }

    ngx_free(fill);
}




/* The fill's request is freed (its end, or nginx ended it). */
static void
ngx_http_goblin_fill_gone(void *data)
{
    ngx_http_goblin_fill_t *fill = data;

    ngx_http_goblin_ctx_t  *ctx;

    ctx = fill->ctx;

    if (ctx == NULL) {
        return;
    }

    fill->ctx = NULL;
    fill->held = NULL;

    if (fill->linked) {
        ngx_queue_remove(&fill->queue);
        fill->linked = 0;
    }

    if (fill->state == NGX_HTTP_GOBLIN_FILL_OPEN && ctx->finishing) {
        fill->state = NGX_HTTP_GOBLIN_FILL_STORED;

    } else if (fill->state <= NGX_HTTP_GOBLIN_FILL_OPEN) {
        fill->state = NGX_HTTP_GOBLIN_FILL_FAILED;
    }

    fill->refs++;
    ngx_http_goblin_fill_wake(fill);
    fill->refs--;

    ngx_http_goblin_fill_unref(fill);
}


/* The fill's object is findable with its headers: the waiters read
 * along. */
static void
ngx_http_goblin_fill_announce(ngx_http_goblin_fill_t *fill)
{
    fill->refs++;
    ngx_http_goblin_fill_wake(fill);
    ngx_http_goblin_fill_unref(fill);
}


/* Every waiter hears of the fill's state. */
static void
ngx_http_goblin_fill_wake(ngx_http_goblin_fill_t *fill)
{
    ngx_queue_t              *q;
    ngx_connection_t         *c;
    ngx_http_goblin_cache_t  *cache;

    while (!ngx_queue_empty(&fill->waiters)) {
        q = ngx_queue_head(&fill->waiters);
        cache = ngx_queue_data(q, ngx_http_goblin_cache_t, wait);
        c = cache->ctx->request->connection;

        cache->wake(cache);

        ngx_http_run_posted_requests(c);
    }
}




/* The fill will not store the object: the writer goes, the waiters hear
 * <state>, the origin is read no further. */
static void
ngx_http_goblin_fill_fail(ngx_http_goblin_fill_t *fill,
    ngx_http_goblin_fill_state_e state)
{
    uint32_t                 hash;
    ngx_http_goblin_ctx_t   *ctx;
    ngx_http_goblin_pass_t  *p;

    fill->state = state;

    if ((state == NGX_HTTP_GOBLIN_FILL_PASS
         || state == NGX_HTTP_GOBLIN_FILL_HANDOFF)
        && fill->uncacheable && fill->pass)
    {
        hash = ngx_crc32_long(fill->key.data, fill->key.len);
        p = &ngx_http_goblin_passes[hash % NGX_HTTP_GOBLIN_PASS_SLOTS];
        p->hash = hash;
        p->until = ngx_time() + fill->pass;
    }

    ctx = fill->ctx;

    if (ctx) {
        if (ctx->writer && !ctx->finishing) {
            ngx_http_goblin_submit_handle(ctx, RING_OP_WABORT, 0, 0, 0);
            ctx->writer = 0;
        }

        if (ctx->tx_buf >= 0 && !ctx->tx_busy) {
            ngx_http_goblin_tx_put((uint32_t) ctx->tx_buf);
            ctx->tx_buf = -1;
        }

        fill->held = NULL;
        ctx->request->buffered = 0;
    }

    fill->refs++;
    ngx_http_goblin_fill_wake(fill);

    ctx = fill->ctx;

    if (ctx && state != NGX_HTTP_GOBLIN_FILL_HANDOFF
        && !ctx->request->header_only && !fill->stop.posted)
    {
        /* the origin's answer is not wanted any more */
        ngx_post_event(&fill->stop, &ngx_posted_events);
    }

    ngx_http_goblin_fill_unref(fill);
}


/* Ends the fill's request (posted: not from inside its own filters). */
static void
ngx_http_goblin_fill_stop_handler(ngx_event_t *ev)
{
    ngx_http_goblin_fill_t *fill = ev->data;

    ngx_connection_t     *c;
    ngx_http_request_t   *r;
    ngx_http_upstream_t  *u;

    if (fill->ctx == NULL) {
        return;
    }

    r = fill->ctx->request;
    c = r->connection;

    /*
     * The upstream holds the request's only reference: its cleanup, run
     * by the termination below, would free the request while the other
     * cleanups still follow.  End the upstream first, lending it the
     * reference it drops, as ngx_http_upstream_create() does.
     */

    u = r->upstream;

    if (u && u->cleanup) {
        r->main->count++;
        (*u->cleanup)(r);
    }

    ngx_http_finalize_request(r, NGX_ERROR);
    ngx_http_run_posted_requests(c);
}


/* storaged went away: the writer with it. */
static void
ngx_http_goblin_fill_lost(ngx_http_goblin_ctx_t *ctx)
{
    ngx_log_error(NGX_LOG_ERR, ctx->request->connection->log, 0,
                  "goblin: storaged lost while filling \"%V\"", &ctx->key);

    ctx->writer = 0;
    ctx->tx_buf = -1;
    ctx->tx_busy = 0;

    ngx_http_goblin_fill_fail(ctx->fill, NGX_HTTP_GOBLIN_FILL_FAILED);
}


static void
ngx_http_goblin_fill_timeout(ngx_event_t *ev)
{
    ngx_http_goblin_ctx_t  *ctx = ev->data;

    ngx_log_error(NGX_LOG_ERR, ctx->request->connection->log, NGX_ETIMEDOUT,
                  "goblin: storaged did not answer the fill of \"%V\" in "
                  "time", &ctx->key);

    ngx_http_goblin_count(timeouts, 1);

    ngx_http_goblin_fill_fail(ctx->fill, NGX_HTTP_GOBLIN_FILL_FAILED);
}


/* goblin_cache_abandon: nobody of this worker reads, little came. */
static void
ngx_http_goblin_fill_abort_handler(ngx_event_t *ev)
{
    ngx_http_goblin_fill_t *fill = ev->data;

    if (fill->ctx == NULL || fill->readers
        || !ngx_queue_empty(&fill->waiters))
    {
        return;
    }

    ngx_log_error(NGX_LOG_INFO, fill->ctx->request->connection->log, 0,
                  "goblin: the fill of \"%V\" is abandoned at %O of %O "
                  "bytes: nobody reads it (goblin_cache_abandon %ui%%)",
                  &fill->key, fill->received, fill->length, fill->abandon);

    ngx_http_goblin_fill_fail(fill, NGX_HTTP_GOBLIN_FILL_FAILED);
}
