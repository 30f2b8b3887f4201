/*
 * Disk pools: extents aligned to the device alignment and never rounded to
 * powers of two, next-fit allocation that finds holes, exact accounting,
 * stripe segmentation across dirs, files that grow in steps as space is
 * handed out (and a full file system or a file size limit that stops them,
 * smaller steps near its end, the journal's reserve kept free),
 * the marker rules (format version, stripe unit, --fresh), and the trust
 * rules of pool dirs: no symlink inside followed, nothing another user owns
 * or may write used, what we create private.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "engine.h"
#include "check.h"
#include "log.h"
#include "pool.h"


static char tmp[] = "/var/tmp/goblin-test-pool.XXXXXX";

static void extents(void)
{
	char d[300], err[256];
	const char *dirs[1] = { d };
	struct pool p;
	uint64_t a, b, c, x;

	snprintf(d, sizeof(d), "%s/one", tmp);
	CHECK(pool_open(&p, GS_TIER_SSD, dirs, 1, 1 << 20, 1 << 20, 0, false,
			err, sizeof(err)) == 0, "%s", err);
	CHECK(p.align >= 512 && p.align % 512 == 0, "align %u", p.align);
	CHECK(pool_alloc(&p, 5000, &a) == 0 && a % p.align == 0, "a");
	CHECK(p.used == 8192 || p.used == (uint64_t)round_up(5000, p.align),
	      "5000 bytes take %llu (no power-of-two rounding)",
	      (unsigned long long)p.used);
	CHECK(pool_alloc(&p, 300000, &b) == 0 && b >= a + 5000, "b");
	CHECK(p.used == round_up(5000, p.align) + round_up(300000, p.align), "used");
	CHECK(pool_alloc(&p, 4096, &c) == 0, "c");
	/* fill the rest, free b: its hole is found again */
	while (pool_alloc(&p, 100000, &x) == 0)
		;
	pool_free(&p, b, 300000);
	CHECK(pool_alloc(&p, 200000, &x) == 0 && x >= b && x < b + 300000,
	      "hole reused at %llu", (unsigned long long)x);
	CHECK(pool_alloc(&p, 1 << 20, &x) == -ENOSPC, "full");
	pool_close(&p);
}

static void stripes(void)
{
	char d0[300], d1[300], err[256];
	const char *dirs[2] = { d0, d1 };
	struct pool p;
	struct stripe_piece pieces[8];
	int n;

	snprintf(d0, sizeof(d0), "%s/s0", tmp);
	snprintf(d1, sizeof(d1), "%s/s1", tmp);
	CHECK(pool_open(&p, GS_TIER_HDD, dirs, 2, 4 << 20, 64 << 10, 0, false,
			err, sizeof(err)) == 0, "%s", err);
	CHECK(p.size == 4 << 20 && p.per_dir == 2 << 20, "geometry");
	n = pool_pieces(&p, 60 << 10, 136 << 10, pieces, 8);
	CHECK(n == 4, "segments %d", n);
	CHECK(pieces[0].dir == 0 && pieces[0].off == 60 << 10 && pieces[0].len == 4 << 10,
	      "seg0");
	CHECK(pieces[1].dir == 1 && pieces[1].off == 0 && pieces[1].len == 64 << 10 &&
	      pieces[1].buf_off == 4 << 10, "seg1");
	CHECK(pieces[2].dir == 0 && pieces[2].off == 64 << 10 && pieces[2].len == 64 << 10,
	      "seg2");
	CHECK(pieces[3].dir == 1 && pieces[3].off == 64 << 10 && pieces[3].len == 4 << 10 &&
	      pieces[3].buf_off == 132 << 10, "seg3");
	pool_close(&p);

	/* the same dirs as another tier, or as one dir of a different stripe */
	CHECK(pool_open(&p, GS_TIER_SSD, dirs, 2, 4 << 20, 64 << 10, 0, false,
			err, sizeof(err)) == -EEXIST && strstr(err, "belongs to another pool"),
	      "tier change refused: %s", err);
	CHECK(pool_open(&p, GS_TIER_HDD, dirs, 1, 4 << 20, 64 << 10, 0, false,
			err, sizeof(err)) == -EEXIST, "geometry change refused: %s", err);
	/* while open, a second open of the same dirs is refused */
	CHECK(pool_open(&p, GS_TIER_HDD, dirs, 2, 4 << 20, 64 << 10, 0, false,
			err, sizeof(err)) == 0, "reopen: %s", err);
	pool_close(&p);
}

/* Pools past 4 GiB: segment lengths stay right across the 2^32 boundary
 * (a 32-bit distance to the next stripe once wrapped to 0). */
static void large(void)
{
	struct pool p = { .ndirs = 1, .stripe = 5ull << 30, .align = 4096 };
	struct stripe_piece pieces[4];
	int n;

	n = pool_pieces(&p, 1ull << 30, 1 << 20, pieces, 4);
	CHECK(n == 1 && pieces[0].off == 1ull << 30 && pieces[0].len == 1 << 20,
	      "1 GiB into a 5 GiB pool: %d", n);
	n = pool_pieces(&p, (4ull << 30) - 4096, 8192, pieces, 4);
	CHECK(n == 1 && pieces[0].len == 8192, "across 4 GiB: %d", n);
	p.stripe = 8ull << 30;
	n = pool_pieces(&p, 0, 1 << 20, pieces, 4);
	CHECK(n == 1 && pieces[0].len == 1 << 20, "8 GiB stripe at 0: %d", n);
	p = (struct pool){ .ndirs = 2, .stripe = 1 << 20, .align = 4096 };
	n = pool_pieces(&p, (6ull << 30) + (1 << 19), 1 << 20, pieces, 4);
	CHECK(n == 2 && pieces[0].dir == 0 && pieces[0].off == (3ull << 30) + (1 << 19) &&
	      pieces[1].dir == 1 && pieces[1].off == 3ull << 30, "striped past 4 GiB");
}

#define MIB	(1ull << 20)

static long long extents_size(const char *dir)
{
	char path[500];
	struct stat st;

	snprintf(path, sizeof(path), "%s/extents", dir);
	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static int open1(struct pool *p, enum gs_tier tier, const char *dir,
		 uint64_t size, bool fresh, char *err, size_t errlen)
{
	const char *dirs[1] = { dir };

	return pool_open(p, tier, dirs, 1, size, MIB, 0, fresh, err, errlen);
}

/* Files start empty, grow a step at a time as allocation passes what they
 * hold (never past the pool's share), reuse what they hold first, and keep
 * their size across a restart. */
static void growth(void)
{
	char d[300], err[256];
	struct pool p;
	uint64_t a, x;
	int i, ret;

	snprintf(d, sizeof(d), "%s/grow", tmp);
	CHECK(open1(&p, GS_TIER_HDD, d, 64 * MIB, false, err, sizeof(err)) == 0,
	      "%s", err);
	CHECK(p.step == 4 * MIB, "step %llu: 1/16 of the pool",
	      (unsigned long long)p.step);
	CHECK(extents_size(d) == 0 && p.backed == 0, "starts empty: %lld",
	      extents_size(d));
	for (i = 0; (ret = pool_alloc(&p, MIB, &a)) == 0; i++) {
		CHECK(a == i * MIB, "chunk %d at %llu", i, (unsigned long long)a);
		CHECK(extents_size(d) == (long long)round_up((i + 1) * MIB, 4 * MIB),
		      "chunk %d: file %lld bytes", i, extents_size(d));
	}
	CHECK(ret == -ENOSPC && i == 64 && extents_size(d) == 64 << 20,
	      "full at %d chunks, file %lld", i, extents_size(d));
	pool_free(&p, 5 * MIB, MIB);
	CHECK(pool_alloc(&p, MIB / 2, &x) == 0 && x == 5 * MIB, "hole");
	pool_close(&p);

	/* next-fit: the hole and the end of the file before a growth */
	CHECK(open1(&p, GS_TIER_HDD, d, 64 * MIB, true, err, sizeof(err)) == 0 &&
	      extents_size(d) == 0, "fresh: %s %lld", err, extents_size(d));
	CHECK(pool_alloc(&p, MIB, &a) == 0 && pool_alloc(&p, MIB, &x) == 0,
	      "two chunks");
	pool_free(&p, a, MIB);
	CHECK(pool_alloc(&p, 2 * MIB, &x) == 0 && x == 2 * MIB, "the end: %llu",
	      (unsigned long long)x);
	CHECK(pool_alloc(&p, MIB, &x) == 0 && x == a, "the hole: %llu",
	      (unsigned long long)x);
	CHECK(extents_size(d) == 4 << 20, "no growth: %lld", extents_size(d));
	CHECK(pool_alloc(&p, MIB, &x) == 0 && x == 4 * MIB &&
	      extents_size(d) == 8 << 20, "then a step: %lld", extents_size(d));
	pool_close(&p);

	/* a run bigger than a step, started in the free end of the file */
	CHECK(open1(&p, GS_TIER_HDD, d, 16 * MIB, true, err, sizeof(err)) == 0 &&
	      p.step == MIB, "1 MiB steps: %s", err);
	CHECK(pool_alloc(&p, MIB / 2, &a) == 0 && extents_size(d) == 1 << 20, "a");
	CHECK(pool_alloc(&p, 3 * MIB, &x) == 0 && x == MIB / 2 &&
	      extents_size(d) == 4 << 20, "3 MiB at %llu, file %lld",
	      (unsigned long long)x, extents_size(d));
	pool_close(&p);

	/* a restart counts what the file holds; a claim past it grows it */
	CHECK(open1(&p, GS_TIER_HDD, d, 16 * MIB, false, err, sizeof(err)) == 0 &&
	      p.backed == 4 * MIB && extents_size(d) == 4 << 20, "restart: %s",
	      err);
	CHECK(pool_claim(&p, MIB / 2, 3 * MIB) == 0, "claim inside");
	CHECK(pool_claim(&p, 6 * MIB, MIB) == 0 && extents_size(d) == 7 << 20,
	      "claim past the file: %lld", extents_size(d));
	CHECK(pool_claim(&p, 15 * MIB, 2 * MIB) == -EINVAL &&
	      extents_size(d) == 7 << 20, "claim past the pool");
	CHECK(pool_alloc(&p, MIB, &x) == 0 && x == 3 * MIB + MIB / 2 &&
	      extents_size(d) == 7 << 20, "between claims");
	pool_close(&p);

	/* a smaller pool cuts its file to its share */
	CHECK(open1(&p, GS_TIER_HDD, d, 2 * MIB, false, err, sizeof(err)) == 0 &&
	      extents_size(d) == 2 << 20 && p.backed == 2 * MIB, "cut: %lld",
	      extents_size(d));
	pool_close(&p);
}

/* Striped: every dir's file grows by a step at once. */
static void striped_growth(void)
{
	char d0[300], d1[300], err[256];
	const char *dirs[2] = { d0, d1 };
	struct pool p;
	uint64_t a;
	int i;

	snprintf(d0, sizeof(d0), "%s/g0", tmp);
	snprintf(d1, sizeof(d1), "%s/g1", tmp);
	CHECK(pool_open(&p, GS_TIER_HDD, dirs, 2, 8 * MIB, 64 << 10, 0, false,
			err, sizeof(err)) == 0, "%s", err);
	CHECK(extents_size(d0) == 0 && extents_size(d1) == 0, "start empty");
	CHECK(pool_alloc(&p, 64 << 10, &a) == 0 && p.backed == 2 * MIB &&
	      extents_size(d0) == 1 << 20 && extents_size(d1) == 1 << 20,
	      "a step each: %lld %lld", extents_size(d0), extents_size(d1));
	for (i = 0; pool_alloc(&p, MIB, &a) == 0; i++)
		CHECK(a + MIB <= p.backed && p.backed <= 8 * MIB, "chunk %d", i);
	CHECK(i == 7 && extents_size(d0) == 4 << 20 &&
	      extents_size(d1) == 4 << 20, "full at %d: %lld %lld", i,
	      extents_size(d0), extents_size(d1));
	pool_close(&p);
}

static void put_file(const char *dir, const char *name, const char *text,
		     size_t len)
{
	char path[400];
	int fd;

	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && write(fd, text, len) == (ssize_t)len, "%s", path);
	close(fd);
}

static bool marker_is(const char *dir, const char *want)
{
	char path[400], buf[200];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/goblin-pool", dir);
	fd = open(path, O_RDONLY);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n < 0)
		return false;
	buf[n] = '\0';
	return !strcmp(buf, want);
}

/* The marker's format and stripe unit: another is refused with its reason,
 * and --fresh wipes the pool and writes the marker anew; --fresh never
 * touches a dir that is not one of this pool's. */
static void markers(void)
{
	static char data[8192];
	char d[300], d0[300], d1[300], err[256];
	const char *dirs[2] = { d0, d1 };
	struct pool p;
	uint64_t a;

	memset(data, 0x5a, sizeof(data));
	snprintf(d, sizeof(d), "%s/old", tmp);
	put_file(d, "goblin-pool", "goblin-store ssd 1/1\n", 21);
	put_file(d, "extents", data, sizeof(data));
	CHECK(open1(&p, GS_TIER_SSD, d, 4 * MIB, false, err, sizeof(err)) == -EEXIST &&
	      strstr(err, ": pool format 1, this goblin-store reads format 2: start with `fresh` to wipe it"),
	      "format 1 refused: %s", err);
	CHECK(extents_size(d) == sizeof(data), "refused: extents untouched");
	CHECK(open1(&p, GS_TIER_SSD, d, 4 * MIB, true, err, sizeof(err)) == 0,
	      "fresh: %s", err);
	CHECK(extents_size(d) == 0 && marker_is(d, "goblin-store ssd 1/1 format 2\n"),
	      "fresh: wiped, marker rewritten");
	CHECK(pool_alloc(&p, MIB, &a) == 0 && extents_size(d) == 1 << 20, "grows");
	pool_close(&p);
	CHECK(open1(&p, GS_TIER_SSD, d, 4 * MIB, false, err, sizeof(err)) == 0 &&
	      extents_size(d) == 1 << 20, "format 2 kept: %s", err);
	pool_close(&p);
	CHECK(open1(&p, GS_TIER_SSD, d, 4 * MIB, true, err, sizeof(err)) == 0 &&
	      extents_size(d) == 0, "fresh wipes a current pool too: %s", err);
	pool_close(&p);

	put_file(d, "goblin-pool", "goblin-store ssd 1/1 format 3\n", 30);
	CHECK(open1(&p, GS_TIER_SSD, d, 4 * MIB, false, err, sizeof(err)) == -EEXIST &&
	      strstr(err, "pool format 3, this goblin-store reads format 2"),
	      "format 3 refused: %s", err);
	put_file(d, "goblin-pool", "goblin-store ssd 1/1 format 2 junk\n", 35);
	CHECK(open1(&p, GS_TIER_SSD, d, 4 * MIB, false, err, sizeof(err)) == -EEXIST &&
	      strstr(err, "unreadable marker \"goblin-store ssd 1/1 format 2 junk\""),
	      "junk refused: %s", err);

	/* the stripe unit */
	snprintf(d0, sizeof(d0), "%s/m0", tmp);
	snprintf(d1, sizeof(d1), "%s/m1", tmp);
	CHECK(pool_open(&p, GS_TIER_HDD, dirs, 2, 8 * MIB, 64 << 10, 0, false,
			err, sizeof(err)) == 0, "%s", err);
	CHECK(marker_is(d1, "goblin-store hdd 2/2 format 2 stripe 65536\n"),
	      "striped marker");
	CHECK(pool_alloc(&p, MIB, &a) == 0, "alloc");
	pool_close(&p);
	CHECK(pool_open(&p, GS_TIER_HDD, dirs, 2, 8 * MIB, 128 << 10, 0, false,
			err, sizeof(err)) == -EEXIST &&
	      strstr(err, "pool striped by 65536 bytes, `stripe_unit` is 131072: start with `fresh`"),
	      "stripe change refused: %s", err);
	CHECK(extents_size(d0) == 1 << 20, "refused: untouched");
	CHECK(pool_open(&p, GS_TIER_HDD, dirs, 2, 8 * MIB, 128 << 10, 0, true,
			err, sizeof(err)) == 0, "fresh: %s", err);
	CHECK(extents_size(d0) == 0 && extents_size(d1) == 0 &&
	      marker_is(d0, "goblin-store hdd 1/2 format 2 stripe 131072\n"),
	      "fresh: wiped, new stripe");
	pool_close(&p);

	/* never wiped: a foreign dir, another tier's pool */
	snprintf(d, sizeof(d), "%s/foreign", tmp);
	put_file(d, "precious", data, sizeof(data));
	CHECK(open1(&p, GS_TIER_SSD, d, 4 * MIB, true, err, sizeof(err)) == -EEXIST &&
	      strstr(err, "not empty and has no goblin-store marker"),
	      "fresh, foreign dir: %s", err);
	CHECK(extents_size(d) == -1, "foreign dir: no extents made");
	snprintf(d, sizeof(d), "%s/other-tier", tmp);
	put_file(d, "goblin-pool", "goblin-store hdd 1/1 format 2\n", 30);
	put_file(d, "extents", data, sizeof(data));
	CHECK(open1(&p, GS_TIER_SSD, d, 4 * MIB, true, err, sizeof(err)) == -EEXIST &&
	      strstr(err, "belongs to another pool"), "fresh, other tier: %s", err);
	CHECK(extents_size(d) == sizeof(data) &&
	      marker_is(d, "goblin-store hdd 1/1 format 2\n"), "other tier untouched");
}

/* stderr into a file while <fn> runs; how many lines hold <what>. */
static int saved_stderr = -1;
static char capture_path[300];

static void capture_start(void)
{
	int fd;

	snprintf(capture_path, sizeof(capture_path), "%s/stderr", tmp);
	fd = open(capture_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	fflush(stderr);
	saved_stderr = dup(2);
	dup2(fd, 2);
	close(fd);
}

static int capture_end(const char *what, char *last, size_t len)
{
	char line[512];
	FILE *f;
	int n = 0;

	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	f = fopen(capture_path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, what)) {
			n++;
			snprintf(last, len, "%s", line);
		}
	if (f)
		fclose(f);
	return n;
}

/* A file system that fills up stops the growth: -ENOSPC, logged once,
 * and what the file holds is still handed out. */
/* Mounts an ext4 of <size> made with <mkfs> (options) at <tmp>/<name>,
 * its pool dir in <d>; false (skipped, said why) when it cannot. */
static bool loop_fs(const char *name, const char *size, const char *mkfs,
		    char *d, size_t dlen)
{
	char img[300], mnt[300], cmd[1700];

	snprintf(img, sizeof(img), "%s/%s.img", tmp, name);
	snprintf(mnt, sizeof(mnt), "%s/%s", tmp, name);
	snprintf(cmd, sizeof(cmd), "truncate -s %s %s && mkfs.ext4 -q -F %s %s >/dev/null 2>&1 && mkdir -p %s && mount -o loop %s %s 2>/dev/null",
		 size, img, mkfs, img, mnt, img, mnt);
	if (geteuid() != 0 || system(cmd) != 0) {
		fprintf(stderr, "%s: skipped (needs root, mkfs.ext4 and a loop device)\n",
			name);
		return false;
	}
	snprintf(d, dlen, "%s/pool", mnt);
	return true;
}

static void loop_fs_down(const char *name)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "umount %s/%s", tmp, name);
	CHECK(system(cmd) == 0, "umount");
}

static void disk_full(void)
{
	char d[400], err[256], line[512] = "";
	struct pool p;
	uint64_t a, b = UINT64_MAX;
	int ok = 0, late = 0, logged;

	if (!loop_fs("fs", "8M", "", d, sizeof(d)))
		return;
	CHECK(open1(&p, GS_TIER_SSD, d, 64 * MIB, false, err, sizeof(err)) == 0,
	      "%s", err);
	capture_start();
	while (pool_alloc(&p, MIB, &a) == 0 && ok < 64) {
		CHECK((long long)(a + MIB) <= extents_size(d), "%llu past the file",
		      (unsigned long long)a);
		b = a;
		ok++;
	}
	for (int i = 0; i < 5; i++)
		if (pool_alloc(&p, MIB, &a) == 0) {
			CHECK((long long)(a + MIB) <= extents_size(d), "late %llu",
			      (unsigned long long)a);
			late++;
		}
	CHECK(pool_alloc(&p, MIB, &a) == -ENOSPC, "full stays full");
	logged = capture_end("cannot grow", line, sizeof(line));
	CHECK(ok >= 4 && ok + late <= 7 && extents_size(d) <= 8 << 20,
	      "%d+%d chunks on an 8 MiB file system, file %lld", ok, late,
	      extents_size(d));
	CHECK(logged == 1 && strstr(line, "file system is full"),
	      "logged %d times: %s", logged, line);
	pool_free(&p, b, MIB);
	CHECK(pool_alloc(&p, MIB, &a) == 0 && a == b, "reuse after a full disk");
	pool_close(&p);
	loop_fs_down("fs");
}

static uint64_t fs_free(const char *dir)
{
	struct statvfs sv;

	return statvfs(dir, &sv) == 0 ? (uint64_t)sv.f_bavail * sv.f_frsize : 0;
}

/* A file system smaller than the pool's step: the files grow by smaller
 * steps near its end, keep no part of a failed one, and leave <reserve>
 * free on the journal's file system (and none elsewhere). */
static void disk_reserve(void)
{
	char d[400], mnt[300], line[512], err[256];
	struct pool p;
	uint64_t a, free_left;
	int n = 0, more = 0;

	if (!loop_fs("fs2", "24M", "-m 0 -b 4096", d, sizeof(d)))
		return;
	snprintf(mnt, sizeof(mnt), "%s/fs2", tmp);
	CHECK(open1(&p, GS_TIER_SSD, d, 256 * MIB, false, err, sizeof(err)) == 0 &&
	      p.step == 16 * MIB, "%s", err);
	p.reserve = 4 * MIB;
	p.reserve_dev = p.dirs[0].dev;
	capture_start();
	while (pool_alloc(&p, MIB, &a) == 0)
		n++;
	capture_end("cannot grow", line, sizeof(line));
	free_left = fs_free(mnt);
	CHECK(n >= 12 && extents_size(d) == n * (long long)MIB,
	      "%d chunks in a 24 MiB file system, file %lld", n, extents_size(d));
	CHECK(free_left >= 4 * MIB && free_left < 5 * MIB + MIB / 2,
	      "%llu bytes left free for a 4 MiB reserve",
	      (unsigned long long)free_left);
	/* the reserve is the journal's file system's only */
	p.reserve_dev = p.dirs[0].dev + 1;
	capture_start();
	while (pool_alloc(&p, MIB, &a) == 0)
		more++;
	capture_end("cannot grow", line, sizeof(line));
	CHECK(more >= 2 && extents_size(d) == (n + more) * (long long)MIB &&
	      fs_free(mnt) < 2 * MIB, "%d more, %llu bytes free", more,
	      (unsigned long long)fs_free(mnt));
	pool_close(&p);
	loop_fs_down("fs2");
}

/* Any other growth failure (here a file size limit: EFBIG) is -ENOSPC
 * with its reason logged; the pool grows again once it can. */
static void file_limit(void)
{
	char d[300], err[256], line[512] = "";
	struct rlimit old, lim;
	struct pool p;
	uint64_t a;
	int logged;

	snprintf(d, sizeof(d), "%s/fsize", tmp);
	CHECK(open1(&p, GS_TIER_SSD, d, 16 * MIB, false, err, sizeof(err)) == 0,
	      "%s", err);
	signal(SIGXFSZ, SIG_IGN);
	CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0, "getrlimit");
	lim = (struct rlimit){ .rlim_cur = 2 * MIB, .rlim_max = old.rlim_max };
	capture_start();
	CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
	CHECK(pool_alloc(&p, MIB, &a) == 0 && pool_alloc(&p, MIB, &a) == 0,
	      "two steps fit the limit");
	CHECK(pool_alloc(&p, MIB, &a) == -ENOSPC && pool_alloc(&p, 1, &a) == -ENOSPC,
	      "the third does not");
	CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0, "setrlimit back");
	logged = capture_end("cannot grow", line, sizeof(line));
	CHECK(logged == 1 && strstr(line, strerror(EFBIG)), "logged %d: %s",
	      logged, line);
	CHECK(extents_size(d) == 2 << 20, "file %lld", extents_size(d));
	CHECK(pool_alloc(&p, MIB, &a) == 0 && a == 2 * MIB &&
	      extents_size(d) == 3 << 20, "grows again");
	pool_close(&p);
	signal(SIGXFSZ, SIG_DFL);
}

static void too_small(void)
{
	char d[300], err[256];
	const char *dirs[1] = { d };
	struct pool p;

	snprintf(d, sizeof(d), "%s/small", tmp);
	CHECK(pool_open(&p, GS_TIER_SSD, dirs, 1, 1 << 20, 1 << 20, 2 << 20, false,
			err, sizeof(err)) == -EINVAL && strstr(err, "smaller than one object"),
	      "%s", err);
}

/* Issue 8, defect 6: pool dirs.  A symlink inside the dir is never followed; a dir
 * another user owns, or one others may write, is refused; what we create
 * is 0700/0600.  None of the refusals may touch the target file. */
static int target_fd;
static char target[300];

static void make_target(void)
{
	snprintf(target, sizeof(target), "%s/target", tmp);
	target_fd = open(target, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(target_fd >= 0 && write(target_fd, "precious\n", 9) == 9, "target");
}

static bool target_intact(void)
{
	char buf[64];
	struct stat st;

	return stat(target, &st) == 0 && st.st_size == 9 &&
	       pread(target_fd, buf, sizeof(buf), 0) == 9 &&
	       !memcmp(buf, "precious\n", 9);
}

static int try_pool(const char *dir, char *err, size_t errlen)
{
	struct gs_config cfg;
	struct gs_engine *e = NULL;
	int ret;

	gs_config_init(&cfg);
	cfg.memory = 16 << 20;
	cfg.sub_memory = 4 << 20;
	cfg.no_mlock = true;
	cfg.max_object = 8 << 20;
	cfg.ssd_size = 16 << 20;
	cfg.ssd_dir.v[0] = dir;
	cfg.ssd_dir.n = 1;
	ret = gs_engine_open(&e, &cfg, err, errlen);
	gs_engine_close(&e);
	return ret;
}

static void pool_dirs(void)
{
	char dir[300], link[400], err[512];
	struct stat st;
	struct passwd *nobody;
	int ret;

	make_target();

	/* extents -> target */
	snprintf(dir, sizeof(dir), "%s/pool-ext", tmp);
	CHECK(try_pool(dir, err, sizeof(err)) == 0, "pool-ext: %s", err);
	snprintf(link, sizeof(link), "%s/extents", dir);
	CHECK(unlink(link) == 0 && symlink(target, link) == 0, "symlink");
	ret = try_pool(dir, err, sizeof(err));
	CHECK(ret < 0 && strstr(err, "symlink"), "extents symlink: %d %s", ret, err);
	CHECK(target_intact(), "extents symlink: target written");

	/* goblin-pool (the marker) -> target */
	snprintf(dir, sizeof(dir), "%s/pool-marker", tmp);
	mkdir(dir, 0700);
	snprintf(link, sizeof(link), "%s/goblin-pool", dir);
	CHECK(symlink(target, link) == 0, "symlink");
	ret = try_pool(dir, err, sizeof(err));
	CHECK(ret < 0 && strstr(err, "symlink"), "marker symlink: %d %s", ret, err);
	CHECK(target_intact(), "marker symlink: target written");

	/* a dangling marker symlink: not created through it either */
	snprintf(dir, sizeof(dir), "%s/pool-dangling", tmp);
	mkdir(dir, 0700);
	snprintf(link, sizeof(link), "%s/goblin-pool", dir);
	CHECK(symlink("/var/tmp/goblin-test-hardening-nonexistent", link) == 0, "symlink");
	ret = try_pool(dir, err, sizeof(err));
	CHECK(ret < 0 && access("/var/tmp/goblin-test-hardening-nonexistent", F_OK) < 0,
	      "dangling marker symlink: %d %s", ret, err);

	/* group-writable dir */
	snprintf(dir, sizeof(dir), "%s/pool-gw", tmp);
	mkdir(dir, 0700);
	chmod(dir, 0770);
	ret = try_pool(dir, err, sizeof(err));
	CHECK(ret == -EPERM && strstr(err, "writable"), "group-writable: %d %s", ret, err);

	/* a dir another user owns */
	nobody = getpwnam("nobody");
	if (geteuid() == 0 && nobody) {
		snprintf(dir, sizeof(dir), "%s/pool-other", tmp);
		mkdir(dir, 0700);
		CHECK(chown(dir, nobody->pw_uid, nobody->pw_gid) == 0, "chown");
		ret = try_pool(dir, err, sizeof(err));
		CHECK(ret == -EPERM && strstr(err, "belongs to uid"), "other-owned: %d %s",
		      ret, err);
		snprintf(link, sizeof(link), "%s/extents", dir);
		CHECK(access(link, F_OK) < 0, "other-owned: extents created");
	} else {
		fprintf(stderr, "other-owned dir: skipped (needs root and a nobody user)\n");
	}

	/* a file in our dir owned by someone else */
	snprintf(dir, sizeof(dir), "%s/pool-file", tmp);
	CHECK(try_pool(dir, err, sizeof(err)) == 0, "fresh pool: %s", err);
	if (geteuid() == 0 && nobody) {
		snprintf(link, sizeof(link), "%s/extents", dir);
		CHECK(chown(link, nobody->pw_uid, nobody->pw_gid) == 0, "chown");
		ret = try_pool(dir, err, sizeof(err));
		CHECK(ret == -EPERM && strstr(err, "belongs to uid"), "other-owned file: %d %s",
		      ret, err);
		CHECK(chown(link, 0, 0) == 0, "chown back");
	}

	/* what we create: 0700 dir, 0600 files */
	snprintf(dir, sizeof(dir), "%s/pool-new/sub", tmp);
	CHECK(try_pool(dir, err, sizeof(err)) == 0, "new pool: %s", err);
	CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700, "dir mode %o",
	      st.st_mode & 0777);
	snprintf(link, sizeof(link), "%s/extents", dir);
	CHECK(stat(link, &st) == 0 && (st.st_mode & 0777) == 0600, "extents mode %o",
	      st.st_mode & 0777);
	snprintf(link, sizeof(link), "%s/goblin-pool", dir);
	CHECK(stat(link, &st) == 0 && (st.st_mode & 0777) == 0600, "marker mode %o",
	      st.st_mode & 0777);

	/* the dir path itself may be a symlink the admin set up: its final
	 * dir is ours and private, so that is accepted */
	snprintf(link, sizeof(link), "%s/pool-alias", tmp);
	CHECK(symlink(dir, link) == 0, "symlink");
	CHECK(try_pool(link, err, sizeof(err)) == 0, "dir via a symlink: %s", err);
	CHECK(target_intact(), "target written");
	close(target_fd);
}

/* pool_alloc_most: the largest free run, cut to whole units, or the whole
 * length when a run holds it; nothing when no hole holds a unit. */
static void most(void)
{
	char d[300], err[256];
	const char *dirs[1] = { d };
	struct pool p;
	uint64_t a[8], x, got;

	snprintf(d, sizeof(d), "%s/most", tmp);
	CHECK(pool_open(&p, GS_TIER_HDD, dirs, 1, 8 << 20, 1 << 20, 0, false,
			err, sizeof(err)) == 0, "%s", err);
	for (int i = 0; i < 8; i++)
		CHECK(pool_alloc(&p, 1 << 20, &a[i]) == 0, "fill %d", i);
	CHECK(pool_alloc(&p, 4096, &x) == -ENOSPC, "full");
	pool_free(&p, a[1], 1 << 20);		/* holes of 1, 2.5 and 0.5 MiB */
	pool_free(&p, a[3], 2 << 20);
	pool_free(&p, a[5], 512 << 10);
	pool_free(&p, a[7], 512 << 10);
	CHECK(pool_alloc(&p, 3 << 20, &x) == -ENOSPC, "no 3 MiB run");
	CHECK(pool_alloc_most(&p, 3 << 20, 1 << 20, &x, &got) == 0 &&
	      x == a[3] && got == 2 << 20, "largest: %llu at %llu",
	      (unsigned long long)got, (unsigned long long)x);
	CHECK(pool_alloc_most(&p, 3 << 20, 1 << 20, &x, &got) == 0 &&
	      x == a[1] && got == 1 << 20, "next: %llu at %llu",
	      (unsigned long long)got, (unsigned long long)x);
	CHECK(pool_alloc_most(&p, 3 << 20, 1 << 20, &x, &got) == -ENOSPC,
	      "half-unit holes only: %llu", (unsigned long long)got);
	CHECK(pool_alloc_most(&p, 300000, 1 << 20, &x, &got) == 0 &&
	      got == round_up(300000, p.align), "whole when it fits: %llu",
	      (unsigned long long)got);
	CHECK(p.used == (8ull << 20) - (1 << 20) + round_up(300000, p.align),
	      "used %llu", (unsigned long long)p.used);
	pool_close(&p);
}

int main(void)
{
	char cmd[400];

	log_level = LOG_WARN;
	if (!mkdtemp(tmp))
		return 1;
	extents();
	most();
	stripes();
	large();
	too_small();
	growth();
	striped_growth();
	markers();
	disk_full();
	disk_reserve();
	file_limit();
	pool_dirs();
	snprintf(cmd, sizeof(cmd), "umount %s/fs %s/fs2 2>/dev/null; rm -rf %s", tmp, tmp, tmp);
	if (system(cmd))
		failures++;
	return check_result();
}
