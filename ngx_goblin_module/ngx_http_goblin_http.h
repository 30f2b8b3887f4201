
/*
 * ngx_http_goblin_module: the pure parts of the HTTP side (plain C, no
 * nginx headers), so that they can be unit-tested and fuzzed without
 * nginx: the Range header, If-None-Match and the key of a URI.
 */


#ifndef _NGX_HTTP_GOBLIN_HTTP_H_INCLUDED_
#define _NGX_HTTP_GOBLIN_HTTP_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/* ngx_http_goblin_range_parse() results */
#define NGX_HTTP_GOBLIN_RANGE_WHOLE          0  /* none usable: all of it */
#define NGX_HTTP_GOBLIN_RANGE_PART           1  /* [*start, *end) */
#define NGX_HTTP_GOBLIN_RANGE_UNSATISFIABLE  2  /* 416 */


int ngx_http_goblin_range_parse(const unsigned char *v, size_t len,
    int64_t size, int64_t *start, int64_t *end);
int ngx_http_goblin_etag_match(const unsigned char *list, size_t len,
    const unsigned char *etag, size_t etag_len);
int ngx_http_goblin_key_map(const unsigned char *uri, size_t len,
    const unsigned char *prefix, size_t prefix_len, size_t max,
    const unsigned char **key, size_t *key_len);
int ngx_http_goblin_key_valid(const unsigned char *key, size_t len,
    size_t max);


#endif /* _NGX_HTTP_GOBLIN_HTTP_H_INCLUDED_ */
