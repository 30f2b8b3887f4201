/*
 * The RDMA protocol suite (storaged/rdma/rdma_server.c, rdma_client.c) over a
 * transport: a server thread serving an in-memory source shaped like the
 * engine's streams (a head straight from a registered region, the tail
 * copied into the connection's staging buffers only as earlier writes
 * free them, and an open that finds them busy every other time), clients
 * GETting 0 B, 1 B, 256 KiB in one round and in four, 1 MiB and 33 MiB
 * in many rounds, a miss, a bad key, an object unreadable midway, an object
 * larger than the caller's room, a window too small, three clients at
 * once, eight clients from eight threads, a client that goes away in the
 * middle of an object.  Included by
 * test_rdma.c (libfabric tcp) and test_rdma_verbs.c.
 */
#ifndef GOBLIN_TEST_RDMA_SUITE_H
#define GOBLIN_TEST_RDMA_SUITE_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rdma_client.h"

#define HEAD_MAX	(16u * 1024u)
#define NOBJ		6
#define STAGES		4u
#define STAGE_SIZE	(64u * 1024u)

struct obj {
	const char *key;
	uint32_t flags;
	uint64_t size, at;	/* bytes at region + at */
	int broken;		/* the tail can't be read */
};

static struct obj objs[NOBJ] = {
	{ "zero", 0, 0, 0, 0 },
	{ "one", 7, 1, 0, 0 },
	{ "k256", 42, 256 * 1024, 0, 0 },
	{ "big", 3, 1024 * 1024 + 123, 0, 0 },
	{ "odd", 1, 3 * STAGE_SIZE + 17, 0, 0 },
	{ "huge", 9, (33u << 20) + 1, 0, 0 },
};
/* its head reads, its tail fails, as a chunk with a bad checksum does */
static struct obj broken = { "broken", 0, 200u << 10, 0, 1 };
static char *region;
static size_t region_len;
static unsigned open_calls;	/* the server thread's */

/* The source's state of one open item. */
struct item {
	const struct obj *o;
	void *const *bufs;
	uint64_t pos, head;
	uint64_t filled, freed;	/* tail chunks read into bufs, released */
};

static int src_open(void *arg, const char *key, size_t klen,
		    void *const *bufs, struct rdma_item *it)
{
	struct item *m;
	int i;

	(void)arg;
	/* every other open finds the buffers busy, as an engine stream's
	 * may be until the kernel lets go of them: the server asks again */
	if (++open_calls % 2)
		return -EAGAIN;
	for (i = 0; i < NOBJ; i++)
		if (strlen(objs[i].key) == klen && !memcmp(objs[i].key, key, klen))
			break;
	if (i == NOBJ && strncmp(key, broken.key, klen))
		return -ENOENT;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->o = i < NOBJ ? &objs[i] : &broken;
	m->bufs = bufs;
	m->head = m->o->size < HEAD_MAX ? m->o->size : HEAD_MAX;
	it->flags = m->o->flags;
	it->size = m->o->size;
	it->priv = m;
	return 0;
}

static uint64_t chunk_start(const struct item *m, uint64_t k)
{
	return m->head + k * STAGE_SIZE;
}

static int src_peek(struct rdma_item *it, const void **data, size_t *len)
{
	struct item *m = it->priv;
	uint64_t k, start, n;
	char *buf;

	if (m->pos == m->o->size) {
		*len = 0;
		return 0;
	}
	if (m->pos < m->head) {
		*data = region + m->o->at + m->pos;
		*len = (size_t)(m->head - m->pos);
		return 0;
	}
	if (m->o->broken)
		return -EIO;
	k = (m->pos - m->head) / STAGE_SIZE;
	start = chunk_start(m, k);
	buf = m->bufs[k % STAGES];
	if (k == m->filled) {
		if (m->filled - m->freed == STAGES)
			return -EAGAIN;	/* every buffer still being written */
		n = m->o->size - start;
		if (n > STAGE_SIZE)
			n = STAGE_SIZE;
		memcpy(buf, region + m->o->at + start, n);
		m->filled++;
	}
	n = m->o->size - start;
	if (n > STAGE_SIZE)
		n = STAGE_SIZE;
	*data = buf + (m->pos - start);
	*len = (size_t)(start + n - m->pos);
	return 0;
}

static void src_consume(struct rdma_item *it, size_t n)
{
	((struct item *)it->priv)->pos += n;
}

static void src_release(struct rdma_item *it, uint64_t off)
{
	struct item *m = it->priv;

	while (m->freed < m->filled &&
	       chunk_start(m, m->freed + 1) <= off)
		m->freed++;
	if (m->freed < m->filled && off == m->o->size)
		m->freed = m->filled;
}

static void src_close(struct rdma_item *it)
{
	free(it->priv);
	it->priv = NULL;
}

static const struct rdma_source_ops source = {
	.nstages = STAGES, .stage_size = STAGE_SIZE,
	.open = src_open, .peek = src_peek, .consume = src_consume,
	.release = src_release, .close = src_close,
};

static const struct rdma_transport *tp;
static const char *host;
static struct rdma_server *srv;
static uint16_t port_of_test;
static atomic_int stop;
static int server_err;

static unsigned idle_waits;	/* the server slept its full second */

/* Steps the server, sleeping in rdma_server_wait when a step did
 * nothing: a lost wakeup shows as a second-long sleep. */
static void *server_main(void *arg)
{
	int r;

	(void)arg;
	while (!atomic_load(&stop)) {
		r = rdma_server_step(srv);
		if (!r) {
			r = rdma_server_wait(srv, 1000);
			idle_waits += r == 0;
		}
		if (r < 0) {
			server_err = r;
			return NULL;
		}
	}
	return NULL;
}

static void fill_region(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ull, at = 0;
	size_t i;
	int k;

	for (k = 0; k < NOBJ; k++) {
		objs[k].at = at;
		at += objs[k].size;
	}
	region_len = at;
	region = malloc(region_len);
	for (i = 0; region && i < region_len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		region[i] = (char)x;
	}
}

/* GETs objs[<k>] through <c> and checks every byte. */
static void get_exact(struct rdma_client *c, int k, size_t window)
{
	const struct obj *o = &objs[k];
	struct rdma_times t;
	char err[RDMA_MSG] = "";
	size_t len = 0, cap = o->size + 1;
	uint32_t flags = 0;
	char *out = malloc(cap);
	int r;

	r = rdma_client_get(c, o->key, out, cap, &len, &flags, &t, err,
			    sizeof(err));
	CHECK(r == 1, "get %s (window %zu): %d %s", o->key, window, r, err);
	CHECK(len == o->size, "%s: %zu bytes", o->key, len);
	CHECK(flags == o->flags, "%s: flags %u", o->key, flags);
	CHECK(r != 1 || !memcmp(out, region + o->at, o->size),
	      "%s: bytes differ (window %zu)", o->key, window);
	CHECK(t.header_ns && t.header_ns <= t.bulk_ns &&
	      t.bulk_ns <= t.end_ns, "%s: times %llu %llu %llu", o->key,
	      (unsigned long long)t.header_ns, (unsigned long long)t.bulk_ns,
	      (unsigned long long)t.end_ns);
	free(out);
}

static void test_window(uint16_t port, size_t window)
{
	struct rdma_client *c = NULL;
	char err[RDMA_MSG] = "", small[8];
	size_t len;
	uint32_t flags;
	int r, k;

	r = rdma_client_create(tp, host, port, window,
			       err, sizeof(err), &c);
	CHECK(r == 0, "connect, window %zu: %d %s", window, r, err);
	if (r)
		return;
	for (k = 0; k < NOBJ; k++)
		get_exact(c, k, window);
	r = rdma_client_get(c, "nope", small, sizeof(small), &len, &flags,
			    NULL, err, sizeof(err));
	CHECK(r == 0, "miss: %d %s", r, err);
	r = rdma_client_get(c, "a b", small, sizeof(small), &len, &flags,
			    NULL, err, sizeof(err));
	CHECK(r == -EPROTO && !strncmp(err, "CLIENT_ERROR", 12),
	      "bad key: %d %s", r, err);
	r = rdma_client_get(c, "big", small, sizeof(small), &len, &flags,
			    NULL, err, sizeof(err));
	CHECK(r == -EMSGSIZE, "no room: %d", r);
	r = rdma_client_get(c, "broken", NULL, 0, &len, &flags, NULL, err,
			    sizeof(err));
	CHECK(r == -EPROTO && !strcmp(err, "SERVER_ERROR object unreadable: "
				      "Input/output error"),
	      "unreadable: %d %s", r, err);
	get_exact(c, 1, window);	/* the connection still serves */
	rdma_client_destroy(&c);
}

static void test_small_window(uint16_t port)
{
	struct rdma_client *c = NULL;
	char err[RDMA_MSG] = "";
	int r;

	r = rdma_client_create(tp, host, port, 100,
			       err, sizeof(err), &c);
	CHECK(r == -EPROTO && !strcmp(err, "CLIENT_ERROR window too small"),
	      "window of 100 bytes: %d %s", r, err);
	CHECK(c == NULL, "no client");
}

static void test_many(uint16_t port)
{
	struct rdma_client *c[3] = { NULL };
	char err[RDMA_MSG] = "";
	int i, k, r;

	for (i = 0; i < 3; i++) {
		r = rdma_client_create(tp, host, port,
				       RDMA_BULK_MIN << i, err,
				       sizeof(err), &c[i]);
		CHECK(r == 0, "client %d: %d %s", i, r, err);
		if (r)
			goto out;
	}
	for (k = 0; k < NOBJ; k++)
		for (i = 0; i < 3; i++)
			get_exact(c[i], (k + i) % NOBJ, RDMA_BULK_MIN << i);
out:
	for (i = 0; i < 3; i++)
		rdma_client_destroy(&c[i]);
}

#define PAR_CLIENTS	8

/* One of PAR_CLIENTS threads: its own connection, every object but the
 * 33 MiB one twice, byte-exact; the number of failures. */
static void *par_client(void *arg)
{
	size_t window = (size_t)(uintptr_t)arg, len;
	struct rdma_client *c = NULL;
	char err[RDMA_MSG];
	uintptr_t bad = 0;
	uint32_t flags;
	char *out = malloc(objs[3].size);
	int k;

	if (!out || rdma_client_create(tp, host, port_of_test, window, err,
				       sizeof(err), &c))
		bad++;
	for (k = 0; c && k < 2 * (NOBJ - 1); k++) {
		const struct obj *o = &objs[k % (NOBJ - 1)];

		if (rdma_client_get(c, o->key, out, objs[3].size, &len,
				    &flags, NULL, err, sizeof(err)) != 1 ||
		    len != o->size || memcmp(out, region + o->at, o->size))
			bad++;
	}
	rdma_client_destroy(&c);
	free(out);
	return (void *)bad;
}

/* PAR_CLIENTS connections at once, each from its own thread. */
static void test_parallel(void)
{
	pthread_t th[PAR_CLIENTS];
	void *bad;
	int i;

	for (i = 0; i < PAR_CLIENTS; i++)
		pthread_create(&th[i], NULL, par_client,
			       (void *)(uintptr_t)(RDMA_BULK_MIN << (i % 6)));
	for (i = 0; i < PAR_CLIENTS; i++) {
		pthread_join(th[i], &bad);
		CHECK(bad == NULL, "parallel client %d: %zu failures", i,
		      (size_t)(uintptr_t)bad);
	}
}

/* Polls <e> until a completion of <op> comes; 0, or -errno. */
static int raw_wait(struct rdma_ep *e, enum rdma_op op)
{
	struct rdma_wc wc;
	int i, n;

	for (i = 0; i < 10000000; i++) {
		n = tp->poll(e, &wc, 1);
		if (n < 0)
			return n;
		if (n && wc.err)
			return wc.err;
		if (n && wc.op == op)
			return 0;
		if (!n)
			sched_yield();
	}
	return -ETIMEDOUT;
}

/* A client that goes away while the server writes a 1 MiB round into its
 * window: the transport's operations by hand, dropped after VALUE. */
static void test_drop_mid_write(uint16_t port)
{
		struct rdma_mr mr = { 0 }, wmr = { 0 };
	struct rdma_dev *d = NULL;
	struct rdma_ep *e = NULL;
	size_t wlen = 1024 * 1024;
	char *msg = malloc(2 * RDMA_MSG), *win = malloc(wlen);
	int r, n;

	r = tp->dial(host, port, &d, &e);
	if (!r)
		r = tp->reg(d, msg, 2 * RDMA_MSG, RDMA_LOCAL, &mr);
	if (!r)
		r = tp->reg(d, win, wlen, RDMA_REMOTE_WRITE, &wmr);
	if (!r)
		r = tp->post_recv(e, msg, RDMA_MSG, &mr, NULL);
	if (!r)
		r = tp->connect(e);
	n = snprintf(msg + RDMA_MSG, RDMA_MSG, "WINDOW %llu %llu %zu\r\n",
		     (unsigned long long)tp->remote_addr(d, &wmr, win),
		     (unsigned long long)wmr.key, wlen);
	if (!r)
		r = tp->post_send(e, msg + RDMA_MSG, (size_t)n, &mr, NULL);
	if (!r)
		r = raw_wait(e, RDMA_OP_RECV);
	CHECK(r == 0 && !memcmp(msg, "OK", 2), "raw hello: %d", r);
	if (!r)
		r = tp->post_recv(e, msg, RDMA_MSG, &mr, NULL);
	n = snprintf(msg + RDMA_MSG, RDMA_MSG, "get big\r\n");
	if (!r)
		r = tp->post_send(e, msg + RDMA_MSG, (size_t)n, &mr, NULL);
	if (!r)
		r = raw_wait(e, RDMA_OP_RECV);
	CHECK(r == 0 && !memcmp(msg, "VALUE big", 9), "raw get: %d", r);
	tp->ep_destroy(&e);
	if (wmr.handle)
		tp->dereg(&wmr);
	if (mr.handle)
		tp->dereg(&mr);
	tp->dev_destroy(&d);
	free(win);
	free(msg);
}

/* Runs every case over <transport> with the server on <addr>; 0 when
 * every check passed. */
static int rdma_suite_run(const struct rdma_transport *transport,
			  const char *addr)
{
	struct rdma_server_stats st;
	void *regions[1];
	size_t lens[1];
	uint16_t port = 0;
	pthread_t th;
	int r;

	tp = transport;
	host = addr;
	fill_region();
	if (!region)
		return 1;
	regions[0] = region;
	lens[0] = region_len;
	r = rdma_server_create(tp, host, 0, &port,
			       &source, NULL, regions, lens, 1, &srv);
	if (r) {
		fprintf(stderr, "server: %s\n", strerror(-r));
		return 1;
	}
	pthread_create(&th, NULL, server_main, NULL);
	test_window(port, 256 * 1024);
	test_window(port, 64 * 1024);
	test_window(port, RDMA_BULK_MIN);
	test_small_window(port);
	test_many(port);
	port_of_test = port;
	test_parallel();
	test_drop_mid_write(port);
	test_window(port, RDMA_BULK_MIN);	/* still serving */
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	CHECK(server_err == 0, "server step: %d", server_err);
	/* a few between phases at most; lost wakeups would be hundreds */
	CHECK(idle_waits < 5, "the server slept a full second %u times",
	      idle_waits);
	/* Every connection, the dropped one too, goes. */
	for (r = 0; r < 1000000; r++) {
		rdma_server_stats(srv, &st);
		if (!st.live || rdma_server_step(srv) < 0)
			break;
		sched_yield();
	}
	rdma_server_stats(srv, &st);
	CHECK(st.live == 0, "live %llu", (unsigned long long)st.live);
	CHECK(st.conns == 9 + PAR_CLIENTS, "conns %llu", (unsigned long long)st.conns);
	CHECK(st.misses == 4, "misses %llu", (unsigned long long)st.misses);
	CHECK(st.hits == 4 * (NOBJ + 3) + 3 * NOBJ + 1 +
	      PAR_CLIENTS * 2 * (NOBJ - 1), "hits %llu",
	      (unsigned long long)st.hits);
	/* every window's GETs, the one too big for its caller, three
	 * clients' */
	CHECK(st.bytes >= 4 * (region_len + objs[3].size + 1) + 3 * region_len,
	      "bytes %llu", (unsigned long long)st.bytes);
	CHECK(st.rounds > 3 * (NOBJ + 2), "rounds %llu",
	      (unsigned long long)st.rounds);
	/* 3 + 3 + 8 + 1 + 1 clients went; the small window's we closed */
	CHECK(st.gone == 8 + PAR_CLIENTS && st.errors == 4,
	      "gone %llu, errors %llu",
	      (unsigned long long)st.gone, (unsigned long long)st.errors);
	/* test_drop_mid_write's client left after VALUE */
	CHECK(st.aborted >= 1, "aborted %llu", (unsigned long long)st.aborted);
	rdma_server_destroy(&srv);
	free(region);
	return check_result();
}

#endif
