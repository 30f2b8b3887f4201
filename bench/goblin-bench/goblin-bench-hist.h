/*
 * Log-linear latency histogram (HdrHistogram-like): values below 2^8 get
 * their own bucket; above that every power of two is split into 128 equal
 * buckets, so a reported percentile is within 1/128 (0.79%) of the true
 * sample, above it, never below.  Fixed size, no allocation.
 */
#ifndef GOBLIN_BENCH_HIST_H
#define GOBLIN_BENCH_HIST_H

#include <stdint.h>

#define GB_HIST_BITS	8
#define GB_HIST_HALF	(1u << (GB_HIST_BITS - 1))
#define GB_HIST_BUCKETS	((66 - GB_HIST_BITS) * GB_HIST_HALF)

struct gb_hist {
	uint64_t count, sum, min, max;
	uint64_t bucket[GB_HIST_BUCKETS];
};

void gb_hist_reset(struct gb_hist *h);
void gb_hist_record(struct gb_hist *h, uint64_t v);
/* Value at percentile <p> (0..100]: the highest value of the bucket that
 * holds the ceil(p/100 * count)-th sample, capped at the maximum; 0 when
 * empty. */
uint64_t gb_hist_percentile(const struct gb_hist *h, double p);
/* Adds every sample of <src> to <dst>. */
void gb_hist_merge(struct gb_hist *dst, const struct gb_hist *src);
double gb_hist_mean(const struct gb_hist *h);
unsigned gb_hist_index(uint64_t v);
/* Highest value that lands in bucket <i>. */
uint64_t gb_hist_bucket_high(unsigned i);

#endif
