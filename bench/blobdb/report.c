/* Percentiles, the per-request CSV, the JSON summary, the markdown table. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "blobdb.h"

#ifndef ROCKSDB_VERSION
#define ROCKSDB_VERSION "unknown"
#endif

#define CLAIM_TTFB_RATIO	5.0
#define CLAIM_MIN_SIZE		MIB

static const double quantiles[] = { 0.50, 0.90, 0.99, 0.999 };
static const char *const qnames[] = { "p50", "p90", "p99", "p99.9" };
#define NQ (sizeof(quantiles) / sizeof(quantiles[0]))

struct pct {
	uint64_t n;
	uint64_t v[NQ];
};

/* Percentiles of one dataset's TTFB and completion, over all requests or
 * over those for objects of at least CLAIM_MIN_SIZE. */
struct summary {
	struct pct ttfb[2], complete[2];
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentiles of <v>[0..n); sorts <v>. */
static void percentiles(uint64_t *v, uint64_t n, struct pct *p)
{
	unsigned q;

	p->n = n;
	if (!n)
		return;
	qsort(v, n, sizeof(*v), cmp_u64);
	for (q = 0; q < NQ; q++) {
		uint64_t rank = (uint64_t)ceil(quantiles[q] * n);

		p->v[q] = v[rank ? rank - 1 : 0];
	}
}

static int summarize(const struct bd_schedule *s, const struct bd_result *r,
		     struct summary *sm)
{
	uint64_t *t = malloc(s->n_reads * sizeof(*t) + 1);
	uint64_t *c = malloc(s->n_reads * sizeof(*c) + 1);
	uint64_t i, n;
	int big;

	if (!t || !c) {
		free(t);
		free(c);
		return -ENOMEM;
	}
	for (big = 0; big < 2; big++) {
		for (i = n = 0; i < r->done; i++) {
			if (big && s->sizes[s->reads[i]] < CLAIM_MIN_SIZE)
				continue;
			t[n] = r->samples[i].ttfb_ns;
			c[n++] = r->samples[i].complete_ns;
		}
		percentiles(t, n, &sm->ttfb[big]);
		percentiles(c, n, &sm->complete[big]);
	}
	free(t);
	free(c);
	return 0;
}

static const char *fmt_ns(char *buf, size_t len, uint64_t ns)
{
	if (ns < 1000000)
		snprintf(buf, len, "%.1f µs", ns / 1e3);
	else
		snprintf(buf, len, "%.2f ms", ns / 1e6);
	return buf;
}

/* The <q>th percentile of <p>, or a dash when there were no requests. */
static const char *fmt_pct(char *buf, size_t len, const struct pct *p,
			   unsigned q)
{
	if (!p->n) {
		snprintf(buf, len, "-");
		return buf;
	}
	return fmt_ns(buf, len, p->v[q]);
}

static double mib_per_s(const struct bd_result *r)
{
	return r->populate_ns ?
	       (double)r->user_bytes / MIB / (r->populate_ns / 1e9) : 0;
}

static double write_amp(const struct bd_result *r)
{
	return r->user_bytes ? (double)r->engine_write_bytes / r->user_bytes
			     : 0;
}

static json_t *kv_json(const struct bd_kvlist *l)
{
	json_t *o = json_object();
	unsigned i;

	for (i = 0; i < l->n; i++)
		json_object_set_new(o, l->kv[i].name,
				    json_integer((json_int_t)l->kv[i].value));
	return o;
}

static json_t *pct_json(const struct pct *p)
{
	json_t *o = json_pack("{sI}", "count", (json_int_t)p->n);
	unsigned q;

	for (q = 0; q < NQ && p->n; q++)
		json_object_set_new(o, qnames[q],
				    json_integer((json_int_t)p->v[q]));
	return o;
}

static int write_csv(const char *path, const struct bd_config *cfg,
		     const struct bd_schedule *s, const struct bd_result *res)
{
	FILE *f = fopen(path, "w");
	char key[BD_KEY_MAX];
	uint64_t i;
	int d;

	if (!f)
		return -errno;
	fprintf(f, "dataset,seq,key,size,ttfb_ns,complete_ns\n");
	for (d = 0; d < BD_DATASETS; d++) {
		if (!cfg->datasets[d] || !res[d].ran)
			continue;
		for (i = 0; i < res[d].done; i++) {
			bd_key(key, s->reads[i]);
			fprintf(f, "%s,%llu,%s,%llu,%llu,%llu\n",
				bd_dataset_names[d], (unsigned long long)i, key,
				(unsigned long long)s->sizes[s->reads[i]],
				(unsigned long long)res[d].samples[i].ttfb_ns,
				(unsigned long long)res[d].samples[i].complete_ns);
		}
	}
	return fclose(f) == EOF ? -errno : 0;
}

struct claim {
	bool evaluated;
	uint64_t goblin_ttfb, buffered_ttfb, direct_ttfb;
	uint64_t goblin_complete[2], direct_complete[2];
	double ratio_buffered, ratio_direct;
	bool ttfb_holds, complete_holds;
};

static void evaluate_claim(const struct bd_result *res,
			   const struct summary *sm, struct claim *c)
{
	int d;

	memset(c, 0, sizeof(*c));
	for (d = 0; d < BD_DATASETS; d++)
		if (!res[d].ran || !res[d].ok || !sm[d].ttfb[1].n)
			return;
	c->evaluated = true;
	c->goblin_ttfb = sm[BD_GOBLIN].ttfb[1].v[0];
	c->buffered_ttfb = sm[BD_BUFFERED].ttfb[1].v[0];
	c->direct_ttfb = sm[BD_DIRECT].ttfb[1].v[0];
	c->ratio_buffered = (double)c->buffered_ttfb / (c->goblin_ttfb ?: 1);
	c->ratio_direct = (double)c->direct_ttfb / (c->goblin_ttfb ?: 1);
	c->ttfb_holds = c->ratio_buffered >= CLAIM_TTFB_RATIO &&
			c->ratio_direct >= CLAIM_TTFB_RATIO;
	for (d = 0; d < 2; d++) {
		c->goblin_complete[d] = sm[BD_GOBLIN].complete[d].v[0];
		c->direct_complete[d] = sm[BD_DIRECT].complete[d].v[0];
	}
	c->complete_holds = c->goblin_complete[0] <= c->direct_complete[0] &&
			    c->goblin_complete[1] <= c->direct_complete[1];
}

static char *command_line(int argc, char **argv)
{
	size_t len = 1;
	char *s;
	int i;

	for (i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	s = calloc(1, len);
	for (i = 0; s && i < argc; i++) {
		strcat(s, argv[i]);
		if (i + 1 < argc)
			strcat(s, " ");
	}
	return s;
}

static json_t *config_json(const struct bd_config *cfg,
			   const struct bd_schedule *s)
{
	uint64_t i, big = 0;

	for (i = 0; i < s->n_objects; i++)
		big += s->sizes[i] >= CLAIM_MIN_SIZE;
	return json_pack("{sIsIsIsIsIsIsIsIsIsIsIsss{sssIsIsfsf}s{sIsIsfsI}}",
		"objects", (json_int_t)cfg->objects,
		"reads", (json_int_t)cfg->reads,
		"memory", (json_int_t)cfg->memory,
		"cgroup_slack", (json_int_t)cfg->cgroup_slack,
		"seed", (json_int_t)cfg->seed,
		"check_seed", (json_int_t)cfg->check_seed,
		"ram_head", (json_int_t)cfg->ram_head,
		"blob_file_size", (json_int_t)cfg->blob_file_size,
		"min_blob_size", (json_int_t)cfg->min_blob_size,
		"write_buffer_size", (json_int_t)cfg->write_buffer,
		"block_cache", (json_int_t)cfg->block_cache,
		"device", cfg->device,
		"dist",
		"name", cfg->dist.name,
		"min_size", (json_int_t)cfg->dist.min_size,
		"max_size", (json_int_t)cfg->dist.max_size,
		"scale", cfg->dist.scale,
		"shape", cfg->dist.shape,
		"schedule",
		"total_bytes", (json_int_t)s->total_bytes,
		"max_size", (json_int_t)s->max_size,
		"mean_size", (double)s->total_bytes / s->n_objects,
		"objects_ge_1mib", (json_int_t)big);
}

static json_t *dataset_json(int d, const struct bd_result *r,
			    const struct summary *sm)
{
	json_t *o = json_pack("{sssbss}", "name", bd_dataset_names[d],
			      "ok", r->ok, "error", r->error);

	json_object_set_new(o, "populate", json_pack("{sIsfsf}",
		"bytes", (json_int_t)r->user_bytes,
		"seconds", r->populate_ns / 1e9,
		"mib_per_s", mib_per_s(r)));
	json_object_set_new(o, "disk", json_pack("{sIsIsIsf}",
		"bytes_on_disk", (json_int_t)r->disk_bytes,
		"bytes_used", (json_int_t)r->disk_used_bytes,
		"engine_write_bytes", (json_int_t)r->engine_write_bytes,
		"write_amplification", write_amp(r)));
	json_object_set_new(o, "requests", json_integer(r->done));
	json_object_set_new(o, "peak_rss", json_integer(r->peak_rss));
	json_object_set_new(o, "memory", kv_json(&r->memory));
	if (r->cgroup.n)
		json_object_set_new(o, "cgroup", kv_json(&r->cgroup));
	json_object_set_new(o, "verify", json_pack("{sIsIsI}",
		"bytes", (json_int_t)r->verified_bytes,
		"mismatches", (json_int_t)r->mismatches,
		"misses", (json_int_t)r->misses));
	json_object_set_new(o, "ttfb_ns", json_pack("{soso}",
		"all", pct_json(&sm->ttfb[0]),
		"ge_1mib", pct_json(&sm->ttfb[1])));
	json_object_set_new(o, "complete_ns", json_pack("{soso}",
		"all", pct_json(&sm->complete[0]),
		"ge_1mib", pct_json(&sm->complete[1])));
	json_object_set_new(o, "counters", kv_json(&r->counters));
	return o;
}

static json_t *claim_json(const struct claim *c)
{
	if (!c->evaluated)
		return json_pack("{sbss}", "evaluated", 0, "why",
				 "needs all three datasets, passed");
	return json_pack("{sbs{sIsIsIsfsfsb}s{sIsIsIsIsb}}", "evaluated", 1,
		"ttfb_p50_ge_1mib",
		"goblin", (json_int_t)c->goblin_ttfb,
		"blobdb_buffered", (json_int_t)c->buffered_ttfb,
		"blobdb_direct", (json_int_t)c->direct_ttfb,
		"ratio_buffered", c->ratio_buffered,
		"ratio_direct", c->ratio_direct,
		"holds", c->ttfb_holds,
		"complete_p50",
		"goblin", (json_int_t)c->goblin_complete[0],
		"blobdb_direct", (json_int_t)c->direct_complete[0],
		"goblin_ge_1mib", (json_int_t)c->goblin_complete[1],
		"blobdb_direct_ge_1mib", (json_int_t)c->direct_complete[1],
		"holds", c->complete_holds);
}

static int write_json(const char *path, const struct bd_config *cfg,
		      const struct bd_schedule *s, const struct bd_cgroup *cg,
		      const struct bd_result *res, const struct summary *sm,
		      const struct claim *c, const char *cmd)
{
	json_t *root, *ds = json_array();
	struct utsname u;
	char date[32];
	time_t now = time(NULL);
	int d, rc;

	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	uname(&u);
	for (d = 0; d < BD_DATASETS; d++)
		if (cfg->datasets[d] && res[d].ran)
			json_array_append_new(ds, dataset_json(d, &res[d],
								&sm[d]));
	root = json_pack("{sssss{sssssIsI}sssos{sbsssssI}soso}",
		"date", date,
		"command", cmd,
		"host", "kernel", u.release, "machine", u.machine,
		"cpus", (json_int_t)sysconf(_SC_NPROCESSORS_ONLN),
		"memory", (json_int_t)sysconf(_SC_PHYS_PAGES) *
			  sysconf(_SC_PAGE_SIZE),
		"rocksdb", ROCKSDB_VERSION,
		"config", config_json(cfg, s),
		"cgroup", "available", cg->available,
		"path", cg->available ? cg->path : "",
		"reason", cg->reason, "limit", (json_int_t)cg->limit,
		"datasets", ds,
		"claim", claim_json(c));
	if (!root)
		return -EINVAL;
	rc = json_dump_file(root, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	return rc ? -EIO : 0;
}

static void write_md(FILE *f, const struct bd_config *cfg,
		     const struct bd_schedule *s, const struct bd_cgroup *cg,
		     const struct bd_result *res, const struct summary *sm,
		     const struct claim *c, const char *cmd)
{
	char a[32], b[32], e[32], g[32], m[32];
	unsigned q;
	int d, big;

	fprintf(f, "`%s`\n\n%llu objects (%s, mean %s, %s..%s, %s), "
		"%llu serial reads, budget %s.\n\n", cmd,
		(unsigned long long)s->n_objects,
		bd_fmt_size(a, sizeof(a), s->total_bytes),
		bd_fmt_size(b, sizeof(b), s->total_bytes / s->n_objects),
		bd_fmt_size(e, sizeof(e), cfg->dist.min_size),
		bd_fmt_size(g, sizeof(g), cfg->dist.max_size), cfg->dist.name,
		(unsigned long long)s->n_reads,
		bd_fmt_size(m, sizeof(m), cfg->memory));
	fprintf(f, "| dataset | populate MiB/s | on disk | write amp. | "
		"peak RSS |");
	for (big = 0; big < 2; big++)
		for (q = 0; q < NQ; q++)
			fprintf(f, " %s %s |", big ? "completion" : "TTFB",
				qnames[q]);
	fprintf(f, "\n|---|---:|---:|---:|---:|");
	for (q = 0; q < 2 * NQ; q++)
		fprintf(f, "---:|");
	fprintf(f, "\n");
	for (d = 0; d < BD_DATASETS; d++) {
		const struct bd_result *r = &res[d];

		if (!cfg->datasets[d] || !r->ran)
			continue;
		fprintf(f, "| %s%s | %.0f | %s | %.2f | %s |",
			bd_dataset_names[d], r->ok ? "" : " (FAILED)",
			mib_per_s(r), bd_fmt_size(a, sizeof(a),
						  r->disk_used_bytes),
			write_amp(r), bd_fmt_size(b, sizeof(b), r->peak_rss));
		for (q = 0; q < NQ; q++)
			fprintf(f, " %s |", fmt_pct(a, sizeof(a),
						     &sm[d].ttfb[0], q));
		for (q = 0; q < NQ; q++)
			fprintf(f, " %s |", fmt_pct(a, sizeof(a),
						     &sm[d].complete[0], q));
		fprintf(f, "\n");
	}
	fprintf(f, "\nObjects of 1 MiB and more:\n\n"
		"| dataset | requests | TTFB p50 | TTFB p99 | completion p50 | "
		"completion p99 |\n|---|---:|---:|---:|---:|---:|\n");
	for (d = 0; d < BD_DATASETS; d++) {
		if (!cfg->datasets[d] || !res[d].ran)
			continue;
		fprintf(f, "| %s | %llu | %s | %s | %s | %s |\n",
			bd_dataset_names[d],
			(unsigned long long)sm[d].ttfb[1].n,
			fmt_pct(a, sizeof(a), &sm[d].ttfb[1], 0),
			fmt_pct(b, sizeof(b), &sm[d].ttfb[1], 2),
			fmt_pct(e, sizeof(e), &sm[d].complete[1], 0),
			fmt_pct(g, sizeof(g), &sm[d].complete[1], 2));
	}
	fprintf(f, "\n");
	if (cfg->datasets[BD_BUFFERED]) {
		if (cg->available)
			fprintf(f, "blobdb-buffered ran in a memory cgroup of "
				"%s (page cache counted).\n",
				bd_fmt_size(a, sizeof(a), cg->limit));
		else
			fprintf(f, "blobdb-buffered ran WITHOUT a memory "
				"cgroup (%s): its page cache was not counted "
				"against the budget.\n", cg->reason);
	}
	if (!c->evaluated) {
		fprintf(f, "Claim not evaluated: it needs all three datasets, "
			"passed, with requests for objects >= 1 MiB.\n");
		return;
	}
	fprintf(f, "Claim 1, median TTFB on objects >= 1 MiB at least %.0fx "
		"lower than both BlobDB variants: Goblin %s, buffered %s "
		"(%.1fx), direct %s (%.1fx): %s.\n", CLAIM_TTFB_RATIO,
		fmt_ns(a, sizeof(a), c->goblin_ttfb),
		fmt_ns(b, sizeof(b), c->buffered_ttfb), c->ratio_buffered,
		fmt_ns(e, sizeof(e), c->direct_ttfb), c->ratio_direct,
		c->ttfb_holds ? "holds" : "DOES NOT HOLD");
	fprintf(f, "Claim 2, median completion no worse than blobdb-direct "
		"(all requests; objects >= 1 MiB): Goblin %s, direct %s; "
		"Goblin %s, direct %s: %s.\n",
		fmt_ns(a, sizeof(a), c->goblin_complete[0]),
		fmt_ns(b, sizeof(b), c->direct_complete[0]),
		fmt_ns(e, sizeof(e), c->goblin_complete[1]),
		fmt_ns(g, sizeof(g), c->direct_complete[1]),
		c->complete_holds ? "holds" : "DOES NOT HOLD");
}

static int out_path(char *buf, size_t len, const char *prefix,
		    const char *ext)
{
	return snprintf(buf, len, "%s.%s", prefix, ext) < (int)len ? 0 : -1;
}

int bd_report(const struct bd_config *cfg, const struct bd_schedule *s,
	      const struct bd_cgroup *cg, struct bd_result *res,
	      int argc, char **argv)
{
	struct summary sm[BD_DATASETS] = { 0 };
	struct claim c;
	char path[4096], *cmd = command_line(argc, argv);
	int d, rc = 0;
	FILE *f;

	for (d = 0; d < BD_DATASETS; d++)
		if (cfg->datasets[d] && res[d].ran &&
		    summarize(s, &res[d], &sm[d]) < 0)
			rc = -1;
	evaluate_claim(res, sm, &c);
	write_md(stdout, cfg, s, cg, res, sm, &c, cmd ? cmd : "");
	if (cfg->out) {
		if (out_path(path, sizeof(path), cfg->out, "csv") ||
		    write_csv(path, cfg, s, res) < 0)
			goto fail;
		if (out_path(path, sizeof(path), cfg->out, "json") ||
		    write_json(path, cfg, s, cg, res, sm, &c,
			       cmd ? cmd : "") < 0)
			goto fail;
		if (out_path(path, sizeof(path), cfg->out, "md") ||
		    !(f = fopen(path, "w")))
			goto fail;
		write_md(f, cfg, s, cg, res, sm, &c, cmd ? cmd : "");
		if (fclose(f) == EOF)
			goto fail;
	}
	free(cmd);
	return rc;
fail:
	fprintf(stderr, "goblin-blobdb: cannot write %s\n", path);
	free(cmd);
	return -1;
}
