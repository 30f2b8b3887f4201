
/*
 * ngx_http_goblin_module: an object's attributes, the HTTP metadata the
 * daemon keeps with it as opaque bytes (at most RING_ATTR_MAX):
 *
 *     "GA1 <status> <received>\r\n"
 *     *( "<Header-Name>: <value>\r\n" )
 *
 * <status> is three digits, <received> the unix time the response (or
 * PUT) arrived.  Built from a response's (or a PUT's) headers, parsed
 * back from a LOOKUP's rx buffer and replayed into r->headers_out.  A
 * stored blob is not trusted: a name that is not a token, a value with a
 * control character (no CR/LF injection) and a header nginx makes itself
 * (Content-Length, Server, ...) are skipped on the way back, as are lines
 * that are no header at all.
 */


#include "ngx_http_goblin_module.h"


#define NGX_HTTP_GOBLIN_ATTR_MAGIC  "GA1 "


static ngx_int_t ngx_http_goblin_attr_content_type(ngx_http_request_t *r,
    ngx_str_t *value);
static u_char *ngx_http_goblin_attr_time(u_char *p, u_char *last, time_t *t);
static u_char *ngx_http_goblin_attr_first_line(u_char *p, u_char *last,
    ngx_http_goblin_attr_t *a);
static ngx_int_t ngx_http_goblin_attr_line(ngx_http_request_t *r, u_char *p,
    u_char *eol, ngx_http_goblin_attr_t *a);
static ngx_int_t ngx_http_goblin_attr_add(u_char **p, u_char *end,
    ngx_str_t *key, ngx_str_t *value);
static ngx_int_t ngx_http_goblin_attr_age(ngx_http_request_t *r,
    ngx_http_goblin_attr_t *a);
static ngx_uint_t ngx_http_goblin_attr_kept(ngx_str_t *key);
static ngx_uint_t ngx_http_goblin_attr_listed(ngx_str_t *names,
    ngx_str_t *key);
static ngx_uint_t ngx_http_goblin_attr_name_valid(u_char *p, size_t len);
static ngx_uint_t ngx_http_goblin_attr_value_valid(u_char *p, size_t len);


/* response headers a cache does not store (RFC 9111 3.1), besides those
 * nginx makes itself; Content-Type is stored from its own slot */
static ngx_str_t  ngx_http_goblin_attr_unstored_names[] = {
    ngx_string("content-type"),
    ngx_string("date"),                 /* from its own slot too */
    ngx_string("set-cookie"),
    ngx_string("proxy-authenticate"),
    ngx_string("proxy-authentication-info"),
    ngx_string("proxy-connection"),
    ngx_null_string
};


/* headers nginx makes for every response: never taken from a blob */
static ngx_str_t  ngx_http_goblin_attr_framing_names[] = {
    ngx_string("content-length"),
    ngx_string("content-range"),
    ngx_string("transfer-encoding"),
    ngx_string("connection"),
    ngx_string("keep-alive"),
    ngx_string("upgrade"),
    ngx_string("trailer"),
    ngx_string("te"),
    ngx_string("server"),
    ngx_string("accept-ranges"),
    ngx_string("goblin-variant"),       /* NGX_HTTP_GOBLIN_VARIANT: ours */
    ngx_string("age"),                  /* made from <received> */
    ngx_null_string
};


ngx_int_t
ngx_http_goblin_attr_build(ngx_http_request_t *r, ngx_uint_t status,
    time_t received, time_t fresh, ngx_array_t *extra, ngx_str_t *out)
{
    u_char                    *p, *end, *lm;
    ngx_str_t                  key, value;
    ngx_uint_t                 i, last_modified;
    ngx_http_goblin_headers_t  it;
    ngx_table_elt_t           *h;

    if (status < 100 || status > 999) {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      "goblin: attributes of status %ui", status);
        return NGX_ERROR;
    }

    out->data = ngx_pnalloc(r->pool, RING_ATTR_MAX);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    p = out->data;
    end = p + RING_ATTR_MAX;

    p = ngx_sprintf(p, NGX_HTTP_GOBLIN_ATTR_MAGIC "%03ui %T", status,
                    received);

    if (fresh) {
        p = ngx_sprintf(p, " %T", fresh);
    }

    *p++ = CR;
    *p++ = LF;

    if (r->headers_out.content_type.len) {
        ngx_str_set(&key, "Content-Type");

        if (ngx_http_goblin_attr_content_type(r, &value) != NGX_OK) {
            return NGX_ERROR;
        }

        if (ngx_http_goblin_attr_add(&p, end, &key, &value) != NGX_OK) {
            return NGX_DECLINED;
        }
    }

    last_modified = 0;

    ngx_http_goblin_headers_init(&it, &r->headers_out.headers);

    while ((h = ngx_http_goblin_headers_next(&it)) != NULL) {

        if (h->hash == 0 || !ngx_http_goblin_attr_kept(&h->key)) {
            continue;
        }

        if (h->key.len == sizeof("Last-Modified") - 1
            && ngx_strncasecmp(h->key.data, (u_char *) "Last-Modified",
                               h->key.len) == 0)
        {
            last_modified = 1;
        }

        if (ngx_http_goblin_attr_add(&p, end, &h->key, &h->value)
            != NGX_OK)
        {
            return NGX_DECLINED;
        }
    }

    /* a Last-Modified nginx would make from last_modified_time alone */

    if (!last_modified && r->headers_out.last_modified == NULL
        && r->headers_out.last_modified_time != -1)
    {
        lm = ngx_pnalloc(r->pool, sizeof("Mon, 28 Sep 1970 06:00:00 GMT"));
        if (lm == NULL) {
            return NGX_ERROR;
        }

        ngx_str_set(&key, "Last-Modified");
        value.data = lm;
        value.len = ngx_http_time(lm, r->headers_out.last_modified_time) - lm;

        if (ngx_http_goblin_attr_add(&p, end, &key, &value) != NGX_OK) {
            return NGX_DECLINED;
        }
    }

    if (extra) {
        h = extra->elts;

        for (i = 0; i < extra->nelts; i++) {
            if (ngx_http_goblin_attr_add(&p, end, &h[i].key, &h[i].value)
                != NGX_OK)
            {
                return NGX_DECLINED;
            }
        }
    }

    out->len = p - out->data;

    return NGX_OK;
}


/* The response's Content-Type, with the charset nginx would add to it. */
static ngx_int_t
ngx_http_goblin_attr_content_type(ngx_http_request_t *r, ngx_str_t *value)
{
    u_char  *p;

    *value = r->headers_out.content_type;

    if (r->headers_out.content_type_len != r->headers_out.content_type.len
        || r->headers_out.charset.len == 0)
    {
        return NGX_OK;
    }

    value->len = r->headers_out.content_type.len + sizeof("; charset=") - 1
                 + r->headers_out.charset.len;
    value->data = ngx_pnalloc(r->pool, value->len);
    if (value->data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(value->data, r->headers_out.content_type.data,
                   r->headers_out.content_type.len);
    p = ngx_cpymem(p, "; charset=", sizeof("; charset=") - 1);
    ngx_memcpy(p, r->headers_out.charset.data, r->headers_out.charset.len);

    return NGX_OK;
}


/* Appends "<key>: <value>\r\n" at *<p>; a header that could not be read
 * back (bad name, control characters in the value) is left out. */
static ngx_int_t
ngx_http_goblin_attr_add(u_char **p, u_char *end, ngx_str_t *key,
    ngx_str_t *value)
{
    if (!ngx_http_goblin_attr_name_valid(key->data, key->len)
        || !ngx_http_goblin_attr_value_valid(value->data, value->len))
    {
        return NGX_OK;
    }

    if ((size_t) (end - *p) < key->len + sizeof(": ") - 1 + value->len + 2) {
        return NGX_DECLINED;
    }

    *p = ngx_cpymem(*p, key->data, key->len);
    *(*p)++ = ':'; *(*p)++ = ' ';
    *p = ngx_cpymem(*p, value->data, value->len);
    *(*p)++ = CR; *(*p)++ = LF;

    return NGX_OK;
}


/* Whether a response header <key> is stored: every end-to-end one but
 * those nginx makes and those a cache must not keep. */
static ngx_uint_t
ngx_http_goblin_attr_kept(ngx_str_t *key)
{
    return !ngx_http_goblin_attr_listed(ngx_http_goblin_attr_framing_names,
                                        key)
           && !ngx_http_goblin_attr_listed(
                  ngx_http_goblin_attr_unstored_names, key);
}


/* Whether <key> is in <names> (lowercase), case aside. */
static ngx_uint_t
ngx_http_goblin_attr_listed(ngx_str_t *names, ngx_str_t *key)
{
    ngx_str_t  *n;

    for (n = names; n->len; n++) {
        if (n->len == key->len
            && ngx_strncasecmp(n->data, key->data, key->len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* An RFC 9110 token. */
static ngx_uint_t
ngx_http_goblin_attr_name_valid(u_char *p, size_t len)
{
    u_char  *last;

    if (len == 0) {
        return 0;
    }

    for (last = p + len; p < last; p++) {
        if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z')
            || (*p >= 'A' && *p <= 'Z'))
        {
            continue;
        }

        if (ngx_strchr("!#$%&'*+-.^_`|~", *p) == NULL || *p == '\0') {
            return 0;
        }
    }

    return 1;
}


/* Visible characters, spaces and tabs (and obs-text); no CR, LF, NUL. */
static ngx_uint_t
ngx_http_goblin_attr_value_valid(u_char *p, size_t len)
{
    u_char  *last;

    for (last = p + len; p < last; p++) {
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f) {
            return 0;
        }
    }

    return 1;
}


/* the request headers a PUT stores */
static ngx_str_t  ngx_http_goblin_attr_put_names[] = {
    ngx_string("Content-Type"),
    ngx_string("Content-Encoding"),
    ngx_string("Content-Language"),
    ngx_string("Content-Disposition"),
    ngx_string("Cache-Control"),
    ngx_string("Expires"),
    ngx_null_string
};


ngx_int_t
ngx_http_goblin_attr_request(ngx_http_request_t *r, ngx_str_t *out)
{
    ngx_str_t                 *n;
    ngx_array_t                extra;
    ngx_http_goblin_headers_t  it;
    ngx_table_elt_t           *h, *e;

    out->len = 0;

    if (ngx_array_init(&extra, r->pool, 4, sizeof(ngx_table_elt_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_http_goblin_headers_init(&it, &r->headers_in.headers);

    while ((h = ngx_http_goblin_headers_next(&it)) != NULL) {

        for (n = ngx_http_goblin_attr_put_names; n->len; n++) {
            if (n->len == h->key.len
                && ngx_strncasecmp(n->data, h->key.data, n->len) == 0)
            {
                e = ngx_array_push(&extra);
                if (e == NULL) {
                    return NGX_ERROR;
                }

                /* the name as the module spells it */
                *e = *h;
                e->key = *n;
                break;
            }
        }
    }

    if (extra.nelts == 0) {
        return NGX_OK;
    }

    return ngx_http_goblin_attr_build(r, NGX_HTTP_OK, ngx_time(), 0, &extra,
                                      out);
}


ngx_int_t
ngx_http_goblin_attr_times(u_char *p, size_t len, time_t *received,
    time_t *fresh)
{
    ngx_http_goblin_attr_t  a;

    if (len > RING_ATTR_MAX
        || ngx_http_goblin_attr_first_line(p, p + len, &a) == NULL)
    {
        return NGX_ERROR;
    }

    *received = a.received;
    *fresh = a.fresh;

    return NGX_OK;
}


ngx_int_t
ngx_http_goblin_attr_found(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    ngx_int_t                rc;
    ngx_http_request_t      *r;
    ngx_http_goblin_attr_t   a;

    r = ctx->request;

    if (cqe->buf == RING_NO_BUF) {
        return NGX_OK;
    }

    rc = ngx_http_goblin_attr_parse(r,
                                    (u_char *) ring_rx_buf(&ctx->map->ring,
                                                           cqe->buf),
                                    cqe->meta.attr_len, &a);

    /* parsed into r->pool: the buffer goes back now */
    ngx_http_goblin_submit_handle(ctx, RING_OP_BUFREL, cqe->buf, 0, 0);

    if (rc != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "goblin: \"%V\" has malformed attributes", &ctx->key);
        return NGX_DECLINED;
    }

    return ngx_http_goblin_attr_replay(r, &a);
}


ngx_int_t
ngx_http_goblin_attr_parse(ngx_http_request_t *r, u_char *p, size_t len,
    ngx_http_goblin_attr_t *a)
{
    u_char     *last, *eol;
    ngx_int_t   rc;

    last = p + len;

    if (len > RING_ATTR_MAX) {
        goto malformed;
    }

    p = ngx_http_goblin_attr_first_line(p, last, a);
    if (p == NULL) {
        goto malformed;
    }

    if (ngx_array_init(&a->headers, r->pool, 8, sizeof(ngx_table_elt_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    while (p < last) {

        for (eol = p; eol + 1 < last; eol++) {
            if (eol[0] == CR && eol[1] == LF) {
                break;
            }
        }

        if (eol + 1 >= last) {
            /* the last line has no CRLF: cut short */
            goto malformed;
        }

        rc = ngx_http_goblin_attr_line(r, p, eol, a);

        if (rc == NGX_ERROR) {
            return NGX_ERROR;
        }

        if (rc == NGX_DECLINED) {
            ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                          "goblin: skipped a stored attribute line of %uz "
                          "bytes", (size_t) (eol - p));
        }

        p = eol + 2;
    }

    return NGX_OK;

malformed:

    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                  "goblin: malformed attributes (%uz bytes)", len);

    return NGX_ERROR;
}


/* "GA1 <status> <received>\r\n" at <p> into <a>; what follows it, or
 * NULL. */
/* The digits at <p> as a time into <t>: past them, or NULL on overflow. */
static u_char *
ngx_http_goblin_attr_time(u_char *p, u_char *last, time_t *t)
{
    for (*t = 0; p < last && *p >= '0' && *p <= '9'; p++) {
        if (*t > (NGX_MAX_TIME_T_VALUE - (*p - '0')) / 10) {
            return NULL;
        }

        *t = *t * 10 + (*p - '0');
    }

    return p;
}


static u_char *
ngx_http_goblin_attr_first_line(u_char *p, u_char *last,
    ngx_http_goblin_attr_t *a)
{
    u_char      *v;
    time_t       received, fresh;
    ngx_uint_t   status, i;

    if ((size_t) (last - p) < sizeof("GA1 200 0\r\n") - 1
        || ngx_strncmp(p, NGX_HTTP_GOBLIN_ATTR_MAGIC,
                       sizeof(NGX_HTTP_GOBLIN_ATTR_MAGIC) - 1) != 0)
    {
        return NULL;
    }

    p += sizeof(NGX_HTTP_GOBLIN_ATTR_MAGIC) - 1;

    status = 0;

    for (i = 0; i < 3; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return NULL;
        }

        status = status * 10 + (p[i] - '0');
    }

    p += 3;

    if (status < 100 || *p++ != ' ' || p == last) {
        return NULL;
    }

    v = p;
    p = ngx_http_goblin_attr_time(p, last, &received);

    if (p == NULL || p == v) {
        return NULL;
    }

    fresh = 0;

    if (p < last && *p == ' ') {
        v = ++p;
        p = ngx_http_goblin_attr_time(p, last, &fresh);

        if (p == NULL || p == v) {
            return NULL;
        }
    }

    if (last - p < 2 || p[0] != CR || p[1] != LF) {
        return NULL;
    }

    a->status = status;
    a->received = received;
    a->fresh = fresh;

    return p + 2;
}


/* The header line [<p>, <eol>) into a->headers; NGX_DECLINED when it is
 * none (skipped). */
static ngx_int_t
ngx_http_goblin_attr_line(ngx_http_request_t *r, u_char *p, u_char *eol,
    ngx_http_goblin_attr_t *a)
{
    u_char           *colon, *v, *ve;
    ngx_table_elt_t  *h;

    colon = ngx_strlchr(p, eol, ':');

    if (colon == NULL || !ngx_http_goblin_attr_name_valid(p, colon - p)) {
        return NGX_DECLINED;
    }

    for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++) {
        /* void */
    }

    for (ve = eol; ve > v && (ve[-1] == ' ' || ve[-1] == '\t'); ve--) {
        /* void */
    }

    if (!ngx_http_goblin_attr_value_valid(v, ve - v)) {
        return NGX_DECLINED;
    }

    h = ngx_array_push(&a->headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->key.len = colon - p;
    h->key.data = ngx_pnalloc(r->pool, h->key.len * 2 + (ve - v) + 1);
    if (h->key.data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(h->key.data, p, h->key.len);
    h->lowcase_key = h->key.data + h->key.len;
    ngx_strlow(h->lowcase_key, h->key.data, h->key.len);
    h->hash = ngx_hash_key(h->lowcase_key, h->key.len);

    h->value.len = ve - v;
    h->value.data = h->lowcase_key + h->key.len;
    ngx_memcpy(h->value.data, v, h->value.len);
    h->value.data[h->value.len] = '\0';

    return NGX_OK;
}


ngx_int_t
ngx_http_goblin_attr_replay(ngx_http_request_t *r, ngx_http_goblin_attr_t *a)
{
    size_t            n;
    ngx_str_t         lk;
    ngx_uint_t        i;
    ngx_table_elt_t  *src, *h, **cc;

    src = a->headers.elts;

    for (i = 0; i < a->headers.nelts; i++) {

        lk.data = src[i].lowcase_key;
        lk.len = src[i].key.len;

        if (ngx_http_goblin_attr_listed(ngx_http_goblin_attr_framing_names,
                                        &lk))
        {
            continue;
        }

        if (lk.len == sizeof("content-type") - 1
            && ngx_strncmp(lk.data, "content-type", lk.len) == 0)
        {
            if (src[i].value.len == 0) {
                continue;
            }

            r->headers_out.content_type = src[i].value;
            r->headers_out.content_type_lowcase = NULL;
            r->headers_out.content_type_hash = 0;

            /* the type alone: nginx adds no charset to one with params */
            for (n = 0; n < src[i].value.len; n++) {
                if (src[i].value.data[n] == ';'
                    || src[i].value.data[n] == ' ')
                {
                    break;
                }
            }

            r->headers_out.content_type_len = n;
            continue;
        }

        if (lk.len == sizeof("date") - 1
            && ngx_strncmp(lk.data, "date", lk.len) == 0
            && ngx_parse_http_time(src[i].value.data, src[i].value.len)
               == NGX_ERROR)
        {
            continue;       /* nginx makes one */
        }

        h = ngx_list_push(&r->headers_out.headers);
        if (h == NULL) {
            return NGX_ERROR;
        }

        *h = src[i];
        h->hash = 1;

        switch (lk.len) {

        case sizeof("etag") - 1:
            if (ngx_strncmp(lk.data, "etag", lk.len) == 0) {
                r->headers_out.etag = h;
            } else if (ngx_strncmp(lk.data, "date", lk.len) == 0) {
                r->headers_out.date = h;
            }
            break;

        case sizeof("expires") - 1:
            if (ngx_strncmp(lk.data, "expires", lk.len) == 0) {
                r->headers_out.expires = h;
            }
            break;

        case sizeof("last-modified") - 1:
            if (ngx_strncmp(lk.data, "last-modified", lk.len) == 0) {
                r->headers_out.last_modified = h;
                r->headers_out.last_modified_time =
                    ngx_parse_http_time(h->value.data, h->value.len);
            } else if (ngx_strncmp(lk.data, "cache-control", lk.len) == 0) {
                if (r->headers_out.cache_control.elts == NULL
                    && ngx_array_init(&r->headers_out.cache_control,
                                      r->pool, 1, sizeof(ngx_table_elt_t *))
                       != NGX_OK)
                {
                    return NGX_ERROR;
                }

                cc = ngx_array_push(&r->headers_out.cache_control);
                if (cc == NULL) {
                    return NGX_ERROR;
                }

                *cc = h;
            }
            break;

        case sizeof("content-encoding") - 1:
            if (ngx_strncmp(lk.data, "content-encoding", lk.len) == 0) {
                r->headers_out.content_encoding = h;
            }
            break;
        }
    }

    return ngx_http_goblin_attr_age(r, a);
}


/* In cache mode: Age, the seconds since the response was received, the
 * Age it came with included (RFC 9111 5.1). */
static ngx_int_t
ngx_http_goblin_attr_age(ngx_http_request_t *r, ngx_http_goblin_attr_t *a)
{
    time_t                       age;
    ngx_table_elt_t             *h;
    ngx_http_goblin_loc_conf_t  *glcf;

    glcf = ngx_http_get_module_loc_conf(r, ngx_http_goblin_module);

    if (!glcf->cache) {
        return NGX_OK;
    }

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->value.data = ngx_pnalloc(r->pool, NGX_TIME_T_LEN);
    if (h->value.data == NULL) {
        return NGX_ERROR;
    }

    age = ngx_time() - a->received;

    h->hash = 1;
    ngx_str_set(&h->key, "Age");
    h->value.len = ngx_sprintf(h->value.data, "%T", ngx_max(age, 0))
                   - h->value.data;

    return NGX_OK;
}
