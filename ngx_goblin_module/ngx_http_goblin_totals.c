
/*
 * ngx_http_goblin_module: the totals of every worker (goblin_status,
 * goblin_metrics) in the shared zone "goblin", and the accounting of each
 * goblin request into them when it ends: its method and status class, its
 * $goblin_cache_status, the time to its first byte.
 */


#include "ngx_http_goblin_module.h"
#include "ngx_http_goblin_cache.h"


/* A goblin request's accounting, the data of a cleanup of its pool. */
typedef struct {
    ngx_http_request_t            *request;
    unsigned                       first_byte:1;    /* counted */
} ngx_http_goblin_account_t;


static ngx_int_t ngx_http_goblin_totals_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);
static ngx_http_goblin_account_t *ngx_http_goblin_account(
    ngx_http_request_t *r);
static void ngx_http_goblin_account_done(void *data);
static ngx_int_t ngx_http_goblin_first_byte_filter(ngx_http_request_t *r);


ngx_http_goblin_totals_t  *ngx_http_goblin_totals;

/* the first-byte buckets' upper bounds, milliseconds; the last is +Inf */
ngx_msec_t  ngx_http_goblin_buckets[NGX_HTTP_GOBLIN_BUCKETS] = {
    1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000,
    NGX_MAX_INT32_VALUE
};

static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;


/* Adds the zone "goblin" (as limit_req adds its zones); -t reports it. */
ngx_int_t
ngx_http_goblin_totals_zone(ngx_conf_t *cf)
{
    ngx_str_t        name = ngx_string("goblin");
    ngx_shm_zone_t  *shm_zone;

    shm_zone = ngx_shared_memory_add(cf, &name, 8 * ngx_pagesize,
                                     &ngx_http_goblin_module);
    if (shm_zone == NULL) {
        return NGX_ERROR;
    }

    shm_zone->init = ngx_http_goblin_totals_init_zone;

    return NGX_OK;
}


/* The totals of the cycle before a reload are kept when their layout is
 * this module's. */
static ngx_int_t
ngx_http_goblin_totals_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_slab_pool_t           *shpool;
    ngx_http_goblin_totals_t  *totals = data;

    if (totals && totals->size == sizeof(ngx_http_goblin_totals_t)) {
        shm_zone->data = totals;
        ngx_http_goblin_totals = totals;
        return NGX_OK;
    }

    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    totals = ngx_slab_calloc(shpool, sizeof(ngx_http_goblin_totals_t));
    if (totals == NULL) {
        return NGX_ERROR;
    }

    totals->size = sizeof(ngx_http_goblin_totals_t);
    totals->started = ngx_time();

    shm_zone->data = totals;
    ngx_http_goblin_totals = totals;

    return NGX_OK;
}


/* The first-byte filter: the response header goes out first. */
ngx_int_t
ngx_http_goblin_totals_init(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_goblin_first_byte_filter;

    return NGX_OK;
}


ngx_int_t
ngx_http_goblin_totals_request(ngx_http_request_t *r)
{
    ngx_pool_cleanup_t         *cln;
    ngx_http_goblin_account_t  *account;

    if (r != r->main || ngx_http_goblin_account(r) != NULL) {
        return NGX_OK;      /* a subrequest, or here again by a redirect */
    }

    cln = ngx_pool_cleanup_add(r->pool, sizeof(ngx_http_goblin_account_t));
    if (cln == NULL) {
        return NGX_ERROR;
    }

    account = cln->data;
    account->request = r;
    account->first_byte = 0;

    cln->handler = ngx_http_goblin_account_done;

    return NGX_OK;
}


/* <r>'s accounting, NULL when it is no goblin request: the cleanup list
 * of a request is a few entries long. */
static ngx_http_goblin_account_t *
ngx_http_goblin_account(ngx_http_request_t *r)
{
    ngx_pool_cleanup_t  *cln;

    for (cln = r->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == ngx_http_goblin_account_done) {
            return cln->data;
        }
    }

    return NULL;
}


/* The request is freed: its method, status (as $status has it) and cache
 * status are final. */
static void
ngx_http_goblin_account_done(void *data)
{
    ngx_http_goblin_account_t *account = data;

    ngx_uint_t                  m, c, i, status;
    ngx_http_request_t         *r;
    ngx_http_variable_value_t  *v;

    r = account->request;

    if (ngx_http_goblin_totals == NULL) {
        return;
    }

    switch (r->method) {
    case NGX_HTTP_GET:
        m = 0;
        break;
    case NGX_HTTP_HEAD:
        m = 1;
        break;
    case NGX_HTTP_PUT:
        m = 2;
        break;
    case NGX_HTTP_DELETE:
        m = 3;
        break;
    default:
        m = 4;
    }

    status = r->err_status ? r->err_status : r->headers_out.status;
    c = (status >= 100 && status < 600) ? status / 100 - 1
                                        : NGX_HTTP_GOBLIN_CLASSES - 1;

    (void) ngx_atomic_fetch_add(&ngx_http_goblin_totals->http[m][c], 1);

    if (ngx_http_goblin_cache_status_index == NGX_ERROR) {
        return;
    }

    /* kept in the request's variables across a redirect to the origin */
    v = &r->variables[ngx_http_goblin_cache_status_index];

    for (i = 1; v->valid && i < NGX_HTTP_GOBLIN_CACHE_STATUSES; i++) {
        if (v->data == ngx_http_goblin_cache_statuses[i].data) {
            (void) ngx_atomic_fetch_add(&ngx_http_goblin_totals->cache[i], 1);
            break;
        }
    }
}


/* A goblin request's response header is going out: the time since its
 * request line came, into the first-byte histogram. */
static ngx_int_t
ngx_http_goblin_first_byte_filter(ngx_http_request_t *r)
{
    ngx_uint_t                  i;
    ngx_msec_int_t              ms;
    ngx_time_t                 *tp;
    ngx_http_goblin_account_t  *account;

    if (r != r->main || ngx_http_goblin_totals == NULL) {
        return ngx_http_next_header_filter(r);
    }

    account = ngx_http_goblin_account(r);

    if (account == NULL || account->first_byte) {
        return ngx_http_next_header_filter(r);
    }

    account->first_byte = 1;

    tp = ngx_timeofday();

    ms = (ngx_msec_int_t) ((tp->sec - r->start_sec) * 1000
                           + (tp->msec - r->start_msec));
    ms = ngx_max(ms, 0);

    for (i = 0; (ngx_msec_t) ms > ngx_http_goblin_buckets[i]; i++) {
        /* void */
    }

    (void) ngx_atomic_fetch_add(&ngx_http_goblin_totals->first_byte[i], 1);
    (void) ngx_atomic_fetch_add(&ngx_http_goblin_totals->first_byte_ms, ms);

    return ngx_http_next_header_filter(r);
}
