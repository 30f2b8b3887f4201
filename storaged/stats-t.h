/*
 * Every counter goblin-store reports, declared once as X-macro tables, and
 * the one emitter behind `stats`, `stats goblin`, `stats slabs`, the nginx
 * link's STATS op (nginx's goblin_status JSON) and `--help=stats`.
 *
 *   tables (names, descriptions)      snapshot (values)      sinks
 *   PROCESS_STATS  ---------------+   struct stats_snapshot   "STAT n v\r\n"
 *   SERVER_STATS   (server.c)     +-> stats_emit(<tables>) -> "n v\n" (link)
 *   SUMMARY_STATS  (GS_STATS' own)|                          markdown rows
 *   GS_STATS       (the engine's) |
 *   POOL_STATS, SLAB_STATS, LINK_STATS, RDMA_STATS
 *   ARENA_STATS, NUMA_*_STATS (the engine's)
 *
 * The order of a table is the order on the wire.  The daemon's tables and
 * the snapshot are here; the engine's (GS_STATS, ARENA_STATS, NUMA_*) are in
 * its goblin-stats-t.h; stats.h has the emitter's prototypes.
 */
#ifndef GOBLIN_STATS_T_H
#define GOBLIN_STATS_T_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>

#include "goblin.h"
#include "rdma.h"

#define STATS_AS_MEMCACHED	"as in memcached"
#define STATS_AS_GOBLIN		"engine counters, as in `stats goblin`"
#define STATS_PER_POOL		"directories in each pool"

/* PROCESS_STAT(name, kind, description): `stats`' head; kind picks the
 * field's type in struct stats_snapshot (U64, TEXT, TIMEVAL). */
#define PROCESS_STATS(ACTION)						\
	ACTION(pid, U64, STATS_AS_MEMCACHED)				\
	ACTION(uptime, U64, STATS_AS_MEMCACHED)				\
	ACTION(time, U64, STATS_AS_MEMCACHED)				\
	ACTION(version, TEXT, STATS_AS_MEMCACHED)			\
	ACTION(pointer_size, U64, STATS_AS_MEMCACHED)			\
	ACTION(rusage_user, TIMEVAL, STATS_AS_MEMCACHED)		\
	ACTION(rusage_system, TIMEVAL, STATS_AS_MEMCACHED)		\
	ACTION(threads, U64, STATS_AS_MEMCACHED)				\
	ACTION(store_id, TEXT, "the store's identity, 16 hex digits: random, kept in the pool markers, new with --fresh and at each start of a store without pools (nginx's ETags carry it)")

/* SERVER_STAT(name, description): the memcache front's counters, `stats`. */
#define SERVER_STATS(ACTION)						\
	ACTION(curr_connections, "open connections")			\
	ACTION(total_connections, "connections accepted since start")	\
	ACTION(rejected_connections, "connections refused: past --max-conns (told ERROR Too many open connections) or no memory") \
	ACTION(cmd_get, "keys asked for by get, gets, gat, gats and mg (memcache only: nginx's lookups are `stats goblin`'s)") \
	ACTION(cmd_set, "storage commands")				\
	ACTION(cmd_flush, "flush_all commands (refused ones too, with --disable-flush)") \
	ACTION(cmd_touch, "touch, gat and gats keys")			\
	ACTION(get_hits, "of `cmd_get`, keys found")			\
	ACTION(get_misses, "of `cmd_get`, keys not found")		\
	ACTION(get_expired, "of `get_misses`, keys found expired")	\
	ACTION(get_flushed, "of `get_misses`, keys found invalidated by flush_all") \
	ACTION(delete_hits, "delete of a present key")			\
	ACTION(delete_misses, "delete of an absent key")			\
	ACTION(incr_hits, "incr or ma of a present key")		\
	ACTION(incr_misses, "incr or ma of an absent key (not one that ma N creates)") \
	ACTION(decr_hits, "decr or ma MD of a present key")		\
	ACTION(decr_misses, "decr or ma MD of an absent key (not one that ma N creates)") \
	ACTION(cas_hits, "cas that stored")				\
	ACTION(cas_misses, "cas of an absent key")			\
	ACTION(cas_badval, "cas with a stale unique")			\
	ACTION(touch_hits, "touch of a present key")			\
	ACTION(touch_misses, "touch of an absent key")			\
	ACTION(bytes_read, "bytes read from clients")			\
	ACTION(bytes_written, "bytes sent to clients")			\
	ACTION(protocol_errors, "lines answered ERROR or CLIENT_ERROR")	\
	ACTION(auth_cmds, "authenticating sets checked against --auth-file") \
	ACTION(auth_errors, "of `auth_cmds`, those refused (CLIENT_ERROR authentication failure)") \
	ACTION(store_too_large, "values refused as larger than --max-object") \
	ACTION(store_no_memory, "values refused for lack of room")	\
	ACTION(aborted_values, "values cut short by a closed connection")	\
	ACTION(aborted_responses, "responses cut short by a broken object, a closed connection or no memory for the reply") \
	ACTION(get_unreadable, "gets answered as a miss: the object's head could not be read from disk (it was dropped)") \
	ACTION(idle_timeouts, "connections closed idle between commands past --idle-timeout") \
	ACTION(read_timeouts, "connections closed stalled inside a command line or value past --read-timeout") \
	ACTION(send_timeouts, "connections closed taking none of their reply for --send-timeout") \
	ACTION(listen_disabled_num, "times accepting stopped for lack of file descriptors") \
	ACTION(time_in_listen_disabled_us, "microseconds accepting was stopped, periods that ended")

/* SUMMARY_STAT(name, since_reset, description): `stats`' tail; the
 * GS_STATS among them count from the last `stats reset` when since_reset. */
#define SUMMARY_STATS(ACTION, ENGINE)					\
	ACTION(accepting_conns, "1, or 0 while accepting is stopped for lack of file descriptors") \
	ENGINE(curr_items, false, "objects stored now, whoever stored them (memcache, nginx; recovered ones too)") \
	ENGINE(total_items, true, "objects stored since start, recovered ones included (so never fewer than `curr_items` until a `stats reset`)") \
	ENGINE(bytes, false, "object bytes stored now, every tier: RAM, SSD and HDD (each object's size once)") \
	ENGINE(evictions, true, STATS_AS_GOBLIN)			\
	ACTION(limit_maxbytes, "the tiers' capacity, the scope of `bytes`: `ram_region_bytes` + `ssd_pool_bytes` + `hdd_pool_bytes` (RAM only: `--memory`)") \
	ACTION(max_connections, "`--max-conns`")

/* POOL_STAT(name, description): `stats goblin` after GS_STATS. */
#define POOL_STATS(ACTION)						\
	ACTION(index_bytes_per_object, "`index_bytes` / `curr_items`: a record, its key and extents as malloc holds them, and its share of the tables") \
	ACTION(ssd_dirs, STATS_PER_POOL)				\
	ACTION(hdd_dirs, STATS_PER_POOL)

/* RDMA_STAT(name, field of rdma_server_stats, description): the RDMA
 * endpoint's counters (--rdma, rdma_thread.c), in `stats goblin` after
 * POOL_STATS when it runs; counted from the start (not `stats reset`). */
#define RDMA_STATS(ACTION)						\
	ACTION(rdma_connections, live, "RDMA connections open now")	\
	ACTION(rdma_total_connections, conns, "RDMA connections accepted since start") \
	ACTION(rdma_gets, gets, "RDMA get requests answered (hits, misses, bad keys, errors)") \
	ACTION(rdma_get_hits, hits, "RDMA gets that found the object (VALUE, then its bytes written into the bulk buffer)") \
	ACTION(rdma_get_misses, misses, "RDMA gets of an absent key (END)")	\
	ACTION(rdma_rounds, rounds, "bulk-buffer-sized rounds written (one per BULK_READY; an object larger than the client's bulk buffer takes several)") \
	ACTION(rdma_bytes_written, bytes, "object bytes RDMA-written into clients' bulk buffers, counted as each round completes") \
	ACTION(rdma_closed, gone, "RDMA connections the client closed (mid-object too)") \
	ACTION(rdma_aborted, aborted, "of rdma_closed, those closed mid-object (between VALUE and END)") \
	ACTION(rdma_errors, errors, "RDMA failures on the server's side: connections dropped, objects unreadable midway (SERVER_ERROR), failed opens")

/* SLAB_STAT(name, description): `stats slabs` (no slab classes). */
#define SLAB_STATS(ACTION)						\
	ACTION(active_slabs, "always 0")				\
	ACTION(total_malloced, "RAM region bytes in use")

/* RING_STAT(name, description): the nginx link's counters, in its STATS
 * replies after GS_STATS. */
#define LINK_STATS(ACTION)						\
	ACTION(ring_connections, "nginx workers attached now")		\
	ACTION(ring_total_connections, "nginx workers attached since start") \
	ACTION(ring_refused, "connections refused: not root, goblin-store's user, --socket-user or in --socket-group") \
	ACTION(ring_rejected_connections, "workers turned away: the most attached, or out of descriptors") \
	ACTION(ring_lookups, "LOOKUPs (each pins on a hit)")		\
	ACTION(ring_lookup_hits, "LOOKUPs that found the object")		\
	ACTION(ring_pins, "objects pinned by nginx workers now")		\
	ACTION(ring_busy, "LOOKUPs and WOPENs refused: the worker pins its most objects or holds its most writers") \
	ACTION(ring_reads, "READs: disk parts streamed to nginx")		\
	ACTION(ring_read_bytes, "bytes staged in rx buffers")		\
	ACTION(ring_direct_reads, "READs whose disk chunks were read straight into rx buffers") \
	ACTION(ring_direct_bytes, "bytes staged in place: read from disk into rx buffers, never copied") \
	ACTION(ring_buffer_waits, "times a READ waited for an rx buffer")	\
	ACTION(ring_stores, "PUTs stored")				\
	ACTION(ring_store_bytes, "PUT bytes taken from tx buffers")	\
	ACTION(ring_store_errors, "PUTs that failed or were aborted")	\
	ACTION(ring_deletes, "DELETEs that removed an object")		\
	ACTION(ring_cq_overflows, "completions held back by a full CQ")	\
	ACTION(ring_protocol_errors, "workers dropped for a bad submission")

struct server_stats {
#define SERVER_STAT_FIELD(name, desc) uint64_t name;
	SERVER_STATS(SERVER_STAT_FIELD)
#undef SERVER_STAT_FIELD
};

/* The memcache first-byte histogram, `stats`' tail: a retrieval command's
 * time from its line being run to its reply's first byte written, in
 * buckets up to first_byte_bounds_us[i] (stats.c; the last: the rest). */
#define FIRST_BYTE_BUCKETS	17
struct first_byte_hist {
	uint64_t n[FIRST_BYTE_BUCKETS];	/* per bucket, not cumulative */
	uint64_t us;			/* the sum */
};
extern const uint64_t first_byte_bounds_us[FIRST_BYTE_BUCKETS - 1];

enum link_stat {
#define LINK_STAT_ENUM(name, desc) ST_##name,
	LINK_STATS(LINK_STAT_ENUM)
#undef LINK_STAT_ENUM
	ST_MAX
};

/* The tables stats_emit() walks, in this order whatever the mask's. */
enum stats_table {
	STATS_PROCESS = 1 << 0,	/* PROCESS_STATS */
	STATS_SERVER = 1 << 1,	/* SERVER_STATS */
	STATS_SUMMARY = 1 << 2,	/* SUMMARY_STATS */
	STATS_ENGINE = 1 << 3,	/* GS_STATS */
	STATS_POOLS = 1 << 4,	/* POOL_STATS, ARENA_STATS */
	STATS_SLABS = 1 << 5,	/* SLAB_STATS */
	STATS_LINK = 1 << 6,	/* LINK_STATS */
	STATS_RDMA = 1 << 7,	/* RDMA_STATS, when rdma_on */
	STATS_FIRST_BYTE = 1 << 8, /* the first-byte histogram, after SUMMARY */
};

/* The values: a field per PROCESS_, SUMMARY_, POOL_ and SLAB_ stat; each
 * emitter fills what its tables read. */
struct stats_snapshot {
	uint64_t pid, uptime, time, pointer_size, threads;
	const char *version;
	char store_id[17];		/* gs_engine_identity(), hex */
	struct timeval rusage_user, rusage_system;
	struct server_stats server;
	struct first_byte_hist first_byte;
	bool markdown;			/* names as README rows, values none */
	uint64_t accepting_conns, limit_maxbytes, max_connections;
	struct gs_stats engine;
	struct gs_stats engine_base;	/* engine at the last stats reset */
	uint64_t index_bytes_per_object, ssd_dirs, hdd_dirs;
	struct gs_arena_stats arena;	/* after POOL_STATS */
	struct gs_numa_stats numa;	/* .nodes 0: no NUMA lines */
	uint64_t active_slabs, total_malloced;
	uint64_t link[ST_MAX];
	bool rdma_on;			/* --rdma: RDMA_STATS from rdma */
	struct rdma_server_stats rdma;
};

/* Where stats go: <emit>(<arg>, name, value as text, description). */
struct stats_sink {
	void (*emit)(void *arg, const char *name, const char *value,
		     const char *desc);
	void *arg;
};

#endif /* GOBLIN_STATS_T_H */
