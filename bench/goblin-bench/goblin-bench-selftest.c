/*
 * goblin-bench --self-test: checks what a run against a server cannot show
 * on its own: histogram error bounds, generator determinism and means, and
 * the response parser on canned answers split at every byte.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "goblin-bench.h"

static int checks, failed;

#define CHECK(cond, ...) do {						\
	checks++;							\
	if (!(cond)) {							\
		failed++;						\
		fprintf(stderr, "self-test FAILED (%s:%d): ", __FILE__,	\
			__LINE__);					\
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
	}								\
} while (0)

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void test_hist(void)
{
	static const double ps[] = { 0.1, 1, 50, 90, 99, 99.9, 100 };
	enum { N = 100000 };
	struct gb_hist *h = malloc(sizeof(*h));
	uint64_t *v = malloc(N * sizeof(*v)), prev = 0;
	struct gb_rng r;
	bool contiguous = true, covers = true;

	if (!h || !v) {
		CHECK(0, "out of memory");
		goto out;
	}
	for (uint64_t x = 1; x < (1ULL << 40); x += x / 7 + 1) {
		unsigned i = gb_hist_index(x);

		covers &= gb_hist_bucket_high(i) >= x &&
			  gb_hist_index(gb_hist_bucket_high(i)) == i &&
			  (i == 0 || gb_hist_bucket_high(i - 1) < x);
	}
	CHECK(covers, "bucket bounds do not cover their values");
	for (unsigned i = 1; i < GB_HIST_BUCKETS; i++) {
		contiguous &= gb_hist_bucket_high(i) > prev &&
			      gb_hist_index(prev + 1) == i;
		prev = gb_hist_bucket_high(i);
	}
	CHECK(contiguous && prev == UINT64_MAX, "buckets not contiguous");

	gb_hist_reset(h);
	gb_rng_seed(&r, 42);
	for (int i = 0; i < N; i++) {
		/* log-uniform over 1 ns .. 10 s */
		v[i] = (uint64_t)exp(gb_rng_unit(&r) * log(1e10));
		gb_hist_record(h, v[i]);
	}
	qsort(v, N, sizeof(*v), cmp_u64);
	CHECK(h->count == N && h->min == v[0] && h->max == v[N - 1],
	      "count/min/max");
	for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
		uint64_t rank = (uint64_t)ceil(ps[i] / 100 * N);
		uint64_t exact = v[rank - 1], got = gb_hist_percentile(h, ps[i]);

		CHECK(got >= exact && got <= exact + exact / GB_HIST_HALF,
		      "p%g: %" PRIu64 " vs exact %" PRIu64, ps[i], got, exact);
	}
	gb_hist_reset(h);
	CHECK(gb_hist_percentile(h, 50) == 0, "empty histogram");
out:
	free(h);
	free(v);
}

static void test_values(void)
{
	enum { N = 10000 };
	uint8_t *a = malloc(N), *b = malloc(N);
	uint64_t tag = gb_value_tag(7), base = gb_value_base(tag, 3, 0);
	struct gb_rng r;
	bool slices = true;

	if (!a || !b) {
		CHECK(0, "out of memory");
		goto out;
	}
	gb_value_fill(base, 0, a, N);
	CHECK(gb_value_check(base, 0, a, N) == N, "value does not verify");
	gb_rng_seed(&r, 1);
	for (int i = 0; i < 2000; i++) {
		size_t off = gb_rng_below(&r, N), n = gb_rng_below(&r, N - off);

		gb_value_fill(base, off, b, n);
		slices &= !memcmp(a + off, b, n) &&
			  gb_value_check(base, off, a + off, n) == n &&
			  (n == 0 || gb_value_byte(base, off) == a[off]);
	}
	CHECK(slices, "slices at odd offsets disagree with the whole value");
	for (size_t at = 0; at < 24; at++) {
		a[at + 100] ^= 0x10;
		CHECK(gb_value_check(base, 0, a, N) == at + 100 &&
		      gb_value_check(base, 97, a + 97, 50) == at + 3,
		      "corruption at %zu not located", at + 100);
		a[at + 100] ^= 0x10;
	}
	gb_value_fill(gb_value_base(tag, 3, 1), 0, b, N);
	CHECK(gb_value_check(base, 0, b, N) < 8, "versions 0 and 1 agree");
	gb_value_fill(gb_value_base(gb_value_tag(8), 3, 0), 0, b, N);
	CHECK(gb_value_check(base, 0, b, N) < 8, "seeds 7 and 8 agree");
	gb_value_fill(gb_value_base(tag, 4, 0), 0, b, N);
	CHECK(gb_value_check(base, 0, b, N) < 8, "keys 3 and 4 agree");
out:
	free(a);
	free(b);
}

static void test_sizes(void)
{
	enum { N = 200000 };
	struct gb_sizer z, z2;
	uint64_t lo = UINT64_MAX, hi = 0, differ = 0;
	double sum = 0, target;

	gb_sizer_init(&z, GB_DIST_FIXED, 4096, 1);
	CHECK(gb_size_of(&z, 0) == 4096 && gb_size_of(&z, 99) == 4096, "fixed");

	gb_sizer_init(&z, GB_DIST_GPD, 0, 1);
	gb_sizer_init(&z2, GB_DIST_GPD, 0, 2);
	target = gb_sizer_mean(&z);
	CHECK(fabs(target / (1 << 20) - 1) < 0.005, "gpd mean %.0f, not 1 MiB",
	      target);
	for (uint64_t k = 0; k < N; k++) {
		uint64_t n = gb_size_of(&z, k);

		sum += (double)n;
		lo = n < lo ? n : lo;
		hi = n > hi ? n : hi;
		differ += n != gb_size_of(&z2, k);
	}
	CHECK(lo >= 256 * 1024 && hi < 8 * 1024 * 1024 && hi > 6 * 1024 * 1024,
	      "gpd range [%" PRIu64 ", %" PRIu64 "]", lo, hi);
	CHECK(fabs(sum / N / target - 1) < 0.01, "gpd realised mean %.0f vs %.0f",
	      sum / N, target);
	CHECK(differ > N * 0.99, "gpd sizes ignore the seed");
	CHECK(gb_size_of(&z, 12345) == gb_size_of(&z, 12345), "not deterministic");

	gb_sizer_init(&z, GB_DIST_FB_VALUE, 0, 1);
	target = GB_FB_LOC + GB_FB_SCALE / (1 - GB_FB_SHAPE);
	CHECK(fabs(gb_sizer_mean(&z) / target - 1) < 0.01,
	      "fb_value mean %.1f vs analytic %.1f", gb_sizer_mean(&z), target);
	sum = 0;
	lo = UINT64_MAX;
	for (uint64_t k = 0; k < N; k++) {
		uint64_t n = gb_size_of(&z, k);

		sum += (double)n;
		lo = n < lo ? n : lo;
	}
	CHECK(lo >= 15 && lo < 20, "fb_value minimum %" PRIu64, lo);
	CHECK(fabs(sum / N / target - 1) < 0.02, "fb_value realised mean %.1f "
	      "vs %.1f", sum / N, target);
}

static void test_zipf(void)
{
	enum { N = 1000, DRAWS = 200000 };
	struct gb_zipf z;
	struct gb_rng r;
	uint64_t *hits = calloc(N, sizeof(*hits)), top = 0;
	double exact = 0;
	bool in_range = true;

	if (!hits) {
		CHECK(0, "out of memory");
		return;
	}
	gb_zipf_init(&z, N, 0.99);
	gb_rng_seed(&r, 3);
	for (int i = 0; i < DRAWS; i++) {
		uint64_t k = gb_zipf_next(&z, &r);

		in_range &= k < N;
		hits[k < N ? k : 0]++;
	}
	CHECK(in_range, "zipf draw out of range");
	for (int i = 1; i < N; i++)
		top = hits[i] > hits[top] ? (uint64_t)i : top;
	CHECK(top == 0, "zipf rank 0 is not the most popular");
	CHECK(fabs((double)hits[0] / DRAWS * z.zetan - 1) < 0.05,
	      "zipf rank 0 share %.4f vs %.4f", (double)hits[0] / DRAWS,
	      1 / z.zetan);
	for (uint64_t i = 3000000; i >= 1; i--)
		exact += pow((double)i, -0.99);
	CHECK(fabs(gb_zeta(3000000, 0.99) / exact - 1) < 1e-9,
	      "zeta tail approximation %.9g vs %.9g",
	      gb_zeta(3000000, 0.99), exact);
	free(hits);
}

struct sink {
	char buf[256];
	size_t len;
	bool ordered;
};

static void sink_body(void *ctx, uint64_t off, const char *p, size_t n,
		      uint64_t total)
{
	struct sink *s = ctx;

	s->ordered &= off == s->len && off + n <= total;
	if (s->len + n <= sizeof(s->buf))
		memcpy(s->buf + s->len, p, n);
	s->len += n;
}

/* Feeds <wire> split at <cut> (0: whole; 1: byte by byte; else two
 * pieces); returns the outcome and the bytes consumed in *<used>. */
static enum gb_outcome feed(struct gb_resp *r, enum gb_proto proto,
			    enum gb_op op, const char *wire, size_t cut,
			    struct sink *s, size_t *used)
{
	size_t n = strlen(wire), at = 0, step, took;
	enum gb_outcome out = GB_RESP_MORE;

	memset(s, 0, sizeof(*s));
	s->ordered = true;
	gb_resp_start(r, proto, op, "gb:7");
	while (at < n && out == GB_RESP_MORE) {
		step = cut == 1 ? 1 : cut && at < cut ? cut - at : n - at;
		took = gb_resp_feed(r, wire + at, step, sink_body, s, &out);
		at += took;
		if (out == GB_RESP_MORE && took != step)
			return GB_RESP_MORE;	/* stalled: a parser bug */
	}
	*used = at;
	return out;
}

struct parse_case {
	enum gb_proto proto;
	enum gb_op op;
	const char *wire;
	enum gb_outcome want;
	const char *body;	/* value the sink must see, or NULL */
	size_t extra;		/* bytes after the answer, left unconsumed */
	bool close_after;
};

static const struct parse_case parse_cases[] = {
	{ GB_PROTO_MEMCACHE, GB_OP_GET,
	  "VALUE gb:7 0 10\r\n0123456789\r\nEND\r\n", GB_RESP_HIT,
	  "0123456789", 0, false },
	{ GB_PROTO_MEMCACHE, GB_OP_GET,
	  "VALUE gb:7 5 3 991\r\n\r\nE\r\nEND\r\n", GB_RESP_HIT, "\r\nE", 0,
	  false },
	{ GB_PROTO_MEMCACHE, GB_OP_GET, "END\r\nXY", GB_RESP_MISS, NULL, 2,
	  false },
	{ GB_PROTO_MEMCACHE, GB_OP_GET, "SERVER_ERROR out of memory\r\n",
	  GB_RESP_ERROR, NULL, 0, false },
	{ GB_PROTO_MEMCACHE, GB_OP_GET, "VALUE gb:8 0 1\r\nx\r\nEND\r\n",
	  GB_RESP_PROTO, NULL, 0, false },
	{ GB_PROTO_MEMCACHE, GB_OP_GET, "VALUE gb:7 0 1\r\nxy\r\nEND\r\n",
	  GB_RESP_PROTO, NULL, 0, false },
	{ GB_PROTO_MEMCACHE, GB_OP_GET, "VALUE gb:7 0 -1\r\n", GB_RESP_PROTO,
	  NULL, 0, false },
	{ GB_PROTO_MEMCACHE, GB_OP_GET, "HELLO\r\n", GB_RESP_PROTO, NULL, 0,
	  false },
	{ GB_PROTO_MEMCACHE, GB_OP_SET, "STORED\r\n", GB_RESP_STORED, NULL, 0,
	  false },
	{ GB_PROTO_MEMCACHE, GB_OP_SET, "NOT_STORED\r\n", GB_RESP_ERROR, NULL,
	  0, false },
	{ GB_PROTO_MEMCACHE, GB_OP_SET, "CLIENT_ERROR bad data chunk\r\n",
	  GB_RESP_ERROR, NULL, 0, false },
	{ GB_PROTO_HTTP, GB_OP_GET, "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n"
	  "Content-Type: x\r\n\r\nhello", GB_RESP_HIT, "hello", 0, false },
	{ GB_PROTO_HTTP, GB_OP_GET, "HTTP/1.1 100 Continue\r\n\r\n"
	  "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi",
	  GB_RESP_HIT, "hi", 0, true },
	{ GB_PROTO_HTTP, GB_OP_GET, "HTTP/1.1 404 Not Found\r\n"
	  "Content-Length: 9\r\n\r\nnot foundZ", GB_RESP_MISS, NULL, 1, false },
	{ GB_PROTO_HTTP, GB_OP_GET, "HTTP/1.0 200 OK\nContent-Length: 1\n\nz",
	  GB_RESP_HIT, "z", 0, true },
	{ GB_PROTO_HTTP, GB_OP_GET, "HTTP/1.1 200 OK\r\n"
	  "Transfer-Encoding: chunked\r\n\r\n", GB_RESP_PROTO, NULL, 0, false },
	{ GB_PROTO_HTTP, GB_OP_GET, "HTTP/1.1 200 OK\r\n\r\n", GB_RESP_PROTO,
	  NULL, 0, false },
	{ GB_PROTO_HTTP, GB_OP_GET, "HTTP/1.1 500 Oops\r\nContent-Length: 3\r\n"
	  "\r\nabc", GB_RESP_ERROR, NULL, 0, false },
	{ GB_PROTO_HTTP, GB_OP_GET, "SPDY 200\r\n", GB_RESP_PROTO, NULL, 0,
	  false },
	{ GB_PROTO_HTTP, GB_OP_SET, "HTTP/1.1 201 Created\r\n"
	  "Content-Length: 0\r\n\r\n", GB_RESP_STORED, NULL, 0, false },
	{ GB_PROTO_HTTP, GB_OP_SET, "HTTP/1.1 204 No Content\r\n\r\n",
	  GB_RESP_STORED, NULL, 0, false },
	{ GB_PROTO_HTTP, GB_OP_SET, "HTTP/1.1 413 Too Large\r\n"
	  "Content-Length: 0\r\nConnection: keep-alive, close\r\n\r\n",
	  GB_RESP_ERROR, NULL, 0, true },
};

static void test_parser(void)
{
	struct gb_resp *r = malloc(sizeof(*r));
	struct sink s;
	char big[GB_LINE_MAX + 16];
	size_t used;

	if (!r) {
		CHECK(0, "out of memory");
		return;
	}
	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		const struct parse_case *c = &parse_cases[i];
		size_t n = strlen(c->wire);

		for (size_t cut = 0; cut < n; cut++) {
			enum gb_outcome out = feed(r, c->proto, c->op, c->wire,
						   cut, &s, &used);
			bool ok = out == c->want;

			if (ok && c->want != GB_RESP_PROTO)
				ok = used == n - c->extra &&
				     r->close_after == c->close_after;
			if (ok && c->body)
				ok = s.ordered && s.len == strlen(c->body) &&
				     !memcmp(s.buf, c->body, s.len);
			if (ok && !c->body && c->want != GB_RESP_PROTO)
				ok = s.len == 0;
			if (ok && (out == GB_RESP_ERROR || out == GB_RESP_PROTO))
				ok = r->msg[0] != '\0';
			CHECK(ok, "parse case %zu split at %zu: outcome %d, want %d",
			      i, cut, out, c->want);
		}
	}
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK(feed(r, GB_PROTO_MEMCACHE, GB_OP_GET, big, 0, &s, &used) ==
	      GB_RESP_PROTO, "overlong line accepted");
	free(r);
}

static void test_requests(void)
{
	char buf[256];

	gb_key_name(buf, sizeof(buf), 42);
	CHECK(!strcmp(buf, "gb:42"), "key name %s", buf);
	gb_req_head(buf, sizeof(buf), GB_PROTO_MEMCACHE, GB_OP_SET, "gb:1", 262144,
		    "h", "/");
	CHECK(!strcmp(buf, "set gb:1 0 0 262144\r\n"), "memcache set head");
	CHECK(!strcmp(gb_req_tail(GB_PROTO_MEMCACHE, GB_OP_SET), "\r\n"),
	      "memcache set tail");
	gb_req_head(buf, sizeof(buf), GB_PROTO_MEMCACHE, GB_OP_GET, "gb:1", 9,
		    "h", "/");
	CHECK(!strcmp(buf, "get gb:1\r\n"), "memcache get head");
	gb_req_head(buf, sizeof(buf), GB_PROTO_HTTP, GB_OP_SET, "gb:1", 5,
		    "h:8080", "/c/");
	CHECK(!strcmp(buf, "PUT /c/gb:1 HTTP/1.1\r\nHost: h:8080\r\n"
		      "Content-Length: 5\r\n\r\n"), "http put head");
	CHECK(gb_req_head(buf, 8, GB_PROTO_HTTP, GB_OP_GET, "gb:1", 0, "h", "/")
	      == 0, "truncated head not refused");
}

/* --open-loop schedules: fixed spacing exact, Poisson counts and gaps
 * within their statistics, the backlog counted once per waiting request. */
static void test_sched(void)
{
	struct gb_sched s, t;
	uint64_t n = 0, at, prev = 0;
	double gap, sum = 0, sq = 0, mean, cv;
	bool exact = true, same = true, rising = true;

	gb_sched_init(&s, GB_ARRIVALS_FIXED, 1000, 1, 0, 1000000000);
	CHECK(gb_sched_total(&s) == 1000, "fixed 1000/s over 1 s: %" PRIu64
	      " arrivals", gb_sched_total(&s));
	CHECK(gb_sched_due(&s, 0), "the first fixed arrival is due at the start");
	for (uint64_t k = 0; k < 1000; k++)
		exact &= gb_sched_take(&s) == k * 1000000;
	CHECK(exact && gb_sched_next(&s) == UINT64_MAX &&
	      !gb_sched_due(&s, UINT64_MAX - 1),
	      "fixed arrivals at k ms exactly, none at or after the end");

	gb_sched_init(&s, GB_ARRIVALS_FIXED, 1000, 1, 0, 1000000000);
	gb_sched_note_backlog(&s, 5500000);	/* arrivals at 0..5 ms */
	CHECK(s.backlog_max == 6 && s.queued == 6, "backlog after 5.5 ms "
	      "with nothing issued: %" PRIu64 " (queued %" PRIu64 "), want 6",
	      s.backlog_max, s.queued);
	gb_sched_take(&s);
	gb_sched_take(&s);
	gb_sched_note_backlog(&s, 5500000);
	gb_sched_note_backlog(&s, 7500000);	/* two more arrive */
	CHECK(s.backlog_max == 6 && s.queued == 8 && !gb_sched_due(&s, 1999999)
	      && gb_sched_due(&s, 2000000), "backlog: each waiting request "
	      "counted once (queued %" PRIu64 ", want 8), the third due at 2 ms",
	      s.queued);

	gb_sched_init(&s, GB_ARRIVALS_POISSON, 1000, 7, 0, 100000000000ULL);
	gb_sched_init(&t, GB_ARRIVALS_POISSON, 1000, 7, 0, 100000000000ULL);
	while ((at = gb_sched_next(&s)) != UINT64_MAX) {
		rising &= at >= prev;
		same &= gb_sched_take(&t) == at;
		gap = (double)(at - prev);
		sum += gap;
		sq += gap * gap;
		prev = gb_sched_take(&s);
		n++;
	}
	mean = sum / (double)n;
	cv = sqrt(sq / (double)n - mean * mean) / mean;
	/* 100 000 expected, standard deviation 316; exponential gaps: cv 1 */
	CHECK(n > 98500 && n < 101500 && fabs(mean / 1e6 - 1) < 0.02 &&
	      fabs(cv - 1) < 0.03, "poisson 1000/s over 100 s: %" PRIu64
	      " arrivals, mean gap %.4f ms, cv %.3f", n, mean / 1e6, cv);
	gb_sched_init(&t, GB_ARRIVALS_POISSON, 1000, 7, 0, 100000000000ULL);
	CHECK(rising && same && gb_sched_total(&t) == n,
	      "poisson arrivals rise and repeat with the seed");
}

/* --rdma HOST:PORT and the checks --proto rdma puts on other options. */
static void test_rdma_opts(void)
{
	static const char *const bad[] = {
		"", "host", "host:", ":80", "host:0", "host:65536", "host:-1",
		"host:80x", "a:b:80", "[::1]80", "[::1", "[]:80",
	};
	struct gb_rdma_opts r = { .port = 0 };
	struct gb_opts o = {
		.proto = GB_PROTO_RDMA, .duration = 1,
		.rdma = { .transport = GB_RDMA_VERBS, .qps = 1,
			  .window = GB_RDMA_WINDOW_DEFAULT },
	};
	const char *why = NULL;

	CHECK(!gb_rdma_parse_addr("10.0.0.2:7471", &r, &why) &&
	      !strcmp(r.host, "10.0.0.2") && r.port == 7471,
	      "--rdma 10.0.0.2:7471 -> %s %u", r.host, r.port);
	CHECK(!gb_rdma_parse_addr("[fe80::1]:1", &r, &why) &&
	      !strcmp(r.host, "fe80::1") && r.port == 1,
	      "--rdma [fe80::1]:1 -> %s %u", r.host, r.port);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		CHECK(gb_rdma_parse_addr(bad[i], &r, &why) && why,
		      "--rdma '%s' refused", bad[i]);
	}
	CHECK(gb_rdma_check_opts(&o) != NULL, "--proto rdma without --rdma");
	o.rdma.port = 7471;
	CHECK(gb_rdma_check_opts(&o) == NULL, "--proto rdma --rdma H:P: %s",
	      gb_rdma_check_opts(&o));
	o.rdma.window = GB_RDMA_WINDOW_MIN - 1;
	CHECK(gb_rdma_check_opts(&o) != NULL, "--window below 4K");
	o.rdma.window = GB_RDMA_WINDOW_MIN;
	CHECK(gb_rdma_check_opts(&o) == NULL, "--window 4K");
	o.rdma.qps = 0;
	CHECK(gb_rdma_check_opts(&o) != NULL, "--qps 0 (or above 256)");
	o.rdma.qps = GB_RDMA_QPS_MAX;
	o.set_ratio = 0.1;
	CHECK(gb_rdma_check_opts(&o) != NULL, "--proto rdma --set-ratio");
	o.set_ratio = 0;
	o.rate = 10;
	CHECK(gb_rdma_check_opts(&o) != NULL, "--proto rdma --rate");
	o.rate = 0;
	o.proto = GB_PROTO_MEMCACHE;
	CHECK(gb_rdma_check_opts(&o) != NULL, "--qps without --proto rdma");
	o.rdma = (struct gb_rdma_opts){ .transport = GB_RDMA_VERBS, .qps = 1,
					.window = GB_RDMA_WINDOW_DEFAULT };
	CHECK(gb_rdma_check_opts(&o) == NULL, "memcache, rdma defaults");
	CHECK(!strcmp(gb_rdma_tp_names[GB_RDMA_VERBS], "verbs") &&
	      !strcmp(gb_rdma_tp_names[GB_RDMA_TCP], "tcp") &&
	      !gb_rdma_tp_names[2], "transport names verbs, tcp");
}

/* Merging per-queue-pair histograms keeps every sample. */
static void test_hist_merge(void)
{
	static struct gb_hist a, b, all;

	gb_hist_reset(&a);
	gb_hist_reset(&b);
	gb_hist_reset(&all);
	for (uint64_t v = 1; v <= 10000; v++) {
		gb_hist_record(v % 3 ? &a : &b, v * 37);
		gb_hist_record(&all, v * 37);
	}
	gb_hist_merge(&a, &b);
	CHECK(a.count == all.count && a.sum == all.sum && a.min == all.min &&
	      a.max == all.max && !memcmp(a.bucket, all.bucket,
					  sizeof(a.bucket)),
	      "merged histogram equals the one that saw every sample");
}

int gb_self_test(void)
{
	test_rdma_opts();
	test_hist_merge();
	test_hist();
	test_values();
	test_sizes();
	test_zipf();
	test_parser();
	test_requests();
	test_sched();
	printf("self-test: %d checks, %d failed\n", checks, failed);
	return failed;
}
