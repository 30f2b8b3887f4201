/*
 * The ring server: nginx workers attach over a unix socket, get the head
 * region and a ring of their own (shared/ring-t.h), and from then on talk
 * through the ring with one-byte doorbells.  One thread with its own gs_io
 * serves them all, sleeping in epoll on the listener, the workers' sockets
 * and the gs_io descriptor.
 *
 * A handle is what a worker holds: a pinned object (LOOKUP, until
 * RELEASE), possibly streaming its disk part into rx buffers (READ), or a
 * writer (WOPEN .. WFINISH).  Handles, buffers and completions that do not
 * fit the CQ live in the worker's struct ring_conn; when its socket closes every
 * pin is dropped and every writer aborted.  A writer whose commit is in
 * flight keeps the conn's memory until its done callback has run.
 *
 * Trust: only root, goblin-store's user, --socket-user and members of
 * --socket-group attach (SO_PEERCRED, peer_allowed); the socket lives in
 * a directory nobody else can write (claim_dir).  An attached worker is
 * still not trusted with the daemon's memory: each SQE is copied out of
 * the ring once (ring_sq_pop) and every index, offset and length is
 * checked on that copy; a worker holds at most RING_HANDLES_MAX handles,
 * pins of max_pins distinct objects, 2 * n_tx unfinished writers, and
 * RING_MAX_WORKERS
 * attach at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <pthread.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "goblin.h"
#include "log.h"
#include "mc_items.h"
#include "ring.h"
#include "../shared/ring.h"

#define MAX_OVERFLOW	65536u		/* completions held back per worker */

struct list {
	struct list *next, *prev;
};

static void list_init(struct list *l)
{
	l->next = l->prev = l;
}

static bool list_empty(const struct list *l)
{
	return l->next == l;
}

static void list_add_tail(struct list *l, struct list *n)
{
	n->prev = l->prev;
	n->next = l;
	l->prev->next = n;
	l->prev = n;
}

static void list_del(struct list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	list_init(n);
}

#define list_entry(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))

enum handle_kind { H_FREE, H_OBJ, H_WRITER, H_STATS };
enum rx_state { RX_FREE, RX_FILLING, RX_NGINX };

/* A WDATA waiting to be copied into the writer. */
struct wdata {
	uint64_t ud;
	uint32_t buf;
	uint32_t len;
	uint32_t done;
};

struct ring_conn;

struct ring_handle {
	struct ring_conn *c;
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
	uint64_t pos;			/* object offset of the next byte */
	uint64_t limit;			/* ... and how far nginx lets us stage */
	uint64_t end;			/* the READ's end */
	uint64_t fill_off;
	int fill;			/* rx buffer being filled, or -1 */
	uint32_t fill_len;
	uint32_t nbufs;			/* rx buffers out with nginx */

	/* H_WRITER */
	struct gs_writer *w;
	struct wdata *q;		/* n_tx slots */
	uint32_t qhead, qlen;
	uint64_t size, given;
	int error;
	bool finish, finishing, orphan;
	uint64_t finish_ud;
	uint16_t klen;
	char key[RING_KEY_MAX];

	struct ring_handle *next_free;
};

struct ring_server;

struct pin_slot {
	const struct gs_obj *obj;	/* NULL: empty */
	uint32_t n;			/* handles pinning it */
};

struct ring_conn {
	struct ring_server *srv;
	int fd;				/* -1 for a local (test) worker */
	pid_t pid;
	uid_t uid;
	bool welcomed, dead, bell;
	unsigned busy;			/* writer commits in flight */
	struct ring ring;
	struct ring_handle *h;
	uint32_t nh;
	struct ring_handle *free_h;
	uint32_t nkind[H_STATS + 1];	/* live handles of each kind */
	struct pin_slot *pinset;	/* distinct objects pinned */
	uint32_t pin_cap, npinned;
	uint32_t *rx_free;
	uint32_t nrx_free;
	uint8_t *rx_state;
	uint32_t *rx_owner;		/* handle id, 0 for STATS */
	uint8_t *tx_daemon;		/* tx buffer handed to us */
	uint32_t per_stream;		/* rx buffers one READ may hold */
	struct list buf_waiters;
	struct ring_cqe *over;		/* CQ overflow, a FIFO */
	uint32_t over_head, over_len, over_cap;
	struct list link;		/* srv->conns */
};

struct ring_server {
	struct gs_engine *e;
	struct gs_io *io;
	int lfd, epfd, stopfd;
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

static struct ring_server *the_server;

/* epoll tags for the descriptors that are not workers */
static char tag_listen, tag_stop, tag_io;

static void conn_kill(struct ring_conn *c, const char *why);

/* ---- handles ---- */

static struct ring_handle *handle_get(struct ring_conn *c, enum handle_kind kind)
{
	struct ring_handle *h = c->free_h;

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

static void handle_put(struct ring_handle *h)
{
	struct ring_conn *c = h->c;
	uint16_t gen = h->gen;

	if (h->on_ready)
		list_del(&h->ready_link);
	list_del(&h->wait_link);
	c->nkind[h->kind]--;
	free(h->q);
	memset(h, 0, sizeof(*h));
	h->c = c;
	h->gen = gen;
	list_init(&h->ready_link);
	list_init(&h->wait_link);
	h->next_free = c->free_h;
	c->free_h = h;
}

/* The live handle <id> of <kind>, or NULL. */
static struct ring_handle *handle_find(struct ring_conn *c, uint32_t id,
				  enum handle_kind kind)
{
	uint32_t idx = id & 0xffff;

	if (!id || idx >= c->nh || c->h[idx].id != id || c->h[idx].kind != kind)
		return NULL;
	return &c->h[idx];
}

static void mark_ready(struct ring_handle *h)
{
	if (h->on_ready)
		return;
	h->on_ready = true;
	list_add_tail(&h->c->srv->ready, &h->ready_link);
}

/* Engine wake callbacks (from gs_io_run): come back to the handle later. */
static void handle_wake(void *arg)
{
	mark_ready(arg);
}

/* ---- completions and buffers ---- */

static void post_cqe(struct ring_conn *c, const struct ring_cqe *cqe)
{
	struct ring_cqe *grown;
	uint32_t cap;

	if (c->dead)
		return;
	c->bell = true;
	if (!c->over_len && ring_cq_push(&c->ring, cqe) == 0)
		return;
	if (c->over_len == c->over_cap) {
		cap = c->over_cap ? 2 * c->over_cap : 64;
		if (cap > MAX_OVERFLOW) {
			conn_kill(c, "completion queue overflow");
			return;
		}
		grown = malloc(cap * sizeof(*grown));
		if (!grown) {
			conn_kill(c, "out of memory for completions");
			return;
		}
		for (uint32_t i = 0; i < c->over_len; i++)
			grown[i] = c->over[(c->over_head + i) % c->over_cap];
		free(c->over);
		c->over = grown;
		c->over_head = 0;
		c->over_cap = cap;
	}
	c->over[(c->over_head + c->over_len) % c->over_cap] = *cqe;
	c->over_len++;
	c->srv->st[ST_ring_cq_overflows]++;
}

static void flush_overflow(struct ring_conn *c)
{
	while (c->over_len &&
	       ring_cq_push(&c->ring, &c->over[c->over_head]) == 0) {
		c->over_head = (c->over_head + 1) % c->over_cap;
		c->over_len--;
		c->bell = true;
	}
}

static int rx_take(struct ring_conn *c)
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
 * when that READ cannot take it just now: its window is used up.)
 */
static void rx_give(struct ring_conn *c, uint32_t b)
{
	struct ring_handle *h;

	c->rx_state[b] = RX_FREE;
	c->rx_owner[b] = 0;
	c->rx_free[c->nrx_free++] = b;
	while (!list_empty(&c->buf_waiters)) {
		h = list_entry(c->buf_waiters.next, struct ring_handle, wait_link);
		list_del(&h->wait_link);
		mark_ready(h);
	}
}

static void wait_for_buffer(struct ring_handle *h)
{
	if (list_empty(&h->wait_link)) {
		list_add_tail(&h->c->buf_waiters, &h->wait_link);
		h->c->srv->st[ST_ring_buffer_waits]++;
	}
}

/* ---- objects: LOOKUP, READ, RELEASE ---- */

static bool refusal_log_due(struct ring_server *srv);

/* ---- the distinct objects a worker pins: a linear-probing set ---- */

static struct pin_slot *pin_slot(struct ring_conn *c, const struct gs_obj *obj)
{
	uint32_t mask = c->pin_cap - 1;
	uint32_t i = (uint32_t)(((uintptr_t)obj >> 4) * 0x9e3779b1u) & mask;

	while (c->pinset[i].obj && c->pinset[i].obj != obj)
		i = (i + 1) & mask;
	return &c->pinset[i];
}

/* One more pin of <obj>: -EBUSY when it is a new object and the worker
 * pins max_pins already. */
static int pin_add(struct ring_conn *c, struct gs_obj *obj)
{
	struct pin_slot *p = pin_slot(c, obj);

	if (!p->obj) {
		if (c->npinned >= c->srv->max_pins)
			return -EBUSY;
		p->obj = obj;
		c->npinned++;
	}
	p->n++;
	return 0;
}

static void pin_del(struct ring_conn *c, const struct gs_obj *obj)
{
	uint32_t mask = c->pin_cap - 1, i, j, home;
	struct pin_slot *p = pin_slot(c, obj);

	if (--p->n)
		return;
	c->npinned--;
	/* backward-shift deletion keeps every probe chain whole */
	i = (uint32_t)(p - c->pinset);
	for (j = (i + 1) & mask; c->pinset[j].obj; j = (j + 1) & mask) {
		home = (uint32_t)(((uintptr_t)c->pinset[j].obj >> 4) *
				  0x9e3779b1u) & mask;
		if (((j - home) & mask) >= ((j - i) & mask)) {
			c->pinset[i] = c->pinset[j];
			i = j;
		}
	}
	c->pinset[i] = (struct pin_slot){ 0 };
}

/* A LOOKUP or WOPEN refused: the worker holds its most <what>. */
static void busy(struct ring_conn *c, const char *what)
{
	c->srv->st[ST_ring_busy]++;
	if (refusal_log_due(c->srv))
		log_warn("nginx worker %d holds its most %s (%u pins of %u objects, %u writers): EBUSY",
			 (int)c->pid, what, c->nkind[H_OBJ], c->npinned,
			 c->nkind[H_WRITER]);
}

static bool key_ok(const struct ring_sqe *sqe)
{
	return sqe->klen > 0 && sqe->klen <= RING_KEY_MAX;
}

static void op_lookup(struct ring_conn *c, const struct ring_sqe *sqe)
{
	struct ring_cqe cqe = { .user_data = sqe->user_data,
				.op = RING_OP_LOOKUP };
	struct ring_server *srv = c->srv;
	const struct gs_meta *m;
	struct ring_handle *h;
	struct gs_obj *obj;

	srv->st[ST_ring_lookups]++;
	if (!key_ok(sqe)) {
		cqe.res = -EINVAL;
		goto out;
	}
	h = handle_get(c, H_OBJ);
	if (!h) {
		busy(c, "handles");
		cqe.res = -EBUSY;
		goto out;
	}
	cqe.res = gs_lookup(srv->e, sqe->key, sqe->klen, &obj);
	if (cqe.res) {
		handle_put(h);
		goto out;
	}
	/* many requests for one object pin it once as far as eviction goes:
	 * the bound is on distinct objects */
	if (pin_add(c, obj)) {
		gs_obj_put(srv->e, &obj);
		handle_put(h);
		busy(c, "pinned objects");
		cqe.res = -EBUSY;
		goto out;
	}
	h->obj = obj;
	srv->st[ST_ring_lookup_hits]++;
	srv->st[ST_ring_pins]++;
	m = gs_obj_meta(obj);
	cqe.handle = h->id;
	cqe.meta = (struct ring_meta){
		.size = m->size, .cas = m->cas, .mtime = m->mtime,
		.exptime = m->exptime, .head_off = m->head_off,
		.head_len = m->head_len, .flags = m->flags,
	};
out:
	post_cqe(c, &cqe);
}

/* Hands the buffer being filled to nginx. */
static void stage(struct ring_handle *h)
{
	struct ring_conn *c = h->c;
	struct ring_cqe cqe = {
		.user_data = h->ud, .op = RING_OP_DATA, .handle = h->id,
		.buf = (uint32_t)h->fill, .off = h->fill_off, .len = h->fill_len,
	};

	c->rx_state[h->fill] = RX_NGINX;
	c->rx_owner[h->fill] = h->id;
	c->srv->st[ST_ring_read_bytes] += h->fill_len;
	h->nbufs++;
	h->fill = -1;
	h->fill_len = 0;
	post_cqe(c, &cqe);
}

/* Ends the READ of <h> with <res>; the pin stays until RELEASE. */
static void read_end(struct ring_handle *h, int res)
{
	struct ring_cqe cqe = { .user_data = h->ud, .op = RING_OP_READ,
				.res = res, .handle = h->id };

	if (h->fill >= 0)
		rx_give(h->c, (uint32_t)h->fill);
	h->fill = -1;
	gs_stream_close(&h->s);
	list_del(&h->wait_link);
	post_cqe(h->c, &cqe);
}

/*
 * Copies what the stream has into rx buffers, in offset order.  A buffer
 * is taken only for bytes already there, and what it holds is staged as
 * soon as the stream has to wait: rx buffers are never held idle by a
 * READ that waits for the disk (or for the engine's read-ahead windows,
 * which READs holding buffers may need to give back first).
 */
static void pump_read(struct ring_handle *h)
{
	struct ring_conn *c = h->c;
	const void *data;
	size_t len, n;
	int ret;

	while (h->s && !c->dead) {
		if (h->pos >= h->limit && h->pos < h->end) {
			/* a MORE brings us back */
			if (h->fill_len)
				stage(h);
			return;
		}
		ret = gs_stream_peek(h->s, &data, &len);
		if (ret == -EAGAIN) {
			if (h->fill_len)
				stage(h);	/* what has landed goes now */
			return;
		}
		if (ret < 0 || !len) {
			if (!ret && h->fill_len)
				stage(h);
			read_end(h, ret);
			return;
		}
		if (h->fill < 0) {
			/* a BUFREL of one of ours, or any, brings us back */
			if (h->nbufs >= c->per_stream)
				return;
			h->fill = rx_take(c);
			if (h->fill < 0) {
				wait_for_buffer(h);
				return;
			}
			h->fill_off = h->pos;
		}
		n = c->ring.buf_size - h->fill_len;
		if (n > len)
			n = len;
		if (n > h->limit - h->pos)
			n = h->limit - h->pos;
		memcpy(ring_rx_buf(&c->ring, (uint32_t)h->fill) + h->fill_len,
		       data, n);
		gs_stream_consume(h->s, n);
		h->fill_len += n;
		h->pos += n;
		if (h->fill_len == c->ring.buf_size)
			stage(h);
	}
}

static void op_read(struct ring_conn *c, const struct ring_sqe *sqe)
{
	struct ring_handle *h = handle_find(c, sqe->handle, H_OBJ);
	struct ring_cqe cqe = { .user_data = sqe->user_data,
				.op = RING_OP_READ, .handle = sqe->handle };
	uint64_t size;

	if (!h || h->s) {
		cqe.res = -EINVAL;
		post_cqe(c, &cqe);
		return;
	}
	size = gs_obj_meta(h->obj)->size;
	h->ud = sqe->user_data;
	h->pos = sqe->off < size ? sqe->off : size;
	h->end = sqe->off + sqe->len < sqe->off || sqe->off + sqe->len > size ?
		 size : sqe->off + sqe->len;
	h->limit = sqe->window && h->pos + sqe->window > h->pos ?
		   h->pos + sqe->window : UINT64_MAX;
	cqe.res = gs_stream_open(c->srv->io, h->obj, h->pos, h->end - h->pos,
				 handle_wake, h, &h->s);
	if (cqe.res) {
		post_cqe(c, &cqe);
		return;
	}
	c->srv->st[ST_ring_reads]++;
	mark_ready(h);
}

static void release_obj(struct ring_handle *h)
{
	if (h->s)
		gs_stream_close(&h->s);
	if (h->fill >= 0)
		rx_give(h->c, (uint32_t)h->fill);
	pin_del(h->c, h->obj);
	gs_obj_put(h->c->srv->e, &h->obj);
	h->c->srv->st[ST_ring_pins]--;
	handle_put(h);
}

/* nginx lets a READ stage <len> more bytes. */
static void op_more(struct ring_conn *c, const struct ring_sqe *sqe)
{
	struct ring_handle *h = handle_find(c, sqe->handle, H_OBJ);

	if (!h) {
		conn_kill(c, "MORE for an unknown handle");
		return;
	}
	h->limit = h->limit + sqe->len < h->limit ? UINT64_MAX :
		   h->limit + sqe->len;
	if (h->s)
		mark_ready(h);
}

static void op_bufrel(struct ring_conn *c, const struct ring_sqe *sqe)
{
	struct ring_handle *h;
	uint32_t b = sqe->buf;

	if (b >= c->ring.n_rx || c->rx_state[b] != RX_NGINX) {
		conn_kill(c, "BUFREL of a buffer nginx does not hold");
		return;
	}
	h = handle_find(c, c->rx_owner[b], H_OBJ);
	if (h && h->nbufs) {
		h->nbufs--;
		if (h->s)
			mark_ready(h);
	}
	rx_give(c, b);
}

/* ---- writers: WOPEN, WDATA, WFINISH, WABORT ---- */

static void op_wopen(struct ring_conn *c, const struct ring_sqe *sqe)
{
	struct ring_cqe cqe = { .user_data = sqe->user_data,
				.op = RING_OP_WOPEN };
	struct ring_handle *h;

	if (!key_ok(sqe)) {
		cqe.res = -EINVAL;
		goto out;
	}
	/*
	 * nginx holds a tx buffer per PUT from WOPEN to WFINISH, and gives
	 * it to the next PUT before an abandoned WOPEN's writer is aborted:
	 * at most twice n_tx writers not yet finishing.
	 */
	h = c->nkind[H_WRITER] - c->busy < 2 * c->ring.n_tx ?
	    handle_get(c, H_WRITER) : NULL;
	if (!h) {
		busy(c, "writers");
		cqe.res = -EBUSY;
		goto out;
	}
	h->q = calloc(c->ring.n_tx, sizeof(*h->q));
	if (!h->q) {
		cqe.res = -ENOMEM;
		goto out_put;
	}
	cqe.res = gs_writer_open(c->srv->io, sqe->key, sqe->klen, sqe->len,
				 sqe->flags, mc_exptime(sqe->exptime), &h->w);
	if (cqe.res)
		goto out_put;
	h->size = sqe->len;
	h->klen = sqe->klen;
	memcpy(h->key, sqe->key, sqe->klen);
	cqe.handle = h->id;
	goto out;

out_put:
	c->srv->st[ST_ring_store_errors]++;
	handle_put(h);
out:
	post_cqe(c, &cqe);
}

static void txdone(struct ring_conn *c, const struct wdata *q)
{
	struct ring_cqe cqe = { .user_data = q->ud, .op = RING_OP_TXDONE,
				.buf = q->buf };

	c->tx_daemon[q->buf] = 0;
	post_cqe(c, &cqe);
}

/* Gives every queued tx buffer back. */
static void writer_drain(struct ring_handle *h)
{
	while (h->qlen) {
		txdone(h->c, &h->q[h->qhead]);
		h->qhead = (h->qhead + 1) % h->c->ring.n_tx;
		h->qlen--;
	}
}

static void writer_done(void *arg, int res, const struct gs_stored *stored)
{
	struct ring_handle *h = arg;
	struct ring_conn *c = h->c;
	struct ring_cqe cqe = { .user_data = h->finish_ud,
				.op = RING_OP_WFINISH, .res = res,
				.handle = h->id };

	c->busy--;
	if (res == 0) {
		cqe.len = stored->replaced;
		cqe.meta.cas = stored->cas;
		c->srv->st[ST_ring_stores]++;
	} else {
		c->srv->st[ST_ring_store_errors]++;
	}
	if (!h->orphan)
		post_cqe(c, &cqe);
	handle_put(h);
}

/* Every byte given: link the object (created or replaced, for 201/204). */
static void writer_finish(struct ring_handle *h)
{
	struct ring_cqe cqe = { .user_data = h->finish_ud,
				.op = RING_OP_WFINISH, .handle = h->id };
	struct ring_conn *c = h->c;
	int ret = h->error;

	if (!ret)
		ret = gs_writer_finish(&h->w, GS_IF_ANY, 0, writer_done, h);
	if (!ret) {
		h->finishing = true;
		c->busy++;
		return;
	}
	gs_writer_abort(&h->w);
	c->srv->st[ST_ring_store_errors]++;
	cqe.res = ret;
	post_cqe(c, &cqe);
	handle_put(h);
}

/* Copies queued tx buffers into the writer, in order. */
static void pump_write(struct ring_handle *h)
{
	struct ring_conn *c = h->c;
	struct wdata *q;
	size_t len, n;
	void *p;
	int ret;

	while (h->qlen && !c->dead) {
		q = &h->q[h->qhead];
		if (!h->error) {
			ret = gs_writer_buf(h->w, &p, &len, handle_wake, h);
			if (ret == -EAGAIN)
				return;
			if (ret < 0 || !len)
				h->error = ret ? ret : -EINVAL;
		}
		if (!h->error) {
			n = q->len - q->done;
			if (n > len)
				n = len;
			memcpy(p, ring_tx_buf(&c->ring, q->buf) + q->done, n);
			gs_writer_advance(h->w, n);
			q->done += n;
			c->srv->st[ST_ring_store_bytes] += n;
		}
		if (h->error || q->done == q->len) {
			txdone(c, q);
			h->qhead = (h->qhead + 1) % c->ring.n_tx;
			h->qlen--;
		}
	}
	if (h->finish && !h->finishing && !h->qlen && !c->dead)
		writer_finish(h);
}

static void op_wdata(struct ring_conn *c, const struct ring_sqe *sqe)
{
	struct ring_handle *h = handle_find(c, sqe->handle, H_WRITER);
	uint32_t b = sqe->buf;

	if (!h || h->finish || b >= c->ring.n_tx || c->tx_daemon[b] ||
	    !sqe->len || sqe->len > c->ring.buf_size ||
	    h->given + sqe->len > h->size || h->qlen >= c->ring.n_tx) {
		conn_kill(c, "bad WDATA");
		return;
	}
	c->tx_daemon[b] = 1;
	h->q[(h->qhead + h->qlen) % c->ring.n_tx] = (struct wdata){
		.ud = sqe->user_data, .buf = b, .len = (uint32_t)sqe->len,
	};
	h->qlen++;
	h->given += sqe->len;
	mark_ready(h);
}

static void op_wfinish(struct ring_conn *c, const struct ring_sqe *sqe)
{
	struct ring_handle *h = handle_find(c, sqe->handle, H_WRITER);

	if (!h || h->finish) {
		conn_kill(c, "bad WFINISH");
		return;
	}
	h->finish = true;
	h->finish_ud = sqe->user_data;
	mark_ready(h);
}

/* Drops a writer: nothing stored, its tx buffers back to nginx. */
static void writer_drop(struct ring_handle *h)
{
	writer_drain(h);
	if (h->finishing) {
		h->orphan = true;	/* writer_done frees it */
		return;
	}
	gs_writer_abort(&h->w);
	h->c->srv->st[ST_ring_store_errors]++;
	handle_put(h);
}

static void op_wabort(struct ring_conn *c, const struct ring_sqe *sqe)
{
	struct ring_handle *h = handle_find(c, sqe->handle, H_WRITER);

	if (!h) {
		conn_kill(c, "WABORT of an unknown writer");
		return;
	}
	writer_drop(h);
}

/* ---- DELETE, STATS ---- */

static void op_delete(struct ring_conn *c, const struct ring_sqe *sqe)
{
	struct ring_cqe cqe = { .user_data = sqe->user_data,
				.op = RING_OP_DELETE };

	cqe.res = key_ok(sqe) ? gs_delete(c->srv->e, sqe->key, sqe->klen)
			      : -EINVAL;
	if (!cqe.res)
		c->srv->st[ST_ring_deletes]++;
	post_cqe(c, &cqe);
}

static const char *const ring_stat_names[] = {
#define RING_STAT_NAME(name, desc) #name,
	RING_STATS(RING_STAT_NAME)
#undef RING_STAT_NAME
};

/* "name value\n" for every engine and ring counter into <buf>. */
static size_t format_stats(struct ring_server *srv, char *buf, size_t size)
{
	struct stats_snapshot snap = { 0 };

	gs_stats(srv->e, &snap.engine);
	memcpy(snap.ring, srv->st, sizeof(snap.ring));
	return stats_format(STATS_ENGINE | STATS_RING, &snap, buf, size);
}

static void pump_stats(struct ring_handle *h)
{
	struct ring_conn *c = h->c;
	struct ring_cqe cqe = { .user_data = h->ud, .op = RING_OP_STATS };
	int b = rx_take(c);

	if (b < 0) {
		wait_for_buffer(h);
		return;
	}
	cqe.buf = (uint32_t)b;
	cqe.len = format_stats(c->srv, ring_rx_buf(&c->ring, (uint32_t)b),
			       c->ring.buf_size);
	c->rx_state[b] = RX_NGINX;
	handle_put(h);
	post_cqe(c, &cqe);
}

static void op_stats(struct ring_conn *c, const struct ring_sqe *sqe)
{
	struct ring_handle *h = handle_get(c, H_STATS);
	struct ring_cqe cqe = { .user_data = sqe->user_data,
				.op = RING_OP_STATS, .res = -EBUSY };

	if (!h) {
		post_cqe(c, &cqe);
		return;
	}
	h->ud = sqe->user_data;
	mark_ready(h);
}

/* ---- a worker's connection ---- */

static void dispatch(struct ring_conn *c, const struct ring_sqe *sqe)
{
	struct ring_handle *h;

	switch (sqe->op) {
	case RING_OP_LOOKUP:
		op_lookup(c, sqe);
		break;
	case RING_OP_READ:
		op_read(c, sqe);
		break;
	case RING_OP_BUFREL:
		op_bufrel(c, sqe);
		break;
	case RING_OP_MORE:
		op_more(c, sqe);
		break;
	case RING_OP_RELEASE:
		h = handle_find(c, sqe->handle, H_OBJ);
		if (h)
			release_obj(h);
		else
			conn_kill(c, "RELEASE of an unknown handle");
		break;
	case RING_OP_WOPEN:
		op_wopen(c, sqe);
		break;
	case RING_OP_WDATA:
		op_wdata(c, sqe);
		break;
	case RING_OP_WFINISH:
		op_wfinish(c, sqe);
		break;
	case RING_OP_WABORT:
		op_wabort(c, sqe);
		break;
	case RING_OP_DELETE:
		op_delete(c, sqe);
		break;
	case RING_OP_STATS:
		op_stats(c, sqe);
		break;
	default:
		conn_kill(c, "unknown opcode");
	}
}

static void conn_drain_sq(struct ring_conn *c)
{
	struct ring_sqe sqe;
	int ret;

	flush_overflow(c);
	while (!c->dead && (ret = ring_sq_pop(&c->ring, &sqe)) == 1)
		dispatch(c, &sqe);
	if (c->dead)
		return;
	if (ret < 0)
		conn_kill(c, "submission queue indices corrupt");
	else if (ring_sq_wants_doorbell(&c->ring))
		c->bell = true;
}

/* Maps a fresh ring of geometry <hello> for <c>, with its tables.
 * Returns 0 or -errno. */
static int conn_setup(struct ring_conn *c, struct ring_hello *hello)
{
	uint32_t i, nh;
	int ret;

	ret = ring_create(&c->ring, hello);
	if (ret)
		return ret;
	nh = 4 * c->ring.sq_entries;
	nh = nh < 256 ? 256 : nh > RING_HANDLES_MAX ? RING_HANDLES_MAX : nh;
	c->h = calloc(nh, sizeof(*c->h));
	for (c->pin_cap = 1; c->pin_cap < 2 * nh; c->pin_cap <<= 1)
		;
	c->pinset = calloc(c->pin_cap, sizeof(*c->pinset));
	c->rx_free = calloc(c->ring.n_rx, sizeof(*c->rx_free));
	c->rx_state = calloc(c->ring.n_rx, 1);
	c->rx_owner = calloc(c->ring.n_rx, sizeof(*c->rx_owner));
	c->tx_daemon = calloc(c->ring.n_tx, 1);
	if (!c->h || !c->pinset || !c->rx_free || !c->rx_state ||
	    !c->rx_owner || !c->tx_daemon)
		return -ENOMEM;
	c->nh = nh;
	for (i = c->nh; i-- > 0;) {
		c->h[i].c = c;
		list_init(&c->h[i].ready_link);
		list_init(&c->h[i].wait_link);
		c->h[i].next_free = c->free_h;
		c->free_h = &c->h[i];
	}
	for (i = c->ring.n_rx; i-- > 0;)
		c->rx_free[c->nrx_free++] = i;
	c->per_stream = c->ring.n_rx / 4 < 2 ? 2 : c->ring.n_rx / 4;
	return 0;
}

static void conn_attached(struct ring_conn *c)
{
	struct ring_server *srv = c->srv;

	c->welcomed = true;
	srv->st[ST_ring_connections]++;
	srv->st[ST_ring_total_connections]++;
	log_info("nginx worker %d (uid %u) attached (sq %u, rx %u, tx %u buffers of %u KiB)",
		 (int)c->pid, (unsigned)c->uid, c->ring.sq_entries,
		 c->ring.n_rx, c->ring.n_tx, c->ring.buf_size >> 10);
}

/* Answers the worker's hello with the head region and a fresh ring. */
static int conn_welcome(struct ring_conn *c)
{
	struct ring_server *srv = c->srv;
	struct ring_welcome w = { .magic = RING_MAGIC,
				  .version = RING_VERSION };
	struct ring_hello hello;
	int ret;

	ret = ring_recv_hello(c->fd, &hello);
	if (ret)
		return ret;
	ret = conn_setup(c, &hello);
	if (ret)
		goto out_refuse;
	w.ring_size = c->ring.size;
	w.region_size = srv->region_size;
	ret = ring_send_welcome(c->fd, &w, srv->region_fd, c->ring.fd);
	if (ret)
		return ret;
	/* the worker holds its own descriptor now; the mapping is enough */
	close(c->ring.fd);
	c->ring.fd = -1;
	conn_attached(c);
	return 0;

out_refuse:
	w.res = ret;
	ring_send_welcome(c->fd, &w, -1, -1);
	return ret;
}

static void conn_event(struct ring_conn *c)
{
	int ret;

	if (c->dead)
		return;
	if (!c->welcomed) {
		ret = conn_welcome(c);
		if (ret == -ECONNRESET) {
			conn_kill(c, NULL);
		} else if (ret == -EPROTO) {
			conn_kill(c, "bad hello");
		} else if (ret && ret != -EAGAIN) {
			log_warn("nginx worker %d not attached: %s", (int)c->pid,
				 strerror(-ret));
			c->srv->st[ST_ring_rejected_connections]++;
			conn_kill(c, NULL);
		}
		return;
	}
	ret = ring_doorbell_drain(c->fd);
	if (ret < 0) {
		conn_kill(c, NULL);
		return;
	}
	conn_drain_sq(c);
}

/*
 * Drops a worker: every pin released, every writer aborted, the socket
 * closed.  The memory goes at the end of the round (conn_reap), once no
 * writer commit is in flight.  <why> NULL: the worker went away.
 */
static void conn_kill(struct ring_conn *c, const char *why)
{
	struct ring_server *srv = c->srv;
	unsigned pins = 0;

	if (c->dead)
		return;
	c->dead = true;
	if (why) {
		log_warn("nginx worker %d dropped: %s", (int)c->pid, why);
		srv->st[ST_ring_protocol_errors]++;
	}
	for (uint32_t i = 0; i < c->nh; i++) {
		struct ring_handle *h = &c->h[i];

		switch (h->kind) {
		case H_OBJ:
			pins++;
			release_obj(h);
			break;
		case H_WRITER:
			writer_drop(h);
			break;
		case H_STATS:
			handle_put(h);
			break;
		}
	}
	if (c->welcomed) {
		srv->st[ST_ring_connections]--;
		log_info("nginx worker %d detached, %u pin(s) released",
			 (int)c->pid, pins);
	}
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	ring_unmap(&c->ring);
}

static struct ring_conn *conn_new(struct ring_server *srv, int fd)
{
	struct ring_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->srv = srv;
	c->fd = fd;
	c->ring.fd = -1;
	list_init(&c->buf_waiters);
	list_add_tail(&srv->conns, &c->link);
	srv->nconns++;
	return c;
}

static void listen_resume(struct ring_server *srv);

static void conn_free(struct ring_conn *c)
{
	struct ring_server *srv = c->srv;

	list_del(&c->link);
	srv->nconns--;
	free(c->h);
	free(c->pinset);
	free(c->rx_free);
	free(c->rx_state);
	free(c->rx_owner);
	free(c->tx_daemon);
	free(c->over);
	free(c);
	listen_resume(srv);	/* a descriptor came back */
}

/* ---- who may attach ---- */

static bool uid_in_group(uid_t uid, gid_t gid)
{
	struct passwd pw, *pwp = NULL;
	gid_t *groups = NULL;
	char buf[16384];
	bool found = false;
	int n = 64;

	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &pwp) || !pwp)
		return false;
	if (pw.pw_gid == gid)
		return true;
	for (int tries = 0; tries < 2 && !found; tries++) {
		gid_t *grown = realloc(groups, n * sizeof(*groups));
		int got = n;

		if (!grown)
			break;
		groups = grown;
		if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &got) < 0) {
			n = got;	/* too small: <got> is what it takes */
			continue;
		}
		for (int i = 0; i < got; i++)
			found |= groups[i] == gid;
		break;
	}
	free(groups);
	return found;
}

/* Root, goblin-store's own user, --socket-user, or a --socket-group
 * member (primary or supplementary group of the peer's account). */
static bool peer_allowed(const struct ring_server *srv, const struct ucred *cred)
{
	if (cred->uid == 0 || cred->uid == geteuid() ||
	    (srv->has_user && cred->uid == srv->user_uid))
		return true;
	if (!srv->has_group)
		return false;
	return cred->gid == srv->group_gid || uid_in_group(cred->uid,
							   srv->group_gid);
}

/* True at most once a second: a flood of refusals must not flood the log
 * (the counters have every one). */
static bool refusal_log_due(struct ring_server *srv)
{
	time_t now = time(NULL);

	if (now == srv->refusal_logged)
		return false;
	srv->refusal_logged = now;
	return true;
}

/* ---- accepting workers ---- */

static void listen_pause(struct ring_server *srv, int err)
{
	if (srv->listen_paused)
		return;
	epoll_ctl(srv->epfd, EPOLL_CTL_DEL, srv->lfd, NULL);
	srv->listen_paused = true;
	log_warn("ring: accept: %s: not accepting nginx workers for a second",
		 strerror(err));
}

static void listen_resume(struct ring_server *srv)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &tag_listen };

	if (!srv->listen_paused)
		return;
	if (srv->spare_fd < 0)
		srv->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (srv->spare_fd >= 0 &&
	    epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->lfd, &ev) == 0)
		srv->listen_paused = false;
}

/*
 * Out of descriptors with workers waiting: give up the spare one to take
 * the oldest and close it at once, so the listener does not stay readable
 * (epoll would spin on it) and the worker retries later.  Returns true
 * when one was turned away.
 */
static bool shed_worker(struct ring_server *srv)
{
	int fd;

	if (srv->spare_fd < 0)
		return false;
	close(srv->spare_fd);
	fd = accept4(srv->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		close(fd);
	srv->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	srv->st[ST_ring_rejected_connections]++;
	if (refusal_log_due(srv))
		log_warn("ring: out of file descriptors (RLIMIT_NOFILE): turned an nginx worker away");
	return true;
}

static void accept_conns(struct ring_server *srv)
{
	struct epoll_event ev;
	struct ring_conn *c;
	struct ucred cred;
	socklen_t len;
	int fd;

	for (;;) {
		fd = accept4(srv->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if ((errno == EMFILE || errno == ENFILE) &&
			    shed_worker(srv))
				continue;
			if (errno != EAGAIN)
				listen_pause(srv, errno);
			return;
		}
		len = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
		    !peer_allowed(srv, &cred)) {
			srv->st[ST_ring_refused]++;
			if (refusal_log_due(srv))
				log_warn("ring: refused pid %d (uid %u, gid %u): not root, goblin-store's user, --socket-user or in --socket-group",
					 (int)cred.pid, (unsigned)cred.uid,
					 (unsigned)cred.gid);
			close(fd);
			continue;
		}
		c = srv->nconns < RING_MAX_WORKERS ? conn_new(srv, fd) : NULL;
		if (!c) {
			srv->st[ST_ring_rejected_connections]++;
			if (refusal_log_due(srv))
				log_warn("ring: turned nginx worker %d away: %u attached, the most goblin-store serves is %u",
					 (int)cred.pid, srv->nconns,
					 RING_MAX_WORKERS);
			close(fd);
			continue;
		}
		c->pid = cred.pid;
		c->uid = cred.uid;
		ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = c };
		if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			log_warn("ring: epoll_ctl: %s", strerror(errno));
			c->dead = true;
			close(fd);
			conn_free(c);
		}
	}
}

/* ---- the thread ---- */

static void run_ready(struct ring_server *srv)
{
	struct ring_handle *h;

	while (!list_empty(&srv->ready)) {
		h = list_entry(srv->ready.next, struct ring_handle, ready_link);
		list_del(&h->ready_link);
		h->on_ready = false;
		if (h->c->dead)
			continue;
		switch (h->kind) {
		case H_OBJ:
			pump_read(h);
			break;
		case H_WRITER:
			pump_write(h);
			break;
		case H_STATS:
			pump_stats(h);
			break;
		}
	}
}

/* End of a round: queued completions out, doorbells rung, dead workers
 * freed once nothing refers to them. */
static void end_round(struct ring_server *srv)
{
	struct list *p, *n;

	for (p = srv->conns.next; p != &srv->conns; p = n) {
		struct ring_conn *c = list_entry(p, struct ring_conn, link);

		n = p->next;
		if (!c->dead) {
			flush_overflow(c);
			if (c->bell && c->fd >= 0 && ring_doorbell(c->fd) < 0)
				conn_kill(c, NULL);
			c->bell = false;
		}
		if (c->dead && !c->busy)
			conn_free(c);
	}
}

/* Drops every worker, then lets in-flight commits finish. */
static void drop_all(struct ring_server *srv)
{
	for (struct list *p = srv->conns.next; p != &srv->conns; p = p->next)
		conn_kill(list_entry(p, struct ring_conn, link), NULL);
	end_round(srv);
	while (!list_empty(&srv->conns) && gs_io_run(srv->io, true) >= 0)
		end_round(srv);
}

static int thread_setup(struct ring_server *srv)
{
	struct epoll_event ev;
	int ret;

	ret = gs_io_create(srv->e, &srv->io);
	if (ret)
		return ret;
	ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &tag_io };
	if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, gs_io_fd(srv->io), &ev) < 0) {
		ret = -errno;
		gs_io_destroy(&srv->io);
		return ret;
	}
	return 0;
}

static void *ring_thread(void *arg)
{
	struct ring_server *srv = arg;
	struct epoll_event evs[64];
	bool stop = false;
	int n, ret;

	ret = thread_setup(srv);
	pthread_mutex_lock(&srv->lock);
	srv->start_res = ret;
	srv->started = true;
	pthread_cond_signal(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
	if (ret)
		return NULL;

	while (!stop) {
		n = epoll_wait(srv->epfd, evs, 64,
			       srv->listen_paused ? 1000 : -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_err("ring: epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;

			if (p == &tag_stop)
				stop = true;
			else if (p == &tag_listen)
				accept_conns(srv);
			else if (p == &tag_io)
				gs_io_run(srv->io, false);
			else
				conn_event(p);
		}
		run_ready(srv);
		end_round(srv);
		listen_resume(srv);
	}
	drop_all(srv);
	gs_io_destroy(&srv->io);
	return NULL;
}

/* ---- the socket path ---- */

/* <name> as a user: its uid and primary gid.  A number is taken as a uid
 * when no user has that name. */
static int lookup_user(const char *name, uid_t *uid, gid_t *gid)
{
	struct passwd pw, *pwp = NULL;
	char buf[16384], *end;
	unsigned long v;

	if (getpwnam_r(name, &pw, buf, sizeof(buf), &pwp) == 0 && pwp) {
		*uid = pw.pw_uid;
		*gid = pw.pw_gid;
		return 0;
	}
	errno = 0;
	v = strtoul(name, &end, 10);
	if (errno || end == name || *end || v >= (uid_t)-1)
		return -ENOENT;
	*uid = (uid_t)v;
	if (getpwuid_r(*uid, &pw, buf, sizeof(buf), &pwp) || !pwp)
		return -ENOENT;
	*gid = pw.pw_gid;
	return 0;
}

static int lookup_group(const char *name, gid_t *gid)
{
	struct group gr, *grp = NULL;
	char buf[16384], *end;
	unsigned long v;

	if (getgrnam_r(name, &gr, buf, sizeof(buf), &grp) == 0 && grp) {
		*gid = gr.gr_gid;
		return 0;
	}
	errno = 0;
	v = strtoul(name, &end, 10);
	if (errno || end == name || *end || v >= (gid_t)-1)
		return -ENOENT;
	*gid = (gid_t)v;
	return 0;
}

/* --socket-user and --socket-group into <srv>; <*gid>: the group the
 * socket and its directory get, -1 for none. */
static int resolve_access(struct ring_server *srv,
			  const struct ring_server_conf *conf, gid_t *gid,
			  char *err, size_t errlen)
{
	*gid = (gid_t)-1;
	if (conf->socket_user && *conf->socket_user) {
		if (lookup_user(conf->socket_user, &srv->user_uid, gid)) {
			snprintf(err, errlen, "--socket-user %s: no such user",
				 conf->socket_user);
			return -EINVAL;
		}
		srv->has_user = true;
	}
	if (conf->socket_group && *conf->socket_group) {
		if (lookup_group(conf->socket_group, &srv->group_gid)) {
			snprintf(err, errlen, "--socket-group %s: no such group",
				 conf->socket_group);
			return -EINVAL;
		}
		srv->has_group = true;
		*gid = srv->group_gid;
	}
	return 0;
}

/*
 * The socket's directory <dir>: created 0750, group <gid>, when missing.
 * An existing one is used as it is, and only when it is a directory (not
 * a link) owned by goblin-store's user or root that neither its group nor
 * others can write: whoever can write there could replace the socket and
 * pose as goblin-store.
 */
static int claim_dir(const char *dir, gid_t gid, char *err, size_t errlen)
{
	bool created = false;
	struct stat st;

	if (lstat(dir, &st) < 0) {
		if (errno != ENOENT)
			goto out_errno;
		if (mkdir(dir, 0700) == 0)
			created = true;
		else if (errno != EEXIST)
			goto out_errno;
		if (lstat(dir, &st) < 0)
			goto out_errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "--socket: %s is not a directory", dir);
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(err, errlen, "--socket: directory %s belongs to uid %u, neither goblin-store's user (uid %u) nor root",
			 dir, (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen, "--socket: directory %s is writable by its group or others (mode %03o): whoever writes there could pose as goblin-store",
			 dir, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	if (created) {
		/* group first: until then it is 0700 */
		if (gid != (gid_t)-1 && chown(dir, (uid_t)-1, gid) < 0) {
			snprintf(err, errlen, "--socket: giving %s to group %u: %s",
				 dir, (unsigned)gid, strerror(errno));
			return -errno;
		}
		if (chmod(dir, 0750) < 0)
			goto out_errno;
		log_info("ring: created %s (mode 0750, group %u)", dir,
			 (unsigned)(gid != (gid_t)-1 ? gid : st.st_gid));
	} else if (gid != (gid_t)-1 &&
		   !(st.st_gid == gid && (st.st_mode & S_IXGRP)) &&
		   !(st.st_mode & S_IXOTH)) {
		log_warn("ring: directory %s (group %u, mode %03o) does not let group %u reach the socket",
			 dir, (unsigned)st.st_gid, (unsigned)(st.st_mode & 07777),
			 (unsigned)gid);
	}
	return 0;

out_errno:
	snprintf(err, errlen, "--socket: directory %s: %s", dir,
		 strerror(errno));
	return -errno;
}

/* Refuses a path another live server listens on, or a socket another user
 * made; removes a stale socket of ours. */
static int claim_path(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat stb;
	int fd, ret;

	if (lstat(path, &stb) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(stb.st_mode)) {
		snprintf(err, errlen, "--socket %s: exists and is not a socket",
			 path);
		return -EEXIST;
	}
	if (stb.st_uid != geteuid()) {
		snprintf(err, errlen, "--socket %s: the socket there belongs to uid %u, not goblin-store's user (uid %u)",
			 path, (unsigned)stb.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ret = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	if (ret == 0) {
		snprintf(err, errlen, "--socket %s: another server is listening there",
			 path);
		return -EADDRINUSE;
	}
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* Binds <srv->lfd> to <path>: mode 0660 and group <gid> before anyone can
 * connect. */
static int bind_socket(struct ring_server *srv, const char *path, gid_t gid)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t old;
	int ret;

	strcpy(sa.sun_path, path);
	old = umask(0177);
	ret = bind(srv->lfd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (ret < 0)
		return -errno;
	if ((gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) < 0) ||
	    chmod(path, 0660) < 0)
		return -errno;
	return 0;
}

/* An O_RDONLY descriptor of the region memfd <fd>: a shared writable
 * mapping of it fails (and the memfd's seals refuse a writable reopen). */
static int region_fd_ro(int fd)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	return open(p, O_RDONLY | O_CLOEXEC);
}

static struct ring_server *server_new(struct gs_engine *e)
{
	const struct gs_config *cfg = gs_engine_config(e);
	struct ring_server *srv = calloc(1, sizeof(*srv));
	uint64_t quarter;

	if (!srv)
		return NULL;
	srv->e = e;
	srv->lfd = srv->epfd = srv->stopfd = srv->spare_fd = -1;
	srv->region_fd = -1;
	srv->region_size = gs_engine_region_size(e);
	quarter = cfg->ram_head ? cfg->memory / cfg->ram_head / 4 : 0;
	srv->max_pins = quarter < RING_PINS_MIN ? RING_PINS_MIN :
			quarter > RING_HANDLES_MAX ? RING_HANDLES_MAX :
			(uint32_t)quarter;
	list_init(&srv->conns);
	list_init(&srv->ready);
	pthread_mutex_init(&srv->lock, NULL);
	pthread_cond_init(&srv->cond, NULL);
	return srv;
}

static void server_free(struct ring_server *srv)
{
	if (srv->epfd >= 0)
		close(srv->epfd);
	if (srv->stopfd >= 0)
		close(srv->stopfd);
	if (srv->lfd >= 0)
		close(srv->lfd);
	if (srv->spare_fd >= 0)
		close(srv->spare_fd);
	if (srv->region_fd >= 0)
		close(srv->region_fd);
	pthread_mutex_destroy(&srv->lock);
	pthread_cond_destroy(&srv->cond);
	free(srv);
}

int ring_server_start(struct gs_engine *e, const struct ring_server_conf *conf,
		      char *err, size_t errlen)
{
	const char *path = conf->socket;
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct epoll_event ev;
	struct ring_server *srv;
	gid_t gid;
	int ret;

	err[0] = 0;
	if (the_server) {
		snprintf(err, errlen, "ring server already started");
		return -EBUSY;
	}
	if (!path || !*path || strlen(path) >= sizeof(dir)) {
		snprintf(err, errlen, "--socket: a path of 1 to %zu bytes",
			 sizeof(dir) - 1);
		return -ENAMETOOLONG;
	}
	srv = server_new(e);
	if (!srv) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	strcpy(srv->path, path);
	strcpy(dir, path);

	ret = resolve_access(srv, conf, &gid, err, errlen);
	if (ret)
		goto out_free;
	srv->region_fd = region_fd_ro(gs_engine_region_fd(e));
	if (srv->region_fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "reopening the RAM region read-only: %s",
			 strerror(errno));
		goto out_free;
	}
	ret = claim_dir(dirname(dir), gid, err, errlen);
	if (ret)
		goto out_free;
	ret = claim_path(path, err, errlen);
	if (ret)
		goto out_free;
	srv->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (srv->lfd < 0) {
		ret = -errno;
		goto out_free;
	}
	ret = bind_socket(srv, path, gid);
	if (ret)
		goto out_unlink;
	if (listen(srv->lfd, 128) < 0) {
		ret = -errno;
		goto out_unlink;
	}
	srv->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	srv->epfd = epoll_create1(EPOLL_CLOEXEC);
	srv->stopfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (srv->spare_fd < 0 || srv->epfd < 0 || srv->stopfd < 0) {
		ret = -errno;
		goto out_unlink;
	}
	ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &tag_listen };
	epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->lfd, &ev);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &tag_stop };
	epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->stopfd, &ev);

	ret = -pthread_create(&srv->thread, NULL, ring_thread, srv);
	if (ret)
		goto out_unlink;
	pthread_mutex_lock(&srv->lock);
	while (!srv->started)
		pthread_cond_wait(&srv->cond, &srv->lock);
	pthread_mutex_unlock(&srv->lock);
	ret = srv->start_res;
	if (ret) {
		pthread_join(srv->thread, NULL);
		goto out_unlink;
	}
	the_server = srv;
	log_info("ring: nginx workers attach at %s (mode 0660%s%s%s%s; a worker pins at most %u objects)",
		 path, srv->has_user ? ", --socket-user " : "",
		 srv->has_user ? conf->socket_user : "",
		 srv->has_group ? ", --socket-group " : "",
		 srv->has_group ? conf->socket_group : "", srv->max_pins);
	return 0;

out_unlink:
	unlink(path);
out_free:
	if (!err[0])
		snprintf(err, errlen, "--socket %s: %s", path, strerror(-ret));
	server_free(srv);
	return ret;
}

void ring_server_stop(void)
{
	struct ring_server *srv = the_server;
	uint64_t one = 1;

	if (!srv)
		return;
	if (write(srv->stopfd, &one, sizeof(one)) < 0)
		log_warn("ring: stop: %s", strerror(errno));
	pthread_join(srv->thread, NULL);
	unlink(srv->path);
	server_free(srv);
	the_server = NULL;
}

/* ---- without socket or thread: tests and the fuzzer ---- */

int ring_local_create(struct gs_engine *e, struct gs_io *io,
		      struct ring_server **srvp)
{
	struct ring_server *srv = server_new(e);

	if (!srv)
		return -ENOMEM;
	srv->io = io;
	*srvp = srv;
	return 0;
}

int ring_local_attach(struct ring_server *srv, struct ring_hello *h,
		      int *ring_fd)
{
	struct ring_conn *c = conn_new(srv, -1);
	int ret;

	if (!c)
		return -ENOMEM;
	c->pid = (pid_t)h->pid;
	c->uid = geteuid();
	ret = conn_setup(c, h);
	if (ret) {
		conn_kill(c, NULL);
		conn_free(c);
		return ret;
	}
	*ring_fd = c->ring.fd;
	c->ring.fd = -1;
	conn_attached(c);
	return 0;
}

unsigned ring_local_run(struct ring_server *srv)
{
	unsigned live = 0;
	struct list *p;

	for (p = srv->conns.next; p != &srv->conns; p = p->next) {
		struct ring_conn *c = list_entry(p, struct ring_conn, link);

		if (!c->dead)
			conn_drain_sq(c);
	}
	do
		run_ready(srv);
	while (gs_io_run(srv->io, false) > 0);
	end_round(srv);
	for (p = srv->conns.next; p != &srv->conns; p = p->next)
		live += !list_entry(p, struct ring_conn, link)->dead;
	return live;
}

void ring_local_drop(struct ring_server *srv)
{
	drop_all(srv);
}

void ring_local_destroy(struct ring_server **srvp)
{
	if (!*srvp)
		return;
	drop_all(*srvp);
	server_free(*srvp);
	*srvp = NULL;
}

uint64_t ring_local_stat(const struct ring_server *srv, const char *name)
{
	for (int i = 0; i < ST_MAX; i++)
		if (!strcmp(ring_stat_names[i], name))
			return srv->st[i];
	return UINT64_MAX;
}
