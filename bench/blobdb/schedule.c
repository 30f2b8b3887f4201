/* The seeded key schedule and the values it implies. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blobdb.h"

#define GOLDEN	0x9e3779b97f4a7c15ull

/*
 * Default gpd: location 256 KiB, scale 571 KiB, shape 0.3, truncated at
 * 8 MiB gives a mean of 1.00 MiB with about a third of objects >= 1 MiB.
 * Other bounds keep the scale and shape.
 */
#define GPD_SCALE	(571.0 * 1024)
#define GPD_SHAPE	0.3

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* splitmix64: a stream of the schedule's random numbers. */
static uint64_t next(uint64_t *state)
{
	*state += GOLDEN;
	return mix(*state);
}

/* Uniform in [0, 1). */
static double next_unit(uint64_t *state)
{
	return (next(state) >> 11) * 0x1.0p-53;
}

void bd_dist_gpd(struct bd_dist *d, uint64_t min_size, uint64_t max_size)
{
	d->name = "gpd";
	d->min_size = min_size;
	d->max_size = max_size;
	d->scale = GPD_SCALE;
	d->shape = GPD_SHAPE;
}

static double gpd_cdf(const struct bd_dist *d, double x)
{
	return 1 - pow(1 + d->shape * (x - d->min_size) / d->scale,
		       -1 / d->shape);
}

/* Inverse-CDF sampling restricted to [min_size, max_size]. */
static uint64_t gpd_sample(const struct bd_dist *d, double u)
{
	double p = u * gpd_cdf(d, d->max_size);
	double x = d->min_size +
		   d->scale / d->shape * (pow(1 - p, -d->shape) - 1);
	uint64_t v = llround(x);

	if (v < d->min_size)
		v = d->min_size;
	if (v > d->max_size)
		v = d->max_size;
	return v;
}

int bd_schedule_make(struct bd_schedule *s, const struct bd_config *cfg)
{
	const struct bd_dist *d = &cfg->dist;
	uint64_t state = cfg->seed;
	uint64_t i;

	memset(s, 0, sizeof(*s));
	if (cfg->objects == 0 || cfg->objects > UINT32_MAX)
		return -EINVAL;
	s->sizes = calloc(cfg->objects, sizeof(*s->sizes));
	s->reads = calloc(cfg->reads ? cfg->reads : 1, sizeof(*s->reads));
	if (!s->sizes || !s->reads) {
		bd_schedule_free(s);
		return -ENOMEM;
	}
	s->n_objects = cfg->objects;
	s->n_reads = cfg->reads;
	for (i = 0; i < s->n_objects; i++) {
		double u = next_unit(&state);

		if (strcmp(d->name, "gpd") == 0)
			s->sizes[i] = gpd_sample(d, u);
		else
			s->sizes[i] = d->min_size +
				(uint64_t)(u * (d->max_size - d->min_size + 1));
		s->total_bytes += s->sizes[i];
		if (s->sizes[i] > s->max_size)
			s->max_size = s->sizes[i];
	}
	for (i = 0; i < s->n_reads; i++)
		s->reads[i] = (uint32_t)(((unsigned __int128)next(&state) *
					  s->n_objects) >> 64);
	return 0;
}

void bd_schedule_free(struct bd_schedule *s)
{
	free(s->sizes);
	free(s->reads);
	s->sizes = NULL;
	s->reads = NULL;
}

int bd_key(char *buf, uint64_t idx)
{
	return snprintf(buf, BD_KEY_MAX, "blob-%08llu",
			(unsigned long long)idx);
}

uint64_t bd_value_seed(uint64_t seed, uint64_t idx)
{
	return mix(seed ^ mix(idx + 1));
}

/* Word <w> of a value: splitmix64 in counter mode, so any offset is direct. */
static inline uint64_t value_word(uint64_t vseed, uint64_t w)
{
	return mix(vseed + (w + 1) * GOLDEN);
}

void bd_value_fill(void *dst, uint64_t vseed, uint64_t off, size_t len)
{
	unsigned char *p = dst;

	while (len > 0) {
		uint64_t w = off / 8, v = value_word(vseed, w);
		size_t skip = off % 8, n = 8 - skip;

		if (n > len)
			n = len;
		memcpy(p, (unsigned char *)&v + skip, n);
		p += n;
		off += n;
		len -= n;
	}
}

/* Offset of the first wrong byte of <src> from <off>, or -1. */
static int64_t value_check(const void *src, uint64_t vseed, uint64_t off,
			   size_t len)
{
	const unsigned char *p = src;
	size_t done = 0;

	while (done < len) {
		uint64_t w = (off + done) / 8, v = value_word(vseed, w);
		size_t skip = (off + done) % 8, n = 8 - skip, k;

		if (n > len - done)
			n = len - done;
		if (memcmp(p + done, (unsigned char *)&v + skip, n) != 0) {
			for (k = 0; k < n; k++)
				if (p[done + k] !=
				    ((unsigned char *)&v)[skip + k])
					return (int64_t)(done + k);
		}
		done += n;
	}
	return -1;
}

/* Checks a value read back for object <idx>: its length and every byte.
 * Counts it in <r> (verified_bytes or mismatches).  0 or -1. */
int bd_verify(const struct bd_config *cfg, const struct bd_schedule *s,
	      uint32_t idx, const void *data, uint64_t size,
	      struct bd_result *r)
{
	char key[BD_KEY_MAX];
	int64_t bad;

	bd_key(key, idx);
	if (size != s->sizes[idx]) {
		r->mismatches++;
		bd_fail(r, "%s: %llu bytes, expected %llu", key,
			(unsigned long long)size,
			(unsigned long long)s->sizes[idx]);
		return -1;
	}
	bad = value_check(data, bd_value_seed(cfg->check_seed, idx), 0, size);
	if (bad >= 0) {
		r->mismatches++;
		bd_fail(r, "%s: wrong byte at offset %lld", key, (long long)bad);
		return -1;
	}
	r->verified_bytes += size;
	return 0;
}
