/*
 * Disk pools: extents aligned to the device alignment and never rounded to
 * powers of two, next-fit allocation that finds holes, exact accounting,
 * stripe segmentation across dirs, the marker rules, and the trust rules of
 * pool dirs: no symlink inside followed, nothing another user owns or may
 * write used, what we create private.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "check.h"
#include "log.h"
#include "options.h"


static char tmp[] = "/var/tmp/goblin-test-pool.XXXXXX";

static void extents(void)
{
	char d[300], err[256];
	const char *dirs[1] = { d };
	struct pool p;
	uint64_t a, b, c, x;

	snprintf(d, sizeof(d), "%s/one", tmp);
	CHECK(pool_open(&p, GS_TIER_SSD, dirs, 1, 1 << 20, 1 << 20, 0, err,
			sizeof(err)) == 0, "%s", err);
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
	struct pool_seg segs[8];
	int n;

	snprintf(d0, sizeof(d0), "%s/s0", tmp);
	snprintf(d1, sizeof(d1), "%s/s1", tmp);
	CHECK(pool_open(&p, GS_TIER_HDD, dirs, 2, 4 << 20, 64 << 10, 0, err,
			sizeof(err)) == 0, "%s", err);
	CHECK(p.size == 4 << 20 && p.per_dir == 2 << 20, "geometry");
	n = pool_segments(&p, 60 << 10, 136 << 10, segs, 8);
	CHECK(n == 4, "segments %d", n);
	CHECK(segs[0].dir == 0 && segs[0].off == 60 << 10 && segs[0].len == 4 << 10,
	      "seg0");
	CHECK(segs[1].dir == 1 && segs[1].off == 0 && segs[1].len == 64 << 10 &&
	      segs[1].buf_off == 4 << 10, "seg1");
	CHECK(segs[2].dir == 0 && segs[2].off == 64 << 10 && segs[2].len == 64 << 10,
	      "seg2");
	CHECK(segs[3].dir == 1 && segs[3].off == 64 << 10 && segs[3].len == 4 << 10 &&
	      segs[3].buf_off == 132 << 10, "seg3");
	pool_close(&p);

	/* the same dirs as another tier, or as one dir of a different stripe */
	CHECK(pool_open(&p, GS_TIER_SSD, dirs, 2, 4 << 20, 64 << 10, 0, err,
			sizeof(err)) == -EEXIST && strstr(err, "belongs to another pool"),
	      "tier change refused: %s", err);
	CHECK(pool_open(&p, GS_TIER_HDD, dirs, 1, 4 << 20, 64 << 10, 0, err,
			sizeof(err)) == -EEXIST, "geometry change refused: %s", err);
	/* while open, a second open of the same dirs is refused */
	CHECK(pool_open(&p, GS_TIER_HDD, dirs, 2, 4 << 20, 64 << 10, 0, err,
			sizeof(err)) == 0, "reopen: %s", err);
	pool_close(&p);
}

/* Pools past 4 GiB: segment lengths stay right across the 2^32 boundary
 * (a 32-bit distance to the next stripe once wrapped to 0). */
static void large(void)
{
	struct pool p = { .ndirs = 1, .stripe = 5ull << 30, .align = 4096 };
	struct pool_seg segs[4];
	int n;

	n = pool_segments(&p, 1ull << 30, 1 << 20, segs, 4);
	CHECK(n == 1 && segs[0].off == 1ull << 30 && segs[0].len == 1 << 20,
	      "1 GiB into a 5 GiB pool: %d", n);
	n = pool_segments(&p, (4ull << 30) - 4096, 8192, segs, 4);
	CHECK(n == 1 && segs[0].len == 8192, "across 4 GiB: %d", n);
	p.stripe = 8ull << 30;
	n = pool_segments(&p, 0, 1 << 20, segs, 4);
	CHECK(n == 1 && segs[0].len == 1 << 20, "8 GiB stripe at 0: %d", n);
	p = (struct pool){ .ndirs = 2, .stripe = 1 << 20, .align = 4096 };
	n = pool_segments(&p, (6ull << 30) + (1 << 19), 1 << 20, segs, 4);
	CHECK(n == 2 && segs[0].dir == 0 && segs[0].off == (3ull << 30) + (1 << 19) &&
	      segs[1].dir == 1 && segs[1].off == 3ull << 30, "striped past 4 GiB");
}

static void too_small(void)
{
	char d[300], err[256];
	const char *dirs[1] = { d };
	struct pool p;

	snprintf(d, sizeof(d), "%s/small", tmp);
	CHECK(pool_open(&p, GS_TIER_SSD, dirs, 1, 1 << 20, 1 << 20, 2 << 20, err,
			sizeof(err)) == -EINVAL && strstr(err, "smaller than one object"),
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

	options_config_defaults(&cfg);
	cfg.memory = 16 << 20;
	cfg.sub_memory = 4 << 20;
	cfg.mlock = false;
	cfg.max_object = 8 << 20;
	cfg.ssd_size = 16 << 20;
	cfg.ssd_dirs[0] = dir;
	cfg.n_ssd_dirs = 1;
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

int main(void)
{
	char cmd[400];

	log_level = LOG_WARN;
	if (!mkdtemp(tmp))
		return 1;
	extents();
	stripes();
	large();
	too_small();
	pool_dirs();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd))
		failures++;
	return check_result();
}
