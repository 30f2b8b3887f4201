
/*
 * ngx_http_goblin_module: cache mode, variants by Vary (RFC 9111 4.1).
 *
 * A response with Vary is stored with its attributes' Vary lines and a
 * line of its own, NGX_HTTP_GOBLIN_VARIANT ("Goblin-Variant: <md5>"), the
 * digest of what its fill's request sent in the headers Vary names
 * (each name, lowercase, with the request's lines of it joined by ",",
 * spaces around them dropped; one that is absent is marked so).  It is
 * never replayed.  A stored object answers a request only when the
 * request's digest is the same.  The first response for a key is stored
 * under the key; the others under its variant keys: the key, a 0x01 byte
 * (no key a client names has one), the stored object's CAS and the
 * request's digest, in hex.  An object replaced, purged or invalidated
 * takes its variants along with its CAS: they are not found again and
 * expire in the store.
 */


#include <ngx_md5.h>

#include "ngx_http_goblin_cache.h"


/* 0x01, the CAS and 64 bits of the digest, in hex */
#define NGX_HTTP_GOBLIN_VARIANT_KEY_LEN  (1 + 16 + 16)


static ngx_int_t ngx_http_goblin_vary_digest(ngx_http_request_t *r,
    ngx_table_elt_t *vary, ngx_uint_t n, u_char *hex);
static void ngx_http_goblin_vary_value(ngx_md5_t *md5, ngx_http_request_t *r,
    u_char *name, size_t len);


/*
 * Whether the object <cqe> found answers the request: NGX_OK when it has
 * no Vary or the request selects it; else NGX_DECLINED, with ctx->key
 * its variant key for the request when it was the key a client named
 * (<variant> 0), or NGX_ABORT when it was a variant key already (the
 * variant is filled anew); NGX_ERROR without memory or when the variant
 * key would be too long.
 */
ngx_int_t
ngx_http_goblin_vary_found(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe,
    ngx_uint_t variant)
{
    u_char                  *p, *k;
    u_char                   want[32];
    ngx_uint_t               i;
    ngx_array_t              vary;
    ngx_table_elt_t         *h, *stored, *v;
    ngx_http_request_t      *r;
    ngx_http_goblin_attr_t   a;

    r = ctx->request;

    if (cqe->buf == RING_NO_BUF) {
        return NGX_OK;
    }

    p = (u_char *) ring_rx_buf(&ctx->map->ring, cqe->buf);

    /* most objects have no Vary: nothing parsed for them */
    if (ngx_strlcasestrn(p, p + cqe->meta.attr_len,
                         (u_char *) "\nvary:", sizeof("\nvary:") - 2)
        == NULL)
    {
        return NGX_OK;
    }

    if (ngx_http_goblin_attr_parse(r, p, cqe->meta.attr_len, &a) != NGX_OK
        || ngx_array_init(&vary, r->pool, 2, sizeof(ngx_table_elt_t))
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    stored = NULL;
    h = a.headers.elts;

    for (i = 0; i < a.headers.nelts; i++) {
        if (h[i].key.len == sizeof("Vary") - 1
            && ngx_strncmp(h[i].lowcase_key, "vary", 4) == 0)
        {
            v = ngx_array_push(&vary);
            if (v == NULL) {
                return NGX_ERROR;
            }

            *v = h[i];

        } else if (h[i].key.len == sizeof(NGX_HTTP_GOBLIN_VARIANT) - 1
                   && ngx_strncasecmp(h[i].key.data,
                                      (u_char *) NGX_HTTP_GOBLIN_VARIANT,
                                      h[i].key.len) == 0)
        {
            stored = &h[i];
        }
    }

    if (vary.nelts == 0) {
        return NGX_OK;
    }

    if (ngx_http_goblin_vary_digest(r, vary.elts, vary.nelts, want)
        == NGX_OK
        && stored && stored->value.len == 32
        && ngx_strncmp(stored->value.data, want, 32) == 0)
    {
        return NGX_OK;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "goblin: \"%V\" is another variant", &ctx->key);

    if (variant) {
        return NGX_ABORT;
    }

    if (ctx->key.len + NGX_HTTP_GOBLIN_VARIANT_KEY_LEN > RING_KEY_MAX) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "goblin: \"%V\" varies and is too long for a variant "
                      "key: passed to the origin", &ctx->key);
        return NGX_ERROR;
    }

    k = ngx_pnalloc(r->pool, ctx->key.len + NGX_HTTP_GOBLIN_VARIANT_KEY_LEN);
    if (k == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(k, ctx->key.data, ctx->key.len);
    *p++ = 0x01;
    p = ngx_sprintf(p, "%016xL", (uint64_t) cqe->meta.cas);
    p = ngx_cpymem(p, want, 16);

    ctx->key.data = k;
    ctx->key.len = p - k;

    return NGX_DECLINED;
}


/*
 * The Goblin-Variant line of a response to be stored with the attributes
 * <attr> (built by attr_build(), RING_ATTR_MAX bytes of room): appended
 * when r->headers_out or <kept> (a 304's stale headers, may be NULL) has
 * Vary.  NGX_DECLINED: Vary: *, which never matches (RFC 9111 4.1), or
 * no room.
 */
ngx_int_t
ngx_http_goblin_vary_attr(ngx_http_request_t *r, ngx_array_t *kept,
    ngx_str_t *attr)
{
    u_char                    *p;
    u_char                     hex[32];
    ngx_uint_t                 i;
    ngx_array_t                vary;
    ngx_http_goblin_headers_t  it;
    ngx_table_elt_t           *h, *v;

    if (ngx_array_init(&vary, r->pool, 2, sizeof(ngx_table_elt_t)) != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_http_goblin_headers_init(&it, &r->headers_out.headers);

    while ((h = ngx_http_goblin_headers_next(&it)) != NULL) {

        if (h->hash && h->key.len == sizeof("Vary") - 1
            && ngx_strncasecmp(h->key.data, (u_char *) "Vary", 4) == 0)
        {
            v = ngx_array_push(&vary);
            if (v == NULL) {
                return NGX_ERROR;
            }

            *v = *h;
        }
    }

    h = kept ? kept->elts : NULL;

    for (i = 0; kept && i < kept->nelts; i++) {
        if (h[i].key.len == sizeof("Vary") - 1
            && ngx_strncasecmp(h[i].key.data, (u_char *) "Vary", 4) == 0)
        {
            v = ngx_array_push(&vary);
            if (v == NULL) {
                return NGX_ERROR;
            }

            *v = h[i];
        }
    }

    if (vary.nelts == 0) {
        return NGX_OK;
    }

    if (ngx_http_goblin_vary_digest(r, vary.elts, vary.nelts, hex) != NGX_OK
        || attr->len + sizeof(NGX_HTTP_GOBLIN_VARIANT ": \r\n") - 1 + 32
           > RING_ATTR_MAX)
    {
        return NGX_DECLINED;
    }

    p = attr->data + attr->len;
    p = ngx_cpymem(p, NGX_HTTP_GOBLIN_VARIANT ": ",
                   sizeof(NGX_HTTP_GOBLIN_VARIANT ": ") - 1);
    p = ngx_cpymem(p, hex, 32);
    *p++ = CR; *p++ = LF;

    attr->len = p - attr->data;

    return NGX_OK;
}


/* The digest of what <r> sent in the headers the <n> Vary lines <vary>
 * name, in hex; NGX_DECLINED for "*" or an empty name list. */
static ngx_int_t
ngx_http_goblin_vary_digest(ngx_http_request_t *r, ngx_table_elt_t *vary,
    ngx_uint_t n, u_char *hex)
{
    u_char      *p, *last, *name, *end;
    u_char       digest[16];
    ngx_md5_t    md5;
    ngx_uint_t   i, names;

    ngx_md5_init(&md5);
    names = 0;

    for (i = 0; i < n; i++) {
        p = vary[i].value.data;
        last = p + vary[i].value.len;

        while (p < last) {
            while (p < last && (*p == ' ' || *p == '\t' || *p == ',')) {
                p++;
            }

            name = p;

            while (p < last && *p != ',' && *p != ' ' && *p != '\t') {
                p++;
            }

            end = p;

            if (end == name) {
                continue;
            }

            if (end - name == 1 && *name == '*') {
                return NGX_DECLINED;
            }

            ngx_http_goblin_vary_value(&md5, r, name, end - name);
            names++;
        }
    }

    if (names == 0) {
        return NGX_DECLINED;
    }

    ngx_md5_final(digest, &md5);
    ngx_hex_dump(hex, digest, 16);

    return NGX_OK;
}


/* "<name>:<value>,<value>\n" into <md5>: the request's lines of the
 * header <name>, as one list without the spaces around its commas and at
 * its ends; "<name>!\n" when it has none. */
static void
ngx_http_goblin_vary_value(ngx_md5_t *md5, ngx_http_request_t *r,
    u_char *name, size_t len)
{
    u_char                    *v, *ve, c, last;
    size_t                     i, seen;
    ngx_uint_t                 space;
    ngx_http_goblin_headers_t  it;
    ngx_table_elt_t           *h;

    for (i = 0; i < len; i++) {
        c = ngx_tolower(name[i]);
        ngx_md5_update(md5, &c, 1);
    }

    seen = 0;
    ngx_http_goblin_headers_init(&it, &r->headers_in.headers);

    while ((h = ngx_http_goblin_headers_next(&it)) != NULL) {

        if (h->key.len != len
            || ngx_strncasecmp(h->key.data, name, len) != 0)
        {
            continue;
        }

        ngx_md5_update(md5, seen++ ? "," : ":", 1);

        last = ',';
        space = 0;

        for (v = h->value.data, ve = v + h->value.len; v < ve; v++) {
            if (*v == ' ' || *v == '\t') {
                space = 1;
                continue;
            }

            if (space && *v != ',' && last != ',') {
                ngx_md5_update(md5, " ", 1);
            }

            space = 0;
            last = *v;
            ngx_md5_update(md5, v, 1);
        }
    }

    ngx_md5_update(md5, seen ? "\n" : "!\n", seen ? 1 : 2);
}
