/*
 * What test_journal and test_journal_damage share: a config with an SSD
 * pool under a temp dir, engines opened and closed (or left as a kill -9
 * leaves them), wants[] (what each key should hold after a restart, shared
 * with forked children) and check_index(), which compares the index with
 * it.  Define JOURNAL_TEST_TMP (a mkdtemp template) before including.
 */
#ifndef GOBLIN_T_JOURNAL_UTIL_H
#define GOBLIN_T_JOURNAL_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "engine.h"
#include "engine_util.h"
#include "journal.h"
#include "log.h"
#include "layout.h"
#include "index.h"

static char tmp[] = JOURNAL_TEST_TMP;
static char ssd[300], jpath[400], crash_copy[400];

/* What one key should hold after a restart. */
struct want {
	char key[GS_KEY_MAX];
	uint8_t klen;
	bool live;
	uint32_t seed;			/* value of a RAM-only object */
	struct gs_meta meta;		/* size, flags, exptime, cas, mtime */
	uint32_t nchunks;
	struct want_chunk {		/* a chunk and its own address */
		uint64_t addr, sum;
		uint32_t len;
		uint8_t tier;
	} chunks[40];
};

#define MAX_WANTS 128
static struct want *wants;		/* MAX_WANTS, shared with children */
static int nwants;
static uint64_t cursor;			/* next free pool address */

static inline void config(struct gs_config *cfg)
{
	gs_config_init(cfg);
	cfg->memory = 32 << 20;
	cfg->sub_memory = 32 << 20;	/* a block for every slot class */
	cfg->no_mlock = true;
	cfg->ram_head = 64 << 10;
	cfg->max_object = 8 << 20;
	cfg->ssd_size = 64 << 20;
	cfg->ssd_dir.v[0] = ssd;
	cfg->ssd_dir.n = 1;
}

/* Opens the engine (it opens and replays the journal); NULL with a
 * reason. */
static inline struct gs_engine *eopen(const struct gs_config *cfg, char *err,
			       size_t errlen)
{
	struct gs_engine *e;

	return gs_engine_open(&e, cfg, err, errlen) < 0 ? NULL : e;
}

/* eopen(), or the end of the test. */
static inline struct gs_engine *eopen_ok(const struct gs_config *cfg,
					 const char *what)
{
	char err[512] = "";
	struct gs_engine *e = eopen(cfg, err, sizeof(err));

	CHECK(e, "%s: open: %s", what, err);
	if (!e)
		exit(check_result());
	return e;
}

/* A test's start: the default config, an empty journal, no wants. */
static inline struct gs_engine *fresh_start(struct gs_config *cfg,
					    const char *what)
{
	struct gs_engine *e;

	config(cfg);
	nwants = 0;
	cfg->fresh = true;
	e = eopen_ok(cfg, what);
	cfg->fresh = false;
	return e;
}

/* Closes the engine (it checkpoints the journal). */
static inline void eclose(struct gs_engine **e)
{
	gs_engine_close(e);
}

/* Closes as a crash would leave things: the journal as appended, no
 * checkpoint (the clean close writes one; the copy taken before is put
 * back over it). */
static inline void crash_close(struct gs_engine **e)
{
	char cmd[1000];

	snprintf(cmd, sizeof(cmd), "cp %s %s", jpath, crash_copy);
	CHECK(system(cmd) == 0, "copy journal");
	eclose(e);
	CHECK(rename(crash_copy, jpath) == 0, "restore journal");
}

static inline uint64_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static inline struct gs_stats stats(struct gs_engine *e)
{
	struct gs_stats st;

	gs_stats(e, &st);
	return st;
}

/* ---- fabricated records ---- */

/* A new want: a RAM-only object of <size> bytes made from <seed>. */
static inline struct want *want_new(const char *key, uint64_t size,
				    uint32_t seed)
{
	struct want *w = &wants[nwants++];

	memset(w, 0, sizeof(*w));
	w->klen = strlen(key);
	memcpy(w->key, key, w->klen);
	w->live = true;
	w->meta.mtime = time(NULL) - 100;
	w->meta.size = size;
	w->seed = seed;
	return w;
}

static inline struct want *find_want(const char *key)
{
	for (int i = 0; i < nwants; i++)
		if (wants[i].klen == strlen(key) &&
		    !memcmp(wants[i].key, key, wants[i].klen))
			return &wants[i];
	return NULL;
}

/* An on-disk object of <size>: SSD chunks of GS_SSD_CHUNK from byte 0, at
 * fresh pool addresses. */
static inline void disk_layout(struct want *w, uint64_t size, uint32_t align)
{
	w->meta.size = size;
	w->nchunks = 0;
	for (uint64_t off = 0; off < size; off += GS_SSD_CHUNK) {
		struct want_chunk *c = &w->chunks[w->nchunks++];

		c->len = size - off < GS_SSD_CHUNK ? size - off : GS_SSD_CHUNK;
		c->tier = GS_TIER_SSD;
		c->addr = cursor;
		c->sum = 0x5eed0000 + cursor / align;
		cursor += round_up(c->len, align);
	}
}

/* Journals a PUT of <w> as the engine would (e->lock held, new CAS). */
static inline void put_want(struct gs_engine *e, struct want *w)
{
	/* a run per chunk: the journal holds chunks, whatever their runs */
	struct gs_obj *obj = engine_record_alloc(w->key, w->klen, w->nchunks,
						 w->nchunks);
	int ret = 0;

	pthread_mutex_lock(&e->lock);
	w->meta.cas = ++e->next_cas;
	obj->meta = w->meta;
	for (uint32_t k = 0; k < w->nchunks; k++) {
		obj_chunks(obj)[k] = (struct chunk){
			.sum = w->chunks[k].sum, .len = w->chunks[k].len,
			.tier = w->chunks[k].tier, .run = k,
		};
		obj_runs(obj)[k] = w->chunks[k].addr;
	}
	if (!w->nchunks && w->meta.size) {
		obj->meta.head_len = w->meta.size;
		ret = engine_reserve_part(e, &obj, -1);
		if (ret == 0)
			fill(obj_head_ptr(e, obj), w->meta.size, w->seed);
	}
	if (ret == 0)
		ret = journal_put(e, obj);
	if (w->nchunks)		/* made-up extents: not the pool's to free */
		free(obj);
	else
		engine_free_record(e, obj);
	pthread_mutex_unlock(&e->lock);
	CHECK(ret == 0, "put %.*s: %d", w->klen, w->key, ret);
}

static inline void del_key(struct gs_engine *e, const char *key)
{
	struct want *w = find_want(key);
	int ret;

	pthread_mutex_lock(&e->lock);
	ret = journal_del(e, key, strlen(key), ++e->next_cas);
	pthread_mutex_unlock(&e->lock);
	CHECK(ret == 0, "del %s: %d", key, ret);
	if (w)
		w->live = false;
}

/* Journals a TOUCH of <key> to <exptime>, for the object of <cas>. */
static inline void touch_key(struct gs_engine *e, const char *key, uint64_t cas,
		      int64_t exptime)
{
	struct gs_obj *obj = engine_record_alloc(key, strlen(key), 0, 0);
	int ret;

	obj->meta.cas = cas;
	obj->meta.exptime = exptime;
	pthread_mutex_lock(&e->lock);
	ret = journal_touch(e, obj);
	pthread_mutex_unlock(&e->lock);
	CHECK(ret == 0, "touch %s: %d", key, ret);
	free(obj);
}

/* An on-disk object replay is to drop, its first chunk to be spoilt. */
static inline struct want *bad_want(const char *key, uint32_t align)
{
	struct want *w = want_new(key, 0, 0);

	disk_layout(w, 100000, align);
	w->live = false;
	return w;
}

/* ---- checking a recovered index ---- */

static inline void check_obj(const struct gs_engine *e,
			     const struct gs_obj *obj,
		      const struct want *w, const char *what)
{
	const struct gs_meta *m = &obj->meta, *x = &w->meta;
	int k = w->klen;

	CHECK(m->size == x->size && m->flags == x->flags &&
	      m->exptime == x->exptime && m->cas == x->cas &&
	      m->mtime == x->mtime, "%s: %.*s: meta size %llu flags %u exp %lld cas %llu",
	      what, k, w->key, (unsigned long long)m->size, m->flags,
	      (long long)m->exptime, (unsigned long long)m->cas);
	CHECK(obj->nchunks == w->nchunks && obj->on_disk == (w->nchunks > 0),
	      "%s: %.*s: %u chunks", what, k, w->key, obj->nchunks);
	for (uint32_t i = 0; i < obj->nchunks && i < w->nchunks; i++) {
		const struct chunk *c = &obj_chunks(obj)[i];
		const struct want_chunk *y = &w->chunks[i];

		CHECK(chunk_addr(obj, i) == y->addr && c->sum == y->sum &&
		      c->len == y->len &&
		      c->tier == y->tier, "%s: %.*s: chunk %u", what, k, w->key, i);
	}
	if (w->nchunks) {
		CHECK(!obj->has_head && m->head_len == 0 &&
		      gs_obj_tier_bytes(obj, GS_TIER_SSD) == x->size &&
		      gs_obj_tier_bytes(obj, GS_TIER_RAM) == 0,
		      "%s: %.*s: on-disk meta",
		      what, k, w->key);
	} else {
		char *val = malloc(x->size + 1);

		fill(val, x->size, w->seed);
		CHECK(m->head_len == x->size &&
		      gs_obj_tier_bytes(obj, GS_TIER_RAM) == x->size &&
		      (!x->size || (obj->has_head &&
				    !memcmp(obj_head_ptr(e, obj), val, x->size))),
		      "%s: %.*s: RAM value", what, k, w->key);
		free(val);
	}
}

/* Checks the index against wants[]: the live ones there exactly, no
 * other; the pool holds exactly their extents. */
static inline void check_index(struct gs_engine *e, const char *what)
{
	uint64_t used = 0, live = 0, max_seq = 0;
	struct gs_stats st = stats(e);

	pthread_mutex_lock(&e->lock);
	for (int i = 0; i < nwants; i++) {
		const struct want *w = &wants[i];
		struct gs_obj *obj = engine_find(e, w->key, w->klen);

		if (w->live && w->meta.cas > max_seq)
			max_seq = w->meta.cas;
		if (!w->live) {
			CHECK(!obj, "%s: %.*s should be gone", what, w->klen, w->key);
			continue;
		}
		CHECK(obj, "%s: %.*s lost", what, w->klen, w->key);
		if (!obj)
			continue;
		check_obj(e, obj, w, what);
		live++;
		for (uint32_t k = 0; k < w->nchunks; k++)
			used += round_up(w->chunks[k].len, e->pools[GS_TIER_SSD].align);
	}
	CHECK(e->clock_len == live, "%s: %u linked, want %llu", what,
	      e->clock_len, (unsigned long long)live);
	CHECK(e->pools[GS_TIER_SSD].used == used, "%s: pool used %llu, want %llu",
	      what, (unsigned long long)e->pools[GS_TIER_SSD].used,
	      (unsigned long long)used);
	CHECK(e->next_cas >= max_seq, "%s: next_cas %llu < %llu", what,
	      (unsigned long long)e->next_cas, (unsigned long long)max_seq);
	pthread_mutex_unlock(&e->lock);
	CHECK(st.curr_items == live, "%s: curr_items %llu", what,
	      (unsigned long long)st.curr_items);
}


/* Stores RAM-only <key> as the engine does (space reserved; engine_link
 * journals it) and notes it in wants[]. */
static inline void store(struct gs_engine *e, const char *key, uint64_t size,
		  uint32_t seed)
{
	struct want *w = find_want(key) ? find_want(key) : want_new(key, size, 0);
	struct gs_obj *obj;
	int ret;

	pthread_mutex_lock(&e->lock);
	ret = engine_reserve(e, key, strlen(key), size, &obj);
	if (ret == 0) {
		fill(obj_head_ptr(e, obj), size, seed);
		ret = engine_link(e, obj, GS_IF_ANY, 0, NULL);
		w->meta = obj->meta;
		engine_unref(e, obj);
	}
	pthread_mutex_unlock(&e->lock);
	CHECK(ret == 0, "store %s: %d", key, ret);
	w->live = ret == 0;
	w->seed = seed;
}

static pid_t main_pid;

static inline void cleanup(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (getpid() == main_pid && system(cmd))
		fprintf(stderr, "cannot remove %s\n", tmp);
}

/* Makes the test's dir and the shared wants[]: 0, or -1. */
static inline int journal_test_init(void)
{
	log_level = LOG_WARN;
	if (!mkdtemp(tmp))
		return -1;
	main_pid = getpid();
	wants = mmap(NULL, MAX_WANTS * sizeof(*wants), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (wants == MAP_FAILED)
		return -1;
	atexit(cleanup);
	snprintf(ssd, sizeof(ssd), "%s/ssd", tmp);
	snprintf(jpath, sizeof(jpath), "%s/%s", ssd, JOURNAL_NAME);
	snprintf(crash_copy, sizeof(crash_copy), "%s/crash-copy", tmp);
	return 0;
}

#endif
