/*
 * Disk pools.  A pool is one tier: one or more dirs, each with a safety
 * marker file (which names the pool's format) and an extents file opened
 * O_DIRECT.  Several dirs are striped RAID-0 style by --stripe-unit over
 * one logical address space; space is handed out in device-alignment units
 * from a bitmap, next-fit, never rounded to powers of two.  The files grow
 * in steps (fallocate) as space past what they hold is handed out, up to
 * the pool's size.  Allocation calls expect the engine lock.
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

#include "engine.h"
#include "log.h"
#include "pool.h"

#define MARKER_NAME	"goblin-pool"
#define EXTENTS_NAME	"extents"
#define POOL_FORMAT	2
#define GROW_STEP_MAX	(64ull << 20)

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

/*
 * The marker: "goblin-store <tier> <i>/<n> format <f>[ stripe <unit>]
 * [ id <store identity, 16 hex>]\n", the stripe unit with more than one
 * dir (with one, addresses are file offsets).  Format 1, before pools grew
 * and recovered, had no format; a marker written before the store had an
 * identity has no id (it gets one at the next start).
 */
static void marker_text(const struct pool *p, unsigned i, uint64_t id,
			char *buf, size_t len)
{
	int n = snprintf(buf, len, "goblin-store %s %u/%u format %d",
			 tier_names[p->tier], i + 1, p->ndirs, POOL_FORMAT);

	if (p->ndirs > 1)
		n += snprintf(buf + n, len - n, " stripe %llu",
			      (unsigned long long)p->stripe);
	if (id)
		n += snprintf(buf + n, len - n, " id %016llx",
			      (unsigned long long)id);
	snprintf(buf + n, len - n, "\n");
}

/* Takes the " id <16 hex>" out of marker text <have>: the identity it
 * names, 0 when none (or a malformed one, which the marker loses). */
static uint64_t marker_take_id(char *have)
{
	char *s = strstr(have, " id ");
	unsigned long long id = 0;
	char *end;
	size_t n;

	if (!s)
		return 0;
	id = strtoull(s + 4, &end, 16);
	n = end - s;
	if (end - (s + 4) != 16)
		id = 0;
	memmove(s, s + n, strlen(s + n) + 1);
	return id;
}

/* 0 when <have> (a marker's text, not empty) names dir <i> of this tier's
 * pool of <p->ndirs> dirs, whatever its format. */
static int marker_ours(const struct pool *p, unsigned i, const char *have)
{
	char tier[8];
	unsigned di, dn;

	if (sscanf(have, "goblin-store %7s %u/%u", tier, &di, &dn) != 3 ||
	    strcmp(tier, tier_names[p->tier]) || di != i + 1 || dn != p->ndirs)
		return -EEXIST;
	return 0;
}

/* Why a marker of ours, <have>, is not <want>: into <why>. */
static void marker_mismatch(const struct pool *p, const char *have,
			    char *why, size_t len)
{
	const char *f = strstr(have, " format ");
	unsigned format = f ? (unsigned)strtoul(f + 8, NULL, 10) : 1;
	const char *s = strstr(have, " stripe ");
	unsigned long long stripe = s ? strtoull(s + 8, NULL, 10) : 0;

	if (format != POOL_FORMAT)
		snprintf(why, len, "pool format %u, this goblin-store reads format %d",
			 format, POOL_FORMAT);
	else if (p->ndirs > 1 && s && stripe != p->stripe)
		snprintf(why, len, "pool striped by %llu bytes, `stripe_unit` is %llu",
			 stripe, (unsigned long long)p->stripe);
	else
		snprintf(why, len, "unreadable marker \"%.*s\"",
			 (int)strcspn(have, "\n"), have);
}

/* Reads dir <i>'s marker into <have> (empty: a new pool), refuses one of
 * another pool, and takes the lock. */
static int check_marker(struct pool *p, unsigned i, char *have, size_t len,
			char *err, size_t errlen)
{
	struct pool_dir *d = &p->dirs[i];
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	ssize_t n = pread(d->marker_fd, have, len - 1, 0);

	if (n < 0)
		return -errno;
	have[n] = '\0';
	if (n > 0 && marker_ours(p, i, have)) {
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
	return 0;
}

/* Replaces dir <d>'s marker by <text>, synced. */
static int write_marker(struct pool_dir *d, const char *text, char *err,
			size_t errlen)
{
	if (ftruncate(d->marker_fd, 0) < 0 ||
	    pwrite(d->marker_fd, text, strlen(text), 0) < 0 ||
	    fsync(d->marker_fd) < 0) {
		snprintf(err, errlen, "%s: writing marker: %s", d->path,
			 strerror(errno));
		return -errno;
	}
	return 0;
}

/*
 * With the lock held and the extents file open: a marker of another format
 * or stripe unit is refused, unless <fresh>, which empties the extents file
 * and writes the marker anew.
 */
static int settle_marker(struct pool *p, unsigned i, const char *have,
			 bool fresh, char *err, size_t errlen)
{
	struct pool_dir *d = &p->dirs[i];
	char want[128], why[160];
	bool same;

	marker_text(p, i, 0, want, sizeof(want));
	same = !strcmp(have, want);
	if (*have && !same && !fresh) {
		marker_mismatch(p, have, why, sizeof(why));
		snprintf(err, errlen, "%s: %s: start with `fresh` to wipe it",
			 d->path, why);
		return -EEXIST;
	}
	if (fresh && (ftruncate(d->fd, 0) < 0 || fsync(d->fd) < 0)) {
		snprintf(err, errlen, "%s/" EXTENTS_NAME ": cannot wipe: %s",
			 d->path, strerror(errno));
		return -errno;
	}
	if (fresh || !same)
		d->id = 0;		/* a new store: a new identity */
	if (same)
		return 0;
	return write_marker(d, want, err, errlen);
}

int pool_keep_id(struct pool *p, uint64_t id, char *err, size_t errlen)
{
	char want[128];
	int ret;

	for (unsigned i = 0; i < p->ndirs; i++) {
		if (p->dirs[i].id == id)
			continue;
		marker_text(p, i, id, want, sizeof(want));
		ret = write_marker(&p->dirs[i], want, err, errlen);
		if (ret < 0)
			return ret;
		p->dirs[i].id = id;
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
 * fail the I/O.  A file shorter than that is stretched for the read and
 * cut back. */
static int probe_direct(struct pool_dir *d, uint32_t align, char *err,
			size_t errlen)
{
	bool stretch = d->grown < align;
	void *buf = aligned_alloc(align, align);
	ssize_t n = -1;
	int saved;

	if (!buf)
		return -ENOMEM;
	if (!stretch || ftruncate(d->fd, align) == 0)
		n = pread(d->fd, buf, align, 0);
	saved = errno;
	free(buf);
	if (stretch && ftruncate(d->fd, d->grown) < 0 && n >= 0) {
		n = -1;
		saved = errno;
	}
	if (n == (ssize_t)align)
		return 0;
	snprintf(err, errlen, "%s: O_DIRECT read failed: %s", d->path,
		 n < 0 ? strerror(saved) : "short read");
	return n < 0 ? -saved : -EIO;
}

/* Takes the extents file of dir <i> as it is (cut to the pool's share if
 * the pool shrank) and probes it. */
static int open_extents(struct pool *p, unsigned i, char *err, size_t errlen)
{
	struct pool_dir *d = &p->dirs[i];
	struct stat st;

	if (fstat(d->fd, &st) < 0) {
		snprintf(err, errlen, "%s/" EXTENTS_NAME ": %s", d->path,
			 strerror(errno));
		return -errno;
	}
	d->grown = st.st_size;
	if (d->grown > p->per_dir) {
		if (ftruncate(d->fd, p->per_dir) < 0) {
			snprintf(err, errlen, "%s/" EXTENTS_NAME ": cannot cut to %llu bytes: %s",
				 d->path, (unsigned long long)p->per_dir,
				 strerror(errno));
			return -errno;
		}
		log_info("%s/" EXTENTS_NAME ": cut from %llu to the pool's %llu bytes",
			 d->path, (unsigned long long)d->grown,
			 (unsigned long long)p->per_dir);
		d->grown = p->per_dir;
	}
	if (dio_alignment(d->fd) > p->align)
		p->align = dio_alignment(d->fd);
	return probe_direct(d, p->align, err, errlen);
}

/*
 * Opens pool dir <i>.  The path the admin gave may go through symlinks; the
 * dir it ends at must be ours and not group/world writable, and nothing in
 * it is opened through a symlink.
 */
static int open_dir(struct pool *p, unsigned i, bool fresh, char *err,
		    size_t errlen)
{
	struct pool_dir *d = &p->dirs[i];
	char have[128];
	struct statfs sfs;
	struct stat st;
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
	ret = check_marker(p, i, have, sizeof(have), err, errlen);
	if (ret < 0)
		goto out_dir;
	d->id = marker_take_id(have);
	ret = open_in_dir(d, dfd, EXTENTS_NAME, true, err, errlen);
	if (ret < 0)
		goto out_dir;
	d->fd = ret;
	d->dfd = dfd;			/* kept: the journal lives beside */
	d->dev = fstat(dfd, &st) == 0 ? st.st_dev : 0;
	ret = settle_marker(p, i, have, fresh, err, errlen);
	if (ret < 0)
		return ret;
	return open_extents(p, i, err, errlen);

out_dir:
	close(dfd);
	return ret;
}

/* Logical bytes [0, n) that every dir's file holds. */
static uint64_t backed_bytes(const struct pool *p)
{
	uint64_t m = UINT64_MAX, cap = p->units * p->align;

	for (unsigned i = 0; i < p->ndirs; i++)
		if (p->dirs[i].grown < m)
			m = p->dirs[i].grown;
	if (p->ndirs > 1)
		m = (m - m % p->stripe) * p->ndirs;
	else
		m -= m % p->align;
	return m < cap ? m : cap;
}

int pool_open(struct pool *p, enum gs_tier tier, const char *const *dirs,
	      unsigned ndirs, uint64_t size, uint64_t stripe,
	      uint64_t min_size, bool fresh, char *err, size_t errlen)
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
		ret = open_dir(p, i, fresh, err, errlen);
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
	/* a growth is a step of every dir's file: at least one largest chunk,
	 * whole stripes, so that the files cover [0, backed) */
	p->step = p->per_dir / 16 < GROW_STEP_MAX ? p->per_dir / 16 :
		  GROW_STEP_MAX;
	if (p->step < GS_HDD_CHUNK)
		p->step = GS_HDD_CHUNK;
	p->step = round_up(p->step, ndirs > 1 ? p->stripe : p->align);
	if (p->step > p->per_dir)
		p->step = p->per_dir;
	p->backed = backed_bytes(p);
	log_info("%s pool: %u dir(s), %llu bytes (%llu in its files, growing by %llu per dir), alignment %u%s",
		 tier_names[tier], ndirs, (unsigned long long)p->size,
		 (unsigned long long)p->backed, (unsigned long long)p->step,
		 p->align, ndirs > 1 ? ", striped" : "");
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

static bool unit_used(const struct pool *p, uint64_t u)
{
	return p->usedmap[u / 64] >> (u % 64) & 1;
}

/* Bytes dir <d>'s file may grow by: what its file system has free for an
 * unprivileged writer, less the journal's reserve when it is the journal's
 * file system; UINT64_MAX when unknown. */
static uint64_t dir_room(const struct pool *p, const struct pool_dir *d)
{
	uint64_t avail, keep = d->dev == p->reserve_dev ? p->reserve : 0;
	struct statfs sfs;

	if (fstatfs(d->fd, &sfs) < 0)
		return UINT64_MAX;
	avail = (uint64_t)sfs.f_bavail * sfs.f_bsize;
	return avail > keep ? avail - keep : 0;
}

/* Grows dir <d>'s file to <size> bytes: 0 or -errno.  A failed fallocate
 * gives back what it allocated: the file holds <d->grown> after. */
static int grow_file(const struct pool *p, struct pool_dir *d, uint64_t size)
{
	int ret;

	if (size - d->grown > dir_room(p, d))
		return -ENOSPC;
	if (fallocate(d->fd, 0, d->grown, size - d->grown) == 0 ||
	    (errno == EOPNOTSUPP && ftruncate(d->fd, size) == 0)) {
		d->grown = size;
		return 0;
	}
	ret = -errno;
	if (ftruncate(d->fd, d->grown) < 0)
		log_err("%s/" EXTENTS_NAME ": cannot give back a failed growth: %s",
			d->path, strerror(errno));
	return ret;
}

/* Grows every dir's file to hold [0, <to>); on a failure, the dir that
 * failed in <*failed>. */
static int grow_to(struct pool *p, uint64_t to, unsigned *failed)
{
	uint64_t per = p->ndirs > 1 ? to / p->ndirs : to;
	int ret = 0;

	for (unsigned i = 0; i < p->ndirs && ret == 0; i++) {
		*failed = i;
		if (p->dirs[i].grown < per)
			ret = grow_file(p, &p->dirs[i], per);
	}
	p->backed = backed_bytes(p);
	return ret;
}

/*
 * Grows the files until they hold [0, <need>): by a step, or near the end
 * of a file system by halves of it down to the least that covers <need>.
 * A failure is logged once until a growth succeeds again; the pool then
 * only reuses what its files hold, as a full pool does.
 */
static int grow(struct pool *p, uint64_t need)
{
	uint64_t cap = p->units * p->align, step = p->step * p->ndirs;
	uint64_t unit = p->ndirs > 1 ? p->stripe * p->ndirs : p->align;
	uint64_t to, least;
	unsigned i = 0;
	int ret;

	if (need > cap)
		return -ENOSPC;
	least = round_up(need, unit) < cap ? round_up(need, unit) : cap;
	to = p->backed + round_up(need - p->backed, step);
	if (to > cap)
		to = cap;
	while ((ret = grow_to(p, to, &i)) < 0 && to > least) {
		to = p->backed + round_up((to - p->backed) / 2, unit);
		if (to < least)
			to = least;
	}
	if (ret == 0) {
		if (p->grow_failed)
			log_info("%s pool: its files grow again", tier_names[p->tier]);
		p->grow_failed = false;
		return 0;
	}
	if (!p->grow_failed)
		log_warn("%s pool: %s/" EXTENTS_NAME ": cannot grow to %llu bytes: %s%s",
			 tier_names[p->tier], p->dirs[i].path,
			 (unsigned long long)(p->ndirs > 1 ? least / p->ndirs : least),
			 strerror(-ret),
			 ret == -ENOSPC || ret == -EDQUOT ?
			 " (its file system is full, or holds only the journal's reserve): the pool is full at its current size" :
			 ": the pool is full at its current size");
	p->grow_failed = true;
	return -ENOSPC;
}

/* Next-fit: the first run of <n> free units from the cursor on, within
 * [0, <lim>). */
static int find_run(struct pool *p, uint64_t n, uint64_t lim, uint64_t *first)
{
	uint64_t u = p->cursor, scanned = 0, run = 0;

	if (n > lim)
		return -ENOSPC;
	while (scanned < lim + n) {
		uint64_t w;

		if (u >= lim) {
			u = 0;
			run = 0;
		}
		w = p->usedmap[u / 64];
		if (u % 64 == 0 && u + 64 <= lim &&
		    (w == ~0ull || (w == 0 && run + 64 < n))) {
			run = w ? 0 : run + 64;
			u += 64;
			scanned += 64;
			continue;
		}
		if (w >> (u % 64) & 1) {
			run = 0;
		} else if (++run == n) {
			*first = u + 1 - n;
			return 0;
		}
		u++;
		scanned++;
	}
	return -ENOSPC;
}

int pool_alloc(struct pool *p, uint64_t len, uint64_t *addr)
{
	uint64_t n = round_up(len, p->align) / p->align;
	uint64_t lim = p->backed / p->align, first, tail = 0;

	if (n == 0 || n > p->units)
		return -ENOSPC;
	if (find_run(p, n, lim, &first) < 0) {
		/* units past what the files hold are free: a free run at
		 * their end goes on into the growth */
		while (tail < n && tail < lim && !unit_used(p, lim - 1 - tail))
			tail++;
		if (grow(p, (lim - tail + n) * p->align) < 0)
			return -ENOSPC;
		first = lim - tail;
	}
	mark(p, first, n, true);
	p->cursor = first + n;
	p->used += n * p->align;
	*addr = first * p->align;
	return 0;
}

int pool_alloc_most(struct pool *p, uint64_t len, uint64_t unit,
		    uint64_t *addr, uint64_t *got)
{
	uint64_t want = round_up(len, p->align) / p->align;
	uint64_t step = round_up(unit, p->align) / p->align;
	uint64_t lim = p->backed / p->align, best = 0, best_at = 0, run = 0;

	if (!want || !step)
		return -ENOSPC;
	for (uint64_t u = 0; u < lim && best < want;) {
		uint64_t w = p->usedmap[u / 64], n = 1;

		if (u % 64 == 0 && u + 64 <= lim && (w == ~0ull || w == 0))
			n = 64;			/* a whole word at once */
		if (w >> (u % 64) & 1) {
			run = 0;
		} else {
			run += n;
			if (run > best) {
				best = run;
				best_at = u + n - run;
			}
		}
		u += n;
	}
	if (best > want)
		best = want;
	if (best < want)
		best -= best % step;
	if (!best)
		return -ENOSPC;
	mark(p, best_at, best, true);
	p->cursor = best_at + best;
	p->used += best * p->align;
	*addr = best_at * p->align;
	*got = best * p->align;
	return 0;
}

int pool_claim(struct pool *p, uint64_t addr, uint64_t len)
{
	uint64_t n = round_up(len, p->align) / p->align;
	uint64_t first = addr / p->align;

	if (!len || addr % p->align || first >= p->units || n > p->units - first)
		return -EINVAL;
	for (uint64_t u = first; u < first + n; u++)
		if (unit_used(p, u))
			return -EINVAL;
	if ((first + n) * p->align > p->backed &&
	    grow(p, (first + n) * p->align) < 0)
		return -ENOSPC;
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

int pool_pieces(const struct pool *p, uint64_t addr, uint32_t len,
		  struct stripe_piece *pieces, int max)
{
	uint32_t done = 0;
	int n = 0;

	while (done < len) {
		uint64_t a = addr + done;
		uint64_t su = a / p->stripe;
		uint64_t to_boundary = p->stripe - a % p->stripe;
		uint32_t plen = to_boundary < len - done ? to_boundary : len - done;

		if (n == max)
			return -E2BIG;
		pieces[n++] = (struct stripe_piece){
			.dir = su % p->ndirs,
			.off = (su / p->ndirs) * p->stripe + a % p->stripe,
			.len = plen,
			.buf_off = done,
		};
		done += plen;
	}
	return n;
}
