/*
 * libgoblin end to end without the network: objects of every boundary size
 * written through gs_writer and read back through gs_stream and
 * gs_read_into, byte for byte, in RAM-only, SSD-only and SSD+HDD layouts;
 * overwrites, deletes, eviction, checksum failures, append/prepend, incr.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "check.h"
#include "engine_util.h"
#include "index.h"
#include "log.h"
#include "mc_items.h"
#include "measure.h"


static char tmpdir[] = "/var/tmp/goblin-test-engine.XXXXXX";

static int put(struct gs_io *io, const char *key, const char *val,
	       uint64_t size, enum gs_if cond)
{
	return put_if(io, key, val, size, 7, cond, 0, NULL);
}

/* Reads <key> through a stream; returns 0 if it equals <want>. */
static int get_stream(struct gs_engine *e, struct gs_io *io, const char *key,
		      const char *want, uint64_t size, uint64_t off, uint64_t len)
{
	struct gs_obj *obj;
	struct gs_stream *s;
	uint64_t pos = off;
	int ret = gs_lookup(e, key, strlen(key), &obj);

	if (ret < 0)
		return ret;
	if (gs_obj_meta(obj)->size != size) {
		gs_obj_put(e, &obj);
		return -EINVAL;
	}
	ret = gs_stream_open(io, obj, off, len, on_wake, NULL, &s);
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
		if (memcmp(p, want + pos, n)) {
			ret = -EILSEQ;
			break;
		}
		pos += n;
		gs_stream_consume(s, n > 1000 ? n - 1000 : n);
		if (n > 1000)
			gs_stream_consume(s, 1000);
	}
	gs_stream_close(&s);
	if (ret == 0 && pos != (off + len > size ? size : off + len))
		ret = -EPIPE;
	return ret;
}

static int get_into(struct gs_engine *e, struct gs_io *io, const char *key,
		    const char *want, uint64_t size)
{
	struct gs_obj *obj;
	struct waitres wr = { 0 };
	char *buf;
	int ret = gs_lookup(e, key, strlen(key), &obj);

	if (ret < 0)
		return ret;
	buf = aligned_alloc(4096, gs_read_size(obj));
	ret = gs_read_into(io, obj, buf, on_done, &wr);
	gs_obj_put(e, &obj);
	if (ret == 0)
		ret = run_until(io, &wr);
	if (ret == 0 && memcmp(buf, want, size))
		ret = -EILSEQ;
	free(buf);
	return ret;
}

static const uint64_t sizes[] = {
	0, 1, 4095, 255 << 10, 256 << 10, (256 << 10) + 1, 1 << 20,
	(1 << 20) + (256 << 10) + 1, 8 << 20, 33 << 20,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Every boundary size, whole and in ranges starting in each tier. */
static void sizes_round(const char *name, struct gs_engine *e,
			struct gs_io *io, char *val, int nssd, int nhdd)
{
	struct gs_stats st;
	char key[64];
	int ret;

	for (unsigned i = 0; i < NSIZES; i++) {
		snprintf(key, sizeof(key), "obj-%llu", (unsigned long long)sizes[i]);
		fill(val, sizes[i], i + 1);
		ret = put(io, key, val, sizes[i], GS_IF_ANY);
		CHECK(ret == 0, "%s: put %s: %d", name, key, ret);
	}
	for (unsigned i = 0; i < NSIZES; i++) {
		snprintf(key, sizeof(key), "obj-%llu", (unsigned long long)sizes[i]);
		fill(val, sizes[i], i + 1);
		ret = get_stream(e, io, key, val, sizes[i], 0, UINT64_MAX);
		CHECK(ret == 0, "%s: stream %s: %d", name, key, ret);
		ret = get_into(e, io, key, val, sizes[i]);
		CHECK(ret == 0, "%s: read_into %s: %d", name, key, ret);
		/* ranges starting in each tier */
		for (uint64_t off = 0; off < sizes[i]; off += sizes[i] / 5 + 77777) {
			ret = get_stream(e, io, key, val, sizes[i], off, 300000);
			CHECK(ret == 0, "%s: range %s @%llu: %d", name, key,
			      (unsigned long long)off, ret);
		}
	}
	gs_stats(e, &st);
	CHECK(st.curr_items == NSIZES, "%s: items %llu", name,
	      (unsigned long long)st.curr_items);
	if (nhdd) {
		CHECK(st.hdd_bytes > 0 && st.hdd_objects > 0, "%s: hdd empty", name);
		/* 33 MiB - 256K head - 1 MiB prefix, plus 8M etc. */
		CHECK(st.ssd_bytes > 0, "%s: ssd empty", name);
	} else if (nssd) {
		CHECK(st.ssd_bytes > 0 && st.hdd_bytes == 0, "%s: ssd", name);
	} else {
		CHECK(st.ssd_bytes == 0 && st.hdd_bytes == 0 &&
		      st.ram_head_bytes > 40 << 20, "%s: ram only", name);
	}
	CHECK(st.checksum_errors == 0 && st.io_errors == 0, "%s: errors", name);
	CHECK(st.pins == 0, "%s: pins left %llu", name, (unsigned long long)st.pins);
}

/* Overwrite and delete churn, then everything still byte-exact. */
static void churn_round(const char *name, struct gs_engine *e,
			struct gs_io *io, char *val)
{
	char key[64];
	int ret;

	for (int round = 0; round < 40; round++) {
		uint64_t sz = (round * 397u << 10) % (9 << 20);

		snprintf(key, sizeof(key), "churn-%d", round % 7);
		fill(val, sz, 1000 + round);
		ret = put(io, key, val, sz, GS_IF_ANY);
		CHECK(ret == 0, "%s: churn put %d: %d", name, round, ret);
		if (round % 5 == 4)
			CHECK(gs_delete(e, key, strlen(key)) == 0, "%s: delete", name);
		else
			CHECK(get_stream(e, io, key, val, sz, 0, UINT64_MAX) == 0,
			      "%s: churn get %d", name, round);
	}
}

/* What a store did comes back through its callback: the CAS the object
 * got, whether it replaced one; GS_IF_CAS links over that CAS only. */
static void stored_round(const char *name, struct gs_engine *e,
			 struct gs_io *io, const char *val)
{
	struct gs_stored first, second;
	struct gs_obj *obj;

	CHECK(put_if(io, "cas", val, 10, 0, GS_IF_ANY, 0, &first) == 0 &&
	      !first.replaced && first.cas, "%s: stored", name);
	CHECK(put_if(io, "cas", val, 10, 0, GS_IF_PRESENT, 0, &second) == 0 &&
	      second.replaced && second.cas > first.cas, "%s: replaced", name);
	if (gs_lookup(e, "cas", 3, &obj) == 0) {
		CHECK(gs_obj_meta(obj)->cas == second.cas, "%s: cas", name);
		gs_obj_put(e, &obj);
	}
	CHECK(put_if(io, "cas", val, 10, 0, GS_IF_CAS, first.cas, NULL) == -EEXIST, "%s: cas stale", name);
	CHECK(put_if(io, "cas", val, 10, 0, GS_IF_CAS, second.cas, NULL) == 0, "%s: cas", name);
}

/* Link conditions, append / prepend across tiers, incr / decr. */
static void items_round(const char *name, struct gs_engine *e,
			struct gs_io *io, char *val)
{
	struct waitres wr = { 0 };
	uint64_t base = (1 << 20) + 5, v = 0;
	char *want = malloc(base + 100);

	fill(val, 5000, 5);
	CHECK(put(io, "obj-1", val, 10, GS_IF_ABSENT) == -EEXIST, "%s: add", name);
	CHECK(put(io, "nope", val, 10, GS_IF_PRESENT) == -ENOENT, "%s: replace", name);
	stored_round(name, e, io, val);

	fill(val, base, 77);
	CHECK(put(io, "cat", val, base, GS_IF_ANY) == 0, "%s: cat put", name);
	memcpy(want, "0123456789", 10);
	memcpy(want + 10, val, base);
	CHECK(concat(io, "cat", true, "0123456789", 10, &wr) == 0,
	      "%s: prepend", name);
	CHECK(run_until(io, &wr) == 0, "%s: prepend done", name);
	CHECK(get_stream(e, io, "cat", want, base + 10, 0, UINT64_MAX) == 0,
	      "%s: prepend bytes", name);
	memcpy(want + base + 10, "xyz", 3);
	wr.done = false;
	CHECK(concat(io, "cat", false, "xyz", 3, &wr) == 0,
	      "%s: append", name);
	CHECK(run_until(io, &wr) == 0, "%s: append done", name);
	CHECK(get_stream(e, io, "cat", want, base + 13, 0, UINT64_MAX) == 0,
	      "%s: append bytes", name);
	CHECK(concat(io, "absent", false, "x", 1, &wr) == -ENOENT,
	      "%s: append missing", name);
	free(want);

	CHECK(put(io, "n", "41", 2, GS_IF_ANY) == 0, "%s: n", name);
	CHECK(mc_incr(e, "n", 1, false, 1, &v) == 0 && v == 42, "%s: incr", name);
	CHECK(mc_incr(e, "n", 1, true, 100, &v) == 0 && v == 0, "%s: decr", name);
	CHECK(mc_incr(e, "obj-1", 5, false, 1, &v) == -EINVAL, "%s: nan", name);
}

/* The meta of <key>'s live object; size 0 with cas 0 when none. */
static struct gs_meta meta_of(struct gs_engine *e, const char *key)
{
	struct gs_meta m = { 0 };
	struct gs_obj *obj;

	if (gs_lookup(e, key, strlen(key), &obj) == 0) {
		m = *gs_obj_meta(obj);
		gs_obj_put(e, &obj);
	}
	return m;
}

/* Read-modify-writes tied to the version they read: an append built on a
 * value an incr and a touch then replace and re-time is built again on the
 * incr's value and keeps the touch (it once linked "417" over "42"); ma's
 * compare and TTL happen in the incr's own step. */
static void rmw_round(const char *name, struct gs_engine *e, struct gs_io *io)
{
	struct mc_arith a = { .delta = 5 };
	struct waitres wr = { 0 };
	struct gs_stats st0, st1;
	struct gs_meta m;
	uint64_t v = 0;

	CHECK(put(io, "cn", "41", 2, GS_IF_ANY) == 0, "%s: cn", name);
	gs_stats(e, &st0);
	CHECK(concat(io, "cn", false, "7", 1, &wr) == 0, "%s: cn append", name);
	CHECK(!wr.done, "%s: cn append still to link", name);
	CHECK(mc_incr(e, "cn", 2, false, 1, &v) == 0 && v == 42,
	      "%s: cn incr meanwhile", name);
	CHECK(gs_touch(e, "cn", 2, 4000000000, NULL) == 0,
	      "%s: cn touch meanwhile", name);
	CHECK(run_until(io, &wr) == 0, "%s: cn append done", name);
	gs_stats(e, &st1);
	CHECK(get_stream(e, io, "cn", "427", 3, 0, UINT64_MAX) == 0 &&
	      st1.append_retries == st0.append_retries + 1,
	      "%s: the append built again over the incr (%llu retries)", name,
	      (unsigned long long)(st1.append_retries - st0.append_retries));
	m = meta_of(e, "cn");
	CHECK(m.exptime == 4000000000u, "%s: the touch kept: %u", name,
	      m.exptime);

	a.cas = m.cas + 1;
	CHECK(mc_arith(e, "cn", 2, &a, &v, NULL) == -EEXIST &&
	      meta_of(e, "cn").cas == m.cas, "%s: ma C stale", name);
	a.cas = m.cas;
	a.set_exptime = true;
	a.exptime = 3000000000;
	CHECK(mc_arith(e, "cn", 2, &a, &v, &m) == 0 && v == 432 &&
	      m.cas > a.cas && m.exptime == 3000000000u &&
	      meta_of(e, "cn").cas == m.cas, "%s: ma C T: one step", name);
}

/* A corrupted chunk is detected, never handed out, and drops the object. */
static void corrupt_round(const char *name, struct gs_engine *e,
			  struct gs_io *io, char *val, const char *ssd_dir)
{
	char path[400], junk[4096];
	struct gs_stats st;
	struct gs_obj *obj;
	uint64_t addr = 0;
	int fd, ret;

	fill(val, 2 << 20, 99);
	CHECK(put(io, "victim", val, 2 << 20, GS_IF_ANY) == 0, "%s: victim", name);
	if (gs_lookup(e, "victim", 6, &obj) == 0) {
		addr = chunk_addr(obj, 1);	/* one dir: file offset */
		gs_obj_put(e, &obj);
	}
	snprintf(path, sizeof(path), "%s/extents", ssd_dir);
	fd = open(path, O_WRONLY);
	memset(junk, 0x5a, sizeof(junk));
	CHECK(fd >= 0 && pwrite(fd, junk, sizeof(junk), addr) == sizeof(junk),
	      "%s: corrupt", name);
	fsync(fd);
	close(fd);
	ret = get_stream(e, io, "victim", val, 2 << 20, 0, UINT64_MAX);
	CHECK(ret == -EBADMSG, "%s: corrupt read gave %d", name, ret);
	gs_stats(e, &st);
	CHECK(st.checksum_errors == 1, "%s: checksum_errors %llu", name,
	      (unsigned long long)st.checksum_errors);
	CHECK(gs_lookup(e, "victim", 6, &(struct gs_obj *){ 0 }) == -ENOENT,
	      "%s: victim still there", name);
}

static void layout_round(const char *name, int nssd, int nhdd)
{
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	char err[256], ssd[2][300], hdd[2][300];
	char *val = malloc(40 << 20);
	int ret;

	store_config(&cfg, 64 << 20, 8 << 20, 128 << 20, 256 << 20);
	cfg.stripe_unit = 64 << 10;
	for (int i = 0; i < nssd; i++)
		store_pool(&cfg, false, ssd[i], sizeof(ssd[i]), "%s/%s-ssd%d",
			   tmpdir, name, i);
	for (int i = 0; i < nhdd; i++)
		store_pool(&cfg, true, hdd[i], sizeof(hdd[i]), "%s/%s-hdd%d",
			   tmpdir, name, i);
	if (!nssd && !nhdd)
		cfg.memory = 256 << 20;
	ret = gs_engine_open(&e, &cfg, err, sizeof(err));
	CHECK(ret == 0, "%s: open: %s", name, err);
	if (ret)
		return;
	CHECK(gs_io_create(e, &io) == 0, "%s: io", name);

	sizes_round(name, e, io, val, nssd, nhdd);
	churn_round(name, e, io, val);
	items_round(name, e, io, val);
	rmw_round(name, e, io);
	if (nssd && !nhdd)
		corrupt_round(name, e, io, val, ssd[0]);

	gs_io_destroy(&io);
	gs_engine_close(&e);
	free(val);
}

static void eviction_round(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	struct gs_stats st;
	char err[256], key[32], dir[300];
	char *val = malloc(2 << 20);
	int stored = 0;
	uint64_t live;

	store_config(&cfg, 4 << 20, 2 << 20, 8 << 20, 0);	/* 16 heads */
	cfg.max_object = 2 << 20;
	store_pool(&cfg, false, dir, sizeof(dir), "%s/evict-ssd", tmpdir);
	if (gs_engine_open(&e, &cfg, err, sizeof(err)) < 0) {
		CHECK(0, "evict open: %s", err);
		return;
	}
	gs_io_create(e, &io);
	for (int i = 0; i < 40; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		fill(val, 1 << 20, i);
		stored += put(io, key, val, 1 << 20, GS_IF_ANY) == 0;
	}
	gs_stats(e, &st);
	CHECK(stored == 40, "evict: stored %d", stored);
	CHECK(st.evictions > 0, "evict: no evictions");
	CHECK(st.curr_items + st.evictions == 40, "evict: %llu + %llu",
	      (unsigned long long)st.curr_items, (unsigned long long)st.evictions);
	fill(val, 1 << 20, 39);
	CHECK(get_stream(e, io, "k39", val, 1 << 20, 0, UINT64_MAX) == 0,
	      "evict: newest lost");
	gs_io_destroy(&io);
	live = st.curr_items;
	gs_engine_close(&e);

	/* the pool comes back whole on the next open */
	if (gs_engine_open(&e, &cfg, err, sizeof(err)) < 0) {
		CHECK(0, "reopen: %s", err);
		return;
	}
	gs_io_create(e, &io);
	gs_stats(e, &st);
	CHECK(st.curr_items == live && st.recovered_objects == live,
	      "reopen: %llu objects, %llu recovered, %llu before",
	      (unsigned long long)st.curr_items,
	      (unsigned long long)st.recovered_objects,
	      (unsigned long long)live);
	CHECK(get_stream(e, io, "k39", val, 1 << 20, 0, UINT64_MAX) == 0,
	      "reopen: newest lost");
	gs_io_destroy(&io);
	gs_engine_close(&e);

	cfg.no_evict = true;
	cfg.fresh = true;		/* empty, on purpose */
	if (gs_engine_open(&e, &cfg, err, sizeof(err)) < 0) {
		CHECK(0, "no-evict open: %s", err);
		return;
	}
	gs_io_create(e, &io);
	stored = 0;
	for (int i = 0; i < 20; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		stored += put(io, key, val, 1 << 20, GS_IF_ANY) == 0;
	}
	gs_stats(e, &st);
	CHECK(st.evictions == 0 && stored < 20 && stored == (int)st.curr_items,
	      "no-evict: stored %d evictions %llu", stored,
	      (unsigned long long)st.evictions);
	CHECK(put(io, "big", val, (2 << 20) + 1, GS_IF_ANY) == -E2BIG, "too big");
	gs_io_destroy(&io);
	gs_engine_close(&e);
	free(val);
}

/* How many runs <key>'s chunks on tier <t> make (chunk k+1 right after
 * chunk k is one run); -1 when it is not there. */
static int runs_of(struct gs_engine *e, const char *key, enum gs_tier t)
{
	struct gs_obj *obj;
	int runs = -1;

	pthread_mutex_lock(&e->lock);
	obj = engine_find(e, key, strlen(key));
	if (obj) {
		const struct chunk *c = obj_chunks(obj);
		uint64_t next = UINT64_MAX;

		runs = 0;
		for (uint32_t i = 0; i < obj->nchunks; i++) {
			if (c[i].tier != t)
				continue;
			runs += chunk_addr(obj, i) != next;
			next = chunk_addr(obj, i) + round_up(c[i].len, 4096);
		}
	}
	pthread_mutex_unlock(&e->lock);
	return runs;
}

/* Writers that interleave their bytes, chunk by chunk, still get one run
 * per tier each: an object's HDD tail is one extent per pool stripe. */
static void runs_round(const char *name, int nhdd)
{
	enum { NW = 4, SIZE = (9 << 20) + 12345, STEP = 64 << 10 };
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	struct gs_stats st;
	struct gs_writer *w[NW];
	struct waitres wr[NW] = { 0 };
	uint64_t pos[NW] = { 0 };
	char err[256], ssd[300], hdd[2][300], key[32];
	char *val = malloc(SIZE);
	bool all;

	store_config(&cfg, 64 << 20, 8 << 20, 64 << 20, 256 << 20);
	cfg.stripe_unit = 1 << 20;
	store_pool(&cfg, false, ssd, sizeof(ssd), "%s/%s-ssd", tmpdir, name);
	for (int i = 0; i < nhdd; i++)
		store_pool(&cfg, true, hdd[i], sizeof(hdd[i]), "%s/%s-hdd%d",
			   tmpdir, name, i);
	if (gs_engine_open(&e, &cfg, err, sizeof(err)) < 0) {
		CHECK(0, "%s: open: %s", name, err);
		free(val);
		return;
	}
	gs_io_create(e, &io);
	for (int k = 0; k < NW; k++) {
		snprintf(key, sizeof(key), "w%d", k);
		CHECK(gs_writer_open(io, key, strlen(key), SIZE, 0, 0,
				     GS_WRITE_SET, &w[k]) == 0, "%s: open %d",
		      name, k);
	}
	do {			/* 64K of each writer in turn */
		all = true;
		for (int k = 0; k < NW; k++) {
			void *p;
			size_t n;
			int ret;

			if (pos[k] == SIZE)
				continue;
			all = false;
			ret = gs_writer_buf(w[k], &p, &n, on_wake, NULL);
			if (ret == -EAGAIN) {
				gs_io_run(io, false);
				continue;
			}
			if (n > STEP)
				n = STEP;
			if (n > SIZE - pos[k])
				n = SIZE - pos[k];
			fill(val, SIZE, k + 1);
			memcpy(p, val + pos[k], n);
			gs_writer_advance(w[k], n);
			pos[k] += n;
		}
	} while (!all);
	for (int k = 0; k < NW; k++) {
		CHECK(gs_writer_finish(&w[k], GS_IF_ANY, 0, on_stored,
				       &wr[k]) == 0, "%s: finish %d", name, k);
		CHECK(run_for(io, &wr[k].done, 10000) && wr[k].res == 0,
		      "%s: stored %d: %d", name, k, wr[k].res);
	}
	for (int k = 0; k < NW; k++) {
		snprintf(key, sizeof(key), "w%d", k);
		CHECK(runs_of(e, key, GS_TIER_HDD) == 1 &&
		      runs_of(e, key, GS_TIER_SSD) == 1,
		      "%s: %s in %d HDD run(s), %d SSD run(s)", name, key,
		      runs_of(e, key, GS_TIER_HDD), runs_of(e, key, GS_TIER_SSD));
		fill(val, SIZE, k + 1);
		CHECK(get_stream(e, io, key, val, SIZE, 0, UINT64_MAX) == 0,
		      "%s: read %s", name, key);
	}
	gs_stats(e, &st);
	CHECK(st.extent_splits == 0, "%s: %llu splits", name,
	      (unsigned long long)st.extent_splits);
	gs_io_destroy(&io);
	gs_engine_close(&e);
	free(val);
}

/* A pool too fragmented for a tail's run: the tail is split into as few
 * runs as the holes allow (no eviction while the free space holds it), and
 * every byte survives a restart. */
static void split_round(void)
{
	enum { TAIL = 2 << 20, BIG = 6 << 20 };
	uint64_t lead = (256 << 10) + (1 << 20);	/* head + prefix */
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	struct gs_stats st;
	char err[256], ssd[300], hdd[300], key[32];
	char *val = malloc(lead + BIG);

	store_config(&cfg, 64 << 20, 8 << 20, 64 << 20, 20 << 20);
	cfg.max_object = 8 << 20;
	store_pool(&cfg, false, ssd, sizeof(ssd), "%s/split-ssd", tmpdir);
	store_pool(&cfg, true, hdd, sizeof(hdd), "%s/split-hdd", tmpdir);
	if (gs_engine_open(&e, &cfg, err, sizeof(err)) < 0) {
		CHECK(0, "split: open: %s", err);
		free(val);
		return;
	}
	gs_io_create(e, &io);
	for (int i = 0; i < 10; i++) {		/* the HDD pool full */
		snprintf(key, sizeof(key), "f%d", i);
		fill(val, lead + TAIL, i);
		CHECK(put(io, key, val, lead + TAIL, GS_IF_ANY) == 0,
		      "split: put %s", key);
	}
	for (int i = 0; i < 10; i += 2) {	/* five 2 MiB holes */
		snprintf(key, sizeof(key), "f%d", i);
		CHECK(gs_delete(e, key, strlen(key)) == 0, "split: del %s", key);
	}
	fill(val, lead + BIG, 99);
	CHECK(put(io, "big", val, lead + BIG, GS_IF_ANY) == 0, "split: big");
	gs_stats(e, &st);
	CHECK(runs_of(e, "big", GS_TIER_HDD) == 3 && st.extent_splits == 2 &&
	      st.evictions == 0, "split: %d runs, %llu splits, %llu evictions",
	      runs_of(e, "big", GS_TIER_HDD),
	      (unsigned long long)st.extent_splits,
	      (unsigned long long)st.evictions);
	CHECK(get_stream(e, io, "big", val, lead + BIG, 0, UINT64_MAX) == 0,
	      "split: read big");
	{	/* the cut record, grown by its runs, leaves as it came */
		struct gs_obj *obj;
		uint64_t rec = 0, before = st.index_record_bytes;

		if (gs_lookup(e, "big", 3, &obj) == 0) {
			CHECK(obj_nruns(obj) == 4, "split: %u runs",
			      obj_nruns(obj));
			rec = engine_record_bytes(obj);
			gs_obj_put(e, &obj);
		}
		CHECK(gs_delete(e, "big", 3) == 0, "split: delete big");
		gs_stats(e, &st);
		CHECK(rec && st.index_record_bytes == before - rec &&
		      st.hdd_used_bytes == 5 * (uint64_t)TAIL,
		      "split: delete gave back %llu of %llu record bytes, HDD %llu",
		      (unsigned long long)(before - st.index_record_bytes),
		      (unsigned long long)rec,
		      (unsigned long long)st.hdd_used_bytes);
		CHECK(put(io, "big", val, lead + BIG, GS_IF_ANY) == 0 &&
		      runs_of(e, "big", GS_TIER_HDD) == 3, "split: big again");
	}
	gs_io_destroy(&io);
	gs_engine_close(&e);

	if (gs_engine_open(&e, &cfg, err, sizeof(err)) < 0) {
		CHECK(0, "split: reopen: %s", err);
		free(val);
		return;
	}
	gs_io_create(e, &io);
	gs_stats(e, &st);
	CHECK(st.recovered_objects == 6, "split: %llu recovered",
	      (unsigned long long)st.recovered_objects);
	CHECK(get_stream(e, io, "big", val, lead + BIG, 0, UINT64_MAX) == 0,
	      "split: big after restart");
	for (int i = 1; i < 10; i += 2) {
		snprintf(key, sizeof(key), "f%d", i);
		fill(val, lead + TAIL, i);
		CHECK(get_stream(e, io, key, val, lead + TAIL, 0, UINT64_MAX) == 0,
		      "split: %s after restart", key);
	}
	/* a tail that no free space holds evicts, then is one run again */
	fill(val, lead + BIG, 98);
	CHECK(put(io, "big2", val, lead + BIG, GS_IF_ANY) == 0, "split: big2");
	CHECK(get_stream(e, io, "big2", val, lead + BIG, 0, UINT64_MAX) == 0,
	      "split: read big2");
	/* a record that grew as its run was cut is counted as it is */
	gs_delete(e, "big", 3);
	gs_delete(e, "big2", 4);
	for (int i = 1; i < 10; i += 2) {
		snprintf(key, sizeof(key), "f%d", i);
		gs_delete(e, key, strlen(key));	/* unless big2 evicted it */
	}
	gs_stats(e, &st);
	CHECK(st.curr_items == 0 && st.index_record_bytes == 0 &&
	      st.hdd_used_bytes == 0, "split: after flush %llu items, %llu record bytes, %llu HDD bytes",
	      (unsigned long long)st.curr_items,
	      (unsigned long long)st.index_record_bytes,
	      (unsigned long long)st.hdd_used_bytes);
	gs_io_destroy(&io);
	gs_engine_close(&e);
	free(val);
}

/* The SSD bytes past the head of <key>, -1 when it is not there. */
static int64_t prefix_of(struct gs_engine *e, const char *key)
{
	struct gs_obj *obj;
	int64_t p = -1;

	if (gs_lookup(e, key, strlen(key), &obj) == 0) {
		p = (int64_t)gs_obj_tier_bytes(obj, GS_TIER_SSD) -
		    (int64_t)engine_ram_limit(e);
		gs_obj_put(e, &obj);
	}
	return p;
}

/* What measure_prefix() should say for the rate and latency measured
 * now: rate x HDD p99 - head, up to a whole SSD chunk, within the cap. */
static uint64_t formula(struct gs_engine *e)
{
	uint64_t need = measure_delivery_rate(e) / 1000 *
			(measure_io_ns(e, GS_TIER_HDD, 99) / 1000) / 1000;
	uint64_t head = engine_ram_limit(e);

	if (need <= head)
		return 0;
	need = round_up(need - head, GS_SSD_CHUNK);
	return need < e->cfg.ssd_prefix ? need : e->cfg.ssd_prefix;
}

/* Feeds <e> HDD reads of <lat_ns> and consumers draining at <rate> B/s. */
static void feed(struct gs_engine *e, uint64_t lat_ns, uint64_t rate, int n)
{
	for (int i = 0; i < n; i++) {
		measure_io(e, GS_TIER_HDD, lat_ns);
		measure_delivery(e, rate, 1000000000);
	}
}

/* Each new object's prefix follows rate x (HDD latency) - head within
 * --ssd-prefix, measured (here: fed) as it is made; objects keep theirs,
 * every byte reads back; --fixed-prefix keeps --ssd-prefix. */
static void prefix_round(void)
{
	enum { SIZE = 4 << 20 };
	static const struct {
		const char *key;
		uint64_t rate;		/* B/s, fed before the put */
		int n;			/* samples: more than the last's */
	} steps[] = {
		{ "unmeasured", 0, 0 },
		{ "slow", 10000000, 20 },	/* 50 KB in 5 ms: the head */
		{ "mid", 100000000, 400 },	/* ~500 KB - head */
		{ "fast", 1000000000, 8000 },	/* 5 MB: the cap */
	};
	uint64_t want[4], sum = 0;
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	struct gs_stats st;
	char err[256], ssd[300], hdd[300];
	char *val = malloc(SIZE);

	store_config(&cfg, 64 << 20, 8 << 20, 128 << 20, 256 << 20);
	store_pool(&cfg, false, ssd, sizeof(ssd), "%s/prefix-ssd", tmpdir);
	store_pool(&cfg, true, hdd, sizeof(hdd), "%s/prefix-hdd", tmpdir);
	for (int fixed = 0; fixed < 2; fixed++) {
		cfg.fixed_prefix = fixed;
		cfg.fresh = true;
		if (gs_engine_open(&e, &cfg, err, sizeof(err)) < 0) {
			CHECK(0, "prefix: open: %s", err);
			break;
		}
		gs_io_create(e, &io);
		for (int i = 0; i < 4; i++) {
			feed(e, 5000000, steps[i].rate, steps[i].n);
			want[i] = fixed || !i ? cfg.ssd_prefix : formula(e);
			CHECK(measure_prefix(e) == want[i],
			      "prefix %d: %s: measure_prefix %llu, want %llu",
			      fixed, steps[i].key,
			      (unsigned long long)measure_prefix(e),
			      (unsigned long long)want[i]);
			fill(val, SIZE, i + 7);
			CHECK(put(io, steps[i].key, val, SIZE, GS_IF_ANY) == 0,
			      "prefix: put %s", steps[i].key);
		}
		CHECK(fixed || (want[1] == 0 && want[2] > 0 &&
				want[2] < cfg.ssd_prefix &&
				want[3] == cfg.ssd_prefix),
		      "prefix: formula gave %llu %llu %llu",
		      (unsigned long long)want[1], (unsigned long long)want[2],
		      (unsigned long long)want[3]);
		sum = 0;
		for (int i = 0; i < 4; i++) {
			fill(val, SIZE, i + 7);
			CHECK(prefix_of(e, steps[i].key) == (int64_t)want[i],
			      "prefix %d: %s holds %lld on the SSD past the head, want %llu",
			      fixed, steps[i].key,
			      (long long)prefix_of(e, steps[i].key),
			      (unsigned long long)want[i]);
			CHECK(runs_of(e, steps[i].key, GS_TIER_HDD) == 1,
			      "prefix: %s runs", steps[i].key);
			CHECK(get_stream(e, io, steps[i].key, val, SIZE, 0,
					 UINT64_MAX) == 0,
			      "prefix: read %s", steps[i].key);
			sum += want[i];
		}
		gs_stats(e, &st);
		CHECK(st.prefix_bytes == sum &&
		      st.prefix_objects_0 == (fixed ? 0 : 1) &&
		      st.prefix_objects_le_1m + st.prefix_objects_le_512k +
		      st.prefix_objects_le_256k == (fixed ? 4 : 3) &&
		      st.prefix_objects_le_1m == (fixed ? 4u : 2u +
						  (want[2] > 512 << 10)) &&
		      st.prefix_objects_gt_1m == 0,
		      "prefix %d: stats %llu bytes, 0:%llu 256k:%llu 512k:%llu 1m:%llu",
		      fixed, (unsigned long long)st.prefix_bytes,
		      (unsigned long long)st.prefix_objects_0,
		      (unsigned long long)st.prefix_objects_le_256k,
		      (unsigned long long)st.prefix_objects_le_512k,
		      (unsigned long long)st.prefix_objects_le_1m);
		gs_io_destroy(&io);
		gs_engine_close(&e);
	}
	free(val);
}

int main(void)
{
	if (scratch_make(tmpdir) < 0)
		return 1;
	layout_round("ram", 0, 0);
	layout_round("ssd", 1, 0);
	layout_round("tiered", 1, 1);
	layout_round("striped", 2, 2);
	eviction_round();
	runs_round("runs", 1);
	runs_round("runs-striped", 2);
	split_round();
	prefix_round();
	if (scratch_remove(tmpdir) < 0)
		failures++;
	return check_result();
}
