/*
 * A memory cgroup (v1) of the budget's size for buffered BlobDB, so its page
 * cache counts against the budget.  Created under the caller's own memory
 * cgroup and removed by path.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blobdb.h"

/* The caller's memory cgroup path, from /proc/self/cgroup. */
static int own_cgroup(char *path, size_t len)
{
	char line[1024];
	FILE *f = fopen("/proc/self/cgroup", "r");
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *p, *tok, *save;

		if (!ctl || !(p = strchr(++ctl, ':')))
			continue;
		*p++ = '\0';
		p[strcspn(p, "\n")] = '\0';
		for (tok = strtok_r(ctl, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save))
			if (strcmp(tok, "memory") == 0) {
				snprintf(path, len, "%s", p);
				rc = 0;
			}
	}
	fclose(f);
	return rc;
}

/* Mount point and root of the v1 memory hierarchy, from mountinfo. */
static int memory_mount(char *mnt, size_t mlen, char *root, size_t rlen)
{
	char line[2048];
	FILE *f = fopen("/proc/self/mountinfo", "r");
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (rc && fgets(line, sizeof(line), f)) {
		char r[512], m[512], fstype[64], opts[512];
		char *sep = strstr(line, " - "), *tok, *save;

		if (!sep || sscanf(line, "%*s %*s %*s %511s %511s", r, m) != 2 ||
		    sscanf(sep + 3, "%63s %*s %511s", fstype, opts) != 2 ||
		    strcmp(fstype, "cgroup") != 0)
			continue;
		for (tok = strtok_r(opts, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save))
			if (strcmp(tok, "memory") == 0) {
				snprintf(mnt, mlen, "%s", m);
				snprintf(root, rlen, "%s", r);
				rc = 0;
			}
	}
	fclose(f);
	return rc;
}

static int write_file(const char *dir, const char *name, const char *val)
{
	char path[600];
	FILE *f;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	if (fputs(val, f) == EOF)
		rc = -errno;
	if (fclose(f) == EOF && !rc)
		rc = -errno;
	return rc;
}

static int read_u64(const char *dir, const char *name, uint64_t *v)
{
	char path[600];
	unsigned long long x;
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	rc = fscanf(f, "%llu", &x) == 1 ? 0 : -EINVAL;
	fclose(f);
	if (!rc)
		*v = x;
	return rc;
}

/* Sets <cg>->available, or leaves a reason in <cg>->reason. */
void bd_cgroup_create(struct bd_cgroup *cg, uint64_t limit, const char *tag)
{
	char own[512], mnt[512], root[512], val[32];
	const char *rel;
	int rc;

	memset(cg, 0, sizeof(*cg));
	cg->limit = limit;
	if ((rc = own_cgroup(own, sizeof(own))) < 0) {
		snprintf(cg->reason, sizeof(cg->reason),
			 "no v1 memory controller in /proc/self/cgroup");
		return;
	}
	if ((rc = memory_mount(mnt, sizeof(mnt), root, sizeof(root))) < 0) {
		snprintf(cg->reason, sizeof(cg->reason),
			 "cgroup v1 memory hierarchy is not mounted");
		return;
	}
	rel = own;
	if (strcmp(root, "/") != 0 && strncmp(own, root, strlen(root)) == 0)
		rel = own + strlen(root);
	if (snprintf(cg->path, sizeof(cg->path), "%s%s%sgoblin-blobdb.%d.%s",
		     mnt, rel, rel[strlen(rel) - 1] == '/' ? "" : "/",
		     (int)getpid(), tag) >= (int)sizeof(cg->path)) {
		snprintf(cg->reason, sizeof(cg->reason), "path too long");
		return;
	}
	if (mkdir(cg->path, 0755) < 0) {
		rc = snprintf(cg->reason, sizeof(cg->reason), "mkdir %s: %s",
			      cg->path, strerror(errno));
		return;
	}
	cg->created = true;
	snprintf(val, sizeof(val), "%llu", (unsigned long long)limit);
	if ((rc = write_file(cg->path, "memory.limit_in_bytes", val)) < 0) {
		rc = snprintf(cg->reason, sizeof(cg->reason),
			      "%s/memory.limit_in_bytes: %s", cg->path,
			      strerror(-rc));
		bd_cgroup_remove(cg);
		return;
	}
	cg->available = true;
}

/* Moves the calling process into <cg>.  0 or -errno. */
int bd_cgroup_enter(const struct bd_cgroup *cg)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	return write_file(cg->path, "cgroup.procs", pid);
}

static void stat_field(const char *dir, const char *field, uint64_t *v)
{
	char path[600], name[64];
	unsigned long long x;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, "memory.stat");
	f = fopen(path, "r");
	if (!f)
		return;
	while (fscanf(f, "%63s %llu", name, &x) == 2)
		if (strcmp(name, field) == 0) {
			*v = x;
			break;
		}
	fclose(f);
}

/* Appends the cgroup's figures to <l>. */
void bd_cgroup_collect(const struct bd_cgroup *cg, struct bd_kvlist *l)
{
	uint64_t v = 0;
	char path[600];
	FILE *f;

	if (read_u64(cg->path, "memory.limit_in_bytes", &v) == 0)
		bd_kv_add(l, "limit_in_bytes", v);
	if (read_u64(cg->path, "memory.max_usage_in_bytes", &v) == 0)
		bd_kv_add(l, "max_usage_in_bytes", v);
	if (read_u64(cg->path, "memory.failcnt", &v) == 0)
		bd_kv_add(l, "failcnt", v);
	v = 0;
	stat_field(cg->path, "cache", &v);
	bd_kv_add(l, "page_cache_bytes", v);
	v = 0;
	stat_field(cg->path, "rss", &v);
	bd_kv_add(l, "rss_bytes", v);
	snprintf(path, sizeof(path), "%s/memory.oom_control", cg->path);
	if ((f = fopen(path, "r"))) {
		char name[64];
		unsigned long long x;

		while (fscanf(f, "%63s %llu", name, &x) == 2)
			if (strcmp(name, "oom_kill") == 0)
				bd_kv_add(l, "oom_kill", x);
		fclose(f);
	}
}

void bd_cgroup_remove(struct bd_cgroup *cg)
{
	if (!cg->created)
		return;
	if (rmdir(cg->path) < 0)
		fprintf(stderr, "goblin-blobdb: rmdir %s: %s\n", cg->path,
			strerror(errno));
	cg->created = false;
}
