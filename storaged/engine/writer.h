/*
 * Writers and the admission bound (writer.c): waking gs_io threads, and
 * what gs_io_run() and the other writers (mc_concat.c) call.
 */
#ifndef GOBLIN_WRITER_H
#define GOBLIN_WRITER_H

#include "engine-t.h"

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
