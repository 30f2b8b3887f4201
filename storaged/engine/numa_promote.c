/*
 * Hot-block promotion (numa_topo.h): moves the hottest foreign head blocks
 * into the home share, the serving node's, under the engine lock.
 * Arena blocks of the small-object arena (arena.c: in head blocks when
 * --sub-memory is 0) never move: compaction owns their offsets.
 */
#include <errno.h>
#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "engine.h"
#include "log.h"
#include "numa_topo.h"
#include "region.h"

/* Per round: the foreign head blocks, hottest first, and the owners of
 * the two blocks a swap exchanges. */
struct round {
	uint32_t *hot;
	struct gs_obj **owners;		/* 2 blocks' slots */
};

/* Calls <fn> on each region offset <obj> owns: its head, its RAM chunks,
 * the slots of its published chunks cached in RAM (one still being
 * filled has no owner yet: its block does not move). */
static void each_slot(struct gs_obj *obj, void (*fn)(uint64_t *off, void *arg),
		      void *arg)
{
	struct ramchunk **ram = obj->on_disk ? obj_disk(obj)->ram : NULL;

	if (obj->has_head)
		fn(&obj->meta.head_off, arg);
	for (uint32_t c = 0; ram && c < obj->nchunks; c++)
		for (uint32_t i = 0; ram[c] && ram[c]->published &&
		     i < ram[c]->nslots; i++)
			fn(&ram[c]->off[i], arg);
	for (uint32_t c = 0; c < obj->nchunks; c++)
		if (obj_chunks(obj)[c].tier == GS_TIER_RAM &&	/* a run alone */
		    chunk_addr(obj, c) != UINT64_MAX)
			fn(&obj_runs(obj)[obj_chunks(obj)[c].run], arg);
}

struct owner_arg {
	struct region *r;
	struct gs_obj *obj;		/* the owner to set, NULL: clear */
	uint32_t a, b;			/* move_owner(): the blocks swapped */
};

static void set_owner(uint64_t *off, void *arg)
{
	struct owner_arg *o = arg;

	region_owner_set(o->r, *off, o->obj);
}

void numa_owner_link(struct gs_engine *e, struct gs_obj *obj)
{
	struct owner_arg o = { &e->region, obj, 0, 0 };

	if (e->region.numa.nnodes >= 2)
		each_slot(obj, set_owner, &o);
}

void numa_owner_unlink(struct gs_engine *e, struct gs_obj *obj)
{
	struct owner_arg o = { &e->region, NULL, 0, 0 };

	if (e->region.numa.nnodes >= 2)
		each_slot(obj, set_owner, &o);
}

/* Moves an offset into block a into block b, and one into b into a. */
static void move_owner(uint64_t *off, void *arg)
{
	struct owner_arg *o = arg;
	uint64_t b = *off / o->r->block;

	if (b == o->a)
		*off = (uint64_t)o->b * o->r->block + *off % o->r->block;
	else if (b == o->b)
		*off = (uint64_t)o->a * o->r->block + *off % o->r->block;
}

/* Whether head block <b>, every slot in use owned, has a pinned owner. */
static bool block_pinned(const struct region *r, uint32_t b)
{
	const struct region_block *blk = &r->blocks[b];

	for (uint32_t s = 0; s < r->cls[REGION_HEAD].nslots; s++)
		if (blk->owner[s] && obj_refs(blk->owner[s]) > 1)
			return true;
	return false;
}

/* Whether block <b> may move: free, or a head block with every slot in
 * use owned by a linked object (no set or head load in flight into it)
 * and none pinned. */
static bool movable(const struct region *r, uint32_t b)
{
	const struct region_block *blk = &r->blocks[b];

	if (blk->cls < 0)
		return !blk->dropping;
	if (blk->cls != REGION_HEAD || !blk->owner)
		return false;
	return blk->owned == r->cls[blk->cls].nslots - blk->nfree &&
	       !block_pinned(r, b);
}

static const struct region *sort_region;

static int hotter(const void *a, const void *b)
{
	uint32_t ha = sort_region->blocks[*(const uint32_t *)a].hits;
	uint32_t hb = sort_region->blocks[*(const uint32_t *)b].hits;

	return ha < hb ? 1 : ha > hb ? -1 : 0;
}

/* The home share's free block, else its coldest movable one less than
 * half as hot as <hits> and not promoted in the last GS_NUMA_HOLD_ROUNDS:
 * UINT32_MAX when none. */
static uint32_t local_target(const struct region *r, uint32_t hits)
{
	uint32_t best = UINT32_MAX;

	for (uint32_t b = 0; b < r->numa.share_blocks; b++) {
		const struct region_block *blk = &r->blocks[b];

		if (blk->cls < 0 && !blk->dropping)
			return b;
		if (blk->promoted_in && r->numa.prom.rounds + 1 -
		    blk->promoted_in < GS_NUMA_HOLD_ROUNDS)
			continue;
		if (2ull * blk->hits < hits &&
		    (best == UINT32_MAX || blk->hits < r->blocks[best].hits) &&
		    movable(r, b))
			best = b;
	}
	return best;
}

static int by_address(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(struct gs_obj *const *)a;
	uintptr_t y = (uintptr_t)*(struct gs_obj *const *)b;

	return x < y ? -1 : x > y;
}

/* Moves every offset into blocks <f> and <l>, just swapped, along: the
 * owners of their slots, each once. */
static void move_owners(struct region *r, struct round *rd, uint32_t f,
			uint32_t l)
{
	uint32_t nslots = r->cls[REGION_HEAD].nslots, n = 0;
	struct owner_arg o = { r, NULL, f, l };

	for (uint32_t s = 0; s < nslots; s++) {
		if (r->blocks[f].owner && r->blocks[f].owner[s])
			rd->owners[n++] = r->blocks[f].owner[s];
		if (r->blocks[l].owner && r->blocks[l].owner[s])
			rd->owners[n++] = r->blocks[l].owner[s];
	}
	qsort(rd->owners, n, sizeof(*rd->owners), by_address);
	for (uint32_t i = 0; i < n; i++)
		if (i == 0 || rd->owners[i] != rd->owners[i - 1])
			each_slot(rd->owners[i], move_owner, &o);
}

/* Moves foreign block <f> into the home share's block <l>, and every
 * offset into either with it. */
static void promote(struct region *r, struct round *rd, uint32_t f, uint32_t l)
{
	struct numa_topo *t = &r->numa;
	uint64_t t0 = mono_us(), us;

	t->prom.bytes += region_swap_blocks(r, f, l);
	r->blocks[l].promoted_in = t->prom.rounds + 1;
	move_owners(r, rd, f, l);
	us = mono_us() - t0;
	t->prom.promotions++;
	t->prom.time_us += us;
	if (us > t->prom.max_us)
		t->prom.max_us = us;
}

static int round_alloc(struct round *rd, const struct region *r)
{
	rd->hot = calloc(r->nblocks, sizeof(*rd->hot));
	rd->owners = calloc(2 * r->cls[REGION_HEAD].nslots,
			    sizeof(*rd->owners));
	return rd->hot && rd->owners ? 0 : -ENOMEM;
}

static void round_free(struct round *rd)
{
	free(rd->hot);
	free(rd->owners);
}

/* Whether the home share has a free block or one less than half as hot as
 * <hits>, pins and in-flight slots aside. */
static bool local_room(const struct region *r, uint32_t hits)
{
	for (uint32_t b = 0; b < r->numa.share_blocks; b++)
		if (r->blocks[b].cls < 0 || 2ull * r->blocks[b].hits < hits)
			return true;
	return false;
}

/* Moves the hot foreign blocks it can, GS_NUMA_ROUND_MOVES at most;
 * returns how many.  Owners and pins come from the blocks' owner tables:
 * the index is not walked. */
static int promote_hot(struct gs_engine *e, struct round *rd)
{
	struct region *r = &e->region;
	uint32_t nhot = 0;
	int moved = 0;

	for (uint32_t b = r->numa.share_blocks; b < r->head_blocks_max; b++)
		if (r->blocks[b].cls == REGION_HEAD && r->blocks[b].hits)
			rd->hot[nhot++] = b;
	sort_region = r;
	qsort(rd->hot, nhot, sizeof(*rd->hot), hotter);
	if (!nhot || !local_room(r, r->blocks[rd->hot[0]].hits))
		return 0;
	for (uint32_t i = 0; i < nhot && moved < GS_NUMA_ROUND_MOVES; i++) {
		uint32_t f = rd->hot[i], l;

		if (!movable(r, f)) {
			r->numa.prom.pinned++;
			continue;
		}
		l = local_target(r, r->blocks[f].hits);
		if (l == UINT32_MAX)
			break;
		promote(r, rd, f, l);
		moved++;
	}
	return moved;
}

int numa_promote_round(struct gs_engine *e)
{
	struct region *r = &e->region;
	struct round rd = { 0 };
	int moved = -ENOMEM;

	if (r->numa.nnodes < 2)
		return 0;
	if (!r->numa.swap_buf && !(r->numa.swap_buf = malloc(r->block)))
		return -ENOMEM;
	if (round_alloc(&rd, r) == 0)
		moved = promote_hot(e, &rd);
	round_free(&rd);
	if (moved >= 0) {
		for (uint32_t b = 0; b < r->head_blocks_max; b++)
			r->blocks[b].hits -= (r->blocks[b].hits + 7) / 8;
		r->numa.prom.rounds++;
	}
	return moved;
}

static void *promotion_thread(void *arg)
{
	struct gs_engine *e = arg;
	struct numa_topo *t = &e->region.numa;
	struct timespec at;

	pthread_setname_np(pthread_self(), "goblin-numa");
	pthread_mutex_lock(&e->lock);
	while (!t->stop) {
		at = mono_deadline(GS_NUMA_ROUND_MS * 1000000ull);
		while (!t->stop &&
		       pthread_cond_timedwait(&t->wake, &e->lock, &at) != ETIMEDOUT)
			;
		if (!t->stop && numa_promote_round(e) < 0)
			log_warn("NUMA promotion: out of memory for a round");
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

/* The CPUs of <node> into <set>; -errno when libnuma cannot say.  Asked
 * here, in the starting thread: libnuma caches the answer unlocked, and
 * two threads asking first at once leak one of the two. */
static int node_cpus(int node, cpu_set_t *set)
{
	struct bitmask *cpus = numa_allocate_cpumask();
	int ret = 0;

	CPU_ZERO(set);
	if (numa_node_to_cpus(node, cpus) < 0)
		ret = -errno;
	for (unsigned i = 0; !ret && i < cpus->size && i < CPU_SETSIZE; i++)
		if (numa_bitmask_isbitset(cpus, i))
			CPU_SET(i, set);
	numa_free_cpumask(cpus);
	return ret ? ret : CPU_COUNT(set) ? 0 : -ENOENT;
}

int numa_promotion_start(struct gs_engine *e, char *err, size_t errlen)
{
	struct numa_topo *t = &e->region.numa;
	int node = numa_topo_cpu_node(t->local);
	pthread_condattr_t ca;
	pthread_attr_t attr;
	cpu_set_t set;
	int ret;

	if (t->nnodes < 2 || e->cfg.no_numa_promotion)
		return 0;
	pthread_attr_init(&attr);
	if (node >= 0) {		/* copies from the serving node */
		ret = node_cpus(node, &set);
		if (ret < 0)
			log_warn("NUMA promotion thread: cannot run on node "
				 "%d: %s", node, strerror(-ret));
		else
			pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->wake, &ca);
	pthread_condattr_destroy(&ca);
	t->stop = false;
	ret = pthread_create(&t->thread, &attr, promotion_thread, e);
	pthread_attr_destroy(&attr);
	if (ret) {
		pthread_cond_destroy(&t->wake);
		snprintf(err, errlen, "NUMA promotion thread: %s", strerror(ret));
		return -ret;
	}
	t->running = true;
	return 0;
}

void numa_promotion_stop(struct gs_engine *e)
{
	struct numa_topo *t = &e->region.numa;

	if (!t->running)
		return;
	pthread_mutex_lock(&e->lock);
	t->stop = true;
	pthread_cond_signal(&t->wake);
	pthread_mutex_unlock(&e->lock);
	pthread_join(t->thread, NULL);
	pthread_cond_destroy(&t->wake);
	t->running = false;
}
