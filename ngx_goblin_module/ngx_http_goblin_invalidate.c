
/*
 * ngx_http_goblin_module: cache mode, what an unsafe method's success
 * invalidates (RFC 9111 4.4): its own key, and the keys its Location and
 * Content-Location headers name where they are URIs of this server (the
 * request's Host) under the same location prefix: the URI's key, or with
 * goblin_key the key it makes of a request for that URI (its $uri, $args
 * and $request_uri that URI's, everything else the request's own).
 */


#include "ngx_http_goblin_cache.h"


typedef struct {
    ngx_http_goblin_ctx_t  *ctx;
    ngx_str_t               prefix;     /* the location's, to strip */
    ngx_http_complex_value_t  *key;     /* goblin_key; NULL: the URI's */
} ngx_http_goblin_invalidate_t;


static void ngx_http_goblin_invalidate(void *data);
static void ngx_http_goblin_invalidate_named(ngx_http_goblin_invalidate_t *inv,
    ngx_table_elt_t *h);
static ngx_int_t ngx_http_goblin_invalidate_key(ngx_http_goblin_invalidate_t *inv,
    u_char *path, size_t len, u_char *target, size_t target_len,
    ngx_str_t *key);
static void ngx_http_goblin_invalidate_flush(ngx_http_request_t *r,
    ngx_http_complex_value_t *cv);


static ngx_str_t  ngx_http_goblin_location = ngx_string("Location");
static ngx_str_t  ngx_http_goblin_content_location =
    ngx_string("Content-Location");


/* Arranges for <ctx>'s request, an unsafe method passed to the origin, to
 * invalidate what it names when it ends with a 2xx or 3xx. */
ngx_int_t
ngx_http_goblin_invalidate_add(ngx_http_goblin_ctx_t *ctx)
{
    ngx_http_request_t            *r;
    ngx_http_cleanup_t            *cln;
    ngx_http_goblin_loc_conf_t    *glcf;
    ngx_http_goblin_invalidate_t  *inv;

    r = ctx->request;

    /* runs before the context's own cleanup lets go of its slot */
    cln = ngx_http_cleanup_add(r, sizeof(ngx_http_goblin_invalidate_t));
    if (cln == NULL) {
        return NGX_ERROR;
    }

    inv = cln->data;
    inv->ctx = ctx;

    /* the location now: the request moves to goblin_origin's */
    glcf = ngx_http_get_module_loc_conf(r, ngx_http_goblin_module);

    inv->key = glcf->key;
    inv->prefix = ngx_http_goblin_location_prefix(r);

    cln->handler = ngx_http_goblin_invalidate;

    return NGX_OK;
}


static void
ngx_http_goblin_invalidate(void *data)
{
    ngx_http_goblin_invalidate_t *inv = data;

    ngx_uint_t                  status, named;
    ngx_table_elt_t            *h;
    ngx_http_request_t         *r;
    ngx_http_goblin_ctx_t      *ctx;
    ngx_http_goblin_headers_t   it;

    ctx = inv->ctx;
    r = ctx->request;
    status = r->headers_out.status;

    if (status < 200 || status >= 400 || !ngx_http_goblin_linked(ctx)) {
        return;
    }

    /* the keys named first: whoever sees the request's own key gone sees
     * them gone too (one ring, taken in order).  A relative Location is
     * only in the list (nginx's upstream leaves headers_out.location to
     * absolute ones), and the header filter zeroes the hash of the one
     * there when it makes it absolute. */

    ngx_http_goblin_headers_init(&it, &r->headers_out.headers);
    named = 0;

    /* both are singletons: two lines at most, however many came */
    while (named < 2 && (h = ngx_http_goblin_headers_next(&it)) != NULL) {
        if ((h->hash || h == r->headers_out.location)
            && ((h->key.len == ngx_http_goblin_location.len
                 && ngx_strncasecmp(h->key.data,
                                    ngx_http_goblin_location.data,
                                    h->key.len) == 0)
                || (h->key.len == ngx_http_goblin_content_location.len
                    && ngx_strncasecmp(h->key.data,
                                       ngx_http_goblin_content_location.data,
                                       h->key.len) == 0)))
        {
            ngx_http_goblin_invalidate_named(inv, h);
            named++;
        }
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "goblin: invalidating \"%V\"", &ctx->key);

    ngx_http_goblin_submit_key(ctx, RING_OP_DELETE, 0);
}


/* Deletes the key the URI in <h>'s value names, if it is one of this
 * location's (the request's Host, the location's prefix). */
static void
ngx_http_goblin_invalidate_named(ngx_http_goblin_invalidate_t *inv,
    ngx_table_elt_t *h)
{
    long                    n;
    size_t                  target, target_len;
    u_char                 *path;
    ngx_str_t               host, key, own;
    ngx_http_request_t     *r;
    ngx_http_goblin_ctx_t  *ctx;

    ctx = inv->ctx;
    r = ctx->request;

    if (r->headers_in.host) {
        host = r->headers_in.host->value;

    } else {
        host = r->headers_in.server;
    }

    path = ngx_pnalloc(r->pool, h->value.len + 1);
    if (path == NULL) {
        return;
    }

    n = ngx_http_goblin_location_path(h->value.data, h->value.len,
                                      host.data, host.len, path, &target,
                                      &target_len);
    if (n < 0
        || (size_t) n < inv->prefix.len
        || ngx_memcmp(path, inv->prefix.data, inv->prefix.len) != 0
        || ngx_http_goblin_invalidate_key(inv, path, (size_t) n,
                                          h->value.data + target,
                                          target_len, &key)
           != NGX_OK)
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "goblin: \"%V\" names no key here", &h->value);
        return;
    }

    own = ctx->key;

    if (key.len == own.len && ngx_memcmp(key.data, own.data, own.len) == 0) {
        return;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "goblin: invalidating \"%V\" (%V)", &key, &h->key);

    ctx->key = key;
    ngx_http_goblin_submit_key(ctx, RING_OP_DELETE, 0);
    ctx->key = own;
}


/* The key of a request for <path> (decoded), sent as <target>: the path
 * after the location's prefix, or what goblin_key makes of it with the
 * request's $uri, $args and $request_uri made that URI's for the while.
 * NGX_OK, or NGX_DECLINED for no key a request could have. */
static ngx_int_t
ngx_http_goblin_invalidate_key(ngx_http_goblin_invalidate_t *inv,
    u_char *path, size_t len, u_char *target, size_t target_len,
    ngx_str_t *key)
{
    size_t               bad;
    u_char              *q;
    ngx_int_t            rc;
    ngx_str_t            uri, args, unparsed;
    const u_char        *k;
    ngx_http_request_t  *r;

    if (inv->key == NULL) {
        rc = ngx_http_goblin_key_map(path, len, inv->prefix.data,
                                     inv->prefix.len, RING_KEY_MAX, &k,
                                     &key->len, &bad);
        key->data = (u_char *) k;

        return rc == NGX_HTTP_GOBLIN_KEY_OK ? NGX_OK : NGX_DECLINED;
    }

    if (target_len == 0 || target[0] != '/') {
        return NGX_DECLINED;
    }

    r = inv->ctx->request;

    uri = r->uri;
    args = r->args;
    unparsed = r->unparsed_uri;

    r->uri.data = path;
    r->uri.len = len;
    r->unparsed_uri.data = target;
    r->unparsed_uri.len = target_len;

    q = ngx_strlchr(target, target + target_len, '?');

    if (q) {
        r->args.data = q + 1;
        r->args.len = target + target_len - q - 1;

    } else {
        ngx_str_null(&r->args);
    }

    ngx_http_goblin_invalidate_flush(r, inv->key);
    rc = ngx_http_complex_value(r, inv->key, key);

    r->uri = uri;
    r->args = args;
    r->unparsed_uri = unparsed;

    /* and the log, after the cleanups, sees the request's own */
    ngx_http_goblin_invalidate_flush(r, inv->key);

    if (rc != NGX_OK
        || ngx_http_goblin_key_valid(key->data, key->len, RING_KEY_MAX, &bad)
           != NGX_HTTP_GOBLIN_KEY_OK)
    {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/* Forgets the values of the variables <cv> uses, cacheable ones too
 * ($request_uri is): nginx's own flush keeps those. */
static void
ngx_http_goblin_invalidate_flush(ngx_http_request_t *r,
    ngx_http_complex_value_t *cv)
{
    ngx_uint_t  *index;

    for (index = cv->flushes; index && *index != (ngx_uint_t) -1; index++) {
        r->variables[*index].valid = 0;
        r->variables[*index].not_found = 0;
    }
}
