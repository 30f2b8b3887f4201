/*
 * usage: goblin-engine-scale --dir DIR [--objects N] [--value BYTES]
 *                            [--seconds S] [--threads N]
 *
 * How the engine's locking scales (issue 27), in-process on libgoblin
 * with an SSD pool in DIR (for the journal) and N RAM-only objects of
 * BYTES (each wholly in its RAM head):
 *   gets:  GET/s of 1..--threads threads, each with its own gs_io, doing
 *          what the memcache front does for a head hit: gs_lookup,
 *          gs_stream_open, gs_obj_put, peek/consume, gs_stream_close;
 *   locks: (goblin-engine-scale-locks only, the engine built with
 *          lockstat.h) mutex acquisitions, time holding one and time
 *          waiting per GET, one thread;
 *   grow:  the load itself: one thread SETs the N objects, timing each,
 *          while one thread GETs those stored so far and times each GET
 *          (the index grows from nothing to N records under both): the
 *          longest SET and GET, those over 1 ms, the most CPU time one
 *          SET took (its thread's: a holder descheduled on a busy machine
 *          does not count, the work it did under the lock does), the
 *          longest lock wait of a GET and the longest holds by site
 *          (-locks);
 *   stall: one thread overwrites every object (the journal grows to twice
 *          the live records, which checkpoints all N of them) while one
 *          thread GETs and times each GET: the longest GET, GETs over
 *          1 ms, the longest lock wait of a GET (-locks), the longest SET.
 * Prints one JSON object.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine-bench.h"
#include "clock.h"
#include "goblin.h"
#include "log.h"
#ifdef ENGINE_SCALE_LOCKS
#include "lockstat.h"
#endif

#define MAX_THREADS	8

int main(int argc, char **argv);

struct args {
	const char *dir;
	uint64_t objects, value, threads;
	double seconds;
};

struct getter {
	struct gs_engine *e;
	const struct args *a;
	pthread_t thread;
	uint64_t seed, gets, misses, bad, over_1ms;
	uint64_t max_ns, ns;
	volatile bool *stop;
	const uint64_t *range;		/* GETs keys below it (grow); NULL:
					 * below --objects */
#ifdef ENGINE_SCALE_LOCKS
	struct lockstat ls;
#endif
};

static volatile bool g_stop;

/* bench_fill_fn: every byte *(uint8_t *)<arg>. */
static void fill_byte(void *arg, unsigned char *p, uint64_t pos, size_t n)
{
	(void)pos;
	memset(p, *(const uint8_t *)arg, n);
}

/* SETs key number <k> to <size> bytes of <fill>: 0, or -errno. */
static int store(struct gs_io *io, uint64_t k, uint64_t size, uint8_t fill)
{
	return bench_store(io, k, size, fill_byte, &fill);
}

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* One GET of key <k> as the memcache front does it: 0, or -errno. */
static int get_one(struct gs_engine *e, struct gs_io *io, uint64_t k,
		   uint64_t want)
{
	struct gs_stream *s;
	struct gs_obj *obj;
	char key[32];
	uint64_t got = 0;
	int ret;

	bench_key(key, sizeof(key), k);
	ret = gs_lookup(e, key, strlen(key), &obj);
	if (ret < 0)
		return ret;
	ret = gs_stream_open(io, obj, 0, gs_obj_meta(obj)->size, bench_on_wake,
			     NULL, &s);
	gs_obj_put(e, &obj);
	if (ret < 0)
		return ret;
	for (;;) {
		const void *p;
		size_t n;

		ret = gs_stream_peek(s, &p, &n);
		if (ret == -EAGAIN) {
			gs_io_run(io, true);
			continue;
		}
		if (ret < 0 || n == 0)
			break;
		got += n;
		gs_stream_consume(s, n);
	}
	gs_stream_close(&s);
	return ret < 0 ? ret : got == want ? 0 : -EIO;
}

static void *getter_main(void *arg)
{
	struct getter *g = arg;
	struct gs_io *io;
	uint64_t t_start;

	if (gs_io_create(g->e, &io) < 0) {
		g->bad++;
		return NULL;
	}
#ifdef ENGINE_SCALE_LOCKS
	lockstat_reset();
#endif
	t_start = mono_ns();
	while (!*g->stop) {
		uint64_t n = g->range ? __atomic_load_n(g->range, __ATOMIC_ACQUIRE)
				      : g->a->objects;
		uint64_t t0 = mono_ns(), d;
		int ret = get_one(g->e, io, next_rand(&g->seed) % n,
				  g->a->value);

		d = mono_ns() - t0;
		if (d > g->max_ns)
			g->max_ns = d;
		if (d > 1000000)
			g->over_1ms++;
		if (ret == -ENOENT)
			g->misses++;
		else if (ret < 0)
			g->bad++;
		g->gets++;
	}
	g->ns = mono_ns() - t_start;
#ifdef ENGINE_SCALE_LOCKS
	lockstat_get(&g->ls);
#endif
	gs_io_destroy(&io);
	return NULL;
}

/* Starts <n> getters of keys below *<range> (at least 1; NULL: below
 * --objects) until *<stop>. */
static void getters_start(struct getter *g, unsigned n, struct gs_engine *e,
			  const struct args *a, volatile bool *stop,
			  const uint64_t *range)
{
	for (unsigned i = 0; i < n; i++) {
		g[i] = (struct getter){ .e = e, .a = a, .stop = stop,
					.range = range,
					.seed = 0x9e3779b97f4a7c15ull * (i + 1) };
		pthread_create(&g[i].thread, NULL, getter_main, &g[i]);
	}
}

static void getters_join(struct getter *g, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		pthread_join(g[i].thread, NULL);
}

static void sleep_s(double s)
{
	struct timespec t = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	nanosleep(&t, NULL);
}

/* GET/s of <n> threads over --seconds; prints its JSON member. */
static void run_gets(struct gs_engine *e, const struct args *a, unsigned n,
		     bool last)
{
	struct getter g[MAX_THREADS];
	uint64_t gets = 0, bad = 0, ns = 0;

	g_stop = false;
	getters_start(g, n, e, a, &g_stop, NULL);
	sleep_s(a->seconds);
	g_stop = true;
	getters_join(g, n);
	for (unsigned i = 0; i < n; i++) {
		gets += g[i].gets;
		bad += g[i].bad + g[i].misses;
		ns = g[i].ns > ns ? g[i].ns : ns;
	}
	printf("  \"gets_%u\": {\"threads\": %u, \"gets\": %llu, \"errors\": %llu, "
	       "\"gets_per_s\": %.0f, \"ns_per_get\": %.1f", n, n,
	       (unsigned long long)gets, (unsigned long long)bad,
	       gets / (ns / 1e9), n * (double)ns / (gets ? gets : 1));
#ifdef ENGINE_SCALE_LOCKS
	if (n == 1)
		printf(", \"lock_acquisitions_per_get\": %.2f, "
		       "\"lock_holds_per_get\": %.2f, \"lock_hold_ns_per_get\": %.1f, "
		       "\"lock_wait_ns_per_get\": %.1f, \"clock_ns\": %.1f",
		       (double)g[0].ls.acquisitions / gets,
		       (double)g[0].ls.holds / gets,
		       (double)g[0].ls.hold_ns / gets,
		       (double)g[0].ls.wait_ns / gets, lockstat_clock_ns());
#endif
	printf("}%s\n", last ? "" : ",");
}

/* With -locks, the longest lock wait of <g> and the holds over
 * LOCKSTAT_LONG_NS since lockstat_sites_reset(), as JSON members that
 * follow others. */
static void print_locks(const struct getter *g)
{
#ifdef ENGINE_SCALE_LOCKS
	struct lockstat_site sites[LOCKSTAT_SITES];
	unsigned n = lockstat_sites(sites);

	printf(", \"max_get_lock_wait_ms\": %.3f, \"long_holds\": [",
	       g->ls.max_wait_ns / 1e6);
	for (unsigned i = 0; i < n; i++)
		printf("%s{\"at\": \"main%+td\", \"max_ms\": %.3f, \"n\": %llu}",
		       i ? ", " : "", (char *)sites[i].where - (char *)main,
		       sites[i].max_ns / 1e6, (unsigned long long)sites[i].n);
	printf("]");
#else
	(void)g;
#endif
}

/* The grow phase: stores the --objects objects in order, timing each SET,
 * while one thread GETs those stored so far; prints the JSON object's
 * opening and its "grow" member.  0, or -1 when a store failed. */
static int run_grow(struct gs_engine *e, const struct args *a)
{
	uint64_t loaded = 0, max_set = 0, max_cpu = 0, sets_over = 0;
	uint64_t t0 = mono_ns();
	struct getter g[1];
	struct gs_io *io;
	bool started = false;
	int ret = 0;

	if (gs_io_create(e, &io) < 0)
		return -1;
	g_stop = false;
#ifdef ENGINE_SCALE_LOCKS
	lockstat_sites_reset();
#endif
	for (uint64_t k = 0; k < a->objects && !ret; k++) {
		uint64_t c = clock_ns(CLOCK_THREAD_CPUTIME_ID), t = mono_ns(), d;

		ret = store(io, k, a->value, (uint8_t)k);
		d = mono_ns() - t;
		max_set = d > max_set ? d : max_set;
		c = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c;
		max_cpu = c > max_cpu ? c : max_cpu;
		sets_over += d > 1000000;
		__atomic_store_n(&loaded, k + 1, __ATOMIC_RELEASE);
		if (!started && !ret) {
			getters_start(g, 1, e, a, &g_stop, &loaded);
			started = true;
		}
	}
	g_stop = true;
	if (started)
		getters_join(g, 1);
	gs_io_destroy(&io);
	if (ret < 0 || !started) {
		fprintf(stderr, "goblin-engine-scale: store %llu failed\n",
			(unsigned long long)loaded);
		return -1;
	}
	printf("{\n  \"objects\": %llu, \"value\": %llu, \"load_s\": %.2f,\n",
	       (unsigned long long)a->objects, (unsigned long long)a->value,
	       (mono_ns() - t0) / 1e9);
	printf("  \"grow\": {\"objects\": %llu, \"max_set_ms\": %.3f, "
	       "\"max_set_cpu_ms\": %.3f, "
	       "\"sets_over_1ms\": %llu, \"gets\": %llu, \"get_errors\": %llu, "
	       "\"max_get_ms\": %.3f, \"gets_over_1ms\": %llu",
	       (unsigned long long)a->objects, max_set / 1e6, max_cpu / 1e6,
	       (unsigned long long)sets_over, (unsigned long long)g[0].gets,
	       (unsigned long long)(g[0].bad + g[0].misses), g[0].max_ns / 1e6,
	       (unsigned long long)g[0].over_1ms);
	print_locks(&g[0]);
	printf("},\n");
	return 0;
}

struct writer {
	struct gs_engine *e;
	const struct args *a;
	uint64_t sets, errors, max_ns, cp_before, cp_after;
	double seconds;
};

static uint64_t checkpoints(struct gs_engine *e)
{
	struct gs_stats st;

	gs_stats(e, &st);
	return st.checkpoints;
}

/* Overwrites objects in order until a checkpoint completed (and 0.5 s
 * more), or 120 s. */
static void writer_run(struct writer *w)
{
	struct gs_io *io;
	uint64_t t_start = mono_ns(), done_at = 0;

	if (gs_io_create(w->e, &io) < 0) {
		w->errors++;
		return;
	}
	w->cp_before = checkpoints(w->e);
	for (uint64_t k = 0; mono_ns() - t_start < 120000000000ull; k++) {
		uint64_t t0 = mono_ns(), d;

		if (store(io, k % w->a->objects, w->a->value, (uint8_t)k) < 0)
			w->errors++;
		d = mono_ns() - t0;
		w->max_ns = d > w->max_ns ? d : w->max_ns;
		w->sets++;
		if (!done_at && checkpoints(w->e) > w->cp_before)
			done_at = mono_ns();
		if (done_at && mono_ns() - done_at > 500000000ull)
			break;
	}
	w->cp_after = checkpoints(w->e);
	w->seconds = (mono_ns() - t_start) / 1e9;
	gs_io_destroy(&io);
}

static void run_stall(struct gs_engine *e, const struct args *a)
{
	struct writer w = { .e = e, .a = a };
	struct getter g[1];

	g_stop = false;
#ifdef ENGINE_SCALE_LOCKS
	lockstat_sites_reset();
#endif
	getters_start(g, 1, e, a, &g_stop, NULL);
	writer_run(&w);
	g_stop = true;
	getters_join(g, 1);
	printf("  \"stall\": {\"objects\": %llu, \"sets\": %llu, \"set_errors\": %llu, "
	       "\"seconds\": %.2f, \"checkpoints\": %llu, \"max_set_ms\": %.3f, "
	       "\"gets\": %llu, \"get_errors\": %llu, \"max_get_ms\": %.3f, "
	       "\"gets_over_1ms\": %llu",
	       (unsigned long long)a->objects, (unsigned long long)w.sets,
	       (unsigned long long)w.errors, w.seconds,
	       (unsigned long long)(w.cp_after - w.cp_before), w.max_ns / 1e6,
	       (unsigned long long)g[0].gets,
	       (unsigned long long)(g[0].bad + g[0].misses), g[0].max_ns / 1e6,
	       (unsigned long long)g[0].over_1ms);
	print_locks(&g[0]);
	printf("}\n");
}

static void usage(FILE *f)
{
	fprintf(f, "usage: goblin-engine-scale --dir DIR [--objects N] [--value BYTES]\n"
		"                           [--seconds S] [--threads N]\n");
}

/* Fills <a>: 0, 1 after --help, or 2 (usage shown). */
static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option longs[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "objects", required_argument, NULL, 'n' },
		{ "value", required_argument, NULL, 'v' },
		{ "seconds", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	*a = (struct args){ .objects = 1000000, .value = 64, .seconds = 3,
			    .threads = 2 };
	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		switch (c) {
		case 'd': a->dir = optarg; break;
		case 'n': a->objects = strtoull(optarg, NULL, 0); break;
		case 'v': a->value = strtoull(optarg, NULL, 0); break;
		case 's': a->seconds = strtod(optarg, NULL); break;
		case 't': a->threads = strtoull(optarg, NULL, 0); break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return 2;
		}
	}
	if (!a->dir || !a->objects || !a->value || a->value > 4096 ||
	    !a->threads || a->threads > MAX_THREADS) {
		usage(stderr);
		return 2;
	}
	return 0;
}

static int open_engine(struct gs_engine **ep, const struct args *a)
{
	struct gs_config cfg;
	char err[512];
	int ret;

	gs_config_init(&cfg);
	cfg.memory = 1ull << 30;
	cfg.sub_memory = 768ull << 20;
	cfg.no_mlock = true;
	cfg.fresh = true;
	cfg.ssd_size = 64ull << 20;
	cfg.checkpoint_size = 4096;
	cfg.ssd_dir.v[cfg.ssd_dir.n++] = a->dir;
	ret = gs_engine_open(ep, &cfg, err, sizeof(err));
	if (ret < 0)
		fprintf(stderr, "goblin-engine-scale: %s\n", err);
	return ret;
}

int main(int argc, char **argv)
{
	struct gs_engine *e;
	struct args a;
	int ret = parse_args(argc, argv, &a);

	if (ret)
		return ret == 1 ? 0 : 2;
	log_level = LOG_WARN;
	if (open_engine(&e, &a) < 0 || run_grow(e, &a) < 0)
		return 1;
	for (unsigned n = 1; n <= a.threads; n++)
		run_gets(e, &a, n, false);
	run_stall(e, &a);
	printf("}\n");
	gs_engine_close(&e);
	return 0;
}
