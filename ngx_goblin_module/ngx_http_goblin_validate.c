
/*
 * ngx_http_goblin_module: cache mode, a response's headers as stored
 * (RFC 9111 3.1: not those its Connection header lists; its Date kept),
 * and revalidating a stale object (RFC 9111 4.3): its validators (ETag,
 * Last-Modified) make its fill's request conditional, and a 304 keeps the
 * headers it does not replace.
 */


#include "ngx_http_goblin_cache.h"


/* The validators of the stale object whose attributes are <old> (its
 * ETag, its Last-Modified) as the fill request <fr>'s If-None-Match and
 * If-Modified-Since (RFC 9111 4.3.1); <r>'s pool holds the parse. */
ngx_int_t
ngx_http_goblin_validate_request(ngx_http_request_t *r, ngx_http_request_t *fr,
    ngx_str_t *old)
{
    ngx_uint_t               i;
    ngx_table_elt_t         *h, *nh;
    ngx_http_goblin_attr_t   a;

    if (ngx_http_goblin_attr_parse(r, old->data, old->len, &a) != NGX_OK) {
        return NGX_OK;      /* none: the fill asks for the whole object */
    }

    h = a.headers.elts;

    for (i = 0; i < a.headers.nelts; i++) {

        if (h[i].key.len == sizeof("ETag") - 1
            && ngx_strncmp(h[i].lowcase_key, "etag", h[i].key.len) == 0)
        {
            nh = ngx_list_push(&fr->headers_in.headers);
            if (nh == NULL) {
                return NGX_ERROR;
            }

            ngx_str_set(&nh->key, "If-None-Match");
            nh->lowcase_key = (u_char *) "if-none-match";

        } else if (h[i].key.len == sizeof("Last-Modified") - 1
                   && ngx_strncmp(h[i].lowcase_key, "last-modified",
                                  h[i].key.len) == 0)
        {
            nh = ngx_list_push(&fr->headers_in.headers);
            if (nh == NULL) {
                return NGX_ERROR;
            }

            ngx_str_set(&nh->key, "If-Modified-Since");
            nh->lowcase_key = (u_char *) "if-modified-since";

        } else {
            continue;
        }

        nh->hash = ngx_hash_key(nh->lowcase_key, nh->key.len);
        nh->value.len = h[i].value.len;
        nh->value.data = ngx_pstrdup(fr->pool, &h[i].value);
        if (nh->value.data == NULL) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* The headers of a stale object's attributes <old> that the 304 in
 * r->headers_out does not replace (RFC 9111 4.3.4); NULL when there is no
 * memory or they do not parse. */
ngx_array_t *
ngx_http_goblin_validate_kept(ngx_http_request_t *r, ngx_str_t *old)
{
    ngx_uint_t                 j;
    ngx_http_goblin_headers_t  it;
    ngx_array_t               *kept;
    ngx_table_elt_t           *h, *o, *k;
    ngx_http_goblin_attr_t     a;

    if (ngx_http_goblin_attr_parse(r, old->data, old->len, &a) != NGX_OK)
    {
        return NULL;
    }

    kept = ngx_array_create(r->pool, a.headers.nelts + 1,
                            sizeof(ngx_table_elt_t));
    if (kept == NULL) {
        return NULL;
    }

    o = a.headers.elts;

    for (j = 0; j < a.headers.nelts; j++) {

        if (o[j].key.len == sizeof("Content-Type") - 1
            && ngx_strncmp(o[j].lowcase_key, "content-type", o[j].key.len)
               == 0
            && r->headers_out.content_type.len)
        {
            continue;
        }

        if (o[j].key.len == sizeof("Date") - 1
            && ngx_strncmp(o[j].lowcase_key, "date", o[j].key.len) == 0)
        {
            continue;       /* the 304's own (validate_stored()) */
        }

        if (o[j].key.len == sizeof(NGX_HTTP_GOBLIN_VARIANT) - 1
            && ngx_strncasecmp(o[j].key.data,
                               (u_char *) NGX_HTTP_GOBLIN_VARIANT,
                               o[j].key.len) == 0)
        {
            continue;       /* made anew for the 304 (vary_attr()) */
        }

        ngx_http_goblin_headers_init(&it, &r->headers_out.headers);

        while ((h = ngx_http_goblin_headers_next(&it)) != NULL) {

            if (h->hash && h->key.len == o[j].key.len
                && ngx_strncasecmp(h->key.data, o[j].key.data,
                                   o[j].key.len) == 0)
            {
                break;
            }
        }

        if (h != NULL) {
            continue;       /* the 304 has its own */
        }

        k = ngx_array_push(kept);
        if (k == NULL) {
            return NULL;
        }

        *k = o[j];
    }

    return kept;
}


static ngx_uint_t ngx_http_goblin_validate_listed(ngx_str_t *list,
    ngx_str_t *name);


ngx_int_t
ngx_http_goblin_validate_stored(ngx_http_request_t *r, ngx_array_t *extra,
    time_t *date)
{
    u_char                    *p;
    ngx_str_t                  value;
    ngx_table_elt_t           *h, *d;
    ngx_http_upstream_t       *u;
    ngx_http_goblin_headers_t  it, out;

    *date = ngx_time();
    ngx_str_set(&value, "");

    u = r->upstream;

    if (u) {
        ngx_http_goblin_headers_init(&it, &u->headers_in.headers);

        while ((h = ngx_http_goblin_headers_next(&it)) != NULL) {

            if (h->key.len != sizeof("Connection") - 1
                || ngx_strncasecmp(h->key.data, (u_char *) "Connection",
                                   h->key.len) != 0)
            {
                continue;
            }

            ngx_http_goblin_headers_init(&out, &r->headers_out.headers);

            while ((d = ngx_http_goblin_headers_next(&out)) != NULL) {
                if (ngx_http_goblin_validate_listed(&h->value, &d->key)) {
                    d->hash = 0;
                }
            }
        }

        if (u->headers_in.date
            && ngx_parse_http_time(u->headers_in.date->value.data,
                                   u->headers_in.date->value.len)
               != NGX_ERROR)
        {
            value = u->headers_in.date->value;
            *date = ngx_parse_http_time(value.data, value.len);
        }
    }

    if (value.len == 0) {
        p = ngx_pnalloc(r->pool, sizeof("Mon, 28 Sep 1970 06:00:00 GMT"));
        if (p == NULL) {
            return NGX_ERROR;
        }

        value.data = p;
        value.len = ngx_http_time(p, *date) - p;
    }

    d = ngx_array_push(extra);
    if (d == NULL) {
        return NGX_ERROR;
    }

    ngx_memzero(d, sizeof(ngx_table_elt_t));
    d->hash = 1;
    ngx_str_set(&d->key, "Date");
    d->value = value;

    return NGX_OK;
}


/* Whether the comma-separated <list> names <name>, case aside. */
static ngx_uint_t
ngx_http_goblin_validate_listed(ngx_str_t *list, ngx_str_t *name)
{
    u_char  *p, *last, *start;

    p = list->data;
    last = p + list->len;

    while (p < last) {

        while (p < last && (*p == ' ' || *p == '\t' || *p == ',')) {
            p++;
        }

        start = p;

        while (p < last && *p != ',' && *p != ' ' && *p != '\t') {
            p++;
        }

        if ((size_t) (p - start) == name->len && name->len
            && ngx_strncasecmp(start, name->data, name->len) == 0)
        {
            return 1;
        }
    }

    return 0;
}
