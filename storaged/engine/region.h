/*
 * The RAM region (region.c): one memfd of --block blocks, head slots and
 * arena blocks.  Types in engine-t.h.
 */
#ifndef GOBLIN_REGION_H
#define GOBLIN_REGION_H

#include "engine.h"

/* ---- RAM region ---- */

int region_open(struct region *r, const struct gs_config *cfg,
		char *err, size_t errlen);
void region_close(struct region *r);
/* Allocates a --ram-head slot: 0 and <*off>, or -ENOMEM. */
int region_alloc(struct region *r, uint64_t *off);
void region_free(struct region *r, uint64_t off);
/* Takes a free block as an arena block, charged to --sub-memory (to
 * --memory when that is 0), and locks it with mlock on: 0 and <*b>, or
 * -ENOMEM. */
int region_arena_block_take(struct region *r, uint32_t *b);
/* Gives arena block <b> back: it joins r->drops, and is taken again only
 * after region_arena_block_drop() and region_arena_block_dropped(). */
void region_arena_block_release(struct region *r, uint32_t b);
/* Unlocks given-back arena block <b> and drops its pages from the mapping
 * (system calls of a few hundred microseconds for 2M: no lock needed). */
void region_arena_block_drop(struct region *r, uint32_t b);
/* Arena block <b> is dropped: its block is free again. */
void region_arena_block_dropped(struct region *r, uint32_t b);
/* Whether the bytes at <off> are in an arena block. */
static inline bool region_is_arena(const struct region *r, uint64_t off)
{
	return r->blocks[off / r->block].cls == REGION_ARENA;
}
/* A head slot's size in bytes (cfg.ram_head): a RAM chunk fills one. */
static inline uint64_t region_head_slot(const struct region *r)
{
	return r->cls[REGION_HEAD].slot;
}
/* The arena cutoff: a value shorter than a head slot is packed in the
 * arena rather than given a slot of its own. */
static inline uint64_t region_arena_cutoff(const struct region *r)
{
	return region_head_slot(r);
}
/* Whether a value of <len> bytes goes to the arena: under the cutoff, its
 * entry (8-byte header, rounded to 8) within a block. */
static inline bool region_arena_takes(const struct region *r, uint64_t len)
{
	return len < region_arena_cutoff(r) &&
	       8 + round_up(len, 8) <= r->block;
}
/* Whether arena blocks come out of the heads' budget (--sub-memory 0). */
static inline bool region_arena_shares_heads(const struct region *r)
{
	return r->small_blocks_max == 0;
}
/* With --numa over two nodes or more, the block -> owner table of head
 * blocks (numa_topo.h): makes <obj> the owner of the head slot at <off>
 * (NULL: none; region_free() clears it); nothing for an arena offset or
 * without the table.  e->lock held. */
void region_owner_set(struct region *r, uint64_t off, struct gs_obj *obj);
/* With --numa: counts a lookup served from the slot at <off>. */
void region_hit(struct region *r, uint64_t off);
/* Exchanges head blocks <a> and <b>, bytes, slot and owner tables (<b>
 * may be free, <a> not; neither an arena block); the caller moves every
 * offset into them.  Returns the bytes copied. */
uint64_t region_swap_blocks(struct region *r, uint32_t a, uint32_t b);

#endif /* GOBLIN_REGION_H */
