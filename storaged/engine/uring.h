/*
 * Per-thread I/O internals shared by uring.c (the io_uring core), stream.c
 * (read-ahead streams, whole-object reads), writer.c (writers, admission)
 * and mc_concat.c (append/prepend).  Not part of the API.
 *
 * A struct gs_io owns one io_uring with the pool files and a set of
 * buffers registered.  The buffers are cut in two I/O buffer sets
 * (struct iobufs): stream windows and writer chunk buffers.  A caller that
 * finds its set empty queues an io_waiter on it; gs_io_run() fires the
 * waiters when buffers come back.
 *
 *   bufmem: | stream_bufs: io_buffers*io_streams | writer_bufs: 2*io_buffers |
 *
 * The table is registered sparse and each buffer fills its slot the first
 * time it is handed out (iobuf_get), so its memory is faulted in and pinned
 * only once used: a gs_io that never touches the disk costs no buffer RAM,
 * and a busy one what its peak concurrency took (the sets are stacks, the
 * last buffer back goes out first).  A buffer the kernel would not
 * register serves by plain reads and writes.
 *
 * An I/O operation (struct io_op) reads or writes one chunk, as one
 * io_piece per stripe it spans; its done callback fires from gs_io_run()
 * once every piece completed.
 */
#ifndef GOBLIN_URING_H
#define GOBLIN_URING_H

#include <liburing.h>
#include <sys/eventfd.h>
#include <time.h>

#include "engine.h"
#include "list.h"

#define SINK_LEN	(64u << 10)	/* where a failed writer's bytes go */
#define URING_ENTRIES	256u		/* SQ size (a power of two, as the
					 * kernel's) */

/* Someone waiting for an I/O buffer set (or admission); initialised once
 * with waiter_init(), on at most one list. */
struct io_waiter {
	struct list node;
	gs_wake_fn fn;
	void *arg;
};

/* A callback to fire from gs_io_run; embedded in its owner, so arming one
 * never allocates (and never fails). */
struct deferred {
	struct list node;
	gs_done_fn fn;
	void *arg;
	int res;
};

/* An I/O buffer set: a stack of registered-buffer indexes and the waiters
 * for one. */
struct iobufs {
	int *free;
	unsigned nfree, n, base;
	struct list waiters;		/* of struct io_waiter */
};

struct io_op;
typedef void (*op_done_fn)(struct io_op *op);

struct io_piece {
	struct io_op *op;
	struct stripe_piece piece;
	uint32_t done;
	int stash_res;			/* its result, while on io->stash */
	struct list stash_node;
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
	int npieces;
	struct io_piece pieces[];
};

struct gs_io {
	struct gs_engine *e;
	struct io_uring uring;
	int efd;
	char *bufmem;
	size_t bufmem_len;
	uint8_t *buf_state;		/* per buffer: BUF_* */
	struct iobufs stream_bufs, writer_bufs;
	struct list deferred;		/* of struct deferred */
	struct list stash;		/* of struct io_piece: completions to handle */
	struct list holders;		/* of struct gs_stream holding a window */
	struct list writer_holders;	/* of struct gs_writer holding a buffer */
	struct list sync_waiters;	/* of struct gs_writer: stored, waiting
					 * for --sync-interval's fdatasync */
	bool timer_armed, timer_fired;
	struct __kernel_timespec timer_ts;
	struct io_uring_sqe *sqes[URING_ENTRIES];	/* the last handed out,
					 * by sqes_out % URING_ENTRIES */
	unsigned sqes_out;		/* SQEs handed out, ever (wraps) */
	char *sink;			/* SINK_LEN bytes nobody reads */
	unsigned inflight;
	unsigned early_bufs;		/* streams' first chunks read before
					 * they had a window (stream.c) */
	struct list engine_node;	/* on e->io_list */
};

/* ---- small helpers ---- */

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static inline void waiter_init(struct io_waiter *w)
{
	list_init(&w->node);
}

static inline bool waiter_queued(const struct io_waiter *w)
{
	return list_linked(&w->node);
}

/* Queues <w> on <head> to call <fn>(<arg>); a no-op when already queued. */
static inline void waiter_add(struct list *head, struct io_waiter *w,
			      gs_wake_fn fn, void *arg)
{
	if (waiter_queued(w))
		return;
	w->fn = fn;
	w->arg = arg;
	list_add_tail(head, &w->node);
}

static inline void waiter_del(struct io_waiter *w)
{
	list_del(&w->node);
}

static inline void kick(struct gs_io *io)
{
	eventfd_write(io->efd, 1);
}

/* Queues <fn>(<arg>, <res>) for the next gs_io_run() in <d>, which its
 * owner embeds. */
static inline void defer(struct gs_io *io, struct deferred *d, gs_done_fn fn,
			 void *arg, int res)
{
	d->fn = fn;
	d->arg = arg;
	d->res = res;
	list_add_tail(&io->deferred, &d->node);
	kick(io);
}

enum { BUF_UNUSED, BUF_REGISTERED, BUF_PLAIN };

/* A buffer of <bs>, registered on its first use; -1 when none is free. */
int iobuf_get(struct gs_io *io, struct iobufs *bs);

/* The registered-buffer index for I/O on buffer <idx>, -1 for plain I/O. */
static inline int iobuf_fixed(const struct gs_io *io, int idx)
{
	return idx >= 0 && io->buf_state[idx] == BUF_REGISTERED ? idx : -1;
}

static inline void iobuf_put(struct iobufs *bs, int idx)
{
	bs->free[bs->nfree++] = idx;
}

static inline char *iobuf_ptr(struct gs_io *io, int idx)
{
	return io->bufmem + (size_t)idx * GS_IO_BUFFER;
}

static inline uint32_t tier_align(struct gs_engine *e, enum gs_tier t)
{
	return e->pools[t].align;
}

/* Whether <more> bytes would push the bytes accepted but not yet on disk
 * over the bound (one writer may always go). */
static inline bool admission_full(struct gs_engine *e, uint64_t more)
{
	uint64_t cur = __atomic_load_n(&e->st.admission_bytes, __ATOMIC_RELAXED);

	return cur && cur + more > e->cfg.admission_bytes;
}

/* ---- uring.c ---- */

/* Submits every queued SQE; -EAGAIN/-EBUSY are waited out, any other error
 * (or a kernel that stays busy) fails the queued operations. */
void uring_submit(struct gs_io *io);
/* Arms a read or write of chunk <ci> of <obj> to/from <buf> (registered
 * buffer <buf_idx>, or -1); <done>(op) fires from gs_io_run() with op->res.
 * The caller submits, once for all it arms.  Returns 0 or -errno. */
int uring_op_start(struct gs_io *io, struct gs_obj *obj, uint32_t ci,
		   bool write, char *buf, int buf_idx, op_done_fn done,
		   void *owner);
/* Arms the timer that makes gs_io_run() come back after <ns> even when no
 * completion does. */
void uring_arm_timer(struct gs_io *io, long long ns);

/* ---- stream.c, for read_into.c ---- */

/* Verifies a landed chunk (<res> is its read's result); on failure counts
 * it and drops the object.  0, -EBADMSG or -EIO. */
int chunk_check(struct gs_io *io, struct gs_obj *obj, uint32_t ci,
		const char *data, int res);
/* Takes a pin on <obj>. */
void stream_pin(struct gs_engine *e, struct gs_obj *obj);
/* Fills <order> with the disk chunks of [first, last) in the order to
 * submit them (the first one, then with <lead_tail> the first HDD chunk,
 * then offset order); returns how many. */
uint32_t read_order(const struct gs_obj *obj, uint32_t first, uint32_t last,
		    bool lead_tail, uint32_t *order);

/* ---- stream.c, for gs_io_run() ---- */

/* Frees window buffers for the streams waiting for one by reclaiming
 * stalled streams; returns whether any came free. */
bool stream_reclaim_windows(struct gs_io *io);
void stream_arm_stall_timer(struct gs_io *io);

/* While streams wait for a window, a timer makes gs_io_run() look for
 * stalled holders again, since no completion may ever come to do so. */
static inline void stream_waiters_check(struct gs_io *io)
{
	if (io->timer_armed || list_empty(&io->stream_bufs.waiters) ||
	    list_empty(&io->holders))
		return;
	stream_arm_stall_timer(io);
}

/* ---- writer.c, for gs_io_run() ---- */

/* Only from gs_io_run(), between callbacks, while writers wait for a
 * buffer and none is free: the buffers of writers whose producer has
 * added nothing for WRITER_STALL_MS go back, their bytes kept in the heap
 * until they go on (a pointer gs_writer_buf() gave is good until its
 * caller is back in its event loop).  Returns whether any came free. */
bool writer_reclaim_bufs(struct gs_io *io);
/* While writers wait for a buffer that stalled writers hold, a timer
 * makes gs_io_run() look again. */
void writer_waiters_check(struct gs_io *io);

/* ---- writer.c: admission ---- */

/* 0 when <n> more bytes fit under the admission bound now; else -EAGAIN
 * with <w> queued to call <wake>(<arg>) when room may have come (the first
 * time counts an admission wait). */
int admission_wait(struct gs_io *io, uint64_t n, struct io_waiter *w,
		   gs_wake_fn wake, void *arg);
/* Counts <n> bytes as accepted but not yet on disk. */
void admission_charge(struct gs_io *io, uint64_t n);
/* Gives <n> admitted bytes back and wakes writers waiting for room. */
void admission_release(struct gs_io *io, uint64_t n);
/* Acknowledges the writers on io->sync_waiters that the last sync covers. */
void writer_sync_check(struct gs_io *io);
/* Waits for the sync that covers every writer on io->sync_waiters, and
 * acknowledges them (gs_io_destroy). */
void writer_sync_drain(struct gs_io *io);
/* Makes a writer that is still owed <credit> admitted bytes (taken by its
 * caller) pay its first buffers from them. */
void writer_set_credit(struct gs_writer *w, uint64_t credit);

#endif
