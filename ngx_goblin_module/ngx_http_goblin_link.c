
/*
 * ngx_http_goblin_module: the worker's link to storaged, its connection
 * side (the ring itself is ngx_http_goblin_ring.c).
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
 * carries is checked against who holds that buffer now (in
 * ngx_http_goblin_ring.c); anything else drops the link with an [error].
 */


#include "ngx_http_goblin_module.h"

#include <sys/mman.h>
#include <sys/un.h>


#define NGX_HTTP_GOBLIN_BACKOFF_MIN   100
#define NGX_HTTP_GOBLIN_BACKOFF_MAX   2000


static void ngx_http_goblin_connect(ngx_http_goblin_link_t *link);
static void ngx_http_goblin_connected(ngx_event_t *wev);
static void ngx_http_goblin_send_hello(ngx_http_goblin_link_t *link);
static void ngx_http_goblin_read_handler(ngx_event_t *rev);
static void ngx_http_goblin_bell_handler(ngx_event_t *ev);
static ngx_int_t ngx_http_goblin_attach(ngx_http_goblin_link_t *link);
static void ngx_http_goblin_link_down(ngx_http_goblin_link_t *link,
    ngx_uint_t level, ngx_err_t err, const char *why);
static void ngx_http_goblin_reconnect_handler(ngx_event_t *ev);


ngx_int_t
ngx_http_goblin_link_init(ngx_cycle_t *cycle,
    ngx_http_goblin_main_conf_t *gmcf)
{
    ngx_http_goblin_link_t  *link;

    link = ngx_pcalloc(cycle->pool, sizeof(ngx_http_goblin_link_t));
    if (link == NULL) {
        return NGX_ERROR;
    }

    link->conf = gmcf;
    link->log = cycle->log;
    link->down = ngx_http_goblin_link_down;
    link->backoff = NGX_HTTP_GOBLIN_BACKOFF_MIN;

    link->bell.handler = ngx_http_goblin_bell_handler;
    link->bell.data = link;
    link->bell.log = link->log;

    link->reconnect.handler = ngx_http_goblin_reconnect_handler;
    link->reconnect.data = link;
    link->reconnect.log = cycle->log;
    link->reconnect.cancelable = 1;

    if (ngx_http_goblin_ring_init(link) != NGX_OK) {
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

    ngx_http_goblin_ring_exit(link);

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
        ngx_http_goblin_link_down(link, NGX_LOG_ALERT, ngx_socket_errno,
                                  ngx_socket_n " failed");
        return;
    }

    c = ngx_get_connection(s, link->log);
    if (c == NULL) {
        ngx_close_socket(s);
        ngx_http_goblin_link_down(link, NGX_LOG_ERR, 0,
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
        ngx_http_goblin_link_down(link, NGX_LOG_ALERT, ngx_socket_errno,
                                  ngx_nonblocking_n " failed");
        return;
    }

    if (ngx_add_conn(c) == NGX_ERROR) {
        ngx_http_goblin_link_down(link, NGX_LOG_ALERT, 0,
                                  "cannot add the storaged link to the "
                                  "event loop");
        return;
    }

    rc = connect(s, addr->sockaddr, addr->socklen);

    if (rc == -1) {
        err = ngx_socket_errno;

        if (err != NGX_EINPROGRESS && err != NGX_EAGAIN) {
            ngx_http_goblin_link_down(link, NGX_LOG_ERR, err,
                                      err == NGX_EACCES
                                      ? "connect() failed: this worker's "
                                        "user may not reach the socket "
                                        "(goblin-store --socket-group or "
                                        "--socket-user)"
                                      : "connect() failed");
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
        ngx_http_goblin_link_down(link, NGX_LOG_ERR, NGX_ETIMEDOUT,
                                  "connect() timed out");
        return;
    }

    err = 0;
    len = sizeof(int);

    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, (void *) &err, &len) == -1) {
        err = ngx_socket_errno;
    }

    if (err) {
        ngx_http_goblin_link_down(link, NGX_LOG_ERR, err, "connect() failed");
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
        ngx_http_goblin_link_down(link, NGX_LOG_ERR, 0, why);
        return;
    }

    ngx_memzero(&hello, sizeof(struct ring_hello));
    hello.magic = RING_MAGIC;
    hello.version = RING_VERSION;
    hello.sq_entries = (uint32_t) link->conf->ring_entries;
    hello.pid = (uint32_t) ngx_pid;

    rc = ring_send_hello(c->fd, &hello);
    if (rc != 0) {
        ngx_http_goblin_link_down(link, NGX_LOG_ERR, -rc,
                                  "sending hello failed");
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
    ngx_connection_t       *c;
    struct ring_welcome     w;
    ngx_http_goblin_map_t  *map;

    c = link->connection;

    rc = ring_recv_welcome(c->fd, &w, &region_fd, &ring_fd);

    if (rc == -EAGAIN) {
        return NGX_AGAIN;
    }

    if (rc != 0) {
        ngx_http_goblin_link_down(link, NGX_LOG_ERR, rc == -EPROTO ? 0 : -rc,
                                  rc == -EPROTO
                                  ? "bad welcome from storaged"
                                  : "reading the welcome failed");
        return NGX_ERROR;
    }

    if (w.res != 0) {
        ngx_http_goblin_link_down(link, NGX_LOG_ERR, -w.res,
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
        ngx_http_goblin_link_down(link, NGX_LOG_ERR, 0,
                                  "the head region from storaged is not "
                                  "a sealed memfd of the size it says");
        return NGX_ERROR;
    }

    map = ngx_calloc(sizeof(ngx_http_goblin_map_t), link->log);
    if (map == NULL) {
        close(region_fd);
        close(ring_fd);
        ngx_http_goblin_link_down(link, NGX_LOG_ALERT, 0, "out of memory");
        return NGX_ERROR;
    }

    region = mmap(NULL, w.region_size, PROT_READ, MAP_SHARED, region_fd, 0);
    close(region_fd);

    if (region == MAP_FAILED) {
        ngx_free(map);
        close(ring_fd);
        ngx_http_goblin_link_down(link, NGX_LOG_ALERT, ngx_errno,
                                  "mmap() of the head region failed");
        return NGX_ERROR;
    }

    rc = ring_attach(&map->ring, ring_fd, w.ring_size);
    if (rc != 0) {
        munmap(region, w.region_size);
        ngx_free(map);
        close(ring_fd);
        ngx_http_goblin_link_down(link, NGX_LOG_ERR, rc == -EPROTO ? 0 : -rc,
                                  "the ring from storaged does not fit");
        return NGX_ERROR;
    }

    /* only the mapping is needed from here on */
    close(map->ring.fd);
    map->ring.fd = -1;

    map->region = region;
    map->region_size = w.region_size;
    map->store_id = w.store_id;
    map->refs = 1;

    link->map = map;
    link->state = NGX_HTTP_GOBLIN_UP;
    link->gen++;
    link->backoff = NGX_HTTP_GOBLIN_BACKOFF_MIN;

    ngx_http_goblin_ring_attached(link);

    if (c->read->timer_set) {
        ngx_del_timer(c->read);
    }

    ngx_log_error(NGX_LOG_NOTICE, link->log, 0,
                  "goblin: attached to storaged at %V (ring of %uD entries, "
                  "%uD+%uD staging buffers, head region %uz bytes, store %016uxL)",
                  &link->conf->storaged->url, map->ring.sq_entries,
                  map->ring.n_rx, map->ring.n_tx, map->region_size,
                  map->store_id);

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
        ngx_http_goblin_link_down(link, NGX_LOG_ERR, NGX_ETIMEDOUT,
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
                ngx_http_goblin_link_down(link, NGX_LOG_ALERT, 0,
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
        ngx_http_goblin_link_down(link, NGX_LOG_ERR,
                                  rc == -ECONNRESET ? 0 : -rc,
                                  rc == -ECONNRESET
                                  ? "storaged closed the link"
                                  : "doorbell read failed");
        return;
    }

    rev->ready = 0;

    ngx_http_goblin_reap(link);

    if (link->state != NGX_HTTP_GOBLIN_UP) {
        return;
    }

    if (ngx_handle_read_event(rev, 0) != NGX_OK) {
        ngx_http_goblin_link_down(link, NGX_LOG_ALERT, 0,
                                  "ngx_handle_read_event() failed");
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
        ngx_http_goblin_link_down(link, NGX_LOG_ERR, -rc,
                                  "doorbell write failed");
    }
}


/* ---- losing the daemon ---- */


/*
 * Closes the link: requests waiting on it are told (502, or a cut
 * connection once headers went out), and a reconnect is scheduled.
 */
static void
ngx_http_goblin_link_down(ngx_http_goblin_link_t *link, ngx_uint_t level,
    ngx_err_t err, const char *why)
{
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

    ngx_http_goblin_ring_detach(link);

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

    ngx_http_goblin_count(reconnects, 1);
    ngx_http_goblin_connect(link);
}
