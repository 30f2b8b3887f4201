/*
 * The byte-granular arena of objects smaller than --ram-head (arena.c; its
 * design at the head of arena.c).  Types in engine-t.h.
 */
#ifndef GOBLIN_ARENA_H
#define GOBLIN_ARENA_H

#include "engine.h"

/* Places <obj>'s value (meta.head_len bytes, under --ram-head) in the
 * arena, evicting (CLOCK) and compacting for room; sets meta.head_off
 * through obj_set_head().  Called with e->lock held; 0 or -ENOMEM. */
int arena_alloc(struct gs_engine *e, struct gs_obj *obj);
/* Marks <obj>'s entry dead; an arena block left empty goes back to the region.
 * Called with e->lock held. */
void arena_free(struct gs_engine *e, struct gs_obj *obj);
/* One bounded step of compaction; false when there was nothing to do.
 * Called with e->lock held. */
bool arena_compact_step(struct gs_engine *e, bool pressure);
/* Stops the compactor thread (region_close()). Takes e->lock. */
void arena_stop(struct region *r);

#endif /* GOBLIN_ARENA_H */
