/*
 * Helpers the engine's unit tests share: a scratch directory and a small
 * store's config, deterministic fill, a completion that records its
 * result, a writer that stores a whole value, and reads of engine
 * internals no product code needs (engine_find, journal_last).
 */
#ifndef GOBLIN_TEST_ENGINE_UTIL_H
#define GOBLIN_TEST_ENGINE_UTIL_H

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "goblin.h"
#include "log.h"
#include "engine.h"
#include "index.h"
#include "journal.h"

/* Logs warnings only and makes the scratch directory <tmpl>
 * ("/var/tmp/...XXXXXX", completed in place); 0, or -1 after perror(). */
static inline int scratch_make(char *tmpl)
{
	log_level = LOG_WARN;
	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		return -1;
	}
	return 0;
}

/* Removes the scratch directory <dir> and all below it; 0, or -1. */
static inline int scratch_remove(const char *dir)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Fills <cfg> for a small store: the defaults, <memory> bytes of RAM of
 * which <sub_memory> for small objects, not locked, SSD and HDD pools of
 * <ssd_size> and <hdd_size> bytes once store_pool() adds their dirs. */
static inline void store_config(struct gs_config *cfg, uint64_t memory,
				uint64_t sub_memory, uint64_t ssd_size,
				uint64_t hdd_size)
{
	gs_config_init(cfg);
	cfg->memory = memory;
	cfg->sub_memory = sub_memory;
	cfg->no_mlock = true;
	cfg->ssd_size = ssd_size;
	cfg->hdd_size = hdd_size;
}

/* Adds a pool dir to <cfg>'s HDD pools when <hdd>, else its SSD pools:
 * the path printed from <fmt> into <path> (<len> bytes), which must
 * outlive <cfg>. */
__attribute__((format(printf, 5, 6)))
static inline void store_pool(struct gs_config *cfg, bool hdd, char *path,
			      size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, len, fmt, ap);
	va_end(ap);
	if (hdd)
		cfg->hdd_dir.v[cfg->hdd_dir.n++] = path;
	else
		cfg->ssd_dir.v[cfg->ssd_dir.n++] = path;
}

/* Adds <dir>/ssd and <dir>/hdd (into <ssd> and <hdd>, <len> bytes each,
 * which must outlive <cfg>) to <cfg>'s pools. */
static inline void store_two_pools(struct gs_config *cfg, const char *dir,
				   char *ssd, char *hdd, size_t len)
{
	store_pool(cfg, false, ssd, len, "%s/ssd", dir);
	store_pool(cfg, true, hdd, len, "%s/hdd", dir);
}

/* Opens the engine of <cfg> into *<e>: 0, or -1 after printing why. */
static inline int store_open(struct gs_engine **e, const struct gs_config *cfg)
{
	char err[256];

	if (gs_engine_open(e, cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "open: %s\n", err);
		return -1;
	}
	return 0;
}

/* Opens a store of 64 MiB of RAM (32 for small objects) and a 64 MiB SSD
 * pool in dir <pool> (which must outlive the engine) whose index starts
 * at 16 buckets, <fresh> as gs_config's; a <checkpoint_size> of 0 keeps
 * the default.  The rehash and lookup tests'; NULL after printing why. */
static inline struct gs_engine *open_small_index(char *pool, bool fresh,
						 uint64_t checkpoint_size)
{
	struct gs_engine *e;
	struct gs_config cfg;

	store_config(&cfg, 64 << 20, 32 << 20, 64 << 20, 0);
	cfg.ssd_dir.v[cfg.ssd_dir.n++] = pool;
	cfg.hash_power = 4;
	cfg.fresh = fresh;
	if (checkpoint_size)
		cfg.checkpoint_size = checkpoint_size;
	return store_open(&e, &cfg) == 0 ? e : NULL;
}
/* The record of <key>, live or not; NULL when none (index.c's lookup,
 * whichever table holds it while the index grows).  Called with e->lock
 * held. */
static inline struct gs_obj *engine_find(struct gs_engine *e, const void *key,
					 size_t klen)
{
	return engine_find_record(e, key, klen);
}

/* The sequence number of the last journal append (0: no journal). */
static inline uint64_t journal_last(const struct gs_engine *e)
{
	return e->journal ? e->journal->last : 0;
}

static inline void fill(char *p, uint64_t n, uint32_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;

	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (char)x;
	}
}

struct waitres {
	bool done;
	int res;
	struct gs_stored stored;
};

static inline void on_done(void *arg, int res)
{
	struct waitres *w = arg;

	w->done = true;
	w->res = res;
}

static inline void on_stored(void *arg, int res, const struct gs_stored *st)
{
	struct waitres *w = arg;

	w->stored = *st;
	on_done(w, res);
}

static inline void on_wake(void *arg)
{
	(void)arg;
}

/* Runs <io>, blocking in it, until <w> is done; returns its result. */
static inline int run_until(struct gs_io *io, struct waitres *w)
{
	while (!w->done)
		if (gs_io_run(io, true) < 0)
			return -1;
	return w->res;
}

/* Runs <io> the way a server loop does (poll its fd, never block in the
 * engine) until *<flag> or <ms> pass; returns whether *<flag> came. */
static inline bool run_for(struct gs_io *io, const bool *flag, unsigned ms)
{
	uint64_t end = mono_ms() + ms;

	while (!*flag && mono_ms() < end) {
		struct pollfd pfd = { .fd = gs_io_fd(io), .events = POLLIN };

		gs_io_run(io, false);
		if (*flag)
			break;
		poll(&pfd, 1, 20);
	}
	return *flag;
}

/* Runs <io>'s completions for <ms> milliseconds. */
static inline void idle_for(struct gs_io *io, unsigned ms)
{
	bool never = false;

	run_for(io, &never, ms);
}

/* Writes <size> bytes of <val> under <key> with <flags>, stored if <cond>
 * holds (<cas> for GS_IF_CAS); returns the done result, or -ETIMEDOUT after 10 s.  What the store
 * did goes to <*stored> when not NULL. */
static inline int put_if(struct gs_io *io, const char *key, const char *val,
			 uint64_t size, uint32_t flags, enum gs_if cond,
			 uint64_t cas, struct gs_stored *stored)
{
	struct gs_writer *w;
	struct waitres wr = { 0 };
	uint64_t pos = 0;
	int ret = gs_writer_open(io, key, strlen(key), size, flags, 0,
				 GS_WRITE_SET, &w);

	if (ret < 0)
		return ret;
	while (pos < size) {
		void *p;
		size_t n;

		ret = gs_writer_buf(w, &p, &n, on_wake, NULL);
		if (ret == -EAGAIN) {
			gs_io_run(io, false);
			continue;
		}
		if (n > size - pos)
			n = size - pos;
		memcpy(p, val + pos, n);
		gs_writer_advance(w, n);
		pos += n;
	}
	ret = gs_writer_finish(&w, cond, cas, on_stored, &wr);
	if (ret < 0) {
		gs_writer_abort(&w);
		return ret;
	}
	if (!run_for(io, &wr.done, 10000))
		return -ETIMEDOUT;
	if (stored)
		*stored = wr.stored;
	return wr.res;
}

/* Appends (or prepends) <len> bytes of <data> to <key> through a writer
 * in GS_WRITE_APPEND (GS_WRITE_PREPEND) mode; returns gs_writer_finish()'s
 * result, <wr> gets done's. */
static inline int concat(struct gs_io *io, const char *key, bool prepend,
			 const char *data, size_t len, struct waitres *wr)
{
	struct gs_writer *k;
	size_t pos = 0;
	int ret = gs_writer_open(io, key, strlen(key), len, 0, 0,
				 prepend ? GS_WRITE_PREPEND : GS_WRITE_APPEND,
				 &k);

	if (ret < 0)
		return ret;
	while (pos < len) {
		void *p;
		size_t n;

		if (gs_writer_buf(k, &p, &n, on_wake, NULL) == -EAGAIN) {
			gs_io_run(io, false);
			continue;
		}
		if (n > len - pos)
			n = len - pos;
		memcpy(p, data + pos, n);
		gs_writer_advance(k, n);
		pos += n;
	}
	return gs_writer_finish(&k, GS_IF_ANY, 0, on_stored, wr);
}

#endif
