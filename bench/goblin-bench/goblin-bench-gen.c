/* goblin-bench generators: see goblin-bench-gen.h. */
#include <endian.h>
#include <math.h>
#include <string.h>

#include "goblin-bench-gen.h"

#define PHI		0x9e3779b97f4a7c15ULL
#define TAG_SIZE	0x73697a65ULL		/* "size" */
#define TAG_VALUE	0x76616c7565ULL		/* "value" */
#define ZETA_EXACT	(1u << 20)

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void gb_rng_seed(struct gb_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++) {
		seed += PHI;
		r->s[i] = gb_mix64(seed);
	}
}

uint64_t gb_rng_next(struct gb_rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

static double unit_of(uint64_t x)
{
	return (double)(x >> 11) * 0x1.0p-53;
}

double gb_rng_unit(struct gb_rng *r)
{
	return unit_of(gb_rng_next(r));
}

uint64_t gb_rng_below(struct gb_rng *r, uint64_t n)
{
	/* Lemire's multiply-shift; the bias (n / 2^64) is far below noise. */
	return (uint64_t)(((unsigned __int128)gb_rng_next(r) * n) >> 64);
}

/* Generalized Pareto inverse CDF. */
static double gpd_inv(double loc, double scale, double shape, double u)
{
	return loc + scale / shape * (pow(1.0 - u, -shape) - 1.0);
}

static double gpd_cdf(double loc, double scale, double shape, double x)
{
	return 1.0 - pow(1.0 + shape * (x - loc) / scale, -1.0 / shape);
}

void gb_sizer_init(struct gb_sizer *z, enum gb_dist dist, uint64_t fixed,
		   uint64_t seed)
{
	memset(z, 0, sizeof(*z));
	z->dist = dist;
	z->fixed = fixed;
	z->tag = gb_mix64(seed ^ TAG_SIZE);
	switch (dist) {
	case GB_DIST_FIXED:
		break;
	case GB_DIST_GPD:
		z->loc = GB_GPD_LOC;
		z->scale = GB_GPD_SCALE;
		z->shape = GB_GPD_SHAPE;
		z->umax = gpd_cdf(z->loc, z->scale, z->shape, GB_GPD_MAX);
		z->cap = (uint64_t)GB_GPD_MAX;
		break;
	case GB_DIST_FB_VALUE:
		z->loc = GB_FB_LOC;
		z->scale = GB_FB_SCALE;
		z->shape = GB_FB_SHAPE;
		z->umax = 1.0;
		z->cap = GB_FB_CAP;
		break;
	}
}

uint64_t gb_size_of(const struct gb_sizer *z, uint64_t key)
{
	double u, x;

	if (z->dist == GB_DIST_FIXED)
		return z->fixed;
	u = unit_of(gb_mix64(z->tag + key)) * z->umax;
	x = floor(gpd_inv(z->loc, z->scale, z->shape, u));
	return x >= (double)z->cap ? z->cap : (uint64_t)x;
}

double gb_sizer_mean(const struct gb_sizer *z)
{
	const int steps = 1 << 16;
	double acc = 0;

	if (z->dist == GB_DIST_FIXED)
		return (double)z->fixed;
	/* Midpoint rule over u; matches gb_size_of() apart from the floor. */
	for (int i = 0; i < steps; i++) {
		double u = (i + 0.5) / steps * z->umax;
		double x = gpd_inv(z->loc, z->scale, z->shape, u);

		acc += x > (double)z->cap ? (double)z->cap : x;
	}
	return acc / steps;
}

const char *gb_dist_name(enum gb_dist dist)
{
	switch (dist) {
	case GB_DIST_FIXED:
		return "fixed";
	case GB_DIST_GPD:
		return "gpd";
	case GB_DIST_FB_VALUE:
		return "fb_value";
	}
	return "?";
}

uint64_t gb_value_tag(uint64_t seed)
{
	return gb_mix64(seed ^ TAG_VALUE);
}

uint64_t gb_value_base(uint64_t tag, uint64_t key, uint32_t version)
{
	return gb_mix64(gb_mix64(tag + key) + version);
}

static inline uint64_t word_at(uint64_t base, uint64_t w)
{
	return htole64(gb_mix64(base + w * PHI));
}

uint8_t gb_value_byte(uint64_t base, uint64_t off)
{
	uint64_t x = word_at(base, off >> 3);
	uint8_t b[8];

	memcpy(b, &x, 8);
	return b[off & 7];
}

void gb_value_fill(uint64_t base, uint64_t off, void *buf, size_t n)
{
	uint8_t *p = buf;
	uint64_t w = off >> 3, x;
	size_t skip = off & 7, k;

	if (skip && n) {
		x = word_at(base, w++);
		k = 8 - skip < n ? 8 - skip : n;
		memcpy(p, (uint8_t *)&x + skip, k);
		p += k;
		n -= k;
	}
	for (; n >= 8; p += 8, n -= 8) {
		x = word_at(base, w++);
		memcpy(p, &x, 8);
	}
	if (n) {
		x = word_at(base, w);
		memcpy(p, &x, n);
	}
}

size_t gb_value_check(uint64_t base, uint64_t off, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	uint64_t w = off >> 3, x, y;
	size_t i = 0, skip = off & 7;

	if (skip && n) {
		x = word_at(base, w++);
		for (; skip < 8 && i < n; skip++, i++)
			if (p[i] != ((uint8_t *)&x)[skip])
				return i;
	}
	for (; n - i >= 8; i += 8, w++) {
		memcpy(&y, p + i, 8);
		if (y != word_at(base, w))
			break;
	}
	if (i < n) {
		x = word_at(base, w);
		for (size_t j = 0; j < 8 && i < n; j++, i++)
			if (p[i] != ((uint8_t *)&x)[j])
				return i;
	}
	return n;
}

double gb_zeta(uint64_t n, double theta)
{
	uint64_t exact = n < ZETA_EXACT ? n : ZETA_EXACT;
	double sum = 0, a, f;

	for (uint64_t i = exact; i >= 1; i--)
		sum += pow((double)i, -theta);
	if (n == exact)
		return sum;
	/* sum_{a < i <= n} f(i) ~ int_a^n f + (f(n) - f(a))/2 + (f'(n) - f'(a))/12 */
	a = (double)exact;
	f = (double)n;
	sum += (pow(f, 1 - theta) - pow(a, 1 - theta)) / (1 - theta);
	sum += (pow(f, -theta) - pow(a, -theta)) / 2;
	sum += -theta * (pow(f, -theta - 1) - pow(a, -theta - 1)) / 12;
	return sum;
}

void gb_zipf_init(struct gb_zipf *z, uint64_t n, double theta)
{
	double zeta2 = gb_zeta(2, theta);

	z->n = n;
	z->theta = theta;
	z->alpha = 1.0 / (1.0 - theta);
	z->zetan = gb_zeta(n, theta);
	/* n <= 2 never reaches the eta branch of gb_zipf_next() */
	z->eta = n <= 2 ? 0 : (1.0 - pow(2.0 / (double)n, 1.0 - theta)) /
			      (1.0 - zeta2 / z->zetan);
	z->half_pow = 1.0 + pow(0.5, theta);
}

uint64_t gb_zipf_next(const struct gb_zipf *z, struct gb_rng *r)
{
	double u = gb_rng_unit(r), uz = u * z->zetan;
	uint64_t k;

	if (z->n == 1 || uz < 1.0)
		return 0;
	if (uz < z->half_pow)
		return 1;
	k = (uint64_t)((double)z->n * pow(z->eta * u - z->eta + 1.0, z->alpha));
	return k < z->n ? k : z->n - 1;
}
