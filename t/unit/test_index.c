/*
 * What the index costs (stats index_bytes), against its documented
 * formula: per record, glibc malloc's chunk for the record and its key,
 * rounded to 8, then, with chunks, 8 bytes of head-cache place and the
 * chunk extents (request + 8, rounded to 16, at least
 * 32); per engine, the bucket, CLOCK and head-CLOCK arrays at capacity.
 * And the journal's pages leave the page cache once written (mincore).
 * gs_walk lists every live object once, a batch at a time; gs_lookup_why
 * tells what a miss met.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "engine.h"
#include "check.h"
#include "engine_util.h"
#include "journal.h"
#include "log.h"
#include "index.h"

static char tmpdir[] = "/var/tmp/goblin-test-index.XXXXXX";

static uint64_t malloc_chunk(uint64_t n)
{
	uint64_t c = (n + 8 + 15) / 16 * 16;

	return c < 32 ? 32 : c;
}

/* A record of <nchunks> chunks in <nruns> runs: 16 bytes a chunk (its
 * checksum, length, tier and run), 8 a run (its address). */
static uint64_t record(size_t klen, uint32_t nchunks, uint32_t nruns)
{
	return malloc_chunk((offsetof(struct gs_obj, key) + klen + 7) / 8 * 8 +
			    (nchunks ? 16 + nchunks * 16 + nruns * 8 : 0));
}

/* The record of <key> costs what the formula says, and what glibc holds. */
static void check_record(struct gs_engine *e, const char *key,
			 uint32_t nchunks, uint32_t nruns)
{
	struct gs_obj *obj;

	CHECK(gs_lookup(e, key, strlen(key), &obj) == 0, "lookup %s", key);
	if (!obj)
		return;
	CHECK(obj->nchunks == nchunks && obj_nruns(obj) == nruns,
	      "%s: %u chunks, %u runs", key, obj->nchunks, obj_nruns(obj));
	CHECK(engine_record_bytes(obj) == record(strlen(key), nchunks, nruns),
	      "%s: %llu bytes", key,
	      (unsigned long long)engine_record_bytes(obj));
#ifndef __SANITIZE_ADDRESS__
	CHECK(malloc_usable_size(obj) + 8 == engine_record_bytes(obj),
	      "%s: malloc holds %zu + 8", key, malloc_usable_size(obj));
#endif
	gs_obj_put(e, &obj);
}

static struct gs_engine *open_engine(struct gs_config *cfg, bool ssd,
				     uint64_t sync_ms)
{
	static char dir[300];
	struct gs_engine *e;
	char err[256];

	gs_config_init(cfg);
	cfg->memory = 64 << 20;
	cfg->sub_memory = 32 << 20;
	cfg->sync_interval = sync_ms;
	cfg->fresh = true;
	cfg->no_mlock = true;
	cfg->hash_power = 10;
	if (ssd) {
		snprintf(dir, sizeof(dir), "%s/ssd", tmpdir);
		cfg->ssd_dir.v[cfg->ssd_dir.n++] = dir;
		cfg->ssd_size = 64 << 20;
	}
	if (gs_engine_open(&e, cfg, err, sizeof(err)) < 0) {
		CHECK(0, "open: %s", err);
		return NULL;
	}
	return e;
}

/* gs_meta keeps unix seconds in 32 bits: 0 never, a time before 1970
 * long past (memcached's negative exptime), one past 2106 saturated. */
static void exptime_round(struct gs_engine *e)
{
	struct gs_meta m;
	struct gs_obj *obj;

	CHECK(gs_touch(e, "a", 1, (int64_t)1 << 40, &m) == 0 &&
	      m.exptime == UINT32_MAX, "far: %u", m.exptime);
	CHECK(gs_lookup(e, "a", 1, &obj) == 0, "far: expired");
	gs_obj_put(e, &obj);
	CHECK(gs_touch(e, "a", 1, 0, &m) == 0 && m.exptime == 0, "never");
	CHECK(gs_touch(e, "a", 1, -1, &m) == 0 && m.exptime == 1,
	      "negative: %u", m.exptime);
	CHECK(gs_lookup(e, "a", 1, &obj) == -ENOENT, "negative: not expired");
}

/* RAM-only objects: no chunks; a 40-byte key costs 40 bytes more. */
static void small_round(char *val)
{
	static const char *keys[] = {
		"a", "gb:123456",
		"0123456789012345678901234567890123456789",
	};
	static const uint64_t sizes[] = { 1, 100, 1000 };
	struct gs_config cfg;
	struct gs_engine *e = open_engine(&cfg, false, 0);
	struct gs_io *io;
	struct gs_stats st;
	uint64_t want = 0;

	if (!e)
		return;
	CHECK(gs_io_create(e, &io) == 0, "io");
	for (int i = 0; i < 3; i++) {
		CHECK(put_if(io, keys[i], val, sizes[i], 0, GS_IF_ANY, 0,
			     NULL) == 0, "put %s", keys[i]);
		check_record(e, keys[i], 0, 0);
		want += record(strlen(keys[i]), 0, 0);
	}
	gs_stats(e, &st);
	CHECK(st.curr_items == 3, "items %llu", (unsigned long long)st.curr_items);
	CHECK(st.index_record_bytes == want, "records %llu, want %llu",
	      (unsigned long long)st.index_record_bytes,
	      (unsigned long long)want);
	/* 1024 buckets, a CLOCK of 1024, no head CLOCK */
	CHECK(st.index_table_bytes == 2 * 1024 * sizeof(void *), "tables %llu",
	      (unsigned long long)st.index_table_bytes);
	CHECK(st.index_bytes == want + 2 * 1024 * sizeof(void *), "index %llu",
	      (unsigned long long)st.index_bytes);
	CHECK(gs_delete(e, keys[1], strlen(keys[1])) == 0, "delete");
	gs_stats(e, &st);
	CHECK(st.index_record_bytes == want - record(strlen(keys[1]), 0, 0),
	      "after delete: %llu", (unsigned long long)st.index_record_bytes);
	exptime_round(e);
	gs_io_destroy(&io);
	gs_engine_close(&e);
}

/* 50 objects, one dead, one deleted: gs_walk in batches of 3 lists the 48
 * others once each, with their meta, and finds one live object past 1,100
 * dead ones; misses are told apart. */
static void walk_round(char *val)
{
	struct gs_config cfg;
	struct gs_engine *e = open_engine(&cfg, false, 0);
	struct gs_walk_item items[3];
	struct gs_obj *obj;
	struct gs_io *io;
	enum gs_miss why;
	char key[16];
	bool seen[50] = { false };
	uint64_t pos = 0, listed = 0;
	unsigned n;

	if (!e)
		return;
	CHECK(gs_io_create(e, &io) == 0, "io");
	for (int i = 0; i < 50; i++) {
		snprintf(key, sizeof(key), "w%d", i);
		CHECK(put_if(io, key, val, i, 0, GS_IF_ANY, 0, NULL) == 0,
		      "put %s", key);
	}
	CHECK(gs_touch(e, "w7", 2, -1, NULL) == 0, "expire w7");
	CHECK(gs_delete(e, "w9", 2) == 0, "delete w9");
	while ((n = gs_walk(e, &pos, items, 3)) > 0) {
		CHECK(n <= 3, "batch of %u", n);
		for (unsigned i = 0; i < n; i++) {
			int k;

			snprintf(key, sizeof(key), "%.*s", items[i].klen,
				 items[i].key);
			k = atoi(key + 1);
			CHECK(k != 7 && k != 9 && !seen[k], "w%d listed", k);
			CHECK(items[i].meta.size == (uint64_t)k, "w%d's size", k);
			seen[k] = true;
			listed++;
		}
	}
	CHECK(listed == 48, "listed %llu", (unsigned long long)listed);
	CHECK(gs_lookup_why(e, "w7", 2, &obj, &why) == -ENOENT &&
	      why == GS_MISS_EXPIRED, "w7: expired");
	CHECK(gs_lookup_why(e, "w9", 2, &obj, &why) == -ENOENT &&
	      why == GS_MISS_ABSENT, "w9: absent");
	/* past a run of dead objects longer than one hold of the lock scans */
	for (int i = 0; i < 1100; i++) {
		snprintf(key, sizeof(key), "d%d", i);
		CHECK(put_if(io, key, val, 1, 0, GS_IF_ANY, 0, NULL) == 0 &&
		      gs_touch(e, key, strlen(key), -1, NULL) == 0, "dead %s", key);
	}
	CHECK(put_if(io, "zz", val, 1, 0, GS_IF_ANY, 0, NULL) == 0, "put zz");
	for (pos = 0, listed = 0; (n = gs_walk(e, &pos, items, 3)) > 0; )
		listed += n;
	CHECK(listed == 49, "listed past the dead: %llu",
	      (unsigned long long)listed);
	/* a delayed flush: w1 turns flushed within 2 s */
	gs_invalidate(e, time(NULL) + 1);
	for (int t = 0; t < 300 && gs_lookup_why(e, "w1", 2, &obj, &why) == 0; t++) {
		gs_obj_put(e, &obj);
		usleep(10000);
	}
	CHECK(gs_lookup_why(e, "w2", 2, &obj, &why) == -ENOENT &&
	      why == GS_MISS_FLUSHED, "w2: flushed");
	gs_io_destroy(&io);
	gs_engine_close(&e);
}

/* On an SSD pool a 1 MiB object is whole on disk, in 256 KiB chunks, one
 * run: 80 bytes of chunks where a 24-byte extent per chunk took 104. */
static void large_round(char *val)
{
	struct gs_config cfg;
	struct gs_engine *e = open_engine(&cfg, true, 0);
	struct gs_io *io;
	struct gs_stats st;
	uint32_t n = (1 << 20) / GS_SSD_CHUNK;

	if (!e)
		return;
	CHECK(gs_io_create(e, &io) == 0, "io");
	/* its I/O buffers are registered as they are first used */
	gs_stats(e, &st);
	CHECK(st.io_buffer_bytes == 0, "idle io: %llu buffer bytes",
	      (unsigned long long)st.io_buffer_bytes);
	CHECK(put_if(io, "big", val, 1 << 20, 0, GS_IF_ANY, 0, NULL) == 0,
	      "put big");
	check_record(e, "big", n, 1);
	gs_stats(e, &st);
	CHECK(sizeof(struct chunk) == 16 && st.index_record_bytes == record(3, n, 1),
	      "big: %llu",
	      (unsigned long long)st.index_record_bytes);
	CHECK(st.io_buffer_bytes >= GS_IO_BUFFER &&
	      st.io_buffer_bytes <= 2ull * cfg.io_buffers * GS_IO_BUFFER,
	      "a writer used %llu buffer bytes",
	      (unsigned long long)st.io_buffer_bytes);
	gs_io_destroy(&io);
	gs_stats(e, &st);
	CHECK(st.io_buffer_bytes == 0, "io gone: %llu buffer bytes",
	      (unsigned long long)st.io_buffer_bytes);
	gs_engine_close(&e);
}

/* Pages of the file <path> in the page cache, of its first <*pages>. */
static uint64_t resident(const char *path, uint64_t *pages)
{
	long pg = sysconf(_SC_PAGESIZE);
	int fd = open(path, O_RDONLY);
	struct stat sb;
	unsigned char *vec;
	uint64_t n = 0;
	void *map;

	*pages = 0;
	if (fd < 0 || fstat(fd, &sb) < 0 || !sb.st_size) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	*pages = (sb.st_size + pg - 1) / pg;
	map = mmap(NULL, sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
	vec = malloc(*pages);
	CHECK(map != MAP_FAILED && vec && mincore(map, sb.st_size, vec) == 0,
	      "mincore %s", path);
	for (uint64_t i = 0; vec && map != MAP_FAILED && i < *pages; i++)
		n += vec[i] & 1;
	if (map != MAP_FAILED)
		munmap(map, sb.st_size);
	free(vec);
	close(fd);
	return n;
}

/* Objects under ram_head ride in the journal: 16 MB of them.  With
 * --sync-interval, once synced no page but the last is cached; without,
 * the appends shed all but the last few steps as they go. */
static void journal_round(char *val, uint64_t sync_ms)
{
	struct gs_config cfg;
	struct gs_engine *e = open_engine(&cfg, true, sync_ms);
	struct gs_io *io;
	char key[32], path[400];
	uint64_t pages, n, seq;

	if (!e)
		return;
	CHECK(gs_io_create(e, &io) == 0, "io");
	for (int i = 0; i < 80; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		CHECK(put_if(io, key, val, 200000, 0, GS_IF_ANY, 0, NULL) == 0,
		      "put %s", key);
	}
	seq = journal_last(e);		/* no other appender: no lock */
	CHECK(journal_wait_synced(e, seq) == 0, "sync");
	snprintf(path, sizeof(path), "%s/ssd/%s", tmpdir, JOURNAL_NAME);
	n = resident(path, &pages);
	CHECK(pages >= 80 * 200000 / 4096, "journal of %llu pages",
	      (unsigned long long)pages);
	if (sync_ms)
		CHECK(n <= 1, "synced: %llu of %llu pages cached",
		      (unsigned long long)n, (unsigned long long)pages);
	else		/* a bound: writeback runs at its own pace */
		CHECK(n < pages / 2, "%llu of %llu pages cached",
		      (unsigned long long)n, (unsigned long long)pages);
	gs_io_destroy(&io);
	gs_engine_close(&e);
}

int main(void)
{
	char *val = malloc(1 << 20), cmd[400];

	log_level = LOG_WARN;
	if (!val || !mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	fill(val, 1 << 20, 1);
	small_round(val);
	walk_round(val);
	large_round(val);
	journal_round(val, 0);
	journal_round(val, 5);
	free(val);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		failures++;
	return check_result();
}
