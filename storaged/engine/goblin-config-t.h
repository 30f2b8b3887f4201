/*
 * The engine's configuration, declared once: this table makes struct
 * gs_config's fields and gs_config_init()'s defaults, and goblin-store's
 * options table (storaged/options.h) is made from it, so a field and its
 * flag share one name (`ram_head` is --ram-head).
 *
 *   GS_CONFIG(ACTION) --+--> struct gs_config     (a field per entry)
 *                       +--> gs_config_init()     (the defaults, parsed)
 *                       +--> OPTIONS (daemon)     (--help, parsing, `stats
 *                                                  settings`, README)
 *
 * ACTION(name, kind, default, min, max, "description")
 *   kind: SIZE (bytes, K/M/G/T suffixes: shared/size.h), UINT, INT, DIRS
 *   (repeatable path, struct gs_dirs), BOOL (false unless given), TIME (a
 *   duration, ms/s/m/h/d suffixes, none = seconds; kept in milliseconds).
 *   default: as a user writes it.  min, max: the range a number must be in
 *   (0, 0: any); what else the engine requires of its config,
 *   gs_engine_open() checks.
 *
 * Two tables, in --help order: the RAM and the pools, then objects, NUMA
 * placement and the journal; the daemon's own options go between them.
 */
#ifndef GOBLIN_CONFIG_T_H
#define GOBLIN_CONFIG_T_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "ring-t.h"		/* RING_MAX_OBJECT_DEFAULT, nginx's too */

#define GS_IO_BUFFERS_MAX 64		/* a stream's read-ahead window, chunks */
#define GS_MAX_DIRS	16

#define GS_CONFIG_TIERS(ACTION)						\
	ACTION(memory, SIZE, "256M", 0, 0,				\
	       "RAM for heads and hot bytes: the cached heads of on-disk objects, RAM-only objects of --ram-head bytes or more, and in the slots those leave free further chunks of hot on-disk objects")		\
	ACTION(sub_memory, SIZE, "64M", 0, 0,				\
	       "RAM for objects smaller than --ram-head: the byte-granular arena, committed an arena block (--block bytes) at a time (taken from --memory when 0)")		\
	ACTION(block, SIZE, "2M", 0, 0,					\
	       "RAM allocation unit (one huge page): heads take fixed slots in blocks, smaller objects are packed in arena blocks") \
	ACTION(ram_head, SIZE, "256K", 0, 0,				\
	       "bytes of an object's start that RAM caches; objects up to this size are RAM-only (multiple of 4K)")		\
	ACTION(ssd_prefix, SIZE, "1M", 0, 0,				\
	       "most bytes after the head kept on the SSD pool when there is an HDD pool: each new object's prefix is what the HDD's measured latency at the measured delivery rate needs, up to this") \
	ACTION(fixed_prefix, BOOL, "false", 0, 0,			\
	       "every object's prefix is --ssd-prefix, not sized from the measured HDD latency and delivery rate") \
	ACTION(ssd_dir, DIRS, "", 0, 0,					\
	       "SSD pool directory; repeat to stripe (none: no SSD tier)")	\
	ACTION(hdd_dir, DIRS, "", 0, 0,					\
	       "HDD pool directory; repeat to stripe (none: the SSD pool holds tails)") \
	ACTION(ssd_size, SIZE, "1G", 0, 0,				\
	       "SSD pool capacity, split over its directories; their files grow to it as used") \
	ACTION(hdd_size, SIZE, "4G", 0, 0,				\
	       "HDD pool capacity, split over its directories; their files grow to it as used") \
	ACTION(stripe_unit, SIZE, "1M", 0, 0,				\
	       "striping unit across the directories of one pool (kept in its marker: changing it needs --fresh)")	\
	ACTION(io_buffers, UINT, "4", 1, GS_IO_BUFFERS_MAX,		\
	       "the most a request's read-ahead window grows to, in chunks (1M buffers)")	\
	ACTION(io_streams, UINT, "8", 1, 1024,				\
	       "requests per serving thread that can hold a full window at once") \
	ACTION(hdd_queue, UINT, "2", 0, 64,				\
	       "HDD reads a serving thread keeps in flight, a run of adjacent chunks (one seek) each; the others wait, the chunk a client needs soonest first (0: every read to the kernel at once)") \
	ACTION(no_mlock, BOOL, "false", 0, 0,				\
	       "do not lock the RAM region in memory")

#define GS_CONFIG_POLICY(ACTION)					\
	ACTION(max_object, SIZE, RING_MAX_OBJECT_DEFAULT, 1, INT64_MAX,	\
	       "largest object accepted")				\
	ACTION(admission_bytes, SIZE, "64M", 0, 0,			\
	       "bytes accepted but not yet on disk before writers are paused") \
	ACTION(no_evict, BOOL, "false", 0, 0,				\
	       "fail sets with SERVER_ERROR out of memory instead of evicting") \
	ACTION(numa, INT, "-1", -1, INT_MAX,				\
	       "serving threads on this NUMA node; one node share of --memory per node, filled from this node's (-1: none)") \
	ACTION(perverse, BOOL, "false", 0, 0,				\
	       "with --numa: the home share on the farthest node (a remote-memory control)") \
	ACTION(no_numa_promotion, BOOL, "false", 0, 0,			\
	       "with --numa: no promotion thread, head blocks stay where they were stored") \
	ACTION(fresh, BOOL, "false", 0, 0,				\
	       "start empty: wipe what the pools hold instead of recovering it, also a pool of another format or stripe unit (never a dir that is not a goblin-store pool)") \
	ACTION(journal_salvage, BOOL, "false", 0, 0,			\
	       "start past damaged records in the index journal: skip them, drop (and log) the objects they name, checkpoint what is left (a torn last record is cut without it)") \
	ACTION(sync_interval, TIME, "0", 0, 0,				\
	       "fdatasync the pools this often and hold acknowledgements until then, for power loss (0: never; process crashes lose nothing either way)") \
	ACTION(checkpoint_size, SIZE, "64M", 4096, INT64_MAX,		\
	       "rewrite the index journal as a checkpoint of the live objects once it has grown past this, or past twice the live records when that is more")

#define GS_CONFIG(ACTION) GS_CONFIG_TIERS(ACTION) GS_CONFIG_POLICY(ACTION)

/* A DIRS entry: <n> paths, in the order given. */
struct gs_dirs {
	const char *v[GS_MAX_DIRS];
	unsigned n;
};

/* A field's type by kind. */
#define GS_CONFIG_TYPE_SIZE	uint64_t
#define GS_CONFIG_TYPE_UINT	uint64_t
#define GS_CONFIG_TYPE_INT	int64_t
#define GS_CONFIG_TYPE_DIRS	struct gs_dirs
#define GS_CONFIG_TYPE_BOOL	bool
#define GS_CONFIG_TYPE_TIME	uint64_t	/* milliseconds */

struct gs_config {
#define GS_CONFIG_FIELD(name, kind, def, min, max, desc)		\
	GS_CONFIG_TYPE_##kind name;
	GS_CONFIG(GS_CONFIG_FIELD)
#undef GS_CONFIG_FIELD
	/* not options: library users' and tests' knobs (0: the default) */
	unsigned hash_power;		/* index starts with 2^hash_power buckets */
};

#endif /* GOBLIN_CONFIG_T_H */
