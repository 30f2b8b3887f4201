/*
 * Per-thread I/O types: a thread's gs_io and its operations, for uring.c
 * (the io_uring core, uring.h), stream.c (read-ahead streams, stream.h),
 * read_into.c, writer.c (writers, admission, writer.h) and concat.c
 * (append/prepend).  Not part of the API.
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
 * only once used: a gs_io that never touches the disk costs no buffer RAM.
 * The sets are stacks, the last buffer back goes out first, so a free
 * stack is ordered by when each buffer came back (put_ns, oldest at the
 * bottom): a buffer that stays at the bottom, unused for IOBUF_IDLE_MS, is
 * given back (iobufs_idle: its slot emptied, its pages dropped) and
 * registered again when next handed out.  A busy gs_io keeps what its
 * recent concurrency took, an idle one nothing.  A buffer the kernel would
 * not register serves by plain reads and writes.
 *
 * An I/O operation (struct io_op) reads or writes one chunk, as one
 * io_piece per stripe it spans; its done callback fires from gs_io_run()
 * once every piece completed.
 *
 * Reads of the HDD pool pass a queue (struct io_sched, uring.c) when
 * --hdd-queue is set: at most that many runs are in the kernel's hands at
 * once (a run: one read and the reads of the same owner queued with it
 * that continue where it ends on the disk, LEAD_RUN chunks at most, so
 * one seek), and the rest wait, the one due first going next.  A stream's
 * chunk is due when its consumer would reach it had it gone on at the
 * measured delivery rate since the request came, so the oldest request's
 * chunks go first and a new one waits behind the runs in flight and at
 * most one run of each older request: its share, where the device's FIFO
 * had it wait behind every read-ahead chunk sent before it.
 */
#ifndef GOBLIN_URING_T_H
#define GOBLIN_URING_T_H

#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine-t.h"
#include "list.h"

#define SINK_LEN	(64u << 10)	/* where a failed writer's bytes go */
#define URING_ENTRIES	256u		/* SQ size (a power of two, as the
					 * kernel's) */
#define IOBUF_IDLE_MS	1000u		/* a free buffer unused this long is
					 * given back */

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
	uint64_t *put_ns;		/* mono_ns() each free[i] came back */
	unsigned nfree, n, base;
	unsigned resident;		/* buffers holding pages (not BUF_UNUSED) */
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
	bool run_end;			/* the last of a run (io_sched.runs) */
	struct list qnode;		/* on io_sched.queue while it waits */
	uint64_t due_ns;		/* mono_ns() its consumer needs it by */
	int buf_idx;			/* registered buffer, or -1 */
	char *buf;
	uint32_t len;			/* aligned length */
	uint32_t chunk;
	enum gs_tier tier;
	uint64_t start_ns;		/* mono_ns() when armed */
	int pending;
	int res;
	op_done_fn done;
	void *owner;
	int npieces;
	struct io_piece pieces[];
};

/* The HDD's queue of reads (uring.c): <queue> waits while <runs> (of at
 * most --hdd-queue) are in flight; <sent> counts the runs sent, ever. */
struct io_sched {
	struct list queue;		/* of struct io_op, by arrival */
	unsigned runs;
	uint64_t sent;
};

struct gs_io {
	struct gs_engine *e;
	struct io_sched hdd;		/* the HDD pool's reads */
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
	bool idle_armed, idle_fired;	/* the timer that gives idle buffers
					 * back (iobufs_idle) */
	struct __kernel_timespec idle_ts;
	struct io_uring_sqe *sqes[URING_ENTRIES];	/* the last handed out,
					 * by sqes_out % URING_ENTRIES */
	unsigned sqes_out;		/* SQEs handed out, ever (wraps) */
	char *sink;			/* SINK_LEN bytes nobody reads */
	unsigned inflight;
	unsigned early_bufs;		/* streams' first chunks read before
					 * they had a window (stream.c) */
	struct list engine_node;	/* on e->io_list */
	pthread_mutex_t remote_lock;	/* guards remote: other threads post */
	struct list remote;		/* of struct fill_waiter (fill.c) */
};

/* A buffer's state (gs_io.buf_state): BUF_UNUSED holds no pages. */
enum { BUF_UNUSED, BUF_REGISTERED, BUF_PLAIN };

#endif /* GOBLIN_URING_T_H */
