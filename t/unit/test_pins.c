/*
 * Pins taken and dropped without e->lock (index.h: engine_pin() beside a
 * pin held, engine_unpin_shared()): readers GET objects wholly in RAM as
 * the memcache front does (lookup, stream open, put, read, close) while a
 * writer replaces and deletes those keys, so the last reference of a
 * replaced record goes in every order.  Every value read is whole and one
 * of those stored; no pin is left; under ASan no record is used after it
 * is freed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine_util.h"
#include "log.h"

#define KEYS	16
#define VALUE	200
#define ROUNDS	20000

struct reader {
	struct gs_engine *e;
	pthread_t thread;
	unsigned gets, misses, bad;
};

static bool stop;

static void key_of(char *key, size_t len, unsigned k)
{
	snprintf(key, len, "pin-%u", k);
}

/* A value is VALUE bytes, all the same: its first. */
static bool whole(const char *p, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (p[i] != p[0])
			return false;
	return n == VALUE;
}

static void get_one(struct reader *r, struct gs_io *io, unsigned k)
{
	char key[32], val[VALUE];
	struct gs_stream *s;
	struct gs_obj *obj;
	size_t got = 0;

	key_of(key, sizeof(key), k);
	if (gs_lookup(r->e, key, strlen(key), &obj) < 0) {
		r->misses++;
		return;
	}
	if (gs_stream_open(io, obj, 0, gs_obj_meta(obj)->size, on_wake, NULL,
			   &s) < 0) {
		gs_obj_put(r->e, &obj);
		r->bad++;
		return;
	}
	gs_obj_put(r->e, &obj);		/* the stream's own pin holds it */
	for (;;) {
		const void *p;
		size_t n;
		int ret = gs_stream_peek(s, &p, &n);

		if (ret == -EAGAIN) {
			gs_io_run(io, true);
			continue;
		}
		if (ret < 0 || n == 0 || got + n > sizeof(val)) {
			r->bad += ret < 0 || got + n > sizeof(val);
			break;
		}
		memcpy(val + got, p, n);
		got += n;
		gs_stream_consume(s, n);
	}
	gs_stream_close(&s);
	r->bad += !whole(val, got);
	r->gets++;
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct gs_io *io;
	unsigned k = 0;

	if (gs_io_create(r->e, &io) < 0) {
		r->bad++;
		return NULL;
	}
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		get_one(r, io, k++ % KEYS);
	gs_io_destroy(&io);
	return NULL;
}

int main(void)
{
	struct reader rd[2] = { 0 };
	struct gs_engine *e;
	struct gs_config cfg;
	struct gs_stats st;
	struct gs_io *io;
	char err[256], key[32], val[VALUE];
	unsigned bad = 0;

	log_level = LOG_WARN;
	store_config(&cfg, 64 << 20, 16 << 20, 0, 0);	/* RAM only */
	CHECK(gs_engine_open(&e, &cfg, err, sizeof(err)) == 0, "open: %s", err);
	CHECK(gs_io_create(e, &io) == 0, "io");
	for (unsigned i = 0; i < 2; i++) {
		rd[i].e = e;
		pthread_create(&rd[i].thread, NULL, reader_main, &rd[i]);
	}
	for (unsigned i = 0; i < ROUNDS; i++) {
		unsigned k = i * 7 % KEYS;

		key_of(key, sizeof(key), k);
		if (i % 5 == 4) {
			gs_delete(e, key, strlen(key));
			continue;
		}
		memset(val, 'a' + i % 26, sizeof(val));
		bad += put_if(io, key, val, sizeof(val), 0, GS_IF_ANY, 0,
			      NULL) != 0;
	}
	__atomic_store_n(&stop, true, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(rd[i].thread, NULL);
	gs_stats(e, &st);
	CHECK(bad == 0, "%u stores failed", bad);
	for (unsigned i = 0; i < 2; i++)
		CHECK(rd[i].bad == 0 && rd[i].gets > 0,
		      "reader %u: %u gets, %u misses, %u bad", i, rd[i].gets,
		      rd[i].misses, rd[i].bad);
	CHECK(st.pins == 0, "%llu pins left", (unsigned long long)st.pins);
	printf("%u stores and deletes; gets %u and %u\n", ROUNDS, rd[0].gets,
	       rd[1].gets);
	gs_io_destroy(&io);
	gs_engine_close(&e);
	return check_result();
}
