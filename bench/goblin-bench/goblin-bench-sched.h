/*
 * goblin-bench --open-loop: the measured phase's arrival schedule.
 *
 *   arrivals:  a0      a1   a2        a3 ...   (fixed: start + k/rate;
 *              |-------|----|---------|         poisson: exponential gaps)
 *   issue:     a request leaves at its arrival when a connection is free,
 *              else as soon as one frees up (queued); its latency counts
 *              from its arrival, the "intended start", never from the send
 *
 * Two cursors walk the same deterministic sequence: one counts arrivals
 * up to now, one hands out the next request to issue; their distance is
 * the backlog.  No allocation; arrivals are taken in [start, end).
 */
#ifndef GOBLIN_BENCH_SCHED_H
#define GOBLIN_BENCH_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "goblin-bench-gen.h"

enum gb_arrivals {
	GB_ARRIVALS_NONE,	/* closed loop */
	GB_ARRIVALS_FIXED,	/* one every 1/rate seconds */
	GB_ARRIVALS_POISSON,	/* exponential gaps of mean 1/rate seconds */
};

extern const char *const gb_arrivals_names[];

struct gb_sched_cursor {
	struct gb_rng rng;
	uint64_t n;		/* arrivals passed */
	uint64_t at;		/* time of arrival number n, ns */
};

struct gb_sched {
	enum gb_arrivals mode;
	double gap_ns;		/* mean gap */
	uint64_t start, end;
	struct gb_sched_cursor arrived, issued;
	uint64_t queued_hi;	/* arrivals up to here were counted queued */
	uint64_t queued, backlog_max;
};

/* Arrivals at <rate> per second in [<start>, <end>) ns, the sequence drawn
 * from <seed> for <mode> (not GB_ARRIVALS_NONE). */
void gb_sched_init(struct gb_sched *s, enum gb_arrivals mode, double rate,
		   uint64_t seed, uint64_t start, uint64_t end);
/* True when the next request's intended start is at or before <now> and
 * inside the schedule. */
bool gb_sched_due(const struct gb_sched *s, uint64_t now);
/* Takes the next request; returns its intended start (ns). */
uint64_t gb_sched_take(struct gb_sched *s);
/* Intended start of the next request, or UINT64_MAX after the last. */
uint64_t gb_sched_next(const struct gb_sched *s);
/* After an issue pass at <now>: counts the arrivals still waiting for a
 * connection (each once, in <queued>) and the largest such backlog. */
void gb_sched_note_backlog(struct gb_sched *s, uint64_t now);
/* Arrivals in [start, end): the offered requests of the whole schedule. */
uint64_t gb_sched_total(const struct gb_sched *s);

#endif
