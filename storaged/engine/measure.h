/*
 * What the engine measures to size itself (measure.c): each tier's read
 * completion times and the rate streams' consumers drain at, over the last
 * second or two, and the SSD prefix a new object needs from them (from the
 * last second or two that had samples: an idle store, or one only written
 * to, keeps what it last saw).  Every
 * call is lock-free (relaxed atomics): a sample lost to a race shifts a
 * percentile by one count.  Types in engine-t.h (struct measure).
 */
#ifndef GOBLIN_MEASURE_H
#define GOBLIN_MEASURE_H

#include "engine-t.h"

/* A gap over this after a stream's first byte is a delivery stall. */
#define MEASURE_STALL_NS	(10ull * 1000000)

/* A disk read's time on tier <t>, submission to completion. */
void measure_io(struct gs_engine *e, enum gs_tier t, uint64_t ns);
/* A stream handed <bytes> to its consumer over <ns> in which it never
 * waited for the disk: the consumer's (its socket's) drain rate. */
void measure_delivery(struct gs_engine *e, uint64_t bytes, uint64_t ns);
/* A stream's consumer waited <ns> for a chunk after its first byte went;
 * over MEASURE_STALL_NS it counts as a delivery stall. */
void measure_wait(struct gs_engine *e, uint64_t ns);
/* Recent completion time on tier <t> at percentile <pct> (1-100), ns; 0
 * when there is no sample. */
uint64_t measure_io_ns(const struct gs_engine *e, enum gs_tier t, unsigned pct);
/* The rate the fastest tenth of recent streams drained at, bytes/s; 0
 * when there is no sample. */
uint64_t measure_delivery_rate(const struct gs_engine *e);
/* The SSD prefix a new object needs: what the consumer drains while its
 * first HDD chunk is read (delivery rate x the HDD's p99 completion time,
 * queueing included), less the head, rounded up to GS_SSD_CHUNK, within
 * [0, cfg.ssd_prefix]; cfg.ssd_prefix until both were ever measured. */
uint64_t measure_prefix(const struct gs_engine *e);
/* Fills the measured gauges of <st> (gs_stats). */
void measure_stats(const struct gs_engine *e, struct gs_stats *st);

#endif /* GOBLIN_MEASURE_H */
