/*
 * The RAM chunk cache (ramchunk.c): further chunks of hot on-disk objects
 * held in head slots that heads leave free.  Types in engine-t.h.
 */
#ifndef GOBLIN_RAMCHUNK_H
#define GOBLIN_RAMCHUNK_H

#include "engine-t.h"

/* Drops one cached chunk, CLOCK order, never a pinned object's; false when
 * none could go.  e->lock held. */
bool ramchunk_drop_one(struct gs_engine *e);
/* Takes <obj>'s cached chunks off the CLOCK (it is being unlinked); their
 * slots stay until the record is freed.  e->lock held. */
void ramchunk_forget(struct gs_engine *e, struct gs_obj *obj);
/* Frees <obj>'s cached chunks and their slots (its record is freed).
 * e->lock held. */
void ramchunk_free_all(struct gs_engine *e, struct gs_obj *obj);
/* Chunk <c> of pinned <obj> if it is cached (counted as a hit, its CLOCK
 * bit set), else NULL; valid while the pin is held.  e->lock held. */
const struct ramchunk *ramchunk_get(struct gs_engine *e, struct gs_obj *obj,
				    uint32_t c);
/* A stream of <obj> starts: whether the object was read before within
 * one lap of the chunk CLOCK (then its chunks may push colder ones out).
 * e->lock held. */
bool ramchunk_read(struct gs_engine *e, struct gs_obj *obj);
/* Chunk <c> of pinned <obj> was read from disk and checked (or, of a
 * fill's grid, written), its bytes at <data>: caches a copy when free slots are at hand or, when
 * ramchunk_read() said <again>, in colder cached chunks' place.  Takes
 * e->lock itself (not held across the copy). */
void ramchunk_offer(struct gs_engine *e, struct gs_obj *obj, uint32_t c,
		    const char *data, bool again);
/* Where byte <pos> of cached chunk <rc> (chunk-relative) is; <*len>: how
 * many bytes from it lie in the same slot, at most <max>. */
const char *ramchunk_bytes(const struct gs_engine *e, const struct ramchunk *rc,
			   uint64_t pos, uint64_t max, size_t *len);

#endif /* GOBLIN_RAMCHUNK_H */
