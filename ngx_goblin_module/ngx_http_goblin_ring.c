
/*
 * ngx_http_goblin_module: the worker's side of the ring (shared/ring-t.h).
 *
 * Every request holds a slot; its submissions carry the slot's index and
 * generation as user_data, so a completion finds its request and goes to
 * the handler its kind set for the op (a row of ctx->completions), or is
 * an orphan whose buffers and pins go back at once.  The ring knows no
 * HTTP: a lost attach is told to each request through ctx->lost, a tx
 * buffer to the PUT that waited through ctx->tx_ready, and what must drop
 * the link calls link->down.
 * Submissions the SQ has no room for wait in a backlog, in order; one
 * doorbell per turn of the event loop covers them all (the doorbell is
 * the link's, ngx_http_goblin_link.c).  Staging buffers change hands only
 * through entries, and every completion is checked against who holds its
 * buffer now.  tx buffers go to PUTs one each, first come first served; a
 * PUT waits for one goblin_put_wait at most, behind goblin_put_queue
 * others at most, and is answered 503 past either.  The attach's mappings
 * go once the link and every request let go of them.
 */


#include "ngx_http_goblin_module.h"

#include <sys/mman.h>


#define NGX_HTTP_GOBLIN_SLOTS         256


/* Who holds a staging buffer of the current attach, as nginx sees it. */
typedef enum {
    NGX_HTTP_GOBLIN_TX_FREE = 0,    /* on the tx free list */
    NGX_HTTP_GOBLIN_TX_TAKEN,       /* a PUT fills it */
    NGX_HTTP_GOBLIN_TX_DAEMON       /* its WDATA went to storaged */
} ngx_http_goblin_tx_state_e;


typedef struct {
    ngx_queue_t                    queue;
    struct ring_sqe                sqe;
} ngx_http_goblin_backlog_t;


static const char *ngx_http_goblin_check_cqe(ngx_http_goblin_link_t *link,
    struct ring_cqe *cqe);
static void ngx_http_goblin_pushed(ngx_http_goblin_link_t *link,
    struct ring_sqe *sqe);
static ngx_http_goblin_complete_pt ngx_http_goblin_completion(
    ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe);
static void ngx_http_goblin_orphan(ngx_http_goblin_link_t *link,
    struct ring_cqe *cqe);
static void ngx_http_goblin_send_orphan(ngx_http_goblin_link_t *link,
    ngx_uint_t op, uint32_t handle, uint32_t buf);
static void ngx_http_goblin_flush_backlog(ngx_http_goblin_link_t *link);
static void ngx_http_goblin_ring_bell(ngx_http_goblin_link_t *link);
static void ngx_http_goblin_tx_give(ngx_http_goblin_link_t *link,
    uint32_t buf);
static void ngx_http_goblin_tx_kick_handler(ngx_event_t *ev);


ngx_http_goblin_link_t  *ngx_http_goblin_link;


/* one link per worker process: its buffers' holders live here */
static u_char    ngx_http_goblin_rx_held[RING_BUFS_MAX];  /* nginx's */
static u_char    ngx_http_goblin_tx_state[RING_BUFS_MAX];
static uint64_t  ngx_http_goblin_tx_ud[RING_BUFS_MAX];    /* its WDATA's */


/* ---- one attach after another ---- */


/* The link's ring state; the slots and tx list outlive every attach. */
ngx_int_t
ngx_http_goblin_ring_init(ngx_http_goblin_link_t *link)
{
    uint32_t  i;

    ngx_queue_init(&link->backlog);
    ngx_queue_init(&link->spare);
    ngx_queue_init(&link->tx_waiters);

    link->tx_kick.handler = ngx_http_goblin_tx_kick_handler;
    link->tx_kick.data = link;
    link->tx_kick.log = link->log;

    link->nslots = NGX_HTTP_GOBLIN_SLOTS;
    link->slots = ngx_alloc(link->nslots * sizeof(ngx_http_goblin_slot_t),
                            link->log);
    if (link->slots == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i < link->nslots; i++) {
        link->slots[i].ctx = NULL;
        link->slots[i].gen = 1;
        link->slots[i].next_free = i + 1;
    }

    link->free_slot = 0;

    link->tx_free = ngx_alloc(RING_BUFS_MAX * sizeof(uint32_t), link->log);
    if (link->tx_free == NULL) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


void
ngx_http_goblin_ring_exit(ngx_http_goblin_link_t *link)
{
    ngx_free(link->slots);
    ngx_free(link->tx_free);
}


/* A fresh attach: all its tx buffers are free, nginx holds none. */
void
ngx_http_goblin_ring_attached(ngx_http_goblin_link_t *link)
{
    uint32_t  i;

    link->ntx_free = 0;
    for (i = link->map->ring.n_tx; i-- > 0; /* void */) {
        link->tx_free[link->ntx_free++] = i;
    }

    ngx_memzero(ngx_http_goblin_rx_held, sizeof(ngx_http_goblin_rx_held));
    ngx_memzero(ngx_http_goblin_tx_state, sizeof(ngx_http_goblin_tx_state));
}


/*
 * The attach is gone (the link is down already): what waited to be
 * submitted is dropped, the link lets go of its mapping, and every request
 * still registered is told.
 */
void
ngx_http_goblin_ring_detach(ngx_http_goblin_link_t *link)
{
    uint32_t                    i;
    ngx_queue_t                *q;
    ngx_connection_t           *c;
    ngx_http_goblin_ctx_t      *ctx;
    ngx_http_goblin_backlog_t  *b;

    if (link->bell.posted) {
        ngx_delete_posted_event(&link->bell);
    }

    if (link->tx_kick.posted) {
        ngx_delete_posted_event(&link->tx_kick);
    }

    while (!ngx_queue_empty(&link->backlog)) {
        q = ngx_queue_head(&link->backlog);
        ngx_queue_remove(q);
        b = ngx_queue_data(q, ngx_http_goblin_backlog_t, queue);
        ngx_free(b);
    }

    while (!ngx_queue_empty(&link->tx_waiters)) {
        q = ngx_queue_head(&link->tx_waiters);
        ngx_queue_remove(q);
        ctx = ngx_queue_data(q, ngx_http_goblin_ctx_t, tx_wait);
        ctx->waiting_tx = 0;
    }

    link->ntx_waiters = 0;

    if (link->map) {
        ngx_http_goblin_map_unref(link->map);
        link->map = NULL;
    }

    for (i = 0; i < link->nslots; i++) {
        ctx = link->slots[i].ctx;

        if (ctx == NULL) {
            continue;
        }

        c = ctx->request->connection;
        ctx->lost(ctx);
        ngx_http_run_posted_requests(c);
    }
}


/* An attach's mappings go once no request sends from them. */
void
ngx_http_goblin_map_unref(ngx_http_goblin_map_t *map)
{
    if (--map->refs) {
        return;
    }

    munmap(map->region, map->region_size);
    ring_unmap(&map->ring);
    ngx_free(map);
}


/* ---- completions ---- */


/* Takes every completion and hands it to its request, or undoes it; then
 * pushes what the backlog holds into the room that made. */
void
ngx_http_goblin_reap(ngx_http_goblin_link_t *link)
{
    int                           rc;
    uint32_t                      idx;
    const char                   *why;
    ngx_connection_t             *c;
    struct ring_cqe               cqe;
    ngx_http_goblin_map_t        *map;
    ngx_http_goblin_ctx_t        *ctx;
    ngx_http_goblin_slot_t       *slot;
    ngx_http_goblin_complete_pt   handler;

    map = link->map;

    while (link->state == NGX_HTTP_GOBLIN_UP
           && (rc = ring_cq_pop(&map->ring, &cqe)) == 1)
    {
        why = ngx_http_goblin_check_cqe(link, &cqe);

        if (why != NULL) {
            link->down(link, NGX_LOG_ERR, 0, why);
            return;
        }

        idx = (uint32_t) cqe.user_data;
        slot = idx < link->nslots ? &link->slots[idx] : NULL;

        if (slot == NULL || slot->ctx == NULL
            || slot->gen != (uint32_t) (cqe.user_data >> 32))
        {
            ngx_http_goblin_orphan(link, &cqe);
            continue;
        }

        ctx = slot->ctx;
        c = ctx->request->connection;

        handler = ngx_http_goblin_completion(ctx, &cqe);

        if (handler == NULL) {
            ngx_http_goblin_orphan(link, &cqe);
            continue;
        }

        handler(ctx, &cqe);

        ngx_http_run_posted_requests(c);
    }

    if (link->state != NGX_HTTP_GOBLIN_UP) {
        return;
    }

    if (rc < 0) {
        link->down(link, NGX_LOG_ERR, 0,
                   "the completion queue indices are corrupt");
        return;
    }

    if (ring_cq_wants_doorbell(&map->ring)) {
        ngx_http_goblin_ring_bell(link);
    }

    ngx_http_goblin_flush_backlog(link);
}


/*
 * Checks what <cqe> says about staging buffers against who holds them
 * now, and moves them to nginx: an rx buffer staged while nginx still
 * holds it, or a tx buffer returned that storaged never had, would have
 * two owners.  Returns NULL, or why the link must go.
 */
static const char *
ngx_http_goblin_check_cqe(ngx_http_goblin_link_t *link, struct ring_cqe *cqe)
{
    struct ring  *ring;

    ring = &link->map->ring;

    switch (cqe->op) {

    case RING_OP_LOOKUP:
        /* every LOOKUP asks for the attributes (ngx_http_goblin_submit):
         * a found object with some hands their rx buffer over */
        if (cqe->res != 0 || cqe->meta.attr_len == 0
            || cqe->buf == RING_NO_BUF)
        {
            cqe->buf = RING_NO_BUF;
            return NULL;
        }

        if (cqe->buf >= ring->n_rx || cqe->meta.attr_len > ring->buf_size
            || cqe->meta.attr_len > RING_ATTR_MAX)
        {
            return "storaged handed attributes in a bad rx buffer";
        }

        if (ngx_http_goblin_rx_held[cqe->buf]) {
            return "storaged staged an rx buffer nginx still holds";
        }

        ngx_http_goblin_rx_held[cqe->buf] = 1;
        return NULL;

    case RING_OP_READ:
    case RING_OP_WOPEN:
    case RING_OP_WFINISH:
    case RING_OP_DELETE:
        return NULL;

    case RING_OP_STATS:
        if (cqe->res != 0) {
            return NULL;
        }

        /* fall through */

    case RING_OP_DATA:
        if (cqe->res != 0 || cqe->buf >= ring->n_rx
            || cqe->len > ring->buf_size)
        {
            return "storaged staged a bad rx buffer";
        }

        if (ngx_http_goblin_rx_held[cqe->buf]) {
            return "storaged staged an rx buffer nginx still holds";
        }

        ngx_http_goblin_rx_held[cqe->buf] = 1;
        return NULL;

    case RING_OP_SETATTR:
        /* its tx buffer stayed nginx's: still taken by its request */
        if (cqe->buf >= ring->n_tx
            || ngx_http_goblin_tx_state[cqe->buf] != NGX_HTTP_GOBLIN_TX_TAKEN)
        {
            return "storaged answered a SETATTR of a tx buffer nginx does "
                   "not hold";
        }

        return NULL;

    case RING_OP_TXDONE:
        if (cqe->buf >= ring->n_tx
            || ngx_http_goblin_tx_state[cqe->buf] != NGX_HTTP_GOBLIN_TX_DAEMON
            || ngx_http_goblin_tx_ud[cqe->buf] != cqe->user_data)
        {
            return "storaged returned a tx buffer it does not hold";
        }

        ngx_http_goblin_tx_state[cqe->buf] = NGX_HTTP_GOBLIN_TX_TAKEN;
        return NULL;

    default:
        return "storaged sent an unknown completion";
    }
}


/* <sqe> is in the SQ: buffers it hands over are storaged's now. */
static void
ngx_http_goblin_pushed(ngx_http_goblin_link_t *link, struct ring_sqe *sqe)
{
    struct ring  *ring;

    ring = &link->map->ring;

    if (sqe->op == RING_OP_BUFREL && sqe->buf < ring->n_rx) {
        ngx_http_goblin_rx_held[sqe->buf] = 0;

    } else if (sqe->op == RING_OP_WDATA && sqe->buf < ring->n_tx) {
        ngx_http_goblin_tx_state[sqe->buf] = NGX_HTTP_GOBLIN_TX_DAEMON;
        ngx_http_goblin_tx_ud[sqe->buf] = sqe->user_data;
    }
}


/* The handler <ctx>'s kind set for <cqe>'s op; NULL when it asked for
 * none. */
static ngx_http_goblin_complete_pt
ngx_http_goblin_completion(ngx_http_goblin_ctx_t *ctx, struct ring_cqe *cqe)
{
    const ngx_http_goblin_completion_t  *row;

    for (row = ctx->completions; row->handler != NULL; row++) {
        if (row->op == cqe->op) {
            return row->handler;
        }
    }

    return NULL;
}


/* A completion nobody waits for any more: give back what it brought. */
static void
ngx_http_goblin_orphan(ngx_http_goblin_link_t *link, struct ring_cqe *cqe)
{
    switch (cqe->op) {

    case RING_OP_LOOKUP:
        if (cqe->res == 0) {
            ngx_http_goblin_send_orphan(link, RING_OP_RELEASE, cqe->handle, 0);

            if (cqe->buf != RING_NO_BUF) {
                ngx_http_goblin_send_orphan(link, RING_OP_BUFREL, 0,
                                            cqe->buf);
            }
        }
        break;

    case RING_OP_DATA:
    case RING_OP_STATS:
        if (cqe->res == 0) {
            ngx_http_goblin_send_orphan(link, RING_OP_BUFREL, 0, cqe->buf);
        }
        break;

    case RING_OP_WOPEN:
        if (cqe->res == 0) {
            ngx_http_goblin_send_orphan(link, RING_OP_WABORT, cqe->handle, 0);
        }
        break;

    case RING_OP_TXDONE:
    case RING_OP_SETATTR:
        /* SETATTR's tx buffer comes back with it */
        ngx_http_goblin_tx_give(link, cqe->buf);
        break;

    default:
        /* READ, WFINISH, DELETE end nothing */
        break;
    }
}


static void
ngx_http_goblin_send_orphan(ngx_http_goblin_link_t *link, ngx_uint_t op,
    uint32_t handle, uint32_t buf)
{
    struct ring_sqe         sqe;
    ngx_http_goblin_ctx_t   ctx;

    ngx_memzero(&sqe, sizeof(struct ring_sqe));
    sqe.op = (uint8_t) op;
    sqe.handle = handle;
    sqe.buf = buf;

    ngx_memzero(&ctx, sizeof(ngx_http_goblin_ctx_t));
    ctx.link_gen = link->gen;

    ngx_http_goblin_submit(&ctx, &sqe);
}


/* ---- submissions ---- */


/*
 * Queues <sqe> for <ctx>'s request (its user_data is set here).  A full SQ
 * parks it in the backlog, in order; a lost link drops it: the request
 * has been told already.
 */
void
ngx_http_goblin_submit(ngx_http_goblin_ctx_t *ctx, struct ring_sqe *sqe)
{
    ngx_queue_t                *q;
    ngx_http_goblin_link_t     *link = ngx_http_goblin_link;
    ngx_http_goblin_backlog_t  *b;

    if (!ngx_http_goblin_linked(ctx)) {
        return;
    }

    sqe->user_data = ctx->ud;

    if (sqe->op == RING_OP_LOOKUP) {
        /* a found object's attributes come with it, or cqe.buf is
         * RING_NO_BUF (ngx_http_goblin_check_cqe) */
        sqe->opflags |= RING_LOOKUP_ATTR;
    }

    if (ngx_queue_empty(&link->backlog)
        && ring_sq_push(&link->map->ring, sqe) == 0)
    {
        ngx_http_goblin_pushed(link, sqe);
        ngx_http_goblin_ring_bell(link);
        return;
    }

    if (!ngx_queue_empty(&link->spare)) {
        q = ngx_queue_head(&link->spare);
        ngx_queue_remove(q);
        b = ngx_queue_data(q, ngx_http_goblin_backlog_t, queue);

    } else {
        b = ngx_alloc(sizeof(ngx_http_goblin_backlog_t), link->log);
        if (b == NULL) {
            link->down(link, NGX_LOG_ALERT, 0,
                       "out of memory for the backlog");
            return;
        }
    }

    b->sqe = *sqe;
    ngx_queue_insert_tail(&link->backlog, &b->queue);
    ngx_http_goblin_count(backlog_waits, 1);

    /* the daemon rings once it has made room */
    ngx_http_goblin_ring_bell(link);
}


static void
ngx_http_goblin_flush_backlog(ngx_http_goblin_link_t *link)
{
    ngx_queue_t                *q;
    ngx_http_goblin_backlog_t  *b;

    while (!ngx_queue_empty(&link->backlog)) {
        q = ngx_queue_head(&link->backlog);
        b = ngx_queue_data(q, ngx_http_goblin_backlog_t, queue);

        if (ring_sq_push(&link->map->ring, &b->sqe) != 0) {
            break;
        }

        ngx_http_goblin_pushed(link, &b->sqe);

        ngx_queue_remove(q);
        ngx_queue_insert_tail(&link->spare, q);
        ngx_http_goblin_ring_bell(link);
    }
}


static void
ngx_http_goblin_ring_bell(ngx_http_goblin_link_t *link)
{
    if (!link->bell.posted) {
        ngx_post_event(&link->bell, &ngx_posted_events);
    }
}


/* ---- request slots ---- */


/* Gives <ctx> a slot: completions carrying its user_data come to it. */
ngx_int_t
ngx_http_goblin_register(ngx_http_goblin_ctx_t *ctx)
{
    uint32_t                 i, n, idx;
    ngx_http_goblin_link_t  *link = ngx_http_goblin_link;
    ngx_http_goblin_slot_t  *slots;

    if (link->free_slot == link->nslots) {
        n = link->nslots * 2;

        slots = ngx_alloc(n * sizeof(ngx_http_goblin_slot_t), link->log);
        if (slots == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(slots, link->slots,
                   link->nslots * sizeof(ngx_http_goblin_slot_t));

        for (i = link->nslots; i < n; i++) {
            slots[i].ctx = NULL;
            slots[i].gen = 1;
            slots[i].next_free = i + 1;
        }

        ngx_free(link->slots);
        link->slots = slots;
        link->free_slot = link->nslots;
        link->nslots = n;
    }

    idx = link->free_slot;
    link->free_slot = link->slots[idx].next_free;
    link->slots[idx].ctx = ctx;

    ctx->ud = (uint64_t) link->slots[idx].gen << 32 | idx;
    ctx->registered = 1;
    ctx->link_gen = link->gen;
    ctx->map = link->map;
    ctx->map->refs++;

    return NGX_OK;
}


/* The request no longer takes completions; later ones are orphans. */
void
ngx_http_goblin_unregister(ngx_http_goblin_ctx_t *ctx)
{
    uint32_t                 idx;
    ngx_http_goblin_link_t  *link = ngx_http_goblin_link;

    if (!ctx->registered) {
        return;
    }

    ctx->registered = 0;

    if (ctx->waiting_tx) {
        ngx_queue_remove(&ctx->tx_wait);
        ctx->waiting_tx = 0;

        if (link) {
            link->ntx_waiters--;
        }
    }

    if (link == NULL) {
        return;
    }

    idx = (uint32_t) ctx->ud;
    link->slots[idx].ctx = NULL;
    link->slots[idx].gen++;
    link->slots[idx].next_free = link->free_slot;
    link->free_slot = idx;
}


/* ---- tx buffers (PUT bodies) ---- */


/*
 * A tx buffer for <ctx>'s PUT; NGX_AGAIN: it is queued and told when one
 * is free (tx_ready); NGX_BUSY: goblin_put_queue PUTs wait already;
 * NGX_ERROR: the link is gone.  A PUT keeps its buffer from WOPEN to
 * WFINISH: a writer that holds engine buffers must always be able to feed
 * them, whatever the others do; it takes one only once its first buffer's
 * worth of body is in (ngx_http_goblin_put.c), so a client that has sent
 * less holds none.
 */
ngx_int_t
ngx_http_goblin_tx_take(ngx_http_goblin_ctx_t *ctx)
{
    uint32_t                     buf;
    ngx_http_goblin_link_t      *link = ngx_http_goblin_link;
    ngx_http_goblin_loc_conf_t  *glcf;

    if (!ngx_http_goblin_linked(ctx)) {
        return NGX_ERROR;
    }

    if (link->ntx_free && ngx_queue_empty(&link->tx_waiters)) {
        buf = link->tx_free[--link->ntx_free];
        ngx_http_goblin_tx_state[buf] = NGX_HTTP_GOBLIN_TX_TAKEN;
        return buf;
    }

    if (ctx->waiting_tx) {
        return NGX_AGAIN;
    }

    glcf = ngx_http_get_module_loc_conf(ctx->request, ngx_http_goblin_module);

    if (link->ntx_waiters >= glcf->put_queue) {
        return NGX_BUSY;
    }

    ngx_queue_insert_tail(&link->tx_waiters, &ctx->tx_wait);
    ctx->waiting_tx = 1;
    link->ntx_waiters++;
    ngx_http_goblin_count(tx_waits, 1);

    return NGX_AGAIN;
}


static void
ngx_http_goblin_tx_give(ngx_http_goblin_link_t *link, uint32_t buf)
{
    ngx_queue_t            *q;
    ngx_connection_t       *c;
    ngx_http_goblin_ctx_t  *ctx;

    if (ngx_queue_empty(&link->tx_waiters)) {
        ngx_http_goblin_tx_state[buf] = NGX_HTTP_GOBLIN_TX_FREE;
        link->tx_free[link->ntx_free++] = buf;
        return;
    }

    /* straight to the request that waited longest */

    ngx_http_goblin_tx_state[buf] = NGX_HTTP_GOBLIN_TX_TAKEN;

    q = ngx_queue_head(&link->tx_waiters);
    ngx_queue_remove(q);

    ctx = ngx_queue_data(q, ngx_http_goblin_ctx_t, tx_wait);
    ctx->waiting_tx = 0;
    link->ntx_waiters--;
    ctx->tx_buf = buf;
    ctx->tx_len = 0;

    c = ctx->request->connection;
    ctx->tx_ready(ctx);
    ngx_http_run_posted_requests(c);
}


/* A request gives back a tx buffer it never filled. */
void
ngx_http_goblin_tx_put(uint32_t buf)
{
    ngx_http_goblin_link_t  *link = ngx_http_goblin_link;

    /* only a buffer a request holds goes back: the free list never
     * holds one twice, nor more than n_tx */

    if (link->state != NGX_HTTP_GOBLIN_UP) {
        return;     /* it went with the attach it belonged to */
    }

    if (buf >= link->map->ring.n_tx
        || ngx_http_goblin_tx_state[buf] != NGX_HTTP_GOBLIN_TX_TAKEN)
    {
        ngx_log_error(NGX_LOG_ALERT, link->log, 0,
                      "goblin: tx buffer %uD given back twice", buf);
        return;
    }

    ngx_http_goblin_tx_state[buf] = NGX_HTTP_GOBLIN_TX_FREE;
    link->tx_free[link->ntx_free++] = buf;

    /* waiters get it from a posted event, not from inside a cleanup */
    if (!ngx_queue_empty(&link->tx_waiters) && !link->tx_kick.posted) {
        ngx_post_event(&link->tx_kick, &ngx_posted_events);
    }
}


static void
ngx_http_goblin_tx_kick_handler(ngx_event_t *ev)
{
    ngx_http_goblin_link_t  *link = ev->data;

    while (link->state == NGX_HTTP_GOBLIN_UP && link->ntx_free
           && !ngx_queue_empty(&link->tx_waiters))
    {
        ngx_http_goblin_tx_give(link, link->tx_free[--link->ntx_free]);
    }
}

