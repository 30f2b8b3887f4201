/*
 * The RocksDB datasets: integrated BlobDB (enable_blob_files), buffered or
 * direct reads.  The budget is the LRU cache (shared by blocks and blobs)
 * plus two memtables.  The WAL is off: Goblin keeps none either.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "blobdb.h"

struct rocks {
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_cache_t *cache;
	rocksdb_block_based_table_options_t *table;
	rocksdb_writeoptions_t *wopts;
	rocksdb_readoptions_t *ropts;
};

/* Tickers worth keeping from the statistics dump. */
static const char *const tickers[] = {
	"rocksdb.bytes.written",
	"rocksdb.bytes.read",
	"rocksdb.wal.bytes",
	"rocksdb.flush.write.bytes",
	"rocksdb.compact.write.bytes",
	"rocksdb.compact.read.bytes",
	"rocksdb.blobdb.blob.file.bytes.written",
	"rocksdb.blobdb.blob.file.bytes.read",
	"rocksdb.blobdb.cache.hit",
	"rocksdb.blobdb.cache.miss",
	"rocksdb.block.cache.hit",
	"rocksdb.block.cache.miss",
	"rocksdb.number.keys.written",
	"rocksdb.number.keys.read",
};

static int rocks_open(struct rocks *rk, const struct bd_config *cfg,
		      const char *path, bool direct, struct bd_result *r)
{
	rocksdb_lru_cache_options_t *lru;
	char *err = NULL;

	rk->opts = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(rk->opts, 1);
	rocksdb_options_set_error_if_exists(rk->opts, 1);
	rocksdb_options_enable_statistics(rk->opts);
	rocksdb_options_set_compression(rk->opts, rocksdb_no_compression);
	rocksdb_options_set_max_background_jobs(rk->opts, 2);
	rocksdb_options_set_enable_blob_files(rk->opts, 1);
	rocksdb_options_set_min_blob_size(rk->opts, cfg->min_blob_size);
	rocksdb_options_set_blob_file_size(rk->opts, cfg->blob_file_size);
	rocksdb_options_set_blob_compression_type(rk->opts,
						  rocksdb_no_compression);
	rocksdb_options_set_write_buffer_size(rk->opts, cfg->write_buffer);
	rocksdb_options_set_max_write_buffer_number(rk->opts, 2);
	/* The two variants differ in this one knob; writes are RocksDB's
	 * default (buffered, blob files synced at the end of each flush). */
	rocksdb_options_set_use_direct_reads(rk->opts, direct);

	/* One shard: serial replay has no contention, and 64 small shards
	 * would each be too small to hold an 8 MiB blob. */
	lru = rocksdb_lru_cache_options_create();
	rocksdb_lru_cache_options_set_capacity(lru, cfg->block_cache);
	rocksdb_lru_cache_options_set_num_shard_bits(lru, 0);
	rk->cache = rocksdb_cache_create_lru_opts(lru);
	rocksdb_lru_cache_options_destroy(lru);
	rk->table = rocksdb_block_based_options_create();
	rocksdb_block_based_options_set_block_cache(rk->table, rk->cache);
	rocksdb_block_based_options_set_cache_index_and_filter_blocks(rk->table,
								      1);
	rocksdb_options_set_block_based_table_factory(rk->opts, rk->table);
	rocksdb_options_set_blob_cache(rk->opts, rk->cache);

	rk->wopts = rocksdb_writeoptions_create();
	rocksdb_writeoptions_disable_WAL(rk->wopts, 1);
	rk->ropts = rocksdb_readoptions_create();

	rk->db = rocksdb_open(rk->opts, path, &err);
	if (err) {
		bd_fail(r, "rocksdb_open(%s): %s", path, err);
		rocksdb_free(err);
		return -1;
	}
	return 0;
}

static void rocks_close(struct rocks *rk)
{
	if (rk->db)
		rocksdb_close(rk->db);
	if (rk->ropts)
		rocksdb_readoptions_destroy(rk->ropts);
	if (rk->wopts)
		rocksdb_writeoptions_destroy(rk->wopts);
	if (rk->opts)
		rocksdb_options_destroy(rk->opts);
	if (rk->table)
		rocksdb_block_based_options_destroy(rk->table);
	if (rk->cache)
		rocksdb_cache_destroy(rk->cache);
	memset(rk, 0, sizeof(*rk));
}

static int rocks_populate(struct rocks *rk, const struct bd_config *cfg,
			  const struct bd_schedule *s, struct bd_result *r)
{
	rocksdb_flushoptions_t *fo;
	char key[BD_KEY_MAX], *err = NULL;
	char *val = malloc(s->max_size);
	uint64_t i, t0;

	if (!val) {
		bd_fail(r, "out of memory for a %llu-byte value",
			(unsigned long long)s->max_size);
		return -1;
	}
	t0 = bd_now_ns();
	for (i = 0; i < s->n_objects && !err; i++) {
		int klen = bd_key(key, i);

		bd_value_fill(val, bd_value_seed(cfg->seed, i), 0, s->sizes[i]);
		rocksdb_put(rk->db, rk->wopts, key, klen, val, s->sizes[i],
			    &err);
		r->user_bytes += s->sizes[i];
	}
	free(val);
	if (!err) {
		fo = rocksdb_flushoptions_create();
		rocksdb_flushoptions_set_wait(fo, 1);
		rocksdb_flush(rk->db, fo, &err);
		rocksdb_flushoptions_destroy(fo);
	}
	r->populate_ns = bd_now_ns() - t0;
	if (err) {
		bd_fail(r, "rocksdb_put/flush: %s", err);
		rocksdb_free(err);
		return -1;
	}
	return 0;
}

static int rocks_read(struct rocks *rk, const struct bd_config *cfg,
		      const struct bd_schedule *s, struct bd_result *r)
{
	char key[BD_KEY_MAX];
	uint64_t i;

	for (i = 0; i < s->n_reads; i++) {
		uint32_t idx = s->reads[i];
		int klen = bd_key(key, idx);
		rocksdb_pinnableslice_t *ps;
		const char *v;
		char *err = NULL;
		uint64_t t0, t1;
		size_t vlen;

		t0 = bd_now_ns();
		ps = rocksdb_get_pinned(rk->db, rk->ropts, key, klen, &err);
		t1 = bd_now_ns();
		if (err) {
			bd_fail(r, "rocksdb_get_pinned(%s): %s", key, err);
			rocksdb_free(err);
			return -1;
		}
		r->samples[i].ttfb_ns = t1 - t0;
		r->samples[i].complete_ns = t1 - t0;
		r->done++;
		if (!ps) {
			r->misses++;
			bd_fail(r, "%s: not found", key);
			continue;
		}
		v = rocksdb_pinnableslice_value(ps, &vlen);
		bd_verify(cfg, s, idx, v, vlen, r);
		rocksdb_pinnableslice_destroy(ps);
	}
	return 0;
}

static void rocks_counters(struct rocks *rk, struct bd_result *r)
{
	char *dump = rocksdb_options_statistics_get_string(rk->opts);
	char *line, *save;
	unsigned i;

	for (line = dump ? strtok_r(dump, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		char name[BD_NAME_MAX];
		unsigned long long v;

		if (sscanf(line, "%63s COUNT : %llu", name, &v) != 2)
			continue;
		for (i = 0; i < sizeof(tickers) / sizeof(tickers[0]); i++)
			if (strcmp(name, tickers[i]) == 0)
				bd_kv_add(&r->counters, name + 8, v);
	}
	rocksdb_free(dump);
}

static void rocks_memory(struct rocks *rk, const struct bd_config *cfg,
			 struct bd_result *r)
{
	rocksdb_memory_consumers_t *mc = rocksdb_memory_consumers_create();
	rocksdb_memory_usage_t *mu;
	char *err = NULL;

	bd_kv_add(&r->memory, "block_cache_capacity",
		  rocksdb_cache_get_capacity(rk->cache));
	bd_kv_add(&r->memory, "block_cache_usage",
		  rocksdb_cache_get_usage(rk->cache));
	bd_kv_add(&r->memory, "block_cache_pinned",
		  rocksdb_cache_get_pinned_usage(rk->cache));
	bd_kv_add(&r->memory, "write_buffer_size", cfg->write_buffer);
	bd_kv_add(&r->memory, "max_write_buffer_number", 2);
	rocksdb_memory_consumers_add_db(mc, rk->db);
	mu = rocksdb_approximate_memory_usage_create(mc, &err);
	if (mu) {
		bd_kv_add(&r->memory, "mem_table_total",
		  rocksdb_approximate_memory_usage_get_mem_table_total(mu));
		bd_kv_add(&r->memory, "mem_table_readers_total",
		  rocksdb_approximate_memory_usage_get_mem_table_readers_total(mu));
		rocksdb_approximate_memory_usage_destroy(mu);
	}
	rocksdb_free(err);
	rocksdb_memory_consumers_destroy(mc);
}

int bd_run_rocks(const struct bd_config *cfg, const struct bd_schedule *s,
		 const char *dir, bool direct, struct bd_result *r)
{
	struct rocks rk = { 0 };
	char path[4096];
	int rc = -1;

	snprintf(path, sizeof(path), "%s/db", dir);
	if (rocks_open(&rk, cfg, path, direct, r) < 0)
		goto out;
	if (rocks_populate(&rk, cfg, s, r) < 0)
		goto out;
	r->disk_bytes = bd_du(dir);
	r->disk_used_bytes = r->disk_bytes;
	if (rocks_read(&rk, cfg, s, r) < 0)
		goto out;
	rocks_memory(&rk, cfg, r);
	rocks_counters(&rk, r);
	r->engine_write_bytes = bd_kv_get(&r->counters, "flush.write.bytes") +
				bd_kv_get(&r->counters, "compact.write.bytes") +
				bd_kv_get(&r->counters, "wal.bytes");
	rc = r->error[0] ? -1 : 0;
out:
	rocks_close(&rk);
	return rc;
}
