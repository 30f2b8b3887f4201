/*
 * The RAM chunk cache: RAM that heads leave free holds further chunks of
 * hot on-disk objects, so a hot set that fits --memory is served from RAM
 * whole.  A chunk read from disk (and checked) is copied into head slots
 * (a chunk of 1M takes four of 256K) when free slots are at hand, or, for
 * an object read again within one lap of the chunk CLOCK's hand (the head
 * admission's rule), in place of colder cached chunks: one pass over cold
 * objects leaves the cache as it was.  Heads come first: a head the head
 * admission wants drops cached chunks before other heads (layout.c,
 * engine_make_room), and a chunk never takes a head's slot.  A CLOCK over
 * the cached chunks picks what goes, never a pinned object's (a reader may
 * be sending it).  A shared fill's writer offers each disk chunk as it
 * lands, so that its readers copy it from RAM rather than each read it
 * back (fill.c); those go with the fill's grid.  All calls expect e->lock
 * held unless said otherwise.
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "heads.h"
#include "hook_points.h"
#include "index.h"
#include "layout.h"
#include "ramchunk.h"
#include "region.h"

/* Whether <obj> may hold cached chunks: linked, or a fill's grid (its
 * writer pins it while offering; its record's end frees them). */
static bool holds_chunks(const struct gs_obj *obj)
{
	return obj->linked || obj->fill;
}

static uint64_t entry_bytes(uint32_t nslots)
{
	return engine_malloc_bytes(sizeof(struct ramchunk) +
				   nslots * sizeof(uint64_t));
}

static uint64_t table_bytes(const struct gs_obj *obj)
{
	return engine_malloc_bytes(obj->nchunks * sizeof(struct ramchunk *));
}

/* Takes <rc> off the CLOCK. */
static void clock_remove(struct gs_engine *e, struct ramchunk *rc)
{
	struct ramchunk *last;

	if (rc->clock_pos == UINT32_MAX)
		return;
	last = e->ramchunks[--e->ramchunks_len];
	e->ramchunks[rc->clock_pos] = last;
	last->clock_pos = rc->clock_pos;
	rc->clock_pos = UINT32_MAX;
}

/* Frees <obj>'s table of cached chunks once it holds none. */
static void table_put(struct gs_engine *e, struct gs_obj *obj)
{
	struct ramchunk **ram = obj_disk(obj)->ram;

	for (uint32_t c = 0; c < obj->nchunks; c++)
		if (ram[c])
			return;
	STAT_SUB(e, index_record_bytes, table_bytes(obj));
	free(ram);
	obj_disk(obj)->ram = NULL;
}

/* Frees <rc>'s slots and <rc>, off the CLOCK already, and its object's
 * table when that was the last. */
static void entry_free(struct gs_engine *e, struct ramchunk *rc)
{
	struct gs_obj *obj = rc->obj;

	for (uint32_t i = 0; i < rc->nslots; i++)
		region_free(&e->region, rc->off[i]);
	if (rc->published) {
		STAT_SUB(e, ram_chunks, 1);
		STAT_SUB(e, ram_chunk_bytes, rc->len);
	}
	STAT_SUB(e, index_record_bytes, entry_bytes(rc->nslots));
	obj_disk(obj)->ram[rc->chunk] = NULL;
	free(rc);
	table_put(e, obj);
}

bool ramchunk_drop_one(struct gs_engine *e)
{
	for (uint32_t step = 0; e->ramchunks_len &&
	     step < 2 * e->ramchunks_len + 2; step++) {
		struct ramchunk *rc;

		if (e->ramchunks_hand >= e->ramchunks_len) {
			e->ramchunks_hand = 0;
			if (++e->ramchunks_epoch == 0)
				e->ramchunks_epoch = 1;	/* 0: never read */
		}
		rc = e->ramchunks[e->ramchunks_hand];
		if (obj_refs(rc->obj) > 1) {
			e->ramchunks_hand++;	/* pinned: maybe being sent */
			continue;
		}
		if (rc->referenced) {
			rc->referenced = false;
			e->ramchunks_hand++;
			continue;
		}
		clock_remove(e, rc);	/* the last one moves to the hand */
		entry_free(e, rc);
		STAT_ADD(e, chunk_evictions, 1);
		return true;
	}
	return false;
}

void ramchunk_forget(struct gs_engine *e, struct gs_obj *obj)
{
	struct ramchunk **ram;

	if (!obj->on_disk || !(ram = obj_disk(obj)->ram))
		return;
	for (uint32_t c = 0; c < obj->nchunks; c++)
		if (ram[c])
			clock_remove(e, ram[c]);
}

void ramchunk_free_all(struct gs_engine *e, struct gs_obj *obj)
{
	struct obj_disk *d = obj_disk(obj);

	/* the last entry_free() frees the table too */
	for (uint32_t c = 0; obj->on_disk && d->ram && c < obj->nchunks; c++)
		if (d->ram[c]) {
			clock_remove(e, d->ram[c]);
			entry_free(e, d->ram[c]);
		}
}

const struct ramchunk *ramchunk_get(struct gs_engine *e, struct gs_obj *obj,
				    uint32_t c)
{
	struct ramchunk *rc;

	if (!obj->on_disk || !obj_disk(obj)->ram)
		return NULL;
	rc = obj_disk(obj)->ram[c];
	if (!rc || !rc->published)
		return NULL;
	rc->referenced = true;
	STAT_ADD(e, chunk_hits, 1);
	return rc;
}

bool ramchunk_read(struct gs_engine *e, struct gs_obj *obj)
{
	struct obj_disk *d = obj_disk(obj);
	bool again;

	if (!obj->on_disk)
		return false;
	if (!e->ramchunks_epoch)
		e->ramchunks_epoch = 1;
	again = d->read_epoch &&
		(uint16_t)(e->ramchunks_epoch - d->read_epoch) <= 1;
	d->read_epoch = e->ramchunks_epoch;
	return again;
}

static struct ramchunk *ramchunk_want(struct gs_engine *e, struct gs_obj *obj,
				      uint32_t c, bool again)
{
	const struct chunk *ch = &obj_chunks(obj)[c];
	uint64_t slot = region_head_slot(&e->region);
	uint32_t n = (uint32_t)((ch->len + slot - 1) / slot), got;
	struct obj_disk *d = obj_disk(obj);
	struct ramchunk *rc;

	if (!obj->on_disk || !holds_chunks(obj) || c >= obj->nchunks ||
	    (d->ram && d->ram[c]) ||
	    engine_chunk_start(obj, c) + ch->len <= engine_head_bytes(e, obj))
		return NULL;		/* cached or coming, or all head */
	rc = malloc(sizeof(*rc) + n * sizeof(uint64_t));
	if (!rc)
		return NULL;
	for (got = 0; got < n; got++)
		while (region_alloc(&e->region, &rc->off[got]) < 0)
			if (!again || !ramchunk_drop_one(e))
				goto out_free;
	if (!d->ram) {
		d->ram = calloc(obj->nchunks, sizeof(*d->ram));
		if (!d->ram)
			goto out_free;
		STAT_ADD(e, index_record_bytes, table_bytes(obj));
	}
	*rc = (struct ramchunk){ .obj = obj, .chunk = c,
				 .clock_pos = UINT32_MAX, .nslots = n,
				 .len = ch->len };
	d->ram[c] = rc;
	STAT_ADD(e, index_record_bytes, entry_bytes(n));
	return rc;

out_free:
	while (got--)
		region_free(&e->region, rc->off[got]);
	free(rc);
	return NULL;
}

/* Copies the chunk's <len> bytes into <rc>'s slots; no lock needed:
 * nobody reads <rc> before it is published. */
static void ramchunk_fill(const struct gs_engine *e, struct ramchunk *rc,
			  const char *data, uint64_t len)
{
	uint64_t slot = region_head_slot(&e->region);

	for (uint32_t i = 0; i < rc->nslots && len; i++) {
		uint64_t n = len < slot ? len : slot;

		memcpy((char *)e->region.base + rc->off[i], data, n);
		data += n;
		len -= n;
	}
}

/* Makes <rc> readable, or frees it when its object went meanwhile. */
static void ramchunk_publish(struct gs_engine *e, struct ramchunk *rc)
{
	if (holds_chunks(rc->obj) && e->ramchunks_len == e->ramchunks_cap) {
		uint32_t cap = e->ramchunks_cap ? 2 * e->ramchunks_cap : 1024;
		struct ramchunk **t = realloc(e->ramchunks, cap * sizeof(*t));

		if (t) {
			e->ramchunks = t;
			e->ramchunks_cap = cap;
		}
	}
	if (!holds_chunks(rc->obj) || e->ramchunks_len == e->ramchunks_cap) {
		entry_free(e, rc);	/* gone meanwhile, or no room to track */
		return;
	}
	rc->clock_pos = e->ramchunks_len;
	e->ramchunks[e->ramchunks_len++] = rc;
	rc->published = true;
	rc->referenced = false;
	for (uint32_t i = 0; rc->obj->linked && i < rc->nslots; i++)
		region_owner_set(&e->region, rc->off[i], rc->obj);
	STAT_ADD(e, ram_chunks, 1);
	STAT_ADD(e, ram_chunk_bytes, rc->len);
	STAT_ADD(e, chunk_admissions, 1);
}

const char *ramchunk_bytes(const struct gs_engine *e, const struct ramchunk *rc,
			   uint64_t pos, uint64_t max, size_t *len)
{
	uint64_t slot = region_head_slot(&e->region);
	uint64_t i = pos / slot, in = pos % slot;
	uint64_t end = (i + 1) * slot < rc->len ? (i + 1) * slot : rc->len;

	*len = end - pos < max ? end - pos : max;
	return (const char *)e->region.base + rc->off[i] + in;
}

void ramchunk_offer(struct gs_engine *e, struct gs_obj *obj, uint32_t c,
		    const char *data, bool again)
{
	struct ramchunk *rc;

	if (!obj->on_disk || GS_HOOK_CHUNKS_OFF())
		return;
	pthread_mutex_lock(&e->lock);
	rc = ramchunk_want(e, obj, c, again);
	pthread_mutex_unlock(&e->lock);
	if (!rc)
		return;
	ramchunk_fill(e, rc, data, obj_chunks(obj)[c].len);
	pthread_mutex_lock(&e->lock);
	ramchunk_publish(e, rc);
	pthread_mutex_unlock(&e->lock);
}
