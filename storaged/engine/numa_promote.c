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

/* Per round: who owns the slots of each block, and where blocks went. */
struct round {
	uint32_t *owned;		/* slots of linked objects, per block */
	bool *pinned;			/* a linked object in it is pinned */
	uint32_t *moved;		/* block its bytes are in now */
	uint32_t *hot;			/* foreign blocks, hottest first */
};

/* Calls <fn> on each region offset <obj> owns: its head, its RAM chunks,
 * the slots of its chunks cached in RAM. */
static void each_slot(struct gs_obj *obj, void (*fn)(uint64_t *off, void *arg),
		      void *arg)
{
	struct ramchunk **ram = obj->on_disk ? obj_disk(obj)->ram : NULL;

	if (obj->has_head)
		fn(&obj->meta.head_off, arg);
	for (uint32_t c = 0; ram && c < obj->nchunks; c++)
		for (uint32_t i = 0; ram[c] && i < ram[c]->nslots; i++)
			fn(&ram[c]->off[i], arg);
	for (uint32_t c = 0; c < obj->nchunks; c++)
		if (obj_chunks(obj)[c].tier == GS_TIER_RAM &&	/* a run alone */
		    chunk_addr(obj, c) != UINT64_MAX)
			fn(&obj_runs(obj)[obj_chunks(obj)[c].run], arg);
}

struct owner_arg {
	const struct region *r;
	struct round *rd;
	bool pinned;
};

static void count_owner(uint64_t *off, void *arg)
{
	struct owner_arg *o = arg;
	uint32_t b = *off / o->r->block;

	o->rd->owned[b]++;
	if (o->pinned)
		o->rd->pinned[b] = true;
}

static void move_owner(uint64_t *off, void *arg)
{
	struct owner_arg *o = arg;
	uint64_t b = *off / o->r->block;

	*off = (uint64_t)o->rd->moved[b] * o->r->block + *off % o->r->block;
}

/* Whether block <b> may move: free, or a head block with every slot in
 * use owned by a linked object (no set or head load in flight into it)
 * and none pinned. */
static bool movable(const struct region *r, const struct round *rd, uint32_t b)
{
	const struct region_block *blk = &r->blocks[b];

	if (blk->cls < 0)
		return !blk->dropping;
	if (blk->cls != REGION_HEAD)
		return false;
	return !rd->pinned[b] &&
	       rd->owned[b] == r->cls[blk->cls].nslots - blk->nfree;
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
static uint32_t local_target(const struct region *r, const struct round *rd,
			     uint32_t hits)
{
	uint32_t best = UINT32_MAX;

	for (uint32_t b = 0; b < r->numa.share_blocks; b++) {
		const struct region_block *blk = &r->blocks[b];

		if (blk->cls < 0 && !blk->dropping)
			return b;
		if (blk->promoted_in && r->numa.prom.rounds + 1 -
		    blk->promoted_in < GS_NUMA_HOLD_ROUNDS)
			continue;
		if (2ull * blk->hits < hits && movable(r, rd, b) &&
		    (best == UINT32_MAX || blk->hits < r->blocks[best].hits))
			best = b;
	}
	return best;
}

/* Moves foreign block <f> into the home share's block <l>. */
static void promote(struct region *r, struct round *rd, uint32_t f, uint32_t l)
{
	struct numa_topo *t = &r->numa;
	uint64_t t0 = mono_us(), us;
	uint32_t tmp;
	bool p;

	t->prom.bytes += region_swap_blocks(r, f, l);
	r->blocks[l].promoted_in = t->prom.rounds + 1;
	us = mono_us() - t0;
	t->prom.promotions++;
	t->prom.time_us += us;
	if (us > t->prom.max_us)
		t->prom.max_us = us;
	tmp = rd->owned[f];
	rd->owned[f] = rd->owned[l];
	rd->owned[l] = tmp;
	p = rd->pinned[f];
	rd->pinned[f] = rd->pinned[l];
	rd->pinned[l] = p;
	rd->moved[f] = l;
	rd->moved[l] = f;
}

static int round_alloc(struct round *rd, uint32_t n)
{
	rd->owned = calloc(n, sizeof(*rd->owned));
	rd->pinned = calloc(n, sizeof(*rd->pinned));
	rd->moved = calloc(n, sizeof(*rd->moved));
	rd->hot = calloc(n, sizeof(*rd->hot));
	if (!rd->owned || !rd->pinned || !rd->moved || !rd->hot)
		return -ENOMEM;
	for (uint32_t b = 0; b < n; b++)
		rd->moved[b] = b;
	return 0;
}

static void round_free(struct round *rd)
{
	free(rd->owned);
	free(rd->pinned);
	free(rd->moved);
	free(rd->hot);
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
 * returns how many.  The index is walked only when a move may come. */
static int promote_hot(struct gs_engine *e, struct round *rd)
{
	struct region *r = &e->region;
	struct owner_arg o = { r, rd, false };
	uint32_t nhot = 0;
	int moved = 0;

	for (uint32_t b = r->numa.share_blocks; b < r->head_blocks_max; b++)
		if (r->blocks[b].cls == REGION_HEAD && r->blocks[b].hits)
			rd->hot[nhot++] = b;
	sort_region = r;
	qsort(rd->hot, nhot, sizeof(*rd->hot), hotter);
	if (!nhot || !local_room(r, r->blocks[rd->hot[0]].hits))
		return 0;
	for (uint32_t i = 0; i < e->clock_len; i++) {
		o.pinned = obj_refs(e->clock[i]) > 1;
		each_slot(e->clock[i], count_owner, &o);
	}
	for (uint32_t i = 0; i < nhot && moved < GS_NUMA_ROUND_MOVES; i++) {
		uint32_t f = rd->hot[i], l;

		if (!movable(r, rd, f)) {
			r->numa.prom.pinned++;
			continue;
		}
		l = local_target(r, rd, r->blocks[f].hits);
		if (l == UINT32_MAX)
			break;
		promote(r, rd, f, l);
		moved++;
	}
	for (uint32_t i = 0; moved && i < e->clock_len; i++)
		each_slot(e->clock[i], move_owner, &o);
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
	if (round_alloc(&rd, r->nblocks) == 0)
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
