/* Clock, number parsing, /proc and directory helpers. */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "blobdb.h"

uint64_t bd_now_ns(void)
{
	return mono_ns();
}

int bd_parse_u64(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "300K", "8M", "1.5G", "4096": binary units, optional "iB"/"B". */
int bd_parse_size(const char *s, uint64_t *out)
{
	double v, mult = 1;
	char *end;

	if (!s || ((*s < '0' || *s > '9') && *s != '.'))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': mult = KIB; end++; break;
	case 'm': case 'M': mult = MIB; end++; break;
	case 'g': case 'G': mult = GIB; end++; break;
	case 't': case 'T': mult = GIB * 1024.0; end++; break;
	}
	if (mult > 1 && *end == 'i')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v * mult >= 18446744073709551615.0)
		return -EINVAL;
	*out = (uint64_t)(v * mult + 0.5);
	return 0;
}

const char *bd_fmt_size(char *buf, size_t len, uint64_t bytes)
{
	if (bytes >= GIB)
		snprintf(buf, len, "%.2f GiB", (double)bytes / GIB);
	else if (bytes >= MIB)
		snprintf(buf, len, "%.1f MiB", (double)bytes / MIB);
	else
		snprintf(buf, len, "%.1f KiB", (double)bytes / KIB);
	return buf;
}

void bd_kv_add(struct bd_kvlist *l, const char *name, uint64_t value)
{
	if (l->n >= BD_KV_MAX)
		return;
	snprintf(l->kv[l->n].name, sizeof(l->kv[l->n].name), "%s", name);
	l->kv[l->n].value = value;
	l->n++;
}

/* The value named <name> in <l>, or 0. */
uint64_t bd_kv_get(const struct bd_kvlist *l, const char *name)
{
	unsigned i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->kv[i].name, name) == 0)
			return l->kv[i].value;
	return 0;
}

/* VmHWM of this process, bytes; 0 when /proc says nothing. */
uint64_t bd_peak_rss(void)
{
	unsigned long long kb = 0;
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * KIB;
}

static uint64_t du_total;

static int du_one(const char *path, const struct stat *st, int type,
		  struct FTW *ftw)
{
	(void)path, (void)type, (void)ftw;
	du_total += (uint64_t)st->st_blocks * 512;
	return 0;
}

/* Bytes allocated to everything under <path>. */
uint64_t bd_du(const char *path)
{
	du_total = 0;
	nftw(path, du_one, 32, FTW_PHYS);
	return du_total;
}

static int rm_one(const char *path, const struct stat *st, int type,
		  struct FTW *ftw)
{
	(void)st, (void)ftw;
	if ((type == FTW_DP ? rmdir(path) : unlink(path)) < 0) {
		fprintf(stderr, "goblin-blobdb: remove %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	return 0;
}

int bd_rm_rf(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0 && errno == ENOENT)
		return 0;
	return nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS) ? -1 : 0;
}

int bd_mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	char *p = buf;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	do {
		p = strchr(p + 1, '/');
		if (p)
			*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		if (p)
			*p = '/';
	} while (p);
	return 0;
}

void bd_fail(struct bd_result *r, const char *fmt, ...)
{
	va_list ap;

	if (r->error[0])
		return;
	va_start(ap, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
	r->ok = false;
}
