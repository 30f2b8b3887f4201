/*
 * The head cache: heads of on-disk objects held in RAM region slots, a
 * copy of their first ram_head bytes.  A CLOCK over the cached heads drops
 * one for room (never one whose object is pinned: a reader may be sending
 * it); the object stays on disk.  Admission is scan-resistant: a head miss
 * brings the head in when a free slot is at hand, or else only on the
 * object's second miss within one lap of the CLOCK hand, so a single pass
 * over cold objects cannot push the hot heads out.  All calls expect
 * e->lock held.
 */
#include <errno.h>
#include <stdlib.h>

#include "engine.h"
#include "heads.h"
#include "hook_points.h"
#include "layout.h"
#include "region.h"

uint64_t engine_head_bytes(const struct gs_engine *e, const struct gs_obj *obj)
{
	return engine_head_len(e, obj->meta.size);
}

/* Takes <obj> off the CLOCK; its slot stays with it. */
static void heads_remove(struct gs_engine *e, struct gs_obj *obj)
{
	struct gs_obj *last = e->heads[--e->heads_len];
	uint32_t pos = obj_disk(obj)->head_pos;

	e->heads[pos] = last;
	obj_disk(last)->head_pos = pos;
	obj_disk(obj)->head_pos = UINT32_MAX;
	STAT_SUB(e, ram_heads, 1);
}

void engine_head_forget(struct gs_engine *e, struct gs_obj *obj)
{
	if (obj->on_disk && obj_disk(obj)->head_pos != UINT32_MAX)
		heads_remove(e, obj);
}

/* Drops the cached head of linked, unpinned <obj>. */
static void head_drop(struct gs_engine *e, struct gs_obj *obj)
{
	uint64_t len = obj->meta.head_len;

	heads_remove(e, obj);
	__atomic_store_n(&obj->meta.head_len, 0, __ATOMIC_RELEASE);
	region_free(&e->region, obj->meta.head_off);
	obj->has_head = false;
	STAT_SUB(e, ram_head_bytes, len);
	STAT_SUB(e, ram_head_objects, 1);
	STAT_ADD(e, head_evictions, 1);
}

bool engine_head_drop_one(struct gs_engine *e)
{
	for (uint32_t step = 0; e->heads_len && step < 2 * e->heads_len + 2;
	     step++) {
		struct gs_obj *obj;

		if (e->heads_hand >= e->heads_len) {
			e->heads_hand = 0;
			if (++e->heads_epoch == 0)
				e->heads_epoch = 1;	/* 0: never seen */
		}
		obj = e->heads[e->heads_hand++];
		if (obj_refs(obj) > 1)
			continue;		/* pinned: maybe being sent */
		if (obj->head_referenced) {
			obj->head_referenced = false;
			continue;
		}
		head_drop(e, obj);
		return true;
	}
	return false;
}

bool engine_head_want(struct gs_engine *e, struct gs_obj *obj, uint64_t *off)
{
	bool again;

	if (!obj->on_disk || !obj->linked || obj->has_head || obj->head_loading)
		return false;
	again = GS_HOOK_HEAD_ADMIT_ANY() ||
		(obj_disk(obj)->seen_epoch &&
		 (uint16_t)(e->heads_epoch - obj_disk(obj)->seen_epoch) <= 1);
	if (engine_head_alloc(e, 0, off) < 0 &&
	    (!again || engine_head_alloc(e, ROOM_DROP_HEADS, off) < 0)) {
		obj_disk(obj)->seen_epoch = e->heads_epoch;
		return false;
	}
	obj->head_loading = true;
	return true;
}

void engine_head_cancel(struct gs_engine *e, struct gs_obj *obj, uint64_t off)
{
	region_free(&e->region, off);
	obj->head_loading = false;
}

void engine_head_publish(struct gs_engine *e, struct gs_obj *obj, uint64_t off)
{
	uint64_t len = engine_head_bytes(e, obj);

	obj->head_loading = false;
	if (!obj->linked || obj->has_head) {
		region_free(&e->region, off);
		return;
	}
	if (e->heads_len == e->heads_cap) {
		uint32_t cap = e->heads_cap ? 2 * e->heads_cap : 1024;
		struct gs_obj **h = realloc(e->heads, cap * sizeof(*h));

		if (!h) {
			region_free(&e->region, off);
			return;
		}
		e->heads = h;
		e->heads_cap = cap;
	}
	obj_disk(obj)->head_pos = e->heads_len;
	e->heads[e->heads_len++] = obj;
	obj->has_head = true;
	obj->meta.head_off = off;
	region_owner_set(&e->region, off, obj);
	obj->head_referenced = false;
	/* readers load head_len first (acquire), then head_off */
	__atomic_store_n(&obj->meta.head_len, len, __ATOMIC_RELEASE);
	STAT_ADD(e, ram_heads, 1);
	STAT_ADD(e, ram_head_bytes, len);
	STAT_ADD(e, ram_head_objects, 1);
	STAT_ADD(e, head_admissions, 1);
}
