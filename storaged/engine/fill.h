/*
 * Fills (fill.c): the record a writer of unknown size or a shared writer
 * fills, findable by gs_lookup_filling() while it fills (read-while-write),
 * and what its readers on other threads are told as its bytes land.
 *
 * A fill writer's record is a "grid": the chunks of its largest value
 * (its size, or max_object when not known), laid out as a stored object of
 * that size is, with room for one run per chunk after them and its struct
 * fill after those, so reserving never moves it (readers pin it).  The
 * first min(grid, ram_head) bytes are copied into a head slot of the
 * fill's as they arrive: readers get them at once; disk chunks once their
 * write completed.  Unknown sizes reserve disk in runs of FILL_STEP bytes,
 * each taken right after the one before when the pool has it free.  At
 * finish the stored record is built from the grid (exactly the layout a
 * known size gets; runs that lie back to back merged) and linked; the grid
 * stays, pinning it, for the readers that hold the grid, and gives what it
 * did not hand over back when its last reader goes.
 *
 *   grid: | gs_obj | key | obj_disk | chunks[n] | runs[n] | struct fill |
 *
 * Locking: f->lock guards the progress, the state and f->waiters; a
 * reader's gs_io is told through its remote queue (io->remote_lock, taken
 * inside f->lock), which gs_io_run() drains.  e->lock guards e->fills and
 * the space (f->final, f->head_owned, f->given).
 */
#ifndef GOBLIN_FILL_H
#define GOBLIN_FILL_H

#include "engine.h"
#include "uring-t.h"

#define FILL_STEP	(8u << 20)	/* disk reserved at a time, unknown size */

enum fill_state { FILL_FILLING, FILL_DONE, FILL_ABORTED };

/* A reader waiting for a fill's next bytes: one-shot, re-armed by peek. */
struct fill_waiter {
	struct list fill_node;		/* on f->waiters */
	struct list io_node;		/* on io->remote, once told */
	struct gs_io *io;
	gs_wake_fn fn;
	void *arg;
};

struct fill {
	pthread_mutex_t lock;
	struct gs_obj *grid;
	struct list node;		/* on e->fills while shared, filling */
	bool shared;
	bool attr_coming;		/* under e->lock: hidden until then */
	unsigned readers;		/* atomic: open fill streams */
	uint64_t cap;			/* bytes the grid holds at most */
	uint64_t head_cap;		/* bytes the head slot holds */
	/* under lock */
	int state;			/* enum fill_state */
	uint64_t size;			/* GS_SIZE_UNKNOWN until known */
	uint64_t head_avail;		/* [0, head_avail) at head_off */
	uint64_t ram_end;		/* RAM-only grid: bytes in place */
	uint32_t landed;		/* disk chunks [0, landed) written */
	uint8_t *done;			/* per chunk: its write completed */
	struct list waiters;
	/* under e->lock */
	uint64_t head_off;		/* the head slot, when head_owned */
	bool head_owned;
	bool given;			/* the space went to <final> */
	struct gs_obj *final;		/* pinned: what was stored */
	uint32_t trunc;			/* the chunk the size cut, or UINT32_MAX */
	uint32_t trunc_len;		/*   its length when reserved */
};

static inline struct fill *obj_fill(const struct gs_obj *obj)
{
	return (struct fill *)(obj_runs(obj) + obj->nchunks);
}

/* Bytes a grid of <klen> and <nchunks> takes. */
static inline uint64_t fill_record_size(size_t klen, uint32_t nchunks)
{
	return obj_key_end(klen) + sizeof(struct obj_disk) +
	       (uint64_t)nchunks * (sizeof(struct chunk) + sizeof(uint64_t)) +
	       sizeof(struct fill);
}

/* Sets up the fill of the new grid <g> (layout.c): no lock. 0 or -ENOMEM. */
int fill_init(struct gs_obj *g, uint64_t cap, uint64_t size, uint64_t head_cap);
/* Frees grid <g> and what it holds (engine_free_record). e->lock held. */
void fill_free_record(struct gs_engine *e, struct gs_obj *g);
/* Bytes chunk <i> of grid <g> holds reserved. */
uint64_t fill_chunk_reserved(struct gs_engine *e, const struct gs_obj *g,
			     uint32_t i);

/* Makes <g>'s fill findable (with <attr_coming>, from its attributes
 * on): 0 or -EBUSY.  Takes e->lock. */
int fill_share(struct gs_engine *e, struct gs_obj *g, bool attr_coming);
/* Progress, from the writer's thread: head bytes [0, <n>) copied; RAM-only
 * bytes up to <end> in place; disk chunk <ci> written, its <len> bytes at
 * <data> (a shared fill's readers then find a whole chunk in the RAM chunk
 * cache when it had free slots, instead of each reading it back). */
void fill_head_bytes(struct fill *f, uint64_t n);
void fill_ram_bytes(struct fill *f, uint64_t end);
void fill_chunk_written(struct gs_engine *e, struct fill *f, uint32_t ci,
			const void *data, uint64_t len);
/* The writer failed or was aborted: every reader gets -ECONNABORTED and
 * the key is free for the next shared writer.  Takes e->lock. */
void fill_abort(struct gs_engine *e, struct fill *f);
/* Builds the stored record of <size> bytes from grid <g>, links it if
 * <cond> holds, and ends the fill (done or aborted).  e->lock held;
 * returns engine_link()'s result, or -ENOMEM. */
int fill_link(struct gs_engine *e, struct gs_obj *g, uint64_t size,
	      enum gs_if cond, uint64_t cas, struct gs_stored *st);

/* Arms <w> (of <io>) to call <fn>(<arg>) when <f> moves on.  f->lock held. */
void fill_wait(struct fill *f, struct fill_waiter *w, struct gs_io *io,
	       gs_wake_fn fn, void *arg);
/* Disarms <w>.  Takes f->lock. */
void fill_waiter_del(struct fill *f, struct fill_waiter *w);
/* gs_io_run(): fires what other threads told <io>. */
int fill_remote_run(struct gs_io *io);

#endif /* GOBLIN_FILL_H */
