/*
 * usage: goblin-bench [--host H] [--port P] [--size N] [--keys N] [options]
 *
 * Closed-loop load generator for Goblin Store and its peers (memcache text
 * protocol or HTTP/1.1): populates keys "gb:0" .. "gb:<keys-1>", then
 * measures gets (and sets, --set-ratio) on a key window, verifying every
 * byte read.  See --help.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "goblin-bench.h"
#include "size.h"

#define MAX_SIZE	(1ULL << 30)
#define MAX_KEYS	(1ULL << 31)
#define MAX_CONNS	1024

static const char usage[] =
"usage: goblin-bench [options]\n"
"Load generator (closed loop, or open with --open-loop): populates keys gb:0 .. gb:<keys-1> with sets,\n"
"then runs gets (and sets) on a key window for --duration seconds, verifying\n"
"every byte; values depend only on (seed, key, version), so a later\n"
"--no-store run verifies what an earlier --populate-only run stored.\n"
"\n"
"  --host H            server host (127.0.0.1)\n"
"  --port P            server port (11211; 80 with --proto http)\n"
"  --proto memcache|http|rdma   memcache text protocol, HTTP/1.1 GET/PUT\n"
"                      on <prefix><key> with keep-alive, or rdma: populate\n"
"                      over memcache (--host, --port), then GETs over\n"
"                      goblin-store's RDMA endpoint (--rdma) (memcache)\n"
"  --http-prefix PATH  URL path before the key, starting with / (/)\n"
"  --rdma HOST:PORT    --proto rdma: the RDMA endpoint (goblin-store --rdma)\n"
"  --rdma-transport verbs|tcp   verbs: rdma_cm + ibverbs RC queue pairs;\n"
"                      tcp: the emulated transport, libfabric's tcp\n"
"                      provider (verbs)\n"
"  --window N          bulk window each queue pair registers: bytes or K/M/G,\n"
"                      at least 4K; larger objects come in window-sized\n"
"                      rounds (8M)\n"
"  --qps N             queue pairs (connections), one GET in flight each (1)\n"
"  --requests N        end the measured phase after N GETs in all, instead\n"
"                      of at --duration (--qps 1 --requests N: serial)\n"
"  --size N            value size for --dist fixed: bytes or K/M/G (256K)\n"
"  --dist fixed|gpd|fb_value   value sizes (fixed):\n"
"                      gpd: generalized Pareto over 256 KiB - 8 MiB,\n"
"                        location 256 KiB, scale 487588, shape 0.5, mean 1 MiB\n"
"                      fb_value: generalized Pareto, location 15, scale\n"
"                        214.476, shape 0.348238 (mutilate), capped at 1 MiB\n"
"  --keys N            keys gb:0 .. gb:N-1 (1024)\n"
"  --hot-start S       measured phase uses keys [S, S+H) (0)\n"
"  --hot-keys H        (keys - S)\n"
"  --key-dist uniform|zipf|sequential   key popularity in the window\n"
"                      (uniform); sequential: each key once, in order, and\n"
"                      the phase ends after the last (or at --duration)\n"
"  --zipf-theta T      zipf exponent in (0, 1); rank 0 = key S (0.99)\n"
"  --seed N            seed for sizes, values and request choice (1)\n"
"  --set-ratio R       fraction of measured requests that are sets (0)\n"
"  --conns N           connections, one request in flight each, up to 1024 (4)\n"
"  --duration T        measured phase length: 500ms, 2s, 1m (10s)\n"
"  --timeout T         give up on a request without progress for T (10s)\n"
"  --rate R            issue at most R requests per second, populate and\n"
"                      measured phase alike (0: as fast as answered) (0)\n"
"  --open-loop fixed|poisson   the measured phase offers --rate requests per\n"
"                      second on a schedule (fixed spacing, or Poisson\n"
"                      arrivals), issued on time whatever is outstanding\n"
"                      (a free connection each; when all are busy a request\n"
"                      waits, counted as queued, and the schedule goes on);\n"
"                      latencies count from each request's intended start\n"
"  --populate-only     populate all keys, then stop\n"
"  --no-store          skip populating: keys were stored by an earlier run\n"
"                      with the same --seed, --size and --dist\n"
"  --verify            check every byte of every value read (default)\n"
"  --no-verify         do not check values\n"
"  --json FILE         write parameters and results as JSON to FILE\n"
"  --quiet             no progress lines on stderr\n"
"  --self-test         check histograms, generators and parsers, then exit\n"
"  --help, --version\n"
"\n"
"Exit status: 0 ok, 1 verify errors or connection failures, 2 bad usage.\n";

enum {
	OPT_HOST = 256, OPT_PORT, OPT_PROTO, OPT_PREFIX, OPT_SIZE, OPT_DIST,
	OPT_KEYS, OPT_HOT_START, OPT_HOT_KEYS, OPT_KEY_DIST, OPT_THETA,
	OPT_SEED, OPT_SET_RATIO, OPT_CONNS, OPT_DURATION, OPT_TIMEOUT,
	OPT_RATE, OPT_OPEN_LOOP, OPT_RDMA, OPT_RDMA_TP, OPT_WINDOW, OPT_QPS,
	OPT_REQUESTS,
	OPT_POPULATE_ONLY, OPT_NO_STORE, OPT_VERIFY, OPT_NO_VERIFY, OPT_JSON,
	OPT_QUIET, OPT_SELF_TEST, OPT_HELP, OPT_VERSION,
};

static const struct option longopts[] = {
	{ "host", required_argument, NULL, OPT_HOST },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "proto", required_argument, NULL, OPT_PROTO },
	{ "http-prefix", required_argument, NULL, OPT_PREFIX },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "dist", required_argument, NULL, OPT_DIST },
	{ "keys", required_argument, NULL, OPT_KEYS },
	{ "hot-start", required_argument, NULL, OPT_HOT_START },
	{ "hot-keys", required_argument, NULL, OPT_HOT_KEYS },
	{ "key-dist", required_argument, NULL, OPT_KEY_DIST },
	{ "zipf-theta", required_argument, NULL, OPT_THETA },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "set-ratio", required_argument, NULL, OPT_SET_RATIO },
	{ "conns", required_argument, NULL, OPT_CONNS },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "open-loop", required_argument, NULL, OPT_OPEN_LOOP },
	{ "rdma", required_argument, NULL, OPT_RDMA },
	{ "rdma-transport", required_argument, NULL, OPT_RDMA_TP },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ "qps", required_argument, NULL, OPT_QPS },
	{ "requests", required_argument, NULL, OPT_REQUESTS },
	{ "populate-only", no_argument, NULL, OPT_POPULATE_ONLY },
	{ "no-store", no_argument, NULL, OPT_NO_STORE },
	{ "verify", no_argument, NULL, OPT_VERIFY },
	{ "no-verify", no_argument, NULL, OPT_NO_VERIFY },
	{ "json", required_argument, NULL, OPT_JSON },
	{ "quiet", no_argument, NULL, OPT_QUIET },
	{ "self-test", no_argument, NULL, OPT_SELF_TEST },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

const char *const gb_key_dist_names[] = { "uniform", "zipf", "sequential",
					   NULL };

static const char *opt_name(int val)
{
	for (const struct option *o = longopts; o->name; o++)
		if (o->val == val)
			return o->name;
	return "?";
}

static _Noreturn __attribute__((format(printf, 1, 2)))
void bad_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "goblin-bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'goblin-bench --help'.\n");
	exit(2);
}

static uint64_t parse_count(const char *opt, const char *s)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || *s == '-' || *end || errno)
		bad_usage("--%s: '%s' is not a whole number", opt, s);
	return v;
}

static double parse_real(const char *opt, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(v))
		bad_usage("--%s: '%s' is not a number", opt, s);
	return v;
}

/* shared/size.h durations: "10", "2s", "500ms", "1m"; returns seconds. */
static double parse_seconds(const char *opt, const char *s)
{
	uint64_t ms;

	if (duration_parse(s, &ms) || ms == 0)
		bad_usage("--%s: '%s' is not a positive duration (500ms, 2s, "
			  "1m)", opt, s);
	return (double)ms / 1e3;
}

static int pick(const char *opt, const char *s, const char *const *names)
{
	for (int i = 0; names[i]; i++)
		if (!strcmp(s, names[i]))
			return i;
	bad_usage("--%s: unknown value '%s'", opt, s);
}

/* What the command line set, for the checks that follow parsing. */
struct parse_seen {
	bool port, size, hot_keys;
	uint64_t port_value;
};

/* The server options: where and how to talk.  False: not one of them. */
static bool parse_server_opt(int c, const char *name, struct gb_opts *o,
			     struct parse_seen *seen)
{
	static const char *const protos[] = { "memcache", "http", "rdma",
					      NULL };

	switch (c) {
	case OPT_HOST:
		if (!*optarg)
			bad_usage("--%s: empty host", name);
		o->host = optarg;
		return true;
	case OPT_PORT:
		seen->port_value = parse_count(name, optarg);
		if (seen->port_value < 1 || seen->port_value > 65535)
			bad_usage("--%s: %s is not a TCP port", name, optarg);
		seen->port = true;
		return true;
	case OPT_PROTO:
		o->proto = (enum gb_proto)pick(name, optarg, protos);
		return true;
	case OPT_PREFIX:
		if (optarg[0] != '/' || strpbrk(optarg, " \r\n"))
			bad_usage("--%s: '%s' must start with / and hold "
				  "no spaces", name, optarg);
		o->http_prefix = optarg;
		return true;
	}
	return false;
}

/* The value and key options: what is stored and which keys are asked. */
static bool parse_data_opt(int c, const char *name, struct gb_opts *o,
			   struct parse_seen *seen)
{
	static const char *const dists[] = { "fixed", "gpd", "fb_value", NULL };

	switch (c) {
	case OPT_SIZE:
		if (size_parse(optarg, &o->size))
			bad_usage("--%s: '%s' is not a size (bytes, or "
				  "with a K, M or G suffix)", name, optarg);
		if (o->size < 1 || o->size > MAX_SIZE)
			bad_usage("--%s: %s is not in [1, 1G]", name, optarg);
		seen->size = true;
		return true;
	case OPT_DIST:
		o->dist = (enum gb_dist)pick(name, optarg, dists);
		return true;
	case OPT_KEYS:
		o->keys = parse_count(name, optarg);
		return true;
	case OPT_HOT_START:
		o->hot_start = parse_count(name, optarg);
		return true;
	case OPT_HOT_KEYS:
		o->hot_keys = parse_count(name, optarg);
		seen->hot_keys = true;
		return true;
	case OPT_KEY_DIST:
		o->key_dist = (enum gb_key_dist)pick(name, optarg, gb_key_dist_names);
		return true;
	case OPT_THETA:
		o->zipf_theta = parse_real(name, optarg);
		if (o->zipf_theta <= 0 || o->zipf_theta >= 1)
			bad_usage("--%s: %s is not in (0, 1)", name, optarg);
		return true;
	case OPT_SEED:
		o->seed = parse_count(name, optarg);
		return true;
	}
	return false;
}

/* The load options: how many requests, how fast, for how long. */
static bool parse_load_opt(int c, const char *name, struct gb_opts *o)
{
	uint64_t conns;

	switch (c) {
	case OPT_SET_RATIO:
		o->set_ratio = parse_real(name, optarg);
		if (o->set_ratio < 0 || o->set_ratio > 1)
			bad_usage("--%s: %s is not in [0, 1]", name, optarg);
		return true;
	case OPT_CONNS:
		conns = parse_count(name, optarg);
		if (conns < 1 || conns > MAX_CONNS)
			bad_usage("--%s: %s is not in [1, 1024]", name, optarg);
		o->conns = (unsigned)conns;
		return true;
	case OPT_DURATION:
		o->duration = parse_seconds(name, optarg);
		return true;
	case OPT_TIMEOUT:
		o->timeout = parse_seconds(name, optarg);
		return true;
	case OPT_RATE:
		o->rate = parse_real(name, optarg);
		if (o->rate < 0)
			bad_usage("--%s: %s is negative", name, optarg);
		return true;
	case OPT_OPEN_LOOP:
		o->arrivals = (enum gb_arrivals)pick(name, optarg,
						     gb_arrivals_names);
		if (o->arrivals == GB_ARRIVALS_NONE)
			bad_usage("--%s: '%s' is not fixed or poisson", name,
				  optarg);
		return true;
	}
	return false;
}

/* The RDMA options (--proto rdma).  False: not one of them. */
static bool parse_rdma_opt(int c, const char *name, struct gb_opts *o)
{
	const char *why;
	uint64_t n;

	switch (c) {
	case OPT_RDMA:
		if (gb_rdma_parse_addr(optarg, &o->rdma, &why))
			bad_usage("--%s: '%s' %s", name, optarg, why);
		return true;
	case OPT_RDMA_TP:
		o->rdma.transport = (enum gb_rdma_tp)pick(name, optarg,
							  gb_rdma_tp_names);
		return true;
	case OPT_WINDOW:
		if (size_parse(optarg, &o->rdma.window))
			bad_usage("--%s: '%s' is not a size (bytes, or "
				  "with a K, M or G suffix)", name, optarg);
		return true;
	case OPT_QPS:
		n = parse_count(name, optarg);
		o->rdma.qps = n > GB_RDMA_QPS_MAX ? 0 : (unsigned)n;
		return true;
	case OPT_REQUESTS:
		o->rdma.requests = parse_count(name, optarg);
		if (!o->rdma.requests)
			bad_usage("--%s: must be at least 1", name);
		return true;
	}
	return false;
}

/* The run-mode switches, output and the options that exit at once. */
static void parse_mode_opt(int c, const char *name, char **argv,
			   struct gb_opts *o)
{
	switch (c) {
	case OPT_POPULATE_ONLY:
		o->populate_only = true;
		break;
	case OPT_NO_STORE:
		o->no_store = true;
		break;
	case OPT_VERIFY:
		o->verify = true;
		break;
	case OPT_NO_VERIFY:
		o->verify = false;
		break;
	case OPT_JSON:
		if (!*optarg)
			bad_usage("--%s: empty file name", name);
		o->json = optarg;
		break;
	case OPT_QUIET:
		o->quiet = true;
		break;
	case OPT_SELF_TEST:
		exit(gb_self_test() ? 1 : 0);
	case OPT_HELP:
		fputs(usage, stdout);
		exit(0);
	case OPT_VERSION:
		printf("goblin-bench %s\n", GB_VERSION);
		exit(0);
	default:
		if (optopt)
			bad_usage("--%s needs a value", opt_name(optopt));
		bad_usage("unknown option '%s'", argv[optind - 1]);
	}
}

/* Defaults that depend on other options, and the checks across options. */
static void check_opts(struct gb_opts *o, const struct parse_seen *seen)
{
	const char *why;

	o->port = seen->port ? (unsigned)seen->port_value :
		  o->proto == GB_PROTO_HTTP ? 80 : 11211;
	if (seen->size && o->dist != GB_DIST_FIXED)
		bad_usage("--size applies to --dist fixed only, not %s",
			  gb_dist_name(o->dist));
	if (o->keys < 1 || o->keys > MAX_KEYS)
		bad_usage("--keys: must be in [1, 2^31]");
	if (o->hot_start >= o->keys)
		bad_usage("--hot-start: must be below --keys");
	if (!seen->hot_keys)
		o->hot_keys = o->keys - o->hot_start;
	if (o->hot_keys < 1 || o->hot_keys > o->keys - o->hot_start)
		bad_usage("--hot-keys: --hot-start + --hot-keys must be in "
			  "[1, --keys]");
	if (o->populate_only && o->no_store)
		bad_usage("--populate-only and --no-store exclude each other");
	if (o->arrivals != GB_ARRIVALS_NONE && o->rate <= 0)
		bad_usage("--open-loop needs --rate R > 0 (the offered rate)");
	why = gb_rdma_check_opts(o);
	if (why)
		bad_usage("%s", why);
}

static void parse(int argc, char **argv, struct gb_opts *o)
{
	struct parse_seen seen = { 0 };
	int c;

	*o = (struct gb_opts){
		.host = "127.0.0.1", .proto = GB_PROTO_MEMCACHE,
		.dist = GB_DIST_FIXED, .size = 256 * 1024, .keys = 1024,
		.key_dist = GB_KEYS_UNIFORM, .zipf_theta = 0.99, .seed = 1,
		.conns = 4, .duration = 10, .timeout = 10, .http_prefix = "/",
		.verify = true,
		.rdma = { .transport = GB_RDMA_VERBS, .qps = 1,
			  .window = GB_RDMA_WINDOW_DEFAULT },
	};
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		const char *name = opt_name(c);

		if (!parse_server_opt(c, name, o, &seen) &&
		    !parse_data_opt(c, name, o, &seen) &&
		    !parse_load_opt(c, name, o) &&
		    !parse_rdma_opt(c, name, o))
			parse_mode_opt(c, name, argv, o);
	}
	if (optind < argc)
		bad_usage("unexpected argument '%s'", argv[optind]);
	check_opts(o, &seen);
}

/* The phases: --proto rdma populates over memcache, then measures over
 * the RDMA endpoint.  0, or -1 when nothing could connect. */
static int measure(const struct gb_opts *o, const struct gb_sizer *sizer,
		   const struct gb_sizes *sizes, struct gb_result *res)
{
	struct gb_opts mc;

	if (o->proto != GB_PROTO_RDMA)
		return gb_run(o, sizer, res);
	if (!o->no_store) {
		mc = *o;
		mc.proto = GB_PROTO_MEMCACHE;
		mc.populate_only = true;
		if (gb_run(&mc, sizer, res))
			return -1;
		if (!gb_result_ok(res)) {
			fprintf(stderr, "goblin-bench: populating failed; no "
				"rdma run\n");
			return 0;
		}
	}
	if (o->populate_only)
		return 0;
	return gb_rdma_run(o, sizer, sizes, res);
}

int main(int argc, char **argv)
{
	struct gb_opts o;
	struct gb_sizer sizer;
	struct gb_sizes sizes;
	struct gb_result *res;
	int rc;

	parse(argc, argv, &o);
	gb_sizer_init(&sizer, o.dist, o.size, o.seed);
	gb_sizes_compute(&o, &sizer, &sizes);
	res = calloc(1, sizeof(*res));
	if (!res) {
		fprintf(stderr, "goblin-bench: out of memory\n");
		return 1;
	}
	if (measure(&o, &sizer, &sizes, res)) {
		free(res);
		return 1;
	}
	gb_report_table(stdout, &o, &sizes, res);
	fflush(stdout);
	if (o.json) {
		rc = gb_report_json(o.json, &o, &sizes, res);
		if (rc) {
			fprintf(stderr, "goblin-bench: cannot write %s: %s\n",
				o.json, strerror(-rc));
			free(res);
			return 1;
		}
	}
	rc = gb_result_ok(res) ? 0 : 1;
	free(res);
	return rc;
}
