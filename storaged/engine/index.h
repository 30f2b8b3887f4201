/*
 * The hash index (index.c): lookup, link, unlink, pins, CLOCK eviction.
 */
#ifndef GOBLIN_INDEX_H
#define GOBLIN_INDEX_H

#include <time.h>

#include "engine.h"
#include "epoch.h"
#include "layout.h"

/*
 * What the index costs (stats index_bytes): per record, what glibc's
 * malloc takes for a request of <n> bytes -- the request plus its size
 * word, rounded to 16, at least 32 (engine_malloc_bytes); per engine, the
 * bucket, CLOCK and head-CLOCK arrays at their capacity.
 */
uint64_t engine_malloc_bytes(uint64_t n);
uint64_t engine_record_bytes(const struct gs_obj *obj);
uint64_t engine_index_table_bytes(const struct gs_engine *e);

/* Whether <obj> has expired, or was invalidated (flush_all), at <now>.
 * Reads what a lockless lookup may race with atomically. */
static inline bool obj_expired(const struct gs_obj *obj, time_t now)
{
	uint32_t x = __atomic_load_n(&obj->meta.exptime, __ATOMIC_RELAXED);

	return x && x <= now;
}
static inline bool obj_invalidated(const struct gs_engine *e,
				   const struct gs_obj *obj, time_t now)
{
	int64_t at = __atomic_load_n(&e->invalid_at, __ATOMIC_RELAXED);

	return at && at <= now && obj->meta.mtime <= at;
}
static inline bool obj_dead(const struct gs_engine *e,
			    const struct gs_obj *obj, time_t now)
{
	return obj_expired(obj, now) || obj_invalidated(e, obj, now);
}

/* The record of <key>, live or not (nothing is reaped); NULL when none.
 * Called with e->lock held. */
struct gs_obj *engine_find_record(struct gs_engine *e, const void *key,
				  size_t klen);
/* Links <obj> if <cond> holds (<cas> for GS_IF_CAS and GS_IF_BASE),
 * replacing an older record (then *<replaced>, when not NULL, is set).
 * Called with e->lock held; returns 0, -EEXIST, -ENOENT or -ENOMEM. */
int engine_link(struct gs_engine *e, struct gs_obj *obj, enum gs_if cond,
		uint64_t cas, bool *replaced);
/* Links a recovered <obj> as it is (its CAS, mtime and space kept, nothing
 * journaled), replacing any record of its key.  e->lock held; 0 or
 * -ENOMEM. */
int engine_link_recovered(struct gs_engine *e, struct gs_obj *obj);
/* Drops a reference; at zero frees the record's space, and the record
 * once no lockless lookup can be reading it (epoch.h).  Called with
 * e->lock held.  (refs changes atomically: see engine_unpin_shared().) */
static inline void engine_unref(struct gs_engine *e, struct gs_obj *obj)
{
	if (__atomic_sub_fetch(&obj->refs, 1, __ATOMIC_ACQ_REL) == 0 &&
	    engine_release_record(e, obj))
		engine_retire(e, obj);
}
/* Pins <obj> for a reader: its memory and extents stay valid, whatever
 * happens to its key, until engine_unpin() (counted in `pins`; CLOCK,
 * compaction and promotion pass a pinned object by).  Called with e->lock
 * held, or without it by a caller that holds a pin on <obj> already (it
 * stays pinned throughout). */
static inline void engine_pin(struct gs_engine *e, struct gs_obj *obj)
{
	__atomic_add_fetch(&obj->refs, 1, __ATOMIC_RELAXED);
	STAT_ADD(e, pins, 1);
}
/* Drops a pin without e->lock when it is not <obj>'s last reference (the
 * index's, or another pin, remains: nothing is freed, and whoever looks at
 * refs under e->lock sees it pinned or not, both true at some moment):
 * true, else false (take e->lock and engine_unpin()). */
static inline bool engine_unpin_shared(struct gs_engine *e, struct gs_obj *obj)
{
	uint32_t r = __atomic_load_n(&obj->refs, __ATOMIC_RELAXED);

	while (r > 1)
		if (__atomic_compare_exchange_n(&obj->refs, &r, r - 1, true,
						__ATOMIC_RELEASE,
						__ATOMIC_RELAXED)) {
			STAT_SUB(e, pins, 1);
			return true;
		}
	return false;
}
/* Drops a pin engine_pin() took.  Called with e->lock held. */
static inline void engine_unpin(struct gs_engine *e, struct gs_obj *obj)
{
	STAT_SUB(e, pins, 1);
	engine_unref(e, obj);
}
/* Makes e->index_seq odd: a lockless lookup that walked or pinned across
 * it goes the locked path (lookup.c).  The fence orders the bump before
 * the caller's reads of refs: a pin the caller does not see sees the bump.
 * Called with e->lock held, with engine_seq_end() before it is dropped. */
static inline void engine_seq_begin(struct gs_engine *e)
{
	__atomic_store_n(&e->index_seq, e->index_seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
/* Makes e->index_seq even again, what was done since published. */
static inline void engine_seq_end(struct gs_engine *e)
{
	__atomic_store_n(&e->index_seq, e->index_seq + 1, __ATOMIC_RELEASE);
}
/* A lookup of <key> without e->lock (lookup.c): true with *<objp> pinned
 * when it hit a live object wholly in RAM (its CLOCK bit set), false
 * when it cannot tell (a miss, a dead or on-disk object, an index or
 * bytes that moved meanwhile, no epoch slot, --numa heat to count):
 * then take e->lock.  Called without e->lock. */
bool engine_lookup_lockless(struct gs_engine *e, const void *key,
			    size_t klen, struct gs_obj **objp);
/* Unlinks <obj> from the index if it is still there (a broken object).
 * Takes e->lock. */
void engine_drop(struct gs_engine *e, struct gs_obj *obj);
/* Unlinks every object.  Called with e->lock held. */
void engine_unlink_all(struct gs_engine *e);
/* Evicts one object that holds room on tier <need> (GS_TIER_RAM: RAM other
 * than a cached head), CLOCK order; with <only_expired>, dead ones only
 * (any dead one).  Called with e->lock held; false when nothing could go. */
bool engine_evict_one(struct gs_engine *e, enum gs_tier need,
		      bool only_expired);

#endif /* GOBLIN_INDEX_H */
