/*
 * A lookup that takes no lock on a hit of an object wholly in RAM (the
 * protocol: engine-t.h, epoch.h).  Whatever it cannot vouch for -- a miss,
 * a dead or on-disk object, a chain walked or a record pinned while
 * e->index_seq moved -- it leaves to the locked path (index.c), which
 * reaps dead objects and counts misses.
 */
#include <string.h>
#include <xxhash.h>

#include "epoch.h"
#include "index.h"

/* The record of <key> (hash <h>) in the index of <e> as it was at
 * e->index_seq <seq>, walked without the lock; NULL when none is found or
 * the tables changed before they were read.  Inside an epoch. */
static struct gs_obj *walk(struct gs_engine *e, uint64_t h, const void *key,
			   size_t klen, uint64_t seq)
{
	struct gs_obj **table = __atomic_load_n(&e->buckets, __ATOMIC_RELAXED);
	struct gs_obj **old = __atomic_load_n(&e->old_buckets, __ATOMIC_RELAXED);
	uint64_t n = __atomic_load_n(&e->nbuckets, __ATOMIC_RELAXED);
	uint64_t pos = __atomic_load_n(&e->rehash_pos, __ATOMIC_RELAXED);
	struct gs_obj *obj;

	/* the four fields from one moment, or none of them used */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&e->index_seq, __ATOMIC_RELAXED) != seq)
		return NULL;
	if (old && (h & (n / 2 - 1)) >= pos)
		obj = __atomic_load_n(&old[h & (n / 2 - 1)], __ATOMIC_ACQUIRE);
	else
		obj = __atomic_load_n(&table[h & (n - 1)], __ATOMIC_ACQUIRE);
	for (; obj; obj = __atomic_load_n(&obj->hnext, __ATOMIC_ACQUIRE))
		if (obj->klen == klen && !memcmp(obj->key, key, klen))
			return obj;
	return NULL;
}

/* Pins <obj> unless its references already fell to zero (it is being
 * freed: never brought back). */
static bool pin_unless_freed(struct gs_engine *e, struct gs_obj *obj)
{
	uint32_t r = __atomic_load_n(&obj->refs, __ATOMIC_RELAXED);

	while (r > 0)
		if (__atomic_compare_exchange_n(&obj->refs, &r, r + 1, true,
						__ATOMIC_SEQ_CST,
						__ATOMIC_RELAXED)) {
			STAT_ADD(e, pins, 1);
			return true;
		}
	return false;
}

/* Whether the pinned <obj>, found at e->index_seq <seq>, is the live
 * object of its key wholly in RAM: linked, not dead, and neither the index
 * nor unpinned bytes moved since (a compaction that read refs before the
 * pin made the count odd first: the fence pairs with engine_seq_begin()). */
static bool pinned_still_good(struct gs_engine *e, struct gs_obj *obj,
			      uint64_t seq)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return __atomic_load_n(&e->index_seq, __ATOMIC_RELAXED) == seq &&
	       __atomic_load_n(&obj->linked, __ATOMIC_ACQUIRE) &&
	       !obj_dead(e, obj, time(NULL));
}

bool engine_lookup_lockless(struct gs_engine *e, const void *key,
			    size_t klen, struct gs_obj **objp)
{
	uint64_t h = XXH3_64bits(key, klen), seq;
	struct gs_obj *obj = NULL;
	bool pinned = false, good = false;
	int slot;

	/* --numa counts each hit's heat per block under the lock */
	if (e->region.numa.nnodes)
		return false;
	slot = epoch_enter(e);
	if (slot < 0)
		return false;
	seq = __atomic_load_n(&e->index_seq, __ATOMIC_ACQUIRE);
	if (!(seq & 1))
		obj = walk(e, h, key, klen, seq);
	/* on_disk is fixed at creation; a cached head comes and goes */
	if (obj && !obj->on_disk)
		pinned = pin_unless_freed(e, obj);
	if (pinned)
		good = pinned_still_good(e, obj, seq);
	epoch_leave(e, slot);
	if (pinned && !good)
		gs_obj_put(e, &obj);	/* may take the lock: out of the epoch */
	if (!good)
		return false;
	if (!__atomic_load_n(&obj->referenced, __ATOMIC_RELAXED))
		__atomic_store_n(&obj->referenced, true, __ATOMIC_RELAXED);
	*objp = obj;
	return true;
}
