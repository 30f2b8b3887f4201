/*
 * Measurements the engine sizes itself by (measure.h): log-scale
 * histograms of the last one to two seconds, kept with relaxed atomics so
 * a completion or a consumer never takes a lock to be counted.
 */
#include "clock.h"
#include "engine.h"
#include "measure.h"

#define RELAXED __ATOMIC_RELAXED

/* The bucket of <v>: four to an octave, from 1. */
static unsigned bucket_of(uint64_t v)
{
	unsigned msb, i;

	if (v < 4)
		return (unsigned)v;
	msb = 63 - (unsigned)__builtin_clzll(v);
	i = msb * 4 + (unsigned)((v >> (msb - 2)) & 3);
	return i < MEASURE_BUCKETS ? i : MEASURE_BUCKETS - 1;
}

/* The largest value bucket <i> holds. */
static uint64_t bucket_top(unsigned i)
{
	unsigned msb = i / 4;

	if (i < 4)
		return i;
	return ((uint64_t)(4 + i % 4 + 1) << (msb - 2)) - 1;
}

static void hist_add(struct measure_hist *h, uint64_t v)
{
	uint64_t now = mono_ns() / MEASURE_WINDOW_NS;
	unsigned w = (unsigned)(now & 1);
	uint64_t old = __atomic_load_n(&h->epoch[w], RELAXED);

	/* the first sample of a new window clears what it held two ago */
	if (old != now && __atomic_compare_exchange_n(&h->epoch[w], &old, now,
						      false, RELAXED, RELAXED))
		for (unsigned i = 0; i < MEASURE_BUCKETS; i++)
			__atomic_store_n(&h->win[w][i], 0, RELAXED);
	__atomic_fetch_add(&h->win[w][bucket_of(v)], 1, RELAXED);
}

/* The value at percentile <pct> of the windows still recent (<last>: of
 * the last one or two that had samples, however long ago); 0: none. */
static uint64_t hist_pct(const struct measure_hist *h, unsigned pct, bool last)
{
	uint64_t ep[2] = { __atomic_load_n(&h->epoch[0], RELAXED),
			   __atomic_load_n(&h->epoch[1], RELAXED) };
	uint64_t newest = last ? (ep[0] > ep[1] ? ep[0] : ep[1]) :
			  mono_ns() / MEASURE_WINDOW_NS;
	uint64_t n[MEASURE_BUCKETS] = { 0 }, total = 0, want, seen = 0;

	for (unsigned w = 0; w < 2; w++) {
		if (ep[w] + 1 < newest || ep[w] > newest)
			continue;
		for (unsigned i = 0; i < MEASURE_BUCKETS; i++)
			n[i] += __atomic_load_n(&h->win[w][i], RELAXED);
	}
	for (unsigned i = 0; i < MEASURE_BUCKETS; i++)
		total += n[i];
	if (!total)
		return 0;
	want = (total * pct + 99) / 100;
	for (unsigned i = 0; i < MEASURE_BUCKETS; i++) {
		seen += n[i];
		if (seen >= want)
			return bucket_top(i);
	}
	return bucket_top(MEASURE_BUCKETS - 1);
}

void measure_io(struct gs_engine *e, enum gs_tier t, uint64_t ns)
{
	if (t < GS_TIERS)
		hist_add(&e->measure.io[t], ns);
}

void measure_delivery(struct gs_engine *e, uint64_t bytes, uint64_t ns)
{
	if (!ns || !bytes)
		return;
	hist_add(&e->measure.rate, bytes * 1000000000ull / ns);
}

void measure_wait(struct gs_engine *e, uint64_t ns)
{
	if (ns > MEASURE_STALL_NS)
		STAT_ADD(e, delivery_stalls, 1);
}

uint64_t measure_io_ns(const struct gs_engine *e, enum gs_tier t, unsigned pct)
{
	return t < GS_TIERS ? hist_pct(&e->measure.io[t], pct, false) : 0;
}

uint64_t measure_delivery_rate(const struct gs_engine *e)
{
	return hist_pct(&e->measure.rate, 90, false);
}

uint64_t measure_prefix(const struct gs_engine *e)
{
	/* what was last measured: an object stored while nothing is read */
	uint64_t rate = hist_pct(&e->measure.rate, 90, true);
	uint64_t lat = hist_pct(&e->measure.io[GS_TIER_HDD], 99, true);
	uint64_t max = e->cfg.ssd_prefix, head = engine_ram_limit(e), need;

	if (!rate || !lat || e->cfg.fixed_prefix)
		return max;
	/* rate x lat / 1e9 without overflow for rates to 2^32 B/s, lat to ~4 s */
	need = rate / 1000 * (lat / 1000) / 1000;
	if (need <= head)
		return 0;
	need = round_up(need - head, GS_SSD_CHUNK);
	return need < max ? need : max;
}

void measure_stats(const struct gs_engine *e, struct gs_stats *st)
{
	st->delivery_rate = measure_delivery_rate(e);
	st->hdd_read_p99_us = measure_io_ns(e, GS_TIER_HDD, 99) / 1000;
	st->ssd_read_p99_us = measure_io_ns(e, GS_TIER_SSD, 99) / 1000;
	st->prefix_next_bytes = e->has_pool[GS_TIER_SSD] && e->has_pool[GS_TIER_HDD] ?
			 measure_prefix(e) : 0;
}
