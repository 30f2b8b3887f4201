/*
 * NUMA node shares (--numa NODE): one share of --memory bytes per node,
 * each a contiguous run of blocks in the one RAM region memfd, bound to its
 * node with mbind.  Shares are numbered in population order: share 0, the
 * home share, is NODE's (the farthest node's with --perverse), then the
 * others by node id from NODE up, wrapping; the home share's node is the
 * home node.  Blocks are taken lowest first, so keys fill the home share,
 * then share 1, in the order they are stored.
 *
 *   region memfd:  | share 0 | share 1 | ... | share n-1 | small blocks |
 *                    node L    node L+1         node L-1    on the home node
 *
 * One region, one fd and one mapping keep gs_meta.head_off meaningful to
 * nginx workers, which map the same memfd read-only.
 *
 * The hooked test build (hook_points.h) can simulate a topology of several
 * nodes on a one-node host (t/hooks/hooks.c): each simulated node gets its
 * own share, placed on the real node that --numa NODE binds to, so every
 * placement decision runs as on a multi-node host.
 */
#ifndef GOBLIN_NUMA_TOPO_H
#define GOBLIN_NUMA_TOPO_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "goblin.h"


struct numa_topo {
	int nnodes;			/* 0: no --numa */
	bool simulated;			/* by the test hooks */
	int local;			/* --numa NODE */
	int order[GS_NUMA_MAX_NODES];	/* share i's node */
	int real[GS_NUMA_MAX_NODES];	/* share i's real node, -1: unbound */
	uint32_t share_blocks;		/* blocks in one share */
	uint64_t hits[GS_NUMA_MAX_NODES];	/* lookups per share */
	void *swap_buf;			/* one block, for swaps */
	struct numa_promotion_stats prom;
	pthread_t thread;		/* the promotion thread */
	bool running, stop;
	pthread_cond_t wake;		/* with the engine lock: stop */
};

/*
 * Reads the topology for <cfg> (numa, perverse) into <t>: the
 * real one from libnuma, or a simulated one (GS_HOOK_NUMA_TOPO).  Returns
 * 0, or -EINVAL with a reason in <err> for a node that does not exist
 * (numa_alloc_onnode would not say) or a simulation refused.
 */
int numa_topo_setup(struct numa_topo *t, const struct gs_config *cfg,
		    char *err, size_t errlen);

/* 0 when <cfg>'s numa is one of <n> nodes (<simulated>: of a
 * simulated topology), else -EINVAL with a reason in <err>. */
int numa_topo_check_node(const struct gs_config *cfg, int n, bool simulated,
			 char *err, size_t errlen);
/* Sets <t> to <n> nodes served from node <local>, and the order its shares
 * take them in: <local> first, the others from it up by node id, wrapping;
 * with <perverse>, the first of the farthest by <dist_from_local> (indexed
 * by node) swapped with it.  The caller fills <t>->real. */
void numa_topo_order(struct numa_topo *t, int n, int local,
		     const int *dist_from_local, bool perverse);

/* The node of share <i> (i >= nnodes: the small blocks, which lie on
 * the home node). */
static inline int numa_topo_node(const struct numa_topo *t, uint32_t i)
{
	return i < (uint32_t)t->nnodes ? t->order[i] : t->order[0];
}

struct gs_engine;

/*
 * The promotion thread (numa_promote.c).  Every round (GS_NUMA_ROUND_MS),
 * with the engine lock held, foreign head blocks are taken hottest first
 * (lookups, decayed each round: NUMA_HIT_WEIGHT) and moved into region
 * zero: into a free block there (slack first), else swapped with its
 * coldest block when that is less than half as hot; every offset into the two
 * blocks is moved with them.  A block is moved only when every slot in use
 * in it belongs to a linked, unpinned object: readers (memcache sends,
 * nginx workers) read a head only while they pin it, and pins are taken
 * under the engine lock, so nobody reads a block while it moves; a block
 * with a pin is skipped and retried next round.  A round moves at most
 * GS_NUMA_ROUND_MOVES blocks.  Owners and pins come from a block -> owner
 * table (region_block.owner: per head slot, the linked object whose bytes
 * it holds, kept as objects are linked and unlinked and heads and RAM
 * chunks are published and freed), so a round never walks the index: it
 * reads the slots of the blocks it considers, and moves the offsets of
 * the owners of the two blocks a swap exchanges.
 */
#define GS_NUMA_ROUND_MS 100
/* A block's heat: NUMA_HIT_WEIGHT per lookup, an eighth (rounded up) off
 * each round, so a block read now and then stays warm for about two
 * seconds; a used block of the home share is evicted only for a block more
 * than twice as hot. */
#define NUMA_HIT_WEIGHT 16
/* Rounds a block promoted into the home share is not taken as the cold one
 * to swap out: a pause in its lookups decays its heat to nothing as fast
 * as a block never read, and it would go back out at the next hot block
 * (and come back once more). */
#define GS_NUMA_HOLD_ROUNDS 30
/* Moves per round at most: bounds how long a round holds the engine lock
 * (a swap copies three blocks). */
#define GS_NUMA_ROUND_MOVES 4

/* Starts the promotion thread of <e> when it has --numa over two or more
 * nodes and not no_numa_promotion.  Returns 0 or -errno (reason in <err>). */
int numa_promotion_start(struct gs_engine *e, char *err, size_t errlen);
/* Stops it (waits for it) if it runs. */
void numa_promotion_stop(struct gs_engine *e);
/* Makes linked <obj> the owner of its head, RAM chunk and published RAM
 * chunk cache slots in the block -> owner table (none without two nodes
 * or more).  Called with e->lock held. */
void numa_owner_link(struct gs_engine *e, struct gs_obj *obj);
/* Clears <obj>'s slots' owners, as it leaves the index.  e->lock held. */
void numa_owner_unlink(struct gs_engine *e, struct gs_obj *obj);
/* One round; called with the engine lock held.  Returns the blocks moved,
 * or -ENOMEM. */
int numa_promote_round(struct gs_engine *e);

#endif /* GOBLIN_NUMA_TOPO_H */
