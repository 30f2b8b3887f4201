
/*
 * ngx_http_goblin_module: the pure parts of the HTTP side (plain C, no
 * nginx headers), so that they can be unit-tested and fuzzed without
 * nginx: the Range header, conditional requests (If-None-Match, If-Range),
 * conditional writes (If-Match, If-None-Match, If-Unmodified-Since on PUT
 * and DELETE), the ETag and Content-Range values, the key of a URI, and
 * how long a response stays fresh (Cache-Control, Expires, Age).
 */


#ifndef _NGX_HTTP_GOBLIN_HTTP_H_INCLUDED_
#define _NGX_HTTP_GOBLIN_HTTP_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/* ngx_http_goblin_range_parse() and ngx_http_goblin_conditional() results */
#define NGX_HTTP_GOBLIN_RANGE_WHOLE          0  /* none usable: all of it */
#define NGX_HTTP_GOBLIN_RANGE_PART           1  /* [*start, *end) */
#define NGX_HTTP_GOBLIN_RANGE_UNSATISFIABLE  2  /* 416 */
#define NGX_HTTP_GOBLIN_NOT_MODIFIED         3  /* 304 */

/* ngx_http_goblin_write_plan() and ngx_http_goblin_write_check() results:
 * how a PUT or DELETE goes on */
#define NGX_HTTP_GOBLIN_WRITE_ANY            0  /* unconditionally */
#define NGX_HTTP_GOBLIN_WRITE_ABSENT         1  /* only if the key has none */
#define NGX_HTTP_GOBLIN_WRITE_PRESENT        2  /* only if it has one */
#define NGX_HTTP_GOBLIN_WRITE_CAS            3  /* only if its CAS is *cas */
#define NGX_HTTP_GOBLIN_WRITE_LOOKUP         4  /* the current object decides:
                                                   write_check() */
#define NGX_HTTP_GOBLIN_WRITE_FAILED         5  /* 412 */

/* ngx_http_goblin_key_valid() results */
#define NGX_HTTP_GOBLIN_KEY_OK               0
#define NGX_HTTP_GOBLIN_KEY_EMPTY            1  /* 400 */
#define NGX_HTTP_GOBLIN_KEY_LONG             2  /* 414 */
#define NGX_HTTP_GOBLIN_KEY_CONTROL          3  /* 400: NUL, CR, LF, ... */

/* buffer sizes, the terminating NUL included */
#define NGX_HTTP_GOBLIN_ETAG_LEN                                              \
    sizeof("\"ffffffffffffffff-ffffffffffffffff\"")
#define NGX_HTTP_GOBLIN_CONTENT_RANGE_LEN                                     \
    sizeof("bytes -9223372036854775808--9223372036854775808/"                 \
           "18446744073709551615")


/* A GET or HEAD of a found object: the request's conditional headers
 * (NULL: absent) and the object's validators. */
typedef struct {
    const unsigned char  *if_none_match;
    size_t                if_none_match_len;
    const unsigned char  *range;        /* NULL as well in a subrequest */
    size_t                range_len;
    const unsigned char  *if_range;
    size_t                if_range_len;
    int64_t               if_range_time; /* If-Range as a date, or -1 */
    const unsigned char  *etag;
    size_t                etag_len;
    int64_t               mtime;
    int64_t               size;
} ngx_http_goblin_cond_t;


/* A response's or a request's Cache-Control as a shared cache reads it
 * (RFC 9111 5.2, RFC 5861's stale-if-error and stale-while-revalidate);
 * the numbers -1 when absent,
 * 0 when malformed (stale). */
typedef struct {
    int64_t               max_age;
    int64_t               s_maxage;
    int64_t               min_fresh;
    int64_t               stale_if_error;
    int64_t               stale_while_revalidate;
    unsigned              no_store:1;
    unsigned              no_cache:1;
    unsigned              private:1;
    unsigned              public:1;
    unsigned              must_revalidate:1;
    unsigned              proxy_revalidate:1;
    unsigned              only_if_cached:1;
} ngx_http_goblin_cc_t;

/* ngx_http_goblin_lifetime()'s <expires> when there is no Expires */
#define NGX_HTTP_GOBLIN_NO_EXPIRES           INT64_MIN
/* the most delta-seconds a cache needs to count (RFC 9111 1.2.2) */
#define NGX_HTTP_GOBLIN_DELTA_MAX            2147483648LL


/* A PUT's or DELETE's preconditions (NULL: absent) in the store
 * <store_id>. */
typedef struct {
    const unsigned char  *if_match;
    size_t                if_match_len;
    const unsigned char  *if_none_match;
    size_t                if_none_match_len;
    int64_t               if_unmodified_since; /* a date, or -1 */
    uint64_t              store_id;
} ngx_http_goblin_wcond_t;


int ngx_http_goblin_range_parse(const unsigned char *v, size_t len,
    int64_t size, int64_t *start, int64_t *end);
int ngx_http_goblin_etag_match(const unsigned char *list, size_t len,
    const unsigned char *etag, size_t etag_len);
int ngx_http_goblin_etag_match_strong(const unsigned char *list, size_t len,
    const unsigned char *etag, size_t etag_len);
int ngx_http_goblin_etag_cas(const unsigned char *tag, size_t len,
    uint64_t store_id, uint64_t *cas);
int ngx_http_goblin_write_plan(const ngx_http_goblin_wcond_t *c,
    uint64_t *cas);
int ngx_http_goblin_write_check(const ngx_http_goblin_wcond_t *c,
    int present, uint64_t cas, int64_t mtime);
int ngx_http_goblin_conditional(const ngx_http_goblin_cond_t *c,
    int64_t *start, int64_t *end);
size_t ngx_http_goblin_etag(unsigned char *buf, uint64_t store_id,
    uint64_t cas);
size_t ngx_http_goblin_content_range(unsigned char *buf, int rc,
    int64_t start, int64_t end, uint64_t size);
void ngx_http_goblin_key_exten(const unsigned char *key, size_t len,
    const unsigned char **exten, size_t *exten_len);
int ngx_http_goblin_key_map(const unsigned char *uri, size_t len,
    const unsigned char *prefix, size_t prefix_len, size_t max,
    const unsigned char **key, size_t *key_len, size_t *bad);
void ngx_http_goblin_cc_parse(const unsigned char *v, size_t len,
    ngx_http_goblin_cc_t *cc);
int64_t ngx_http_goblin_delta(const unsigned char *v, size_t len);
int64_t ngx_http_goblin_age(const unsigned char *v, size_t len);
void ngx_http_goblin_cc_init(ngx_http_goblin_cc_t *cc);
int ngx_http_goblin_cc_authorized(const ngx_http_goblin_cc_t *cc);
int ngx_http_goblin_cc_stale_ok(const ngx_http_goblin_cc_t *cc);
int ngx_http_goblin_cc_satisfies(const ngx_http_goblin_cc_t *req,
    int64_t age, int64_t left);
int64_t ngx_http_goblin_lifetime(const ngx_http_goblin_cc_t *cc,
    int64_t expires, int64_t date, int64_t age, int64_t valid);
int ngx_http_goblin_key_valid(const unsigned char *key, size_t len,
    size_t max, size_t *bad);
long ngx_http_goblin_location_path(const unsigned char *value, size_t len,
    const unsigned char *host, size_t host_len, unsigned char *buf,
    size_t *target, size_t *target_len);


#endif /* _NGX_HTTP_GOBLIN_HTTP_H_INCLUDED_ */
