/*
 * Disk pools.  A pool is one tier: one or more dirs, each with a safety
 * marker file and a preallocated extents file opened O_DIRECT.  Several
 * dirs are striped RAID-0 style by --stripe-unit over one logical address
 * space; space is handed out in device-alignment units from a bitmap,
 * next-fit, never rounded to powers of two.  Allocation calls expect the
 * engine lock.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "dirtrust.h"
#include "engine.h"
#include "log.h"

#define MARKER_NAME	"goblin-pool"
#define EXTENTS_NAME	"extents"

static const char *const tier_names[] = { "ram", "ssd", "hdd" };

/* Creates <path> and its missing parents, 0700. */
static int mkdir_p(const char *path)
{
	char buf[4096];
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *s = buf + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Opens <name> in the pool dir, never through a symlink, and checks that
 * nobody else can change it; <direct>: for O_DIRECT I/O. */
static int open_in_dir(struct pool_dir *d, int dfd, const char *name,
		       bool direct, char *err, size_t errlen)
{
	char path[4200];
	int fd, ret;

	snprintf(path, sizeof(path), "%s/%s", d->path, name);
	fd = dirtrust_open(dfd, name, O_RDWR | O_CREAT, path, 0, err, errlen);
	if (fd < 0 || !direct)
		return fd;
	if (fcntl(fd, F_SETFL, O_DIRECT) < 0) {
		ret = -errno;
		if (errno == EINVAL)
			snprintf(err, errlen, "%s: does not support O_DIRECT (tmpfs?): pools need a disk file system, e.g. under /var/tmp",
				 d->path);
		else
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return ret;
	}
	return fd;
}

/* Returns 1 when the dir holds anything at all. */
static int dir_has_foreign_files(int dfd)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	int found = 0;
	DIR *d;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		found = 1;
		break;
	}
	closedir(d);
	return found;
}

static int check_marker(struct pool_dir *d, const char *want, char *err,
			size_t errlen)
{
	char have[128];
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	ssize_t n = pread(d->marker_fd, have, sizeof(have) - 1, 0);

	if (n < 0)
		return -errno;
	have[n] = '\0';
	if (n > 0 && strcmp(have, want)) {
		have[strcspn(have, "\n")] = '\0';
		snprintf(err, errlen, "%s: belongs to another pool (its marker says \"%s\")",
			 d->path, have);
		return -EEXIST;
	}
	if (fcntl(d->marker_fd, F_SETLK, &fl) < 0) {
		int ret = -errno;

		fl.l_type = F_WRLCK;
		if (fcntl(d->marker_fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK)
			snprintf(err, errlen, "%s: in use by another goblin-store (pid %d)",
				 d->path, (int)fl.l_pid);
		else
			snprintf(err, errlen, "%s: cannot lock marker: %s",
				 d->path, strerror(-ret));
		return -EBUSY;
	}
	if (n == 0 && (pwrite(d->marker_fd, want, strlen(want), 0) < 0 ||
		       fsync(d->marker_fd) < 0)) {
		snprintf(err, errlen, "%s: writing marker: %s", d->path,
			 strerror(errno));
		return -errno;
	}
	return 0;
}

static uint32_t dio_alignment(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
	    (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align)
		return stx.stx_dio_offset_align > 4096 ?
			stx.stx_dio_offset_align : 4096;
	return 4096;
}

/* One aligned O_DIRECT read: some file systems accept the open flag and
 * fail the I/O. */
static int probe_direct(struct pool_dir *d, uint32_t align, char *err,
			size_t errlen)
{
	void *buf = aligned_alloc(align, align);
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	n = pread(d->fd, buf, align, 0);
	free(buf);
	if (n == (ssize_t)align)
		return 0;
	snprintf(err, errlen, "%s: O_DIRECT read failed: %s", d->path,
		 n < 0 ? strerror(errno) : "short read");
	return n < 0 ? -errno : -EIO;
}

/*
 * Opens pool dir <i>.  The path the admin gave may go through symlinks; the
 * dir it ends at must be ours and not group/world writable, and nothing in
 * it is opened through a symlink.
 */
static int open_dir(struct pool *p, unsigned i, char *err, size_t errlen)
{
	struct pool_dir *d = &p->dirs[i];
	char want[128];
	struct statfs sfs;
	int dfd, ret;

	ret = mkdir_p(d->path);
	if (ret < 0) {
		snprintf(err, errlen, "%s: cannot create: %s", d->path,
			 strerror(-ret));
		return ret;
	}
	/* the path the admin gave may end in a symlink */
	dfd = dirtrust_open(AT_FDCWD, d->path, O_RDONLY | O_DIRECTORY, d->path,
			    TRUST_FOLLOW, err, errlen);
	if (dfd < 0)
		return dfd;
	if (fstatfs(dfd, &sfs) == 0 &&
	    (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC)) {
		snprintf(err, errlen, "%s: is on tmpfs, which keeps no data on disk and does not support O_DIRECT as a disk does: put pools on a disk file system, e.g. under /var/tmp",
			 d->path);
		ret = -EINVAL;
		goto out_dir;
	}
	if (faccessat(dfd, MARKER_NAME, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		ret = dir_has_foreign_files(dfd);
		if (ret != 0) {
			snprintf(err, errlen, "%s: %s", d->path, ret > 0 ?
				 "not empty and has no goblin-store marker; refusing to use it" :
				 strerror(-ret));
			ret = ret > 0 ? -EEXIST : ret;
			goto out_dir;
		}
	}
	ret = open_in_dir(d, dfd, MARKER_NAME, false, err, errlen);
	if (ret < 0)
		goto out_dir;
	d->marker_fd = ret;
	snprintf(want, sizeof(want), "goblin-store %s %u/%u\n",
		 tier_names[p->tier], i + 1, p->ndirs);
	ret = check_marker(d, want, err, errlen);
	if (ret < 0)
		goto out_dir;
	ret = open_in_dir(d, dfd, EXTENTS_NAME, true, err, errlen);
	if (ret < 0)
		goto out_dir;
	d->fd = ret;
	d->dfd = dfd;			/* kept: the journal lives beside */
	if (ftruncate(d->fd, p->per_dir) < 0 ||
	    (fallocate(d->fd, 0, 0, p->per_dir) < 0 && errno != EOPNOTSUPP)) {
		ret = -errno;
		snprintf(err, errlen, "%s/" EXTENTS_NAME ": cannot preallocate %llu bytes: %s",
			 d->path, (unsigned long long)p->per_dir, strerror(errno));
		return ret;
	}
	if (dio_alignment(d->fd) > p->align)
		p->align = dio_alignment(d->fd);
	return probe_direct(d, p->align, err, errlen);

out_dir:
	close(dfd);
	return ret;
}

int pool_open(struct pool *p, enum gs_tier tier, const char *const *dirs,
	      unsigned ndirs, uint64_t size, uint64_t stripe,
	      uint64_t min_size, char *err, size_t errlen)
{
	int ret;

	memset(p, 0, sizeof(*p));
	p->tier = tier;
	p->ndirs = ndirs;
	p->align = 4096;
	p->per_dir = size / ndirs;
	if (ndirs > 1) {
		p->per_dir -= p->per_dir % stripe;
		p->stripe = stripe;
	} else {
		p->per_dir -= p->per_dir % 4096;
		p->stripe = p->per_dir;
	}
	p->size = p->per_dir * ndirs;
	if (p->size < min_size) {
		snprintf(err, errlen, "%s pool of %llu bytes is smaller than one object's %llu bytes on it (raise `%s_size` or lower `max_object`)",
			 tier_names[tier], (unsigned long long)p->size,
			 (unsigned long long)min_size, tier_names[tier]);
		return -EINVAL;
	}
	for (unsigned i = 0; i < ndirs; i++) {
		p->dirs[i].path = strdup(dirs[i]);
		p->dirs[i].fd = p->dirs[i].marker_fd = p->dirs[i].dfd = -1;
		if (!p->dirs[i].path) {
			ret = -ENOMEM;
			goto out_close;
		}
	}
	for (unsigned i = 0; i < ndirs; i++) {
		ret = open_dir(p, i, err, errlen);
		if (ret < 0)
			goto out_close;
	}
	if (ndirs > 1 && p->stripe % p->align) {
		snprintf(err, errlen, "`stripe_unit` %llu is not a multiple of the device alignment %u",
			 (unsigned long long)p->stripe, p->align);
		ret = -EINVAL;
		goto out_close;
	}
	p->units = p->size / p->align;
	p->usedmap = calloc((p->units + 63) / 64, sizeof(uint64_t));
	if (!p->usedmap) {
		ret = -ENOMEM;
		goto out_close;
	}
	log_info("%s pool: %u dir(s), %llu bytes, alignment %u%s",
		 tier_names[tier], ndirs, (unsigned long long)p->size, p->align,
		 ndirs > 1 ? ", striped" : "");
	return 0;

out_close:
	pool_close(p);
	return ret;
}

void pool_close(struct pool *p)
{
	for (unsigned i = 0; i < p->ndirs; i++) {
		struct pool_dir *d = &p->dirs[i];

		if (d->fd >= 0)
			close(d->fd);
		if (d->marker_fd >= 0)
			close(d->marker_fd);	/* drops the lock */
		if (d->dfd >= 0)
			close(d->dfd);
		free(d->path);
		d->fd = d->marker_fd = d->dfd = -1;
		d->path = NULL;
	}
	free(p->usedmap);
	p->usedmap = NULL;
	p->ndirs = 0;
}

static void mark(struct pool *p, uint64_t first, uint64_t n, bool used)
{
	for (uint64_t u = first; u < first + n; u++) {
		if (used)
			p->usedmap[u / 64] |= 1ull << (u % 64);
		else
			p->usedmap[u / 64] &= ~(1ull << (u % 64));
	}
}

int pool_alloc(struct pool *p, uint64_t len, uint64_t *addr)
{
	uint64_t n = round_up(len, p->align) / p->align;
	uint64_t u = p->cursor, scanned = 0, run = 0;

	if (n == 0 || n > p->units)
		return -ENOSPC;
	while (scanned < p->units + n) {
		uint64_t w;

		if (u >= p->units) {
			u = 0;
			run = 0;
		}
		w = p->usedmap[u / 64];
		if (u % 64 == 0 && u + 64 <= p->units &&
		    (w == ~0ull || (w == 0 && run + 64 < n))) {
			run = w ? 0 : run + 64;
			u += 64;
			scanned += 64;
			continue;
		}
		if (w >> (u % 64) & 1) {
			run = 0;
		} else if (++run == n) {
			uint64_t first = u + 1 - n;

			mark(p, first, n, true);
			p->cursor = u + 1;
			p->used += n * p->align;
			*addr = first * p->align;
			return 0;
		}
		u++;
		scanned++;
	}
	return -ENOSPC;
}

int pool_claim(struct pool *p, uint64_t addr, uint64_t len)
{
	uint64_t n = round_up(len, p->align) / p->align;
	uint64_t first = addr / p->align;

	if (!len || addr % p->align || first >= p->units || n > p->units - first)
		return -EINVAL;
	for (uint64_t u = first; u < first + n; u++)
		if (p->usedmap[u / 64] >> (u % 64) & 1)
			return -EINVAL;
	mark(p, first, n, true);
	p->used += n * p->align;
	return 0;
}

void pool_free(struct pool *p, uint64_t addr, uint64_t len)
{
	uint64_t n = round_up(len, p->align) / p->align;

	mark(p, addr / p->align, n, false);
	p->used -= n * p->align;
}

int pool_segments(const struct pool *p, uint64_t addr, uint32_t len,
		  struct pool_seg *segs, int max)
{
	uint32_t done = 0;
	int n = 0;

	while (done < len) {
		uint64_t a = addr + done;
		uint64_t su = a / p->stripe;
		uint64_t to_boundary = p->stripe - a % p->stripe;
		uint32_t seg = to_boundary < len - done ? to_boundary : len - done;

		if (n == max)
			return -E2BIG;
		segs[n++] = (struct pool_seg){
			.dir = su % p->ndirs,
			.off = (su / p->ndirs) * p->stripe + a % p->stripe,
			.len = seg,
			.buf_off = done,
		};
		done += seg;
	}
	return n;
}
