/*
 * The arena: objects smaller than a head slot packed byte-granular in
 * arena blocks (region blocks of --block bytes charged to --sub-memory, or
 * to --memory when that is 0), reclaimed by compaction.
 *
 *   arena block (one region block)                                  used  block
 *   | hdr | value ..pad | hdr | value | hdr(dead) ...... | hdr | value |  room  |
 *     8 B   len, to 8 B    record's address, or (size << 1) | 1 when dead
 *
 * An entry is an 8-byte header then the value rounded up to 8 bytes.  A
 * live entry's header is its record's address (8-aligned: bit 0 clear),
 * so compaction can find and update the record; a dead one holds its
 * entry size shifted left, bit 0 set, so a walk can skip it.  A record's
 * meta.head_off points past the header; it and meta.head_len are all this
 * file reads of a record (obj_set_head() writes the location).
 *
 * Appends go to the current arena block <cur>.  A full one is sealed (its
 * tail counted dead).  A fresh one is taken only while another stays free:
 * that reserve is compaction's destination <dst>, so compaction can always
 * start.  Compaction empties a <victim>, the sealed arena block with
 * the most dead bytes: each live entry of a linked, unpinned record (refs
 * 1: readers pin under the engine lock, so nobody reads it) is copied to
 * <dst> and its record pointed there; an entry of a pinned record or of a
 * value still being written (not linked) is passed, and the victim is
 * left for a later lap.  An emptied victim goes back to the region
 * (unlocked, dropped from the mapping: region.c).  When <cur> is full and
 * no spare arena block remains, <dst> becomes <cur>.
 *
 * Work is bounded per step (ARENA_STEP_BYTES copied, ARENA_STEP_ENTRIES
 * looked at) and steps run with the engine lock held: from the compactor
 * thread (started with the first arena block; victims with a quarter of
 * their bytes dead) with the lock dropped between steps, and from allocation
 * pressure (victims with an eighth dead) until room is made; failing both,
 * the CLOCK evicts an object (engine_make_room), or with --no-evict the
 * set fails.  arena_compaction_max_us is the longest stretch of steps run
 * under one hold of the lock, wall clock (a preempted holder counts);
 * arena_compaction_max_cpu_us the same in the holder's CPU time.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "clock.h"
#include "engine.h"
#include "heads.h"
#include "hook_points.h"
#include "index.h"
#include "layout.h"
#include "log.h"
#include "region.h"

#define ARENA_HDR		8u
#define ARENA_STEP_BYTES	(64u << 10)
#define ARENA_STEP_ENTRIES	2048u
#define ARENA_IDLE_MS		50
#define NONE			UINT32_MAX

/* When a hold of the lock for compaction began: wall and thread CPU. */
struct hold {
	uint64_t wall, cpu;
};

static struct hold hold_begin(void)
{
	return (struct hold){ mono_us(),
			      clock_ns(CLOCK_THREAD_CPUTIME_ID) / 1000 };
}

static void hold_done(struct arena *a, struct hold h)
{
	uint64_t wall = mono_us() - h.wall;
	uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) / 1000 - h.cpu;

	if (wall > a->max_us)
		a->max_us = wall;
	if (cpu > a->max_cpu_us)
		a->max_cpu_us = cpu;
}

static uint32_t entry_size(uint64_t len)
{
	return ARENA_HDR + round_up(len, 8);
}

static uint64_t *hdr_at(const struct region *r, uint32_t b, uint32_t pos)
{
	return (uint64_t *)((char *)r->base + (uint64_t)b * r->block + pos);
}

static void mark_dead(uint64_t *hdr, uint32_t size)
{
	*hdr = (uint64_t)size << 1 | 1;
}

static uint32_t block_dead(const struct arena_block *s)
{
	return s->used - s->live;
}

static uint32_t block_room(const struct region *r, uint32_t b)
{
	return b == NONE ? 0 : r->block - r->arena.blocks[b].used;
}

/* Arena blocks the region can still give the arena. */
static uint32_t spare_blocks(const struct region *r)
{
	if (region_arena_shares_heads(r))
		return r->head_blocks_max - r->head_blocks;
	return r->small_blocks_max - r->small_blocks;
}

/* Live bytes of arena block <b> change by <delta> (entries: <n>). */
static void block_charge(struct region *r, uint32_t b, int64_t delta, int n)
{
	struct arena_block *s = &r->arena.blocks[b];

	s->live += delta;
	s->nlive += n;
	r->arena.live += delta;
	r->used += delta;
	r->blocks[b].nfree -= delta;
}

static void *compactor(void *arg);

/* Starts the compactor with the first arena block; a failure leaves the
 * arena to allocation pressure. */
static void compactor_start(struct gs_engine *e)
{
	struct arena *a = &e->region.arena;
	pthread_condattr_t ca;
	int ret;

	if (a->e)
		return;
	a->e = e;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->wake, &ca);
	pthread_cond_init(&a->dropped, &ca);
	pthread_condattr_destroy(&ca);
	ret = pthread_create(&a->thread, NULL, compactor, e);
	if (ret) {
		log_warn("arena compactor thread: %s (compaction runs only when a set needs room)",
			 strerror(ret));
		return;
	}
	a->running = true;
}

/* A new arena block: 0 and <*b>, or -ENOMEM. */
static int block_new(struct gs_engine *e, uint32_t *b)
{
	struct region *r = &e->region;
	int ret = region_arena_block_take(r, b);

	if (ret < 0)
		return ret;
	r->arena.blocks[*b] = (struct arena_block){ 0 };
	r->arena.nblocks++;
	compactor_start(e);
	return 0;
}

/* Drops the given-back arena blocks' pages with the lock held. */
static void drop_now(struct region *r)
{
	while (r->drops != NONE) {
		uint32_t b = r->drops;

		r->drops = r->blocks[b].next_partial;
		region_arena_block_drop(r, b);
		region_arena_block_dropped(r, b);
	}
}

static void block_release(struct region *r, uint32_t b)
{
	struct arena *a = &r->arena;

	a->used -= a->blocks[b].used;
	a->blocks[b] = (struct arena_block){ 0 };
	a->nblocks--;
	a->released++;
	region_arena_block_release(r, b);
	if (a->running)
		pthread_cond_signal(&a->wake);	/* it drops the pages */
	else
		drop_now(r);
}

/* Closes arena block <b> to appends: its tail becomes a dead filler; an
 * empty one goes back to the region. */
static void block_seal(struct region *r, uint32_t b)
{
	struct arena_block *s = &r->arena.blocks[b];
	uint32_t tail = r->block - s->used;

	if (!s->nlive) {
		block_release(r, b);
		return;
	}
	if (tail)
		mark_dead(hdr_at(r, b, s->used), tail);
	s->used += tail;
	r->arena.used += tail;
}

/* Appends a live entry of <size> bytes for <obj> at arena block <b>'s end;
 * returns the value's offset. */
static uint64_t block_append(struct gs_engine *e, uint32_t b,
			   struct gs_obj *obj, uint32_t size)
{
	struct region *r = &e->region;
	struct arena_block *s = &r->arena.blocks[b];
	uint64_t *hdr = hdr_at(r, b, s->used);

	*hdr = (uint64_t)(uintptr_t)obj;
	s->used += size;
	r->arena.used += size;
	block_charge(r, b, size, 1);
	return (uint64_t)b * r->block + (s->used - size) + ARENA_HDR;
}

/* Arena block <b> holds nothing live now: back to the region, or rewound
 * when it is open. */
static void block_emptied(struct region *r, uint32_t b)
{
	struct arena *a = &r->arena;

	if (b == a->victim) {
		a->victim = NONE;
		a->compactions++;
	}
	if (b == a->cur || b == a->dst) {
		a->used -= a->blocks[b].used;
		a->blocks[b].used = 0;
		return;
	}
	block_release(r, b);
}

/* ---- compaction ---- */

/* Whether a pinned entry held <b> in one of the last laps. */
static bool skipped(const struct arena *a, uint32_t b)
{
	for (unsigned i = 0; i < ARENA_SKIPS; i++)
		if (a->skip[i] == b)
			return true;
	return false;
}

/* The sealed arena block with the most dead bytes, at least <min>, whose live
 * bytes fit in <room>, those a pinned entry held lately aside unless only
 * they are left: NONE when none. */
static uint32_t pick_victim(struct region *r, uint32_t min, uint64_t room)
{
	struct arena *a = &r->arena;
	uint32_t best = NONE, best_dead = 0;
	bool passed = false;

	for (uint32_t b = 0; b < r->nblocks; b++) {
		const struct arena_block *s = &a->blocks[b];

		if (r->blocks[b].cls != REGION_ARENA || b == a->cur ||
		    b == a->dst || block_dead(s) < min || s->live > room)
			continue;
		if (skipped(a, b)) {
			passed = true;
			continue;
		}
		if (block_dead(s) > best_dead) {
			best = b;
			best_dead = block_dead(s);
		}
	}
	if (best == NONE && passed) {
		memset(a->skip, 0xff, sizeof(a->skip));
		return pick_victim(r, min, room);
	}
	return best;
}

/* Chooses a victim whose live bytes fit in <dst>'s room plus, while the
 * region has one, a spare arena block (taken when <dst> fills: dst_roll());
 * false when no arena block is worth it. */
static bool victim_start(struct gs_engine *e, bool pressure)
{
	struct region *r = &e->region;
	struct arena *a = &r->arena;
	uint32_t min = r->block / (pressure ? 8 : 4), v;
	uint64_t room = block_room(r, a->dst);

	if (spare_blocks(r) > 0)
		room += r->block;
	v = pick_victim(r, min, room);
	if (v == NONE)
		return false;
	a->victim = v;
	a->vpos = 0;
	a->victim_blocked = false;
	return true;
}

/* Makes <dst> an arena block with <size> bytes of room, sealing a full one;
 * false when no arena block can be had. */
static bool dst_roll(struct gs_engine *e, uint32_t size)
{
	struct region *r = &e->region;
	struct arena *a = &r->arena;
	uint32_t b;

	if (block_room(r, a->dst) >= size)
		return true;
	if (block_new(e, &b) < 0)
		return false;
	if (a->dst != NONE)
		block_seal(r, a->dst);
	a->dst = b;
	return true;
}

/* Moves the live entry of <obj> at <pos> in the victim to <dst>. */
static void entry_move(struct gs_engine *e, struct gs_obj *obj, uint32_t pos,
		       uint32_t size)
{
	struct region *r = &e->region;
	struct arena *a = &r->arena;
	uint64_t len = obj->meta.head_len;
	uint64_t off = block_append(e, a->dst, obj, size);
	char *base = r->base;

	memcpy(base + off, (char *)hdr_at(r, a->victim, pos) + ARENA_HDR, len);
	mark_dead(hdr_at(r, a->victim, pos), size);
	block_charge(r, a->victim, -(int64_t)size, -1);
	/* under the engine lock: a reader pins, then reads the new place */
	obj_set_head(e, obj, off);
	a->moved += len;
}

/* One bounded step of the walk over the victim.  Ends the lap at the end
 * of the arena block: released when it emptied, else left for later.
 * Moves only records it finds unpinned, with e->index_seq odd
 * (victim_step()): a lockless lookup pinning one meanwhile drops its pin
 * and takes the lock. */
static void victim_walk(struct gs_engine *e)
{
	struct region *r = &e->region;
	struct arena *a = &r->arena;
	struct arena_block *s = &a->blocks[a->victim];
	uint32_t bytes = 0, looked = 0, v = a->victim;
	bool stuck = false;

	while (a->vpos < s->used && bytes < ARENA_STEP_BYTES &&
	       looked++ < ARENA_STEP_ENTRIES) {
		uint64_t h = *hdr_at(r, v, a->vpos);
		struct gs_obj *obj = (struct gs_obj *)(uintptr_t)h;
		uint32_t size;

		if (h & 1) {
			a->vpos += h >> 1;
			continue;
		}
		size = entry_size(obj->meta.head_len);
		if (obj->linked && obj_refs(obj) == 1) {
			GS_HOOK_COMPACT_MOVE();
			if (!dst_roll(e, size)) {
				stuck = true;	/* no room: the lap ends */
				break;
			}
			entry_move(e, obj, a->vpos, size);
			bytes += size;
		} else {
			a->victim_blocked = true;
		}
		a->vpos += size;
		if (!s->nlive) {
			block_emptied(r, v);
			return;
		}
	}
	if (a->vpos < s->used && !stuck)
		return;
	a->victim = NONE;
	if (a->victim_blocked || stuck) {
		a->blocked++;
		a->skip[a->nskip++ % ARENA_SKIPS] = v;
	}
}

static void victim_step(struct gs_engine *e)
{
	engine_seq_begin(e);
	victim_walk(e);
	engine_seq_end(e);
}

bool arena_compact_step(struct gs_engine *e, bool pressure)
{
	struct arena *a = &e->region.arena;

	if (a->victim == NONE && !victim_start(e, pressure))
		return false;
	victim_step(e);
	return true;
}

/* Compacts until a victim is emptied (room), no step can be taken, or
 * ARENA_SKIPS laps passed pinned entries (readers hold them, a slow one
 * for long: the other victims are tried before anything is evicted). */
static bool compact_for_room(struct gs_engine *e)
{
	struct arena *a = &e->region.arena;
	struct hold h = hold_begin();
	uint64_t done = a->compactions;
	bool ran = false;
	int blocked = 0;

	while (a->compactions == done && blocked < ARENA_SKIPS) {
		if (!arena_compact_step(e, true))
			break;
		ran = true;
		/* a lap passed a pinned entry: another victim next */
		blocked += a->victim == NONE && a->compactions == done;
	}
	if (ran)
		hold_done(a, h);
	return a->compactions != done;
}

/* ---- allocation ---- */

/* Makes <cur> an arena block with <size> bytes of room, by taking a block,
 * handing <dst> over, compacting, waiting for the blocks the compactor is
 * giving back (the engine lock is dropped meanwhile), dropping cached
 * heads (--sub-memory 0) or evicting: 0, or -ENOMEM.  Called with the
 * engine lock held. */
static int make_room(struct gs_engine *e, uint32_t size)
{
	struct region *r = &e->region;
	struct arena *a = &r->arena;
	uint32_t b;

	while (block_room(r, a->cur) < size) {
		if (a->cur != NONE) {
			block_seal(r, a->cur);
			a->cur = NONE;
		}
		if ((spare_blocks(r) > 1 || !a->nblocks) && block_new(e, &b) == 0) {
			a->cur = b;
			continue;
		}
		if (a->dst != NONE && a->victim == NONE) {
			a->cur = a->dst;
			a->dst = NONE;
			continue;
		}
		if (compact_for_room(e))
			continue;
		if (r->drops != NONE) {	/* the compactor has not run yet */
			drop_now(r);
			continue;
		}
		if (a->dropping) {	/* it runs: its blocks come free */
			pthread_cond_wait(&a->dropped, &e->lock);
			continue;
		}
		if (!engine_make_room(e, GS_TIER_RAM, ROOM_EVICT |
				      (region_arena_shares_heads(r) ?
				       ROOM_DROP_HEADS : 0)))
			return -ENOMEM;
	}
	return 0;
}

int arena_alloc(struct gs_engine *e, struct gs_obj *obj)
{
	uint32_t size = entry_size(obj->meta.head_len);
	int ret = make_room(e, size);

	if (ret < 0)
		return ret;
	obj_set_head(e, obj, block_append(e, e->region.arena.cur, obj, size));
	return 0;
}

void arena_free(struct gs_engine *e, struct gs_obj *obj)
{
	struct region *r = &e->region;
	struct arena *a = &r->arena;
	uint64_t off = obj->meta.head_off - ARENA_HDR;
	uint32_t b = off / r->block, size = entry_size(obj->meta.head_len);

	mark_dead(hdr_at(r, b, off % r->block), size);
	block_charge(r, b, -(int64_t)size, -1);
	if (!a->blocks[b].nlive)
		block_emptied(r, b);
	else if (a->running && b != a->cur && b != a->dst &&
		 block_dead(&a->blocks[b]) >= r->block / 4)
		pthread_cond_signal(&a->wake);
}

/* ---- the compactor thread ---- */

/* Drops the pages of the arena blocks given back, the lock released for the
 * system calls.  Called with e->lock held. */
static void drop_released(struct gs_engine *e)
{
	struct region *r = &e->region;
	uint32_t list = r->drops, b;

	if (list == NONE)
		return;
	r->drops = NONE;
	for (b = list; b != NONE; b = r->blocks[b].next_partial)
		r->arena.dropping++;
	pthread_mutex_unlock(&e->lock);
	for (b = list; b != NONE; b = r->blocks[b].next_partial)
		region_arena_block_drop(r, b);
	pthread_mutex_lock(&e->lock);
	while (list != NONE) {
		b = list;
		list = r->blocks[b].next_partial;
		region_arena_block_dropped(r, b);
	}
	r->arena.dropping = 0;
	pthread_cond_broadcast(&r->arena.dropped);
}

static void *compactor(void *arg)
{
	struct gs_engine *e = arg;
	struct arena *a = &e->region.arena;
	struct timespec at;

	pthread_setname_np(pthread_self(), "goblin-arena");
	pthread_mutex_lock(&e->lock);
	while (!a->stop) {
		struct hold h;
		bool worked;

		drop_released(e);
		h = hold_begin();
		worked = arena_compact_step(e, false);

		if (worked) {
			hold_done(a, h);
			pthread_mutex_unlock(&e->lock);
			pthread_mutex_lock(&e->lock);
			if (a->victim != NONE || !a->victim_blocked)
				continue;
		}
		at = mono_deadline(ARENA_IDLE_MS * 1000000ull);
		pthread_cond_timedwait(&a->wake, &e->lock, &at);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

void arena_stop(struct region *r)
{
	struct arena *a = &r->arena;

	if (!a->e)
		return;
	if (a->running) {
		pthread_mutex_lock(&a->e->lock);
		a->stop = true;
		pthread_cond_signal(&a->wake);
		pthread_mutex_unlock(&a->e->lock);
		pthread_join(a->thread, NULL);
		a->running = false;
	}
	pthread_cond_destroy(&a->wake);
	pthread_cond_destroy(&a->dropped);
	a->e = NULL;
}

void gs_arena_stats(struct gs_engine *e, struct gs_arena_stats *st)
{
	struct region *r = &e->region;
	struct arena *a = &r->arena;
	uint64_t dead;

	pthread_mutex_lock(&e->lock);
	dead = a->used - a->live;
	*st = (struct gs_arena_stats){
		.arena_segments = a->nblocks,
		.arena_bytes_live = a->live,
		.arena_bytes_dead = dead,
		.arena_bytes_free = (uint64_t)a->nblocks * r->block - a->used,
		.arena_fragmentation_permille = a->used ? dead * 1000 / a->used : 0,
		.arena_compactions = a->compactions,
		.arena_bytes_moved = a->moved,
		.arena_compaction_max_us = a->max_us,
		.arena_compaction_max_cpu_us = a->max_cpu_us,
		.arena_compaction_blocked = a->blocked,
		.arena_segments_released = a->released,
	};
	pthread_mutex_unlock(&e->lock);
}
