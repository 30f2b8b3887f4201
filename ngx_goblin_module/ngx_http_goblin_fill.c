
/*
 * ngx_http_goblin_module: cache mode, the fill.
 *
 * A miss starts one fill per key in this worker: a request of its own,
 * on a connection of its own (a socketpair nobody writes to, so nginx's
 * event machinery sees an idle client that always takes what it is
 * given), sent into goblin_origin, where the user's proxy_pass does the
 * fetch with nginx's own upstream machinery.  It is no subrequest of the
 * first client's: nginx's event pipe writes to a subrequest's output only
 * while its client's socket is writable, and a client request that is
 * terminated takes its subrequests with it, so a slow first client would
 * pace the fill and one that goes away would end it.
 *
 * This module's header and body filters take the fill request's response
 * before any other filter: a 200 that may be stored becomes the object's
 * attributes (ngx_http_goblin_attr.c) and a shared writer (WOPEN with
 * RING_WOPEN_SHARED, the size the origin said or RING_SIZE_UNKNOWN); the
 * body goes into the fill's tx buffer and out in WDATAs, each as soon as
 * the one before came back.  While the tx buffer is away the body waits
 * in the buffers nginx read it into (proxy_buffers, or its temp file), so
 * the origin is read no faster than the store takes it, in bounded
 * memory.  The body's end is WFINISH; an origin that fails, or a body
 * shorter than its Content-Length, aborts the writer, and every reader is
 * cut.  A response the cache does not store is read no further.
 *
 * The fill holds no client: it ends on its own.  goblin_cache_abandon N
 * stops it once no request of this worker waits on or reads along it
 * while less than N% of it arrived (any part of one of unknown size).
 */


#include "ngx_http_goblin_cache.h"

#include <sys/socket.h>


/* r->buffered: the fill holds body bytes the store has not taken */
#define NGX_HTTP_GOBLIN_FILL_BUFFERED  0x08


static void ngx_http_goblin_fill_free(ngx_http_goblin_fill_t *fill);
static ngx_http_request_t *ngx_http_goblin_fill_request(
    ngx_http_request_t *r, ngx_http_core_loc_conf_t *clcf);
static ngx_int_t ngx_http_goblin_fill_headers_in(ngx_http_request_t *fr,
    ngx_http_request_t *r);
static ngx_int_t ngx_http_goblin_fill_copy(ngx_pool_t *pool, ngx_str_t *dst,
    ngx_str_t *src);
static void ngx_http_goblin_fill_close_peer(void *data);
static void ngx_http_goblin_fill_event(ngx_event_t *ev);
static void ngx_http_goblin_fill_gone(void *data);
static void ngx_http_goblin_fill_wake(ngx_http_goblin_fill_t *fill);
static ngx_int_t ngx_http_goblin_fill_cacheable(ngx_http_request_t *r,
    ngx_http_goblin_fill_t *fill);
static void ngx_http_goblin_fill_open(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_fill_opened(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static void ngx_http_goblin_fill_txdone(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static void ngx_http_goblin_fill_stored(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static ngx_int_t ngx_http_goblin_fill_pump(ngx_http_goblin_fill_t *fill);
static void ngx_http_goblin_fill_nudge(ngx_http_goblin_fill_t *fill);
static void ngx_http_goblin_fill_fail(ngx_http_goblin_fill_t *fill,
    ngx_http_goblin_fill_state_e state);
static void ngx_http_goblin_fill_lost(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_fill_timeout(ngx_event_t *ev);
static void ngx_http_goblin_fill_abort_handler(ngx_event_t *ev);
static void ngx_http_goblin_fill_stop_handler(ngx_event_t *ev);
static ngx_int_t ngx_http_goblin_fill_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_goblin_fill_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);


/* The completions of a fill's writer. */
static const ngx_http_goblin_completion_t  ngx_http_goblin_fill_completions[]
    = {
    { RING_OP_WOPEN, ngx_http_goblin_fill_opened },
    { RING_OP_TXDONE, ngx_http_goblin_fill_txdone },
    { RING_OP_WFINISH, ngx_http_goblin_fill_stored },
    { 0, NULL }
};


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;

/* this worker's fills by key (few at a time: one per key being filled) */
static ngx_queue_t  ngx_http_goblin_fills;


ngx_int_t
ngx_http_goblin_fill_init(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_goblin_fill_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_goblin_fill_body_filter;

    ngx_queue_init(&ngx_http_goblin_fills);

    return NGX_OK;
}


/* The named location goblin_origin names in <r>'s server; NULL (logged)
 * when there is none. */
ngx_http_core_loc_conf_t *
ngx_http_goblin_origin(ngx_http_request_t *r)
{
    ngx_http_core_srv_conf_t     *cscf;
    ngx_http_core_loc_conf_t    **clcfp;
    ngx_http_goblin_loc_conf_t   *glcf;

    glcf = ngx_http_get_module_loc_conf(r, ngx_http_goblin_module);
    cscf = ngx_http_get_module_srv_conf(r, ngx_http_core_module);

    for (clcfp = cscf->named_locations; clcfp && *clcfp; clcfp++) {
        if ((*clcfp)->name.len == glcf->origin.len
            && ngx_strncmp((*clcfp)->name.data, glcf->origin.data,
                           glcf->origin.len) == 0)
        {
            return *clcfp;
        }
    }

    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                  "goblin: no location \"%V\" for goblin_origin",
                  &glcf->origin);

    return NULL;
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


/* Starts the fill of <key> for client request <r>: its request goes into
 * goblin_origin at the next turn of the event loop (so <r> can wait on it
 * first).  NULL when it cannot (logged). */
ngx_http_goblin_fill_t *
ngx_http_goblin_fill_start(ngx_http_request_t *r, ngx_str_t *key)
{
    ngx_connection_t            *c;
    ngx_http_cleanup_t          *cln;
    ngx_http_request_t          *fr;
    ngx_http_goblin_ctx_t       *ctx;
    ngx_http_goblin_fill_t      *fill;
    ngx_http_core_loc_conf_t    *clcf;
    ngx_http_goblin_loc_conf_t  *glcf;

    glcf = ngx_http_get_module_loc_conf(r, ngx_http_goblin_module);

    clcf = ngx_http_goblin_origin(r);
    if (clcf == NULL) {
        return NULL;
    }

    fill = ngx_calloc(sizeof(ngx_http_goblin_fill_t) + key->len,
                      r->connection->log);
    if (fill == NULL) {
        return NULL;
    }

    fill->key.data = (u_char *) (fill + 1);
    fill->key.len = key->len;
    ngx_memcpy(fill->key.data, key->data, key->len);

    ngx_queue_init(&fill->waiters);
    fill->length = -1;
    fill->abandon = glcf->abandon;
    fill->refs = 1;     /* its request's */

    fill->abort.handler = ngx_http_goblin_fill_abort_handler;
    fill->abort.data = fill;
    fill->abort.log = ngx_cycle->log;
    fill->stop.handler = ngx_http_goblin_fill_stop_handler;
    fill->stop.data = fill;
    fill->stop.log = ngx_cycle->log;

    fr = ngx_http_goblin_fill_request(r, clcf);
    if (fr == NULL) {
        ngx_free(fill);
        return NULL;
    }

    ctx = ngx_http_goblin_create_ctx(fr, ngx_http_goblin_fill_completions);
    if (ctx == NULL) {
        goto failed;
    }

    ctx->key = fill->key;
    ctx->fill = fill;
    ctx->lost = ngx_http_goblin_fill_lost;
    ctx->tx_ready = ngx_http_goblin_fill_open;
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
        || fill->abandon == 0 || fill->state > NGX_HTTP_GOBLIN_FILL_OPEN
        || fill->abort.posted)
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


/* ---- the fill's request ---- */


/*
 * A request of its own for the fill, as <r> would have gone to the origin
 * (its server, its headers but for range and conditional ones), routed
 * into named location <clcf>, with a connection of its own.
 */
static ngx_http_request_t *
ngx_http_goblin_fill_request(ngx_http_request_t *r,
    ngx_http_core_loc_conf_t *clcf)
{
    int                         sv[2];
    ngx_log_t                  *log;
    ngx_time_t                 *tp;
    ngx_pool_t                 *pool;
    ngx_connection_t           *c, *rc;
    ngx_pool_cleanup_t         *cln;
    ngx_http_request_t         *fr;
    ngx_http_log_ctx_t         *lctx;
    ngx_http_connection_t      *hc;
    ngx_http_core_main_conf_t  *cmcf;

    rc = r->connection;

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1) {
        ngx_log_error(NGX_LOG_ALERT, rc->log, ngx_socket_errno,
                      "socketpair() failed");
        return NULL;
    }

    if (ngx_nonblocking(sv[0]) == -1) {
        ngx_log_error(NGX_LOG_ALERT, rc->log, ngx_socket_errno,
                      ngx_nonblocking_n " failed");
        close(sv[0]);
        close(sv[1]);
        return NULL;
    }

    c = ngx_get_connection(sv[0], rc->log);
    if (c == NULL) {
        close(sv[0]);
        close(sv[1]);
        return NULL;
    }

    pool = ngx_create_pool(1024, rc->log);
    if (pool == NULL) {
        goto failed;
    }

    c->pool = pool;

    cln = ngx_pool_cleanup_add(pool, sizeof(int));
    if (cln == NULL) {
        goto failed;
    }

    *(int *) cln->data = sv[1];
    cln->handler = ngx_http_goblin_fill_close_peer;
    sv[1] = -1;

    log = ngx_palloc(pool, sizeof(ngx_log_t));
    lctx = ngx_pcalloc(pool, sizeof(ngx_http_log_ctx_t));
    hc = ngx_pcalloc(pool, sizeof(ngx_http_connection_t));
    c->sockaddr = ngx_palloc(pool, rc->socklen);
    c->addr_text.data = ngx_pnalloc(pool, rc->addr_text.len);

    if (log == NULL || lctx == NULL || hc == NULL || c->sockaddr == NULL
        || c->addr_text.data == NULL)
    {
        goto failed;
    }

    *log = *rc->log;
    log->data = lctx;
    log->action = "filling the cache";
    lctx->connection = c;

    c->number = ngx_atomic_fetch_add(ngx_connection_counter, 1);
    log->connection = c->number;

    c->log = log;
    c->read->log = log;
    c->write->log = log;
    c->read->handler = ngx_http_goblin_fill_event;
    c->write->handler = ngx_http_goblin_fill_event;
    c->write->ready = 1;

    ngx_memcpy(c->sockaddr, rc->sockaddr, rc->socklen);
    c->socklen = rc->socklen;
    c->addr_text.len = rc->addr_text.len;
    ngx_memcpy(c->addr_text.data, rc->addr_text.data, rc->addr_text.len);
    c->local_sockaddr = rc->local_sockaddr;
    c->local_socklen = rc->local_socklen;
    c->listening = rc->listening;
    c->type = SOCK_STREAM;
    c->recv = ngx_recv;
    c->send = ngx_send;
    c->recv_chain = ngx_recv_chain;
    c->send_chain = ngx_send_chain;
    c->start_time = ngx_current_msec;
    c->sndlowat = 1;

    hc->conf_ctx = r->http_connection->conf_ctx;
    c->data = hc;

    /* as ngx_http_alloc_request() makes one */

    fr = ngx_pcalloc(pool, sizeof(ngx_http_request_t));
    if (fr == NULL) {
        goto failed;
    }

    fr->pool = ngx_create_pool(4096, log);
    if (fr->pool == NULL) {
        goto failed;
    }

    fr->http_connection = hc;
    fr->signature = NGX_HTTP_MODULE;
    fr->connection = c;
    fr->main_conf = r->main_conf;
    fr->srv_conf = r->srv_conf;
    fr->loc_conf = r->loc_conf;
    fr->read_event_handler = ngx_http_block_reading;
    fr->log_handler = r->main->log_handler;
    fr->main = fr;
    fr->count = 1;
    tp = ngx_timeofday();
    fr->start_sec = tp->sec;
    fr->start_msec = tp->msec;
    fr->http_version = NGX_HTTP_VERSION_11;
    fr->headers_out.content_length_n = -1;
    fr->headers_out.last_modified_time = -1;
    fr->uri_changes = NGX_HTTP_MAX_URI_CHANGES + 1;
    fr->subrequests = NGX_HTTP_MAX_SUBREQUESTS + 1;
    fr->http_state = NGX_HTTP_PROCESS_REQUEST_STATE;
    fr->internal = 1;

    c->data = fr;
    lctx->request = fr;
    lctx->current_request = fr;
    c->requests++;

    fr->header_in = ngx_calloc_buf(fr->pool);
    fr->ctx = ngx_pcalloc(fr->pool, sizeof(void *) * ngx_http_max_module);

    cmcf = ngx_http_get_module_main_conf(r, ngx_http_core_module);
    fr->variables = ngx_pcalloc(fr->pool, cmcf->variables.nelts
                                          * sizeof(ngx_http_variable_value_t));

    if (fr->header_in == NULL || fr->ctx == NULL || fr->variables == NULL
        || ngx_list_init(&fr->headers_out.headers, fr->pool, 20,
                         sizeof(ngx_table_elt_t)) != NGX_OK
        || ngx_list_init(&fr->headers_out.trailers, fr->pool, 4,
                         sizeof(ngx_table_elt_t)) != NGX_OK
        || ngx_http_goblin_fill_headers_in(fr, r) != NGX_OK)
    {
        goto failed_request;
    }

    /* a GET of the same URI into the named location, its module contexts
     * kept (ngx_http_named_location() clears them) */

    fr->method = NGX_HTTP_GET;
    ngx_str_set(&fr->method_name, "GET");
    ngx_str_set(&fr->http_protocol, "HTTP/1.1");

    if (ngx_http_goblin_fill_copy(fr->pool, &fr->uri, &r->uri) != NGX_OK
        || ngx_http_goblin_fill_copy(fr->pool, &fr->args, &r->args) != NGX_OK
        || ngx_http_goblin_fill_copy(fr->pool, &fr->unparsed_uri,
                                     &r->unparsed_uri) != NGX_OK
        || ngx_http_goblin_fill_copy(fr->pool, &fr->exten, &r->exten)
           != NGX_OK)
    {
        goto failed_request;
    }

    fr->request_line.len = sizeof("GET  HTTP/1.1") - 1 + fr->unparsed_uri.len;
    fr->request_line.data = ngx_pnalloc(fr->pool, fr->request_line.len);
    if (fr->request_line.data == NULL) {
        goto failed_request;
    }

    ngx_sprintf(fr->request_line.data, "GET %V HTTP/1.1", &fr->unparsed_uri);

    fr->loc_conf = clcf->loc_conf;
    ngx_http_update_location_config(fr);
    fr->phase_handler = cmcf->phase_engine.location_rewrite_index;
    fr->write_event_handler = ngx_http_core_run_phases;

    return fr;

failed_request:

    ngx_destroy_pool(fr->pool);

failed:

    if (sv[1] != -1) {
        close(sv[1]);
    }

    if (c->pool) {
        ngx_http_close_connection(c);

    } else {
        ngx_close_connection(c);
    }

    return NULL;
}


/* The client's request headers but those of a range or a condition, and
 * of its body (the fill is a GET of the whole object). */
static ngx_int_t
ngx_http_goblin_fill_headers_in(ngx_http_request_t *fr, ngx_http_request_t *r)
{
    ngx_uint_t        i, n;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h, *nh;

    static ngx_str_t  skip[] = {
        ngx_string("range"),
        ngx_string("if-range"),
        ngx_string("if-match"),
        ngx_string("if-none-match"),
        ngx_string("if-modified-since"),
        ngx_string("if-unmodified-since"),
        ngx_string("content-length"),
        ngx_string("transfer-encoding"),
        ngx_string("expect"),
        ngx_null_string
    };

    if (ngx_list_init(&fr->headers_in.headers, fr->pool, 20,
                      sizeof(ngx_table_elt_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    fr->headers_in.content_length_n = -1;
    fr->headers_in.keep_alive_n = -1;

    if (ngx_http_goblin_fill_copy(fr->pool, &fr->headers_in.server,
                                  &r->headers_in.server)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        for (n = 0; skip[n].len; n++) {
            if (h[i].key.len == skip[n].len
                && ngx_strncasecmp(h[i].key.data, skip[n].data,
                                   skip[n].len) == 0)
            {
                break;
            }
        }

        if (skip[n].len) {
            continue;
        }

        nh = ngx_list_push(&fr->headers_in.headers);
        if (nh == NULL) {
            return NGX_ERROR;
        }

        nh->hash = h[i].hash;

        if (ngx_http_goblin_fill_copy(fr->pool, &nh->key, &h[i].key) != NGX_OK
            || ngx_http_goblin_fill_copy(fr->pool, &nh->value, &h[i].value)
               != NGX_OK)
        {
            return NGX_ERROR;
        }

        nh->lowcase_key = ngx_pnalloc(fr->pool, nh->key.len);
        if (nh->lowcase_key == NULL) {
            return NGX_ERROR;
        }

        ngx_strlow(nh->lowcase_key, nh->key.data, nh->key.len);

        if (nh->key.len == 4
            && ngx_strncmp(nh->lowcase_key, "host", 4) == 0)
        {
            fr->headers_in.host = nh;
        }

        if (nh->key.len == 10
            && ngx_strncmp(nh->lowcase_key, "user-agent", 10) == 0)
        {
            fr->headers_in.user_agent = nh;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_goblin_fill_copy(ngx_pool_t *pool, ngx_str_t *dst, ngx_str_t *src)
{
    dst->len = src->len;

    if (src->len == 0) {
        dst->data = NULL;
        return NGX_OK;
    }

    dst->data = ngx_pnalloc(pool, src->len);
    if (dst->data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(dst->data, src->data, src->len);

    return NGX_OK;
}


static void
ngx_http_goblin_fill_close_peer(void *data)
{
    int  *fd = data;

    if (close(*fd) == -1) {
        ngx_log_error(NGX_LOG_ALERT, ngx_cycle->log, ngx_socket_errno,
                      "close() of a fill's socket failed");
    }
}


/* An event of the fill's connection goes to its request, as
 * ngx_http_request_handler() does for a client's. */
static void
ngx_http_goblin_fill_event(ngx_event_t *ev)
{
    ngx_connection_t    *c;
    ngx_http_request_t  *r;

    c = ev->data;
    r = c->data;

    ngx_http_set_log_request(c->log, r);

    if (ev->write) {
        r->write_event_handler(r);

    } else {
        r->read_event_handler(r);
    }

    ngx_http_run_posted_requests(c);
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


/* ---- the response: headers, writer, body ---- */


static ngx_int_t
ngx_http_goblin_fill_header_filter(ngx_http_request_t *r)
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

    rc = ngx_http_goblin_fill_cacheable(r, fill);

    if (rc != NGX_OK) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "goblin: the origin's %ui for \"%V\" is not stored",
                      r->headers_out.status, &fill->key);

        /* read no further; the waiters go to the origin */
        r->header_only = 1;
        ngx_http_goblin_fill_fail(fill, NGX_HTTP_GOBLIN_FILL_PASS);
        return NGX_OK;
    }

    fill->length = r->headers_out.content_length_n;
    fill->state = NGX_HTTP_GOBLIN_FILL_OPENING;

    rc = ngx_http_goblin_tx_take(ctx);

    if (rc >= 0) {
        ctx->tx_buf = rc;
        ngx_http_goblin_fill_open(ctx);
        return NGX_OK;
    }

    if (rc == NGX_AGAIN) {
        /* ngx_http_goblin_fill_open() once one is free */
        return NGX_OK;
    }

    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                  "goblin: no tx buffer to fill \"%V\"", &fill->key);

    r->header_only = 1;
    ngx_http_goblin_fill_fail(fill, NGX_HTTP_GOBLIN_FILL_PASS);

    return NGX_OK;
}


/* A response the cache stores: a 200 that says nothing against it, not
 * over goblin_max_object; its attributes are built.  NGX_DECLINED: not. */
static ngx_int_t
ngx_http_goblin_fill_cacheable(ngx_http_request_t *r,
    ngx_http_goblin_fill_t *fill)
{
    ngx_str_t                   *v;
    ngx_uint_t                   i;
    ngx_list_part_t             *part;
    ngx_table_elt_t             *h, **cc;
    ngx_http_goblin_loc_conf_t  *glcf;

    if (r->headers_out.status != NGX_HTTP_OK) {
        return NGX_DECLINED;
    }

    glcf = ngx_http_get_module_loc_conf(r, ngx_http_goblin_module);

    if (r->headers_out.content_length_n > glcf->max_object) {
        return NGX_DECLINED;
    }

    cc = r->headers_out.cache_control.elts;

    for (i = 0; i < r->headers_out.cache_control.nelts; i++) {
        v = &cc[i]->value;

        if (ngx_strlcasestrn(v->data, v->data + v->len,
                             (u_char *) "no-store", 8 - 1) != NULL
            || ngx_strlcasestrn(v->data, v->data + v->len,
                                (u_char *) "private", 7 - 1) != NULL)
        {
            return NGX_DECLINED;
        }
    }

    part = &r->headers_out.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash == 0) {
            continue;
        }

        if (h[i].key.len == 10
            && ngx_strncasecmp(h[i].key.data, (u_char *) "Set-Cookie", 10)
               == 0)
        {
            return NGX_DECLINED;
        }

        if (h[i].key.len == 4
            && ngx_strncasecmp(h[i].key.data, (u_char *) "Vary", 4) == 0
            && h[i].value.len == 1 && h[i].value.data[0] == '*')
        {
            return NGX_DECLINED;
        }
    }

    return ngx_http_goblin_attr_build(r, NGX_HTTP_OK, ngx_time(), NULL,
                                      &fill->attr);
}


/* The fill has its tx buffer (ctx->tx_buf): the attributes go first in
 * it, and the shared writer is asked for. */
static void
ngx_http_goblin_fill_open(ngx_http_goblin_ctx_t *ctx)
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

    ngx_memcpy(ring_tx_buf(&ctx->map->ring, (uint32_t) ctx->tx_buf),
               fill->attr.data, fill->attr.len);
    ctx->tx_len = fill->attr.len;

    ngx_memzero(&sqe, sizeof(struct ring_sqe));
    sqe.op = RING_OP_WOPEN;
    sqe.klen = (uint16_t) ctx->key.len;
    ngx_memcpy(sqe.key, ctx->key.data, ctx->key.len);
    sqe.len = fill->length >= 0 ? (uint64_t) fill->length : RING_SIZE_UNKNOWN;
    sqe.opflags = RING_WOPEN_SHARED;
    sqe.attr_len = (uint32_t) fill->attr.len;

    ngx_http_goblin_submit(ctx, &sqe);
    ngx_http_goblin_wait(ctx);
}


static void
ngx_http_goblin_fill_opened(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    ngx_http_goblin_fill_t  *fill = ctx->fill;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    if (cqe->res == -EBUSY) {
        /* another worker fills the key: the waiters read along that */
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ctx->request->connection->log, 0,
                       "goblin: \"%V\" is filled elsewhere", &fill->key);
        ngx_http_goblin_fill_fail(fill, NGX_HTTP_GOBLIN_FILL_BUSY);
        return;
    }

    if (cqe->res != 0) {
        ngx_log_error(NGX_LOG_ERR, ctx->request->connection->log, -cqe->res,
                      "goblin: storaged refused a writer for \"%V\"",
                      &fill->key);
        ngx_http_goblin_fill_fail(fill, NGX_HTTP_GOBLIN_FILL_PASS);
        return;
    }

    ctx->writer = 1;
    ctx->handle = cqe->handle;
    fill->state = NGX_HTTP_GOBLIN_FILL_OPEN;

    if (ngx_http_goblin_fill_pump(fill) != NGX_OK) {
        ngx_http_goblin_fill_fail(fill, NGX_HTTP_GOBLIN_FILL_FAILED);
        return;
    }

    ngx_http_goblin_fill_nudge(fill);
}


/* The tx buffer is back: the first one brought the attributes, so the
 * object is findable and the waiters can read along; then more body. */
static void
ngx_http_goblin_fill_txdone(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    ngx_http_goblin_fill_t  *fill = ctx->fill;

    ctx->tx_busy = 0;
    ctx->tx_len = 0;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    if (!fill->announced) {
        fill->announced = 1;
        fill->refs++;
        ngx_http_goblin_fill_wake(fill);
        ngx_http_goblin_fill_unref(fill);

        if (fill->ctx == NULL) {
            return;
        }
    }

    if (ngx_http_goblin_fill_pump(fill) != NGX_OK) {
        ngx_http_goblin_fill_fail(fill, NGX_HTTP_GOBLIN_FILL_FAILED);
        return;
    }

    ngx_http_goblin_fill_nudge(fill);
}


static void
ngx_http_goblin_fill_stored(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
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

    ngx_http_goblin_fill_nudge(fill);
}


static ngx_int_t
ngx_http_goblin_fill_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_chain_t             *cl;
    ngx_http_goblin_ctx_t   *ctx;
    ngx_http_goblin_fill_t  *fill;

    ctx = ngx_http_get_module_ctx(r, ngx_http_goblin_module);

    if (ctx == NULL || ctx->fill == NULL || r != r->main) {
        return ngx_http_next_body_filter(r, in);
    }

    fill = ctx->fill;

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

    if (ngx_http_goblin_fill_pump(fill) != NGX_OK) {
        ngx_http_goblin_fill_fail(fill, NGX_HTTP_GOBLIN_FILL_FAILED);
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
ngx_http_goblin_fill_pump(ngx_http_goblin_fill_t *fill)
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

    if (fill->held || ctx->tx_busy || (fill->last && !ctx->finishing)) {
        r->buffered |= NGX_HTTP_GOBLIN_FILL_BUFFERED;

    } else {
        r->buffered &= ~NGX_HTTP_GOBLIN_FILL_BUFFERED;
    }

    return NGX_OK;
}


/* The fill's request goes on: nginx reads the origin into the buffers the
 * fill gave back, or ends the request once nothing is held. */
static void
ngx_http_goblin_fill_nudge(ngx_http_goblin_fill_t *fill)
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


/* The fill will not store the object: the writer goes, the waiters hear
 * <state>, the origin is read no further. */
static void
ngx_http_goblin_fill_fail(ngx_http_goblin_fill_t *fill,
    ngx_http_goblin_fill_state_e state)
{
    ngx_http_goblin_ctx_t  *ctx;

    fill->state = state;

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
        ctx->request->buffered &= ~NGX_HTTP_GOBLIN_FILL_BUFFERED;
    }

    fill->refs++;
    ngx_http_goblin_fill_wake(fill);

    ctx = fill->ctx;

    if (ctx && !ctx->request->header_only && !fill->stop.posted) {
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

    ngx_connection_t    *c;
    ngx_http_request_t  *r;

    if (fill->ctx == NULL) {
        return;
    }

    r = fill->ctx->request;
    c = r->connection;

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

    ngx_http_goblin_link->stats.timeouts++;

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
