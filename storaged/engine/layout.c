/*
 * Object layout across the tiers: where each byte of an object lives (RAM
 * head, then SSD and HDD chunks), and the allocation of that space, evicting
 * for room.  Called with e->lock held unless said otherwise.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "attr.h"
#include "engine.h"
#include "fill.h"
#include "heads.h"
#include "index.h"
#include "journal.h"
#include "layout.h"
#include "measure.h"
#include "pool.h"
#include "ramchunk.h"
#include "region.h"

/* An object's tiers: [0, ram limit + <prefix>) on the SSD and the rest on
 * the HDD when there are both; each new object's prefix is its own
 * (engine_new_prefix()), its chunks say where its bytes are after. */
static enum gs_tier tier_at(const struct gs_engine *e, uint64_t off,
			    uint64_t prefix)
{
	uint64_t ssd_end = engine_ram_limit(e) + prefix;

	if (e->has_pool[GS_TIER_SSD] && e->has_pool[GS_TIER_HDD])
		return off < ssd_end ? GS_TIER_SSD : GS_TIER_HDD;
	if (e->has_pool[GS_TIER_SSD])
		return GS_TIER_SSD;
	if (e->has_pool[GS_TIER_HDD])
		return GS_TIER_HDD;
	return GS_TIER_RAM;
}

static uint64_t tier_chunk(const struct gs_engine *e, enum gs_tier t)
{
	if (t == GS_TIER_SSD)
		return GS_SSD_CHUNK;
	if (t == GS_TIER_HDD)
		return GS_HDD_CHUNK;
	return region_head_slot(&e->region);
}

/* Where the tier holding <off> ends (exclusive). */
static uint64_t tier_end(const struct gs_engine *e, uint64_t off, uint64_t size,
			 uint64_t prefix)
{
	uint64_t ssd_end = engine_ram_limit(e) + prefix;

	if (e->has_pool[GS_TIER_SSD] && e->has_pool[GS_TIER_HDD] &&
	    off < ssd_end && ssd_end < size)
		return ssd_end;
	return size;
}

/* Whether an object of <size> lives whole on disk, its head a cached copy:
 * one past the RAM limit on an engine with a pool. */
static bool home_on_disk(const struct gs_engine *e, uint64_t size)
{
	return size > engine_ram_limit(e) &&
	       (e->has_pool[GS_TIER_SSD] || e->has_pool[GS_TIER_HDD]);
}

/* Fills <chunks> (when not NULL) for an object of <size> and SSD prefix
 * <prefix>; returns count, and in <*nruns> how many runs they make: one per
 * disk tier, one per RAM chunk.  An on-disk object's chunks cover it from
 * byte 0; otherwise they follow the head. */
static uint32_t layout(const struct gs_engine *e, uint64_t size,
		       uint64_t prefix, struct chunk *chunks, uint32_t *nruns)
{
	uint64_t off = home_on_disk(e, size) ? 0 : engine_head_len(e, size);
	uint32_t n = 0, runs = 0;
	int last = -1;

	while (off < size) {
		enum gs_tier t = tier_at(e, off, prefix);
		uint64_t end = tier_end(e, off, size, prefix);
		uint64_t len = tier_chunk(e, t);

		if (len > end - off)
			len = end - off;
		if ((int)t != last || t == GS_TIER_RAM)
			runs++;
		last = t;
		if (chunks)
			chunks[n] = (struct chunk){ .len = len, .tier = t,
						    .run = runs - 1 };
		n++;
		off += len;
	}
	*nruns = runs;
	return n;
}

uint64_t gs_obj_tier_bytes(const struct gs_obj *obj, enum gs_tier t)
{
	const struct chunk *c = obj_chunks(obj);
	uint64_t n = t == GS_TIER_RAM ? obj->meta.head_len : 0;

	for (uint32_t i = 0; i < obj->nchunks; i++)
		if (c[i].tier == t)
			n += c[i].len;
	return n;
}

uint64_t engine_chunk_start(const struct gs_obj *obj, uint32_t i)
{
	uint64_t off = obj->on_disk ? 0 : obj->fill ? obj_fill(obj)->head_cap :
		       obj->meta.head_len;

	for (uint32_t k = 0; k < i; k++)
		off += obj_chunks(obj)[k].len;
	return off;
}

uint64_t engine_new_prefix(const struct gs_engine *e)
{
	if (!e->has_pool[GS_TIER_SSD] || !e->has_pool[GS_TIER_HDD])
		return 0;
	return e->cfg.fixed_prefix ? e->cfg.ssd_prefix : measure_prefix(e);
}

/* Bytes of one max_object that land on tier <t>: with the largest prefix
 * on the SSD, with the least (none, unless fixed) on the HDD. */
uint64_t engine_max_on_tier(const struct gs_engine *e, enum gs_tier t)
{
	uint64_t size = e->cfg.max_object, sum = 0;
	uint64_t prefix = t == GS_TIER_SSD || e->cfg.fixed_prefix ?
			  e->cfg.ssd_prefix : 0;
	uint32_t nruns, n = layout(e, size, prefix, NULL, &nruns);
	struct chunk *c = calloc(n ? n : 1, sizeof(*c));

	if (!c)
		return 0;
	layout(e, size, prefix, c, &nruns);
	for (uint32_t i = 0; i < n; i++)
		if (c[i].tier == t)
			sum += round_up(c[i].len, 4096);
	free(c);
	return sum;
}

void engine_free_record(struct gs_engine *e, struct gs_obj *obj)
{
	if (engine_release_record(e, obj))
		free(obj);
}

bool engine_release_record(struct gs_engine *e, struct gs_obj *obj)
{
	attr_drop(e, obj);
	if (obj->fill) {
		fill_free_record(e, obj);
		return false;
	}
	engine_head_forget(e, obj);
	ramchunk_free_all(e, obj);
	if (obj->has_head && region_is_arena(&e->region, obj->meta.head_off))
		arena_free(e, obj);
	else if (obj->has_head)
		region_free(&e->region, obj->meta.head_off);
	for (uint32_t i = 0; i < obj->nchunks;) {
		const struct chunk *c = obj_chunks(obj);
		uint64_t addr = obj_runs(obj)[c[i].run], len = 0;
		enum gs_tier t = c[i].tier;

		for (uint32_t r = c[i].run; i < obj->nchunks && c[i].run == r; i++)
			len += c[i].len;
		if (addr == UINT64_MAX)
			continue;
		if (t == GS_TIER_RAM)
			region_free(&e->region, addr);
		else
			pool_free(&e->pools[t], addr, len);
	}
	return true;
}

bool engine_make_room(struct gs_engine *e, enum gs_tier need, unsigned how)
{
	if ((how & (ROOM_DROP_CHUNKS | ROOM_DROP_HEADS)) && ramchunk_drop_one(e))
		return true;
	if ((how & ROOM_DROP_HEADS) && engine_head_drop_one(e))
		return true;
	return (how & ROOM_EVICT) &&
	       engine_evict_one(e, need, e->cfg.no_evict);
}

/* A head slot for an object's own bytes: cached heads are dropped for it
 * first, then objects holding RAM are evicted. */
static int alloc_ram(struct gs_engine *e, uint64_t *off)
{
	while (region_alloc(&e->region, off) < 0)
		if (!engine_make_room(e, GS_TIER_RAM,
				      ROOM_DROP_HEADS | ROOM_EVICT))
			return -ENOMEM;
	return 0;
}

/*
 * A run of <need> bytes on tier <t>'s pool: whole when a free run holds it,
 * evicting for room as long as the free space would not; when it would, or
 * nothing more can go, the largest free run there is, a multiple of <unit>
 * (the caller takes the rest in further runs).  0 with <*addr> and <*got>,
 * or -ENOMEM.
 */
static int take_run(struct gs_engine *e, enum gs_tier t, uint64_t need,
		    uint64_t unit, uint64_t *addr, uint64_t *got)
{
	struct pool *p = &e->pools[t];

	for (;;) {
		if (pool_alloc(p, need, addr) == 0) {
			*got = need;
			return 0;
		}
		if (p->backed - p->used >= need &&
		    pool_alloc_most(p, need, unit, addr, got) == 0)
			break;
		if (engine_make_room(e, t, ROOM_EVICT))
			continue;
		/* nothing more can go: what is free, or what the files grow by */
		if (pool_alloc_most(p, need, unit, addr, got) == 0)
			break;
		*got = unit < need ? unit : need;
		if (pool_alloc(p, *got, addr) < 0)
			return -ENOMEM;
		break;
	}
	if (*got < need)
		STAT_ADD(e, extent_splits, 1);
	return 0;
}

/* Cuts <*objp>'s run of chunk <k> before <k>: chunk <k> and those after it
 * in the run become a run of their own, with no space yet (the record
 * grows by one address; <*objp> may move).  0 or -ENOMEM. */
static int cut_run(struct gs_obj **objp, uint32_t k)
{
	struct gs_obj *obj = *objp;
	uint32_t nr = obj_nruns(obj), r = obj_chunks(obj)[k].run;
	uint64_t *runs;

	if (nr >= GS_MAX_RUNS)
		return -ENOMEM;
	/* a grid has room for a run per chunk, and readers: it stays */
	if (!obj->fill) {
		obj = realloc(obj, engine_record_size(obj->klen, obj->nchunks,
						      nr + 1));
		if (!obj)
			return -ENOMEM;
		*objp = obj;
	}
	runs = obj_runs(obj);
	memmove(runs + r + 2, runs + r + 1, (nr - r - 1) * sizeof(*runs));
	runs[r + 1] = UINT64_MAX;
	for (uint32_t j = k; j < obj->nchunks; j++)
		obj_chunks(obj)[j].run++;
	return 0;
}

/* A grid's next step of <need> bytes for chunk <i>: right after the run
 * before it when that space is free (one extent, as a known size gets). */
static bool grid_extend(struct gs_engine *e, const struct gs_obj *obj,
			uint32_t i, uint64_t need, uint64_t *addr)
{
	const struct chunk *c = obj_chunks(obj);
	uint64_t prev, len = 0;
	uint32_t k = i;

	if (!obj->fill || i == 0 || c[i - 1].tier != c[i].tier ||
	    c[i - 1].run == c[i].run)
		return false;
	prev = obj_runs(obj)[c[i - 1].run];
	if (prev == UINT64_MAX)
		return false;
	while (k > 0 && c[k - 1].run == c[i - 1].run)
		len += fill_chunk_reserved(e, obj, --k);
	if (pool_claim(&e->pools[c[i].tier], prev + len, need) < 0)
		return false;
	*addr = prev + len;
	return true;
}

/*
 * Reserves the run of chunk <i> on its disk tier, which has no space yet:
 * chunk <i> and the ones after it on the same tier, at once and contiguous
 * (a tail is one extent per pool stripe, whoever else writes meanwhile).
 * When the pool is fragmented it is cut into as few runs as the pool's
 * free runs allow.  <*objp> may move (a cut run grows the record).
 */
static int reserve_run(struct gs_engine *e, struct gs_obj **objp, uint32_t i)
{
	enum gs_tier t = obj_chunks(*objp)[i].tier;
	uint32_t align = e->pools[t].align, end = i;
	uint64_t unit = round_up(tier_chunk(e, t), align);

	while (end < (*objp)->nchunks &&
	       obj_chunks(*objp)[end].run == obj_chunks(*objp)[i].run)
		end++;
	while (i < end) {
		const struct chunk *c = obj_chunks(*objp);
		uint64_t need = 0, use = 0, addr, got;
		uint32_t k = i;
		int ret;

		/* a chunk's address is its run's plus the chunks before it:
		 * whole chunks the alignment does not divide are runs alone */
		for (uint32_t j = i; j < end; j++)
			if (j == i || unit == tier_chunk(e, t))
				need += round_up(c[j].len, align);
		if (grid_extend(e, *objp, i, need, &addr)) {
			got = need;
		} else {
			ret = take_run(e, t, need, unit, &addr, &got);
			if (ret < 0)
				return ret;
		}
		while (k < end && use + round_up(c[k].len, align) <= got &&
		       (k == i || unit == tier_chunk(e, t)))
			use += round_up(c[k++].len, align);
		if (got > use)
			pool_free(&e->pools[t], addr + use, got - use);
		if (k < end && cut_run(objp, k) < 0) {
			pool_free(&e->pools[t], addr, use);
			return -ENOMEM;
		}
		obj_runs(*objp)[obj_chunks(*objp)[i].run] = addr;
		i = k;
	}
	return 0;
}

int engine_head_alloc(struct gs_engine *e, unsigned how, uint64_t *off)
{
	while (region_alloc(&e->region, off) < 0)
		if (!how || !engine_make_room(e, GS_TIER_RAM, how))
			return -ENOMEM;
	return 0;
}

int gs_check_size(const struct gs_engine *e, uint64_t size)
{
	return size > e->cfg.max_object ? -E2BIG : 0;
}

struct gs_obj *engine_record_alloc(const void *key, size_t klen,
				   uint32_t nchunks, uint32_t nruns)
{
	struct gs_obj *obj;

	if (nchunks && (!nruns || nruns > nchunks))
		return NULL;
	obj = calloc(1, engine_record_size(klen, nchunks, nruns));
	if (!obj)
		return NULL;
	memcpy(obj->key, key, klen);
	obj->klen = klen;
	obj->refs = 1;
	obj->nchunks = nchunks;
	if (!nchunks)
		return obj;
	obj_disk(obj)->head_pos = UINT32_MAX;
	/* chunk k is run min(k, nruns - 1) until the caller says */
	for (uint32_t k = 0; k < nchunks; k++)
		obj_chunks(obj)[k].run = k < nruns ? k : nruns - 1;
	for (uint32_t r = 0; r < nruns; r++)
		obj_runs(obj)[r] = UINT64_MAX;
	return obj;
}

int engine_new_record(struct gs_engine *e, const void *key, size_t klen,
		      uint64_t size, struct gs_obj **objp)
{
	uint64_t prefix = engine_new_prefix(e);
	uint32_t n, nruns;
	struct gs_obj *obj;

	if (gs_check_size(e, size) < 0)
		return -E2BIG;
	n = layout(e, size, prefix, NULL, &nruns);
	if (nruns >= GS_MAX_RUNS)
		return -E2BIG;
	obj = engine_record_alloc(key, klen, n, nruns);
	if (!obj)
		return -ENOMEM;
	layout(e, size, prefix, obj_chunks(obj), &nruns);
	obj->on_disk = home_on_disk(e, size);
	obj->meta.size = size;
	if (!obj->on_disk)
		obj->meta.head_len = engine_head_len(e, size);
	*objp = obj;
	return 0;
}

int engine_new_grid(struct gs_engine *e, const void *key, size_t klen,
		    uint64_t size, struct gs_obj **objp)
{
	bool unknown = size == GS_SIZE_UNKNOWN;
	uint64_t cap = unknown ? e->cfg.max_object : size;
	uint64_t prefix = engine_new_prefix(e), in_run = 0;
	uint32_t n, nruns, r = 0;
	struct gs_obj *obj;
	struct chunk *c;

	if (gs_check_size(e, cap) < 0)
		return -E2BIG;
	n = layout(e, cap, prefix, NULL, &nruns);
	if (n >= GS_MAX_RUNS)
		return -E2BIG;
	obj = calloc(1, fill_record_size(klen, n));
	if (!obj)
		return -ENOMEM;
	memcpy(obj->key, key, klen);
	obj->klen = klen;
	obj->refs = 1;
	obj->nchunks = n;
	obj->fill = true;
	obj_disk(obj)->head_pos = UINT32_MAX;
	c = obj_chunks(obj);
	layout(e, cap, prefix, c, &nruns);
	/* unknown: a new run every FILL_STEP bytes of a tier */
	for (uint32_t k = 0; k < n; k++) {
		if (k && (c[k].run != c[k - 1].run ||
			  (unknown && in_run >= FILL_STEP))) {
			r++;
			in_run = 0;
		}
		in_run += c[k].len;
		c[k].run = r;
	}
	for (uint32_t k = 0; k < n; k++)
		obj_runs(obj)[k] = UINT64_MAX;
	obj->on_disk = home_on_disk(e, cap);
	obj->meta.size = size;		/* no head_len: the head is the fill's */
	if (fill_init(obj, cap, size, engine_head_len(e, cap)) < 0) {
		free(obj);
		return -ENOMEM;
	}
	*objp = obj;
	return 0;
}

int engine_reserve_part(struct gs_engine *e, struct gs_obj **objp, int64_t i)
{
	struct gs_obj *obj = *objp;
	struct chunk *c;
	uint64_t addr;
	int ret;

	/* nothing is evicted for a store the journal could not take */
	if (i < 0) {
		if (obj->has_head || !obj->meta.head_len)
			return 0;
		if (!journal_room_for(e, obj))
			return -ENOMEM;
		/* smaller than a head slot: packed in the arena */
		if (region_arena_takes(&e->region, obj->meta.head_len))
			return arena_alloc(e, obj);
		ret = alloc_ram(e, &addr);
		if (ret == 0)
			obj_set_head(e, obj, addr);
		return ret;
	}
	c = &obj_chunks(obj)[i];
	if (obj_runs(obj)[c->run] != UINT64_MAX)
		return 0;
	if (!journal_room_for(e, obj))
		return -ENOMEM;
	if (c->tier != GS_TIER_RAM)
		return reserve_run(e, objp, i);
	ret = alloc_ram(e, &addr);	/* whole head slot: --memory */
	if (ret == 0)
		obj_runs(obj)[c->run] = addr;
	return ret;
}

int engine_reserve(struct gs_engine *e, const void *key, size_t klen,
		   uint64_t size, struct gs_obj **objp)
{
	struct gs_obj *obj;
	int ret = engine_new_record(e, key, klen, size, &obj);

	if (ret < 0)
		return ret;
	for (int64_t i = -1; ret == 0 && i < (int64_t)obj->nchunks; i++)
		ret = engine_reserve_part(e, &obj, i);
	if (ret < 0) {
		engine_free_record(e, obj);
		return ret;
	}
	*objp = obj;
	return 0;
}
