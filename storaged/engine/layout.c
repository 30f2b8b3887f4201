/*
 * Object layout across the tiers: where each byte of an object lives (RAM
 * head, then SSD and HDD chunks), and the allocation of that space, evicting
 * for room.  Called with e->lock held unless said otherwise.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "engine.h"
#include "heads.h"
#include "index.h"
#include "journal.h"
#include "layout.h"
#include "pool.h"
#include "ramchunk.h"
#include "region.h"

static enum gs_tier tier_at(const struct gs_engine *e, uint64_t off)
{
	uint64_t ssd_end = engine_ram_limit(e) + e->cfg.ssd_prefix;

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
static uint64_t tier_end(const struct gs_engine *e, uint64_t off, uint64_t size)
{
	uint64_t ssd_end = engine_ram_limit(e) + e->cfg.ssd_prefix;

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

/* Fills <chunks> (when not NULL) for an object of <size>; returns count.
 * An on-disk object's chunks cover it from byte 0; otherwise they follow
 * the head. */
static uint32_t layout(const struct gs_engine *e, uint64_t size,
		       struct chunk *chunks)
{
	uint64_t off = home_on_disk(e, size) ? 0 : engine_head_len(e, size);
	uint32_t n = 0;

	while (off < size) {
		enum gs_tier t = tier_at(e, off);
		uint64_t end = tier_end(e, off, size);
		uint64_t len = tier_chunk(e, t);

		if (len > end - off)
			len = end - off;
		if (chunks)
			chunks[n] = (struct chunk){ .len = len, .tier = t };
		n++;
		off += len;
	}
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
	uint64_t off = obj->on_disk ? 0 : obj->meta.head_len;

	for (uint32_t k = 0; k < i; k++)
		off += obj_chunks(obj)[k].len;
	return off;
}

/* Bytes of one max_object that land on tier <t>. */
uint64_t engine_max_on_tier(const struct gs_engine *e, enum gs_tier t)
{
	uint64_t size = e->cfg.max_object, sum = 0;
	uint32_t n = layout(e, size, NULL);
	struct chunk *c = calloc(n ? n : 1, sizeof(*c));

	if (!c)
		return 0;
	layout(e, size, c);
	for (uint32_t i = 0; i < n; i++)
		if (c[i].tier == t)
			sum += round_up(c[i].len, 4096);
	free(c);
	return sum;
}

void engine_free_record(struct gs_engine *e, struct gs_obj *obj)
{
	engine_head_forget(e, obj);
	ramchunk_free_all(e, obj);
	if (obj->has_head && region_is_arena(&e->region, obj->meta.head_off))
		arena_free(e, obj);
	else if (obj->has_head)
		region_free(&e->region, obj->meta.head_off);
	for (uint32_t i = 0; i < obj->nchunks; i++) {
		struct chunk *c = &obj_chunks(obj)[i];

		if (c->addr == UINT64_MAX)
			continue;
		if (c->tier == GS_TIER_RAM)
			region_free(&e->region, c->addr);
		else
			pool_free(&e->pools[c->tier], c->addr, c->len);
	}
	free(obj);
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

static int alloc_disk(struct gs_engine *e, enum gs_tier t, uint64_t len,
		      uint64_t *addr)
{
	while (pool_alloc(&e->pools[t], len, addr) < 0)
		if (!engine_make_room(e, t, ROOM_EVICT))
			return -ENOMEM;
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
				   uint32_t nchunks)
{
	struct gs_obj *obj = calloc(1, engine_record_size(klen, nchunks));

	if (!obj)
		return NULL;
	memcpy(obj->key, key, klen);
	obj->klen = klen;
	obj->refs = 1;
	obj->nchunks = nchunks;
	if (nchunks)
		obj_disk(obj)->head_pos = UINT32_MAX;
	return obj;
}

int engine_new_record(struct gs_engine *e, const void *key, size_t klen,
		      uint64_t size, struct gs_obj **objp)
{
	uint32_t n;
	struct gs_obj *obj;

	if (gs_check_size(e, size) < 0)
		return -E2BIG;
	n = layout(e, size, NULL);
	obj = engine_record_alloc(key, klen, n);
	if (!obj)
		return -ENOMEM;
	layout(e, size, obj_chunks(obj));
	obj->on_disk = home_on_disk(e, size);
	obj->meta.size = size;
	if (!obj->on_disk)
		obj->meta.head_len = engine_head_len(e, size);
	for (uint32_t i = 0; i < n; i++)
		obj_chunks(obj)[i].addr = UINT64_MAX;
	*objp = obj;
	return 0;
}

int engine_reserve_part(struct gs_engine *e, struct gs_obj *obj, int64_t i)
{
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
	if (c->addr != UINT64_MAX)
		return 0;
	if (!journal_room_for(e, obj))
		return -ENOMEM;
	if (c->tier == GS_TIER_RAM)	/* whole head slot: --memory */
		ret = alloc_ram(e, &addr);
	else
		ret = alloc_disk(e, c->tier, c->len, &addr);
	if (ret == 0)
		c->addr = addr;
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
		ret = engine_reserve_part(e, obj, i);
	if (ret < 0) {
		engine_free_record(e, obj);
		return ret;
	}
	*objp = obj;
	return 0;
}
