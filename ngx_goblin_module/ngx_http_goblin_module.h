
/*
 * ngx_http_goblin_module: HTTP from goblin-store.  Heads are sent straight
 * from the daemon's RAM-head region (mapped read-only), disk parts come
 * through a per-worker shared-memory ring (shared/ring-t.h).
 *
 *   ngx_http_goblin_module.c   directives, configuration, worker init
 *   ngx_http_goblin_content.c  the content handler: method, key, then
 *                              GET and HEAD, PUT or DELETE
 *   ngx_http_goblin_handler.c  GET and HEAD
 *   ngx_http_goblin_put.c      PUT
 *   ngx_http_goblin_cond.c     conditional writes (If-Match, ...), DELETE
 *   ngx_http_goblin_status.c   goblin_status: the JSON status; the STATS
 *                              round trip goblin_metrics shares
 *   ngx_http_goblin_metrics.c  goblin_metrics: Prometheus text
 *   ngx_http_goblin_totals.c   every worker's totals in the shared zone
 *                              "goblin"; a request's accounting there
 *   ngx_http_goblin_cache.c    cache mode: lookups that find fills, reading
 *                              along, passing to goblin_origin
 *   ngx_http_goblin_policy.c   cache mode: what may answer a request (its
 *                              Cache-Control, freshness, stale windows)
 *   ngx_http_goblin_validate.c cache mode: a response's headers as
 *                              stored, a stale object's validators,
 *                              what a 304 keeps of its headers
 *   ngx_http_goblin_vary.c     cache mode: variants by Vary, their keys
 *   ngx_http_goblin_fill.c     cache mode: one fill per key and worker,
 *                              its waiters, abandoning it
 *   ngx_http_goblin_origin.c   cache mode: a fill's request of its own,
 *                              into goblin_origin
 *   ngx_http_goblin_capture.c  cache mode: the fill's response captured
 *                              into a shared writer
 *   ngx_http_goblin_handoff.c  cache mode: a response not stored, handed
 *                              to the request that started its fill
 *   ngx_http_goblin_invalidate.c cache mode: what an unsafe method's
 *                              success invalidates (its key, Location,
 *                              Content-Location)
 *   ngx_http_goblin_request.c  what every request shares: context,
 *                              finalizing, errors, giving back
 *   ngx_http_goblin_attr.c     an object's attributes: the HTTP metadata
 *                              stored with it (build, parse, replay)
 *   ngx_http_goblin_http.c     Range, conditionals, header values (pure)
 *   ngx_http_goblin_fresh.c    freshness: Cache-Control, Expires, Age (pure)
 *   ngx_http_goblin_link.c     the link to storaged: connect, hand-over,
 *                              doorbell, losing and reconnecting
 *   ngx_http_goblin_ring.c     the ring: request slots, submissions,
 *                              completions, tx buffers, mappings
 *   ngx_http_goblin_upstream.c goblin_hash: several nodes behind one
 *                              nginx, placed as memcache clients place
 *                              keys; $goblin_key
 *
 * Who calls whom (t/check-module-calls checks it against the objects;
 * no cycles):
 *
 *   module   ->  content status metrics totals link cache fill
 *   content  ->  put cond request ring http cache totals
 *   cache    ->  policy vary fill handoff invalidate handler request ring attr
 *   policy   ->  attr fresh
 *   fill     ->  origin capture validate request ring
 *   capture  ->  validate vary handoff ring attr fresh
 *   handoff  ->  request
 *   invalidate -> ring http
 *   validate ->  attr
 *   vary     ->  attr
 *   origin   ->
 *   handler  ->  request ring http attr
 *   put      ->  cond request ring attr
 *   cond     ->  request ring http
 *   status   ->  request ring
 *   metrics  ->  status
 *   totals   ->
 *   request  ->  ring http
 *   link     ->  ring
 *   ring     ->
 *   attr     ->  ring
 *   http     ->
 *   fresh    ->
 *   upstream ->  content
 *
 * The ring knows no HTTP: it hands a request's completions to the
 * handlers its kind set in the context (ctx->completions, its table of a
 * row per op; ctx->lost, ctx->tx_ready), as nginx's upstream does, and
 * drops the link through link->down.
 */


#ifndef _NGX_HTTP_GOBLIN_MODULE_H_INCLUDED_
#define _NGX_HTTP_GOBLIN_MODULE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <jansson.h>

#include "ring.h"


/* per-worker counters: NGX_HTTP_GOBLIN_STAT(name) */
#define NGX_HTTP_GOBLIN_STATS(STAT)                                           \
    STAT(requests)                                                            \
    STAT(hits)                                                                \
    STAT(misses)                                                              \
    STAT(not_modified)                                                        \
    STAT(ranges)                                                              \
    STAT(unsatisfiable)                                                       \
    STAT(head_bytes)                                                          \
    STAT(staged_bytes)                                                        \
    STAT(spilled_bytes)                                                       \
    STAT(puts_created)                                                        \
    STAT(puts_replaced)                                                       \
    STAT(put_bytes)                                                           \
    STAT(put_errors)                                                          \
    STAT(puts_rejected)                                                       \
    STAT(body_timeouts)                                                       \
    STAT(deletes)                                                             \
    STAT(delete_misses)                                                       \
    STAT(precondition_failed)                                                 \
    STAT(bad_gateway)                                                         \
    STAT(unavailable)                                                         \
    STAT(timeouts)                                                            \
    STAT(cut_responses)                                                       \
    STAT(reconnects)                                                          \
    STAT(backlog_waits)                                                       \
    STAT(tx_waits)


typedef struct {
#define NGX_HTTP_GOBLIN_STAT_FIELD(name)  uint64_t  name;
    NGX_HTTP_GOBLIN_STATS(NGX_HTTP_GOBLIN_STAT_FIELD)
#undef NGX_HTTP_GOBLIN_STAT_FIELD
} ngx_http_goblin_stats_t;


/* goblin requests by method (GET, HEAD, PUT, DELETE, other) and by the
 * class of their status (1xx .. 5xx, none: closed before one was sent) */
#define NGX_HTTP_GOBLIN_METHODS        5
#define NGX_HTTP_GOBLIN_CLASSES        6
/* $goblin_cache_status values, none among them (ngx_http_goblin_cache.h) */
#define NGX_HTTP_GOBLIN_CACHE_STATUSES 8
/* first-byte latency buckets (ngx_http_goblin_totals.c), the last +Inf */
#define NGX_HTTP_GOBLIN_BUCKETS        14


/*
 * The totals of every worker, in the shared zone "goblin" (as stub_status
 * counts): NGX_HTTP_GOBLIN_STATS added with atomics beside each worker's
 * own, and the request accounting goblin_metrics exports.  The zone, and
 * so the totals, outlive a reload.
 */
typedef struct {
    size_t                         size;    /* sizeof: a reload checks it */
    time_t                         started;
#define NGX_HTTP_GOBLIN_STAT_TOTAL(name)  ngx_atomic_t  name;
    NGX_HTTP_GOBLIN_STATS(NGX_HTTP_GOBLIN_STAT_TOTAL)
#undef NGX_HTTP_GOBLIN_STAT_TOTAL
    ngx_atomic_t                   http[NGX_HTTP_GOBLIN_METHODS]
                                       [NGX_HTTP_GOBLIN_CLASSES];
    ngx_atomic_t                   cache[NGX_HTTP_GOBLIN_CACHE_STATUSES];
    ngx_atomic_t                   first_byte[NGX_HTTP_GOBLIN_BUCKETS];
    ngx_atomic_t                   first_byte_ms;   /* their sum */
} ngx_http_goblin_totals_t;


/* Counts <n> into the worker's <name> and the totals. */
#define ngx_http_goblin_count(name, n)                                       \
    do {                                                                      \
        ngx_http_goblin_link->stats.name += (n);                              \
        if (ngx_http_goblin_totals) {                                         \
            (void) ngx_atomic_fetch_add(&ngx_http_goblin_totals->name, (n));  \
        }                                                                     \
    } while (0)


typedef struct {
    ngx_url_t                     *storaged;
    ngx_uint_t                     ring_entries;
    ngx_msec_t                     connect_timeout;
    ngx_flag_t                     used;
} ngx_http_goblin_main_conf_t;


typedef struct {
    ngx_http_complex_value_t      *key;
    ngx_uint_t                     methods;
    off_t                          max_object;
    ngx_msec_t                     read_timeout;
    ngx_msec_t                     put_wait;
    ngx_uint_t                     put_queue;
    ngx_msec_t                     body_timeout;

    ngx_flag_t                     cache;        /* goblin_cache */
    ngx_str_t                      origin;       /* goblin_origin @name */
    ngx_uint_t                     abandon;      /* goblin_cache_abandon % */
    time_t                         valid;        /* goblin_cache_valid */
    ngx_flag_t                     purge;        /* goblin_cache_purge */
    time_t                         revalidate;   /* goblin_cache_revalidate */
    time_t                         pass;         /* goblin_cache_pass */
    ngx_uint_t                     restart;      /* goblin_cache_restart */
    ngx_http_handler_pt            handler;      /* goblin's or
                                                    goblin_status's */
} ngx_http_goblin_loc_conf_t;


/* goblin_cache_restart: what a response stored before the store's start
 * is at its first use after it */
#define NGX_HTTP_GOBLIN_RESTART_REVALIDATE  1
#define NGX_HTTP_GOBLIN_RESTART_KEEP        2


/* The two mappings a worker got from one attach; requests still sending
 * from them hold a reference, so a lost daemon never unmaps under them. */
typedef struct {
    struct ring                    ring;
    u_char                        *region;
    size_t                         region_size;
    uint64_t                       store_id; /* the welcome's: ETags */
    ngx_uint_t                     refs;
} ngx_http_goblin_map_t;


typedef struct ngx_http_goblin_ctx_s  ngx_http_goblin_ctx_t;


/* ngx_buf_t.num of body buffers: an rx buffer index, or one of these */
#define NGX_HTTP_GOBLIN_HEAD_BUF       -1  /* in the mapped head region */
#define NGX_HTTP_GOBLIN_HEAP_BUF       -2  /* copied aside for a slow client */

/* bytes a READ may stage ahead of what the client has taken, in buffers */
#define NGX_HTTP_GOBLIN_GRANT_BUFS     4

/* rx buffers passed on uncopied that clients may hold at once: 1/N of
 * them, so slow clients never hold what the others need */
#define NGX_HTTP_GOBLIN_RX_HELD_SHARE  4


/* What a completion <cqe> of the op it handles does to <ctx>. */
typedef void (*ngx_http_goblin_complete_pt)(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
typedef void (*ngx_http_goblin_handler_pt)(ngx_http_goblin_ctx_t *ctx);

/* What a request asking storaged's stats sends: <storaged> the reply's
 * "name value" lines as a JSON object (numbers, or strings where a value
 * is no number), NULL when storaged could not be asked; takes it. */
typedef ngx_int_t (*ngx_http_goblin_stats_pt)(ngx_http_request_t *r,
    json_t *storaged);


/*
 * A request kind's completions: a row for each op it submits, ended by a
 * row whose handler is NULL.  The ring hands a completion to its op's
 * row and gives back what any other brings, as an orphan's.
 */
typedef struct {
    ngx_uint_t                     op;
    ngx_http_goblin_complete_pt    handler;
} ngx_http_goblin_completion_t;


typedef struct {
    ngx_http_goblin_ctx_t         *ctx;     /* NULL: free, or orphaned */
    uint32_t                       gen;
    uint32_t                       next_free;
} ngx_http_goblin_slot_t;


typedef enum {
    NGX_HTTP_GOBLIN_DOWN = 0,
    NGX_HTTP_GOBLIN_CONNECTING,
    NGX_HTTP_GOBLIN_HELLO,
    NGX_HTTP_GOBLIN_UP
} ngx_http_goblin_link_state_e;


typedef struct ngx_http_goblin_link_s  ngx_http_goblin_link_t;

typedef void (*ngx_http_goblin_down_pt)(ngx_http_goblin_link_t *link,
    ngx_uint_t level, ngx_err_t err, const char *why);


/* A worker's link to storaged (one per worker process). */
struct ngx_http_goblin_link_s {
    ngx_http_goblin_main_conf_t   *conf;
    ngx_log_t                     *log;
    ngx_connection_t              *connection;
    ngx_http_goblin_link_state_e   state;
    ngx_http_goblin_down_pt        down;    /* closes it, reconnects */
    ngx_uint_t                     gen;     /* bumped at every attach */
    ngx_http_goblin_map_t         *map;

    ngx_event_t                    reconnect;
    ngx_msec_t                     backoff;
    ngx_event_t                    bell;
    ngx_event_t                    tx_kick;

    ngx_queue_t                    backlog; /* submissions the SQ refused */
    ngx_queue_t                    spare;   /* free backlog entries */

    ngx_http_goblin_slot_t        *slots;
    uint32_t                       nslots;
    uint32_t                       free_slot;

    uint32_t                      *tx_free;
    ngx_uint_t                     ntx_free;

    ngx_uint_t                     rx_held; /* rx buffers requests hold */
    ngx_queue_t                    tx_waiters;
    ngx_uint_t                     ntx_waiters;
    size_t                         put_heap_bytes; /* bodies before a tx buf */

    ngx_http_goblin_stats_t        stats;
};


struct ngx_http_goblin_ctx_s {
    ngx_http_request_t            *request;
    const ngx_http_goblin_completion_t  *completions; /* its kind's */
    ngx_http_goblin_handler_pt     lost;     /* storaged went away */
    ngx_http_goblin_handler_pt     tx_ready; /* a PUT's tx buffer came */
    ngx_http_goblin_stats_pt       stats_send; /* a STATS request's */
    ngx_http_goblin_map_t         *map;
    ngx_uint_t                     link_gen;
    uint64_t                       ud;      /* slot: gen << 32 | index */
    ngx_str_t                      key;
    ngx_event_t                    timer;   /* goblin_read_timeout */

    uint32_t                       handle;
    struct ring_meta               meta;
    off_t                          start;   /* bytes [start, end) go out */
    off_t                          end;
    off_t                          next;    /* next offset a DATA brings */
    off_t                          granted; /* the READ may stage this far */

    ngx_chain_t                   *out;
    ngx_chain_t                   *busy;
    ngx_chain_t                   *free;

    /* PUT */
    off_t                          body_size;
    off_t                          body_copied;
    ngx_chain_t                   *body;
    u_char                        *heap;    /* the body until its tx buffer */
    size_t                         heap_len;
    size_t                         heap_size;
    ngx_int_t                      tx_buf;
    size_t                         tx_len;
    ngx_queue_t                    tx_wait;
    ngx_event_t                    put_timer; /* goblin_put_wait, or
                                                 goblin_body_timeout */
    ngx_str_t                      attr;    /* a PUT's attributes */

    /* PUT, DELETE: preconditions (ngx_http_goblin_cond.c) */
    ngx_http_goblin_handler_pt     checked; /* once they are settled */
    ngx_uint_t                     wplan;   /* NGX_HTTP_GOBLIN_WRITE_* */
    uint64_t                       wcas;

    /* cache mode (ngx_http_goblin_cache.h): a client's, or a fill's */
    struct ngx_http_goblin_cache_s *cache;
    struct ngx_http_goblin_fill_s  *fill;

    unsigned                       registered:1;
    unsigned                       body_started:1;
    unsigned                       pinned:1;
    unsigned                       writer:1;
    unsigned                       finishing:1;
    unsigned                       header_sent:1;
    unsigned                       header_deferred:1; /* until disk bytes */
    unsigned                       last_passed:1;
    unsigned                       done:1;
    unsigned                       waiting_tx:1;
    unsigned                       tx_busy:1;   /* its WDATA in flight */
    unsigned                       status:1;
};


extern ngx_module_t                ngx_http_goblin_module;
extern ngx_conf_bitmask_t          ngx_http_goblin_methods_mask[];
extern ngx_http_goblin_link_t     *ngx_http_goblin_link;
extern ngx_http_goblin_totals_t   *ngx_http_goblin_totals;
extern ngx_msec_t                  ngx_http_goblin_buckets[];


/* ngx_http_goblin_link.c */
ngx_int_t ngx_http_goblin_link_init(ngx_cycle_t *cycle,
    ngx_http_goblin_main_conf_t *gmcf);
void ngx_http_goblin_link_exit(ngx_cycle_t *cycle);

/* ngx_http_goblin_ring.c */
ngx_int_t ngx_http_goblin_ring_init(ngx_http_goblin_link_t *link);
void ngx_http_goblin_ring_exit(ngx_http_goblin_link_t *link);
void ngx_http_goblin_ring_attached(ngx_http_goblin_link_t *link);
void ngx_http_goblin_ring_detach(ngx_http_goblin_link_t *link);
void ngx_http_goblin_reap(ngx_http_goblin_link_t *link);
void ngx_http_goblin_map_unref(ngx_http_goblin_map_t *map);
ngx_int_t ngx_http_goblin_register(ngx_http_goblin_ctx_t *ctx);
void ngx_http_goblin_unregister(ngx_http_goblin_ctx_t *ctx);
void ngx_http_goblin_submit(ngx_http_goblin_ctx_t *ctx, struct ring_sqe *sqe);
ngx_int_t ngx_http_goblin_tx_take(ngx_http_goblin_ctx_t *ctx);
void ngx_http_goblin_tx_put(uint32_t buf);

/* ngx_http_goblin_request.c */
ngx_http_goblin_ctx_t *ngx_http_goblin_create_ctx(ngx_http_request_t *r,
    const ngx_http_goblin_completion_t *completions);
void ngx_http_goblin_finalize(ngx_http_goblin_ctx_t *ctx, ngx_int_t rc);
void ngx_http_goblin_fail(ngx_http_goblin_ctx_t *ctx, ngx_int_t rc);
void ngx_http_goblin_buf_done(ngx_http_goblin_ctx_t *ctx, ngx_buf_t *b);
void ngx_http_goblin_heap_free(ngx_http_goblin_ctx_t *ctx);
ngx_int_t ngx_http_goblin_error_status(ngx_http_request_t *r, int res);
ngx_int_t ngx_http_goblin_retry_later(ngx_http_request_t *r);
ngx_table_elt_t *ngx_http_goblin_add_header(ngx_http_request_t *r,
    const char *key, ngx_str_t *value);
ngx_int_t ngx_http_goblin_set_etag(ngx_http_goblin_ctx_t *ctx, uint64_t cas);

/*
 * ngx_http_goblin_attr.c: an object's attributes as the module stores them
 * (opaque bytes to the daemon, at most RING_ATTR_MAX):
 *
 *     "GA1 <status> <received>[ <fresh>]\r\n"
 *     *( "<Header-Name>: <value>\r\n" )
 *
 * status: 3 digits; received: the unix time the response (or PUT)
 * arrived; fresh: in cache mode, when it stops being fresh (the store
 * keeps it longer for stale-if-error)
 *
 * then the headers a cache replays.  ETags goblin-store makes are
 * "<store_id as 16 hex>-<cas as hex>" (quoted), never repeating.
 */
typedef struct {
    ngx_uint_t                     status;
    time_t                         received;
    time_t                         fresh;   /* 0: none said */
    ngx_array_t                    headers; /* of ngx_table_elt_t: key,
                                               value (lowcase_key, hash) */
} ngx_http_goblin_attr_t;

/* Builds the attribute bytes of <status>, <received>, <fresh> (0: none)
 * and the headers of r->headers_out that a cache replays (Content-Type
 * from r->headers_out.content_type, and every other end-to-end header but
 * Set-Cookie, Proxy-*, Date (the caller's, in <extra>) and those nginx
 * makes itself: Server, Age, framing), plus any in <extra> (of
 * ngx_table_elt_t, may be NULL), into <out> (from r->pool); a header with a bad name or a control
 * character in its value is left out.  NGX_DECLINED when they would exceed
 * RING_ATTR_MAX. */
ngx_int_t ngx_http_goblin_attr_build(ngx_http_request_t *r, ngx_uint_t status,
    time_t received, time_t fresh, ngx_array_t *extra, ngx_str_t *out);
/* Parses <p>,<len> into <a> (from r->pool); NGX_ERROR on a malformed blob
 * (logged).  Lines that are no valid header are skipped. */
ngx_int_t ngx_http_goblin_attr_parse(ngx_http_request_t *r, u_char *p,
    size_t len, ngx_http_goblin_attr_t *a);
/* Sets r->headers_out from <a> (Content-Type to headers_out.content_type,
 * ETag, Last-Modified etc. to their slots so nginx's not_modified/range
 * filters see them, Date to headers_out.date); headers nginx makes itself
 * (Content-Length, Server, Transfer-Encoding, ...) are never replayed. */
ngx_int_t ngx_http_goblin_attr_replay(ngx_http_request_t *r,
    ngx_http_goblin_attr_t *a);
/* The attributes of a PUT: its Content-Type, Content-Encoding,
 * Content-Language, Content-Disposition, Cache-Control and Expires request
 * headers, as attr_build() makes them (status 200, received now); out->len
 * 0 when it has none.  NGX_DECLINED when they exceed RING_ATTR_MAX. */
ngx_int_t ngx_http_goblin_attr_request(ngx_http_request_t *r,
    ngx_str_t *out);
/* The <received> and <fresh> times of the attribute bytes <p>,<len>
 * (<fresh> 0 when they have none); NGX_ERROR when they do not start as
 * attr_build() makes them. */
ngx_int_t ngx_http_goblin_attr_times(u_char *p, size_t len,
    time_t *received, time_t *fresh);
/* The attributes LOOKUP completion <cqe> brought (cqe->buf, RING_NO_BUF
 * when none): replayed into ctx->request's headers_out, the rx buffer
 * given back.  NGX_DECLINED for a malformed blob (logged), NGX_ERROR. */
ngx_int_t ngx_http_goblin_attr_found(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);

/* ngx_http_goblin_content.c */
ngx_int_t ngx_http_goblin_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_goblin_uri_key(ngx_http_request_t *r, size_t max,
    ngx_str_t *key, size_t *bad);

/* ngx_http_goblin_handler.c; cache mode reads with its handlers too */
extern const ngx_http_goblin_completion_t  ngx_http_goblin_get_completions[];
void ngx_http_goblin_got_object(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
void ngx_http_goblin_got_data(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
void ngx_http_goblin_read_done(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
void ngx_http_goblin_send(ngx_http_goblin_ctx_t *ctx);

/* ngx_http_goblin_put.c */
ngx_int_t ngx_http_goblin_put_handler(ngx_http_request_t *r, ngx_str_t *key);

/* ngx_http_goblin_cond.c */
ngx_int_t ngx_http_goblin_precondition(ngx_http_goblin_ctx_t *ctx,
    ngx_http_goblin_handler_pt checked, ngx_uint_t absent_ok);
void ngx_http_goblin_precondition_found(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
ngx_int_t ngx_http_goblin_delete_handler(ngx_http_request_t *r,
    ngx_str_t *key);

/* ngx_http_goblin_status.c */


ngx_int_t ngx_http_goblin_status_handler(ngx_http_request_t *r);
/* The content handler of a GET or HEAD that <send> answers with storaged's
 * stats. */
ngx_int_t ngx_http_goblin_stats_request(ngx_http_request_t *r,
    ngx_http_goblin_stats_pt send);
/* Sends <b> as the whole response: <status>, Content-Type <type>. */
ngx_int_t ngx_http_goblin_send_body(ngx_http_request_t *r,
    ngx_uint_t status, ngx_str_t *type, ngx_buf_t *b);

/* ngx_http_goblin_metrics.c */
ngx_int_t ngx_http_goblin_metrics_handler(ngx_http_request_t *r);

/* ngx_http_goblin_totals.c */
ngx_int_t ngx_http_goblin_totals_zone(ngx_conf_t *cf);
ngx_int_t ngx_http_goblin_totals_init(ngx_conf_t *cf);
/* Accounts the goblin request <r> (its method, status, $goblin_cache_status
 * and first byte) once it ends; NGX_ERROR without memory. */
ngx_int_t ngx_http_goblin_totals_request(ngx_http_request_t *r);


/* Whether <ctx> belongs to the attach the link is up on now. */
static ngx_inline ngx_int_t
ngx_http_goblin_linked(ngx_http_goblin_ctx_t *ctx)
{
    ngx_http_goblin_link_t  *link = ngx_http_goblin_link;

    return link != NULL && link->state == NGX_HTTP_GOBLIN_UP
           && ctx->link_gen == link->gen;
}


/* (Re)arms goblin_read_timeout: storaged owes <ctx> an answer. */
static ngx_inline void
ngx_http_goblin_wait(ngx_http_goblin_ctx_t *ctx)
{
    ngx_http_goblin_loc_conf_t  *glcf;

    glcf = ngx_http_get_module_loc_conf(ctx->request, ngx_http_goblin_module);

    ngx_add_timer(&ctx->timer, glcf->read_timeout);
}


/* The prefix of r's location a key is the URI after: its name, or none
 * for a regex or named location (the key is then all of the URI). */
static ngx_inline ngx_str_t
ngx_http_goblin_location_prefix(ngx_http_request_t *r)
{
    ngx_str_t                  prefix;
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);
    prefix = clcf->name;

    if (
#if (NGX_PCRE)
        clcf->regex != NULL ||
#endif
        clcf->named)
    {
        ngx_str_null(&prefix);
    }

    return prefix;
}


static ngx_inline void
ngx_http_goblin_submit_key(ngx_http_goblin_ctx_t *ctx, ngx_uint_t op,
    off_t len)
{
    struct ring_sqe  sqe;

    ngx_memzero(&sqe, sizeof(struct ring_sqe));
    sqe.op = (uint8_t) op;
    sqe.klen = (uint16_t) ctx->key.len;
    sqe.len = (uint64_t) len;
    ngx_memcpy(sqe.key, ctx->key.data, ctx->key.len);

    ngx_http_goblin_submit(ctx, &sqe);
}


static ngx_inline void
ngx_http_goblin_submit_handle(ngx_http_goblin_ctx_t *ctx, ngx_uint_t op,
    uint32_t buf, off_t off, off_t len)
{
    struct ring_sqe  sqe;

    ngx_memzero(&sqe, sizeof(struct ring_sqe));
    sqe.op = (uint8_t) op;
    sqe.handle = ctx->handle;
    sqe.buf = buf;
    sqe.off = (uint64_t) off;
    sqe.len = (uint64_t) len;

    ngx_http_goblin_submit(ctx, &sqe);
}


/* A walk over a list of headers (ngx_table_elt_t): headers_init(), then
 * headers_next() until NULL. */
typedef struct {
    ngx_list_part_t               *part;
    ngx_uint_t                     i;
} ngx_http_goblin_headers_t;


static ngx_inline void
ngx_http_goblin_headers_init(ngx_http_goblin_headers_t *it, ngx_list_t *list)
{
    it->part = &list->part;
    it->i = 0;
}


static ngx_inline ngx_table_elt_t *
ngx_http_goblin_headers_next(ngx_http_goblin_headers_t *it)
{
    while (it->i >= it->part->nelts) {
        if (it->part->next == NULL) {
            return NULL;
        }

        it->part = it->part->next;
        it->i = 0;
    }

    return (ngx_table_elt_t *) it->part->elts + it->i++;
}


#endif /* _NGX_HTTP_GOBLIN_MODULE_H_INCLUDED_ */
