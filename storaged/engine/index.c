/*
 * The index: a chained hash of records, the CLOCK over them (eviction of
 * whole objects), pins, and the synchronous object calls of goblin.h.
 * Static helpers expect e->lock held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "attr.h"
#include "engine.h"
#include "heads.h"
#include "index.h"
#include "journal.h"
#include "layout.h"
#include "log.h"
#include "ramchunk.h"
#include "region.h"

uint64_t engine_malloc_bytes(uint64_t n)
{
	uint64_t c = round_up(n + sizeof(size_t), 2 * sizeof(size_t));

	return c < 4 * sizeof(size_t) ? 4 * sizeof(size_t) : c;
}

uint64_t engine_record_bytes(const struct gs_obj *obj)
{
	return engine_malloc_bytes(engine_record_size(obj->klen, obj->nchunks,
						  obj_nruns(obj)));
}

uint64_t engine_index_table_bytes(const struct gs_engine *e)
{
	uint64_t buckets = e->nbuckets + (e->old_buckets ? e->nbuckets / 2 : 0);

	return buckets * sizeof(*e->buckets) +
	       e->clock_cap * sizeof(*e->clock) +
	       e->heads_cap * sizeof(*e->heads) +
	       e->ramchunks_cap * sizeof(*e->ramchunks);
}

static uint64_t hash_key(const void *key, size_t klen)
{
	return XXH3_64bits(key, klen);
}

/*
 * The index grows incrementally, as memcached's assoc.c: grow_index()
 * puts a table of twice the buckets beside the old one, and each link
 * then moves REHASH_STEP old buckets over (rehash_step()), in order, so
 * no SET stalls the engine for a walk of every record.  Old bucket i
 * splits into new buckets i and i + nbuckets / 2: a key whose old bucket
 * is at or past rehash_pos is in the old table, any other in the new one
 * (a key is in exactly one chain, and a lookup reads one).
 */
#define REHASH_STEP	8

/* The chain <key> is in or goes into.  e->lock held. */
static struct gs_obj **bucket_of(struct gs_engine *e, const void *key,
				 size_t klen)
{
	uint64_t h = hash_key(key, klen);

	if (e->old_buckets && (h & (e->nbuckets / 2 - 1)) >= e->rehash_pos)
		return &e->old_buckets[h & (e->nbuckets / 2 - 1)];
	return &e->buckets[h & (e->nbuckets - 1)];
}

static struct gs_obj **find_slot(struct gs_engine *e, const void *key,
				 size_t klen)
{
	struct gs_obj **link = bucket_of(e, key, klen);

	for (; *link; link = &(*link)->hnext)
		if ((*link)->klen == klen && !memcmp((*link)->key, key, klen))
			return link;
	return link;
}

static void tier_gauges(struct gs_engine *e, const struct gs_obj *obj, int sign)
{
	static const size_t bytes_at[GS_TIERS] = {
		offsetof(struct gs_stats, ram_head_bytes),
		offsetof(struct gs_stats, ssd_bytes),
		offsetof(struct gs_stats, hdd_bytes),
	};
	static const size_t objects_at[GS_TIERS] = {
		offsetof(struct gs_stats, ram_head_objects),
		offsetof(struct gs_stats, ssd_objects),
		offsetof(struct gs_stats, hdd_objects),
	};

	for (int t = 0; t < GS_TIERS; t++) {
		uint64_t *b = (uint64_t *)((char *)&e->st + bytes_at[t]);
		uint64_t *o = (uint64_t *)((char *)&e->st + objects_at[t]);

		uint64_t n = gs_obj_tier_bytes(obj, t);

		if (!n)
			continue;
		__atomic_fetch_add(b, sign * n, __ATOMIC_RELAXED);
		__atomic_fetch_add(o, (uint64_t)(int64_t)sign, __ATOMIC_RELAXED);
	}
	__atomic_fetch_add(&e->st.curr_items, (uint64_t)(int64_t)sign, __ATOMIC_RELAXED);
	__atomic_fetch_add(&e->st.objects, (uint64_t)(int64_t)sign, __ATOMIC_RELAXED);
	__atomic_fetch_add(&e->st.bytes, sign * obj->meta.size, __ATOMIC_RELAXED);
	__atomic_fetch_add(&e->st.index_record_bytes,
			   sign * engine_record_bytes(obj), __ATOMIC_RELAXED);
}

static void unlink_obj(struct gs_engine *e, struct gs_obj *obj)
{
	struct gs_obj **link = find_slot(e, obj->key, obj->klen);
	struct gs_obj *last;

	/* a lockless walk standing on <obj> goes on past it */
	__atomic_store_n(link, obj->hnext, __ATOMIC_RELEASE);
	numa_owner_unlink(e, obj);
	journal_bg_unlink(e, obj, e->clock[e->clock_len - 1]);
	last = e->clock[--e->clock_len];
	e->clock[obj->clock_pos] = last;
	last->clock_pos = obj->clock_pos;
	__atomic_store_n(&obj->linked, false, __ATOMIC_RELEASE);
	engine_head_forget(e, obj);
	ramchunk_forget(e, obj);
	tier_gauges(e, obj, -1);
	engine_unref(e, obj);
}

/* Unlinks the live <obj> for good: the journal says so first, so a restart
 * never brings it back once its space is reused.  Returns the DEL's
 * sequence number, or 0 when it could not be journaled (<obj> stays). */
static uint64_t unlink_journaled(struct gs_engine *e, struct gs_obj *obj)
{
	uint64_t seq = e->next_cas + 1;

	if (journal_del(e, obj->key, obj->klen, seq) < 0)
		return 0;
	e->next_cas = seq;
	unlink_obj(e, obj);
	return seq;
}

void engine_unlink_all(struct gs_engine *e)
{
	while (e->clock_len)
		unlink_obj(e, e->clock[e->clock_len - 1]);
}

void engine_drop(struct gs_engine *e, struct gs_obj *obj)
{
	pthread_mutex_lock(&e->lock);
	/* a broken object goes even when the journal fails: its next reader
	 * finds it broken again */
	if (obj->linked && !unlink_journaled(e, obj))
		unlink_obj(e, obj);
	pthread_mutex_unlock(&e->lock);
}

/* Whether evicting <obj> frees room on tier <need>. */
static bool obj_holds(const struct gs_obj *obj, enum gs_tier need)
{
	if (need == GS_TIER_RAM)
		return !obj->on_disk && gs_obj_tier_bytes(obj, GS_TIER_RAM);
	return gs_obj_tier_bytes(obj, need) != 0;
}

bool engine_evict_one(struct gs_engine *e, enum gs_tier need,
		      bool only_expired)
{
	time_t now = time(NULL);

	for (uint32_t step = 0; e->clock_len && step < 2 * e->clock_len + 2; step++) {
		struct gs_obj *obj;

		if (e->clock_hand >= e->clock_len)
			e->clock_hand = 0;
		obj = e->clock[e->clock_hand++];
		if (obj_refs(obj) > 1)
			continue;		/* pinned */
		if (obj_dead(e, obj, now)) {
			STAT_ADD(e, expired_unfetched, 1);
			unlink_obj(e, obj);
			return true;
		}
		if (only_expired || !obj_holds(obj, need))
			continue;
		if (__atomic_load_n(&obj->referenced, __ATOMIC_RELAXED)) {
			__atomic_store_n(&obj->referenced, false,
					 __ATOMIC_RELAXED);
			continue;
		}
		if (!unlink_journaled(e, obj))
			return false;
		STAT_ADD(e, evictions, 1);
		if (need != GS_TIER_RAM)
			STAT_ADD(e, disk_evictions, 1);
		return true;
	}
	return false;
}

/* Starts growing the index of <e> to twice its buckets, when there is
 * memory for them (else its chains grow longer, and the next link tries
 * again): the old table stays until rehash_step() has moved it.  Called
 * with e->lock held, while not growing, e->index_seq odd (lockless
 * lookups read the four fields relaxed, then check the count). */
static void grow_index(struct gs_engine *e)
{
	uint64_t n = e->nbuckets * 2;
	struct gs_obj **nb = calloc(n, sizeof(*nb));

	if (!nb)
		return;
	__atomic_store_n(&e->old_buckets, e->buckets, __ATOMIC_RELAXED);
	__atomic_store_n(&e->rehash_pos, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&e->buckets, nb, __ATOMIC_RELAXED);
	__atomic_store_n(&e->nbuckets, n, __ATOMIC_RELAXED);
}

/* Moves up to REHASH_STEP buckets of the old table of <e> into the new
 * one, and frees the old table once it is all moved.  Growth starts at
 * 1.5 records per old bucket and the next one at 3: its N buckets move
 * within N / REHASH_STEP of the 1.5 N links between, so the index never
 * needs to grow while growing.  Called with e->lock held, while growing,
 * e->index_seq odd (a lockless walk of a moved record may leave its chain;
 * the old table is freed once no such walk can be in it: epoch.h). */
static void rehash_step(struct gs_engine *e)
{
	uint64_t old_n = e->nbuckets / 2;

	for (unsigned i = 0; i < REHASH_STEP; i++) {
		struct gs_obj *obj = e->old_buckets[e->rehash_pos], *next;

		for (; obj; obj = next) {
			struct gs_obj **b = &e->buckets[hash_key(obj->key,
					obj->klen) & (e->nbuckets - 1)];

			next = obj->hnext;
			__atomic_store_n(&obj->hnext, *b, __ATOMIC_RELEASE);
			__atomic_store_n(b, obj, __ATOMIC_RELEASE);
		}
		__atomic_store_n(&e->old_buckets[e->rehash_pos], NULL,
				 __ATOMIC_RELEASE);
		__atomic_store_n(&e->rehash_pos, e->rehash_pos + 1,
				 __ATOMIC_RELAXED);
		if (e->rehash_pos == old_n) {
			struct gs_obj **moved = e->old_buckets;

			__atomic_store_n(&e->old_buckets, NULL,
					 __ATOMIC_RELAXED);
			__atomic_store_n(&e->rehash_pos, 0, __ATOMIC_RELAXED);
			engine_retire(e, moved);
			return;
		}
	}
}

struct gs_obj *engine_find_record(struct gs_engine *e, const void *key,
				  size_t klen)
{
	return *find_slot(e, key, klen);
}

/* The live object for <key>, reaping a dead one; NULL when none.  With
 * <why>, a lookup: what it missed is told there and counted. */
static struct gs_obj *find_live(struct gs_engine *e, const void *key,
				size_t klen, enum gs_miss *why)
{
	struct gs_obj *obj = *find_slot(e, key, klen);
	time_t now = time(NULL);

	if (why)
		*why = GS_MISS_ABSENT;
	if (obj && obj_dead(e, obj, now)) {
		/* an invalidated one counts as flushed first, as memcached */
		if (why && obj_invalidated(e, obj, now)) {
			*why = GS_MISS_FLUSHED;
			STAT_ADD(e, lookup_flushed, 1);
		} else if (why) {
			*why = GS_MISS_EXPIRED;
			STAT_ADD(e, lookup_expired, 1);
		}
		unlink_obj(e, obj);
		obj = NULL;
	}
	return obj;
}

/* Room in the CLOCK for one more record: 0 or -ENOMEM.  It grows by a
 * quarter, so its spare capacity stays under a fifth of it. */
static int clock_room(struct gs_engine *e)
{
	uint32_t cap;
	struct gs_obj **c;

	if (e->clock_len < e->clock_cap)
		return 0;
	cap = e->clock_cap ? e->clock_cap + e->clock_cap / 4 : 1024;
	c = realloc(e->clock, cap * sizeof(*c));
	if (!c)
		return -ENOMEM;
	e->clock = c;
	e->clock_cap = cap;
	return 0;
}

/* Puts <obj> in the index and the CLOCK (room made by the caller). */
static void link_obj(struct gs_engine *e, struct gs_obj *obj)
{
	bool grow = e->st.curr_items + 1 > e->nbuckets + e->nbuckets / 2;
	struct gs_obj **link;

	if (e->old_buckets || grow) {
		engine_seq_begin(e);
		if (e->old_buckets)
			rehash_step(e);
		else
			grow_index(e);
		engine_seq_end(e);
	}
	/* its flags before a lockless walk can find it */
	__atomic_store_n(&obj->linked, true, __ATOMIC_RELAXED);
	__atomic_store_n(&obj->referenced, false, __ATOMIC_RELAXED);
	link = bucket_of(e, obj->key, obj->klen);
	__atomic_store_n(&obj->hnext, *link, __ATOMIC_RELAXED);
	__atomic_store_n(link, obj, __ATOMIC_RELEASE);
	obj->clock_pos = e->clock_len;
	e->clock[e->clock_len++] = obj;
	numa_owner_link(e, obj);
	journal_bg_mark(e, obj);
	__atomic_add_fetch(&obj->refs, 1, __ATOMIC_RELAXED);
	tier_gauges(e, obj, +1);
}

int engine_link_recovered(struct gs_engine *e, struct gs_obj *obj)
{
	struct gs_obj *old = *find_slot(e, obj->key, obj->klen);

	if (!old && clock_room(e) < 0)
		return -ENOMEM;
	if (old)
		unlink_obj(e, old);
	link_obj(e, obj);
	/* stored since start: what recovery brings back counts, so
	 * curr_items never exceeds it */
	if (!old)
		STAT_ADD(e, total_items, 1);
	__atomic_store_n(&obj->recovered, true, __ATOMIC_RELAXED);
	if (obj->meta.cas > e->next_cas)
		e->next_cas = obj->meta.cas;
	return 0;
}

/* Counts the SSD prefix of a stored object with an HDD tail (the prefix
 * it was made with, engine_new_prefix()): prefix_bytes and its bucket. */
static void prefix_count(struct gs_engine *e, const struct gs_obj *obj)
{
	uint64_t p;

	if (!obj->on_disk || !gs_obj_tier_bytes(obj, GS_TIER_HDD))
		return;
	p = gs_obj_tier_bytes(obj, GS_TIER_SSD) - engine_ram_limit(e);
	STAT_ADD(e, prefix_bytes, p);
	if (p == 0)
		STAT_ADD(e, prefix_objects_0, 1);
	else if (p <= 256 << 10)
		STAT_ADD(e, prefix_objects_le_256k, 1);
	else if (p <= 512 << 10)
		STAT_ADD(e, prefix_objects_le_512k, 1);
	else if (p <= 1 << 20)
		STAT_ADD(e, prefix_objects_le_1m, 1);
	else
		STAT_ADD(e, prefix_objects_gt_1m, 1);
}

int engine_link(struct gs_engine *e, struct gs_obj *obj, enum gs_if cond,
		uint64_t cas, bool *replaced)
{
	struct gs_obj *old = find_live(e, obj->key, obj->klen, NULL);
	int ret;

	if (replaced)
		*replaced = old != NULL;

	if (cond == GS_IF_ABSENT && old)
		return -EEXIST;
	if (cond != GS_IF_ANY && cond != GS_IF_ABSENT && !old)
		return -ENOENT;
	if ((cond == GS_IF_CAS || cond == GS_IF_BASE) && old->meta.cas != cas)
		return -EEXIST;
	if (cond == GS_IF_BASE)
		obj->meta.exptime = old->meta.exptime;
	/* a value built on <old> keeps its attributes */
	if (cond == GS_IF_BASE && !obj->has_attr && attr_copy(e, obj, old) < 0)
		return -ENOMEM;
	/* room in the CLOCK first: failing after the unlink would lose <old> */
	if (!old && clock_room(e) < 0)
		return -ENOMEM;
	obj->meta.cas = e->next_cas + 1;
	obj->meta.mtime = time(NULL);
	/* journaled before <old>'s space can be reused: the PUT replaces it;
	 * no room for it in the journal is no room for the object */
	ret = journal_put(e, obj);
	if (ret < 0)
		return ret == -ENOSPC ? -ENOMEM : -EIO;
	e->next_cas = obj->meta.cas;
	if (old)
		unlink_obj(e, old);
	link_obj(e, obj);
	STAT_ADD(e, total_items, 1);
	prefix_count(e, obj);
	return 0;
}

/* ---- public object calls ---- */

int gs_lookup(struct gs_engine *e, const void *key, size_t klen,
	      struct gs_obj **objp)
{
	enum gs_miss why;

	return gs_lookup_why(e, key, klen, objp, &why);
}

int gs_lookup_why(struct gs_engine *e, const void *key, size_t klen,
		  struct gs_obj **objp, enum gs_miss *why)
{
	struct gs_obj *obj;

	if (engine_lookup_lockless(e, key, klen, &obj)) {
		*why = GS_MISS_ABSENT;
		STAT_ADD(e, lookup_hits, 1);
		*objp = obj;
		return 0;
	}
	pthread_mutex_lock(&e->lock);
	obj = find_live(e, key, klen, why);
	if (obj) {
		engine_pin(e, obj);
		__atomic_store_n(&obj->referenced, true, __ATOMIC_RELAXED);
		if (obj->on_disk && obj->has_head) {
			obj->head_referenced = true;
			STAT_ADD(e, head_hits, 1);
		} else if (obj->on_disk) {
			STAT_ADD(e, head_misses, 1);
		}
		if (obj->has_head)
			region_hit(&e->region, obj->meta.head_off);
	}
	pthread_mutex_unlock(&e->lock);
	if (!obj) {
		STAT_ADD(e, lookup_misses, 1);
		return -ENOENT;
	}
	STAT_ADD(e, lookup_hits, 1);
	*objp = obj;
	return 0;
}

/* CLOCK slots gs_walk() looks at per hold of e->lock: a run of dead
 * objects (a delayed flush_all) never holds it long. */
#define WALK_SCAN_MAX	1024

unsigned gs_walk(struct gs_engine *e, uint64_t *pos, struct gs_walk_item *out,
		 unsigned max)
{
	time_t now = time(NULL);
	unsigned n = 0;
	bool end;

	do {
		unsigned scanned = 0;

		pthread_mutex_lock(&e->lock);
		for (; *pos < e->clock_len && n < max &&
		       scanned < WALK_SCAN_MAX; (*pos)++, scanned++) {
			const struct gs_obj *obj = e->clock[*pos];

			if (obj_dead(e, obj, now))
				continue;
			out[n].meta = obj->meta;
			out[n].fetched = __atomic_load_n(&obj->referenced,
							 __ATOMIC_RELAXED);
			out[n].klen = obj->klen;
			memcpy(out[n].key, obj->key, obj->klen);
			n++;
		}
		end = *pos >= e->clock_len;
		pthread_mutex_unlock(&e->lock);
	} while (!n && !end);
	return n;
}

const struct gs_meta *gs_obj_meta(const struct gs_obj *obj)
{
	return &obj->meta;
}

const void *gs_obj_head(const struct gs_engine *e, const struct gs_obj *obj,
			uint64_t *len)
{
	uint64_t n = __atomic_load_n(&obj->meta.head_len, __ATOMIC_ACQUIRE);

	if (len)
		*len = n;
	return n ? (char *)e->region.base + obj->meta.head_off : NULL;
}

void gs_obj_put(struct gs_engine *e, struct gs_obj **objp)
{
	if (!*objp)
		return;
	if (!engine_unpin_shared(e, *objp)) {
		pthread_mutex_lock(&e->lock);
		engine_unpin(e, *objp);
		pthread_mutex_unlock(&e->lock);
	}
	*objp = NULL;
}

static int delete_if(struct gs_engine *e, const void *key, size_t klen,
		     bool check, uint64_t cas)
{
	struct gs_obj *obj;
	uint64_t seq = 0;
	int ret = -ENOENT;

	pthread_mutex_lock(&e->lock);
	obj = find_live(e, key, klen, NULL);
	if (obj && check && obj->meta.cas != cas) {
		ret = -EEXIST;
	} else if (obj) {
		seq = unlink_journaled(e, obj);
		ret = seq ? 0 : -EIO;
	}
	pthread_mutex_unlock(&e->lock);
	if (seq && journal_wait_synced(e, seq) < 0)
		ret = -EIO;		/* deleted, not known to be durable */
	return ret;
}

int gs_delete(struct gs_engine *e, const void *key, size_t klen)
{
	return delete_if(e, key, klen, false, 0);
}

int gs_delete_cas(struct gs_engine *e, const void *key, size_t klen,
		  uint64_t cas)
{
	return delete_if(e, key, klen, true, cas);
}

static void touch_obj(struct gs_engine *e, struct gs_obj *obj, int64_t exptime)
{
	__atomic_store_n(&obj->meta.exptime, gs_exptime(exptime),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&obj->referenced, true, __ATOMIC_RELAXED);
	/* only the expiry time is at stake: a touch the journal could not
	 * take leaves the old one after a restart */
	if (journal_touch(e, obj) < 0)
		log_warn("touch of \"%.*s\" not journaled: a restart keeps its old expiry time",
			 obj->klen, obj->key);
}

int gs_touch(struct gs_engine *e, const void *key, size_t klen,
	     int64_t exptime, struct gs_meta *meta)
{
	struct gs_obj *obj;

	pthread_mutex_lock(&e->lock);
	obj = find_live(e, key, klen, NULL);
	if (obj) {
		touch_obj(e, obj, exptime);
		if (meta)
			*meta = obj->meta;
	}
	pthread_mutex_unlock(&e->lock);
	return obj ? 0 : -ENOENT;
}

int gs_obj_touch(struct gs_engine *e, struct gs_obj *obj, int64_t exptime)
{
	int ret = -ENOENT;

	pthread_mutex_lock(&e->lock);
	if (obj->linked && !obj_dead(e, obj, time(NULL))) {
		touch_obj(e, obj, exptime);
		ret = 0;
	}
	pthread_mutex_unlock(&e->lock);
	return ret;
}

size_t gs_obj_attr(struct gs_engine *e, const struct gs_obj *obj, void *buf,
		   size_t cap)
{
	const struct attr *a;
	size_t len = 0;

	pthread_mutex_lock(&e->lock);
	a = attr_of(e, obj);
	if (a) {
		len = a->len;
		if (cap)	/* (NULL, 0): the length alone */
			memcpy(buf, a->bytes, len < cap ? len : cap);
	}
	pthread_mutex_unlock(&e->lock);
	return len;
}

bool gs_obj_recovered(const struct gs_obj *obj)
{
	return __atomic_load_n(&obj->recovered, __ATOMIC_RELAXED);
}

int gs_obj_set_attr(struct gs_engine *e, struct gs_obj *obj, const void *p,
		    size_t len)
{
	struct attr *a = NULL;
	int ret = -ENOENT;

	if (len > GS_ATTR_MAX)
		return -E2BIG;
	if (len && !(a = attr_new(p, len)))
		return -ENOMEM;
	pthread_mutex_lock(&e->lock);
	if (obj->linked && !obj_dead(e, obj, time(NULL)))
		ret = a ? attr_room(e) : 0;
	if (ret == 0) {
		/* the journal first: a restart brings back what it has */
		ret = journal_setattr(e, obj, p, len);
		if (ret < 0)
			ret = ret == -ENOMEM ? ret : -EIO;
	}
	if (ret == 0) {
		attr_drop(e, obj);
		if (a)
			attr_attach(e, obj, &a);	/* there is room */
		__atomic_store_n(&obj->referenced, true, __ATOMIC_RELAXED);
		__atomic_store_n(&obj->recovered, false, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&e->lock);
	attr_free(&a);
	return ret;
}

int gs_update(struct gs_engine *e, const void *key, size_t klen,
	      gs_update_fn fn, void *arg, struct gs_meta *meta)
{
	struct gs_obj *obj, *nobj;
	struct gs_meta m;
	uint64_t seq = 0;
	const void *val;
	size_t len;
	int ret;

	pthread_mutex_lock(&e->lock);
	obj = find_live(e, key, klen, NULL);
	ret = -ENOENT;
	if (!obj)
		goto out;
	ret = -EINVAL;
	if (obj->nchunks)
		goto out;
	m = obj->meta;
	ret = fn(arg, obj_head_ptr(e, obj), obj->meta.size, &m, &val, &len);
	if (ret < 0)
		goto out;
	ret = -E2BIG;
	if (len > engine_ram_limit(e))
		goto out;
	/* CLOCK must not free it under us */
	__atomic_add_fetch(&obj->refs, 1, __ATOMIC_RELAXED);
	ret = engine_reserve(e, key, klen, len, &nobj);
	if (ret == 0) {
		if (len)
			memcpy(obj_head_ptr(e, nobj), val, len);
		nobj->meta.flags = m.flags;
		nobj->meta.exptime = m.exptime;
		/* over the value read: an expiry meanwhile is a miss; the
		 * value built on it keeps its attributes */
		ret = attr_copy(e, nobj, obj);
		if (ret == 0)
			ret = engine_link(e, nobj, GS_IF_CAS, obj->meta.cas,
					  NULL);
		if (ret == 0)
			seq = nobj->meta.cas;
		if (ret == 0 && meta)
			*meta = nobj->meta;
		engine_unref(e, nobj);
	}
	engine_unref(e, obj);
out:
	pthread_mutex_unlock(&e->lock);
	/* acknowledged as a set is: once --sync-interval's sync covers it */
	if (seq && journal_wait_synced(e, seq) < 0)
		ret = -EIO;
	return ret;
}

void gs_invalidate(struct gs_engine *e, int64_t when)
{
	pthread_mutex_lock(&e->lock);
	if (journal_flush(e, e->next_cas + 1, when) == 0)
		e->next_cas++;
	else
		log_warn("flush_all not journaled: a restart brings the flushed objects back");
	if (when <= time(NULL)) {
		engine_unlink_all(e);
		__atomic_store_n(&e->invalid_at, 0, __ATOMIC_RELAXED);
	} else {
		__atomic_store_n(&e->invalid_at, when, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&e->lock);
}
