/*
 * goblin-bench: closed-loop load generator for Goblin Store and its peers.
 *
 *   main/options ─> populate phase ─> measured phase ─> report (table, JSON)
 *                   (sets of keys      (gets + sets on [hot_start,
 *                    [0, keys))         hot_start+hot_keys))
 *
 * All connections live on one epoll loop, one request in flight each.
 * With --open-loop the measured phase issues on a schedule instead
 * (goblin-bench-sched.h), latency counted from each intended start.
 */
#ifndef GOBLIN_BENCH_H
#define GOBLIN_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>

#include "clock.h"
#include "goblin-bench-gen.h"
#include "goblin-bench-hist.h"
#include "goblin-bench-proto.h"
#include "goblin-bench-sched.h"

#define GB_VERSION	"0.1.0"

/* --proto rdma: where the RDMA endpoint is, over which transport, the
 * bulk window each queue pair registers, how many queue pairs (one GET in
 * flight each) and, with --requests, how many GETs in all. */
enum gb_rdma_tp { GB_RDMA_VERBS, GB_RDMA_TCP };

struct gb_rdma_opts {
	char host[256];
	unsigned port;		/* 0: --rdma not given */
	enum gb_rdma_tp transport;
	uint64_t window;
	unsigned qps;
	uint64_t requests;	/* 0: run for --duration */
};

#define GB_RDMA_WINDOW_DEFAULT	(8ULL << 20)
#define GB_RDMA_WINDOW_MIN	4096ULL		/* the server's least */
#define GB_RDMA_WINDOW_MAX	(1ULL << 30)
#define GB_RDMA_QPS_MAX		256u

extern const char *const gb_rdma_tp_names[];

enum gb_key_dist {
	GB_KEYS_UNIFORM,
	GB_KEYS_ZIPF,
	GB_KEYS_SEQUENTIAL,	/* each key of the window once, in order */
};

extern const char *const gb_key_dist_names[];

struct gb_opts {
	const char *host;
	unsigned port;
	enum gb_proto proto;
	enum gb_dist dist;
	uint64_t size;
	uint64_t keys;
	uint64_t hot_start, hot_keys;
	enum gb_key_dist key_dist;
	double zipf_theta;
	uint64_t seed;
	double set_ratio;
	unsigned conns;
	double duration;	/* seconds */
	double timeout;		/* seconds without progress on a request */
	double rate;		/* requests issued per second at most; 0: no cap */
	enum gb_arrivals arrivals;	/* measured phase: closed or open loop */
	const char *json;
	const char *http_prefix;
	bool populate_only, no_store, verify, quiet;
	struct gb_rdma_opts rdma;	/* --proto rdma */
};

struct gb_stats {
	/* --proto rdma: ttfb is the VALUE line, payload the last BULK_READY
	 * (the whole object in the window), complete the END line */
	uint64_t get_issued, hits, misses, get_errors, get_failed;
	uint64_t set_issued, sets, set_errors, set_failed;
	uint64_t verify_errors;		/* GETs whose bytes were wrong */
	uint64_t conn_failures;		/* closes, resets, timeouts, bad framing */
	uint64_t reconnects;
	uint64_t get_bytes, set_bytes;	/* value bytes moved */
	double seconds;
	struct gb_hist ttfb, payload, complete, set_complete;
	/* --open-loop: requests the schedule offered in the phase, those
	 * that waited for a free connection, the most waiting at once, those
	 * never issued before the end, and send time minus intended start */
	uint64_t scheduled, queued, backlog_max, unissued;
	struct gb_hist send_lag;
};

/* gets = GETs answered with a hit or a miss (issued minus errors and
 * failures); the report checks it against hits + misses. */
static inline uint64_t gb_gets(const struct gb_stats *s)
{
	return s->get_issued - s->get_errors - s->get_failed;
}

struct gb_sizes {
	uint64_t min, max, total;	/* over keys [0, keys) */
	double mean, mean_hot, target;
};

struct gb_result {
	bool populated, measured;
	bool connect_failed;		/* could not connect at all */
	struct gb_stats populate, run;
};

/* The server's address and the HTTP Host header naming it. */
struct gb_addr {
	struct sockaddr_storage sa;
	socklen_t len;
	int family;
	char host_hdr[300];
};

/* goblin-bench-conn.c: resolves <host>:<port> into <a>; 0, or -1 with a
 * message printed. */
int gb_resolve(const char *host, unsigned port, struct gb_addr *a);
/* A non-blocking TCP_NODELAY socket connected to <a> within <timeout>
 * seconds; returns the fd or -errno. */
int gb_connect(const struct gb_addr *a, double timeout);

/* goblin-bench-loop.c: SIGINT and SIGTERM set gb_interrupted (the phase
 * ends, what was measured is reported); SIGPIPE is ignored. */
extern volatile sig_atomic_t gb_interrupted;
void gb_catch_signals(void);

static inline uint64_t gb_now_ns(void)
{
	return mono_ns();
}

/* goblin-bench-loop.c: runs the phases <o> asks for into <res>; returns 0,
 * or -1 when no connection could be made (message printed). */
int gb_run(const struct gb_opts *o, const struct gb_sizer *sizer,
	   struct gb_result *res);

/* goblin-bench-rdma.c: the measured phase of --proto rdma (GETs only; the
 * keys were stored over memcache) into res->run; returns 0, or -1 when a
 * queue pair could not connect (message printed, res->connect_failed). */
int gb_rdma_run(const struct gb_opts *o, const struct gb_sizer *sizer,
		const struct gb_sizes *sizes, struct gb_result *res);
/* Parses "HOST:PORT" or "[V6]:PORT" into <r>; 0, or -1 with <why> set. */
int gb_rdma_parse_addr(const char *s, struct gb_rdma_opts *r,
		       const char **why);
/* The checks --proto rdma puts on the other options; NULL when <o> is
 * fine, else what is wrong. */
const char *gb_rdma_check_opts(const struct gb_opts *o);

/* goblin-bench-report.c */
void gb_sizes_compute(const struct gb_opts *o, const struct gb_sizer *z,
		      struct gb_sizes *s);
void gb_report_table(FILE *f, const struct gb_opts *o,
		     const struct gb_sizes *s, const struct gb_result *res);
/* Returns 0, or -errno when <path> cannot be written. */
int gb_report_json(const char *path, const struct gb_opts *o,
		   const struct gb_sizes *s, const struct gb_result *res);
bool gb_result_ok(const struct gb_result *res);

/* goblin-bench-selftest.c: returns the number of failed checks. */
int gb_self_test(void);

/* Values of <n> bytes/s as MB/s (10^6). */
static inline double gb_mbps(uint64_t bytes, double secs)
{
	return secs > 0 ? (double)bytes / secs / 1e6 : 0;
}

#endif
