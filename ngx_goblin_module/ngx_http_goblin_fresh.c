
/*
 * ngx_http_goblin_module: how long a response stays fresh in a shared
 * cache (RFC 9111 4.2: Cache-Control, Expires, Age) as pure functions (see
 * ngx_http_goblin_http.h); t/unit/test_http.c and t/fuzz/fuzz_http.c
 * check them.
 */


#include "ngx_http_goblin_http.h"

#include <string.h>


/*
 * delta-seconds (RFC 9111 1.2.2) of <v>,<len>: digits alone, at most
 * NGX_HTTP_GOBLIN_DELTA_MAX; -1 when it is anything else.
 */
int64_t
ngx_http_goblin_delta(const unsigned char *v, size_t len)
{
    size_t   i;
    int64_t  n;

    if (len == 0) {
        return -1;
    }

    n = 0;

    for (i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9') {
            return -1;
        }

        if (n < NGX_HTTP_GOBLIN_DELTA_MAX) {
            n = n * 10 + (v[i] - '0');
        }
    }

    return n > NGX_HTTP_GOBLIN_DELTA_MAX ? NGX_HTTP_GOBLIN_DELTA_MAX : n;
}


/*
 * An Age value <v>,<len> (RFC 9111 5.1): of a list, its first member, its
 * spaces aside; -1 when that is not delta-seconds (the response is then
 * to be taken as stale).
 */
int64_t
ngx_http_goblin_age(const unsigned char *v, size_t len)
{
    size_t  end;

    for (end = 0; end < len && v[end] != ','; end++) {
        /* the first member */
    }

    while (end && (v[end - 1] == ' ' || v[end - 1] == '\t')) {
        end--;
    }

    while (end && (*v == ' ' || *v == '\t')) {
        v++;
        end--;
    }

    return ngx_http_goblin_delta(v, end);
}


static const unsigned char *
ngx_http_goblin_cc_space(const unsigned char *p, const unsigned char *last)
{
    while (p < last && (*p == ' ' || *p == '\t')) {
        p++;
    }

    return p;
}


/* Whether the directive <name>,<len> is the lowercase <lit>. */
static int
ngx_http_goblin_cc_is(const unsigned char *name, size_t len, const char *lit)
{
    size_t  i;

    if (len != strlen(lit)) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        if ((name[i] | 0x20) != (unsigned char) lit[i]) {
            return 0;
        }
    }

    return 1;
}


/* A max-age or s-maxage of <v>,<len> into *<to>: malformed is 0 (stale,
 * RFC 9111 4.2.1), a repeated one keeps the smaller. */
static void
ngx_http_goblin_cc_delta(const unsigned char *v, size_t len, int64_t *to)
{
    int64_t  n;

    n = v ? ngx_http_goblin_delta(v, len) : -1;

    if (n < 0) {
        n = 0;
    }

    if (*to < 0 || n < *to) {
        *to = n;
    }
}


/* <cc> before the first Cache-Control value: nothing said. */
void
ngx_http_goblin_cc_init(ngx_http_goblin_cc_t *cc)
{
    memset(cc, 0, sizeof(ngx_http_goblin_cc_t));
    cc->max_age = -1;
    cc->s_maxage = -1;
    cc->min_fresh = -1;
    cc->stale_if_error = -1;
    cc->stale_while_revalidate = -1;
}


/*
 * Adds the directives of one Cache-Control value <v>,<len> to <cc> (set
 * by ngx_http_goblin_cc_init() before the first): a list of
 * token [ "=" ( token / quoted-string ) ], names in any case.  no-cache
 * and private with field names count as without.
 */
void
ngx_http_goblin_cc_parse(const unsigned char *v, size_t len,
    ngx_http_goblin_cc_t *cc)
{
    size_t                name_len, value_len;
    const unsigned char  *p, *last, *name, *value;

    p = v;
    last = v + len;

    while (p < last) {

        while (p < last && (*p == ',' || *p == ' ' || *p == '\t')) {
            p++;
        }

        name = p;

        while (p < last && *p != ',' && *p != '=' && *p != ' '
               && *p != '\t')
        {
            p++;
        }

        name_len = (size_t) (p - name);
        value = NULL;
        value_len = 0;

        p = ngx_http_goblin_cc_space(p, last);

        if (p < last && *p == '=') {
            p = ngx_http_goblin_cc_space(p + 1, last);

            if (p < last && *p == '"') {
                value = ++p;

                while (p < last && *p != '"') {
                    p += (*p == '\\' && p + 1 < last) ? 2 : 1;
                }

                value_len = (size_t) (p - value);

            } else {
                value = p;

                while (p < last && *p != ',' && *p != ' ' && *p != '\t') {
                    p++;
                }

                value_len = (size_t) (p - value);
            }
        }

        /* anything else up to the next directive is no part of this one */
        while (p < last && *p != ',') {
            p++;
        }

        if (ngx_http_goblin_cc_is(name, name_len, "max-age")) {
            ngx_http_goblin_cc_delta(value, value_len, &cc->max_age);

        } else if (ngx_http_goblin_cc_is(name, name_len, "s-maxage")) {
            ngx_http_goblin_cc_delta(value, value_len, &cc->s_maxage);

        } else if (ngx_http_goblin_cc_is(name, name_len, "min-fresh")) {
            ngx_http_goblin_cc_delta(value, value_len, &cc->min_fresh);

        } else if (ngx_http_goblin_cc_is(name, name_len, "stale-if-error")) {
            ngx_http_goblin_cc_delta(value, value_len, &cc->stale_if_error);

        } else if (ngx_http_goblin_cc_is(name, name_len,
                                         "stale-while-revalidate"))
        {
            ngx_http_goblin_cc_delta(value, value_len,
                                     &cc->stale_while_revalidate);

        } else if (ngx_http_goblin_cc_is(name, name_len, "only-if-cached")) {
            cc->only_if_cached = 1;

        } else if (ngx_http_goblin_cc_is(name, name_len, "no-store")) {
            cc->no_store = 1;

        } else if (ngx_http_goblin_cc_is(name, name_len, "no-cache")) {
            cc->no_cache = 1;

        } else if (ngx_http_goblin_cc_is(name, name_len, "private")) {
            cc->private = 1;

        } else if (ngx_http_goblin_cc_is(name, name_len, "public")) {
            cc->public = 1;

        } else if (ngx_http_goblin_cc_is(name, name_len, "must-revalidate")) {
            cc->must_revalidate = 1;

        } else if (ngx_http_goblin_cc_is(name, name_len,
                                         "proxy-revalidate"))
        {
            cc->proxy_revalidate = 1;
        }
    }
}


/*
 * How many more seconds a response dated <date> stays fresh in a shared
 * cache (RFC 9111 4.2.1): s-maxage, else max-age, else <expires> (unix
 * time; 0 for a malformed one, which is in the past;
 * NGX_HTTP_GOBLIN_NO_EXPIRES for none) less <date> (its Date, else when it
 * was received), else <valid> (the
 * configured lifetime of a response that says nothing), less the <age>
 * it already had.  0 when it must not be stored: no-store, private,
 * no-cache (it would need revalidation on every use), or no time left.
 */
int64_t
ngx_http_goblin_lifetime(const ngx_http_goblin_cc_t *cc, int64_t expires,
    int64_t date, int64_t age, int64_t valid)
{
    int64_t  lifetime;

    if (cc->no_store || cc->private || cc->no_cache) {
        return 0;
    }

    if (cc->s_maxage >= 0) {
        lifetime = cc->s_maxage;

    } else if (cc->max_age >= 0) {
        lifetime = cc->max_age;

    } else if (expires != NGX_HTTP_GOBLIN_NO_EXPIRES) {
        lifetime = expires > date ? expires - date : 0;

    } else {
        lifetime = valid;
    }

    if (lifetime > NGX_HTTP_GOBLIN_DELTA_MAX) {
        lifetime = NGX_HTTP_GOBLIN_DELTA_MAX;
    }

    if (age < 0) {
        age = 0;
    }

    return lifetime > age ? lifetime - age : 0;
}


/*
 * Whether a shared cache may store a response to a request that carried
 * Authorization: only when the response says so with public, s-maxage or
 * must-revalidate (RFC 9111 3.5).
 */
int
ngx_http_goblin_cc_authorized(const ngx_http_goblin_cc_t *cc)
{
    return cc->public || cc->must_revalidate || cc->s_maxage >= 0;
}


/*
 * Whether a shared cache may serve the response stale (stale-if-error,
 * stale-while-revalidate): not with no-cache, must-revalidate,
 * proxy-revalidate, or s-maxage, which has proxy-revalidate's meaning for
 * a shared cache (RFC 9111 4.2.4, 5.2.2.2, 5.2.2.8, 5.2.2.10).
 */
int
ngx_http_goblin_cc_stale_ok(const ngx_http_goblin_cc_t *cc)
{
    return !cc->no_cache && !cc->must_revalidate && !cc->proxy_revalidate
           && cc->s_maxage < 0;
}


/*
 * Whether a stored response <age> seconds old with <left> seconds of
 * freshness may answer a request whose Cache-Control is <req> (RFC 9111
 * 5.2.1): not with no-cache (nor Pragma: no-cache, which the caller
 * counts as it), not older than its max-age, not with less left than its
 * min-fresh.  max-stale asks for nothing here: nothing stale is stored.
 */
int
ngx_http_goblin_cc_satisfies(const ngx_http_goblin_cc_t *req, int64_t age,
    int64_t left)
{
    if (req->no_cache) {
        return 0;
    }

    if (req->max_age >= 0 && age > req->max_age) {
        return 0;
    }

    return req->min_fresh < 0 || left >= req->min_fresh;
}
