/* goblin-bench latency histogram: see goblin-bench-hist.h. */
#include <math.h>
#include <string.h>

#include "goblin-bench-hist.h"

void gb_hist_reset(struct gb_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

unsigned gb_hist_index(uint64_t v)
{
	unsigned msb, shift;

	if (v < 2 * GB_HIST_HALF)
		return (unsigned)v;
	msb = 63 - (unsigned)__builtin_clzll(v);
	shift = msb - (GB_HIST_BITS - 1);
	return shift * GB_HIST_HALF + (unsigned)(v >> shift);
}

uint64_t gb_hist_bucket_high(unsigned i)
{
	unsigned shift;
	uint64_t sub;

	if (i < 2 * GB_HIST_HALF)
		return i;
	shift = i / GB_HIST_HALF - 1;
	sub = i - shift * GB_HIST_HALF;
	/* sub << shift + (2^shift - 1), without overflowing the top bucket */
	return (sub << shift) + ((1ULL << shift) - 1);
}

void gb_hist_record(struct gb_hist *h, uint64_t v)
{
	h->bucket[gb_hist_index(v)]++;
	h->count++;
	h->sum += v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

uint64_t gb_hist_percentile(const struct gb_hist *h, double p)
{
	uint64_t rank, seen = 0;

	if (!h->count)
		return 0;
	rank = (uint64_t)ceil(p / 100.0 * (double)h->count);
	if (rank < 1)
		rank = 1;
	if (rank > h->count)
		rank = h->count;
	for (unsigned i = 0; i < GB_HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= rank) {
			uint64_t v = gb_hist_bucket_high(i);

			return v < h->max ? v : h->max;
		}
	}
	return h->max;
}

double gb_hist_mean(const struct gb_hist *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0;
}

void gb_hist_merge(struct gb_hist *dst, const struct gb_hist *src)
{
	if (!src->count)
		return;
	for (unsigned i = 0; i < GB_HIST_BUCKETS; i++)
		dst->bucket[i] += src->bucket[i];
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}
