
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
 * <list>: "*" or a comma-separated list of entity tags, compared with
 * <etag> (quotes included): <weak>ly (a W/ prefix is ignored) or strongly
 * (a W/ tag matches nothing).
 */
static int
ngx_http_goblin_etag_list(const unsigned char *list, size_t len,
    const unsigned char *etag, size_t etag_len, int weak)
{
    int                   is_weak;
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
        is_weak = 0;

        if (*p == '*') {
            p++;

        } else {
            if (last - p > 2 && p[0] == 'W' && p[1] == '/') {
                p += 2;
                tag = p;
                is_weak = 1;
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
                && (weak || !is_weak)
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


/* If-None-Match <list> against <etag>: weak comparison (RFC 9110 13.1.2). */
int
ngx_http_goblin_etag_match(const unsigned char *list, size_t len,
    const unsigned char *etag, size_t etag_len)
{
    return ngx_http_goblin_etag_list(list, len, etag, etag_len, 1);
}


/* If-Match <list> against <etag>: strong comparison (RFC 9110 13.1.1). */
int
ngx_http_goblin_etag_match_strong(const unsigned char *list, size_t len,
    const unsigned char *etag, size_t etag_len)
{
    return ngx_http_goblin_etag_list(list, len, etag, etag_len, 0);
}


/*
 * Whether the entity tag <tag> (quotes included, no W/) is one this store
 * <store_id> made (ngx_http_goblin_etag()); its CAS in *cas.
 */
int
ngx_http_goblin_etag_cas(const unsigned char *tag, size_t len,
    uint64_t store_id, uint64_t *cas)
{
    size_t    i;
    uint64_t  id, v;
    int       d;

    /* "<16 hex>-<1 to 16 hex>" */
    if (len < 1 + 16 + 1 + 1 + 1 || len > 1 + 16 + 1 + 16 + 1
        || tag[0] != '"' || tag[len - 1] != '"' || tag[17] != '-')
    {
        return 0;
    }

    id = 0;
    v = 0;

    for (i = 1; i < len - 1; i++) {
        if (i == 17) {
            continue;
        }

        if (tag[i] >= '0' && tag[i] <= '9') {
            d = tag[i] - '0';

        } else if (tag[i] >= 'a' && tag[i] <= 'f') {
            d = tag[i] - 'a' + 10;

        } else {
            return 0;
        }

        if (i < 17) {
            id = id << 4 | (uint64_t) d;

        } else {
            v = v << 4 | (uint64_t) d;
        }
    }

    if (id != store_id) {
        return 0;
    }

    /* only the form ngx_http_goblin_etag() writes: no leading zero */
    if (len - 1 - 18 > 1 && tag[18] == '0') {
        return 0;
    }

    *cas = v;

    return 1;
}


/*
 * The single entity tag of <list>, if that is all it holds (no "*", no
 * W/), as its start and length; 0 otherwise.
 */
static int
ngx_http_goblin_etag_single(const unsigned char *list, size_t len,
    const unsigned char **tag, size_t *tag_len)
{
    const unsigned char  *p, *last, *q;

    p = ngx_http_goblin_skip_spaces(list, list + len);
    last = list + len;

    while (last > p && (last[-1] == ' ' || last[-1] == '\t')) {
        last--;
    }

    if (last - p < 2 || *p != '"' || last[-1] != '"') {
        return 0;
    }

    for (q = p + 1; q < last - 1; q++) {
        if (*q == '"') {
            return 0;
        }
    }

    *tag = p;
    *tag_len = (size_t) (last - p);

    return 1;
}


static int
ngx_http_goblin_is_star(const unsigned char *v, size_t len)
{
    const unsigned char  *p, *last;

    p = ngx_http_goblin_skip_spaces(v, v + len);
    last = v + len;

    while (last > p && (last[-1] == ' ' || last[-1] == '\t')) {
        last--;
    }

    return last - p == 1 && *p == '*';
}


/*
 * How a PUT or DELETE with the preconditions <c> goes on, before anything
 * is known of the key's object: ANY, ABSENT (If-None-Match: *), PRESENT
 * (If-Match: *), CAS (If-Match: one ETag of this store, its CAS in *cas),
 * FAILED (If-Match names no ETag this store made: none can match), or
 * LOOKUP (lists, If-Unmodified-Since: write_check() on the object).
 */
int
ngx_http_goblin_write_plan(const ngx_http_goblin_wcond_t *c, uint64_t *cas)
{
    size_t                n;
    const unsigned char  *tag, *p, *last;
    uint64_t              v;
    int                   ours;

    if (c->if_match) {
        if (c->if_none_match == NULL
            && ngx_http_goblin_is_star(c->if_match, c->if_match_len))
        {
            return NGX_HTTP_GOBLIN_WRITE_PRESENT;
        }

        if (c->if_none_match == NULL
            && ngx_http_goblin_etag_single(c->if_match, c->if_match_len,
                                           &tag, &n))
        {
            if (!ngx_http_goblin_etag_cas(tag, n, c->store_id, cas)) {
                return NGX_HTTP_GOBLIN_WRITE_FAILED;
            }

            return NGX_HTTP_GOBLIN_WRITE_CAS;
        }

        /* a list: it can match only with a "*" or a strong tag of ours */

        ours = 0;
        p = c->if_match;
        last = p + c->if_match_len;

        while (p < last) {
            while (p < last && (*p == ' ' || *p == '\t' || *p == ',')) {
                p++;
            }

            tag = p;

            while (p < last && *p != ',') {
                p++;
            }

            n = (size_t) (p - tag);

            while (n && (tag[n - 1] == ' ' || tag[n - 1] == '\t')) {
                n--;
            }

            if ((n == 1 && *tag == '*')
                || ngx_http_goblin_etag_cas(tag, n, c->store_id, &v))
            {
                ours = 1;
            }
        }

        return ours ? NGX_HTTP_GOBLIN_WRITE_LOOKUP
                    : NGX_HTTP_GOBLIN_WRITE_FAILED;
    }

    if (c->if_none_match && c->if_unmodified_since == -1
        && ngx_http_goblin_is_star(c->if_none_match, c->if_none_match_len))
    {
        return NGX_HTTP_GOBLIN_WRITE_ABSENT;
    }

    if (c->if_none_match || c->if_unmodified_since != -1) {
        return NGX_HTTP_GOBLIN_WRITE_LOOKUP;
    }

    return NGX_HTTP_GOBLIN_WRITE_ANY;
}


/*
 * The preconditions <c> against the key's object as a LOOKUP found it
 * (<present>, its <cas> and <mtime>), in RFC 9110 13.2.2's order: FAILED,
 * or how the write goes on so that it takes effect only on that state:
 * CAS (that object) or ABSENT (still none).
 */
int
ngx_http_goblin_write_check(const ngx_http_goblin_wcond_t *c, int present,
    uint64_t cas, int64_t mtime)
{
    size_t         n;
    unsigned char  etag[NGX_HTTP_GOBLIN_ETAG_LEN];

    n = present ? ngx_http_goblin_etag(etag, c->store_id, cas) : 0;

    if (c->if_match) {
        if (!present
            || !ngx_http_goblin_etag_match_strong(c->if_match,
                                                  c->if_match_len, etag, n))
        {
            return NGX_HTTP_GOBLIN_WRITE_FAILED;
        }

    } else if (c->if_unmodified_since != -1) {
        if (present && mtime > c->if_unmodified_since) {
            return NGX_HTTP_GOBLIN_WRITE_FAILED;
        }
    }

    if (c->if_none_match && present
        && ngx_http_goblin_etag_match(c->if_none_match, c->if_none_match_len,
                                      etag, n))
    {
        return NGX_HTTP_GOBLIN_WRITE_FAILED;
    }

    return present ? NGX_HTTP_GOBLIN_WRITE_CAS : NGX_HTTP_GOBLIN_WRITE_ABSENT;
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
 * Returns ngx_http_goblin_key_valid()'s answer, the offset of a bad byte
 * in *bad.
 */
int
ngx_http_goblin_key_map(const unsigned char *uri, size_t len,
    const unsigned char *prefix, size_t prefix_len, size_t max,
    const unsigned char **key, size_t *key_len, size_t *bad)
{
    *key = uri;
    *key_len = len;

    if (prefix_len && len >= prefix_len
        && memcmp(uri, prefix, prefix_len) == 0)
    {
        *key = uri + prefix_len;
        *key_len = len - prefix_len;
    }

    return ngx_http_goblin_key_valid(*key, *key_len, max, bad);
}


/*
 * Whether <key> is one the store can carry: KEY_OK for 1 to <max> bytes
 * none of which is a control character (NUL, CR, LF, ... DEL: the ring
 * takes any byte, but such a key could never be named again, by memcache
 * or in a log line); a space is fine (a%20b).  KEY_EMPTY, KEY_LONG, or
 * KEY_CONTROL with the offset of the first such byte in *bad.
 */
int
ngx_http_goblin_key_valid(const unsigned char *key, size_t len, size_t max,
    size_t *bad)
{
    size_t  i;

    if (len == 0) {
        return NGX_HTTP_GOBLIN_KEY_EMPTY;
    }

    if (len > max) {
        return NGX_HTTP_GOBLIN_KEY_LONG;
    }

    for (i = 0; i < len; i++) {
        if (key[i] < ' ' || key[i] == 0x7f) {
            *bad = i;
            return NGX_HTTP_GOBLIN_KEY_CONTROL;
        }
    }

    return NGX_HTTP_GOBLIN_KEY_OK;
}


static int
ngx_http_goblin_hex(unsigned char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }

    c |= 0x20;

    return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}


/* Whether <n> bytes at <a> and <b> are equal, ASCII case aside. */
static int
ngx_http_goblin_caseeq(const unsigned char *a, const unsigned char *b,
    size_t n)
{
    size_t         i;
    unsigned char  ca, cb;

    for (i = 0; i < n; i++) {
        ca = (a[i] >= 'A' && a[i] <= 'Z') ? (a[i] | 0x20) : a[i];
        cb = (b[i] >= 'A' && b[i] <= 'Z') ? (b[i] | 0x20) : b[i];

        if (ca != cb) {
            return 0;
        }
    }

    return 1;
}


/*
 * The path on this server that a Location or Content-Location <value>
 * names (RFC 9111 4.4): an absolute path, or an http or https URI (or a
 * network-path reference) whose authority is <host>, ASCII case aside.
 * The path is percent-decoded into <buf> (<len> + 1 bytes at least), and
 * *<target> set to where the request target (path and query, as sent; it
 * starts with '/' unless the path is empty) begins in <value>,
 * *<target_len> to its length.  Returns the path's length, or -1: another
 * host, a relative path, a bad escape, or a path nginx would have
 * normalized ("//", a "." or ".." segment), which no request's key is.
 */
long
ngx_http_goblin_location_path(const unsigned char *value, size_t len,
    const unsigned char *host, size_t host_len, unsigned char *buf,
    size_t *target, size_t *target_len)
{
    int                   hi, lo;
    size_t                n, skip;
    const unsigned char  *p, *end, *auth, *q;

    p = value;
    end = value + len;
    skip = 0;

    if (len >= 7 && ngx_http_goblin_caseeq(p, (const unsigned char *)
                                           "http://", 7))
    {
        skip = 5;

    } else if (len >= 8 && ngx_http_goblin_caseeq(p, (const unsigned char *)
                                                  "https://", 8))
    {
        skip = 6;

    } else if (len >= 2 && p[0] == '/' && p[1] == '/') {
        skip = 0;

    } else if (len == 0 || p[0] != '/') {
        return -1;
    }

    if (skip || (len >= 2 && p[1] == '/')) {
        auth = p + skip + 2;
        for (p = auth; p < end && *p != '/' && *p != '?' && *p != '#'; p++) {
            /* the authority */
        }

        if ((size_t) (p - auth) != host_len
            || !ngx_http_goblin_caseeq(auth, host, host_len))
        {
            return -1;
        }
    }

    *target = (size_t) (p - value);

    for (q = p; q < end && *q != '#'; q++) {
        /* the query stays in the target */
    }

    *target_len = (size_t) (q - p);

    n = 0;
    buf[n++] = '/';

    if (p < end && *p == '/') {
        p++;
    }

    for (; p < end && *p != '?' && *p != '#'; p++) {
        if (*p != '%') {
            buf[n++] = *p;
            continue;
        }

        if (end - p < 3 || (hi = ngx_http_goblin_hex(p[1])) < 0
            || (lo = ngx_http_goblin_hex(p[2])) < 0)
        {
            return -1;
        }

        buf[n++] = (unsigned char) (hi << 4 | lo);
        p += 2;
    }

    for (p = buf; p < buf + n; p++) {
        /* every segment starts after a '/': none empty, "." or ".." */
        if (*p == '/'
            && ((p + 1 < buf + n && p[1] == '/')
                || (p + 1 < buf + n && p[1] == '.'
                    && (p + 2 == buf + n || p[2] == '/'
                        || (p[2] == '.' && (p + 3 == buf + n
                                            || p[3] == '/'))))))
        {
            return -1;
        }
    }

    return (long) n;
}
