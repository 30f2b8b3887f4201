/*
 * goblin-blobdb: Goblin's embedded engine against RocksDB's integrated
 * BlobDB, in-process, under one application-memory budget.
 *
 *   schedule (seeded: object sizes, read order)
 *        |
 *        +--> fork: goblin            (libgoblin, O_DIRECT pool)
 *        +--> fork: blobdb-buffered   (inside a memory cgroup of --memory)
 *        +--> fork: blobdb-direct     (use_direct_reads)
 *        |
 *   each child: populate every key, flush, replay the reads serially,
 *   timing each request (TTFB, completion) into shared memory
 *        |
 *   parent: per-request CSV, JSON summary, markdown table
 *
 * Values are a pure function of (key, offset), so every byte read back is
 * checked without keeping a copy.
 */
#ifndef BLOBDB_H
#define BLOBDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KIB		(1ull << 10)
#define MIB		(1ull << 20)
#define GIB		(1ull << 30)
#define BD_KEY_MAX	32
#define BD_KV_MAX	64
#define BD_NAME_MAX	64

enum bd_dataset { BD_GOBLIN, BD_BUFFERED, BD_DIRECT, BD_DATASETS };

extern const char *const bd_dataset_names[BD_DATASETS];

/* Bounded generalized Pareto: location = min_size, truncated at max_size. */
struct bd_dist {
	const char *name;		/* "gpd" or "uniform" */
	uint64_t min_size;
	uint64_t max_size;
	double scale;			/* gpd sigma, bytes */
	double shape;			/* gpd xi */
};

struct bd_config {
	uint64_t objects;
	uint64_t reads;
	uint64_t memory;		/* the one budget both engines get */
	uint64_t seed;
	uint64_t check_seed;		/* values are checked against this */
	bool check_seed_set;
	uint64_t cgroup_slack;		/* cgroup limit above memory */
	uint64_t ram_head;		/* 0: the engine's default */
	uint64_t blob_file_size;
	uint64_t min_blob_size;
	uint64_t write_buffer;		/* RocksDB memtable, each of two */
	uint64_t block_cache;		/* RocksDB block + blob cache */
	struct bd_dist dist;
	const char *device;		/* base directory for the datasets */
	const char *out;		/* output prefix, or NULL */
	bool datasets[BD_DATASETS];
	bool cgroup;			/* use a memory cgroup for buffered */
	bool keep;			/* keep the dataset directories */
};

struct bd_schedule {
	uint64_t n_objects;
	uint64_t *sizes;		/* per object */
	uint64_t n_reads;
	uint32_t *reads;		/* object index per request */
	uint64_t total_bytes;
	uint64_t max_size;
};

struct bd_kv {
	char name[BD_NAME_MAX];
	uint64_t value;
};

struct bd_kvlist {
	unsigned n;
	struct bd_kv kv[BD_KV_MAX];
};

struct bd_sample {
	uint64_t ttfb_ns;
	uint64_t complete_ns;
};

/* What one dataset's child reports; lives in shared memory. */
struct bd_result {
	bool ran;
	bool ok;
	char error[256];
	uint64_t populate_ns;
	uint64_t user_bytes;		/* value bytes put */
	uint64_t disk_bytes;		/* allocated under its directory */
	uint64_t disk_used_bytes;	/* bytes its own counters say are live */
	uint64_t engine_write_bytes;	/* bytes written, its own counters */
	uint64_t peak_rss;		/* VmHWM of the child */
	uint64_t done;			/* requests with valid samples */
	uint64_t verified_bytes;
	uint64_t mismatches;
	uint64_t misses;
	struct bd_kvlist memory;	/* how the budget was spent */
	struct bd_kvlist counters;	/* engine counters after the reads */
	struct bd_kvlist cgroup;	/* memory cgroup figures, if any */
	struct bd_sample *samples;	/* n_reads of them */
};

struct bd_cgroup {
	bool available;
	bool created;			/* the directory exists now */
	char reason[1024];		/* why not, when not */
	char path[512];
	uint64_t limit;
};

/* schedule.c */
void bd_dist_gpd(struct bd_dist *d, uint64_t min_size, uint64_t max_size);
int bd_schedule_make(struct bd_schedule *s, const struct bd_config *cfg);
void bd_schedule_free(struct bd_schedule *s);
int bd_key(char *buf, uint64_t idx);
uint64_t bd_value_seed(uint64_t seed, uint64_t idx);
void bd_value_fill(void *dst, uint64_t vseed, uint64_t off, size_t len);
int bd_verify(const struct bd_config *cfg, const struct bd_schedule *s,
	      uint32_t idx, const void *data, uint64_t size,
	      struct bd_result *r);

/* util.c */
uint64_t bd_now_ns(void);
int bd_parse_size(const char *s, uint64_t *out);
int bd_parse_u64(const char *s, uint64_t *out);
const char *bd_fmt_size(char *buf, size_t len, uint64_t bytes);
void bd_kv_add(struct bd_kvlist *l, const char *name, uint64_t value);
uint64_t bd_kv_get(const struct bd_kvlist *l, const char *name);
uint64_t bd_peak_rss(void);
uint64_t bd_du(const char *path);
int bd_rm_rf(const char *path);
int bd_mkdir_p(const char *path);
void bd_fail(struct bd_result *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* cgroup.c */
void bd_cgroup_create(struct bd_cgroup *cg, uint64_t limit, const char *tag);
int bd_cgroup_enter(const struct bd_cgroup *cg);
void bd_cgroup_collect(const struct bd_cgroup *cg, struct bd_kvlist *l);
void bd_cgroup_remove(struct bd_cgroup *cg);

/* goblin_store.c, rocks.c: run one dataset in <dir>; fill <r>.  0 or -1. */
int bd_run_goblin(const struct bd_config *cfg, const struct bd_schedule *s,
		  const char *dir, struct bd_result *r);
int bd_run_rocks(const struct bd_config *cfg, const struct bd_schedule *s,
		 const char *dir, bool direct, struct bd_result *r);

/* report.c */
int bd_report(const struct bd_config *cfg, const struct bd_schedule *s,
	      const struct bd_cgroup *cg, struct bd_result *res,
	      int argc, char **argv);

#endif /* BLOBDB_H */
