/*
 * Engine internals shared by region.c (RAM), pool.c (disk), layout.c (tier
 * split, chunks, allocation), index.c (hash index, pins, CLOCK), engine.c
 * (open, close, stats) and the I/O layer (streams, writers).  Not part of
 * the API.
 *
 * Locking: e->lock guards the index, the CLOCK, both allocators and every
 * record's refs/linked state.  Counters are updated with atomics.
 */
#ifndef GOBLIN_ENGINE_H
#define GOBLIN_ENGINE_H

#include <pthread.h>
#include <sys/types.h>

#include "goblin.h"
#include "list.h"
#include "numa_topo.h"

#define STAT_ADD(e, name, n) \
	__atomic_fetch_add(&(e)->st.name, (n), __ATOMIC_RELAXED)
#define STAT_SUB(e, name, n) \
	__atomic_fetch_sub(&(e)->st.name, (n), __ATOMIC_RELAXED)
#define STAT_MAX(e, name, v)						\
	do {								\
		uint64_t cur_ = __atomic_load_n(&(e)->st.name, __ATOMIC_RELAXED); \
		while ((uint64_t)(v) > cur_ &&				\
		       !__atomic_compare_exchange_n(&(e)->st.name, &cur_, (v), \
				false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) \
			;						\
	} while (0)

static inline uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

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

/* The byte-granular arena of objects smaller than --ram-head (arena.c). */
struct arena {
	struct arena_block *blocks;		/* by block number */
	uint32_t nblocks;		/* arena blocks in use */
	uint32_t cur;			/* where new objects go, UINT32_MAX none */
	uint32_t dst;			/* where compaction moves them */
	uint32_t victim;		/* being emptied, UINT32_MAX none */
	uint32_t vpos;			/* next entry of <victim> to look at */
	uint32_t skip;			/* a pinned entry held it last lap */
	bool victim_blocked;		/* a pinned entry was passed this lap */
	uint64_t used;			/* sum of blocks' used */
	uint64_t live;			/* sum of blocks' live */
	uint64_t compactions, moved, blocked, released;
	uint64_t max_us, max_cpu_us;	/* longest hold for compaction */
	struct gs_engine *e;		/* set when the first arena block is taken */
	pthread_t thread;		/* the compactor, started then */
	pthread_cond_t wake;		/* with the engine lock */
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
/* With --numa: counts a lookup served from the slot at <off>. */
void region_hit(struct region *r, uint64_t off);
/* Exchanges head blocks <a> and <b>, bytes and slot tables (<b> may be
 * free, <a> not; neither an arena block); the caller moves every offset
 * into them.  Returns the bytes copied. */
uint64_t region_swap_blocks(struct region *r, uint32_t a, uint32_t b);

/* ---- arena.c ---- */

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

/* ---- disk pools: one per tier, dirs striped ---- */

struct pool_dir {
	char *path;
	int fd;				/* extents file, O_DIRECT */
	int marker_fd;			/* holds the flock while we run */
	int dfd;			/* the dir itself, trusted (dirtrust) */
	int fixed;			/* index among the registered files */
	uint64_t grown;			/* bytes the extents file holds */
	dev_t dev;			/* the file system it is on */
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

/* Opens (creating) a pool; its files keep their size and grow as space is
 * handed out.  <fresh>: wipe what the dirs hold (only dirs whose marker is
 * this pool's) and accept a pool of another format or stripe unit. */
int pool_open(struct pool *p, enum gs_tier tier, const char *const *dirs,
	      unsigned ndirs, uint64_t size, uint64_t stripe,
	      uint64_t min_size, bool fresh, char *err, size_t errlen);
void pool_close(struct pool *p);
/* Allocates <len> contiguous bytes (rounded to align), from space the
 * files hold if it can, else growing them (in smaller steps near the end
 * of their file systems, never into <reserve>): 0 and <*addr>, or -ENOSPC
 * (the pool is full, or its file system is). */
int pool_alloc(struct pool *p, uint64_t len, uint64_t *addr);
/* Marks [<addr>, <addr>+<len>) allocated (recovery), growing the files to
 * cover it if they do not: 0, -EINVAL when it is outside the pool,
 * misaligned or already taken, or -ENOSPC when the files cannot grow. */
int pool_claim(struct pool *p, uint64_t addr, uint64_t len);
void pool_free(struct pool *p, uint64_t addr, uint64_t len);
/* Splits [<addr>, <addr>+<len>) at stripe boundaries into <pieces> (at most
 * <max>); returns how many, or -E2BIG. */
int pool_pieces(const struct pool *p, uint64_t addr, uint32_t len,
		  struct stripe_piece *pieces, int max);

/* ---- the index ---- */

struct chunk {
	uint64_t addr;			/* logical address in its tier's pool */
	uint64_t sum;			/* xxh3 of the data bytes */
	uint32_t len;			/* data bytes */
	uint8_t tier;
};

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
	uint32_t refs;			/* pins, plus one while linked */
	uint32_t clock_pos;
	uint32_t nchunks;
	uint8_t klen;
	bool on_disk;			/* fixed at creation, read unlocked */
	bool linked:1;			/* these under e->lock */
	bool referenced:1;
	bool head_referenced:1;		/* cached head: second chance */
	bool head_loading:1;		/* a read is bringing its head in */
	bool has_head:1;		/* meta.head_off holds its head */
	char key[];			/* then, 8-aligned, with chunks: */
};

/* What a record with chunks (every on-disk object) holds after its key:
 * its place in the head cache, then its chunk extents. */
struct obj_disk {
	uint32_t head_pos;		/* in e->heads; UINT32_MAX: none cached */
	uint32_t seen_epoch;		/* head CLOCK lap of the last head miss */
	struct chunk chunks[];
};

static inline size_t obj_key_end(size_t klen)
{
	return (offsetof(struct gs_obj, key) + klen + 7) & ~(size_t)7;
}

/* <obj>'s struct obj_disk; only when obj->nchunks. */
static inline struct obj_disk *obj_disk(const struct gs_obj *obj)
{
	return (struct obj_disk *)((char *)obj + obj_key_end(obj->klen));
}

static inline struct chunk *obj_chunks(const struct gs_obj *obj)
{
	return obj_disk(obj)->chunks;
}

struct gs_engine {
	struct gs_config cfg;
	char *dirs_copy[2 * GS_MAX_DIRS];
	pthread_mutex_t lock;
	struct region region;
	struct pool pools[GS_TIERS];	/* [GS_TIER_RAM] unused */
	bool has_pool[GS_TIERS];
	struct gs_obj **buckets;
	uint64_t nbuckets;
	struct gs_obj **clock;
	uint32_t clock_len, clock_cap, clock_hand;
	struct gs_obj **heads;		/* the head CLOCK: cached heads */
	uint32_t heads_len, heads_cap, heads_hand;
	uint32_t heads_epoch;		/* laps of heads_hand, from 1 */
	bool head_admit_any;		/* GOBLIN_TEST_HEAD_ADMIT=any: every
					 * miss admits (the policy's measure) */
	struct journal *journal;
	uint64_t next_cas;
	int64_t invalid_at;		/* see gs_invalidate() */
	int nfiles;
	int files[2 * GS_MAX_DIRS];	/* fds to register in each gs_io */
	struct gs_stats st;
	pthread_mutex_t io_lock;	/* guards io_list */
	struct list io_list;		/* of struct gs_io, by engine_node */
};

/* Bytes one malloc'd record of a <klen>-byte key and <nchunks> chunks
 * asks for: the record and key, rounded to 8, then, with chunks, struct
 * obj_disk and the extents. */
static inline uint64_t engine_record_size(size_t klen, uint32_t nchunks)
{
	return obj_key_end(klen) + (nchunks ? sizeof(struct obj_disk) +
				     (uint64_t)nchunks * sizeof(struct chunk) : 0);
}

/* <obj>'s head in the RAM region of <e>; NULL when it has none. */
static inline void *obj_head_ptr(const struct gs_engine *e,
				 const struct gs_obj *obj)
{
	return obj->has_head ? (char *)e->region.base + obj->meta.head_off :
	       NULL;
}

/* Points <obj>'s head at region offset <off>: the one place the arena
 * writes a record's location. */
static inline void obj_set_head(struct gs_engine *e, struct gs_obj *obj,
				uint64_t off)
{
	(void)e;			/* the head is found from the offset */
	obj->meta.head_off = off;
	obj->has_head = true;
}

/* The RAM/disk boundary (cfg.ram_head): the most bytes of an object RAM
 * holds.  On an engine with pools a larger object lives whole on disk (its
 * head a cached copy); a smaller one lives whole in RAM. */
static inline uint64_t engine_ram_limit(const struct gs_engine *e)
{
	return e->cfg.ram_head;
}

/* The head length of an object of <size>: min(size, the RAM limit). */
static inline uint64_t engine_head_len(const struct gs_engine *e,
				       uint64_t size)
{
	return size < engine_ram_limit(e) ? size : engine_ram_limit(e);
}

/* ---- layout.c ---- */

/* Creates an unlinked record for <key> sized <size>, with no space yet
 * (writers reserve each part as its bytes arrive).  No lock needed;
 * returns 0, -E2BIG or -ENOMEM. */
int engine_new_record(struct gs_engine *e, const void *key, size_t klen,
		      uint64_t size, struct gs_obj **objp);
/* Allocates the space of part <i> of <obj> (-1: the RAM head, else chunk
 * <i>), evicting for room; a no-op when it has its space.  Called with
 * e->lock held; returns 0 or -ENOMEM. */
int engine_reserve_part(struct gs_engine *e, struct gs_obj *obj, int64_t i);
/* engine_new_record() with every part reserved.  Called with e->lock held;
 * returns 0 or -errno. */
int engine_reserve(struct gs_engine *e, const void *key, size_t klen,
		   uint64_t size, struct gs_obj **objp);
/* A zeroed record for <key> with room for <nchunks> chunks, refs 1; the
 * caller fills meta and chunks (recovery).  NULL without memory. */
struct gs_obj *engine_record_alloc(const void *key, size_t klen,
				   uint32_t nchunks);
/* Frees <obj> and the space it holds.  Called with e->lock held. */
void engine_free_record(struct gs_engine *e, struct gs_obj *obj);
/* Object byte offset where chunk <i> starts. */
uint64_t engine_chunk_start(const struct gs_obj *obj, uint32_t i);
/* Bytes of one max_object that land on tier <t>, in whole 4K pages. */
uint64_t engine_max_on_tier(const struct gs_engine *e, enum gs_tier t);

/* ---- index.c ---- */

/*
 * What the index costs (stats index_bytes): per record, what glibc's
 * malloc takes for a request of <n> bytes -- the request plus its size
 * word, rounded to 16, at least 32 (engine_malloc_bytes); per engine, the
 * bucket, CLOCK and head-CLOCK arrays at their capacity.
 */
uint64_t engine_malloc_bytes(uint64_t n);
uint64_t engine_record_bytes(const struct gs_obj *obj);
uint64_t engine_index_table_bytes(const struct gs_engine *e);

/* Links <obj> if <cond> holds (<cas> for GS_IF_CAS and GS_IF_BASE),
 * replacing an older record (then *<replaced>, when not NULL, is set).
 * Called with e->lock held; returns 0, -EEXIST, -ENOENT or -ENOMEM. */
int engine_link(struct gs_engine *e, struct gs_obj *obj, enum gs_if cond,
		uint64_t cas, bool *replaced);
/* Links a recovered <obj> as it is (its CAS, mtime and space kept, nothing
 * journaled), replacing any record of its key.  e->lock held; 0 or
 * -ENOMEM. */
int engine_link_recovered(struct gs_engine *e, struct gs_obj *obj);
/* Drops a reference; frees the record and its space at zero.
 * Called with e->lock held. */
static inline void engine_unref(struct gs_engine *e, struct gs_obj *obj)
{
	if (--obj->refs == 0)
		engine_free_record(e, obj);
}
/* Unlinks <obj> from the index if it is still there (a broken object).
 * Takes e->lock. */
void engine_drop(struct gs_engine *e, struct gs_obj *obj);
/* Unlinks every object.  Called with e->lock held. */
void engine_unlink_all(struct gs_engine *e);
/* Evicts one object that holds room on tier <need> (GS_TIER_RAM: RAM other
 * than a cached head), CLOCK order; with <only_expired>, dead ones only
 * (any dead one).  Called with e->lock held; false when nothing could go. */
bool engine_evict_one(struct gs_engine *e, enum gs_tier need,
		      bool only_expired);

/* ---- heads.c: the head cache of on-disk objects ---- */

/* Bytes of <obj> a cached head holds: engine_head_len() of its size. */
uint64_t engine_head_bytes(const struct gs_engine *e, const struct gs_obj *obj);

/* A head slot: 0 and <*off>, or -ENOMEM; with <drop>, cached heads are
 * dropped for it (layout.c). */
int engine_head_alloc(struct gs_engine *e, bool drop, uint64_t *off);
/* Drops one cached head, CLOCK order, never a pinned object's; false when
 * none could go. */
bool engine_head_drop_one(struct gs_engine *e);
/* Takes <obj>'s head off the CLOCK (it is being unlinked). */
void engine_head_forget(struct gs_engine *e, struct gs_obj *obj);
/* On a head miss of linked <obj>: whether to bring its head in, by the
 * admission policy; true with a slot at <*off> and obj->head_loading set,
 * to end with engine_head_publish() or engine_head_cancel(). */
bool engine_head_want(struct gs_engine *e, struct gs_obj *obj, uint64_t *off);
/* The head bytes are at <off>: caches them as <obj>'s head (or frees the
 * slot when <obj> has gone or has a head). */
void engine_head_publish(struct gs_engine *e, struct gs_obj *obj, uint64_t off);
void engine_head_cancel(struct gs_engine *e, struct gs_obj *obj, uint64_t off);

/* ---- engine.c ---- */

/*
 * A crash point for the restart tests: when the environment has
 * GOBLIN_TEST_CRASH=<point>[:<n>], the process kills itself (SIGKILL) the
 * <n>th time (default 1) it passes <point>.  Points: chunk-write (a chunk
 * write completed, the object not finished), before-journal (every chunk
 * on disk, the record not journaled), after-journal (journaled, not yet
 * acknowledged), recovery (a record replayed at start), checkpoint (a
 * checkpoint written, not yet renamed over the journal), after-checkpoint
 * (renamed: the append that weighed it not yet made).
 */
void engine_crash_point(const char *point);

/* ---- writer.c: waking gs_io threads ---- */

/* Wakes the gs_io threads with stores waiting for admission room. */
void writer_wake_admission(struct gs_engine *e);
/* After a sync: wakes the gs_io threads with stores waiting for one. */
void writer_wake_synced(struct gs_engine *e);

#endif
