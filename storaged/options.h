/*
 * goblin-store's command line, declared once: this table feeds option
 * parsing, --help, `stats settings` and the README's option table
 * (`goblin-store --help=markdown`).
 *
 * OPTION(name, flag, kind, default, min, max, "description")
 *   kind: SIZE (bytes, K/M/G/T suffixes), UINT, INT, STR, DIRS (repeatable
 *   path), BOOL (a flag without value: "true" when given), TIME (a
 *   duration, ms/s/m/h/d suffixes, none = seconds; kept in milliseconds).
 *   min, max: the range a number must be in (0, 0: any).  What the engine
 *   requires of its config (gs_engine_open) it checks itself.
 */
#ifndef GOBLIN_OPTIONS_H
#define GOBLIN_OPTIONS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "goblin.h"
#include "ring-t.h"

#define OPTIONS(OPTION)							\
	OPTION(memory, "memory", SIZE, "256M", 0, 0,			\
	       "RAM for heads: the cached heads of on-disk objects, and RAM-only objects of --ram-head bytes or more")		\
	OPTION(sub_memory, "sub-memory", SIZE, "64M", 0, 0,		\
	       "RAM for objects smaller than --ram-head: the byte-granular arena, committed an arena block (--block bytes) at a time (taken from --memory when 0)")		\
	OPTION(block, "block", SIZE, "2M", 0, 0,			\
	       "RAM allocation unit (one huge page): heads take fixed slots in blocks, smaller objects are packed in arena blocks") \
	OPTION(ram_head, "ram-head", SIZE, "256K", 0, 0,		\
	       "bytes of an object's start that RAM caches; objects up to this size are RAM-only (multiple of 4K)")		\
	OPTION(ssd_prefix, "ssd-prefix", SIZE, "1M", 0, 0,		\
	       "bytes after the head kept on the SSD pool when there is an HDD pool") \
	OPTION(ssd_dir, "ssd-dir", DIRS, "", 0, 0,			\
	       "SSD pool directory; repeat to stripe (none: no SSD tier)")	\
	OPTION(hdd_dir, "hdd-dir", DIRS, "", 0, 0,			\
	       "HDD pool directory; repeat to stripe (none: the SSD pool holds tails)") \
	OPTION(ssd_size, "ssd-size", SIZE, "1G", 0, 0,			\
	       "SSD pool capacity, split over its directories; their files grow to it as used") \
	OPTION(hdd_size, "hdd-size", SIZE, "4G", 0, 0,			\
	       "HDD pool capacity, split over its directories; their files grow to it as used") \
	OPTION(stripe_unit, "stripe-unit", SIZE, "1M", 0, 0,		\
	       "striping unit across the directories of one pool (kept in its marker: changing it needs --fresh)")	\
	OPTION(io_buffers, "io-buffers", UINT, "4", 1, GS_IO_BUFFERS_MAX,		\
	       "read-ahead window per request, in chunks (1M buffers)")	\
	OPTION(io_streams, "io-streams", UINT, "8", 1, 1024,		\
	       "requests per serving thread that can hold a full window at once") \
	OPTION(no_mlock, "no-mlock", BOOL, "false", 0, 0,		\
	       "do not lock the RAM region in memory")			\
	OPTION(cores, "cores", UINT, "1", 1, 256,			\
	       "serving threads, each with its own io_uring, pinned to a CPU") \
	OPTION(memcache_port, "memcache-port", UINT, "11211", 0, 65535,	\
	       "TCP port of the memcache text protocol (0: none)")	\
	OPTION(listen, "listen", STR, "127.0.0.1", 0, 0,		\
	       "address the memcache port binds to")			\
	OPTION(max_conns, "max-conns", UINT, "1024", 1, 1048576,	\
	       "memcache connections open at once; more get ERROR Too many open connections") \
	OPTION(idle_timeout, "idle-timeout", TIME, "0", 0, 0,		\
	       "close a memcache connection idle between commands this long (0: never)") \
	OPTION(read_timeout, "read-timeout", TIME, "60s", 0, 0,		\
	       "close a client that stalls this long inside a command line or value (0: never)") \
	OPTION(send_timeout, "send-timeout", TIME, "60s", 0, 0,		\
	       "close a client that takes none of its reply for this long (0: never)")	\
	OPTION(socket, "socket", STR, "/run/goblin-store/goblin-store.sock", 0, 0, \
	       "unix socket nginx workers attach to (its directory is created 0750)") \
	OPTION(socket_user, "socket-user", STR, "", 0, 0,		\
	       "a user that may attach to --socket (root and goblin-store's own always may)") \
	OPTION(socket_group, "socket-group", STR, "", 0, 0,		\
	       "group that owns --socket and its directory; its members may attach") \
	OPTION(no_http, "no-http", BOOL, "false", 0, 0,			\
	       "no unix socket for nginx workers (memcache only)")	\
	OPTION(max_object, "max-object", SIZE, RING_MAX_OBJECT_DEFAULT, 0, 0, \
	       "largest object accepted")				\
	OPTION(admission_bytes, "admission-bytes", SIZE, "64M", 0, 0,	\
	       "bytes accepted but not yet on disk before writers are paused") \
	OPTION(no_evict, "no-evict", BOOL, "false", 0, 0,		\
	       "fail sets with SERVER_ERROR out of memory instead of evicting") \
	OPTION(numa, "numa", INT, "-1", -1, INT_MAX,			\
	       "serving threads on this NUMA node; one node share of --memory per node, filled from this node's (-1: none)") \
	OPTION(perverse, "perverse", BOOL, "false", 0, 0,		\
	       "with --numa: the home share on the farthest node (a remote-memory control)") \
	OPTION(no_numa_promotion, "no-numa-promotion", BOOL, "false", 0, 0, \
	       "with --numa: no promotion thread, head blocks stay where they were stored") \
	OPTION(fresh, "fresh", BOOL, "false", 0, 0,			\
	       "start empty: wipe what the pools hold instead of recovering it, also a pool of another format or stripe unit (never a dir that is not a goblin-store pool)") \
	OPTION(journal_salvage, "journal-salvage", BOOL, "false", 0, 0,	\
	       "start past damaged records in the index journal: skip them, drop (and log) the objects they name, checkpoint what is left (a torn last record is cut without it)") \
	OPTION(sync_interval, "sync-interval", TIME, "0", 0, 0,	\
	       "fdatasync the pools this often and hold acknowledgements until then, for power loss (0: never; process crashes lose nothing either way)") \
	OPTION(checkpoint_size, "checkpoint-size", SIZE, "64M", 4096, INT64_MAX, \
	       "rewrite the index journal as a checkpoint of the live objects once it has grown past this, or past twice the live records when that is more") \
	OPTION(rdma, "rdma", STR, "", 0, 0,				\
	       "serve memcache GETs over RDMA on ADDR:PORT ([ADDR]:PORT for IPv6), objects written into the client's window (none: off)") \
	OPTION(rdma_transport, "rdma-transport", STR, "verbs", 0, 0,	\
	       "--rdma's transport: verbs (rdma_cm + ibverbs RC QPs, needs an RDMA device) or tcp (emulated: libfabric's tcp provider)")

enum option_kind { OPT_SIZE, OPT_UINT, OPT_INT, OPT_STR, OPT_DIRS, OPT_BOOL,
		   OPT_TIME };

struct options {
#define OPTION_FIELD_SIZE uint64_t
#define OPTION_FIELD_UINT uint64_t
#define OPTION_FIELD_INT int64_t
#define OPTION_FIELD_STR const char *
#define OPTION_FIELD_BOOL bool
#define OPTION_FIELD_TIME uint64_t
#define OPTION_FIELD(name, flag, kind, def, min, max, desc) OPTION_FIELD_##kind name;
#define OPTION_FIELD_DIRS struct { const char *v[GS_MAX_DIRS]; unsigned n; }
	OPTIONS(OPTION_FIELD)
#undef OPTION_FIELD
	int verbose;
};

/*
 * Parses <argv> into <o> (defaults first).  Returns 0 to run, 1 when
 * --help or --version was answered, or 2 after printing a one-line error
 * for a bad option.
 */
int options_parse(struct options *o, int argc, char **argv);

/* Fills the engine's config from <o>. */
void options_to_config(const struct options *o, struct gs_config *cfg);

/* Fills <cfg> with the table's defaults (RAM-only, no pools). */
void options_config_defaults(struct gs_config *cfg);

/* Words an engine error for the command line: each gs_config field named
 * in backquotes (`ram_head`) becomes its flag (--ram-head), in place. */
void options_word_error(char *err, size_t errlen);

/*
 * Splits an --rdma value "ADDR:PORT" or "[IPV6]:PORT" into <host> (room for
 * <hostlen> bytes, brackets dropped) and *<port> (1 to 65535).  Returns 0,
 * or -EINVAL with the reason in <err>.
 */
int options_rdma_addr(const char *v, char *host, size_t hostlen,
		      uint16_t *port, char *err, size_t errlen);

/* The RAM-head slots --memory makes at --ram-head: the link sizes what
 * one nginx worker may pin from it (link_server.c). */
uint64_t options_head_slots(const struct options *o);

/* Calls <emit>(<arg>, name, value) for every option ("stats settings"). */
void options_each(const struct options *o,
		  void (*emit)(void *arg, const char *name, const char *value),
		  void *arg);

#endif
