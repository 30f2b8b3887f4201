
/*
 * ngx_http_goblin_module: goblin_status, the JSON status of this worker's
 * link (its NGX_HTTP_GOBLIN_STATS counters), of every worker's (the
 * totals) and of storaged (its "stats" as the daemon sends them through
 * the ring); the STATS round trip goblin_metrics shares.
 */


#include "ngx_http_goblin_module.h"
#include "version.h"


static void ngx_http_goblin_status_lost(ngx_http_goblin_ctx_t *ctx);
static void ngx_http_goblin_got_stats(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
static json_t *ngx_http_goblin_stats_value(ngx_str_t *value);
static ngx_int_t ngx_http_goblin_send_status(ngx_http_request_t *r,
    json_t *storaged);
static json_t *ngx_http_goblin_status_totals(void);


/* The completion of a status request: storaged's stats. */
static const ngx_http_goblin_completion_t
    ngx_http_goblin_status_completions[] = {
    { RING_OP_STATS, ngx_http_goblin_got_stats },
    { 0, NULL }
};


ngx_int_t
ngx_http_goblin_status_handler(ngx_http_request_t *r)
{
    return ngx_http_goblin_stats_request(r, ngx_http_goblin_send_status);
}


ngx_int_t
ngx_http_goblin_stats_request(ngx_http_request_t *r,
    ngx_http_goblin_stats_pt send)
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
        return send(r, NULL);
    }

    ctx = ngx_http_goblin_create_ctx(r, ngx_http_goblin_status_completions);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->lost = ngx_http_goblin_status_lost;
    ctx->stats_send = send;
    ctx->status = 1;

    ngx_memzero(&sqe, sizeof(struct ring_sqe));
    sqe.op = RING_OP_STATS;
    ngx_http_goblin_submit(ctx, &sqe);
    ngx_http_goblin_wait(ctx);

    r->main->count++;

    return NGX_DONE;
}


/* storaged went away before it answered: the status without it. */
static void
ngx_http_goblin_status_lost(ngx_http_goblin_ctx_t *ctx)
{
    ngx_http_goblin_finalize(ctx, ctx->stats_send(ctx->request, NULL));
}


/* "name value" lines from storaged into a JSON object. */
static void
ngx_http_goblin_got_stats(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    u_char              *p, *last, *name, *eol;
    json_t              *storaged;
    ngx_int_t            rc;
    ngx_str_t            value;
    ngx_http_request_t  *r;

    r = ctx->request;

    if (cqe->res != 0) {
        ngx_http_goblin_finalize(ctx,
                                 ngx_http_goblin_error_status(r, cqe->res));
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

        *p = '\0';      /* the buffer is ours until BUFREL */
        json_object_set_new(storaged, (char *) name,
                            ngx_http_goblin_stats_value(&value));
        *p = ' ';
    }

    ngx_http_goblin_submit_handle(ctx, RING_OP_BUFREL, cqe->buf, 0, 0);

    rc = ctx->stats_send(r, storaged);

    ngx_http_goblin_finalize(ctx, rc);
}


/* A stat's value: an integer when it is all digits, else its text
 * (version, store_id, rusage_user). */
static json_t *
ngx_http_goblin_stats_value(ngx_str_t *value)
{
    size_t    i;
    uint64_t  n;

    n = 0;

    for (i = 0; i < value->len; i++) {
        if (value->data[i] < '0' || value->data[i] > '9' || i == 19) {
            return json_stringn((char *) value->data, value->len);
        }

        n = n * 10 + (value->data[i] - '0');
    }

    return value->len ? json_integer(n) : json_string("");
}


/*
 * {"pid":..., "version":..., "uptime":..., "link":"up"|"down",
 *  "module":{...}, "totals":{...}, "storaged":{...}|null}; 503 when
 * storaged could not be asked.  Takes <storaged>.
 */
static ngx_int_t
ngx_http_goblin_send_status(ngx_http_request_t *r, json_t *storaged)
{
    char                    *text;
    json_t                  *root, *module;
    size_t                   len;
    ngx_buf_t               *b;
    ngx_http_goblin_link_t  *link = ngx_http_goblin_link;

    static ngx_str_t  type = ngx_string("application/json");

    root = json_object();
    module = json_object();

    if (root == NULL || module == NULL) {
        json_decref(root);
        json_decref(module);
        json_decref(storaged);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    json_object_set_new(root, "pid", json_integer(ngx_pid));
    json_object_set_new(root, "version", json_string(GOBLIN_VERSION));
    json_object_set_new(root, "uptime",
                        ngx_http_goblin_totals
                        ? json_integer(ngx_time()
                                       - ngx_http_goblin_totals->started)
                        : json_null());
    json_object_set_new(root, "link",
                        json_string(link->state == NGX_HTTP_GOBLIN_UP
                                    ? "up" : "down"));

#define NGX_HTTP_GOBLIN_STAT_JSON(name)                                       \
    json_object_set_new(module, #name, json_integer(link->stats.name));
    NGX_HTTP_GOBLIN_STATS(NGX_HTTP_GOBLIN_STAT_JSON)
#undef NGX_HTTP_GOBLIN_STAT_JSON

    json_object_set_new(module, "rx_held", json_integer(link->rx_held));
    json_object_set_new(module, "tx_held",
                        json_integer(link->state == NGX_HTTP_GOBLIN_UP
                                     ? link->map->ring.n_tx - link->ntx_free
                                     : 0));
    json_object_set_new(module, "tx_waiters",
                        json_integer(link->ntx_waiters));
    json_object_set_new(module, "put_heap_bytes",
                        json_integer(link->put_heap_bytes));
    json_object_set_new(root, "module", module);
    json_object_set_new(root, "totals", ngx_http_goblin_status_totals());
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

    return ngx_http_goblin_send_body(r, storaged ? NGX_HTTP_OK
                                                 : NGX_HTTP_SERVICE_UNAVAILABLE,
                                     &type, b);
}


/* Every worker's NGX_HTTP_GOBLIN_STATS, added up; null without the zone. */
static json_t *
ngx_http_goblin_status_totals(void)
{
    json_t                    *totals;
    ngx_http_goblin_totals_t  *t = ngx_http_goblin_totals;

    if (t == NULL) {
        return json_null();
    }

    totals = json_object();
    if (totals == NULL) {
        return NULL;
    }

#define NGX_HTTP_GOBLIN_TOTAL_JSON(name)                                      \
    json_object_set_new(totals, #name, json_integer(t->name));
    NGX_HTTP_GOBLIN_STATS(NGX_HTTP_GOBLIN_TOTAL_JSON)
#undef NGX_HTTP_GOBLIN_TOTAL_JSON

    return totals;
}


ngx_int_t
ngx_http_goblin_send_body(ngx_http_request_t *r, ngx_uint_t status,
    ngx_str_t *type, ngx_buf_t *b)
{
    ngx_int_t    rc;
    ngx_chain_t  out;

    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    r->headers_out.status = status;
    r->headers_out.content_length_n = b->last - b->pos;
    r->headers_out.content_type = *type;
    r->headers_out.content_type_len = type->len;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}
