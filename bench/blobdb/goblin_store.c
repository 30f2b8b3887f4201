/*
 * The Goblin dataset: libgoblin in-process, one O_DIRECT pool on the device,
 * the whole budget as the RAM-head region.  Reads go through gs_read_into()
 * into one reader buffer that grows only when an object does not fit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "goblin.h"
#include "blobdb.h"

struct wait {
	bool fired;
	int res;
	uint64_t t_ns;
};

static void on_wake(void *arg)
{
	struct wait *w = arg;

	w->fired = true;
}

static void on_done(void *arg, int res)
{
	struct wait *w = arg;

	w->t_ns = bd_now_ns();
	w->res = res;
	w->fired = true;
}

static void on_stored(void *arg, int res, const struct gs_stored *stored)
{
	(void)stored;
	on_done(arg, res);
}

/* Runs <io> until <w> fires.  0 or -errno from gs_io_run(). */
static int wait_for(struct gs_io *io, struct wait *w)
{
	while (!w->fired) {
		int rc = gs_io_run(io, true);

		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Pool bytes the schedule needs: every tail after the head, 4 KiB-aligned,
 * plus 10% and 64 MiB for the allocator's own rounding. */
static uint64_t pool_size(const struct bd_schedule *s, uint64_t ram_head)
{
	uint64_t i, need = 0;

	for (i = 0; i < s->n_objects; i++)
		if (s->sizes[i] > ram_head)
			need += (s->sizes[i] - ram_head + 4095) & ~4095ull;
	return need + need / 10 + 64 * MIB;
}

static int put_one(struct gs_io *io, const struct bd_config *cfg,
		   uint64_t idx, uint64_t size, struct bd_result *r)
{
	uint64_t vseed = bd_value_seed(cfg->seed, idx), off = 0;
	struct gs_writer *w;
	struct wait wk, dn = { 0 };
	char key[BD_KEY_MAX];
	int klen = bd_key(key, idx), rc;

	rc = gs_writer_open(io, key, klen, size, 0, 0, GS_WRITE_SET, &w);
	if (rc < 0) {
		bd_fail(r, "gs_writer_open(%s, %llu bytes) after %llu objects: "
			"%s%s", key, (unsigned long long)size,
			(unsigned long long)idx, strerror(-rc),
			rc == -ENOMEM ? " (--memory too small for the heads, "
					"or the pool is full)" : "");
		return -1;
	}
	while (off < size) {
		void *p;
		size_t len;

		wk.fired = false;
		rc = gs_writer_buf(w, &p, &len, on_wake, &wk);
		if (rc == -EAGAIN) {
			if ((rc = wait_for(io, &wk)) < 0)
				break;
			continue;
		}
		if (rc < 0)
			break;
		if (len > size - off)
			len = size - off;
		bd_value_fill(p, vseed, off, len);
		gs_writer_advance(w, len);
		off += len;
	}
	if (rc < 0) {
		bd_fail(r, "gs_writer_buf/gs_io_run(%s): %s", key,
			strerror(-rc));
		gs_writer_abort(&w);
		return -1;
	}
	rc = gs_writer_finish(&w, GS_IF_ANY, 0, on_stored, &dn);
	if (rc == 0)
		rc = wait_for(io, &dn);
	if (rc == 0)
		rc = dn.res;
	if (rc < 0) {
		bd_fail(r, "gs_writer_finish(%s): %s", key, strerror(-rc));
		return -1;
	}
	r->user_bytes += size;
	return 0;
}

static int populate(struct gs_engine *e, struct gs_io *io,
		    const struct bd_config *cfg, const struct bd_schedule *s,
		    struct bd_result *r)
{
	struct gs_stats st;
	uint64_t i, t0 = bd_now_ns();

	for (i = 0; i < s->n_objects; i++)
		if (put_one(io, cfg, i, s->sizes[i], r) < 0)
			return -1;
	r->populate_ns = bd_now_ns() - t0;
	gs_stats(e, &st);
	if (st.curr_items != s->n_objects || st.evictions != 0) {
		bd_fail(r, "after populate: %llu objects stored, %llu evicted; "
			"expected %llu and 0",
			(unsigned long long)st.curr_items,
			(unsigned long long)st.evictions,
			(unsigned long long)s->n_objects);
		return -1;
	}
	return 0;
}

/* One request: lookup, read into <*buf> (grown if needed), verify. */
static int read_one(struct gs_engine *e, struct gs_io *io,
		    const struct bd_config *cfg, const struct bd_schedule *s,
		    uint64_t i, void **buf, size_t *cap, struct bd_result *r)
{
	uint32_t idx = s->reads[i];
	struct wait dn = { 0 };
	struct gs_obj *obj;
	char key[BD_KEY_MAX];
	int klen = bd_key(key, idx), rc;
	uint64_t t0, t1, size;
	size_t need;

	t0 = bd_now_ns();
	rc = gs_lookup(e, key, klen, &obj);
	if (rc < 0) {
		r->samples[i].ttfb_ns = r->samples[i].complete_ns =
			bd_now_ns() - t0;
		r->done++;
		r->misses++;
		bd_fail(r, "gs_lookup(%s): %s", key, strerror(-rc));
		return 0;
	}
	need = gs_read_size(obj);
	if (need > *cap) {
		free(*buf);
		*cap = (need + 4095) & ~(size_t)4095;
		if (posix_memalign(buf, 4096, *cap)) {
			*buf = NULL;
			*cap = 0;
			gs_obj_put(e, &obj);
			bd_fail(r, "out of memory for a %zu-byte buffer", need);
			return -1;
		}
	}
	rc = gs_read_into(io, obj, *buf, on_done, &dn);
	t1 = bd_now_ns();
	if (rc == 0)
		rc = wait_for(io, &dn);
	if (rc == 0)
		rc = dn.res;
	size = gs_obj_meta(obj)->size;
	gs_obj_put(e, &obj);
	if (rc < 0) {
		bd_fail(r, "gs_read_into(%s): %s", key, strerror(-rc));
		return -1;
	}
	r->samples[i].ttfb_ns = t1 - t0;
	r->samples[i].complete_ns = dn.t_ns - t0;
	r->done++;
	bd_verify(cfg, s, idx, *buf, size, r);
	return 0;
}

static void report_stats(struct gs_engine *e, struct bd_result *r)
{
	const struct gs_config *c = gs_engine_config(e);
	struct gs_stats st;

	gs_stats(e, &st);
#define GS_STAT_KV(name, desc) bd_kv_add(&r->counters, #name, st.name);
	GS_STATS(GS_STAT_KV)
#undef GS_STAT_KV
	bd_kv_add(&r->memory, "memory", c->memory);
	bd_kv_add(&r->memory, "sub_memory", c->sub_memory);
	bd_kv_add(&r->memory, "ram_head", c->ram_head);
	bd_kv_add(&r->memory, "ram_region_bytes", st.ram_region_bytes);
	bd_kv_add(&r->memory, "ram_used_bytes", st.ram_used_bytes);
	bd_kv_add(&r->memory, "ram_head_bytes", st.ram_head_bytes);
	bd_kv_add(&r->memory, "index_bytes", st.index_bytes);
	r->engine_write_bytes = st.disk_write_bytes;
	r->disk_used_bytes = st.ssd_used_bytes + st.hdd_used_bytes;
}

int bd_run_goblin(const struct bd_config *cfg, const struct bd_schedule *s,
		  const char *dir, struct bd_result *r)
{
	struct gs_engine *e = NULL;
	struct gs_io *io = NULL;
	struct gs_config gc;
	char pool[4096], err[256] = "";
	void *buf = NULL;
	size_t cap = 0;
	uint64_t i;
	int rc;

	snprintf(pool, sizeof(pool), "%s/ssd", dir);
	if ((rc = bd_mkdir_p(pool)) < 0) {
		bd_fail(r, "mkdir %s: %s", pool, strerror(-rc));
		return -1;
	}
	gs_config_init(&gc);
	if (cfg->ram_head)
		gc.ram_head = cfg->ram_head;
	/* The budget is the whole region: a quarter of it goes to the
	 * small-object arena only when some object is smaller than a head. */
	gc.sub_memory = 0;
	for (i = 0; i < s->n_objects; i++)
		if (s->sizes[i] < gc.ram_head)
			gc.sub_memory = cfg->memory / 4 / gc.block * gc.block;
	gc.memory = cfg->memory - gc.sub_memory;
	gc.ssd_dir.v[0] = pool;
	gc.ssd_dir.n = 1;
	gc.ssd_size = pool_size(s, gc.ram_head);
	gc.no_evict = true;
	if (s->max_size > gc.max_object)
		gc.max_object = s->max_size;

	rc = gs_engine_open(&e, &gc, err, sizeof(err));
	if (rc < 0) {
		bd_fail(r, "gs_engine_open: %s", err[0] ? err : strerror(-rc));
		return -1;
	}
	rc = gs_io_create(e, &io);
	if (rc < 0) {
		bd_fail(r, "gs_io_create: %s", strerror(-rc));
		goto out_engine;
	}
	if (populate(e, io, cfg, s, r) < 0)
		goto out_io;
	r->disk_bytes = bd_du(dir);
	for (i = 0; i < s->n_reads; i++)
		if (read_one(e, io, cfg, s, i, &buf, &cap, r) < 0)
			goto out_io;
	report_stats(e, r);
	bd_kv_add(&r->memory, "reader_buffer", cap);
out_io:
	free(buf);
	gs_io_destroy(&io);
out_engine:
	gs_engine_close(&e);
	return r->error[0] ? -1 : 0;
}
