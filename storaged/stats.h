/*
 * The one stats emitter (stats.c): `stats`, `stats goblin`, `stats slabs`,
 * the nginx link's STATS reply and `--help=stats`, from the tables and the
 * snapshot of stats-t.h.
 */
#ifndef GOBLIN_STATS_H
#define GOBLIN_STATS_H

#include <stddef.h>
#include <time.h>

#include "stats-t.h"

/* Calls <sink> for every stat of the <tables> (enum stats_table bits), in
 * table order, values from <s>. */
void stats_emit(unsigned tables, const struct stats_snapshot *s,
		const struct stats_sink *sink);

/* Fills <s>'s process fields (pid, uptime, time, version, rusage) from the
 * running process started at <started>. */
void stats_process(struct stats_snapshot *s, time_t started);

/*
 * Writes "name value\n" for every stat of <tables> into <buf> of <size>
 * bytes (the link's STATS reply); returns the length, or <size> when it
 * did not fit.
 */
size_t stats_format(unsigned tables, const struct stats_snapshot *s,
		    char *buf, size_t size);

/* Counts a first byte <us> microseconds after its command into <h>;
 * reads <h> into <into>; zeroes <h>.  Any thread (relaxed atomics). */
void stats_first_byte_add(struct first_byte_hist *h, uint64_t us);
void stats_first_byte_load(const struct first_byte_hist *h,
			   struct first_byte_hist *into);
void stats_first_byte_reset(struct first_byte_hist *h);

/* The RDMA endpoint's counters (rdma_thread.c, after each step; NULL: the
 * endpoint stopped), and a copy of the last for <st>: false (and zeroes)
 * without one.  Any thread; one endpoint per process. */
void stats_rdma_publish(const struct rdma_server_stats *st);
bool stats_rdma_read(struct rdma_server_stats *st);

/* Prints `--help=stats`: the tables as README markdown. */
void stats_markdown(void);

#endif /* GOBLIN_STATS_H */
