/*
 * goblin-blobdb: options, the schedule, one child process per dataset.
 * Each dataset runs in its own child so its peak RSS is its own and the
 * buffered one can live in a memory cgroup; results come back through
 * shared memory.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "blobdb.h"

const char *const bd_dataset_names[BD_DATASETS] = {
	[BD_GOBLIN] = "goblin",
	[BD_BUFFERED] = "blobdb-buffered",
	[BD_DIRECT] = "blobdb-direct",
};

/* ACTION(name, has_arg, metavar, default, description) */
#define BD_OPTIONS(ACTION)						\
	ACTION(objects, 1, "N", "1024", "objects to populate")		\
	ACTION(reads, 1, "N", "4096", "requests to replay (uniform over keys)") \
	ACTION(memory, 1, "SIZE", "384M",				\
	       "budget: Goblin's RAM heads; RocksDB's cache + memtables; " \
	       "the buffered run's memory cgroup")			\
	ACTION(dist, 1, "NAME", "gpd",					\
	       "object sizes: gpd (bounded generalized Pareto) or uniform") \
	ACTION(min-size, 1, "SIZE", "256K", "smallest object")		\
	ACTION(max-size, 1, "SIZE", "8M", "largest object")		\
	ACTION(seed, 1, "N", "1", "schedule seed")			\
	ACTION(datasets, 1, "LIST", "goblin,blobdb-buffered,blobdb-direct", \
	       "datasets to run, comma-separated")			\
	ACTION(device, 1, "DIR", "/var/tmp",				\
	       "directory on the device under test (O_DIRECT-capable)") \
	ACTION(out, 1, "PREFIX", "",					\
	       "write PREFIX.csv, PREFIX.json, PREFIX.md")		\
	ACTION(ram-head, 1, "SIZE", "engine default",			\
	       "Goblin: bytes of each object kept in RAM")		\
	ACTION(blob-file-size, 1, "SIZE", "256M", "RocksDB blob_file_size") \
	ACTION(min-blob-size, 1, "SIZE", "4K", "RocksDB min_blob_size")	\
	ACTION(cgroup-slack, 1, "SIZE", "64M",				\
	       "the buffered run's memory cgroup limit above --memory, "	\
	       "for the process itself")				\
	ACTION(no-cgroup, 0, "", "", "run buffered BlobDB without a memory cgroup") \
	ACTION(check-seed, 1, "N", "--seed",				\
	       "check values against seed N: a different N must fail "	\
	       "every read (proves the check)")				\
	ACTION(keep, 0, "", "", "keep the dataset directories")		\
	ACTION(help, 0, "", "", "this text")

static void usage(FILE *f)
{
	fprintf(f, "usage: goblin-blobdb [OPTION...]\n"
		"Populates one seeded schedule of objects into Goblin's engine "
		"and RocksDB BlobDB\n(buffered and direct reads), replays its "
		"reads serially and records TTFB and\ncompletion of every "
		"request, checking every byte.\n\n");
#define OPT_HELP(name, arg, mv, def, desc)				\
	fprintf(f, "  --%-16s %-7s %s%s%s%s\n", #name, mv, desc,	\
		def[0] ? " (default " : "", def, def[0] ? ")" : "");
	BD_OPTIONS(OPT_HELP)
#undef OPT_HELP
}

static int bad_value(const char *opt, const char *val, const char *want)
{
	fprintf(stderr, "goblin-blobdb: --%s %s: %s\n", opt, val, want);
	return -1;
}

static int parse_datasets(struct bd_config *cfg, const char *list)
{
	char buf[256], *tok, *save;
	int i, n = 0;

	snprintf(buf, sizeof(buf), "%s", list);
	memset(cfg->datasets, 0, sizeof(cfg->datasets));
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < BD_DATASETS; i++)
			if (strcmp(tok, bd_dataset_names[i]) == 0)
				break;
		if (i == BD_DATASETS)
			return bad_value("datasets", tok, "want goblin, "
					 "blobdb-buffered or blobdb-direct");
		cfg->datasets[i] = true;
		n++;
	}
	return n ? 0 : bad_value("datasets", list, "empty list");
}

/* The options that set one uint64_t field: a size (> 0) or a count. */
static const struct num_opt {
	const char *name;
	size_t off;
	bool size;
} num_opts[] = {
	{ "objects", offsetof(struct bd_config, objects), false },
	{ "reads", offsetof(struct bd_config, reads), false },
	{ "seed", offsetof(struct bd_config, seed), false },
	{ "memory", offsetof(struct bd_config, memory), true },
	{ "min-size", offsetof(struct bd_config, dist.min_size), true },
	{ "max-size", offsetof(struct bd_config, dist.max_size), true },
	{ "ram-head", offsetof(struct bd_config, ram_head), true },
	{ "blob-file-size", offsetof(struct bd_config, blob_file_size), true },
	{ "min-blob-size", offsetof(struct bd_config, min_blob_size), true },
};

static int set_num_option(struct bd_config *cfg, const struct num_opt *o,
			  const char *v)
{
	uint64_t x;

	if (o->size && (bd_parse_size(v, &x) < 0 || x == 0))
		return bad_value(o->name, v, "want a size like 300K, 8M, 1.5G");
	if (!o->size && bd_parse_u64(v, &x) < 0)
		return bad_value(o->name, v, "want a whole number");
	*(uint64_t *)((char *)cfg + o->off) = x;
	return 0;
}

static int set_option(struct bd_config *cfg, const char *name, const char *v)
{
	uint64_t x;

	for (size_t i = 0; i < sizeof(num_opts) / sizeof(num_opts[0]); i++)
		if (strcmp(name, num_opts[i].name) == 0)
			return set_num_option(cfg, &num_opts[i], v);
	if (strcmp(name, "check-seed") == 0) {
		if (bd_parse_u64(v, &x) < 0)
			return bad_value(name, v, "want a whole number");
		cfg->check_seed = x;
		cfg->check_seed_set = true;
		return 0;
	}
	if (strcmp(name, "cgroup-slack") == 0) {
		if (bd_parse_size(v, &x) < 0)
			return bad_value(name, v, "want a size like 64M");
		cfg->cgroup_slack = x;
		return 0;
	}
	if (strcmp(name, "dist") == 0) {
		if (strcmp(v, "gpd") && strcmp(v, "uniform"))
			return bad_value("dist", v, "want gpd or uniform");
		cfg->dist.name = strcmp(v, "gpd") == 0 ? "gpd" : "uniform";
	} else if (strcmp(name, "datasets") == 0) {
		return parse_datasets(cfg, v);
	} else if (strcmp(name, "device") == 0) {
		cfg->device = v;
	} else if (strcmp(name, "out") == 0) {
		cfg->out = v;
	} else if (strcmp(name, "no-cgroup") == 0) {
		cfg->cgroup = false;
	} else if (strcmp(name, "keep") == 0) {
		cfg->keep = true;
	}
	return 0;
}

static int parse_args(struct bd_config *cfg, int argc, char **argv)
{
	static const struct option longopts[] = {
#define OPT_LONG(name, arg, mv, def, desc) { #name, arg, NULL, 0 },
		BD_OPTIONS(OPT_LONG)
#undef OPT_LONG
		{ NULL, 0, NULL, 0 }
	};
	int c, li;

	memset(cfg, 0, sizeof(*cfg));
	bd_dist_gpd(&cfg->dist, 256 * KIB, 8 * MIB);
	cfg->objects = 1024;
	cfg->reads = 4096;
	cfg->memory = 384 * MIB;
	cfg->seed = 1;
	cfg->blob_file_size = 256 * MIB;
	cfg->min_blob_size = 4 * KIB;
	cfg->device = "/var/tmp";
	cfg->cgroup = true;
	cfg->cgroup_slack = 64 * MIB;
	parse_datasets(cfg, "goblin,blobdb-buffered,blobdb-direct");

	while ((c = getopt_long(argc, argv, "h", longopts, &li)) != -1) {
		if (c == 'h' || (c == 0 && strcmp(longopts[li].name, "help") == 0)) {
			usage(stdout);
			exit(0);
		}
		if (c != 0) {
			usage(stderr);
			return -1;
		}
		if (set_option(cfg, longopts[li].name, optarg) < 0)
			return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "goblin-blobdb: unexpected argument %s\n",
			argv[optind]);
		return -1;
	}
	if (cfg->dist.min_size > cfg->dist.max_size) {
		fprintf(stderr, "goblin-blobdb: --min-size is larger than "
			"--max-size\n");
		return -1;
	}
	if (cfg->objects == 0 || cfg->objects > UINT32_MAX) {
		fprintf(stderr, "goblin-blobdb: --objects must be 1 to %u\n",
			UINT32_MAX);
		return -1;
	}
	if (!cfg->check_seed_set)
		cfg->check_seed = cfg->seed;
	/* RocksDB's share: two memtables of 1/16 each, the rest is cache. */
	cfg->write_buffer = cfg->memory / 16;
	cfg->block_cache = cfg->memory - 2 * cfg->write_buffer;
	return 0;
}

static volatile sig_atomic_t child_pid, stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
	if (child_pid > 0)
		kill(child_pid, SIGTERM);
}

/* Runs dataset <d> in a child; fills <r> (shared).  0 when it passed. */
static int run_dataset(const struct bd_config *cfg,
		       const struct bd_schedule *s, enum bd_dataset d,
		       const char *base, struct bd_cgroup *cg,
		       struct bd_result *r)
{
	const char *name = bd_dataset_names[d];
	char dir[PATH_MAX];
	pid_t pid;
	int status, rc;

	if (snprintf(dir, sizeof(dir), "%s/%s", base, name) >= (int)sizeof(dir))
		rc = -ENAMETOOLONG;
	else
		rc = bd_mkdir_p(dir);
	if (rc < 0) {
		bd_fail(r, "mkdir %s: %s", dir, strerror(-rc));
		return -1;
	}
	r->ran = true;
	fprintf(stderr, "goblin-blobdb: %s: populate %llu objects, "
		"%llu reads in %s\n", name,
		(unsigned long long)s->n_objects,
		(unsigned long long)s->n_reads, dir);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		bd_fail(r, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (cg && (rc = bd_cgroup_enter(cg)) < 0) {
			bd_fail(r, "join %s: %s", cg->path, strerror(-rc));
			_exit(1);
		}
		r->ok = true;
		if (d == BD_GOBLIN)
			rc = bd_run_goblin(cfg, s, dir, r);
		else
			rc = bd_run_rocks(cfg, s, dir, d == BD_DIRECT, r);
		r->peak_rss = bd_peak_rss();
		if (cg)
			bd_cgroup_collect(cg, &r->cgroup);
		fflush(NULL);
		_exit(rc == 0 && r->ok ? 0 : 1);
	}
	child_pid = pid;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	child_pid = 0;
	if (cg && r->cgroup.n == 0)
		bd_cgroup_collect(cg, &r->cgroup);
	if (WIFSIGNALED(status) && bd_kv_get(&r->cgroup, "oom_kill"))
		bd_fail(r, "killed by the OOM killer in its memory cgroup "
			"(limit %llu bytes): raise --cgroup-slack or --memory",
			(unsigned long long)cg->limit);
	else if (WIFSIGNALED(status))
		bd_fail(r, "killed by signal %d", WTERMSIG(status));
	else if (WEXITSTATUS(status) != 0 || !r->ok)
		bd_fail(r, "failed");
	if (!cfg->keep && bd_rm_rf(dir) < 0)
		bd_fail(r, "could not remove %s", dir);
	if (r->error[0])
		fprintf(stderr, "goblin-blobdb: %s: %s\n", name, r->error);
	return r->error[0] ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct bd_config cfg;
	struct bd_schedule s;
	struct bd_cgroup cg = { 0 };
	struct bd_result *res;
	struct sigaction sa = { .sa_handler = on_signal };
	char base[PATH_MAX];
	size_t samples_len;
	int d, failed = 0, rc;

	if (parse_args(&cfg, argc, argv) < 0)
		return 2;
	if ((rc = bd_schedule_make(&s, &cfg)) < 0) {
		fprintf(stderr, "goblin-blobdb: schedule: %s\n", strerror(-rc));
		return 1;
	}
	samples_len = s.n_reads * sizeof(struct bd_sample);
	res = mmap(NULL, BD_DATASETS * (sizeof(*res) + samples_len),
		   PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED) {
		perror("goblin-blobdb: mmap");
		return 1;
	}
	for (d = 0; d < BD_DATASETS; d++)
		res[d].samples = (struct bd_sample *)(res + BD_DATASETS) +
				 d * s.n_reads;

	snprintf(base, sizeof(base), "%s/goblin-blobdb.XXXXXX", cfg.device);
	if (!mkdtemp(base)) {
		fprintf(stderr, "goblin-blobdb: mkdtemp %s: %s\n", base,
			strerror(errno));
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	if (!cfg.cgroup)
		snprintf(cg.reason, sizeof(cg.reason), "--no-cgroup");
	for (d = 0; d < BD_DATASETS && !stop_signal; d++) {
		bool in_cg = false;

		if (!cfg.datasets[d])
			continue;
		if (d == BD_BUFFERED && cfg.cgroup) {
			bd_cgroup_create(&cg, cfg.memory + cfg.cgroup_slack,
					 "buffered");
			in_cg = cg.available;
			if (!in_cg)
				fprintf(stderr, "goblin-blobdb: memory cgroup "
					"unavailable (%s): blobdb-buffered runs "
					"without one, its page cache is not "
					"counted against the budget\n",
					cg.reason);
		}
		if (run_dataset(&cfg, &s, d, base, in_cg ? &cg : NULL,
				&res[d]) < 0)
			failed++;
		bd_cgroup_remove(&cg);
	}
	if (!cfg.keep)
		rmdir(base);
	else
		fprintf(stderr, "goblin-blobdb: kept %s\n", base);
	if (stop_signal) {
		fprintf(stderr, "goblin-blobdb: stopped by signal %d\n",
			(int)stop_signal);
		return 1;
	}
	if (bd_report(&cfg, &s, &cg, res, argc, argv) < 0)
		failed++;
	bd_schedule_free(&s);
	return failed ? 1 : 0;
}
