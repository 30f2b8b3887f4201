
/*
 * ngx_http_goblin_upstream_module: several nodes behind one nginx, the key
 * on the node a memcache client puts it on.
 *
 *   upstream nodes {
 *       goblin_hash $goblin_key ketama port=11211;
 *       server 10.0.0.1:8080;
 *       server 10.0.0.2:8080;
 *   }
 *
 * The ring is the one the memcache clients build from the same hosts at
 * <port> (each server's own port when none is given): "ketama" is
 * libmemcached's weighted ketama (MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, as
 * pylibmc's ketama_weighted and memcached's tools with it: four points
 * from each MD5 of "host:port-i", ":port" left out for 11211, 160 points
 * per server at equal weights, the key's MD5); "crc32" is
 * Cache::Memcached::Fast's with ketama_points => 160 (nginx's own hash
 * consistent: CRC32 of "host\0port" chained, 160 points per weight, the
 * key's CRC32).  A key goes to the server of the first point at or past
 * its hash; when that server is down or failed (max_fails, fail_timeout,
 * proxy_next_upstream), to the next point's other server: the node a
 * client that drops the failed one from its ring would pick.
 *
 * $goblin_key is the key a goblin location here would store the request
 * under: the decoded URI after the location's prefix.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
#include <ngx_md5.h>

#include "ngx_http_goblin_module.h"
#include "ngx_http_goblin_http.h"


#define NGX_HTTP_GOBLIN_KETAMA  0
#define NGX_HTTP_GOBLIN_CRC32   1

#define NGX_HTTP_GOBLIN_POINTS  160       /* per server, equal weights */
#define NGX_HTTP_GOBLIN_MC_PORT 11211     /* libmemcached leaves it out */


typedef struct {
    uint32_t                         hash;
    ngx_uint_t                       peer;
} ngx_http_goblin_point_t;


typedef struct {
    ngx_http_complex_value_t        *key;
    ngx_uint_t                       method;
    ngx_uint_t                       port;        /* 0: each server's */
    ngx_uint_t                       npoints;
    ngx_http_goblin_point_t         *points;
} ngx_http_goblin_upstream_conf_t;


typedef struct {
    ngx_http_upstream_rr_peer_data_t  rrp;        /* first: rr's free */
    ngx_http_goblin_upstream_conf_t  *conf;
    ngx_uint_t                        point;
} ngx_http_goblin_upstream_data_t;


static ngx_int_t ngx_http_goblin_upstream_init(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_goblin_upstream_ring(ngx_conf_t *cf,
    ngx_http_goblin_upstream_conf_t *ucf, ngx_http_upstream_rr_peers_t *rr);
static ngx_int_t ngx_http_goblin_upstream_points(ngx_conf_t *cf,
    ngx_http_goblin_upstream_conf_t *ucf, ngx_array_t *ring,
    ngx_http_upstream_rr_peer_t *peer, ngx_uint_t index, ngx_uint_t total,
    ngx_uint_t n);
static int ngx_libc_cdecl ngx_http_goblin_upstream_cmp(const void *one,
    const void *two);
static ngx_int_t ngx_http_goblin_upstream_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_goblin_upstream_get_peer(ngx_peer_connection_t *pc,
    void *data);
static uint32_t ngx_http_goblin_upstream_md5(u_char *p, size_t len,
    ngx_uint_t x);
static void *ngx_http_goblin_upstream_create_conf(ngx_conf_t *cf);
static char *ngx_http_goblin_hash(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_goblin_upstream_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_http_goblin_key_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


static ngx_command_t  ngx_http_goblin_upstream_commands[] = {

    { ngx_string("goblin_hash"),
      NGX_HTTP_UPS_CONF|NGX_CONF_TAKE23,
      ngx_http_goblin_hash,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_goblin_upstream_module_ctx = {
    ngx_http_goblin_upstream_add_variables,  /* preconfiguration */
    NULL,                                    /* postconfiguration */

    NULL,                                    /* create main configuration */
    NULL,                                    /* init main configuration */

    ngx_http_goblin_upstream_create_conf,    /* create server configuration */
    NULL,                                    /* merge server configuration */

    NULL,                                    /* create location configuration */
    NULL                                     /* merge location configuration */
};


ngx_module_t  ngx_http_goblin_upstream_module = {
    NGX_MODULE_V1,
    &ngx_http_goblin_upstream_module_ctx,    /* module context */
    ngx_http_goblin_upstream_commands,       /* module directives */
    NGX_HTTP_MODULE,                         /* module type */
    NULL,                                    /* init master */
    NULL,                                    /* init module */
    NULL,                                    /* init process */
    NULL,                                    /* init thread */
    NULL,                                    /* exit thread */
    NULL,                                    /* exit process */
    NULL,                                    /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_str_t  ngx_http_goblin_key_name = ngx_string("goblin_key");


static ngx_int_t
ngx_http_goblin_upstream_init(ngx_conf_t *cf, ngx_http_upstream_srv_conf_t *us)
{
    ngx_http_goblin_upstream_conf_t  *ucf;

    if (ngx_http_upstream_init_round_robin(cf, us) != NGX_OK) {
        return NGX_ERROR;
    }

    us->peer.init = ngx_http_goblin_upstream_init_peer;

    ucf = ngx_http_conf_upstream_srv_conf(us, ngx_http_goblin_upstream_module);

    return ngx_http_goblin_upstream_ring(cf, ucf, us->peer.data);
}


/* The ring of the servers' points, sorted by hash. */
static ngx_int_t
ngx_http_goblin_upstream_ring(ngx_conf_t *cf,
    ngx_http_goblin_upstream_conf_t *ucf, ngx_http_upstream_rr_peers_t *rr)
{
    ngx_uint_t                    i, n, total;
    ngx_array_t                   ring;
    ngx_http_upstream_rr_peer_t  *peer;

    if (rr->next) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "goblin_hash takes no \"backup\" servers: a "
                           "failed node's keys go to the ring's next node");
        return NGX_ERROR;
    }

    n = 0;
    total = 0;

    for (peer = rr->peer; peer; peer = peer->next) {
        n++;
        total += peer->weight;
    }

    if (ngx_array_init(&ring, cf->pool, n * NGX_HTTP_GOBLIN_POINTS,
                       sizeof(ngx_http_goblin_point_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    for (i = 0, peer = rr->peer; peer; peer = peer->next, i++) {
        if (ngx_http_goblin_upstream_points(cf, ucf, &ring, peer, i, total, n)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    ngx_qsort(ring.elts, ring.nelts, sizeof(ngx_http_goblin_point_t),
              ngx_http_goblin_upstream_cmp);

    ucf->points = ring.elts;
    ucf->npoints = ring.nelts;

    return NGX_OK;
}


/* <peer>'s points (it is server <index> of <n>, weights summing to
 * <total>) onto <ring>: its host and port as written (or ucf->port). */
static ngx_int_t
ngx_http_goblin_upstream_points(ngx_conf_t *cf,
    ngx_http_goblin_upstream_conf_t *ucf, ngx_array_t *ring,
    ngx_http_upstream_rr_peer_t *peer, ngx_uint_t index, ngx_uint_t total,
    ngx_uint_t n)
{
    u_char                    *host, *p, *last;
    u_char                     buf[NGX_SOCKADDR_STRLEN + NGX_INT_T_LEN * 2];
    size_t                     host_len;
    float                      share;
    uint32_t                   hash, base, prev;
    ngx_uint_t                 i, x, port, count;
    ngx_str_t                 *server;
    ngx_http_goblin_point_t   *pt;

    server = &peer->server;
    host = server->data;
    last = server->data + server->len;

    for (p = last; p > host && p[-1] >= '0' && p[-1] <= '9'; p--) {
        /* void */
    }

    if (p == last || p == host || p[-1] != ':'
        || server->data[0] == '[' || ngx_strlchr(host, p - 1, ':') != NULL
        || server->len >= sizeof(buf) - NGX_INT_T_LEN * 2)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "goblin_hash needs each server as IPv4-address:"
                           "port or name:port, not \"%V\"", server);
        return NGX_ERROR;
    }

    host_len = p - 1 - host;
    port = ucf->port ? ucf->port
                     : (ngx_uint_t) ngx_atoi(p, last - p);

    if (ucf->method == NGX_HTTP_GOBLIN_CRC32) {
        /* Cache::Memcached::Fast: crc32(host \0 port prev), chained */
        p = ngx_cpymem(buf, host, host_len);
        *p++ = '\0';
        p = ngx_sprintf(p, "%ui", port);

        ngx_crc32_init(base);
        ngx_crc32_update(&base, buf, p - buf);

        count = peer->weight * NGX_HTTP_GOBLIN_POINTS;
        prev = 0;

        for (i = 0; i < count; i++) {
            hash = base;
            buf[0] = (u_char) (prev & 0xff);
            buf[1] = (u_char) ((prev >> 8) & 0xff);
            buf[2] = (u_char) ((prev >> 16) & 0xff);
            buf[3] = (u_char) ((prev >> 24) & 0xff);
            ngx_crc32_update(&hash, buf, 4);
            ngx_crc32_final(hash);

            pt = ngx_array_push(ring);
            if (pt == NULL) {
                return NGX_ERROR;
            }

            pt->hash = hash;
            pt->peer = index;
            prev = hash;
        }

        return NGX_OK;
    }

    /* libmemcached's weighted ketama, its float arithmetic as it is (a
     * cast floors: the value is positive) */
    share = (float) peer->weight / (float) total;
    count = (ngx_uint_t) (share * NGX_HTTP_GOBLIN_POINTS / 4 * (float) n
                          + 0.0000000001F) * 4;

    for (i = 0; i < count / 4; i++) {
        if (port == NGX_HTTP_GOBLIN_MC_PORT) {
            p = ngx_sprintf(buf, "%*s-%ui", host_len, host, i);

        } else {
            p = ngx_sprintf(buf, "%*s:%ui-%ui", host_len, host, port, i);
        }

        for (x = 0; x < 4; x++) {
            pt = ngx_array_push(ring);
            if (pt == NULL) {
                return NGX_ERROR;
            }

            pt->hash = ngx_http_goblin_upstream_md5(buf, p - buf, x);
            pt->peer = index;
        }
    }

    return NGX_OK;
}


static int ngx_libc_cdecl
ngx_http_goblin_upstream_cmp(const void *one, const void *two)
{
    const ngx_http_goblin_point_t  *a = one, *b = two;

    return a->hash < b->hash ? -1 : a->hash > b->hash ? 1 : 0;
}


/* The <x>th little-endian 32 bits of the MD5 of <p>. */
static uint32_t
ngx_http_goblin_upstream_md5(u_char *p, size_t len, ngx_uint_t x)
{
    u_char     d[16];
    ngx_md5_t  md5;

    ngx_md5_init(&md5);
    ngx_md5_update(&md5, p, len);
    ngx_md5_final(d, &md5);

    return ((uint32_t) d[3 + x * 4] << 24) | ((uint32_t) d[2 + x * 4] << 16)
           | ((uint32_t) d[1 + x * 4] << 8) | d[x * 4];
}


static ngx_int_t
ngx_http_goblin_upstream_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us)
{
    uint32_t                          hash;
    ngx_str_t                         key;
    ngx_uint_t                        lo, hi, mid;
    ngx_http_goblin_upstream_conf_t  *ucf;
    ngx_http_goblin_upstream_data_t  *gp;

    ucf = ngx_http_conf_upstream_srv_conf(us, ngx_http_goblin_upstream_module);

    gp = ngx_palloc(r->pool, sizeof(ngx_http_goblin_upstream_data_t));
    if (gp == NULL) {
        return NGX_ERROR;
    }

    r->upstream->peer.data = &gp->rrp;

    if (ngx_http_upstream_init_round_robin_peer(r, us) != NGX_OK) {
        return NGX_ERROR;
    }

    r->upstream->peer.get = ngx_http_goblin_upstream_get_peer;

    if (ngx_http_complex_value(r, ucf->key, &key) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ucf->method == NGX_HTTP_GOBLIN_CRC32) {
        hash = ngx_crc32_long(key.data, key.len);

    } else {
        hash = ngx_http_goblin_upstream_md5(key.data, key.len, 0);
    }

    /* the first point at or past the hash, wrapping to the first */

    lo = 0;
    hi = ucf->npoints;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;

        if (ucf->points[mid].hash < hash) {
            lo = mid + 1;

        } else {
            hi = mid;
        }
    }

    gp->conf = ucf;
    gp->point = (ucf->npoints && lo < ucf->npoints) ? lo : 0;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "goblin_hash \"%V\": %uD, point %ui", &key, hash,
                   gp->point);

    return NGX_OK;
}


/* The server of the first point from gp->point on that is usable and not
 * tried for this request yet. */
static ngx_int_t
ngx_http_goblin_upstream_get_peer(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_goblin_upstream_data_t  *gp = data;

    time_t                            now;
    uintptr_t                         m;
    ngx_uint_t                        i, k, n, idx;
    ngx_http_upstream_rr_peer_t      *peer;
    ngx_http_goblin_upstream_conf_t  *ucf;

    ucf = gp->conf;
    now = ngx_time();

    pc->cached = 0;
    pc->connection = NULL;

    ngx_http_upstream_rr_peers_wlock(gp->rrp.peers);

    peer = NULL;
    idx = 0;

    for (i = 0; i < ucf->npoints; i++) {
        idx = ucf->points[(gp->point + i) % ucf->npoints].peer;

        n = idx / (8 * sizeof(uintptr_t));
        m = (uintptr_t) 1 << idx % (8 * sizeof(uintptr_t));

        if (gp->rrp.tried[n] & m) {
            continue;
        }

        /* by its place in the list: with a zone, the peers nginx keeps
         * in shared memory (in the same order) */
        for (peer = gp->rrp.peers->peer, k = 0; k < idx; k++) {
            peer = peer->next;
        }

        if (peer->down
            || (peer->max_fails && peer->fails >= peer->max_fails
                && now - peer->checked <= peer->fail_timeout)
            || (peer->max_conns && peer->conns >= peer->max_conns))
        {
            gp->rrp.tried[n] |= m;
            peer = NULL;
            continue;
        }

        gp->point = (gp->point + i) % ucf->npoints;
        break;
    }

    if (peer == NULL) {
        ngx_http_upstream_rr_peers_unlock(gp->rrp.peers);
        pc->name = gp->rrp.peers->name;
        return NGX_BUSY;
    }

    gp->rrp.current = peer;
    gp->rrp.tried[idx / (8 * sizeof(uintptr_t))]
        |= (uintptr_t) 1 << idx % (8 * sizeof(uintptr_t));

    pc->sockaddr = peer->sockaddr;
    pc->socklen = peer->socklen;
    pc->name = &peer->name;

    peer->conns++;

    if (now - peer->checked > peer->fail_timeout) {
        peer->checked = now;
    }

    ngx_http_upstream_rr_peers_unlock(gp->rrp.peers);

    return NGX_OK;
}


static void *
ngx_http_goblin_upstream_create_conf(ngx_conf_t *cf)
{
    return ngx_pcalloc(cf->pool, sizeof(ngx_http_goblin_upstream_conf_t));
}


/* goblin_hash <key> ketama|crc32 [port=N] */
static char *
ngx_http_goblin_hash(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_goblin_upstream_conf_t  *ucf = conf;

    ngx_int_t                           port;
    ngx_str_t                          *value;
    ngx_http_upstream_srv_conf_t       *uscf;
    ngx_http_compile_complex_value_t    ccv;

    if (ucf->key) {
        return "is duplicate";
    }

    value = cf->args->elts;

    ucf->key = ngx_palloc(cf->pool, sizeof(ngx_http_complex_value_t));
    if (ucf->key == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));
    ccv.cf = cf;
    ccv.value = &value[1];
    ccv.complex_value = ucf->key;

    if (ngx_http_compile_complex_value(&ccv) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    if (ngx_strcmp(value[2].data, "ketama") == 0) {
        ucf->method = NGX_HTTP_GOBLIN_KETAMA;

    } else if (ngx_strcmp(value[2].data, "crc32") == 0) {
        ucf->method = NGX_HTTP_GOBLIN_CRC32;

    } else {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid ring \"%V\": \"ketama\" (libmemcached's "
                           "weighted ketama) or \"crc32\" "
                           "(Cache::Memcached::Fast's)", &value[2]);
        return NGX_CONF_ERROR;
    }

    if (cf->args->nelts == 4) {
        port = (value[3].len > 5 && ngx_strncmp(value[3].data, "port=", 5) == 0)
               ? ngx_atoi(value[3].data + 5, value[3].len - 5) : NGX_ERROR;

        if (port < 1 || port > 65535) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid \"%V\": port=N, the memcache port "
                               "(1-65535) clients name the nodes by",
                               &value[3]);
            return NGX_CONF_ERROR;
        }

        ucf->port = (ngx_uint_t) port;
    }

    uscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_upstream_module);

    if (uscf->peer.init_upstream) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "load balancing method redefined");
    }

    uscf->flags = NGX_HTTP_UPSTREAM_CREATE
                  |NGX_HTTP_UPSTREAM_WEIGHT
                  |NGX_HTTP_UPSTREAM_MAX_CONNS
                  |NGX_HTTP_UPSTREAM_MAX_FAILS
                  |NGX_HTTP_UPSTREAM_FAIL_TIMEOUT
                  |NGX_HTTP_UPSTREAM_DOWN;

    uscf->peer.init_upstream = ngx_http_goblin_upstream_init;

    (void) cmd;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_goblin_upstream_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var;

    var = ngx_http_add_variable(cf, &ngx_http_goblin_key_name,
                                NGX_HTTP_VAR_NOCACHEABLE);
    if (var == NULL) {
        return NGX_ERROR;
    }

    var->get_handler = ngx_http_goblin_key_variable;

    return NGX_OK;
}


/* $goblin_key: the key a goblin location here would use (its URI after
 * the location's prefix); not found when no key can be made of it. */
static ngx_int_t
ngx_http_goblin_key_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    size_t     bad;
    ngx_str_t  key;

    if (ngx_http_goblin_uri_key(r, NGX_MAX_SIZE_T_VALUE, &key, &bad)
        != NGX_HTTP_GOBLIN_KEY_OK)
    {
        v->not_found = 1;
        return NGX_OK;
    }

    v->data = key.data;
    v->len = key.len;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    (void) data;

    return NGX_OK;
}
