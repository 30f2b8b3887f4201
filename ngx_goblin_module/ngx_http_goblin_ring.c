
/*
 * ngx_http_goblin_module: the worker's link to storaged.
 *
 * At worker start the link connects to goblin_storaged's unix socket,
 * sends a hello, and gets back the head region and its ring over
 * SCM_RIGHTS.  From then on the socket is only a doorbell registered in
 * nginx's event loop: a readable socket means completions to reap, and a
 * posted event writes one byte after a batch of submissions.  When the
 * daemon goes away every request waiting on it is told, and the link
 * reconnects with a growing backoff.
 *
 * The daemon is not trusted blindly: it must run as root or as the owner
 * of the socket's directory, its descriptors must be sealed memfds as
 * large as it says, and every buffer index and count a completion
 * carries is checked against who holds that buffer now; anything else
 * drops the link with an [error].
 */


#include "ngx_http_goblin_module.h"

#include <sys/mman.h>
#include <sys/un.h>


#define NGX_HTTP_GOBLIN_BACKOFF_MIN   100
#define NGX_HTTP_GOBLIN_BACKOFF_MAX   2000
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


static void ngx_http_goblin_connect(ngx_http_goblin_link_t *link);
static void ngx_http_goblin_connected(ngx_event_t *wev);
static void ngx_http_goblin_send_hello(ngx_http_goblin_link_t *link);
static void ngx_http_goblin_read_handler(ngx_event_t *rev);
static ngx_int_t ngx_http_goblin_attach(ngx_http_goblin_link_t *link);
static void ngx_http_goblin_reap(ngx_http_goblin_link_t *link);
static void ngx_http_goblin_orphan(ngx_http_goblin_link_t *link,
    struct ring_cqe *cqe);
static void ngx_http_goblin_flush_backlog(ngx_http_goblin_link_t *link);
static void ngx_http_goblin_ring_bell(ngx_http_goblin_link_t *link);
static void ngx_http_goblin_bell_handler(ngx_event_t *ev);
static void ngx_http_goblin_tx_give(ngx_http_goblin_link_t *link,
    uint32_t buf);
static void ngx_http_goblin_tx_kick_handler(ngx_event_t *ev);
static void ngx_http_goblin_down(ngx_http_goblin_link_t *link,
    ngx_uint_t level, ngx_err_t err, const char *why);
static void ngx_http_goblin_reconnect_handler(ngx_event_t *ev);
static void ngx_http_goblin_send_orphan(ngx_http_goblin_link_t *link,
    ngx_uint_t op, uint32_t handle, uint32_t buf);
static const char *ngx_http_goblin_check_cqe(ngx_http_goblin_link_t *link,
    struct ring_cqe *cqe);
static void ngx_http_goblin_pushed(ngx_http_goblin_link_t *link,
    struct ring_sqe *sqe);


ngx_http_goblin_link_t  *ngx_http_goblin_link;

/* one link per worker process: its buffers' holders live here */
static u_char    ngx_http_goblin_rx_held[RING_BUFS_MAX];  /* nginx's */
static u_char    ngx_http_goblin_tx_state[RING_BUFS_MAX];
static uint64_t  ngx_http_goblin_tx_ud[RING_BUFS_MAX];    /* its WDATA's */


ngx_int_t
ngx_http_goblin_link_init(ngx_cycle_t *cycle,
    ngx_http_goblin_main_conf_t *gmcf)
{
    uint32_t                 i;
    ngx_http_goblin_link_t  *link;

    link = ngx_pcalloc(cycle->pool, sizeof(ngx_http_goblin_link_t));
    if (link == NULL) {
        return NGX_ERROR;
    }

    link->conf = gmcf;
    link->log = cycle->log;
    link->backoff = NGX_HTTP_GOBLIN_BACKOFF_MIN;

    ngx_queue_init(&link->backlog);
    ngx_queue_init(&link->spare);
    ngx_queue_init(&link->tx_waiters);

    link->reconnect.handler = ngx_http_goblin_reconnect_handler;
    link->reconnect.data = link;
    link->reconnect.log = cycle->log;
    link->reconnect.cancelable = 1;

    link->bell.handler = ngx_http_goblin_bell_handler;
    link->bell.data = link;
    link->bell.log = cycle->log;

    link->tx_kick.handler = ngx_http_goblin_tx_kick_handler;
    link->tx_kick.data = link;
    link->tx_kick.log = cycle->log;

    link->nslots = NGX_HTTP_GOBLIN_SLOTS;
    link->slots = ngx_alloc(link->nslots * sizeof(ngx_http_goblin_slot_t),
                            cycle->log);
    if (link->slots == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i < link->nslots; i++) {
        link->slots[i].ctx = NULL;
        link->slots[i].gen = 1;
        link->slots[i].next_free = i + 1;
    }

    link->free_slot = 0;

    link->tx_free = ngx_alloc(RING_BUFS_MAX * sizeof(uint32_t), cycle->log);
    if (link->tx_free == NULL) {
        return NGX_ERROR;
    }

    ngx_http_goblin_link = link;

    ngx_http_goblin_connect(link);

    return NGX_OK;
}


void
ngx_http_goblin_link_exit(ngx_cycle_t *cycle)
{
    ngx_http_goblin_link_t  *link = ngx_http_goblin_link;

    if (link == NULL) {
        return;
    }

    if (link->connection) {
        ngx_close_connection(link->connection);
        link->connection = NULL;
    }

    if (link->map) {
        ngx_http_goblin_map_unref(link->map);
        link->map = NULL;
    }

    ngx_free(link->slots);
    ngx_free(link->tx_free);

    ngx_http_goblin_link = NULL;
}


/* ---- connecting and the hand-over ---- */


static void
ngx_http_goblin_connect(ngx_http_goblin_link_t *link)
{
    int                 rc;
    ngx_err_t           err;
    ngx_addr_t         *addr;
    ngx_socket_t        s;
    ngx_event_t        *rev, *wev;
    ngx_connection_t   *c;

    addr = &link->conf->storaged->addrs[0];

    s = ngx_socket(AF_UNIX, SOCK_STREAM, 0);
    if (s == (ngx_socket_t) -1) {
        ngx_http_goblin_down(link, NGX_LOG_ALERT, ngx_socket_errno,
                             ngx_socket_n " failed");
        return;
    }

    c = ngx_get_connection(s, link->log);
    if (c == NULL) {
        ngx_close_socket(s);
        ngx_http_goblin_down(link, NGX_LOG_ERR, 0,
                             "no free connection for the storaged link");
        return;
    }

    c->type = SOCK_STREAM;
    c->recv = ngx_recv;
    c->send = ngx_send;
    c->log = link->log;
    c->data = link;
    c->number = ngx_atomic_fetch_add(ngx_connection_counter, 1);

    rev = c->read;
    wev = c->write;
    rev->log = link->log;
    wev->log = link->log;
    rev->handler = ngx_http_goblin_read_handler;
    wev->handler = ngx_http_goblin_connected;

    link->connection = c;
    link->state = NGX_HTTP_GOBLIN_CONNECTING;

    if (ngx_nonblocking(s) == -1) {
        ngx_http_goblin_down(link, NGX_LOG_ALERT, ngx_socket_errno,
                             ngx_nonblocking_n " failed");
        return;
    }

    if (ngx_add_conn(c) == NGX_ERROR) {
        ngx_http_goblin_down(link, NGX_LOG_ALERT, 0,
                             "cannot add the storaged link to the event loop");
        return;
    }

    rc = connect(s, addr->sockaddr, addr->socklen);

    if (rc == -1) {
        err = ngx_socket_errno;

        if (err != NGX_EINPROGRESS && err != NGX_EAGAIN) {
            ngx_http_goblin_down(link, NGX_LOG_ERR, err, "connect() failed");
            return;
        }

        /* the listen queue is full: wait until it is writable */

        ngx_add_timer(wev, link->conf->connect_timeout);
        return;
    }

    ngx_http_goblin_send_hello(link);
}


static void
ngx_http_goblin_connected(ngx_event_t *wev)
{
    int                      err;
    socklen_t                len;
    ngx_connection_t        *c;
    ngx_http_goblin_link_t  *link;

    c = wev->data;
    link = c->data;

    if (link->state != NGX_HTTP_GOBLIN_CONNECTING) {
        return;
    }

    if (wev->timedout) {
        ngx_http_goblin_down(link, NGX_LOG_ERR, NGX_ETIMEDOUT,
                             "connect() timed out");
        return;
    }

    err = 0;
    len = sizeof(int);

    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, (void *) &err, &len) == -1) {
        err = ngx_socket_errno;
    }

    if (err) {
        ngx_http_goblin_down(link, NGX_LOG_ERR, err, "connect() failed");
        return;
    }

    if (wev->timer_set) {
        ngx_del_timer(wev);
    }

    ngx_http_goblin_send_hello(link);
}


static void
ngx_http_goblin_send_hello(ngx_http_goblin_link_t *link)
{
    int                  rc;
    char                 why[NGX_MAX_ERROR_STR];
    struct ring_hello    hello;
    ngx_connection_t    *c;
    struct sockaddr_un  *saun;

    c = link->connection;

    /* whoever bound a stale path first must not pose as storaged */

    saun = (struct sockaddr_un *) link->conf->storaged->addrs[0].sockaddr;

    rc = ring_check_server(c->fd, saun->sun_path, why, sizeof(why) - 32);
    if (rc != 0) {
        ngx_memcpy(why + ngx_strlen(why), ", not attaching",
                   sizeof(", not attaching"));
        ngx_http_goblin_down(link, NGX_LOG_ERR, 0, why);
        return;
    }

    ngx_memzero(&hello, sizeof(struct ring_hello));
    hello.magic = RING_MAGIC;
    hello.version = RING_VERSION;
    hello.sq_entries = (uint32_t) link->conf->ring_entries;
    hello.pid = (uint32_t) ngx_pid;

    rc = ring_send_hello(c->fd, &hello);
    if (rc != 0) {
        ngx_http_goblin_down(link, NGX_LOG_ERR, -rc, "sending hello failed");
        return;
    }

    link->state = NGX_HTTP_GOBLIN_HELLO;
    c->write->handler = ngx_http_goblin_connected;

    ngx_add_timer(c->read, link->conf->connect_timeout);

    if (c->read->ready) {
        ngx_http_goblin_read_handler(c->read);
    }
}


/* Maps what the welcome brought; the link is up after this. */
static ngx_int_t
ngx_http_goblin_attach(ngx_http_goblin_link_t *link)
{
    int                     rc, region_fd, ring_fd;
    u_char                 *region;
    uint32_t                i;
    ngx_connection_t       *c;
    struct ring_welcome     w;
    ngx_http_goblin_map_t  *map;

    c = link->connection;

    rc = ring_recv_welcome(c->fd, &w, &region_fd, &ring_fd);

    if (rc == -EAGAIN) {
        return NGX_AGAIN;
    }

    if (rc != 0) {
        ngx_http_goblin_down(link, NGX_LOG_ERR, rc == -EPROTO ? 0 : -rc,
                             rc == -EPROTO ? "bad welcome from storaged"
                                           : "reading the welcome failed");
        return NGX_ERROR;
    }

    if (w.res != 0) {
        ngx_http_goblin_down(link, NGX_LOG_ERR, -w.res,
                             "storaged refused the ring");
        return NGX_ERROR;
    }

    /* a region smaller than it says, or one it could shrink, would
     * fault under the mapping */

    if (w.region_size == 0 || w.region_size > NGX_MAX_SIZE_T_VALUE
        || ring_fd_check(region_fd, w.region_size) != 0)
    {
        close(region_fd);
        close(ring_fd);
        ngx_http_goblin_down(link, NGX_LOG_ERR, 0,
                             "the head region from storaged is not a sealed "
                             "memfd of the size it says");
        return NGX_ERROR;
    }

    map = ngx_calloc(sizeof(ngx_http_goblin_map_t), link->log);
    if (map == NULL) {
        close(region_fd);
        close(ring_fd);
        ngx_http_goblin_down(link, NGX_LOG_ALERT, 0, "out of memory");
        return NGX_ERROR;
    }

    region = mmap(NULL, w.region_size, PROT_READ, MAP_SHARED, region_fd, 0);
    close(region_fd);

    if (region == MAP_FAILED) {
        ngx_free(map);
        close(ring_fd);
        ngx_http_goblin_down(link, NGX_LOG_ALERT, ngx_errno,
                             "mmap() of the head region failed");
        return NGX_ERROR;
    }

    rc = ring_attach(&map->ring, ring_fd, w.ring_size);
    if (rc != 0) {
        munmap(region, w.region_size);
        ngx_free(map);
        close(ring_fd);
        ngx_http_goblin_down(link, NGX_LOG_ERR, rc == -EPROTO ? 0 : -rc,
                             "the ring from storaged does not fit");
        return NGX_ERROR;
    }

    /* only the mapping is needed from here on */
    close(map->ring.fd);
    map->ring.fd = -1;

    map->region = region;
    map->region_size = w.region_size;
    map->refs = 1;

    link->map = map;
    link->state = NGX_HTTP_GOBLIN_UP;
    link->gen++;
    link->backoff = NGX_HTTP_GOBLIN_BACKOFF_MIN;

    link->ntx_free = 0;
    for (i = map->ring.n_tx; i-- > 0; /* void */) {
        link->tx_free[link->ntx_free++] = i;
    }

    ngx_memzero(ngx_http_goblin_rx_held, sizeof(ngx_http_goblin_rx_held));
    ngx_memzero(ngx_http_goblin_tx_state, sizeof(ngx_http_goblin_tx_state));

    if (c->read->timer_set) {
        ngx_del_timer(c->read);
    }

    ngx_log_error(NGX_LOG_NOTICE, link->log, 0,
                  "goblin: attached to storaged at %V (ring of %uD entries, "
                  "%uD+%uD staging buffers, head region %uz bytes)",
                  &link->conf->storaged->url, map->ring.sq_entries,
                  map->ring.n_rx, map->ring.n_tx, map->region_size);

    return NGX_OK;
}


/* ---- the doorbell ---- */


static void
ngx_http_goblin_read_handler(ngx_event_t *rev)
{
    int                      rc;
    ngx_connection_t        *c;
    ngx_http_goblin_link_t  *link;

    c = rev->data;
    link = c->data;

    if (rev->timedout) {
        ngx_http_goblin_down(link, NGX_LOG_ERR, NGX_ETIMEDOUT,
                             "no welcome from storaged");
        return;
    }

    if (link->state == NGX_HTTP_GOBLIN_HELLO) {
        rc = ngx_http_goblin_attach(link);

        if (rc == NGX_ERROR) {
            return;
        }

        if (rc == NGX_AGAIN) {
            rev->ready = 0;
            if (ngx_handle_read_event(rev, 0) != NGX_OK) {
                ngx_http_goblin_down(link, NGX_LOG_ALERT, 0,
                                     "ngx_handle_read_event() failed");
            }
            return;
        }
    }

    if (link->state != NGX_HTTP_GOBLIN_UP) {
        return;
    }

    rc = ring_doorbell_drain(c->fd);

    if (rc < 0) {
        ngx_http_goblin_down(link, NGX_LOG_ERR,
                             rc == -ECONNRESET ? 0 : -rc,
                             rc == -ECONNRESET ? "storaged closed the link"
                                               : "doorbell read failed");
        return;
    }

    rev->ready = 0;

    ngx_http_goblin_reap(link);

    if (link->state != NGX_HTTP_GOBLIN_UP) {
        return;
    }

    ngx_http_goblin_flush_backlog(link);

    if (ngx_handle_read_event(rev, 0) != NGX_OK) {
        ngx_http_goblin_down(link, NGX_LOG_ALERT, 0,
                             "ngx_handle_read_event() failed");
    }
}


/* Takes every completion and hands it to its request, or undoes it. */
static void
ngx_http_goblin_reap(ngx_http_goblin_link_t *link)
{
    int                      rc;
    uint32_t                 idx;
    const char              *why;
    ngx_connection_t        *c;
    struct ring_cqe          cqe;
    ngx_http_goblin_map_t   *map;
    ngx_http_goblin_ctx_t   *ctx;
    ngx_http_goblin_slot_t  *slot;

    map = link->map;

    while (link->state == NGX_HTTP_GOBLIN_UP
           && (rc = ring_cq_pop(&map->ring, &cqe)) == 1)
    {
        why = ngx_http_goblin_check_cqe(link, &cqe);

        if (why != NULL) {
            ngx_http_goblin_down(link, NGX_LOG_ERR, 0, why);
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

        ngx_http_goblin_complete(ctx, &cqe);

        ngx_http_run_posted_requests(c);
    }

    if (link->state != NGX_HTTP_GOBLIN_UP) {
        return;
    }

    if (rc < 0) {
        ngx_http_goblin_down(link, NGX_LOG_ERR, 0,
                             "the completion queue indices are corrupt");
        return;
    }

    if (ring_cq_wants_doorbell(&map->ring)) {
        ngx_http_goblin_ring_bell(link);
    }
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


/* A completion nobody waits for any more: give back what it brought. */
static void
ngx_http_goblin_orphan(ngx_http_goblin_link_t *link, struct ring_cqe *cqe)
{
    switch (cqe->op) {

    case RING_OP_LOOKUP:
        if (cqe->res == 0) {
            ngx_http_goblin_send_orphan(link, RING_OP_RELEASE, cqe->handle, 0);
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


ngx_int_t
ngx_http_goblin_linked(ngx_http_goblin_ctx_t *ctx)
{
    ngx_http_goblin_link_t  *link = ngx_http_goblin_link;

    return link != NULL && link->state == NGX_HTTP_GOBLIN_UP
           && ctx->link_gen == link->gen;
}


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
            ngx_http_goblin_down(link, NGX_LOG_ALERT, 0,
                                 "out of memory for the backlog");
            return;
        }
    }

    b->sqe = *sqe;
    ngx_queue_insert_tail(&link->backlog, &b->queue);
    link->stats.backlog_waits++;

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


/* One doorbell for every submission made in this turn of the loop. */
static void
ngx_http_goblin_bell_handler(ngx_event_t *ev)
{
    int                      rc;
    ngx_http_goblin_link_t  *link;

    link = ev->data;

    if (link->state != NGX_HTTP_GOBLIN_UP) {
        return;
    }

    rc = ring_doorbell(link->connection->fd);
    if (rc != 0) {
        ngx_http_goblin_down(link, NGX_LOG_ERR, -rc, "doorbell write failed");
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
 * A tx buffer for <ctx>'s PUT, or -1: it is queued and told when one is.
 * A PUT keeps its buffer from WOPEN to WFINISH: a writer that holds engine
 * buffers must always be able to feed them, whatever the others do.
 */
ngx_int_t
ngx_http_goblin_tx_take(ngx_http_goblin_ctx_t *ctx)
{
    uint32_t                 buf;
    ngx_http_goblin_link_t  *link = ngx_http_goblin_link;

    if (!ngx_http_goblin_linked(ctx)) {
        return -1;
    }

    if (link->ntx_free && ngx_queue_empty(&link->tx_waiters)) {
        buf = link->tx_free[--link->ntx_free];
        ngx_http_goblin_tx_state[buf] = NGX_HTTP_GOBLIN_TX_TAKEN;
        return buf;
    }

    if (!ctx->waiting_tx) {
        ngx_queue_insert_tail(&link->tx_waiters, &ctx->tx_wait);
        ctx->waiting_tx = 1;
        link->stats.tx_waits++;
    }

    return -1;
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
    ctx->tx_buf = buf;
    ctx->tx_len = 0;

    c = ctx->request->connection;
    ngx_http_goblin_tx_ready(ctx);
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


/* ---- losing the daemon ---- */


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


/*
 * Closes the link: requests waiting on it are told (502, or a cut
 * connection once headers went out), and a reconnect is scheduled.
 */
static void
ngx_http_goblin_down(ngx_http_goblin_link_t *link, ngx_uint_t level,
    ngx_err_t err, const char *why)
{
    uint32_t                    i;
    ngx_queue_t                *q;
    ngx_connection_t           *c;
    ngx_http_goblin_ctx_t      *ctx;
    ngx_http_goblin_backlog_t  *b;

    if (link->state == NGX_HTTP_GOBLIN_UP || link->backoff
                                            == NGX_HTTP_GOBLIN_BACKOFF_MIN)
    {
        ngx_log_error(level, link->log, err,
                      "goblin: %s; storaged at %V unreachable, retrying",
                      why, &link->conf->storaged->url);

    } else {
        ngx_log_error(NGX_LOG_INFO, link->log, err,
                      "goblin: %s; retrying in %Mms", why, link->backoff);
    }

    link->state = NGX_HTTP_GOBLIN_DOWN;

    if (link->connection) {
        ngx_close_connection(link->connection);
        link->connection = NULL;
    }

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
        ngx_http_goblin_link_lost(ctx);
        ngx_http_run_posted_requests(c);
    }

    ngx_add_timer(&link->reconnect, link->backoff);

    link->backoff *= 2;
    if (link->backoff > NGX_HTTP_GOBLIN_BACKOFF_MAX) {
        link->backoff = NGX_HTTP_GOBLIN_BACKOFF_MAX;
    }
}


static void
ngx_http_goblin_reconnect_handler(ngx_event_t *ev)
{
    ngx_http_goblin_link_t  *link = ev->data;

    if (ngx_exiting || ngx_terminate || ngx_quit) {
        return;
    }

    link->stats.reconnects++;
    ngx_http_goblin_connect(link);
}
