/*
 * The engine's internal types: the RAM region (region.c) and its arena
 * (arena.c), the disk pools (pool.c), the index's records (index.c,
 * layout.c, heads.c) and the engine that holds them (engine.c).  Not part of
 * the API (goblin.h); each file's prototypes are in its own header:
 * region.h, arena.h, pool.h, layout.h, index.h, heads.h, writer.h, and
 * engine.h for engine.c's and the helpers every engine file uses.
 *
 * Locking: e->lock guards the index, the CLOCK, both allocators and every
 * record's linked state and flags.  refs changes atomically: a pin beside
 * one held, and a drop that is not the last reference, need no lock
 * (index.h).  Counters are updated with atomics.
 *
 * A lookup that hits an object wholly in RAM takes no lock (lookup.c):
 * it walks the chain inside an epoch (epoch.h), so no record or bucket
 * table it can reach is freed meanwhile, pins with a CAS from refs > 0,
 * and keeps the pin only when e->index_seq did not move over the walk
 * and the pin.  Writers, under e->lock, publish chain links with release
 * stores and make index_seq odd around whatever a lockless walk or pin
 * could be wrong across: a growth's table switch and rehash steps (they
 * move records between chains) and arena compaction (it moves the bytes
 * of records it found unpinned).  The fields such a lookup reads are
 * fixed once linked (key, klen, on_disk, mtime) or atomic (refs, linked,
 * referenced, meta.exptime, e->invalid_at).
 *
 *   struct gs_engine --+-- struct region  (memfd: head slots, arena blocks)
 *                      |     +-- struct numa_topo, struct arena
 *                      +-- struct pool[tier]  (dirs striped, extents)
 *                      +-- buckets / clock / heads: struct gs_obj records
 *                                +-- struct obj_disk: chunks on the pools
 *                                      +-- struct ramchunk: cached in RAM
 */
#ifndef GOBLIN_ENGINE_T_H
#define GOBLIN_ENGINE_T_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "goblin.h"
#include "list.h"
#include "numa_topo.h"

/* ---- RAM region: --block blocks of head slots or arena blocks ---- */

/* Block kinds: r->cls[REGION_HEAD] is the --ram-head slot class; an arena
 * arena block is of the pseudo class REGION_ARENA (slot 1, nslots block, nfree
 * block - live bytes), so per-block byte counts read the same. */
#define REGION_HEAD	0
#define REGION_ARENA	1
#define REGION_CLASSES	2

struct region_block {
	int cls;			/* REGION_HEAD, REGION_ARENA, -1 free */
	uint32_t nfree;
	uint32_t next_partial;		/* partial-list link, UINT32_MAX = end */
	bool on_partial;
	bool small;			/* charged to sub_memory */
	bool locked;			/* an arena block mlock()ed on first use */
	bool dropping;			/* given back, its pages not yet dropped */
	uint64_t *freemap;		/* bit set = slot free */
	struct gs_obj **owner;		/* --numa over 2+ nodes, a head block:
					 * per slot, the linked object whose
					 * bytes it holds (numa_topo.h) */
	uint32_t owned;			/* slots with an owner */
	uint32_t hits;			/* --numa: heat (numa_topo.h) */
	uint32_t promoted_in;		/* --numa: 1 + the round that moved it
					 * into the home share, 0: none */
};

struct region_class {
	uint64_t slot;			/* slot size */
	uint32_t nslots;		/* per block */
	uint32_t partial;		/* first block with a free slot */
};

/* One arena block's bookkeeping (arena.c), by block number. */
struct arena_block {
	uint32_t used;			/* append point: entries below it */
	uint32_t live;			/* bytes of live entries */
	uint32_t nlive;			/* live entries */
};

/* How many victims blocked by pinned entries allocation pressure passes
 * over before it evicts (each a different one). */
#define ARENA_SKIPS	8

/* The byte-granular arena of objects smaller than --ram-head (arena.c). */
struct arena {
	struct arena_block *blocks;		/* by block number */
	uint32_t nblocks;		/* arena blocks in use */
	uint32_t cur;			/* where new objects go, UINT32_MAX none */
	uint32_t dst;			/* where compaction moves them */
	uint32_t victim;		/* being emptied, UINT32_MAX none */
	uint32_t vpos;			/* next entry of <victim> to look at */
	/* the last ARENA_SKIPS victims a pinned entry held, left aside */
	uint32_t skip[ARENA_SKIPS];
	unsigned nskip;			/* skip[nskip % ARENA_SKIPS] next */
	bool victim_blocked;		/* a pinned entry was passed this lap */
	uint64_t used;			/* sum of blocks' used */
	uint64_t live;			/* sum of blocks' live */
	uint64_t compactions, moved, blocked, released;
	uint64_t max_us, max_cpu_us;	/* longest hold for compaction */
	struct gs_engine *e;		/* set when the first arena block is taken */
	pthread_t thread;		/* the compactor, started then */
	pthread_cond_t wake;		/* with the engine lock */
	/* blocks the compactor drops with the lock dropped: not free yet, not
	 * on r->drops either; <dropped> says when they are (engine lock) */
	unsigned dropping;
	pthread_cond_t dropped;
	bool running, stop;
};

struct region {
	int fd;
	void *base;
	uint64_t size;
	uint64_t block;
	bool hugetlb;
	bool mlock;			/* lock head blocks at start, arena blocks
					 * as they are taken */
	uint32_t nblocks;
	struct region_block *blocks;
	uint32_t head_blocks, head_blocks_max;
	uint32_t small_blocks, small_blocks_max;
	uint32_t drops;			/* given-back arena blocks to drop, linked
					 * by next_partial; UINT32_MAX: none */
	struct region_class cls[REGION_CLASSES];
	uint64_t used;
	struct numa_topo numa;		/* --numa: the node shares */
	struct arena arena;
};

/* ---- disk pools: one per tier, dirs striped ---- */

struct pool_dir {
	char *path;
	int fd;				/* extents file, O_DIRECT */
	int marker_fd;			/* holds the flock while we run */
	int dfd;			/* the dir itself, trusted (dirtrust) */
	int fixed;			/* index among the registered files */
	uint64_t grown;			/* bytes the extents file holds */
	dev_t dev;			/* the file system it is on */
	uint64_t id;			/* the store identity its marker holds */
};

struct pool {
	enum gs_tier tier;
	unsigned ndirs;
	struct pool_dir dirs[GS_MAX_DIRS];
	uint64_t size;			/* logical capacity */
	uint64_t per_dir;
	uint64_t stripe;
	uint32_t align;
	uint64_t units;			/* size / align */
	uint64_t *usedmap;		/* bit set = unit allocated */
	uint64_t cursor;		/* next-fit hint */
	uint64_t used;			/* bytes allocated */
	uint64_t step;			/* growth of each dir's file at a time */
	uint64_t backed;		/* [0, backed) is in the files */
	bool grow_failed;		/* logged; cleared by a growth */
	/* a growth leaves <reserve> bytes free on file system <reserve_dev>
	 * (the journal's; set by journal.c) */
	uint64_t reserve;
	dev_t reserve_dev;
};

/* A chunk spans at most GS_MAX_PIECES stripes: with GS_HDD_CHUNK and a
 * stripe of GS_MIN_STRIPE, 16 whole ones and one cut across a boundary. */
#define GS_MAX_PIECES	32
#define GS_MIN_STRIPE	(64u << 10)

/* A piece of a chunk on one dir: what a single read or write covers. */
struct stripe_piece {
	int dir;
	uint64_t off;
	uint32_t len;
	uint32_t buf_off;		/* where it starts in the chunk buffer */
};

/* ---- the index ---- */

/*
 * A chunk of an object's bytes on one tier.  Its space is part of a run:
 * chunks that lie back to back on one tier's pool, each but the last a
 * whole tier chunk.  A record holds one address per run (the writer
 * reserves an object's chunks on a tier as one run, a fragmented pool
 * splits it); chunk_addr() derives a chunk's own.  A RAM chunk (an engine
 * without pools) is a run of its own: its head slot.
 */
struct chunk {
	uint64_t sum;			/* xxh3 of the data bytes */
	uint32_t len;			/* data bytes */
	uint32_t run : 24;		/* its run: runs go in chunk order */
	uint32_t tier : 8;
};
#define GS_MAX_RUNS	(1u << 24)

/*
 * A record.  An object past the RAM limit on an engine with pools lives
 * whole on disk (on_disk): its chunks cover [0, size) and its head, when
 * cached, is a copy in the region that may be dropped when nobody holds a
 * pin.  Otherwise the head is the object's own bytes [0, head_len), and
 * RAM chunks (an engine without pools) follow it.
 */
struct gs_obj {				/* gs_obj is its public name */
	struct gs_obj *hnext;
	struct gs_meta meta;
	uint32_t refs;			/* pins, plus one while linked
					 * (atomic: index.h) */
	uint32_t clock_pos;
	uint32_t nchunks;
	uint8_t klen;
	bool on_disk;			/* fixed at creation, read unlocked */
	bool recovered;			/* linked by recovery, its attributes
					 * not set since (atomic) */
	bool linked;			/* written under e->lock, read
					 * without it (atomic) */
	bool referenced;		/* used since the CLOCK passed
					 * (atomic: set by lockless hits) */
	bool head_referenced:1;		/* these under e->lock; */
					/* cached head: second chance */
	bool head_loading:1;		/* a read is bringing its head in */
	bool has_head:1;		/* meta.head_off holds its head */
	bool has_attr:1;		/* e->attrs holds its attributes */
	bool fill:1;			/* a fill's grid (fill.h), never linked */
	bool cp_done:1;			/* journal.h's struct journal_bg */
	char key[];			/* then, 8-aligned, with chunks: */
};

/* What a record with chunks (every on-disk object) holds after its key:
 * its place in the head cache, then its chunks, then the address of each
 * of their runs (uint64_t, UINT64_MAX until reserved; obj_runs()). */
struct obj_disk {
	uint32_t head_pos;		/* in e->heads; UINT32_MAX: none cached */
	uint16_t seen_epoch;		/* head CLOCK lap of the last head miss */
	uint16_t read_epoch;		/* chunk CLOCK lap of the last stream */
	struct ramchunk **ram;		/* per chunk, cached in RAM; NULL: none */
	struct chunk chunks[];
};

/* A chunk of an on-disk object cached in RAM (ramchunk.c): its bytes in
 * head slots of the region, slot-sized pieces in order.  Readable once
 * published; never dropped while its object is pinned. */
struct ramchunk {
	struct gs_obj *obj;
	uint32_t chunk;
	uint32_t clock_pos;		/* in e->ramchunks; UINT32_MAX: off it */
	bool published;
	bool referenced;		/* used since the hand passed */
	uint32_t nslots;
	uint64_t len;			/* chunk bytes */
	uint64_t off[];			/* region offset of each slot */
};

/* ---- measurements (measure.c) ---- */

/* Samples in buckets four to an octave (2^(i/4)): two windows of
 * MEASURE_WINDOW_NS, the older one dropped when a new one starts. */
#define MEASURE_BUCKETS	128
#define MEASURE_WINDOW_NS	(1000ull * 1000000)

struct measure_hist {
	uint64_t epoch[2];		/* mono_ns() / MEASURE_WINDOW_NS of each */
	uint64_t win[2][MEASURE_BUCKETS];	/* window of epoch E: [E & 1] */
};

struct measure {
	struct measure_hist io[GS_TIERS];	/* read completion, ns */
	struct measure_hist rate;		/* delivery, bytes/s */
};

/* Objects' attributes by record (attr.c). */
struct attr_table {
	struct attr **buckets;
	uint32_t nbuckets;		/* a power of two; 0: none yet */
	uint32_t n;			/* records with attributes */
};

struct gs_engine {
	struct gs_config cfg;
	char *dirs_copy[2 * GS_MAX_DIRS];
	pthread_mutex_t lock;
	struct region region;
	struct pool pools[GS_TIERS];	/* [GS_TIER_RAM] unused */
	bool has_pool[GS_TIERS];
	struct gs_obj **buckets;	/* the index (index.c); growing: the new table */
	uint64_t nbuckets;		/* a power of two */
	struct gs_obj **old_buckets;	/* growing: the table being moved, of
					 * nbuckets / 2; NULL: not growing */
	uint64_t rehash_pos;		/* old_buckets below it moved (empty) */
	struct gs_obj **clock;
	uint32_t clock_len, clock_cap, clock_hand;
	struct gs_obj **heads;		/* the head CLOCK: cached heads */
	uint32_t heads_len, heads_cap, heads_hand;
	uint16_t heads_epoch;		/* laps of heads_hand, from 1 (wraps) */
	struct ramchunk **ramchunks;	/* the chunk CLOCK: cached chunks */
	uint32_t ramchunks_len, ramchunks_cap, ramchunks_hand;
	uint16_t ramchunks_epoch;	/* laps of ramchunks_hand, from 1 (wraps) */
	struct journal *journal;
	uint64_t next_cas;
	uint64_t store_id;		/* gs_engine_identity() */
	struct attr_table attrs;
	int64_t invalid_at;		/* see gs_invalidate() */
	int nfiles;
	int files[2 * GS_MAX_DIRS];	/* fds to register in each gs_io */
	struct gs_stats st;
	struct measure measure;
	pthread_mutex_t io_lock;	/* guards io_list */
	struct list io_list;		/* of struct gs_io, by engine_node */
	struct list fills;		/* of struct fill: shared, filling
					 * (fill.c; under e->lock) */
	/* lockless lookups (lookup.c, epoch.c) */
	uint64_t index_seq;		/* odd while chains or unpinned bytes
					 * move; bumped under e->lock */
	uint64_t epoch;			/* bumped by each retirement */
	struct epoch_slot *epoch_slots;	/* EPOCH_SLOTS, one per reader */
	struct epoch_retired *retired;	/* EPOCH_RETIRED_MAX, under e->lock */
	uint32_t nretired;
};

#endif /* GOBLIN_ENGINE_T_H */
