
/*
 * ngx_http_goblin_module: cache mode ("goblin_cache on"), shared by
 * ngx_http_goblin_cache.c (the client side: lookups, reading along a
 * fill, passing to the origin), ngx_http_goblin_fill.c (one fill per key
 * and worker), ngx_http_goblin_origin.c (a fill's request of its own) and
 * ngx_http_goblin_capture.c (its response captured into a shared writer).
 */


#ifndef _NGX_HTTP_GOBLIN_CACHE_H_INCLUDED_
#define _NGX_HTTP_GOBLIN_CACHE_H_INCLUDED_


#include "ngx_http_goblin_module.h"
#include "ngx_http_goblin_http.h"


/* $goblin_cache_status values, as nginx's $upstream_cache_status */
typedef enum {
    NGX_HTTP_GOBLIN_CACHE_NONE = 0,
    NGX_HTTP_GOBLIN_CACHE_MISS,
    NGX_HTTP_GOBLIN_CACHE_BYPASS,
    NGX_HTTP_GOBLIN_CACHE_EXPIRED,
    NGX_HTTP_GOBLIN_CACHE_STALE,
    NGX_HTTP_GOBLIN_CACHE_UPDATING,
    NGX_HTTP_GOBLIN_CACHE_REVALIDATED,
    NGX_HTTP_GOBLIN_CACHE_HIT
} ngx_http_goblin_cache_status_e;


/* A fill's state, as its waiters see it. */
typedef enum {
    NGX_HTTP_GOBLIN_FILL_ASKING = 0,   /* the origin is asked */
    NGX_HTTP_GOBLIN_FILL_OPENING,      /* WOPEN in flight */
    NGX_HTTP_GOBLIN_FILL_OPEN,         /* writing; findable once announced */
    NGX_HTTP_GOBLIN_FILL_STORED,       /* WFINISH said stored */
    NGX_HTTP_GOBLIN_FILL_BUSY,         /* another worker fills the key */
    NGX_HTTP_GOBLIN_FILL_PASS,         /* not cacheable: go to the origin */
    NGX_HTTP_GOBLIN_FILL_HANDOFF,      /* not cacheable: its starter has the
                                          response, the rest go to the
                                          origin */
    NGX_HTTP_GOBLIN_FILL_FAILED        /* origin or store failed, abandoned */
} ngx_http_goblin_fill_state_e;


/* the attribute line of a stored variant (ngx_http_goblin_vary.c) */
#define NGX_HTTP_GOBLIN_VARIANT  "Goblin-Variant"


typedef struct ngx_http_goblin_fill_s   ngx_http_goblin_fill_t;
typedef struct ngx_http_goblin_cache_s  ngx_http_goblin_cache_t;


/* A client request in cache mode (ctx->cache). */
struct ngx_http_goblin_cache_s {
    ngx_http_goblin_ctx_t         *ctx;
    /* the fill it waits on has news (fill->state) */
    void                         (*wake)(ngx_http_goblin_cache_t *cache);
    ngx_http_goblin_fill_t        *fill;     /* waited on, or read along */
    ngx_queue_t                    wait;     /* in fill->waiters */
    ngx_uint_t                     lookups;
    ngx_http_goblin_cc_t           req;      /* the request's Cache-Control
                                                (Pragma: no-cache counted) */
    unsigned                       waiting:1;
    unsigned                       reader:1; /* counted in fill->readers */
    unsigned                       filling:1; /* the object is being filled */
    unsigned                       bypass:1; /* stored, but not for this
                                                request: filled anew */
    unsigned                       stale:1;  /* stored, stale: filled anew,
                                                served if that fails */
    unsigned                       variant:1; /* ctx->key is the variant
                                                 key of its Vary */
    unsigned                       started:1; /* it started the fill it
                                                 waits on */
    time_t                         stale_error; /* until when it may be
                                                   (stale-if-error) */
    ngx_str_t                      stale_attr;  /* its attributes: the
                                                   validators of its fill */
    uint64_t                       stale_cas;
};


/*
 * One fill: the origin's response to a request of its own (a detached
 * request on a connection of its own, so neither a slow client nor one
 * that goes away paces or ends it), captured into a shared writer.  It
 * lives while its request, a waiter or a reader of this worker holds it.
 */
struct ngx_http_goblin_fill_s {
    ngx_queue_t                    queue;    /* in the worker's fills */
    ngx_str_t                      key;      /* heap */
    ngx_http_goblin_fill_state_e   state;
    ngx_http_goblin_ctx_t         *ctx;      /* the fill request's; NULL
                                                once that request is gone */
    ngx_queue_t                    waiters;  /* of ngx_http_goblin_cache_t */
    ngx_uint_t                     readers;
    ngx_uint_t                     refs;
    /* the client location's goblin_cache_abandon (%), goblin_cache_valid,
     * goblin_cache_revalidate, goblin_max_object: the fill's request runs
     * in goblin_origin's */
    ngx_uint_t                     abandon;
    time_t                         valid;
    time_t                         revalidate;
    time_t                         pass;     /* goblin_cache_pass */
    off_t                          max_object;
    ngx_uint_t                     status;   /* the origin's */
    off_t                          length;   /* Content-Length, or -1 */
    off_t                          received; /* body bytes into the writer */
    ngx_chain_t                   *held;     /* body waiting for room */
    u_char                        *hand;     /* a body not stored, for its
                                                starter (from its request's
                                                pool) */
    size_t                         hand_len;
    size_t                         hand_cap;
    ngx_str_t                      attr;
    ngx_str_t                      old_attr; /* the stale object's (heap):
                                                its request is conditional */
    uint64_t                       old_cas;  /* and its CAS */
    time_t                         exptime;  /* when it stops being fresh */
    ngx_event_t                    abort;    /* posted: abandon it? */
    ngx_event_t                    stop;     /* posted: end its request */
    /* what the capture tells the fill (ngx_http_goblin_fill.c) */
    void                         (*fail)(ngx_http_goblin_fill_t *fill,
                                         ngx_http_goblin_fill_state_e st);
    void                         (*announce)(ngx_http_goblin_fill_t *fill);
    unsigned                       linked:1; /* in the worker's fills */
    unsigned                       announced:1;
    unsigned                       last:1;   /* the origin's body is all in */
    /* its client's request carried Authorization, or Cache-Control:
     * no-store */
    unsigned                       authorized:1;
    unsigned                       no_store:1;
    /* not stored for what its response said (not for its request's
     * sake): the key goes to the origin for goblin_cache_pass */
    unsigned                       uncacheable:1;
    /* started for a Range answered by the origin: nobody of this worker
     * reads it by design, so it is never abandoned */
    unsigned                       detached:1;
    /* the origin said 304: the stale object's attributes and expiry are
     * being refreshed (SETATTR), or were */
    unsigned                       revalidating:1;
    unsigned                       revalidated:1;
    unsigned                       handing:1; /* gathering <hand> */
};


/* ngx_http_goblin_cache.c */
/* the values of $goblin_cache_status by ngx_http_goblin_cache_status_e,
 * and the variable's index (NGX_ERROR before preconfiguration) */
extern ngx_str_t  ngx_http_goblin_cache_statuses[];
extern ngx_int_t  ngx_http_goblin_cache_status_index;
ngx_int_t ngx_http_goblin_cache_handler(ngx_http_request_t *r,
    ngx_str_t *key);
ngx_int_t ngx_http_goblin_cache_pass(ngx_http_request_t *r,
    ngx_http_goblin_cache_status_e status);
ngx_int_t ngx_http_goblin_cache_add_variables(ngx_conf_t *cf);

/* ngx_http_goblin_policy.c */
void ngx_http_goblin_policy_request(ngx_http_request_t *r,
    ngx_http_goblin_cc_t *cc);
ngx_int_t ngx_http_goblin_policy_usable(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe);
ngx_uint_t ngx_http_goblin_policy_far_range(ngx_http_request_t *r);

/* ngx_http_goblin_vary.c */
ngx_int_t ngx_http_goblin_vary_found(ngx_http_goblin_ctx_t *ctx,
    struct ring_cqe *cqe, ngx_uint_t variant);
ngx_int_t ngx_http_goblin_vary_attr(ngx_http_request_t *r,
    ngx_array_t *kept, ngx_str_t *attr);

/* ngx_http_goblin_handoff.c: a response not stored, handed to the
 * request that started its fill.  From the capture's header filter (the
 * fill request <r>): NGX_OK when its body is gathered for that request
 * (it still waits; the body is small enough), NGX_DECLINED when not,
 * NGX_ERROR without memory. */
ngx_int_t ngx_http_goblin_handoff_begin(ngx_http_request_t *r,
    ngx_http_goblin_fill_t *fill);
/* From the capture's body filter while fill->handing: <in> gathered (and
 * taken); at its end the fill's state is NGX_HTTP_GOBLIN_FILL_HANDOFF
 * and its waiters are woken. */
ngx_int_t ngx_http_goblin_handoff_body(ngx_http_request_t *r,
    ngx_http_goblin_fill_t *fill, ngx_chain_t *in);
/* From a waiter's wake, while the fill request lives: its response sent
 * to <ctx>'s request, which is finalized. */
void ngx_http_goblin_handoff_send(ngx_http_goblin_ctx_t *ctx,
    ngx_http_goblin_fill_t *fill);

/* ngx_http_goblin_invalidate.c: an unsafe method's request passed to the
 * origin invalidates, at a 2xx or 3xx, its key and those its Location and
 * Content-Location name.  NGX_ERROR without memory. */
ngx_int_t ngx_http_goblin_invalidate_add(ngx_http_goblin_ctx_t *ctx);

/* ngx_http_goblin_validate.c */
ngx_int_t ngx_http_goblin_validate_request(ngx_http_request_t *r,
    ngx_http_request_t *fr, ngx_str_t *old);
ngx_array_t *ngx_http_goblin_validate_kept(ngx_http_request_t *r,
    ngx_str_t *old);
/* The fill's response in r->headers_out as a cache stores it (RFC 9111
 * 3.1): a header its Connection header lists is dropped (hash 0); its
 * Date, the origin's (else now), is pushed to <extra> and its time set in
 * *<date>.  NGX_ERROR without memory. */
ngx_int_t ngx_http_goblin_validate_stored(ngx_http_request_t *r,
    ngx_array_t *extra, time_t *date);

/* ngx_http_goblin_fill.c */
ngx_http_goblin_fill_t *ngx_http_goblin_fill_find(ngx_str_t *key);
ngx_uint_t ngx_http_goblin_fill_passed(ngx_str_t *key);
ngx_http_goblin_fill_t *ngx_http_goblin_fill_start(ngx_http_request_t *r,
    ngx_str_t *key);
void ngx_http_goblin_fill_unref(ngx_http_goblin_fill_t *fill);
ngx_int_t ngx_http_goblin_fill_init(ngx_conf_t *cf);

/* ngx_http_goblin_origin.c */
ngx_http_core_loc_conf_t *ngx_http_goblin_origin_location(
    ngx_http_request_t *r);
ngx_http_request_t *ngx_http_goblin_origin_request(ngx_http_request_t *r,
    ngx_http_core_loc_conf_t *clcf);

/* ngx_http_goblin_capture.c */
extern const ngx_http_goblin_completion_t  ngx_http_goblin_capture_completions[];
ngx_int_t ngx_http_goblin_capture_init(ngx_conf_t *cf);
void ngx_http_goblin_capture_open(ngx_http_goblin_ctx_t *ctx);


#endif /* _NGX_HTTP_GOBLIN_CACHE_H_INCLUDED_ */
