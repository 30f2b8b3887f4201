
/*
 * ngx_http_goblin_module: cache mode, what may answer a request: the
 * request's Cache-Control (RFC 9111 5.2.1), a stored object's freshness
 * and the stale windows its response allowed (RFC 5861), and whether a
 * Range would wait for bytes before it.
 */


#include "ngx_http_goblin_cache.h"


static ngx_int_t ngx_http_goblin_policy_stale(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe, time_t late);


/* The request's Cache-Control headers into <cc>; Pragma: no-cache counts
 * as no-cache where there is none (RFC 9111 5.4). */
void
ngx_http_goblin_policy_request(ngx_http_request_t *r,
    ngx_http_goblin_cc_t *cc)
{
    ngx_uint_t                 pragma, seen;
    ngx_http_goblin_headers_t  it;
    ngx_table_elt_t           *h;

    ngx_http_goblin_cc_init(cc);

    pragma = 0;
    seen = 0;
    ngx_http_goblin_headers_init(&it, &r->headers_in.headers);

    while ((h = ngx_http_goblin_headers_next(&it)) != NULL) {

        if (h->key.len == sizeof("Cache-Control") - 1
            && ngx_strncasecmp(h->key.data, (u_char *) "Cache-Control",
                               h->key.len) == 0)
        {
            ngx_http_goblin_cc_parse(h->value.data, h->value.len, cc);
            seen = 1;

        } else if (h->key.len == sizeof("Pragma") - 1
                   && ngx_strncasecmp(h->key.data, (u_char *) "Pragma",
                                      h->key.len) == 0
                   && ngx_strlcasestrn(h->value.data,
                                       h->value.data + h->value.len,
                                       (u_char *) "no-cache", 8 - 1)
                      != NULL)
        {
            pragma = 1;
        }
    }

    if (pragma && !seen) {
        cc->no_cache = 1;
    }
}


/*
 * A stored object stale for <late> seconds (RFC 5861): NGX_BUSY when its
 * response's stale-while-revalidate still covers it and the request asks
 * for nothing fresher (served as it is while it is filled anew), else
 * NGX_AGAIN (filled anew; cache->stale_error says until when its
 * stale-if-error lets it answer should that fail).  A response whose
 * Cache-Control forbids serving it stale (cc_stale_ok()) is neither.
 */
static ngx_int_t
ngx_http_goblin_policy_stale(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe,
    time_t late)
{
    ngx_uint_t               i;
    ngx_table_elt_t         *h;
    ngx_http_goblin_cc_t     cc, *req;
    ngx_http_goblin_attr_t   a;

    req = &ctx->cache->req;

    if (ngx_http_goblin_attr_parse(ctx->request,
                                   (u_char *) ring_rx_buf(&ctx->map->ring,
                                                          cqe->buf),
                                   cqe->meta.attr_len, &a)
        != NGX_OK)
    {
        return NGX_AGAIN;
    }

    ngx_http_goblin_cc_init(&cc);
    h = a.headers.elts;

    for (i = 0; i < a.headers.nelts; i++) {
        if (h[i].key.len == sizeof("Cache-Control") - 1
            && ngx_strncasecmp(h[i].lowcase_key, (u_char *) "cache-control",
                               h[i].key.len) == 0)
        {
            ngx_http_goblin_cc_parse(h[i].value.data, h[i].value.len, &cc);
        }
    }

    if (!ngx_http_goblin_cc_stale_ok(&cc)) {
        return NGX_AGAIN;       /* never served stale; stale_error 0 */
    }

    ctx->cache->stale_error = ngx_time() - late
                              + (time_t) ngx_max(cc.stale_if_error, 0);

    if (late < cc.stale_while_revalidate && !req->no_cache
        && req->max_age < 0 && req->min_fresh < 0)
    {
        return NGX_BUSY;
    }

    return NGX_AGAIN;
}


/* Whether the stored object <cqe> found may answer the request: NGX_OK;
 * when it is stale (its attributes say when it stopped being fresh), as
 * policy_stale() says; NGX_DECLINED when the request's Cache-Control does
 * not accept its age (since received, else stored) or the freshness it
 * has left; NGX_AGAIN (revalidated) when it was stored before the store
 * started (goblin_cache_restart revalidate). */
ngx_int_t
ngx_http_goblin_policy_usable(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    time_t                       now, received, fresh;
    int64_t                      left;
    ngx_http_goblin_cc_t        *req;
    ngx_http_goblin_loc_conf_t  *glcf;

    req = &ctx->cache->req;
    now = ngx_time();
    received = (time_t) cqe->meta.mtime;
    fresh = 0;

    if (cqe->buf != RING_NO_BUF) {
        (void) ngx_http_goblin_attr_times(
                   (u_char *) ring_rx_buf(&ctx->map->ring, cqe->buf),
                   cqe->meta.attr_len, &received, &fresh);
    }

    if (fresh && now >= fresh) {
        return ngx_http_goblin_policy_stale(ctx, cqe, now - fresh);
    }

    left = fresh ? fresh - now
                 : cqe->meta.exptime ? cqe->meta.exptime - now
                                     : NGX_HTTP_GOBLIN_DELTA_MAX;

    if (!ngx_http_goblin_cc_satisfies(req, ngx_max(now - received, 0), left)) {
        return NGX_DECLINED;
    }

    glcf = ngx_http_get_module_loc_conf(ctx->request, ngx_http_goblin_module);

    if ((cqe->meta.state & RING_META_RECOVERED)
        && glcf->restart == NGX_HTTP_GOBLIN_RESTART_REVALIDATE
        && !req->only_if_cached)
    {
        /* stored before the store's start: what changed at the origin
         * while it was away (another node took its keys) is not known, so
         * it is revalidated once; while fresh, it answers should that
         * fail */
        ctx->cache->stale_error = now + ngx_min(left,
                                                NGX_HTTP_GOBLIN_DELTA_MAX);
        return NGX_AGAIN;
    }

    return NGX_OK;
}


/* Whether <r> asks for a Range that does not start at byte 0: one that
 * reading along a fill would answer only after every byte before it. */
ngx_uint_t
ngx_http_goblin_policy_far_range(ngx_http_request_t *r)
{
    u_char     *p, *last;
    ngx_str_t  *v;

    if (r->headers_in.range == NULL || r->method != NGX_HTTP_GET) {
        return 0;
    }

    v = &r->headers_in.range->value;
    p = v->data;
    last = p + v->len;

    if (v->len < 6 || ngx_strncasecmp(p, (u_char *) "bytes=", 6) != 0) {
        return 0;   /* not a byte range: ignored, the whole object */
    }

    for (p += 6; p < last && (*p == ' ' || *p == '\t'); p++) { /* void */ }

    /* "0-..." alone reads along at once; a suffix, a later start or
     * several ranges do not */
    return !(p < last && *p == '0' && p + 1 < last && p[1] == '-'
             && ngx_strlchr(p, last, ',') == NULL);
}
