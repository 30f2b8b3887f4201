/*
 * Writers and the admission bound (writer.c): waking gs_io threads, and
 * what gs_io_run() and the other writers (mc_concat.c) call.
 */
#ifndef GOBLIN_WRITER_H
#define GOBLIN_WRITER_H

#include "uring-t.h"

struct io_waiter;

/* Wakes the gs_io threads with stores waiting for admission room. */
void writer_wake_admission(struct gs_engine *e);
/* After a sync: wakes the gs_io threads with stores waiting for one. */
void writer_wake_synced(struct gs_engine *e);

/* Whether <more> bytes would push the bytes accepted but not yet on disk
 * over the bound (one writer may always go). */
static inline bool admission_full(struct gs_engine *e, uint64_t more)
{
	uint64_t cur = __atomic_load_n(&e->st.admission_bytes, __ATOMIC_RELAXED);

	return cur && cur + more > e->cfg.admission_bytes;
}

/* ---- a set writer's insides (writer.c, fill_writer.c) ---- */

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
	uint64_t head_slot;		/* head_caching: the head's copy */
	bool head_caching;		/* a free head slot was at hand */
	unsigned inflight;
	int error;
	bool finishing, aborted, waited;
	enum gs_if cond;
	uint64_t cas;
	gs_stored_fn done;
	void *arg;
	struct io_waiter waiter;
	struct gs_stored stored;	/* linked, waiting for the sync */
	struct list sync_node;		/* on io->sync_waiters */
	struct list hold;		/* on io->writer_holders with cur_buf */
	uint64_t fed_at;		/* mono_ns() of the last bytes in cur_buf */
	void *spill;			/* the chunk's bytes while reclaimed */
	bool spilled;			/* cur_buf reclaimed mid-chunk */
	struct concat *concat;		/* an append or prepend: all it is */
	struct fill *fill;		/* a grid's (unknown size, shared) */
	struct attr *attr;		/* gs_writer_attr(), until linked (a
					 * grid's are on the grid at once) */
	char *last_p;			/* what gs_writer_buf() gave last */
	char *fin_buf;			/* finish: a spilled last chunk, aligned */
};

/* A fill writer's attributes go on its grid, for its readers: 0 or
 * -ENOMEM.  Takes e->lock. */
int writer_attr_to_grid(struct gs_writer *w);
/* Keeps the first failure of <w> for its done callback; a fill's readers
 * are cut at once. */
void writer_fail(struct gs_writer *w, int err);
/* The sink for <w>'s bytes up to <part_end> after a failure; 0. */
int writer_sink(struct gs_writer *w, void **p, size_t *len, uint64_t part_end);
/* Reserves part <i> (-1: the head) of <w>'s object; a failure is kept. */
void writer_reserve(struct gs_writer *w, int64_t i);
/* The spilled chunk of <w> will not be written: its admission goes. */
void writer_drop_spill(struct gs_writer *w);
/* Gives cur_buf back (after its write, or on an abort). */
void writer_unhold(struct gs_writer *w);
/* A chunk write of <w> completed (io_op done callback). */
void writer_write_done(struct io_op *op);

/* ---- fill_writer.c: a writer of unknown size or a shared one ---- */

/* gs_writer_buf() of a fill writer, up to its chunks: -E2BIG past
 * max_object (unknown size), 0 with the head slot's room (where readers
 * find the head's bytes at once; a RAM-only grid's head is the slot), the
 * sink after a failure, or 1: the chunk's buffer, as any writer's. */
int fill_writer_head(struct gs_writer *w, void **p, size_t *len);
/* gs_writer_advance() of a fill writer: the <n> bytes just given (at
 * w->last_p) go to the head slot too, and its readers are told. */
void fill_writer_fed(struct gs_writer *w, size_t n);
/* Finish of a writer of unknown size: the chunk the size ends in is cut
 * there and written. */
void fill_writer_cut(struct gs_writer *w);

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

#endif /* GOBLIN_WRITER_H */
