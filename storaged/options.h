/*
 * goblin-store's command line, declared once: this table feeds option
 * parsing, --help, `stats settings` and the README's option table
 * (`goblin-store --help=markdown`).  The engine's options are its config
 * table (GS_CONFIG, engine/goblin-config-t.h): struct options holds them
 * as the engine's struct gs_config, a field per flag of the same name.
 *
 * OPTIONS(ENGINE, DAEMON): every option in --help order; ENGINE(name,
 * kind, default, min, max, "description") for GS_CONFIG's entries,
 * DAEMON(the same) for the daemon's own (DAEMON_OPTIONS_*).
 *   kind: as GS_CONFIG's, and STR.  name: the flag with '-' for '_'.
 *   min, max: the range a number must be in (0, 0: any).  What the engine
 *   requires of its config (gs_engine_open) it checks itself.
 */
#ifndef GOBLIN_OPTIONS_H
#define GOBLIN_OPTIONS_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "goblin.h"
#include "version.h"

/* The memcache front and the nginx link (after GS_CONFIG_TIERS). */
#define DAEMON_OPTIONS_SERVE(OPTION)					\
	OPTION(cores, UINT, "1", 1, 256,				\
	       "serving threads, each with its own io_uring, pinned to a CPU (at most the CPUs this process may run on; memcached's -t)") \
	OPTION(cpus, STR, "", 0, 0,					\
	       "CPUs the serving threads pin to, one each in turn, as a list such as 2-3,6 (none: the first CPUs this process may run on)") \
	OPTION(no_pin, BOOL, "false", 0, 0,				\
	       "serving threads not pinned to CPUs: the scheduler places them") \
	OPTION(memcache_port, UINT, "11211", 0, 65535,			\
	       "TCP port of the memcache text protocol (0: none; memcached's -p)") \
	OPTION(listen, STR, "127.0.0.1", 0, 0,				\
	       "addresses the memcache port binds to, comma-separated, IPv4 or IPv6 such as 127.0.0.1,::1 (:: is IPv6 only, as in nginx; memcached's -l)") \
	OPTION(max_conns, UINT, "1024", 1, 1048576,			\
	       "memcache connections open at once; more get ERROR Too many open connections (memcached's -c)") \
	OPTION(idle_timeout, TIME, "0", 0, 0,				\
	       "close a memcache connection idle between commands this long (0: never)") \
	OPTION(read_timeout, TIME, "60s", 0, 0,				\
	       "close a client that stalls this long inside a command line or value (0: never)") \
	OPTION(send_timeout, TIME, "60s", 0, 0,				\
	       "close a client that takes none of its reply for this long (0: never)")	\
	OPTION(disable_flush, BOOL, "false", 0, 0,			\
	       "refuse flush_all (CLIENT_ERROR flush_all not allowed), as memcached's -F") \
	OPTION(auth_file, STR, "", 0, 0,				\
	       "memcache clients must authenticate as a user:password line of this file first (memcached's -Y, ASCII auth); the nginx link is not affected") \
	OPTION(socket, STR, "/run/goblin-store/goblin-store.sock", 0, 0, \
	       "unix socket nginx workers attach to (its directory is created 0750, or as --socket-mode asks)") \
	OPTION(socket_user, STR, "", 0, 0,				\
	       "a user that may attach to --socket (root and goblin-store's own always may)") \
	OPTION(socket_group, STR, "", 0, 0,				\
	       "group that owns --socket and its directory; its members may attach") \
	OPTION(socket_mode, STR, "0660", 0, 0,				\
	       "mode of --socket, octal (a directory it creates gets the matching search bits)") \
	OPTION(no_http, BOOL, "false", 0, 0,				\
	       "no unix socket for nginx workers (memcache only)")

/* The RDMA endpoint (after GS_CONFIG_POLICY). */
#define DAEMON_OPTIONS_RDMA(OPTION)					\
	OPTION(rdma, STR, "", 0, 0,					\
	       "serve memcache GETs over RDMA on ADDR:PORT ([ADDR]:PORT for IPv6), objects written into the client's bulk buffer (none: off)") \
	OPTION(rdma_transport, STR, "verbs", 0, 0,			\
	       "--rdma's transport: verbs (rdma_cm + ibverbs RC QPs, needs an RDMA device) or tcp (emulated: libfabric's tcp provider)")

/* The process: its user and its log (last). */
#define DAEMON_OPTIONS_PROCESS(OPTION)					\
	OPTION(user, STR, "", 0, 0,					\
	       "run as this user (and its groups) once the ports, the socket and the RAM are set up (memcached's -u; none: as started)") \
	OPTION(log_file, STR, "", 0, 0,					\
	       "append the log to this file, not stderr; SIGHUP reopens it (after a rotation)") \
	OPTION(log_level, STR, "info", 0, 0,				\
	       "least severe lines logged, by nginx's names: debug, info, notice, warn, error, crit, alert, emerg (-v: one step more)")

#define OPTIONS(ENGINE, DAEMON)						\
	GS_CONFIG_TIERS(ENGINE)						\
	DAEMON_OPTIONS_SERVE(DAEMON)					\
	GS_CONFIG_POLICY(ENGINE)					\
	DAEMON_OPTIONS_RDMA(DAEMON)					\
	DAEMON_OPTIONS_PROCESS(DAEMON)

/* A flag's longest name, NUL included (each is checked at build time). */
#define OPTION_FLAG_MAX 32

enum option_kind { OPT_SIZE, OPT_UINT, OPT_INT, OPT_STR, OPT_DIRS, OPT_BOOL,
		   OPT_TIME };

struct options {
	struct gs_config cfg;		/* the engine's options */
#define OPTION_FIELD_UINT uint64_t
#define OPTION_FIELD_STR const char *
#define OPTION_FIELD_BOOL bool
#define OPTION_FIELD_TIME uint64_t
#define OPTION_FIELD(name, kind, def, min, max, desc) OPTION_FIELD_##kind name;
	DAEMON_OPTIONS_SERVE(OPTION_FIELD)
	DAEMON_OPTIONS_RDMA(OPTION_FIELD)
	DAEMON_OPTIONS_PROCESS(OPTION_FIELD)
#undef OPTION_FIELD
	int verbose;
	/* read from the STR options by options_parse() */
	cpu_set_t cpus_set;		/* --cpus (cpus_n of them) */
	unsigned cpus_n;		/* 0: no --cpus */
	unsigned socket_mode_bits;	/* --socket-mode */
	int log_level_value;		/* --log-level and -v: shared/log.h's */
};

/* Addresses --listen takes at most. */
#define OPTIONS_LISTEN_MAX 8

/* The option indexes, in table order. */
enum option_index {
#define OPTION_INDEX(name, kind, def, min, max, desc) IDX_##name,
	OPTIONS(OPTION_INDEX, OPTION_INDEX)
#undef OPTION_INDEX
	IDX_COUNT
};

/*
 * Parses <argv> into <o>, defaults first (o->cfg's as gs_config_init()
 * gives them).  Returns 0 to run, 1 when --help or --version was answered,
 * or 2 after printing a one-line error for a bad option.
 */
int options_parse(struct options *o, int argc, char **argv);

/*
 * The settings checked against each other and against the machine, once
 * <o> is parsed; fills its values read from STR options (cpus_set...).
 * Returns 0, or 2 after printing a one-line error (options_check.c).
 */
int options_check(struct options *o);

/* Option <idx>'s default, as the table writes it. */
const char *options_default(int idx);

/* memcached's flags goblin-store takes, for --help: <flag> as memcached
 * writes it, <desc> the long option it means. */
struct options_memcached_flag {
	char c;
	const char *flag, *desc;
};
extern const struct options_memcached_flag options_memcached[];
extern const size_t options_memcached_n;

/*
 * memcached's short flag <c> (one of options_memcached) with value <arg>:
 * *<idx> is the option it sets (-1: none, as -U 0) and <val> (room for
 * <vallen>) its value in the long option's words ("": <arg> as it is).
 * Returns 0, or 2 after printing why it is refused.
 */
int options_memcached_flag(int c, const char *arg, int *idx, char *val,
			   size_t vallen);

/* A flag getopt did not know, <c>: 2 after printing what memcached means
 * by it when it is memcached's, else 0 (nothing printed). */
int options_memcached_refuse(int c);

/* The RAM-head slots --memory makes at --ram-head: the link sizes what
 * one nginx worker may pin from it (link_server.c). */
uint64_t options_head_slots(const struct options *o);

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

/* Calls <emit>(<arg>, name, value) for every option ("stats settings"). */
void options_each(const struct options *o,
		  void (*emit)(void *arg, const char *name, const char *value),
		  void *arg);

#endif
