
/*
 * ngx_http_goblin_module: cache mode, a fill's request.
 *
 * A fill runs as a request of its own on a connection of its own, not as
 * a subrequest of the client that missed: nginx's event pipe writes to a
 * subrequest's output only while its client's socket is writable
 * (downstream->write->ready), so a slow first client would pace the
 * fill, and a client request that is terminated takes its subrequests
 * with it (ngx_http_terminate_request() closes the main request whatever
 * its count), so one that goes away would end it.  The connection is one
 * end of a socketpair nobody writes to: to nginx's event machinery an
 * idle client that always takes what it is given, which this module's
 * filters capture before it (ngx_http_goblin_capture.c).  The request is
 * made as ngx_http_alloc_request() makes one, with the client's server,
 * URI and headers (not its range or conditions), and routed into the
 * goblin_origin location as ngx_http_named_location() does, its module
 * contexts kept.  nginx ends and frees it as any other.
 */


#include "ngx_http_goblin_cache.h"

#include <sys/socket.h>


static ngx_connection_t *ngx_http_goblin_origin_connection(
    ngx_http_request_t *r);
static ngx_int_t ngx_http_goblin_origin_headers_in(ngx_http_request_t *fr,
    ngx_http_request_t *r);
static ngx_int_t ngx_http_goblin_origin_copy(ngx_pool_t *pool,
    ngx_str_t *dst, ngx_str_t *src);
static void ngx_http_goblin_origin_close_peer(void *data);
static void ngx_http_goblin_origin_event(ngx_event_t *ev);


/* The named location goblin_origin names in <r>'s server; NULL (logged)
 * when there is none. */
ngx_http_core_loc_conf_t *
ngx_http_goblin_origin_location(ngx_http_request_t *r)
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


/* The fill's connection: one end of a socketpair nobody writes to (the
 * other end closes with its pool), the client's addresses, a log of its
 * own whose context names the request to come. */
static ngx_connection_t *
ngx_http_goblin_origin_connection(ngx_http_request_t *r)
{
    int                         sv[2];
    ngx_log_t                  *log;
    ngx_pool_t                 *pool;
    ngx_connection_t           *c, *rc;
    ngx_pool_cleanup_t         *cln;
    ngx_http_log_ctx_t         *lctx;
    ngx_http_connection_t      *hc;

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
    cln->handler = ngx_http_goblin_origin_close_peer;
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
    c->read->handler = ngx_http_goblin_origin_event;
    c->write->handler = ngx_http_goblin_origin_event;
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

    return c;

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


/*
 * A request of its own for a fill, as <r> would have gone to the origin
 * (its server, its headers but for range and conditional ones), routed
 * into named location <clcf>, with a connection of its own; its phases
 * run once its connection's write event is posted.  NULL when it cannot
 * (logged).
 */
ngx_http_request_t *
ngx_http_goblin_origin_request(ngx_http_request_t *r,
    ngx_http_core_loc_conf_t *clcf)
{
    ngx_log_t                  *log;
    ngx_time_t                 *tp;
    ngx_connection_t           *c;
    ngx_http_request_t         *fr;
    ngx_http_log_ctx_t         *lctx;
    ngx_http_core_main_conf_t  *cmcf;

    c = ngx_http_goblin_origin_connection(r);
    if (c == NULL) {
        return NULL;
    }

    log = c->log;
    lctx = log->data;

    /* as ngx_http_alloc_request() makes one */

    fr = ngx_pcalloc(c->pool, sizeof(ngx_http_request_t));
    if (fr == NULL) {
        goto failed;
    }

    fr->pool = ngx_create_pool(4096, log);
    if (fr->pool == NULL) {
        goto failed;
    }

    fr->http_connection = c->data;
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
        || ngx_http_goblin_origin_headers_in(fr, r) != NGX_OK)
    {
        goto failed_request;
    }

    /* a GET of the same URI into the named location, its module contexts
     * kept (ngx_http_named_location() clears them) */

    fr->method = NGX_HTTP_GET;
    ngx_str_set(&fr->method_name, "GET");
    ngx_str_set(&fr->http_protocol, "HTTP/1.1");

    if (ngx_http_goblin_origin_copy(fr->pool, &fr->uri, &r->uri) != NGX_OK
        || ngx_http_goblin_origin_copy(fr->pool, &fr->args, &r->args) != NGX_OK
        || ngx_http_goblin_origin_copy(fr->pool, &fr->unparsed_uri,
                                     &r->unparsed_uri) != NGX_OK
        || ngx_http_goblin_origin_copy(fr->pool, &fr->exten, &r->exten)
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

    ngx_http_close_connection(c);

    return NULL;
}


/* The client's request headers but those of a range or a condition, and
 * of its body (the fill is a GET of the whole object). */
static ngx_int_t
ngx_http_goblin_origin_headers_in(ngx_http_request_t *fr, ngx_http_request_t *r)
{
    ngx_uint_t                 n;
    ngx_http_goblin_headers_t  it;
    ngx_table_elt_t           *h, *nh;

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

    if (ngx_http_goblin_origin_copy(fr->pool, &fr->headers_in.server,
                                  &r->headers_in.server)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_http_goblin_headers_init(&it, &r->headers_in.headers);

    while ((h = ngx_http_goblin_headers_next(&it)) != NULL) {

        for (n = 0; skip[n].len; n++) {
            if (h->key.len == skip[n].len
                && ngx_strncasecmp(h->key.data, skip[n].data,
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

        nh->hash = h->hash;

        if (ngx_http_goblin_origin_copy(fr->pool, &nh->key, &h->key) != NGX_OK
            || ngx_http_goblin_origin_copy(fr->pool, &nh->value, &h->value)
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
ngx_http_goblin_origin_copy(ngx_pool_t *pool, ngx_str_t *dst, ngx_str_t *src)
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
ngx_http_goblin_origin_close_peer(void *data)
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
ngx_http_goblin_origin_event(ngx_event_t *ev)
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