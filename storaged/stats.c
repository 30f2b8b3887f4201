/*
 * The one stats emitter (stats.h): walks the tables in order and hands each
 * name, value and description to a sink.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "version.h"
#include "stats.h"

static void emit_U64(const struct stats_sink *sink, const char *name,
		     uint64_t v, const char *desc)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	sink->emit(sink->arg, name, buf, desc);
}

static void emit_TEXT(const struct stats_sink *sink, const char *name,
		      const char *v, const char *desc)
{
	sink->emit(sink->arg, name, v ? v : "", desc);
}

static void emit_TIMEVAL(const struct stats_sink *sink, const char *name,
			 struct timeval v, const char *desc)
{
	char buf[48];

	snprintf(buf, sizeof(buf), "%ld.%06ld", (long)v.tv_sec,
		 (long)v.tv_usec);
	sink->emit(sink->arg, name, buf, desc);
}

/* The NUMA_STATS lines of <n>; <markdown>: one row per stat, node N. */
static void emit_numa(const struct stats_sink *sink,
		      const struct gs_numa_stats *n, bool markdown)
{
	char name[64];

#define EMIT_NUMA(stat, desc) emit_U64(sink, "numa_" #stat, n->stat, desc);
	NUMA_STATS(EMIT_NUMA)
#undef EMIT_NUMA
#define EMIT_PROMOTION(stat, field, desc)				\
	emit_U64(sink, "numa_" #stat, n->prom.field, desc);
	NUMA_PROMOTION_STATS(EMIT_PROMOTION)
#undef EMIT_PROMOTION
	for (uint64_t i = 0; i < (markdown ? 1 : n->nodes); i++) {
#define EMIT_NODE(stat, desc)						\
		if (markdown)						\
			snprintf(name, sizeof(name), "numa_nodeN_" #stat); \
		else							\
			snprintf(name, sizeof(name), "numa_node%llu_" #stat, \
				 (unsigned long long)i);		\
		emit_U64(sink, name, n->stat[i], desc);
		NUMA_NODE_STATS(EMIT_NODE)
#undef EMIT_NODE
	}
}

const uint64_t first_byte_bounds_us[FIRST_BYTE_BUCKETS - 1] = {
	100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000,
	250000, 500000, 1000000, 2500000, 5000000, 10000000
};

void stats_first_byte_add(struct first_byte_hist *h, uint64_t us)
{
	unsigned i = 0;

	while (i < FIRST_BYTE_BUCKETS - 1 && us > first_byte_bounds_us[i])
		i++;
	__atomic_fetch_add(&h->n[i], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->us, us, __ATOMIC_RELAXED);
}

void stats_first_byte_load(const struct first_byte_hist *h,
			   struct first_byte_hist *into)
{
	for (unsigned i = 0; i < FIRST_BYTE_BUCKETS; i++)
		into->n[i] = __atomic_load_n(&h->n[i], __ATOMIC_RELAXED);
	into->us = __atomic_load_n(&h->us, __ATOMIC_RELAXED);
}

void stats_first_byte_reset(struct first_byte_hist *h)
{
	for (unsigned i = 0; i < FIRST_BYTE_BUCKETS; i++)
		__atomic_store_n(&h->n[i], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&h->us, 0, __ATOMIC_RELAXED);
}

/* The histogram's lines of <h>, cumulative as Prometheus' buckets;
 * <markdown>: one row for the buckets, bound N. */
static void emit_first_byte(const struct stats_sink *sink,
			    const struct first_byte_hist *h, bool markdown)
{
	static const char bucket_desc[] = "memcache retrievals (get, gets, gat, gats, mg) whose reply's first byte was written within N microseconds of the command being run, N each of 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000 (cumulative; a connection's 32 oldest unanswered retrievals are timed, deeper pipelines not)";
	uint64_t n = 0;
	char name[64];

	for (unsigned i = 0; i < FIRST_BYTE_BUCKETS - 1; i++) {
		n += h->n[i];
		if (markdown && i)
			continue;
		if (markdown)
			snprintf(name, sizeof(name), "first_byte_us_le_N");
		else
			snprintf(name, sizeof(name), "first_byte_us_le_%llu",
				 (unsigned long long)first_byte_bounds_us[i]);
		emit_U64(sink, name, n, bucket_desc);
	}
	emit_U64(sink, "first_byte_count", n + h->n[FIRST_BYTE_BUCKETS - 1],
		 "memcache retrievals timed, every bucket and those over the last");
	emit_U64(sink, "first_byte_us_sum", h->us,
		 "their microseconds, summed");
}

/* The RDMA_STATS lines of <st>. */
static void emit_rdma(const struct stats_sink *sink,
		      const struct rdma_server_stats *st)
{
#define EMIT_RDMA(stat, field, desc) emit_U64(sink, #stat, st->field, desc);
	RDMA_STATS(EMIT_RDMA)
#undef EMIT_RDMA
}

void stats_emit(unsigned tables, const struct stats_snapshot *s,
		const struct stats_sink *sink)
{
#define EMIT_KIND(name, kind, desc) emit_##kind(sink, #name, s->name, desc);
#define EMIT_SERVER(name, desc) emit_U64(sink, #name, s->server.name, desc);
#define EMIT_FIELD(name, desc) emit_U64(sink, #name, s->name, desc);
#define EMIT_ENGINE(name, desc) emit_U64(sink, #name, s->engine.name, desc);
#define EMIT_SINCE(name, since_reset, desc)				\
	emit_U64(sink, #name, s->engine.name -				\
		 ((since_reset) ? s->engine_base.name : 0), desc);
#define EMIT_LINK(name, desc) emit_U64(sink, #name, s->link[ST_##name], desc);
#define EMIT_ARENA(name, desc) emit_U64(sink, #name, s->arena.name, desc);
	if (tables & STATS_PROCESS) {
		PROCESS_STATS(EMIT_KIND)
	}
	if (tables & STATS_SERVER) {
		SERVER_STATS(EMIT_SERVER)
	}
	if (tables & STATS_SUMMARY) {
		SUMMARY_STATS(EMIT_FIELD, EMIT_SINCE)
	}
	if (tables & STATS_FIRST_BYTE)
		emit_first_byte(sink, &s->first_byte, s->markdown);
	if (tables & STATS_ENGINE) {
		GS_STATS(EMIT_ENGINE)
		if (s->numa.nodes)
			emit_numa(sink, &s->numa, false);
	}
	if (tables & STATS_POOLS) {
		POOL_STATS(EMIT_FIELD)
		ARENA_STATS(EMIT_ARENA)
	}
	if ((tables & STATS_RDMA) && s->rdma_on)
		emit_rdma(sink, &s->rdma);
	if (tables & STATS_SLABS) {
		SLAB_STATS(EMIT_FIELD)
	}
	if (tables & STATS_LINK) {
		LINK_STATS(EMIT_LINK)
	}
#undef EMIT_KIND
#undef EMIT_SERVER
#undef EMIT_FIELD
#undef EMIT_ENGINE
#undef EMIT_SINCE
#undef EMIT_LINK
#undef EMIT_ARENA
}

void stats_process(struct stats_snapshot *s, time_t started)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	s->pid = getpid();
	s->time = time(NULL);
	s->uptime = s->time - started;
	s->version = GOBLIN_VERSION;
	s->pointer_size = 8 * sizeof(void *);
	s->rusage_user = ru.ru_utime;
	s->rusage_system = ru.ru_stime;
}

/* ---- the RDMA endpoint's counters, published by its thread ---- */

static pthread_mutex_t rdma_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rdma_server_stats rdma_pub;
static bool rdma_on;

void stats_rdma_publish(const struct rdma_server_stats *st)
{
	pthread_mutex_lock(&rdma_lock);
	rdma_on = st != NULL;
	if (st)
		rdma_pub = *st;
	pthread_mutex_unlock(&rdma_lock);
}

bool stats_rdma_read(struct rdma_server_stats *st)
{
	bool on;

	pthread_mutex_lock(&rdma_lock);
	on = rdma_on;
	*st = on ? rdma_pub : (struct rdma_server_stats){ 0 };
	pthread_mutex_unlock(&rdma_lock);
	return on;
}

/* ---- the link's "name value\n" text ---- */

struct text_buf {
	char *buf;
	size_t size, len;
};

static void text_emit(void *arg, const char *name, const char *value,
		      const char *desc)
{
	struct text_buf *t = arg;

	(void)desc;
	if (t->len >= t->size)
		return;
	t->len += snprintf(t->buf + t->len, t->size - t->len, "%s %s\n",
			   name, value);
	if (t->len > t->size)
		t->len = t->size;
}

size_t stats_format(unsigned tables, const struct stats_snapshot *s,
		    char *buf, size_t size)
{
	struct text_buf t = { .buf = buf, .size = size };
	struct stats_sink sink = { text_emit, &t };

	stats_emit(tables, s, &sink);
	return t.len;
}

/* ---- --help=stats ---- */

/* Rows of one description in a row share a line: "| `a`, `b` | desc |". */
struct markdown_rows {
	const char *desc;
	char names[1024];
	size_t len;
};

static void markdown_flush(struct markdown_rows *m)
{
	if (m->desc)
		printf("| %s | %s |\n", m->names, m->desc);
	m->desc = NULL;
	m->len = 0;
	m->names[0] = 0;
}

static void markdown_emit(void *arg, const char *name, const char *value,
			  const char *desc)
{
	struct markdown_rows *m = arg;
	int n;

	(void)value;
	if (m->desc && strcmp(m->desc, desc))
		markdown_flush(m);
	n = snprintf(m->names + m->len, sizeof(m->names) - m->len, "%s`%s`",
		     m->desc ? ", " : "", name);
	if (n > 0 && (size_t)n < sizeof(m->names) - m->len)
		m->len += n;
	m->desc = desc;
}

static void markdown_table(unsigned tables)
{
	static const struct stats_snapshot none = { .markdown = true };
	struct markdown_rows m = { 0 };
	struct stats_sink sink = { markdown_emit, &m };

	printf("| stat | meaning |\n|---|---|\n");
	stats_emit(tables, &none, &sink);
	markdown_flush(&m);
}

static void markdown_numa(void)
{
	static const struct gs_numa_stats none;
	struct markdown_rows m = { 0 };
	struct stats_sink sink = { markdown_emit, &m };

	printf("| stat | meaning |\n|---|---|\n");
	emit_numa(&sink, &none, true);
	markdown_flush(&m);
}

static void markdown_rdma(void)
{
	static const struct rdma_server_stats none;
	struct markdown_rows m = { 0 };
	struct stats_sink sink = { markdown_emit, &m };

	printf("| stat | meaning |\n|---|---|\n");
	emit_rdma(&sink, &none);
	markdown_flush(&m);
}

void stats_markdown(void)
{
	printf("`stats` (memcached's general fields plus the front end's counters):\n\n");
	markdown_table(STATS_PROCESS | STATS_SERVER | STATS_SUMMARY |
		       STATS_FIRST_BYTE);
	printf("\n`stats goblin` (the engine):\n\n");
	markdown_table(STATS_ENGINE | STATS_POOLS);
	printf("\nWith `--numa`, `stats goblin` and the nginx link's engine counters add, after the engine's (N: each node by id):\n\n");
	markdown_numa();
	printf("\nWith `--rdma`, `stats goblin` adds the RDMA endpoint's counters, after the pools':\n\n");
	markdown_rdma();
	printf("\nThe nginx link's counters (in nginx's `goblin_status` JSON, under `storaged`, after everything `stats` and `stats goblin` list):\n\n");
	markdown_table(STATS_LINK);
	printf("\n`stats settings`: first memcached's names in memcached's units "
	       "(`maxbytes` as `limit_maxbytes`, `maxconns`, `tcpport`, "
	       "`udpport` 0, `inter`, `verbosity`, `evictions on|off` "
	       "(`--no-evict`), `num_threads`, `cas_enabled`, "
	       "`binding_protocol ascii`, `auth_enabled_sasl no`, "
	       "`auth_enabled_ascii` (the `--auth-file`, or `no`), "
	       "`item_size_max`, `flush_enabled yes|no`, `dump_enabled yes`, "
	       "`idle_timeout` in seconds), then every option above by its "
	       "flag name, with its value.\n"
	       "`stats slabs` (`active_slabs`, `total_malloced`: RAM region bytes in use), "
	       "`stats items` (none), `stats sizes` (`sizes_status disabled`), "
	       "`stats cachedump` (class 1: every object), "
	       "`stats conns` (per connection: `addr`, `listen_addr`, `state`, "
	       "`secs_since_last_cmd`) answer as memcached's do; `stats reset` "
	       "answers `RESET` and zeroes the counters of `stats` (not "
	       "`curr_connections`, `curr_items`, `bytes`; `stats goblin` keeps "
	       "counting from the start).\n");
}
