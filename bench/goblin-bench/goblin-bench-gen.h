/*
 * goblin-bench generators: random streams, object sizes, object values and
 * key popularity.  Everything the server stores is a pure function of
 * (seed, key index, version), so a later run can verify any byte it reads
 * without having kept a copy:
 *
 *   size(seed, key)            inverse CDF of the chosen size distribution
 *   value(seed, key, version)  little-endian 64-bit words,
 *                              word[w] = mix64(base(seed, key, version) + w * PHI)
 */
#ifndef GOBLIN_BENCH_GEN_H
#define GOBLIN_BENCH_GEN_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64's finaliser: a bijective 64-bit mixer. */
static inline uint64_t gb_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* xoshiro256** stream for request choices. */
struct gb_rng {
	uint64_t s[4];
};

void gb_rng_seed(struct gb_rng *r, uint64_t seed);
uint64_t gb_rng_next(struct gb_rng *r);
/* Uniform double in [0, 1). */
double gb_rng_unit(struct gb_rng *r);
/* Uniform integer in [0, n), n > 0. */
uint64_t gb_rng_below(struct gb_rng *r, uint64_t n);

enum gb_dist {
	GB_DIST_FIXED,
	GB_DIST_GPD,
	GB_DIST_FB_VALUE,
};

/*
 * --dist gpd: generalized Pareto, location 256 KiB, scale 487588 B, shape
 * 0.5, truncated to [256 KiB, 8 MiB) by inverse CDF over u in [0, F(8 MiB));
 * its mean is 1.000 MiB (median ~643 KiB, p99 ~5.7 MiB).
 * --dist fb_value: mutilate's fb_value, generalized Pareto with location 15,
 * scale 214.476, shape 0.348238 (Atikoglu et al. 2012), capped at 1 MiB.
 */
#define GB_GPD_LOC	(256.0 * 1024)
#define GB_GPD_SCALE	487588.0
#define GB_GPD_SHAPE	0.5
#define GB_GPD_MAX	(8.0 * 1024 * 1024)
#define GB_FB_LOC	15.0
#define GB_FB_SCALE	214.476
#define GB_FB_SHAPE	0.348238
#define GB_FB_CAP	(1024 * 1024)

struct gb_sizer {
	enum gb_dist dist;
	uint64_t fixed;		/* --dist fixed */
	uint64_t tag;		/* seed-derived */
	double loc, scale, shape;
	double umax;		/* CDF at the upper bound: u is drawn below it */
	uint64_t cap;
};

void gb_sizer_init(struct gb_sizer *z, enum gb_dist dist, uint64_t fixed,
		   uint64_t seed);
/* Size in bytes of <key>'s value; depends only on the seed and <key>. */
uint64_t gb_size_of(const struct gb_sizer *z, uint64_t key);
/* The distribution's own mean (the target the realised mean approaches). */
double gb_sizer_mean(const struct gb_sizer *z);
const char *gb_dist_name(enum gb_dist dist);

/* Per-run seed tag for values; base of <key> at <version>. */
uint64_t gb_value_tag(uint64_t seed);
uint64_t gb_value_base(uint64_t tag, uint64_t key, uint32_t version);
/* Writes bytes [off, off+n) of the value with <base> into <buf>. */
void gb_value_fill(uint64_t base, uint64_t off, void *buf, size_t n);
/* Returns n when <buf> holds bytes [off, off+n) of the value, else the
 * index in <buf> of the first byte that differs. */
size_t gb_value_check(uint64_t base, uint64_t off, const void *buf, size_t n);
/* The expected byte at <off>. */
uint8_t gb_value_byte(uint64_t base, uint64_t off);

/* Zipf over [0, n) with exponent theta in (0, 1): rank 0 most popular
 * (Gray et al., "Quickly generating billion-record synthetic databases"). */
struct gb_zipf {
	uint64_t n;
	double theta, alpha, zetan, eta, half_pow;
};

void gb_zipf_init(struct gb_zipf *z, uint64_t n, double theta);
uint64_t gb_zipf_next(const struct gb_zipf *z, struct gb_rng *r);
/* Sum of i^-theta for i in [1, n]; exact up to 2^20 terms, then
 * Euler-Maclaurin. */
double gb_zeta(uint64_t n, double theta);

#endif
