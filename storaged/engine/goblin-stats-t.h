/*
 * The engine's counters, declared once as X-macro tables, and the structs
 * the stats calls of goblin.h fill.  The daemon's emitter (storaged/stats.c)
 * walks the same tables for `stats goblin`, the nginx link's STATS reply and
 * `--help=stats`; the order of a table is the order on the wire.
 *
 *   GS_STATS      gs_stats()        struct gs_stats
 *   ARENA_STATS   gs_arena_stats()  struct gs_arena_stats
 *   NUMA_STATS,   gs_numa_stats()   struct gs_numa_stats (--numa only)
 *   NUMA_PROMOTION_STATS, NUMA_NODE_STATS
 */
#ifndef GOBLIN_ENGINE_STATS_T_H
#define GOBLIN_ENGINE_STATS_T_H

#include <stdint.h>

#define GS_NUMA_MAX_NODES 64

/* ACTION(name, description): every counter the engine keeps. */
#define GS_STATS(ACTION)						\
	ACTION(curr_items, "objects stored now")				\
	ACTION(total_items, "objects stored since start")		\
	ACTION(bytes, "object bytes stored now")				\
	ACTION(ram_head_bytes, "object bytes in the RAM region")		\
	ACTION(ram_head_objects, "objects with bytes in the RAM region")	\
	ACTION(ssd_bytes, "object bytes on the SSD pool")		\
	ACTION(ssd_objects, "objects with bytes on the SSD pool")	\
	ACTION(hdd_bytes, "object bytes on the HDD pool")		\
	ACTION(hdd_objects, "objects with bytes on the HDD pool")	\
	ACTION(ram_region_bytes, "size of the RAM region")		\
	ACTION(ram_used_bytes, "RAM region bytes allocated to objects")	\
	ACTION(ssd_pool_bytes, "SSD pool capacity")			\
	ACTION(ssd_used_bytes, "SSD pool bytes allocated to extents")	\
	ACTION(hdd_pool_bytes, "HDD pool capacity")			\
	ACTION(hdd_used_bytes, "HDD pool bytes allocated to extents")	\
	ACTION(index_bytes, "bytes the index takes: `index_record_bytes` + `index_table_bytes` + `index_attr_bytes`") \
	ACTION(index_record_bytes, "bytes of index records as malloc holds them: record, key and chunk extents, plus malloc's header and rounding") \
	ACTION(index_table_bytes, "bytes of the index's arrays: hash buckets, the CLOCK, the head CLOCK and the chunk CLOCK, at their capacity") \
	ACTION(index_attr_bytes, "bytes of objects' attributes as malloc holds them, plus their table's buckets (an object without attributes takes none)") \
	ACTION(attr_objects, "objects with attributes now") \
	ACTION(io_buffer_bytes, "bytes of I/O buffers resident now (each gs_io's: faulted in on first use, given back after 1 s unused)") \
	ACTION(io_buffer_returns, "I/O buffers given back after 1 s unused (unregistered, their pages dropped)") \
	ACTION(lookup_hits, "lookups that found an object, every front's: memcache gets, nginx's LOOKUPs, RDMA gets, append/prepend (memcache's alone: `stats`' get_hits)") \
	ACTION(lookup_misses, "lookups that found nothing, every front's")	\
	ACTION(lookup_expired, "of `lookup_misses`, those that found an expired object") \
	ACTION(lookup_flushed, "of `lookup_misses`, those that found an object flush_all invalidated") \
	ACTION(evictions, "objects evicted for room")			\
	ACTION(expired_unfetched, "expired objects reclaimed")		\
	ACTION(admission_bytes, "bytes accepted but not yet on disk")	\
	ACTION(admission_waits, "times a writer waited for admission")	\
	ACTION(writer_reclaims, "write buffers taken from writers whose client stalled mid-chunk (its bytes kept in the heap)") \
	ACTION(append_retries, "append/prepend values built again: another write replaced the value they were built from") \
	ACTION(readahead_chunks, "disk chunks read ahead of the sender")	\
	ACTION(readahead_max_depth, "most chunks in flight for one stream")\
	ACTION(readahead_reclaims, "windows taken from streams whose consumer stalled")\
	ACTION(delivery_stalls, "times a consumer waited over 10 ms for a chunk after its first byte") \
	ACTION(delivery_rate, "bytes/s the fastest tenth of streams' consumers drained at, over the last one to two seconds") \
	ACTION(hdd_read_p99_us, "99th percentile of HDD chunk reads' completion time (queueing included) over the last one to two seconds, microseconds") \
	ACTION(ssd_read_p99_us, "the same for SSD chunk reads, microseconds") \
	ACTION(prefix_next_bytes, "the SSD prefix a new object gets now: delivery_rate x hdd_read_p99_us less the head, within --ssd-prefix (from the last ones measured when the store is idle)") \
	ACTION(prefix_bytes, "SSD prefix bytes (past the head) of the objects stored with an HDD tail, summed: over the prefix_objects_* counts, their mean prefix") \
	ACTION(prefix_objects_0, "objects stored with an HDD tail and no SSD prefix: the head alone hides the HDD's latency") \
	ACTION(prefix_objects_le_256k, "objects stored with an HDD tail and an SSD prefix of 256 KiB") \
	ACTION(prefix_objects_le_512k, "objects stored with an HDD tail and an SSD prefix of 512 KiB") \
	ACTION(prefix_objects_le_1m, "objects stored with an HDD tail and an SSD prefix of 768 KiB or 1 MiB") \
	ACTION(prefix_objects_gt_1m, "objects stored with an HDD tail and an SSD prefix over 1 MiB") \
	ACTION(early_reads, "first chunks read for a request still waiting for a read-ahead window") \
	ACTION(disk_reads, "disk chunk reads completed")			\
	ACTION(disk_read_bytes, "bytes read from the pools")		\
	ACTION(disk_writes, "disk chunk writes completed")		\
	ACTION(disk_write_bytes, "bytes written to the pools")		\
	ACTION(checksum_errors, "chunks whose checksum did not match")	\
	ACTION(io_errors, "disk reads or writes that failed")		\
	ACTION(short_ios, "short reads or writes resubmitted")		\
	ACTION(hdd_cancels, "HDD reads dropped unsent from the --hdd-queue because their stream closed") \
	ACTION(pins, "pins held by readers now")				\
	ACTION(objects, "objects stored now, in RAM or on disk")		\
	ACTION(ram_heads, "heads of on-disk objects cached in the RAM region") \
	ACTION(head_hits, "lookups of an on-disk object whose head was in RAM") \
	ACTION(head_misses, "lookups of an on-disk object whose head was not in RAM") \
	ACTION(head_admissions, "heads copied into RAM")			\
	ACTION(head_evictions, "heads dropped from RAM for room (the objects stay)") \
	ACTION(ram_chunks, "further chunks of on-disk objects cached in the RAM region (in head slots heads leave free)") \
	ACTION(ram_chunk_bytes, "object bytes those chunks hold") \
	ACTION(chunk_hits, "disk chunks streams took from RAM instead of reading them") \
	ACTION(chunk_hit_bytes, "bytes streams handed out from those chunks") \
	ACTION(chunk_admissions, "chunks copied into RAM after a read, or as a fill's write lands") \
	ACTION(chunk_evictions, "cached chunks dropped from RAM for room (for a head, or a hotter chunk; the objects stay)") \
	ACTION(disk_evictions, "objects evicted for disk room")		\
	ACTION(extent_splits, "extra runs a new object's chunks on a disk tier took because no free run of the pool held them whole (0: every object is one run per tier)") \
	ACTION(recovered_objects, "objects recovered from the pools at start") \
	ACTION(recovery_ms, "milliseconds the start-up recovery took")	\
	ACTION(journal_bytes, "bytes in the index journal now")		\
	ACTION(journal_records, "records in the index journal now (a checkpoint rewrites it with the live ones)")	\
	ACTION(checkpoints, "index checkpoints written")			\
	ACTION(journal_skipped, "damaged journal stretches --journal-salvage skipped at start (the objects they name are dropped and logged)") \
	ACTION(journal_no_room, "times the journal's file system had no room for a record: the store was refused (deletes, evictions and touches keep room of their own)") \
	ACTION(syncs, "group-committed fdatasyncs")

struct gs_stats {
#define GS_STAT_FIELD(name, desc) uint64_t name;
	GS_STATS(GS_STAT_FIELD)
#undef GS_STAT_FIELD
};

/* ARENA_STAT(name, description): `stats goblin` after POOL_STATS, from
 * gs_arena_stats() (arena.c): the byte-granular arena of the objects
 * smaller than --ram-head.  Entry bytes count an 8-byte header and the
 * value rounded up to 8. */
#define ARENA_STATS(ACTION)						\
	ACTION(arena_segments, "arena blocks (--block bytes each) the arena holds now")	\
	ACTION(arena_bytes_live, "bytes of live entries (values, headers, padding)") \
	ACTION(arena_bytes_dead, "bytes of freed entries and sealed tails not yet compacted away") \
	ACTION(arena_bytes_free, "bytes at the arena blocks' ends, ready for appends") \
	ACTION(arena_fragmentation_permille, "`arena_bytes_dead` per thousand of live plus dead") \
	ACTION(arena_compactions, "arena blocks compaction emptied and gave back") \
	ACTION(arena_bytes_moved, "value bytes compaction copied")	\
	ACTION(arena_compaction_max_us, "the longest stretch of compaction under one hold of the engine lock, microseconds (wall clock: a holder preempted on a busy box counts)") \
	ACTION(arena_compaction_max_cpu_us, "the same stretch in the holder's CPU time, microseconds") \
	ACTION(arena_compaction_blocked, "compaction laps that left an arena block for later: a pinned object (or one being written) was in it") \
	ACTION(arena_segments_released, "arena blocks given back to the region (unlocked, dropped from the mapping)")

struct gs_arena_stats {
#define ARENA_STAT_FIELD(name, desc) uint64_t name;
	ARENA_STATS(ARENA_STAT_FIELD)
#undef ARENA_STAT_FIELD
};

/* NUMA_STAT(name, description): after GS_STATS (`stats goblin`, the
 * link's STATS) when the snapshot's numa.nodes is not 0 (--numa), then
 * NUMA_PROMOTION_STATS; NUMA_NODE_STAT(name, description): then
 * numa_node<N>_<name> for each node N by id. */
#define NUMA_STATS(ACTION)						\
	ACTION(nodes, "NUMA nodes with a node share (simulated ones in the test build)") \
	ACTION(region0_node, "the home node, whose share fills first: --numa's, the farthest with --perverse") \
	ACTION(misplaced_blocks, "blocks in use whose memory the kernel holds off their share's node (move_pages)")
/* NUMA_PROMOTION_STAT(name, field of numa_promotion_stats, description) */
#define NUMA_PROMOTION_STATS(ACTION)					\
	ACTION(promotions, promotions, "head blocks the promotion thread moved into the home share") \
	ACTION(promotion_bytes, bytes, "bytes those moves copied, both ways (a swap copies two blocks)") \
	ACTION(promotion_time_us, time_us, "microseconds spent moving blocks (engine lock held)") \
	ACTION(promotion_max_us, max_us, "the longest single move, microseconds") \
	ACTION(promotion_pinned, pinned, "hot blocks left where they were for a round: an object in them was pinned") \
	ACTION(promotion_rounds, rounds, "promotion rounds run (every 100 ms; none with --no-numa-promotion)")
#define NUMA_NODE_STATS(ACTION)						\
	ACTION(bytes, "RAM region bytes allocated on node N: its share, and on the home node the --sub-memory blocks") \
	ACTION(blocks, "--block blocks in use on node N, counted as its bytes are") \
	ACTION(hits, "lookups answered from a slot in node N's share (small blocks count as the home share's)")

/* What promotion did (`stats goblin` numa_promotion*). */
struct numa_promotion_stats {
	uint64_t promotions;		/* blocks moved to the home share */
	uint64_t bytes;			/* logical copy traffic, both ways */
	uint64_t time_us, max_us;
	uint64_t pinned;		/* hot blocks skipped: a pin in them */
	uint64_t rounds;
};

/* What `stats goblin` reports with --numa, per node (by node id). */
struct gs_numa_stats {
	uint64_t nodes;			/* 0: no --numa (nothing reported) */
	uint64_t region0_node;
	uint64_t misplaced_blocks;	/* blocks in use not on their node */
	struct numa_promotion_stats prom;
	uint64_t bytes[GS_NUMA_MAX_NODES];
	uint64_t blocks[GS_NUMA_MAX_NODES];
	uint64_t hits[GS_NUMA_MAX_NODES];
};

#endif /* GOBLIN_ENGINE_STATS_T_H */
