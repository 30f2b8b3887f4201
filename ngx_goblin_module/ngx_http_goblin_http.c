
/*
 * ngx_http_goblin_module: Range, conditional requests, response header
 * values and key mapping as pure functions (see ngx_http_goblin_http.h);
 * t/unit/test_http.c and t/fuzz/fuzz_http.c check them.
 */


#include "ngx_http_goblin_http.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>


#define NGX_HTTP_GOBLIN_INT64_MAX  INT64_MAX


static const unsigned char *
ngx_http_goblin_skip_spaces(const unsigned char *p, const unsigned char *last)
{
    while (p < last && (*p == ' ' || *p == '\t')) {
        p++;
    }

    return p;
}


/*
 * Digits at *pp into *n; 0 when there are none.  A number past INT64_MAX
 * counts as INT64_MAX: more than any object has, so a first-pos that big
 * is past the end and a last-pos or suffix-length that big takes it all
 * (RFC 9110 14.1.2), never a wrapped value.
 */
static int
ngx_http_goblin_number(const unsigned char **pp, const unsigned char *last,
    int64_t *n)
{
    int64_t               v, cutoff, cutlim;
    const unsigned char  *p;

    p = *pp;
    v = 0;
    cutoff = NGX_HTTP_GOBLIN_INT64_MAX / 10;
    cutlim = NGX_HTTP_GOBLIN_INT64_MAX % 10;

    if (p == last || *p < '0' || *p > '9') {
        return 0;
    }

    for ( /* void */ ; p < last && *p >= '0' && *p <= '9'; p++) {
        if (v >= cutoff && (v > cutoff || *p - '0' > cutlim)) {
            v = NGX_HTTP_GOBLIN_INT64_MAX;
            continue;
        }

        v = v * 10 + (*p - '0');
    }

    *pp = p;
    *n = v;

    return 1;
}


/*
 * A single "bytes=" range of an object of <size> bytes: PART with [*start,
 * *end) inside the object, UNSATISFIABLE, or WHOLE for no, several or
 * malformed ranges (RFC 9110 lets a server ignore those).
 */
int
ngx_http_goblin_range_parse(const unsigned char *v, size_t len, int64_t size,
    int64_t *start, int64_t *end)
{
    int64_t               a, b;
    const unsigned char  *p, *last;
    static const char     bytes[] = "bytes=";
    size_t                i;
    int                   suffix, have_end;

    if (size < 0 || len < sizeof(bytes) - 1) {
        return NGX_HTTP_GOBLIN_RANGE_WHOLE;
    }

    for (i = 0; i < sizeof(bytes) - 1; i++) {
        if (v[i] != bytes[i]
            && !(bytes[i] != '=' && (v[i] | 0x20) == bytes[i]))
        {
            return NGX_HTTP_GOBLIN_RANGE_WHOLE;
        }
    }

    p = ngx_http_goblin_skip_spaces(v + sizeof(bytes) - 1, v + len);
    last = v + len;

    suffix = (p < last && *p == '-');
    if (suffix) {
        p++;
    }

    if (!ngx_http_goblin_number(&p, last, &a)) {
        return NGX_HTTP_GOBLIN_RANGE_WHOLE;
    }

    b = 0;
    have_end = 0;

    if (!suffix) {
        p = ngx_http_goblin_skip_spaces(p, last);

        if (p == last || *p++ != '-') {
            return NGX_HTTP_GOBLIN_RANGE_WHOLE;
        }

        p = ngx_http_goblin_skip_spaces(p, last);

        if (p < last && *p >= '0' && *p <= '9') {
            if (!ngx_http_goblin_number(&p, last, &b)) {
                return NGX_HTTP_GOBLIN_RANGE_WHOLE;
            }

            have_end = 1;
        }
    }

    p = ngx_http_goblin_skip_spaces(p, last);

    if (p != last) {
        /* several ranges, or junk */
        return NGX_HTTP_GOBLIN_RANGE_WHOLE;
    }

    if (suffix) {
        if (a == 0 || size == 0) {
            return NGX_HTTP_GOBLIN_RANGE_UNSATISFIABLE;
        }

        *start = a < size ? size - a : 0;
        *end = size;

        return NGX_HTTP_GOBLIN_RANGE_PART;
    }

    if (have_end && b < a) {
        return NGX_HTTP_GOBLIN_RANGE_WHOLE;
    }

    if (a >= size) {
        return NGX_HTTP_GOBLIN_RANGE_UNSATISFIABLE;
    }

    *start = a;
    *end = (have_end && b < size) ? b + 1 : size;

    return NGX_HTTP_GOBLIN_RANGE_PART;
}


/*
 * If-None-Match <list>: "*" or a comma-separated list of entity tags,
 * compared weakly (a W/ prefix is ignored) with <etag> (quotes included).
 */
int
ngx_http_goblin_etag_match(const unsigned char *list, size_t len,
    const unsigned char *etag, size_t etag_len)
{
    const unsigned char  *p, *last, *tag, *rest;

    p = list;
    last = list + len;

    while (p < last) {
        while (p < last && (*p == ' ' || *p == '\t' || *p == ',')) {
            p++;
        }

        if (p == last) {
            break;
        }

        tag = p;

        if (*p == '*') {
            p++;

        } else {
            if (last - p > 2 && p[0] == 'W' && p[1] == '/') {
                p += 2;
                tag = p;
            }

            if (*p == '"') {
                for (p++; p < last && *p != '"'; p++) { /* void */ }

                if (p == last) {
                    /* no closing quote: no tag */
                    return 0;
                }

                p++;
            }
        }

        /* an element is the tag alone, up to the next comma */
        rest = ngx_http_goblin_skip_spaces(p, last);

        if (rest == last || *rest == ',') {
            if (p - tag == 1 && *tag == '*') {
                return 1;
            }

            if ((size_t) (p - tag) == etag_len && etag_len
                && memcmp(tag, etag, etag_len) == 0)
            {
                return 1;
            }
        }

        while (p < last && *p != ',') {
            p++;
        }
    }

    return 0;
}


/*
 * What a GET or HEAD of the object described by <c> gets: NOT_MODIFIED
 * when If-None-Match matches its ETag, else the Range answer, which is
 * WHOLE when If-Range names another ETag or date (RFC 9110 13.1.5).
 */
int
ngx_http_goblin_conditional(const ngx_http_goblin_cond_t *c, int64_t *start,
    int64_t *end)
{
    if (c->if_none_match
        && ngx_http_goblin_etag_match(c->if_none_match, c->if_none_match_len,
                                      c->etag, c->etag_len))
    {
        return NGX_HTTP_GOBLIN_NOT_MODIFIED;
    }

    if (c->range == NULL) {
        return NGX_HTTP_GOBLIN_RANGE_WHOLE;
    }

    if (c->if_range) {
        if (c->if_range_len >= 2 && c->if_range[c->if_range_len - 1] == '"') {
            if (c->if_range_len != c->etag_len
                || memcmp(c->if_range, c->etag, c->etag_len) != 0)
            {
                return NGX_HTTP_GOBLIN_RANGE_WHOLE;
            }

        } else if (c->if_range_time == -1 || c->if_range_time != c->mtime) {
            return NGX_HTTP_GOBLIN_RANGE_WHOLE;
        }
    }

    return ngx_http_goblin_range_parse(c->range, c->range_len, c->size,
                                       start, end);
}


/*
 * The ETag of an object stored with <cas> in the store <store_id> (the
 * welcome's) into <buf> (ETAG_LEN bytes); returns its length.  The store's
 * identity is new with --fresh and with each start of a store without
 * pools, so an ETag never names two contents, nor one of another node.
 */
size_t
ngx_http_goblin_etag(unsigned char *buf, uint64_t store_id, uint64_t cas)
{
    return (size_t) snprintf((char *) buf, NGX_HTTP_GOBLIN_ETAG_LEN,
                             "\"%016" PRIx64 "-%" PRIx64 "\"", store_id,
                             cas);
}


/*
 * The Content-Range of a <rc> answer (PART: bytes [start, end), else
 * UNSATISFIABLE) of an object of <size> bytes into <buf>
 * (CONTENT_RANGE_LEN bytes); returns its length.
 */
size_t
ngx_http_goblin_content_range(unsigned char *buf, int rc, int64_t start,
    int64_t end, uint64_t size)
{
    if (rc != NGX_HTTP_GOBLIN_RANGE_PART) {
        return (size_t) snprintf((char *) buf,
                                 NGX_HTTP_GOBLIN_CONTENT_RANGE_LEN,
                                 "bytes */%" PRIu64, size);
    }

    return (size_t) snprintf((char *) buf, NGX_HTTP_GOBLIN_CONTENT_RANGE_LEN,
                             "bytes %" PRId64 "-%" PRId64 "/%" PRIu64,
                             start, end - 1, size);
}


/* The extension of <key>'s last path segment (what follows its last dot)
 * in *exten, or NULL and 0: what nginx's types {} map to a type. */
void
ngx_http_goblin_key_exten(const unsigned char *key, size_t len,
    const unsigned char **exten, size_t *exten_len)
{
    const unsigned char  *p, *last;

    *exten = NULL;
    *exten_len = 0;

    last = key + len;

    for (p = last; p > key && p[-1] != '/'; p--) {
        if (p[-1] == '.') {
            *exten = p;
            *exten_len = (size_t) (last - p);
            return;
        }
    }
}


/*
 * The key of <uri> in a location <prefix> (prefix_len 0: none to strip):
 * the URI after the prefix when the URI starts with it, else all of it.
 * Returns whether the key is valid (ngx_http_goblin_key_valid()).
 */
int
ngx_http_goblin_key_map(const unsigned char *uri, size_t len,
    const unsigned char *prefix, size_t prefix_len, size_t max,
    const unsigned char **key, size_t *key_len)
{
    *key = uri;
    *key_len = len;

    if (prefix_len && len >= prefix_len
        && memcmp(uri, prefix, prefix_len) == 0)
    {
        *key = uri + prefix_len;
        *key_len = len - prefix_len;
    }

    return ngx_http_goblin_key_valid(*key, *key_len, max);
}


/* 1 to <max> bytes, none of them a space or a control character. */
int
ngx_http_goblin_key_valid(const unsigned char *key, size_t len, size_t max)
{
    size_t  i;

    if (len == 0 || len > max) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        if (key[i] <= ' ' || key[i] == 0x7f) {
            return 0;
        }
    }

    return 1;
}
