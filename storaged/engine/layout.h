/*
 * Records and their space (layout.c): the tier split, chunks, allocation.
 */
#ifndef GOBLIN_LAYOUT_H
#define GOBLIN_LAYOUT_H

#include "engine-t.h"

/* How engine_make_room() may free room: cached chunks, then cached heads
 * (they are copies; chunks go before any head), then whole objects (CLOCK;
 * with no_evict, expired ones only). */
#define ROOM_DROP_HEADS	1u		/* chunks, then heads */
#define ROOM_EVICT	2u
#define ROOM_DROP_CHUNKS 4u		/* chunks only */
/* The one make-room policy: frees one thing for room on tier <need>, the
 * ways <how> allows in that order (a cached chunk or head, then an object holding
 * <need> bytes).  Every allocation that can make room loops on it until it
 * succeeds or this fails.  Called with e->lock held; false when nothing
 * could go. */
bool engine_make_room(struct gs_engine *e, enum gs_tier need, unsigned how);
/* Creates an unlinked record for <key> sized <size>, with no space yet
 * (writers reserve each part as its bytes arrive).  No lock needed;
 * returns 0, -E2BIG or -ENOMEM. */
int engine_new_record(struct gs_engine *e, const void *key, size_t klen,
		      uint64_t size, struct gs_obj **objp);
/* A fill's grid (fill.h) for <key>: the chunks of a value of <size>
 * bytes, or of max_object when <size> is GS_SIZE_UNKNOWN (then cut into
 * runs of FILL_STEP), with no space yet.  No lock needed; 0, -E2BIG or
 * -ENOMEM. */
int engine_new_grid(struct gs_engine *e, const void *key, size_t klen,
		    uint64_t size, struct gs_obj **objp);
/* Allocates the space of part <i> of <*objp> (-1: the RAM head, else chunk
 * <i>: on a disk tier, with all the chunks after it on that tier, one run
 * when the pool has it), evicting for room; a no-op when it has its space.
 * The record may move (a run the pool cuts grows it): <*objp> is updated,
 * so nobody else may hold it (not yet linked).  Called with e->lock held;
 * returns 0 or -ENOMEM. */
int engine_reserve_part(struct gs_engine *e, struct gs_obj **objp, int64_t i);
/* engine_new_record() with every part reserved.  Called with e->lock held;
 * returns 0 or -errno. */
int engine_reserve(struct gs_engine *e, const void *key, size_t klen,
		   uint64_t size, struct gs_obj **objp);
/* A zeroed record for <key> with room for <nchunks> chunks in <nruns>
 * runs (1 <= nruns <= nchunks, or both 0), refs 1, the runs without space
 * and chunk k in run min(k, nruns - 1); the caller fills meta, chunks and
 * run addresses (recovery).  NULL without memory. */
struct gs_obj *engine_record_alloc(const void *key, size_t klen,
				   uint32_t nchunks, uint32_t nruns);
/* Frees <obj> and the space it holds.  Called with e->lock held, for a
 * record no lockless lookup can reach (never linked, or no reader yet:
 * recovery); engine_unref() defers the free of one that was linked. */
void engine_free_record(struct gs_engine *e, struct gs_obj *obj);
/* Frees the space <obj> holds (its attributes, head, chunks); true when
 * the record itself is left for the caller to free (false: a fill's grid,
 * freed here).  Called with e->lock held. */
bool engine_release_record(struct gs_engine *e, struct gs_obj *obj);
/* Object byte offset where chunk <i> starts. */
uint64_t engine_chunk_start(const struct gs_obj *obj, uint32_t i);
/* The SSD prefix a new object gets: --ssd-prefix with --fixed-prefix,
 * else what the measured HDD latency and delivery rate call for
 * (measure_prefix(), at most --ssd-prefix); 0 without both pools.  An
 * object keeps the prefix it was made with: its chunks hold it. */
uint64_t engine_new_prefix(const struct gs_engine *e);
/* Bytes of one max_object that land on tier <t>, in whole 4K pages: the
 * most any prefix puts there. */
uint64_t engine_max_on_tier(const struct gs_engine *e, enum gs_tier t);

#endif /* GOBLIN_LAYOUT_H */
