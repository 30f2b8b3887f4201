
/*
 * ngx_http_goblin_module: the content handler of "goblin" locations: the
 * method (goblin_methods), storaged attached, the key (goblin_key, or the
 * URI), then GET and HEAD (ngx_http_goblin_handler.c), PUT
 * (ngx_http_goblin_put.c) or DELETE (ngx_http_goblin_cond.c).
 */


#include "ngx_http_goblin_module.h"
#include "ngx_http_goblin_http.h"
#include "ngx_http_goblin_cache.h"


static ngx_int_t ngx_http_goblin_key(ngx_http_request_t *r,
    ngx_http_goblin_loc_conf_t *glcf, ngx_str_t *key);
static ngx_int_t ngx_http_goblin_not_allowed(ngx_http_request_t *r,
    ngx_http_goblin_loc_conf_t *glcf);


ngx_int_t
ngx_http_goblin_handler(ngx_http_request_t *r)
{
    ngx_int_t                    rc;
    ngx_str_t                    key;
    ngx_uint_t                   purge;
    ngx_http_goblin_ctx_t       *ctx;
    ngx_http_goblin_link_t      *link = ngx_http_goblin_link;
    ngx_http_goblin_loc_conf_t  *glcf;

    glcf = ngx_http_get_module_loc_conf(r, ngx_http_goblin_module);

    ngx_http_goblin_count(requests, 1);

    if (ngx_http_goblin_totals_request(r) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* goblin_cache_purge: PURGE deletes the key, as DELETE does */
    purge = glcf->purge && r->method == NGX_HTTP_UNKNOWN
            && r->method_name.len == sizeof("PURGE") - 1
            && ngx_strncmp(r->method_name.data, "PURGE",
                           r->method_name.len) == 0;

    if (purge) {
        /* storaged and the key first, as for any method it allows */

    } else if (glcf->cache) {
        /* cache mode: every method, the origin when storaged is away */
        if (link->state != NGX_HTTP_GOBLIN_UP) {
            return ngx_http_goblin_cache_pass(r, NGX_HTTP_GOBLIN_CACHE_BYPASS);
        }

    } else if (!(r->method & glcf->methods)) {
        return ngx_http_goblin_not_allowed(r, glcf);
    }

    if (link->state != NGX_HTTP_GOBLIN_UP) {
        ngx_http_goblin_count(unavailable, 1);
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "goblin: storaged is not attached (yet)");
        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    rc = ngx_http_goblin_key(r, glcf, &key);
    if (rc != NGX_OK) {
        return rc;
    }

    if (purge) {
        return ngx_http_goblin_delete_handler(r, &key);
    }

    if (glcf->cache) {
        return ngx_http_goblin_cache_handler(r, &key);
    }

    if (r->method == NGX_HTTP_PUT) {
        return ngx_http_goblin_put_handler(r, &key);
    }

    if (r->method == NGX_HTTP_DELETE) {
        return ngx_http_goblin_delete_handler(r, &key);
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    ctx = ngx_http_goblin_create_ctx(r, ngx_http_goblin_get_completions);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->key = key;

    if (!r->discard_body) {
        r->read_event_handler = ngx_http_test_reading;
    }

    ngx_http_goblin_submit_key(ctx, RING_OP_LOOKUP, 0);
    ngx_http_goblin_wait(ctx);

    r->main->count++;

    return NGX_DONE;
}


/*
 * The key: goblin_key, else the URI after the location prefix, as nginx
 * decoded it (a%20b is "a b").  400 for an empty key or one with a control
 * character, 414 for one over RING_KEY_MAX bytes.
 */
static ngx_int_t
ngx_http_goblin_key(ngx_http_request_t *r, ngx_http_goblin_loc_conf_t *glcf,
    ngx_str_t *key)
{
    size_t      bad;
    ngx_int_t   valid;

    bad = 0;

    if (glcf->key) {
        if (ngx_http_complex_value(r, glcf->key, key) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        valid = ngx_http_goblin_key_valid(key->data, key->len, RING_KEY_MAX,
                                          &bad);

    } else {
        valid = ngx_http_goblin_uri_key(r, RING_KEY_MAX, key, &bad);
    }

    switch (valid) {

    case NGX_HTTP_GOBLIN_KEY_OK:
        return NGX_OK;

    case NGX_HTTP_GOBLIN_KEY_LONG:
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "goblin: a key of %uz bytes, over the %d a key may "
                      "have", key->len, RING_KEY_MAX);
        return NGX_HTTP_REQUEST_URI_TOO_LARGE;

    case NGX_HTTP_GOBLIN_KEY_CONTROL:
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "goblin: the key has a control character (0x%02xd) "
                      "at byte %uz: no key may have NUL, CR, LF or another "
                      "control character", (int) key->data[bad], bad);
        return NGX_HTTP_BAD_REQUEST;

    default:
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "goblin: an empty key");
        return NGX_HTTP_BAD_REQUEST;
    }
}


/* The key of r->uri in its location: the URI after the location's prefix
 * (a regex or named location: all of it), as nginx decoded it; <max>
 * bytes at most.  ngx_http_goblin_key_valid()'s answer, the offset of a
 * bad byte in *bad.  $goblin_key is this too (ngx_http_goblin_upstream.c).
 */
ngx_int_t
ngx_http_goblin_uri_key(ngx_http_request_t *r, size_t max, ngx_str_t *key,
    size_t *bad)
{
    ngx_int_t      valid;
    ngx_str_t      prefix;
    const u_char  *data;

    prefix = ngx_http_goblin_location_prefix(r);

    valid = ngx_http_goblin_key_map(r->uri.data, r->uri.len, prefix.data,
                                    prefix.len, max, &data, &key->len, bad);
    key->data = (u_char *) data;

    return valid;
}


static ngx_int_t
ngx_http_goblin_not_allowed(ngx_http_request_t *r,
    ngx_http_goblin_loc_conf_t *glcf)
{
    u_char              *p;
    ngx_str_t            allow;
    ngx_conf_bitmask_t  *m;

    p = ngx_pnalloc(r->pool, sizeof("GET, HEAD, PUT, DELETE") - 1);
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    allow.data = p;

    for (m = ngx_http_goblin_methods_mask; m->name.len; m++) {
        if (glcf->methods & m->mask) {
            if (p != allow.data) {
                *p++ = ','; *p++ = ' ';
            }

            p = ngx_cpymem(p, m->name.data, m->name.len);
        }
    }

    allow.len = p - allow.data;

    if (ngx_http_goblin_add_header(r, "Allow", &allow) == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_HTTP_NOT_ALLOWED;
}
