/*
 * goblin-bench --proto rdma: the measured phase over goblin-store's RDMA
 * endpoint (storaged/rdma/rdma.h), GETs only.
 *
 *   main thread: connects --qps clients (one RC queue pair and one
 *   registered --window each), starts one thread per queue pair, ends the
 *   phase (--duration, or --requests GETs in all), merges the counters
 *
 *   queue pair thread: pick key -> rdma_client_get() (one GET in flight)
 *   -> times (VALUE line, last BULK_READY, END) -> verify every byte
 *   against the generator -> next
 *
 * A failed GET (the connection broke) is lost and the queue pair connects
 * again; STREAK_MAX failures in a row and it gives up.  SERVER_ERROR and
 * CLIENT_ERROR answers are errors the connection survives.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "goblin-bench.h"
#include "rdma_client.h"

#define NSEC		1000000000ULL
#define PRINT_MAX	10
#define STREAK_MAX	5

const char *const gb_rdma_tp_names[] = { "verbs", "tcp", NULL };

struct rbench;

struct qp {
	struct rbench *b;
	unsigned id;
	pthread_t th;
	bool started;
	struct rdma_client *cl;
	struct gb_rng rng;
	char *out;
	struct gb_stats st;
};

struct rbench {
	const struct gb_opts *o;
	const struct gb_sizer *sizer;
	const struct rdma_transport *tp;
	struct gb_zipf zipf;
	uint64_t vtag, cap;
	struct qp *qps;
	atomic_uint_fast64_t issued, done, bytes, bad, next_key;
	atomic_uint running;
	atomic_bool stop;
	atomic_uint printed;
};

static const struct rdma_transport *transport(enum gb_rdma_tp t)
{
	return t == GB_RDMA_VERBS ? &rdma_verbs : &rdma_fabric;
}

static __attribute__((format(printf, 2, 3)))
void say(struct rbench *b, const char *fmt, ...)
{
	unsigned n = atomic_fetch_add(&b->printed, 1);
	va_list ap;

	if (n > PRINT_MAX)
		return;
	if (n == PRINT_MAX) {
		fprintf(stderr, "goblin-bench: further rdma messages are not "
			"shown\n");
		return;
	}
	va_start(ap, fmt);
	fprintf(stderr, "goblin-bench: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

int gb_rdma_parse_addr(const char *s, struct gb_rdma_opts *r,
		       const char **why)
{
	const char *colon, *host = s, *end;
	size_t hlen;
	char *pend;
	unsigned long port;

	if (*s == '[') {
		end = strchr(s, ']');
		if (!end || end[1] != ':') {
			*why = "is not [V6ADDR]:PORT";
			return -1;
		}
		host = s + 1;
		hlen = (size_t)(end - host);
		colon = end + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || strchr(s, ':') != colon) {
			*why = "is not HOST:PORT";
			return -1;
		}
		hlen = (size_t)(colon - s);
	}
	if (!hlen || hlen >= sizeof(r->host)) {
		*why = "has no host, or one too long";
		return -1;
	}
	errno = 0;
	port = strtoul(colon + 1, &pend, 10);
	if (!colon[1] || *pend || errno || colon[1] == '-' || port < 1 ||
	    port > 65535) {
		*why = "has no port in [1, 65535]";
		return -1;
	}
	memcpy(r->host, host, hlen);
	r->host[hlen] = '\0';
	r->port = (unsigned)port;
	return 0;
}

const char *gb_rdma_check_opts(const struct gb_opts *o)
{
	const struct gb_rdma_opts *r = &o->rdma;

	if (o->proto != GB_PROTO_RDMA)
		return r->port || r->requests || r->qps != 1 ||
		       r->window != GB_RDMA_WINDOW_DEFAULT ||
		       r->transport != GB_RDMA_VERBS ?
		       "--rdma, --rdma-transport, --window, --qps and "
		       "--requests need --proto rdma" : NULL;
	if (!r->port && !o->populate_only)
		return "--proto rdma needs --rdma HOST:PORT (the endpoint "
		       "to GET from)";
	if (r->window < GB_RDMA_WINDOW_MIN || r->window > GB_RDMA_WINDOW_MAX)
		return "--window must be in [4K, 1G]";
	if (r->qps < 1 || r->qps > GB_RDMA_QPS_MAX)
		return "--qps must be in [1, 256]";
	if (o->set_ratio > 0)
		return "--proto rdma only GETs: --set-ratio must be 0";
	if (o->arrivals != GB_ARRIVALS_NONE || o->rate > 0)
		return "--proto rdma is closed loop: no --open-loop or --rate";
	return NULL;
}

/* Whether <out>[0, len) is <key>'s value (version 0: nothing sets keys
 * during an rdma run).  Says what is wrong the first times. */
static bool verify(struct qp *q, uint64_t key, const char *name, size_t len)
{
	struct rbench *b = q->b;
	uint64_t want = gb_size_of(b->sizer, key), base;
	size_t at;

	if (len != want) {
		say(b, "verify error: key %s: length %zu, expected %" PRIu64,
		    name, len, want);
		return false;
	}
	base = gb_value_base(b->vtag, key, 0);
	at = gb_value_check(base, 0, q->out, len);
	if (at == len)
		return true;
	say(b, "verify error: key %s offset %zu (of %zu bytes): got 0x%02x, "
	    "expected 0x%02x", name, at, len, (unsigned char)q->out[at],
	    gb_value_byte(base, at));
	return false;
}

static void record(struct qp *q, const struct rdma_times *t, bool hit)
{
	gb_hist_record(&q->st.ttfb, t->header_ns);
	if (hit)
		gb_hist_record(&q->st.payload, t->bulk_ns);
	gb_hist_record(&q->st.complete, t->end_ns);
}

/* Connects (again) <q>; 0 or -errno, the reason printed. */
static int qp_connect(struct qp *q)
{
	struct rbench *b = q->b;
	const struct gb_rdma_opts *r = &b->o->rdma;
	char err[RDMA_MSG] = "";
	int rc;

	if (q->cl)
		rdma_client_destroy(&q->cl);
	rc = rdma_client_create(b->tp, r->host, (uint16_t)r->port,
				r->window, err, sizeof(err), &q->cl);
	if (rc)
		say(b, "queue pair %u: cannot connect to %s:%u over %s: %s%s%s",
		    q->id, r->host, r->port, gb_rdma_tp_names[r->transport],
		    strerror(-rc), *err ? ": " : "", err);
	return rc;
}

/* The next key, or false when the phase is over. */
static bool next_key(struct qp *q, uint64_t *key)
{
	struct rbench *b = q->b;
	const struct gb_opts *o = b->o;

	if (atomic_load(&b->stop) || gb_interrupted)
		return false;
	if (o->rdma.requests &&
	    atomic_fetch_add(&b->issued, 1) >= o->rdma.requests)
		return false;
	if (o->key_dist == GB_KEYS_SEQUENTIAL) {
		*key = atomic_fetch_add(&b->next_key, 1);
		return *key < o->hot_start + o->hot_keys;
	}
	*key = o->hot_start + (o->key_dist == GB_KEYS_ZIPF ?
			       gb_zipf_next(&b->zipf, &q->rng) :
			       gb_rng_below(&q->rng, o->hot_keys));
	return true;
}

/* One GET of <key> on <q>, counted; false when the queue pair gave up. */
static bool get_one(struct qp *q, uint64_t key, unsigned *streak)
{
	struct rbench *b = q->b;
	char name[32], err[RDMA_MSG] = "";
	struct rdma_times t;
	uint32_t flags;
	size_t len = 0;
	int rc;

	gb_key_name(name, sizeof(name), key);
	q->st.get_issued++;
	rc = rdma_client_get(q->cl, name, q->out, b->cap, &len, &flags, &t,
			     err, sizeof(err));
	if (rc == 1 || rc == -EMSGSIZE) {
		q->st.hits++;
		record(q, &t, true);
		if (rc == 1) {
			q->st.get_bytes += len;
			atomic_fetch_add(&b->bytes, len);
		} else {
			say(b, "verify error: key %s: larger than %" PRIu64
			    " bytes", name, b->cap);
		}
		if (b->o->verify && (rc < 0 || !verify(q, key, name, len))) {
			q->st.verify_errors++;
			atomic_fetch_add(&b->bad, 1);
		}
	} else if (rc == 0) {
		q->st.misses++;
		record(q, &t, false);
	} else if (rc == -EPROTO && (!strncmp(err, "SERVER_ERROR", 12) ||
				     !strncmp(err, "CLIENT_ERROR", 12))) {
		q->st.get_errors++;
		say(b, "get %s: %s", name, err);
	} else {
		q->st.get_failed++;
		q->st.conn_failures++;
		say(b, "queue pair %u: get %s: %s%s%s", q->id, name,
		    strerror(-rc), *err ? ": " : "", err);
		while (++*streak < STREAK_MAX && !gb_interrupted)
			if (!qp_connect(q)) {
				q->st.reconnects++;
				return true;
			}
		say(b, "queue pair %u: giving up after repeated failures",
		    q->id);
		return false;
	}
	*streak = 0;
	atomic_fetch_add(&b->done, 1);
	return true;
}

static void *qp_main(void *arg)
{
	struct qp *q = arg;
	unsigned streak = 0;
	uint64_t key;

	while (next_key(q, &key))
		if (!get_one(q, key, &streak))
			break;
	atomic_fetch_sub(&q->b->running, 1);
	return NULL;
}

static void progress(struct rbench *b, uint64_t start, uint64_t now)
{
	double el = (double)(now - start) / NSEC;
	uint64_t n = atomic_load(&b->done), bytes = atomic_load(&b->bytes);

	fprintf(stderr, "goblin-bench: rdma run %.1f s, %" PRIu64 " gets, "
		"%.0f gets/s, %.3f Gbit/s, verify errors %" PRIu64 "\n", el, n,
		el > 0 ? (double)n / el : 0, el > 0 ? bytes * 8 / el / 1e9 : 0,
		(uint64_t)atomic_load(&b->bad));
}

/* Waits for the queue pairs: ends the phase at --duration (unless
 * --requests bounds it) or on a signal, prints progress every second. */
static void supervise(struct rbench *b, uint64_t start)
{
	const struct gb_opts *o = b->o;
	uint64_t deadline = start + (uint64_t)(o->duration * NSEC);
	uint64_t next = start + NSEC, now;
	struct timespec nap = { 0, 10 * 1000 * 1000 };

	while (atomic_load(&b->running)) {
		nanosleep(&nap, NULL);
		now = gb_now_ns();
		if (gb_interrupted || (!o->rdma.requests && now >= deadline))
			atomic_store(&b->stop, true);
		if (!o->quiet && now >= next) {
			progress(b, start, now);
			next += NSEC;
		}
	}
}

static void merge(struct gb_stats *d, const struct gb_stats *s)
{
	d->get_issued += s->get_issued;
	d->hits += s->hits;
	d->misses += s->misses;
	d->get_errors += s->get_errors;
	d->get_failed += s->get_failed;
	d->verify_errors += s->verify_errors;
	d->conn_failures += s->conn_failures;
	d->reconnects += s->reconnects;
	d->get_bytes += s->get_bytes;
	gb_hist_merge(&d->ttfb, &s->ttfb);
	gb_hist_merge(&d->payload, &s->payload);
	gb_hist_merge(&d->complete, &s->complete);
}

static int setup(struct rbench *b, const struct gb_opts *o,
		 const struct gb_sizer *sizer, const struct gb_sizes *sizes)
{
	b->o = o;
	b->sizer = sizer;
	b->tp = transport(o->rdma.transport);
	b->vtag = gb_value_tag(o->seed);
	b->cap = sizes->max;
	atomic_init(&b->next_key, o->hot_start);
	if (o->key_dist == GB_KEYS_ZIPF)
		gb_zipf_init(&b->zipf, o->hot_keys, o->zipf_theta);
	b->qps = calloc(o->rdma.qps, sizeof(*b->qps));
	if (!b->qps)
		return -1;
	for (unsigned i = 0; i < o->rdma.qps; i++) {
		struct qp *q = &b->qps[i];

		q->b = b;
		q->id = i;
		gb_rng_seed(&q->rng, gb_mix64(o->seed ^ 0x72646d61) + i);
		gb_hist_reset(&q->st.ttfb);
		gb_hist_reset(&q->st.payload);
		gb_hist_reset(&q->st.complete);
		q->out = malloc(b->cap ? b->cap : 1);
		if (!q->out) {
			fprintf(stderr, "goblin-bench: out of memory\n");
			return -1;
		}
	}
	gb_catch_signals();
	return 0;
}

static void teardown(struct rbench *b)
{
	for (unsigned i = 0; b->qps && i < b->o->rdma.qps; i++) {
		rdma_client_destroy(&b->qps[i].cl);
		free(b->qps[i].out);
	}
	free(b->qps);
}

int gb_rdma_run(const struct gb_opts *o, const struct gb_sizer *sizer,
		const struct gb_sizes *sizes, struct gb_result *res)
{
	struct rbench *b = calloc(1, sizeof(*b));
	struct gb_stats *st = &res->run;
	uint64_t start;
	int rc = -1;

	if (!b || setup(b, o, sizer, sizes))
		goto out;
	for (unsigned i = 0; i < o->rdma.qps; i++)
		if (qp_connect(&b->qps[i])) {
			res->connect_failed = true;
			goto out;
		}
	gb_hist_reset(&st->ttfb);
	gb_hist_reset(&st->payload);
	gb_hist_reset(&st->complete);
	gb_hist_reset(&st->set_complete);
	gb_hist_reset(&st->send_lag);
	atomic_init(&b->running, o->rdma.qps);
	start = gb_now_ns();
	for (unsigned i = 0; i < o->rdma.qps; i++) {
		struct qp *q = &b->qps[i];

		if (pthread_create(&q->th, NULL, qp_main, q)) {
			atomic_fetch_sub(&b->running, o->rdma.qps - i);
			atomic_store(&b->stop, true);
			fprintf(stderr, "goblin-bench: cannot start a thread\n");
			break;
		}
		q->started = true;
	}
	supervise(b, start);
	for (unsigned i = 0; i < o->rdma.qps; i++)
		if (b->qps[i].started)
			pthread_join(b->qps[i].th, NULL);
	st->seconds = (double)(gb_now_ns() - start) / NSEC;
	for (unsigned i = 0; i < o->rdma.qps; i++)
		merge(st, &b->qps[i].st);
	res->measured = true;
	if (gb_interrupted)
		fprintf(stderr, "goblin-bench: gb_interrupted\n");
	rc = 0;
out:
	if (b)
		teardown(b);
	free(b);
	return rc;
}
