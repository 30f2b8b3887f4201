/*
 * The nginx link's insides, shared by link_conn.c, link_ops.c,
 * link_attr.c, link_direct.c and link_server.c: a worker's connection,
 * its handles and buffers, and the server that holds them.  Not for use
 * outside the link.
 *
 * nginx workers attach over a unix socket, get the head region and a ring
 * of their own (shared/ring-t.h), and from then on talk through the ring
 * with one-byte doorbells.  One thread with its own gs_io serves them
 * all, in a loop.c loop over the listener, the workers' sockets and the
 * gs_io descriptor.
 *
 * A handle is what a worker holds: a pinned object (LOOKUP, until
 * RELEASE), possibly streaming its disk part into rx buffers (READ), or a
 * writer (WOPEN .. WFINISH).  Handles, buffers and completions that do
 * not fit the CQ live in the worker's struct link_conn; when its socket
 * closes every pin is dropped and every writer aborted.  A writer whose
 * commit is in flight keeps the conn's memory until its done callback
 * has run.
 *
 * Trust: only root, goblin-store's user, --socket-user and members of
 * --socket-group attach (SO_PEERCRED, link_peer_allowed); the socket
 * lives in a directory nobody else can write (claim_dir, dirtrust.h).  An attached
 * worker is still not trusted with the daemon's memory: each SQE is
 * copied out of the ring once (ring_sq_pop) and every index, offset and
 * length is checked on that copy; a worker holds at most LINK_HANDLES_MAX
 * handles, pins of max_pins distinct objects, 2 * n_tx unfinished
 * writers, and LINK_MAX_WORKERS attach at once.
 *
 * Threading: everything here runs on the link thread (or, local, on the
 * caller's thread: t/unit/link_local.c); nothing takes a lock.
 */
#ifndef GOBLIN_STORAGED_LINK_INTERNAL_H
#define GOBLIN_STORAGED_LINK_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>

#include "goblin.h"
#include "link.h"
#include "list.h"
#include "loop.h"
#include "ring.h"
#include "stats.h"		/* LINK_STATS, enum link_stat */

/* The ring's key field carries any key the engine takes, and no more. */
_Static_assert(RING_KEY_MAX == GS_KEY_MAX, "ring and engine key limits differ");
/* ... and its attributes, which a LOOKUP_ATTR hands over in one rx buffer. */
_Static_assert(RING_ATTR_MAX == GS_ATTR_MAX, "ring and engine attribute limits differ");
_Static_assert(RING_ATTR_MAX <= RING_BUF_SIZE, "attributes fit an rx buffer");
/* WOPEN's and ring_meta's unknown size is the engine's. */
_Static_assert(RING_SIZE_UNKNOWN == GS_SIZE_UNKNOWN, "unknown sizes differ");

#define MAX_OVERFLOW	65536u		/* completions held back per worker */

/* A handle: free, a pinned object (maybe READing), a writer, a STATS. */
enum handle_kind { H_FREE, H_OBJ, H_WRITER, H_STATS };
/* RX_DIRECT: in a direct READ's quad, the disk may be reading into it. */
enum rx_state { RX_FREE, RX_FILLING, RX_NGINX, RX_DIRECT };

/* A WDATA waiting to be copied into the writer. */
struct wdata {
	uint64_t ud;
	uint32_t buf;
	uint32_t len;
	uint32_t done;
};

struct link_conn;
struct link_server;

struct link_handle {
	struct link_conn *c;
	uint32_t id;			/* gen << 16 | index, 0 when free */
	uint16_t gen;
	uint8_t kind;
	bool on_ready;
	struct list ready_link;		/* srv->ready */
	struct list wait_link;		/* c->buf_waiters */
	uint64_t ud;			/* READ or STATS user_data */

	/* H_OBJ */
	struct gs_obj *obj;
	struct gs_stream *s;
	struct link_direct *d;		/* s reads into rx buffers, or NULL */
	uint64_t pos;			/* object offset of the next byte */
	uint64_t limit;			/* ... and how far nginx lets us stage */
	uint64_t end;			/* the READ's end */
	uint64_t fill_off;
	int fill;			/* rx buffer being filled, or -1 */
	uint32_t fill_len;
	uint32_t nbufs;			/* rx buffers out with nginx */
	bool lookup_attr;		/* LOOKUP_ATTR waits for an rx buffer */

	/* H_WRITER */
	struct gs_writer *w;
	struct wdata *q;		/* n_tx slots */
	uint32_t qhead, qlen;
	uint64_t size, given;
	int error;
	bool finish, finishing, orphan;
	uint64_t finish_ud;
	uint8_t cond;			/* WFINISH's enum gs_if, and its CAS */
	uint64_t cas;
	char *attr;			/* WOPEN's attr_len bytes, as they come */
	uint32_t attr_len, attr_got;
	uint16_t klen;
	char key[RING_KEY_MAX];

	struct link_handle *next_free;
};

struct pin_slot {
	const struct gs_obj *obj;	/* NULL: empty */
	uint32_t n;			/* handles pinning it */
};

/* One attached nginx worker: its ring, handles, buffers and pins. */
struct link_conn {
	struct link_server *srv;
	int fd;				/* -1 for a local (test) worker */
	pid_t pid;
	uid_t uid;
	bool welcomed, dead, bell;
	unsigned busy;			/* writer commits in flight */
	struct ring ring;
	struct link_handle *h;
	uint32_t nh;
	struct link_handle *free_h;
	uint32_t nkind[H_STATS + 1];	/* live handles of each kind */
	struct pin_slot *pinset;	/* distinct objects pinned */
	uint32_t pin_cap, npinned;
	uint32_t *rx_free;
	uint32_t nrx_free;
	uint8_t *rx_state;
	uint32_t *rx_owner;		/* handle id, 0 for STATS */
	uint8_t *tx_daemon;		/* tx buffer handed to us */
	uint32_t per_stream;		/* rx buffers one READ may hold */
	unsigned ndirect;		/* streams that may write into the ring */
	struct list buf_waiters;
	struct ring_cqe *over;		/* CQ overflow, a FIFO */
	uint32_t over_head, over_len, over_cap;
	struct list link;		/* srv->conns */
};

/* The socket, the thread and every worker (or, local, just the workers). */
/*
 * What a worker's connection (link_conn.c, the link's lowest file) needs
 * from the files above it: its submissions served and its handles dropped
 * (link_ops.c), listening again once a descriptor is back (link_server.c).
 * link_server_new sets the one table; the calls go down the files, these
 * come up through it.  Who calls whom (t/check-front-calls checks it
 * against the objects; no circle):
 *
 *   link_server  ->  link_conn link_ops
 *   link_ops     ->  link_conn link_direct link_attr
 *   link_direct  ->  link_conn
 *   link_attr    ->  link_conn
 *   link_conn    ->
 */
struct link_upcalls {
	void (*drain_sq)(struct link_conn *c);
	unsigned (*drop_handles)(struct link_conn *c);
	void (*fd_back)(struct link_server *srv);
};

struct link_server {
	const struct link_upcalls *up;
	struct gs_engine *e;
	struct gs_io *io;
	struct loop loop;		/* epoll, stop, listener, gs_io */
	int lfd;			/* the listening socket, -1: local */
	int spare_fd;			/* given up to shed a worker on EMFILE */
	bool listen_paused;		/* out of descriptors, even the spare */
	int region_fd;			/* O_RDONLY reopen of the region memfd */
	uint64_t region_size;
	pthread_t thread;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct list conns;
	struct list ready;
	unsigned nconns;
	uint32_t max_pins;		/* distinct objects per worker */
	uint64_t st[ST_MAX];
	link_snapshot_fn snapshot;	/* NULL: STATS has the engine's only */
	void *snapshot_arg;

	/* who may attach besides root and goblin-store's own user */
	uid_t user_uid;
	gid_t group_gid;
	bool has_user, has_group;
	time_t refusal_logged;

	/* start-up handshake with the thread */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int start_res;
	bool started;
};

/* ---- link_conn.c ---- */

/* Holds <cqe> back for a full CQ; drops the worker past MAX_OVERFLOW. */
void link_cqe_overflow(struct link_conn *c, const struct ring_cqe *cqe);

/* A worker on socket <fd> (-1: local), on <srv>'s list; NULL without
 * memory.  link_conn_free unlinks and frees it (after link_conn_kill). */
struct link_conn *link_conn_new(struct link_server *srv, int fd);
void link_conn_free(struct link_conn *c);

/* Maps a fresh ring of geometry <hello> for <c>, with its tables.
 * Returns 0 or -errno. */
int link_conn_setup(struct link_conn *c, struct ring_hello *hello);

/* Counts and logs <c> as attached. */
void link_conn_attached(struct link_conn *c);

/* <c>'s socket is readable: the hello, or doorbells. */
void link_conn_event(struct link_conn *c);

/*
 * Drops a worker: every pin released, every writer aborted, the socket
 * closed.  The memory goes at the end of the round, once no writer commit
 * is in flight.  <why> NULL: the worker went away.
 */
void link_conn_kill(struct link_conn *c, const char *why);

/* Whether the peer of <cred> may attach to <srv>. */
bool link_peer_allowed(const struct link_server *srv, const struct ucred *cred);

/* True at most once a second: a flood of refusals must not flood the log
 * (the counters have every one). */
bool link_refusal_log_due(struct link_server *srv);

/* ---- link_ops.c ---- */

/* Serves every submission <c>'s worker has queued. */
void link_drain_sq(struct link_conn *c);

/* Runs every handle that was made ready (streams, writers, STATS). */
void link_run_ready(struct link_server *srv);

/* Releases every pin of <c>, aborts its writers; returns the pins. */
unsigned link_drop_handles(struct link_conn *c);

/* ---- link_direct.c ---- */

/* Opens <h>'s stream straight into rx buffers it takes for it: 0, or
 * -EAGAIN (no room: copy instead) or -errno. */
int link_direct_open(struct link_handle *h);
/* The rx buffer the direct <h>'s stream handed out <data> from, or -1
 * (bytes from RAM: copy them). */
int link_direct_buf(const struct link_handle *h, const void *data);
/* Stages what rx buffer <b> holds from <data> (<len> bytes of the stream,
 * peeked) and consumes it; false when it may not go yet (past the READ's
 * grant: a MORE brings us back). */
bool link_direct_stage(struct link_handle *h, int b, const void *data,
		       size_t len);
/* nginx gave back rx buffer <b>: true when it is one of the direct <h>'s. */
bool link_direct_bufrel(struct link_handle *h, uint32_t b);
/* Closes the direct <h>'s stream; its buffers come free as nginx gives
 * them back and once its reads are over. */
void link_direct_close(struct link_handle *h);

/* ---- link_attr.c: attributes, conditions ---- */

/* The LOOKUP completion of <h>'s pinned object: handle, meta, attr_len. */
void link_lookup_meta(struct link_handle *h, struct ring_cqe *cqe);
/* LOOKUP_ATTR: the attributes copied into an rx buffer handed over with
 * <cqe> (cqe->buf; RING_NO_BUF when there are none), meta.attr_len what
 * was copied; false when no rx buffer is free (then wait for one, with
 * h->lookup_attr set: link_pump_lookup_attr() posts the completion). */
bool link_lookup_attr_buf(struct link_handle *h, struct ring_cqe *cqe);
void link_pump_lookup_attr(struct link_handle *h);
/* WOPEN's attr_len: the first so many bytes the WDATAs carry are the
 * attributes (h->attr).  0, -E2BIG (over RING_ATTR_MAX) or -ENOMEM. */
int link_wopen_attr(struct link_handle *h, const struct ring_sqe *sqe);
/* Takes the attributes' bytes off the front of queued WDATA <q>, handing
 * them to the writer (gs_writer_attr) once whole; true when <q> held
 * nothing else (give it back). */
bool link_writer_take_attr(struct link_handle *h, struct wdata *q);
/* SETATTR: the pinned object's attributes become the <len> bytes of tx
 * buffer <buf>, which is nginx's again with the completion (no TXDONE):
 * 0, -ENOENT (no longer its key's live object), -E2BIG, -EINVAL (no such
 * handle). */
void link_op_setattr(struct link_conn *c, const struct ring_sqe *sqe);
/* WFINISH: sqe.cond as h->cond (enum gs_if), sqe.off as h->cas; -EINVAL
 * for an unknown condition. */
int link_wfinish_cond(struct link_handle *h, const struct ring_sqe *sqe);

/* ---- link_server.c ---- */

/* A descriptor came back: listen again if out of them before. */
void link_listen_resume(struct link_server *srv);

/* The distinct objects one worker may pin when the RAM region holds
 * <head_slots> heads: a quarter of them, within [LINK_PINS_MIN,
 * LINK_HANDLES_MAX]. */
uint32_t link_pins_bound(uint64_t head_slots);

/* A server over <e> with no socket, thread or gs_io yet, whose workers
 * pin at most <max_pins> objects each; NULL without memory.
 * link_server_free closes what it holds and frees it (no worker left). */
struct link_server *link_server_new(struct gs_engine *e, uint32_t max_pins);
void link_server_free(struct link_server *srv);

/* End of a round: queued completions out, doorbells rung, dead workers
 * freed once nothing refers to them. */
void link_end_round(struct link_server *srv);

/* Drops every worker, then lets in-flight commits finish (on srv->io). */
void link_drop_all(struct link_server *srv);

/* ---- handles, completions, rx buffers: the hot path, inline ---- */

static inline struct link_handle *handle_get(struct link_conn *c,
					      enum handle_kind kind)
{
	struct link_handle *h = c->free_h;

	if (!h)
		return NULL;
	c->free_h = h->next_free;
	c->nkind[kind]++;
	h->kind = kind;
	h->gen = h->gen == 0xffff ? 1 : h->gen + 1;
	h->id = (uint32_t)h->gen << 16 | (uint32_t)(h - c->h);
	h->fill = -1;
	return h;
}

static inline void handle_put(struct link_handle *h)
{
	struct link_conn *c = h->c;
	uint16_t gen = h->gen;

	if (h->on_ready)
		list_del(&h->ready_link);
	list_del(&h->wait_link);
	c->nkind[h->kind]--;
	free(h->q);
	free(h->attr);
	memset(h, 0, sizeof(*h));
	h->c = c;
	h->gen = gen;
	list_init(&h->ready_link);
	list_init(&h->wait_link);
	h->next_free = c->free_h;
	c->free_h = h;
}

/* The live handle <id> of <kind>, or NULL. */
static inline struct link_handle *handle_find(struct link_conn *c,
					       uint32_t id,
					       enum handle_kind kind)
{
	uint32_t idx = id & 0xffff;

	if (!id || idx >= c->nh || c->h[idx].id != id || c->h[idx].kind != kind)
		return NULL;
	return &c->h[idx];
}

static inline void mark_ready(struct link_handle *h)
{
	if (h->on_ready)
		return;
	h->on_ready = true;
	list_add_tail(&h->c->srv->ready, &h->ready_link);
}

/* Engine wake callbacks (from gs_io_run): come back to the handle later. */
static inline void handle_wake(void *arg)
{
	mark_ready(arg);
}

/* Queues <cqe> for <c>'s worker: in the CQ, or behind it when it is full
 * (link_cqe_overflow). */
static inline void post_cqe(struct link_conn *c, const struct ring_cqe *cqe)
{
	if (c->dead)
		return;
	c->bell = true;
	if (!c->over_len && ring_cq_push(&c->ring, cqe) == 0)
		return;
	link_cqe_overflow(c, cqe);
}

/* Moves held-back completions into the CQ while it has room. */
static inline void flush_overflow(struct link_conn *c)
{
	while (c->over_len &&
	       ring_cq_push(&c->ring, &c->over[c->over_head]) == 0) {
		c->over_head = (c->over_head + 1) % c->over_cap;
		c->over_len--;
		c->bell = true;
	}
}

static inline int rx_take(struct link_conn *c)
{
	uint32_t b;

	if (!c->nrx_free)
		return -1;
	b = c->rx_free[--c->nrx_free];
	c->rx_state[b] = RX_FILLING;
	return (int)b;
}

/*
 * An rx buffer is free again: every READ waiting for one gets a go, in
 * the order they waited.  (Waking only the first would lose the buffer
 * when that READ cannot take it just now: its grant is used up.)
 */
static inline void rx_give(struct link_conn *c, uint32_t b)
{
	struct link_handle *h;

	c->rx_state[b] = RX_FREE;
	c->rx_owner[b] = 0;
	c->rx_free[c->nrx_free++] = b;
	while (!list_empty(&c->buf_waiters)) {
		h = list_entry(c->buf_waiters.next, struct link_handle,
			       wait_link);
		list_del(&h->wait_link);
		mark_ready(h);
	}
}

static inline void wait_for_buffer(struct link_handle *h)
{
	if (list_empty(&h->wait_link)) {
		list_add_tail(&h->c->buf_waiters, &h->wait_link);
		h->c->srv->st[ST_ring_buffer_waits]++;
	}
}

#endif /* GOBLIN_STORAGED_LINK_INTERNAL_H */
