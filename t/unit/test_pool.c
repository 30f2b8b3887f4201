/*
 * Disk pools: extents aligned to the device alignment and never rounded to
 * powers of two, next-fit allocation that finds holes, exact accounting,
 * stripe segmentation across dirs, and the marker rules.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "check.h"
#include "log.h"


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
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd))
		failures++;
	return check_result();
}
