/*
 * Per-thread I/O: one io_uring with the pool files and a set of buffers
 * registered, streams that read an object's disk chunks ahead of the sender
 * (tail first), writers that fill chunk buffers from the network and write
 * them out, and the admission bound that stops writers when too many bytes
 * are accepted but not yet on disk.
 *
 * Buffers: each gs_io registers io_buffers * io_streams stream buffers and
 * 2 * io_buffers writer buffers.  A stream takes its whole read-ahead window
 * (up to io_buffers buffers, cut into SSD-chunk slices) at once and recycles
 * it until it closes, so streams can't deadlock on each other; while others
 * wait for a window, gs_io_run() takes it back from a stream whose consumer
 * left its landed bytes unread for READAHEAD_STALL_MS (they are read, and
 * checked, again when it returns).  Writers take one buffer per chunk and
 * give it back when the write completes.
 *
 * Every io_uring_submit() result is handled: -EAGAIN/-EBUSY are waited out
 * (completions reaped meanwhile go to a stash gs_io_run() drains), other
 * errors fail the queued operations through their callbacks.
 */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include "engine.h"
#include "log.h"

#define RING_ENTRIES	256
#define SUBMIT_TRIES	100		/* -EAGAIN/-EBUSY retries, 10 ms apart */
#define SINK_LEN	(64u << 10)	/* where a failed writer's bytes go */
#define READAHEAD_STALL_MS 100		/* a consumer this slow loses its window */

struct io_waiter {
	struct io_waiter *prev, *next;
	gs_wake_fn fn;
	void *arg;
	bool queued;
};

/* A callback to fire from gs_io_run; embedded in its owner, so arming one
 * never allocates (and never fails). */
struct deferred {
	struct deferred *next;
	gs_done_fn fn;
	void *arg;
	int res;
};

struct buf_pool {
	int *free;			/* stack of buffer indexes */
	unsigned nfree, n, base;
	struct io_waiter waiters;	/* list head */
};

struct io_op;
typedef void (*op_done_fn)(struct io_op *op);

struct io_seg {
	struct io_op *op;
	struct pool_seg seg;
	uint32_t done;
	int stash_res;			/* its result, while on io->stash */
	struct io_seg *stash_next;
};

struct io_op {
	struct gs_io *io;
	bool write;
	int buf_idx;			/* registered buffer, or -1 */
	char *buf;
	uint32_t len;			/* aligned length */
	uint32_t chunk;
	enum gs_tier tier;
	int pending;
	int res;
	op_done_fn done;
	void *owner;
	int nsegs;
	struct io_seg segs[];
};

struct gs_io {
	struct gs_engine *e;
	struct io_uring ring;
	int efd;
	char *bufmem;
	size_t bufmem_len;
	struct buf_pool streams, writers;
	struct deferred *def_head, *def_tail;
	struct io_seg *stash_head, *stash_tail;	/* completions to handle */
	struct gs_stream *holders;	/* streams holding a window */
	bool timer_armed, timer_fired;
	struct __kernel_timespec timer_ts;
	char *sink;			/* SINK_LEN bytes nobody reads */
	unsigned inflight;
	uint64_t last_cas;
	bool last_replaced;
	struct gs_io *next;		/* e->io_list */
};

/* ---- small helpers ---- */

static void waiter_add(struct io_waiter *head, struct io_waiter *w,
		       gs_wake_fn fn, void *arg)
{
	if (w->queued)
		return;
	w->fn = fn;
	w->arg = arg;
	w->next = head;
	w->prev = head->prev;
	head->prev->next = w;
	head->prev = w;
	w->queued = true;
}

static void waiter_del(struct io_waiter *w)
{
	if (!w->queued)
		return;
	w->prev->next = w->next;
	w->next->prev = w->prev;
	w->queued = false;
}

/* Fires every waiter on <head>; each re-registers if still blocked. */
static void waiters_fire(struct io_waiter *head)
{
	struct io_waiter list = { &list, &list, NULL, NULL, false };

	if (head->next == head)
		return;
	list.next = head->next;
	list.prev = head->prev;
	list.next->prev = &list;
	list.prev->next = &list;
	head->next = head->prev = head;
	while (list.next != &list) {
		struct io_waiter *w = list.next;

		waiter_del(w);
		w->fn(w->arg);
	}
}

static void kick(struct gs_io *io)
{
	eventfd_write(io->efd, 1);
}

/* Queues <fn>(<arg>, <res>) for the next gs_io_run() in <d>, which its
 * owner embeds. */
static void defer(struct gs_io *io, struct deferred *d, gs_done_fn fn,
		  void *arg, int res)
{
	*d = (struct deferred){ NULL, fn, arg, res };
	if (io->def_tail)
		io->def_tail->next = d;
	else
		io->def_head = d;
	io->def_tail = d;
	kick(io);
}

static int buf_get(struct buf_pool *bp)
{
	return bp->nfree ? bp->free[--bp->nfree] : -1;
}

static void buf_put(struct buf_pool *bp, int idx)
{
	bp->free[bp->nfree++] = idx;
}

static char *buf_ptr(struct gs_io *io, int idx)
{
	return io->bufmem + (size_t)idx * GS_IO_BUFFER;
}

static uint32_t tier_align(struct gs_engine *e, enum gs_tier t)
{
	return e->pools[t].align;
}

static bool admission_full(struct gs_engine *e, uint64_t more)
{
	uint64_t cur = __atomic_load_n(&e->st.admission_bytes, __ATOMIC_RELAXED);

	return cur && cur + more > e->cfg.admission_bytes;
}

void engine_wake_admission(struct gs_engine *e)
{
	pthread_mutex_lock(&e->io_lock);
	for (struct gs_io *io = e->io_list; io; io = io->next)
		if (io->writers.waiters.next != &io->writers.waiters)
			kick(io);
	pthread_mutex_unlock(&e->io_lock);
}

/* ---- submission and completion ---- */

#ifdef GS_FAULTS
/* Test hook: the next <gs_fault_submit_n> submits fail with
 * <gs_fault_submit_err> before reaching the kernel. */
int gs_fault_submit_err;
unsigned gs_fault_submit_n;
#endif

static int ring_submit(struct gs_io *io)
{
#ifdef GS_FAULTS
	if (gs_fault_submit_n) {
		gs_fault_submit_n--;
		return gs_fault_submit_err;
	}
#endif
	return io_uring_submit(&io->ring);
}

#define container_of(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))
#define TIMER_DATA(io)	((void *)&(io)->timer_armed)

static void stash(struct gs_io *io, struct io_seg *s, int res)
{
	s->stash_res = res;
	s->stash_next = NULL;
	if (io->stash_tail)
		io->stash_tail->stash_next = s;
	else
		io->stash_head = s;
	io->stash_tail = s;
}

static struct io_seg *stash_pop(struct gs_io *io)
{
	struct io_seg *s = io->stash_head;

	if (s) {
		io->stash_head = s->stash_next;
		if (!io->stash_head)
			io->stash_tail = NULL;
	}
	return s;
}

/* Moves every completion waiting in the CQ to io->stash, to be handled by
 * gs_io_run(); returns how many. */
static unsigned reap_to_stash(struct gs_io *io)
{
	struct io_uring_cqe *cqe;
	unsigned n = 0;

	while (io_uring_peek_cqe(&io->ring, &cqe) == 0) {
		void *data = io_uring_cqe_get_data(cqe);

		if (data == TIMER_DATA(io)) {
			io->timer_armed = false;
			io->timer_fired = true;
		} else {
			stash(io, data, cqe->res);
		}
		io_uring_cqe_seen(&io->ring, cqe);
		n++;
	}
	if (n)
		kick(io);
	return n;
}

/* The kernel refused the SQ for now (-EAGAIN: no memory for requests,
 * -EBUSY: the CQ is backed up): takes completions off its hands, waiting up
 * to 10 ms for one.  Returns false when nothing is in flight to wait for. */
static bool make_room(struct gs_io *io)
{
	struct __kernel_timespec ts = { .tv_nsec = 10 * 1000 * 1000 };
	struct io_uring_cqe *cqe;

	if (reap_to_stash(io))
		return true;
	if (!io->inflight && !io->timer_armed)
		return false;
	io_uring_wait_cqe_timeout(&io->ring, &cqe, &ts);
	reap_to_stash(io);
	return true;
}

/* Takes back the SQEs the kernel never consumed and completes each with
 * <err> through io->stash (their callbacks fire from gs_io_run). */
static void fail_unsubmitted(struct gs_io *io, int err)
{
	struct io_uring_sq *sq = &io->ring.sq;
	unsigned head = io_uring_smp_load_acquire(sq->khead);

	log_warn("io_uring submit failed: %s; failing %u queued I/O(s)",
		 strerror(-err), sq->sqe_tail - head);
	for (unsigned h = head; h != sq->sqe_tail; h++) {
		struct io_uring_sqe *sqe = &sq->sqes[sq->array[h & sq->ring_mask]];
		void *data = (void *)(uintptr_t)sqe->user_data;

		if (data == TIMER_DATA(io))
			io->timer_armed = false;
		else
			stash(io, data, -EIO);
	}
	sq->sqe_head = sq->sqe_tail = head;
	io_uring_smp_store_release(sq->ktail, head);
	kick(io);
}

/* Submits every queued SQE; -EAGAIN/-EBUSY are waited out, any other error
 * (or a kernel that stays busy) fails the queued operations. */
static void io_submit(struct gs_io *io)
{
	unsigned tries = 0;
	int ret;

	while (io_uring_sq_ready(&io->ring)) {
		ret = ring_submit(io);
		if (ret > 0) {
			tries = 0;
			continue;
		}
		if (ret == 0 || ret == -EAGAIN || ret == -EBUSY || ret == -EINTR) {
			if (++tries <= SUBMIT_TRIES && make_room(io))
				continue;
			if (ret == 0 || ret == -EINTR)
				ret = -EAGAIN;
		}
		fail_unsubmitted(io, ret);
		return;
	}
}

static struct io_uring_sqe *get_sqe(struct gs_io *io)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&io->ring);

	if (!sqe) {
		io_submit(io);
		sqe = io_uring_get_sqe(&io->ring);
	}
	return sqe;
}

static int seg_submit(struct gs_io *io, struct io_seg *s)
{
	struct io_op *op = s->op;
	struct pool *p = &io->e->pools[op->tier];
	struct io_uring_sqe *sqe = get_sqe(io);
	int file = p->dirs[s->seg.dir].fixed;
	char *ptr = op->buf + s->seg.buf_off + s->done;
	uint32_t len = s->seg.len - s->done;
	uint64_t off = s->seg.off + s->done;

	if (!sqe)
		return -EBUSY;
	if (op->buf_idx >= 0 && op->write)
		io_uring_prep_write_fixed(sqe, file, ptr, len, off, op->buf_idx);
	else if (op->buf_idx >= 0)
		io_uring_prep_read_fixed(sqe, file, ptr, len, off, op->buf_idx);
	else if (op->write)
		io_uring_prep_write(sqe, file, ptr, len, off);
	else
		io_uring_prep_read(sqe, file, ptr, len, off);
	sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data(sqe, s);
	return 0;
}

/* Starts a read or write of chunk <ci> of <obj> to/from <buf>. */
static int op_start(struct gs_io *io, struct gs_obj *obj, uint32_t ci,
		    bool write, char *buf, int buf_idx, op_done_fn done,
		    void *owner)
{
	struct chunk *c = &obj->chunks[ci];
	struct pool *p = &io->e->pools[c->tier];
	struct pool_seg segs[GS_MAX_SEGS];
	uint32_t len = round_up(c->len, p->align);
	struct io_op *op;
	int n = pool_segments(p, c->addr, len, segs, GS_MAX_SEGS);

	if (n < 0) {
		log_warn("chunk %u at %llu (%u bytes) does not map onto the pool: %s",
			 ci, (unsigned long long)c->addr, len, strerror(-n));
		return n;
	}
	op = calloc(1, sizeof(*op) + n * sizeof(struct io_seg));
	if (!op)
		return -ENOMEM;
	*op = (struct io_op){ .io = io, .write = write, .buf_idx = buf_idx,
			      .buf = buf, .len = len, .chunk = ci,
			      .tier = c->tier, .pending = n, .done = done,
			      .owner = owner, .nsegs = n };
	for (int i = 0; i < n; i++) {
		op->segs[i] = (struct io_seg){ .op = op, .seg = segs[i] };
		if (seg_submit(io, &op->segs[i]) < 0) {
			/* the ring is full even after a submit: fail cleanly */
			op->pending = i;
			op->res = -EBUSY;
			if (i == 0) {
				free(op);
				return -EBUSY;
			}
			break;
		}
	}
	io->inflight++;
	return 0;			/* the caller submits, once for all it arms */
}

static void seg_complete(struct gs_io *io, struct io_seg *s, int res)
{
	struct io_op *op = s->op;
	struct gs_engine *e = io->e;

	if (res == -EAGAIN || res == -EINTR) {
		if (seg_submit(io, s) == 0) {
			io_submit(io);
			return;
		}
		res = -EIO;
	}
	if (res > 0) {
		s->done += res;
		if (s->done < s->seg.len) {
			STAT_ADD(e, short_ios, 1);
			if (s->done % 512 == 0 && seg_submit(io, s) == 0) {
				io_submit(io);
				return;
			}
			res = -EIO;
		}
	} else if (res == 0) {
		res = -EIO;		/* past the end of a preallocated file */
	}
	if (res < 0 && op->res == 0)
		op->res = res;
	if (--op->pending)
		return;
	io->inflight--;
	if (op->res < 0) {
		STAT_ADD(e, io_errors, 1);
		log_warn("%s of a %s chunk failed: %s", op->write ? "write" : "read",
			 op->tier == GS_TIER_SSD ? "ssd" : "hdd", strerror(-op->res));
	}
	op->done(op);
	free(op);
}

static void stream_waiters_check(struct gs_io *io);
static bool waiters_empty(const struct io_waiter *head);
static bool reclaim_windows(struct gs_io *io);

int gs_io_run(struct gs_io *io, bool wait)
{
	struct io_uring_cqe *cqe;
	struct deferred *d;
	struct io_seg *s;
	eventfd_t v;
	int n = 0;

	eventfd_read(io->efd, &v);
	if (wait && !io->def_head && !io->stash_head && io->inflight) {
		int ret = io_uring_wait_cqe(&io->ring, &cqe);

		if (ret < 0 && ret != -EINTR)
			return ret;
	}
	for (;;) {
		if ((s = stash_pop(io))) {
			seg_complete(io, s, s->stash_res);
		} else if (io_uring_peek_cqe(&io->ring, &cqe) == 0) {
			void *data = io_uring_cqe_get_data(cqe);
			int res = cqe->res;

			io_uring_cqe_seen(&io->ring, cqe);
			if (data == TIMER_DATA(io)) {
				io->timer_armed = false;
				io->timer_fired = true;
			} else {
				seg_complete(io, data, res);
			}
		} else {
			break;
		}
		n++;
	}
	d = io->def_head;
	io->def_head = io->def_tail = NULL;
	while (d) {
		struct deferred *next = d->next;

		d->fn(d->arg, d->res);	/* may free the owner of <d> */
		d = next;
		n++;
	}
	if (!waiters_empty(&io->streams.waiters) && reclaim_windows(io))
		io->timer_fired = true;
	if (io->streams.nfree || io->timer_fired) {
		io->timer_fired = false;
		waiters_fire(&io->streams.waiters);
	}
	if ((io->writers.nfree || !io->writers.n) &&
	    !admission_full(io->e, GS_IO_BUFFER))
		waiters_fire(&io->writers.waiters);
	stream_waiters_check(io);
	return n;
}

int gs_io_fd(const struct gs_io *io)
{
	return io->efd;
}

unsigned gs_io_pending(const struct gs_io *io)
{
	return io->inflight + (io->def_head != NULL) + (io->stash_head != NULL);
}

/* ---- create / destroy ---- */

static int pool_init(struct buf_pool *bp, unsigned n, unsigned base)
{
	bp->free = calloc(n ? n : 1, sizeof(int));
	if (!bp->free)
		return -ENOMEM;
	bp->n = n;
	bp->base = base;
	for (unsigned i = 0; i < n; i++)
		bp->free[bp->nfree++] = base + n - 1 - i;
	bp->waiters.next = bp->waiters.prev = &bp->waiters;
	return 0;
}

int gs_io_create(struct gs_engine *e, struct gs_io **iop)
{
	bool disk = e->nfiles > 0;
	unsigned nstream = disk ? e->cfg.io_buffers * e->cfg.io_streams : 0;
	unsigned nwriter = disk ? 2 * e->cfg.io_buffers : 0;
	struct gs_io *io = calloc(1, sizeof(*io));
	int ret;

	if (!io)
		return -ENOMEM;
	io->e = e;
	io->sink = malloc(SINK_LEN);
	if (!io->sink) {
		ret = -ENOMEM;
		goto out_free;
	}
	io->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (io->efd < 0) {
		ret = -errno;
		goto out_free;
	}
	ret = io_uring_queue_init(RING_ENTRIES, &io->ring, 0);
	if (ret < 0)
		goto out_efd;
	ret = io_uring_register_eventfd(&io->ring, io->efd);
	if (ret < 0)
		goto out_ring;
	if (pool_init(&io->streams, nstream, 0) < 0 ||
	    pool_init(&io->writers, nwriter, nstream) < 0) {
		ret = -ENOMEM;
		goto out_pools;
	}
	if (disk) {
		unsigned n = nstream + nwriter;
		struct iovec *iov = calloc(n, sizeof(*iov));

		io->bufmem_len = (size_t)n * GS_IO_BUFFER;
		io->bufmem = mmap(NULL, io->bufmem_len, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (!iov || io->bufmem == MAP_FAILED) {
			free(iov);
			io->bufmem = NULL;
			ret = -ENOMEM;
			goto out_pools;
		}
		for (unsigned i = 0; i < n; i++)
			iov[i] = (struct iovec){ buf_ptr(io, i), GS_IO_BUFFER };
		ret = io_uring_register_buffers(&io->ring, iov, n);
		free(iov);
		if (ret < 0)
			goto out_mem;
		ret = io_uring_register_files(&io->ring, e->files, e->nfiles);
		if (ret < 0)
			goto out_mem;
	}
	pthread_mutex_lock(&e->io_lock);
	io->next = e->io_list;
	e->io_list = io;
	pthread_mutex_unlock(&e->io_lock);
	*iop = io;
	return 0;

out_mem:
	munmap(io->bufmem, io->bufmem_len);
out_pools:
	free(io->streams.free);
	free(io->writers.free);
out_ring:
	io_uring_queue_exit(&io->ring);
out_efd:
	close(io->efd);
out_free:
	free(io->sink);
	free(io);
	return ret;
}

void gs_io_destroy(struct gs_io **iop)
{
	struct gs_io *io = *iop;
	struct gs_io **link;

	if (!io)
		return;
	while (gs_io_pending(io))
		if (gs_io_run(io, true) < 0)
			break;
	pthread_mutex_lock(&io->e->io_lock);
	for (link = &io->e->io_list; *link; link = &(*link)->next)
		if (*link == io) {
			*link = io->next;
			break;
		}
	pthread_mutex_unlock(&io->e->io_lock);
	io_uring_queue_exit(&io->ring);
	if (io->bufmem)
		munmap(io->bufmem, io->bufmem_len);
	free(io->streams.free);
	free(io->writers.free);
	close(io->efd);
	free(io->sink);
	free(io);
	*iop = NULL;
}

/* ---- checks shared by streams and read_into ---- */

/* Verifies a landed chunk; on failure counts it and drops the object. */
static int chunk_check(struct gs_io *io, struct gs_obj *obj, uint32_t ci,
		       const char *data, int res)
{
	struct gs_engine *e = io->e;
	const struct chunk *c = &obj->chunks[ci];

	if (res == 0 && XXH3_64bits(data, c->len) != c->sum) {
		STAT_ADD(e, checksum_errors, 1);
		log_warn("checksum mismatch in chunk %u of \"%.*s\": object dropped",
			 ci, obj->klen, obj->key);
		res = -EBADMSG;
	}
	if (res < 0) {
		engine_drop(e, obj);
		return res;
	}
	STAT_ADD(e, disk_reads, 1);
	STAT_ADD(e, disk_read_bytes, c->len);
	return 0;
}

static void pin(struct gs_engine *e, struct gs_obj *obj)
{
	pthread_mutex_lock(&e->lock);
	obj->refs++;
	STAT_ADD(e, pins, 1);
	pthread_mutex_unlock(&e->lock);
}

/* Fills <order> with the disk chunks of [first, last) in submission order:
 * with <lead>, the first HDD chunk (the longest wait) first, then offset
 * order.  A window of one buffer must not lead: the chunk holding it
 * could not be sent before the ones it jumped. */
static uint32_t read_order(const struct gs_obj *obj, uint32_t first,
			   uint32_t last, bool lead_tail, uint32_t *order)
{
	uint32_t n = 0, lead = UINT32_MAX;

	for (uint32_t c = first; lead_tail && c < last; c++)
		if (obj->chunks[c].tier == GS_TIER_HDD) {
			lead = c;
			break;
		}
	if (lead != UINT32_MAX)
		order[n++] = lead;
	for (uint32_t c = first; c < last; c++)
		if (c != lead && obj->chunks[c].tier != GS_TIER_RAM)
			order[n++] = c;
	return n;
}

/* ---- streams ---- */

enum { CH_IDLE, CH_INFLIGHT, CH_READY, CH_DONE };

/* A window buffer is cut into slices of one SSD chunk: an SSD chunk takes
 * one, an HDD chunk (up to a whole buffer) takes as many as it spans. */
#define SLICE		GS_SSD_CHUNK
#define SLICES		(GS_IO_BUFFER / SLICE)
#define ALL_SLICES	((1u << SLICES) - 1)

struct stream_slot {
	uint8_t state;
	int8_t win;			/* window buffer holding it, -1 none */
	uint8_t slices;			/* its slices in that buffer */
	uint32_t boff;			/* where it starts in that buffer */
	uint64_t off;			/* object offset of the chunk */
};

struct gs_stream {
	struct gs_io *io;
	struct gs_obj *obj;
	uint64_t pos, end;
	uint32_t first, last, cur;
	uint32_t *order;
	uint32_t norder, next_submit;
	struct stream_slot *slots;	/* index: chunk - first */
	int *window;			/* our buffers, held until close or reclaim */
	uint8_t *free_slices;		/* per window buffer: bit set = free */
	unsigned window_size;
	bool have_window;
	struct gs_stream *hold_prev, *hold_next;	/* io->holders */
	uint64_t stall_since;		/* ns: bytes ready, consumer idle since */
	unsigned inflight;
	int error;
	bool closed;
	gs_wake_fn wake;
	void *arg;
	struct io_waiter waiter;
};

static void stream_refill(struct gs_stream *s);
static void put_slices(struct gs_stream *s, struct stream_slot *sl);
static unsigned window_for(struct gs_stream *s, unsigned max);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static bool waiters_empty(const struct io_waiter *head)
{
	return head->next == head;
}

/* Gives the window buffers of <s> back to the pool. */
static void window_put(struct gs_stream *s)
{
	struct gs_io *io = s->io;

	if (!s->have_window)
		return;
	for (unsigned i = 0; i < s->window_size; i++)
		buf_put(&io->streams, s->window[i]);
	s->have_window = false;
	if (s->hold_prev)
		s->hold_prev->hold_next = s->hold_next;
	else
		io->holders = s->hold_next;
	if (s->hold_next)
		s->hold_next->hold_prev = s->hold_prev;
	s->hold_prev = s->hold_next = NULL;
	if (!waiters_empty(&io->streams.waiters))
		kick(io);
}

static void stream_free(struct gs_stream *s)
{
	struct gs_io *io = s->io;

	window_put(s);
	waiter_del(&s->waiter);
	gs_obj_put(io->e, &s->obj);
	free(s->order);
	free(s->slots);
	free(s->window);
	free(s->free_slices);
	free(s);
}

/* A window came free (called from gs_io_run). */
static void stream_retry(void *arg)
{
	struct gs_stream *s = arg;

	stream_refill(s);
	if (s->error && s->wake)
		s->wake(s->arg);
}

/* Whether <s> holds a window whose bytes its consumer has left unread for
 * READAHEAD_STALL_MS: nothing in flight, the next chunk landed. */
static bool stream_stalled(const struct gs_stream *s, uint64_t now)
{
	const struct stream_slot *sl;

	if (s->inflight || s->cur >= s->last)
		return false;
	sl = &s->slots[s->cur - s->first];
	return sl->state == CH_READY && sl->win >= 0 &&
	       now - s->stall_since >= READAHEAD_STALL_MS * 1000000ull;
}

/* Takes the window from a stalled stream: its landed chunks are forgotten
 * and read again (checksums checked again) when its consumer comes back. */
static void stream_reclaim(struct gs_stream *s)
{
	for (uint32_t c = s->cur; c < s->last; c++) {
		struct stream_slot *sl = &s->slots[c - s->first];

		if (s->obj->chunks[c].tier == GS_TIER_RAM)
			continue;
		put_slices(s, sl);
		sl->state = CH_IDLE;
	}
	s->norder = read_order(s->obj, s->cur, s->last,
			       s->io->e->cfg.io_buffers > 1, s->order);
	s->next_submit = 0;
	window_put(s);
	s->window_size = window_for(s, s->io->e->cfg.io_buffers);
	STAT_ADD(s->io->e, readahead_reclaims, 1);
}

/* Frees window buffers for the streams waiting for one by reclaiming
 * stalled streams; returns whether any came free.  Only from gs_io_run(),
 * between callbacks: a consumer may use what gs_stream_peek() returned
 * until it is back in its event loop, never longer. */
static bool reclaim_windows(struct gs_io *io)
{
	struct io_waiter *head = &io->streams.waiters, *w;
	unsigned need = 0, before = io->streams.nfree;
	uint64_t now = now_ns();
	struct gs_stream *h, *next;

	for (w = head->next; w != head; w = w->next)
		need += container_of(w, struct gs_stream, waiter)->window_size;
	for (h = io->holders; h && io->streams.nfree < need; h = next) {
		next = h->hold_next;
		if (stream_stalled(h, now))
			stream_reclaim(h);
	}
	return io->streams.nfree > before;
}

/* While streams wait for a window, a timer makes gs_io_run() look for
 * stalled holders again, since no completion may ever come to do so. */
static void stream_waiters_check(struct gs_io *io)
{
	struct io_uring_sqe *sqe;

	if (io->timer_armed || waiters_empty(&io->streams.waiters) ||
	    !io->holders)
		return;
	sqe = get_sqe(io);
	if (!sqe)
		return;
	io->timer_ts = (struct __kernel_timespec){
		.tv_nsec = READAHEAD_STALL_MS * 1000000ll / 2 };
	io_uring_prep_timeout(sqe, &io->timer_ts, 0, 0);
	io_uring_sqe_set_data(sqe, TIMER_DATA(io));
	io->timer_armed = true;
	io_submit(io);
}

static bool take_window(struct gs_stream *s)
{
	struct gs_io *io = s->io;
	struct buf_pool *bp = &io->streams;

	if (s->have_window)
		return true;
	if (bp->nfree < s->window_size) {
		waiter_add(&bp->waiters, &s->waiter, stream_retry, s);
		stream_waiters_check(io);	/* the timer finds stalled holders */
		return false;
	}
	for (unsigned i = 0; i < s->window_size; i++) {
		s->window[i] = buf_get(bp);
		s->free_slices[i] = ALL_SLICES;
	}
	s->have_window = true;
	s->hold_prev = NULL;
	s->hold_next = io->holders;
	if (io->holders)
		io->holders->hold_prev = s;
	io->holders = s;
	return true;
}

static unsigned chunk_slices(const struct gs_stream *s, uint32_t c)
{
	const struct chunk *ch = &s->obj->chunks[c];
	uint32_t alen = round_up(ch->len, tier_align(s->io->e, ch->tier));

	return (alen + SLICE - 1) / SLICE;
}

/* Finds <n> adjacent free slices in one window buffer for chunk <c>. */
static bool take_slices(struct gs_stream *s, struct stream_slot *sl, unsigned n)
{
	for (unsigned i = 0; i < s->window_size; i++)
		for (unsigned k = 0; k + n <= SLICES; k++) {
			uint8_t bits = ((1u << n) - 1) << k;

			if ((s->free_slices[i] & bits) != bits)
				continue;
			s->free_slices[i] &= ~bits;
			sl->win = i;
			sl->slices = bits;
			sl->boff = k * SLICE;
			return true;
		}
	return false;
}

static void put_slices(struct gs_stream *s, struct stream_slot *sl)
{
	if (sl->win < 0)
		return;
	s->free_slices[sl->win] |= sl->slices;
	sl->win = -1;
}

static char *slot_ptr(const struct gs_stream *s, const struct stream_slot *sl)
{
	return buf_ptr(s->io, s->window[sl->win]) + sl->boff;
}

static void stream_read_done(struct io_op *op)
{
	struct gs_stream *s = op->owner;
	struct stream_slot *sl = &s->slots[op->chunk - s->first];
	int res;

	s->inflight--;
	if (s->closed) {
		if (!s->inflight)
			stream_free(s);
		return;
	}
	res = chunk_check(s->io, s->obj, op->chunk, op->buf, op->res);
	if (res < 0 && !s->error)
		s->error = res;
	sl->state = CH_READY;
	if (op->chunk == s->cur)
		s->stall_since = now_ns();
	if (s->wake && (op->chunk == s->cur || s->error))
		s->wake(s->arg);
}

static void stream_refill(struct gs_stream *s)
{
	struct gs_engine *e = s->io->e;

	if (s->closed || s->error || s->next_submit == s->norder)
		return;
	if (!take_window(s))
		return;
	while (s->next_submit < s->norder) {
		uint32_t c = s->order[s->next_submit];
		struct stream_slot *sl = &s->slots[c - s->first];
		int ret;

		if (!take_slices(s, sl, chunk_slices(s, c)))
			break;
		ret = op_start(s->io, s->obj, c, false, slot_ptr(s, sl),
			       s->window[sl->win], stream_read_done, s);
		if (ret < 0) {
			put_slices(s, sl);
			s->error = -EIO;
			STAT_ADD(e, io_errors, 1);
			break;
		}
		sl->state = CH_INFLIGHT;
		s->inflight++;
		s->next_submit++;
		if (c != s->cur)
			STAT_ADD(e, readahead_chunks, 1);
		STAT_MAX(e, readahead_max_depth, s->inflight);
	}
	io_submit(s->io);
}

/* Window buffers for the chunks in <s->order>: what they span, at most
 * <max>, and two when an HDD chunk leads (it may take a whole buffer while
 * the chunks it jumped need room to be sent first). */
static unsigned window_for(struct gs_stream *s, unsigned max)
{
	unsigned slices = 0, n;

	for (uint32_t i = 0; i < s->norder; i++)
		slices += chunk_slices(s, s->order[i]);
	n = (slices + SLICES - 1) / SLICES;
	if (s->norder > 1 && s->order[0] > s->order[1] && n < 2)
		n = 2;
	return n < max ? n : max;
}

int gs_stream_open(struct gs_io *io, struct gs_obj *obj, uint64_t off,
		   uint64_t len, gs_wake_fn wake, void *arg,
		   struct gs_stream **sp)
{
	const struct gs_meta *m = &obj->meta;
	uint64_t end = off + len > m->size || off + len < off ? m->size : off + len;
	struct gs_stream *s = calloc(1, sizeof(*s));
	uint64_t coff = m->head_len;

	if (!s)
		return -ENOMEM;
	s->io = io;
	s->obj = obj;			/* pinned below, once it can't fail */
	s->pos = off < end ? off : end;
	s->end = end;
	s->wake = wake;
	s->arg = arg;
	if (end > m->head_len) {
		uint64_t start = s->pos > m->head_len ? s->pos : m->head_len;

		s->first = UINT32_MAX;
		for (uint32_t c = 0; c < obj->nchunks; c++) {
			uint64_t cend = coff + obj->chunks[c].len;

			if (s->first == UINT32_MAX && cend > start)
				s->first = c;
			if (cend >= end) {
				s->last = c + 1;
				break;
			}
			coff = cend;
		}
	}
	s->cur = s->first;
	if (s->last > s->first) {
		uint32_t n = s->last - s->first;

		s->slots = calloc(n, sizeof(*s->slots));
		s->order = calloc(n, sizeof(*s->order));
		if (!s->slots || !s->order)
			goto out_free;
		coff = engine_chunk_start(obj, s->first);
		for (uint32_t c = s->first; c < s->last; c++) {
			struct stream_slot *sl = &s->slots[c - s->first];

			sl->win = -1;
			sl->off = coff;
			coff += obj->chunks[c].len;
			if (obj->chunks[c].tier == GS_TIER_RAM)
				sl->state = CH_READY;
		}
		s->norder = read_order(obj, s->first, s->last,
				       io->e->cfg.io_buffers > 1, s->order);
		s->window_size = window_for(s, io->e->cfg.io_buffers);
		s->window = calloc(s->window_size ? s->window_size : 1, sizeof(int));
		s->free_slices = calloc(s->window_size ? s->window_size : 1, 1);
		if (!s->window || !s->free_slices)
			goto out_free;
	}
	pin(io->e, obj);
	stream_refill(s);
	*sp = s;
	return 0;

out_free:
	free(s->slots);
	free(s->order);
	free(s->window);
	free(s->free_slices);
	free(s);
	return -ENOMEM;
}

int gs_stream_peek(struct gs_stream *s, const void **data, size_t *len)
{
	const struct gs_obj *obj = s->obj;
	struct stream_slot *sl;
	const struct chunk *c;
	uint64_t cend;

	if (!s->error && s->pos >= obj->meta.head_len)
		stream_refill(s);
	if (s->error)
		return s->error;
	if (s->pos >= s->end) {
		*len = 0;
		return 0;
	}
	if (s->pos < obj->meta.head_len) {
		*data = (const char *)obj->head + s->pos;
		*len = (obj->meta.head_len < s->end ? obj->meta.head_len : s->end) - s->pos;
		return 0;
	}
	sl = &s->slots[s->cur - s->first];
	c = &obj->chunks[s->cur];
	if (sl->state != CH_READY)
		return -EAGAIN;
	cend = sl->off + c->len < s->end ? sl->off + c->len : s->end;
	if (c->tier == GS_TIER_RAM)
		*data = (const char *)s->io->e->region.base + c->addr + (s->pos - sl->off);
	else
		*data = slot_ptr(s, sl) + (s->pos - sl->off);
	*len = cend - s->pos;
	return 0;
}

void gs_stream_consume(struct gs_stream *s, size_t n)
{
	s->pos += n;
	while (s->cur < s->last) {
		struct stream_slot *sl = &s->slots[s->cur - s->first];

		if (s->pos < sl->off + s->obj->chunks[s->cur].len)
			break;
		put_slices(s, sl);
		sl->state = CH_DONE;
		s->cur++;
	}
	s->stall_since = now_ns();
	stream_refill(s);
}

uint64_t gs_stream_left(const struct gs_stream *s)
{
	return s->end - s->pos;
}

void gs_stream_close(struct gs_stream **sp)
{
	struct gs_stream *s = *sp;

	if (!s)
		return;
	*sp = NULL;
	s->closed = true;
	waiter_del(&s->waiter);
	if (!s->inflight)
		stream_free(s);
}

/* ---- whole-object reads into caller memory ---- */

struct read_into {
	struct deferred def;
	struct gs_io *io;
	struct gs_obj *obj;
	unsigned pending;
	int res;
	gs_done_fn done;
	void *arg;
};

static void read_into_finish(struct read_into *r)
{
	gs_obj_put(r->io->e, &r->obj);
	r->done(r->arg, r->res);
	free(r);
}

static void read_into_chunk_done(struct io_op *op)
{
	struct read_into *r = op->owner;
	int res = chunk_check(r->io, r->obj, op->chunk, op->buf, op->res);

	if (res < 0 && !r->res)
		r->res = res;
	if (--r->pending == 0)
		read_into_finish(r);
}

static void read_into_deferred(void *arg, int res)
{
	(void)res;
	read_into_finish(arg);
}

size_t gs_read_size(const struct gs_obj *obj)
{
	return round_up(obj->meta.size ? obj->meta.size : 1, 65536);
}

int gs_read_into(struct gs_io *io, struct gs_obj *obj, void *buf,
		 gs_done_fn done, void *arg)
{
	struct read_into *r = calloc(1, sizeof(*r));
	uint32_t *order = calloc(obj->nchunks + 1, sizeof(*order));
	uint32_t n;
	int ret = 0;

	if (!r || !order) {
		free(r);
		free(order);
		return -ENOMEM;
	}
	*r = (struct read_into){ .io = io, .obj = obj, .done = done, .arg = arg };
	pin(io->e, obj);
	n = read_order(obj, 0, obj->nchunks, true, order);
	r->pending = 1;			/* held until every read is armed */
	for (uint32_t i = 0; i < n && ret == 0; i++) {
		char *dst = (char *)buf + engine_chunk_start(obj, order[i]);

		r->pending++;
		ret = op_start(io, obj, order[i], false, dst, -1,
			       read_into_chunk_done, r);
		if (ret < 0) {
			r->pending--;
			r->res = ret;
		}
	}
	free(order);
	io_submit(io);			/* the disk starts while we copy */
	if (obj->meta.head_len)
		memcpy(buf, obj->head, obj->meta.head_len);
	for (uint32_t c = 0; c < obj->nchunks; c++)
		if (obj->chunks[c].tier == GS_TIER_RAM)
			memcpy((char *)buf + engine_chunk_start(obj, c),
			       (char *)io->e->region.base + obj->chunks[c].addr,
			       obj->chunks[c].len);
	if (--r->pending == 0)
		defer(io, &r->def, read_into_deferred, r, 0);
	return 0;
}

/* ---- writers ---- */

struct gs_writer {
	struct deferred def;
	struct gs_io *io;
	struct gs_obj *obj;
	uint64_t pos;
	uint32_t cur;
	uint64_t cur_off;
	int cur_buf;
	uint64_t cur_admitted;
	uint64_t credit;		/* admitted for us already (append data) */
	unsigned inflight;
	int error;
	bool finishing, aborted, waited;
	enum gs_mode mode;
	uint64_t cas;
	gs_done_fn done;
	void *arg;
	struct io_waiter waiter;
};

int gs_writer_open(struct gs_io *io, const void *key, size_t klen,
		   uint64_t size, uint32_t flags, int64_t exptime,
		   struct gs_writer **wp)
{
	struct gs_engine *e = io->e;
	struct gs_writer *w;
	int ret;

	if (size > e->cfg.max_object)
		return -E2BIG;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	ret = engine_new_record(e, key, klen, size, &w->obj);
	if (ret < 0) {
		free(w);
		return ret;
	}
	w->io = io;
	w->obj->meta.flags = flags;
	w->obj->meta.exptime = exptime;
	w->cur_off = w->obj->meta.head_len;
	w->cur_buf = -1;
	*wp = w;
	return 0;
}

static void release_admission(struct gs_io *io, uint64_t n);

static void writer_free(struct gs_writer *w)
{
	struct gs_engine *e = w->io->e;

	waiter_del(&w->waiter);
	if (w->credit)
		release_admission(w->io, w->credit);
	if (w->obj) {
		pthread_mutex_lock(&e->lock);
		engine_unref(e, w->obj);
		pthread_mutex_unlock(&e->lock);
	}
	free(w);
}

static void writer_commit(void *arg, int res)
{
	struct gs_writer *w = arg;
	struct gs_engine *e = w->io->e;

	(void)res;
	res = w->error;
	pthread_mutex_lock(&e->lock);
	if (res == 0)
		res = engine_link(e, w->obj, w->mode, w->cas, &w->io->last_replaced);
	if (res == 0)
		w->io->last_cas = w->obj->meta.cas;
	engine_unref(e, w->obj);
	pthread_mutex_unlock(&e->lock);
	w->obj = NULL;
	w->done(w->arg, res);
	writer_free(w);
}

static void release_admission(struct gs_io *io, uint64_t n)
{
	STAT_SUB(io->e, admission_bytes, n);
	engine_wake_admission(io->e);
}

static void writer_write_done(struct io_op *op)
{
	struct gs_writer *w = op->owner;
	struct gs_engine *e = w->io->e;

	buf_put(&w->io->writers, op->buf_idx);
	release_admission(w->io, op->len);
	w->inflight--;
	if (op->res < 0 && !w->error)
		w->error = -EIO;
	if (op->res == 0) {
		STAT_ADD(e, disk_writes, 1);
		STAT_ADD(e, disk_write_bytes, op->len);
	}
	if (w->inflight)
		return;
	if (w->aborted)
		writer_free(w);
	else if (w->finishing)
		writer_commit(w, 0);
}

/* Reserves part <i> (-1: the head) of the writer's object as its bytes
 * arrive: a set whose bytes never come holds no space.  A failure is kept
 * for the done callback; the rest of the value goes to the sink. */
static void writer_reserve(struct gs_writer *w, int64_t i)
{
	struct gs_engine *e = w->io->e;
	int ret;

	pthread_mutex_lock(&e->lock);
	ret = engine_reserve_part(e, w->obj, i);
	pthread_mutex_unlock(&e->lock);
	if (ret < 0 && !w->error)
		w->error = ret;
}

static int writer_sink(struct gs_writer *w, void **p, size_t *len,
		       uint64_t part_end)
{
	*p = w->io->sink;
	*len = part_end - w->pos < SINK_LEN ? part_end - w->pos : SINK_LEN;
	return 0;
}

int gs_writer_buf(struct gs_writer *w, void **p, size_t *len,
		  gs_wake_fn wake, void *arg)
{
	struct gs_io *io = w->io;
	struct gs_obj *obj = w->obj;
	const struct chunk *c;
	uint64_t need, part_end;

	if (w->pos < obj->meta.head_len) {
		if (!w->error && !obj->head)
			writer_reserve(w, -1);
		if (w->error)
			return writer_sink(w, p, len, obj->meta.head_len);
		*p = (char *)obj->head + w->pos;
		*len = obj->meta.head_len - w->pos;
		return 0;
	}
	if (w->cur >= obj->nchunks) {
		*len = 0;
		return 0;
	}
	c = &obj->chunks[w->cur];
	part_end = w->cur_off + c->len;
	if (c->addr == UINT64_MAX && !w->error)
		writer_reserve(w, w->cur);
	if (w->cur_buf < 0 && w->error)
		return writer_sink(w, p, len, part_end);
	if (c->tier == GS_TIER_RAM) {
		*p = (char *)io->e->region.base + c->addr + (w->pos - w->cur_off);
		*len = part_end - w->pos;
		return 0;
	}
	if (w->cur_buf < 0) {
		uint64_t paid;

		need = round_up(c->len, tier_align(io->e, c->tier));
		paid = need < w->credit ? need : w->credit;
		if ((need > paid && admission_full(io->e, need - paid)) ||
		    !io->writers.nfree) {
			if (!w->waited)
				STAT_ADD(io->e, admission_waits, 1);
			w->waited = true;
			waiter_add(&io->writers.waiters, &w->waiter, wake, arg);
			return -EAGAIN;
		}
		w->waited = false;
		w->cur_buf = buf_get(&io->writers);
		w->cur_admitted = need;
		w->credit -= paid;
		STAT_ADD(io->e, admission_bytes, need - paid);
	}
	*p = buf_ptr(io, w->cur_buf) + (w->pos - w->cur_off);
	*len = part_end - w->pos;
	return 0;
}

void gs_writer_advance(struct gs_writer *w, size_t n)
{
	struct gs_obj *obj = w->obj;
	struct chunk *c;
	char *buf;
	uint32_t alen;

	w->pos += n;
	if (w->pos <= obj->meta.head_len || w->cur >= obj->nchunks)
		return;
	c = &obj->chunks[w->cur];
	if (w->pos < w->cur_off + c->len)
		return;
	w->cur++;
	w->cur_off += c->len;
	if (c->tier == GS_TIER_RAM || w->cur_buf < 0)
		return;			/* in place, or in the sink */
	buf = buf_ptr(w->io, w->cur_buf);
	alen = round_up(c->len, tier_align(w->io->e, c->tier));
	memset(buf + c->len, 0, alen - c->len);
	c->sum = XXH3_64bits(buf, c->len);
	if (w->error) {
		buf_put(&w->io->writers, w->cur_buf);
		release_admission(w->io, w->cur_admitted);
	} else if (op_start(w->io, obj, w->cur - 1, true, buf, w->cur_buf,
			    writer_write_done, w) < 0) {
		buf_put(&w->io->writers, w->cur_buf);
		release_admission(w->io, w->cur_admitted);
		STAT_ADD(w->io->e, io_errors, 1);
		w->error = -EIO;
	} else {
		w->inflight++;
		io_submit(w->io);
	}
	w->cur_buf = -1;
}

int gs_writer_finish(struct gs_writer **wp, enum gs_mode mode, uint64_t cas,
		     gs_done_fn done, void *arg)
{
	struct gs_writer *w = *wp;

	if (w->pos != w->obj->meta.size)
		return -EINVAL;
	*wp = NULL;
	w->mode = mode;
	w->cas = cas;
	w->done = done;
	w->arg = arg;
	w->finishing = true;
	if (!w->inflight)
		defer(w->io, &w->def, writer_commit, w, 0);
	return 0;
}

void gs_writer_abort(struct gs_writer **wp)
{
	struct gs_writer *w = *wp;

	if (!w)
		return;
	*wp = NULL;
	waiter_del(&w->waiter);
	if (w->cur_buf >= 0) {
		buf_put(&w->io->writers, w->cur_buf);
		release_admission(w->io, w->cur_admitted);
		w->cur_buf = -1;
		kick(w->io);
	}
	if (w->inflight)
		w->aborted = true;
	else
		writer_free(w);
}

uint64_t gs_last_cas(const struct gs_io *io)
{
	return io->last_cas;
}

bool gs_last_replaced(const struct gs_io *io)
{
	return io->last_replaced;
}

/* ---- append / prepend ---- */

/* The old value streams in through gs_stream (io_uring, checksummed), the
 * new one goes out through a writer: no whole-value copy, no blocking read.
 * The appended bytes (held by the caller) count against the admission bound
 * from the start, as the writer's credit: its first buffers are paid from
 * it, so a large append can't wait on its own charge. */
struct concat {
	struct deferred def;
	struct gs_io *io;
	struct gs_writer *w;
	struct gs_obj *old;
	struct gs_stream *s;
	const char *data;
	size_t len;
	bool prepend;
	uint64_t pos, total;
	gs_done_fn done;
	void *arg;
	struct io_waiter waiter;
	/* streamed from the caller (gs_concat_open): */
	char *buf;			/* the appended bytes as they arrive */
	uint64_t got;
	uint64_t charged;		/* admission held for buf, not yet the writer's */
	int error;			/* no room for buf: the bytes go to the sink */
	uint8_t klen;
	char key[GS_KEY_MAX];
};

static void concat_free(struct concat *k)
{
	waiter_del(&k->waiter);
	gs_writer_abort(&k->w);
	gs_stream_close(&k->s);
	gs_obj_put(k->io->e, &k->old);
	if (k->charged)
		release_admission(k->io, k->charged);
	free(k->buf);
	free(k);
}

static void concat_done(void *arg, int res)
{
	struct concat *k = arg;

	k->done(k->arg, res);
	concat_free(k);
}

static void concat_fail(struct concat *k, int res)
{
	gs_writer_abort(&k->w);
	gs_stream_close(&k->s);
	defer(k->io, &k->def, concat_done, k, res);
}

/* Copies old bytes into [p, p + *n) from the stream; -EAGAIN: not landed
 * (its wake brings us back). */
static int concat_copy_old(struct concat *k, char *p, size_t *n)
{
	const void *src;
	size_t have;
	int ret = gs_stream_peek(k->s, &src, &have);

	if (ret < 0)
		return ret;
	if (!have)
		return -EIO;		/* the old value ended early */
	if (*n > have)
		*n = have;
	memcpy(p, src, *n);
	gs_stream_consume(k->s, *n);
	return 0;
}

static void concat_pump(void *arg)
{
	struct concat *k = arg;
	uint64_t old_size = k->old->meta.size;
	uint64_t data_at = k->prepend ? 0 : old_size;

	while (k->w && k->pos < k->total) {
		void *p;
		size_t n;
		int ret = gs_writer_buf(k->w, &p, &n, concat_pump, k);

		if (ret == -EAGAIN)
			return;
		if (k->pos >= data_at && k->pos < data_at + k->len) {
			if (n > data_at + k->len - k->pos)
				n = data_at + k->len - k->pos;
			memcpy(p, k->data + (k->pos - data_at), n);
		} else {
			uint64_t old_end = k->prepend ? k->total : old_size;

			if (n > old_end - k->pos)
				n = old_end - k->pos;
			ret = concat_copy_old(k, p, &n);
			if (ret == -EAGAIN)
				return;
			if (ret < 0) {
				concat_fail(k, ret);
				return;
			}
		}
		gs_writer_advance(k->w, n);
		k->pos += n;
	}
	if (!k->w)
		return;
	gs_stream_close(&k->s);
	gs_writer_finish(&k->w, GS_REPLACE, 0, concat_done, k);
}

static void concat_wake(void *arg)
{
	struct concat *k = arg;

	if (k->w)
		concat_pump(k);
}

/* Admission is held (k->charged): hands it to the writer, reads the old
 * value in and pumps. */
static void concat_start(struct concat *k)
{
	struct gs_io *io = k->io;
	int ret;

	k->w->credit = k->charged;
	k->charged = 0;
	ret = gs_stream_open(io, k->old, 0, k->old->meta.size, concat_wake, k,
			     &k->s);
	if (ret < 0) {
		defer(io, &k->def, concat_done, k, ret);
		return;
	}
	concat_pump(k);
}

/* Starts once the appended bytes fit under the admission bound. */
static void concat_admit(void *arg)
{
	struct concat *k = arg;
	struct gs_io *io = k->io;

	if (admission_full(io->e, k->len)) {
		STAT_ADD(io->e, admission_waits, 1);
		waiter_add(&io->writers.waiters, &k->waiter, concat_admit, k);
		return;
	}
	/* the appended bytes count until the writer's buffers take them over */
	STAT_ADD(io->e, admission_bytes, k->len);
	k->charged = k->len;
	concat_start(k);
}

int gs_concat(struct gs_io *io, const void *key, size_t klen, bool prepend,
	      const void *data, size_t len, gs_done_fn done, void *arg)
{
	struct concat *k = calloc(1, sizeof(*k));
	const struct gs_meta *m;
	int ret;

	if (!k)
		return -ENOMEM;
	*k = (struct concat){ .io = io, .prepend = prepend, .data = data,
			      .len = len, .done = done, .arg = arg };
	ret = gs_lookup(io->e, key, klen, &k->old);
	if (ret < 0)
		goto out_free;
	m = gs_obj_meta(k->old);
	k->total = m->size + len;
	ret = gs_writer_open(io, key, klen, k->total, m->flags, m->exptime, &k->w);
	if (ret < 0)
		goto out_free;
	concat_admit(k);
	return 0;

out_free:
	concat_free(k);
	return ret;
}

int gs_concat_open(struct gs_io *io, const void *key, size_t klen,
		   bool prepend, size_t len, struct gs_concat **kp)
{
	struct concat *k;

	if (klen > GS_KEY_MAX)
		return -EINVAL;
	if (len > io->e->cfg.max_object)
		return -E2BIG;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	*k = (struct concat){ .io = io, .prepend = prepend, .len = len,
			      .klen = klen };
	memcpy(k->key, key, klen);
	*kp = (struct gs_concat *)k;
	return 0;
}

int gs_concat_buf(struct gs_concat *kc, void **p, size_t *len,
		  gs_wake_fn wake, void *arg)
{
	struct concat *k = (struct concat *)kc;
	struct gs_io *io = k->io;
	uint64_t left = k->len - k->got;

	if (!k->buf && !k->error) {
		if (admission_full(io->e, k->len)) {
			if (!k->waiter.queued)
				STAT_ADD(io->e, admission_waits, 1);
			waiter_add(&io->writers.waiters, &k->waiter, wake, arg);
			return -EAGAIN;
		}
		k->buf = malloc(k->len ? k->len : 1);
		if (k->buf) {
			STAT_ADD(io->e, admission_bytes, k->len);
			k->charged = k->len;
		} else {
			k->error = -ENOMEM;
		}
	}
	if (k->error) {
		*p = io->sink;
		*len = left < SINK_LEN ? left : SINK_LEN;
	} else {
		*p = k->buf + k->got;
		*len = left;
	}
	return 0;
}

void gs_concat_advance(struct gs_concat *kc, size_t n)
{
	((struct concat *)kc)->got += n;
}

int gs_concat_finish(struct gs_concat **kp, gs_done_fn done, void *arg)
{
	struct concat *k = (struct concat *)*kp;
	struct gs_io *io = k->io;
	const struct gs_meta *m;
	int ret;

	if (k->got != k->len)
		return -EINVAL;
	*kp = NULL;
	ret = k->error;
	if (!k->buf && !ret) {		/* nothing to append: no admission asked */
		k->buf = malloc(1);
		ret = k->buf ? 0 : -ENOMEM;
	}
	if (!ret)
		ret = gs_lookup(io->e, k->key, k->klen, &k->old);
	if (ret < 0)
		goto out_free;
	k->data = k->buf;
	k->done = done;
	k->arg = arg;
	m = gs_obj_meta(k->old);
	k->total = m->size + k->len;
	ret = gs_writer_open(io, k->key, k->klen, k->total, m->flags,
			     m->exptime, &k->w);
	if (ret < 0)
		goto out_free;
	concat_start(k);
	return 0;

out_free:
	concat_free(k);
	return ret;
}

void gs_concat_abort(struct gs_concat **kp)
{
	struct concat *k = (struct concat *)*kp;

	if (!k)
		return;
	*kp = NULL;
	concat_free(k);
}
