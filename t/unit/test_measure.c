/*
 * measure.c: percentiles of the recent completion times and delivery rates
 * land in the right bucket (within a quarter octave), delivery stalls are
 * counted past 10 ms only, and the prefix follows rate x HDD p99 - head,
 * rounded up to an SSD chunk and capped at --ssd-prefix.
 */
#include <stdlib.h>

#include "check.h"
#include "engine.h"
#include "measure.h"

/* Within a quarter octave above <want>: the bucket's top. */
static int near(uint64_t got, uint64_t want)
{
	return got >= want && got <= want + want / 4 + 1;
}

int main(void)
{
	struct gs_engine *e = calloc(1, sizeof(*e));
	struct gs_stats st = { 0 };
	uint64_t prefix;

	gs_config_init(&e->cfg);
	e->has_pool[GS_TIER_SSD] = e->has_pool[GS_TIER_HDD] = true;

	/* nothing measured: the configured prefix */
	CHECK(measure_io_ns(e, GS_TIER_HDD, 99) == 0, "empty");
	CHECK(measure_delivery_rate(e) == 0, "empty rate");
	CHECK(measure_prefix(e) == e->cfg.ssd_prefix, "%llu",
	      (unsigned long long)measure_prefix(e));

	/* 98 reads of 5 ms and 2 of 40 ms: p50 5 ms, p99 40 ms */
	for (int i = 0; i < 98; i++)
		measure_io(e, GS_TIER_HDD, 5000000);
	for (int i = 0; i < 2; i++)
		measure_io(e, GS_TIER_HDD, 40000000);
	CHECK(near(measure_io_ns(e, GS_TIER_HDD, 50), 5000000), "p50 %llu",
	      (unsigned long long)measure_io_ns(e, GS_TIER_HDD, 50));
	CHECK(near(measure_io_ns(e, GS_TIER_HDD, 99), 40000000), "p99 %llu",
	      (unsigned long long)measure_io_ns(e, GS_TIER_HDD, 99));
	CHECK(measure_io_ns(e, GS_TIER_SSD, 99) == 0, "other tier untouched");
	/* the rate known, the latency not yet: still the configured prefix */
	CHECK(measure_prefix(e) == e->cfg.ssd_prefix, "no rate yet");

	/* streams at 1.25e8 B/s (1 Gbit/s): 125,000 B per ms; 40 ms needs
	 * ~5 MB, more than the 1M cap */
	for (int i = 0; i < 20; i++)
		measure_delivery(e, 125000000, 1000000000);
	CHECK(near(measure_delivery_rate(e), 125000000), "rate %llu",
	      (unsigned long long)measure_delivery_rate(e));
	CHECK(measure_prefix(e) == e->cfg.ssd_prefix, "capped: %llu",
	      (unsigned long long)measure_prefix(e));

	/* with a 4M cap: rate x p99 ~= 5.0-6.3 MB, less the 256K head, in
	 * 256K steps: the cap again; with 64M the formula's value */
	e->cfg.ssd_prefix = 64ull << 20;
	{
		uint64_t p = measure_prefix(e), lo = 125000000ull * 40 / 1000;

		CHECK(p % GS_SSD_CHUNK == 0, "chunk multiple %llu",
		      (unsigned long long)p);
		CHECK(p + e->cfg.ram_head >= lo &&
		      p + e->cfg.ram_head <= lo * 16 / 10 + GS_SSD_CHUNK,
		      "formula %llu", (unsigned long long)p);
	}
	/* a consumer slow enough that the head covers the seek: no prefix */
	{
		struct gs_engine *s = calloc(1, sizeof(*s));

		gs_config_init(&s->cfg);
		for (int i = 0; i < 10; i++) {
			measure_io(s, GS_TIER_HDD, 5000000);
			measure_delivery(s, 1000000, 1000000000);	/* 1 MB/s */
		}
		CHECK(measure_prefix(s) == 0, "slow reader %llu",
		      (unsigned long long)measure_prefix(s));
		free(s);
	}

	/* stalls: only gaps over 10 ms */
	measure_wait(e, 9000000);
	measure_wait(e, MEASURE_STALL_NS);
	measure_wait(e, MEASURE_STALL_NS + 1);
	measure_wait(e, 200000000);
	CHECK(e->st.delivery_stalls == 2, "stalls %llu",
	      (unsigned long long)e->st.delivery_stalls);

	prefix = measure_prefix(e);
	/* idle for long: the windows are stale, the prefix keeps what was
	 * last measured; the first new sample starts afresh */
	for (int w = 0; w < 2; w++)
		if (e->measure.io[GS_TIER_HDD].epoch[w])
			e->measure.io[GS_TIER_HDD].epoch[w] -= 1000;
	CHECK(measure_io_ns(e, GS_TIER_HDD, 99) == 0, "stale while idle");
	CHECK(measure_prefix(e) == prefix, "the prefix keeps the last: %llu",
	      (unsigned long long)measure_prefix(e));
	measure_io(e, GS_TIER_HDD, 1000000);
	CHECK(near(measure_io_ns(e, GS_TIER_HDD, 99), 1000000),
	      "a new sample after idle: only it, %llu",
	      (unsigned long long)measure_io_ns(e, GS_TIER_HDD, 99));
	for (int i = 0; i < 98; i++)
		measure_io(e, GS_TIER_HDD, 5000000);
	for (int i = 0; i < 2; i++)
		measure_io(e, GS_TIER_HDD, 40000000);

	measure_stats(e, &st);
	CHECK(near(st.hdd_read_p99_us, 40000), "stat p99 %llu",
	      (unsigned long long)st.hdd_read_p99_us);
	CHECK(st.prefix_next_bytes == measure_prefix(e), "stat prefix");
	CHECK(near(st.delivery_rate, 125000000), "stat rate");
	free(e);
	return check_result();
}
