/*
 * Read-ahead windows: the buffers a stream holds and the slices its chunks
 * take in them (window.h).  Called from stream.c only, on the gs_io's
 * thread.
 */
#include <errno.h>
#include <stdlib.h>

#include "measure.h"
#include "uring.h"
#include "window.h"

#define DRAIN_SAMPLE	(1u << 20)	/* the least a drain span reports */
#define DRAIN_RATE_MIN	GS_SSD_CHUNK	/* the least a span sets d->rate by */

int window_init(struct window *w, unsigned cap)
{
	*w = (struct window){ .cap = cap };
	w->buf = calloc(cap ? cap : 1, sizeof(*w->buf));
	return w->buf ? 0 : -ENOMEM;
}

void window_free(struct window *w)
{
	free(w->buf);
	w->buf = NULL;
}

void window_give(struct window *w, void *const *bufs, unsigned n)
{
	w->size = w->want = w->min = n;
	for (unsigned i = 0; i < n; i++)
		w->buf[i] = (struct window_buf){ bufs[i], -1, ALL_SLICES, false };
}

void window_cut(struct window *w, unsigned n)
{
	for (unsigned i = n; i < w->size; i++)
		w->buf[i] = (struct window_buf){ NULL, -1, 0, false };
	if (n < w->size)
		w->size = w->want = w->min = n;
}

/* Takes a buffer of io->stream_bufs (one is free) into empty entry <i>. */
static void take_one(struct gs_io *io, struct window *w, unsigned i)
{
	int idx = iobuf_get(io, &io->stream_bufs);

	w->buf[i] = (struct window_buf){ iobuf_ptr(io, idx), idx, ALL_SLICES,
					 false };
	w->size++;
}

/* Gives buffer <i> of <w> back to io->stream_bufs. */
static void put_one(struct gs_io *io, struct window *w, unsigned i)
{
	iobuf_put(&io->stream_bufs, w->buf[i].idx);
	w->buf[i] = (struct window_buf){ NULL, -1, 0, false };
	w->size--;
	if (!list_empty(&io->stream_bufs.waiters))
		kick(io);
}

bool window_take(struct gs_io *io, struct window *w)
{
	if (io->stream_bufs.nfree < w->want)
		return false;
	for (unsigned i = 0; i < w->want; i++)
		take_one(io, w, i);
	return true;
}

void window_put(struct gs_io *io, struct window *w)
{
	for (unsigned i = 0; i < w->cap; i++)
		if (w->buf[i].mem)
			put_one(io, w, i);
}

void window_fit(struct gs_io *io, struct window *w)
{
	struct iobufs *bs = &io->stream_bufs;
	unsigned usable = 0;

	for (unsigned i = 0; i < w->cap; i++)
		if (w->buf[i].mem && !w->buf[i].draining)
			usable++;
	for (unsigned i = 0; i < w->cap && usable < w->want; i++)
		if (w->buf[i].mem && w->buf[i].draining) {
			w->buf[i].draining = false;
			usable++;
		}
	for (unsigned i = 0; i < w->cap && usable < w->want && bs->nfree &&
			     list_empty(&bs->waiters); i++)
		if (!w->buf[i].mem) {
			take_one(io, w, i);
			usable++;
		}
	while (usable > w->want) {
		int best = -1;

		for (unsigned i = 0; i < w->cap; i++)
			if (w->buf[i].mem && !w->buf[i].draining &&
			    (best < 0 || __builtin_popcount(w->buf[i].free_slices) >=
					 __builtin_popcount(w->buf[best].free_slices)))
				best = i;
		w->buf[best].draining = true;
		usable--;
	}
	for (unsigned i = 0; i < w->cap; i++)
		if (w->buf[i].mem && w->buf[i].draining &&
		    w->buf[i].free_slices == ALL_SLICES)
			put_one(io, w, i);
}

/* Whether <w>, past a chunk of <cur> slices on tier <t>, holds less than
 * a consumer draining at <rate> bytes/s takes while a read of <t>
 * completes (p99); true while either is unknown. */
static bool window_short(struct gs_engine *e, const struct window *w,
			 enum gs_tier t, unsigned cur, uint64_t rate)
{
	uint64_t lat = measure_io_ns(e, t, 99);
	unsigned held = w->size * SLICES;
	uint64_t room = held > cur ? (uint64_t)(held - cur) * SLICE : 0;

	if (!rate || !lat)
		return true;
	return room < rate / 1000 * (lat / 1000) / 1000;
}

bool window_grow(struct gs_io *io, struct window *w, enum gs_tier t,
		 unsigned cur, uint64_t rate)
{
	if (w->want >= w->cap || !window_short(io->e, w, t, cur, rate))
		return false;
	w->want++;
	window_fit(io, w);
	return true;
}

void window_shrink(struct gs_io *io, struct window *w, bool ahead)
{
	if ((ahead || !list_empty(&io->stream_bufs.waiters)) && w->want > w->min)
		w->want--;
	window_fit(io, w);
}

bool window_place(struct window *w, unsigned n, int8_t *win, uint8_t *bits,
		  uint32_t *boff)
{
	for (unsigned i = 0; i < w->cap; i++)
		for (unsigned k = 0; k + n <= SLICES; k++) {
			uint8_t b = ((1u << n) - 1) << k;

			if (!w->buf[i].mem || w->buf[i].draining ||
			    (w->buf[i].free_slices & b) != b)
				continue;
			w->buf[i].free_slices &= ~b;
			*win = i;
			*bits = b;
			*boff = k * SLICE;
			return true;
		}
	return false;
}

void window_unplace(struct window *w, int8_t *win, uint8_t bits)
{
	if (*win < 0)
		return;
	w->buf[*win].free_slices |= bits;
	*win = -1;
}

/* Slices that cover what the consumer drains, at the measured delivery
 * rate, while a typical read of tier <t> completes; 0 until measured. */
static unsigned latency_slices(struct gs_engine *e, enum gs_tier t)
{
	uint64_t rate = measure_delivery_rate(e);
	uint64_t lat = measure_io_ns(e, t, 50);
	uint64_t max = (uint64_t)GS_IO_BUFFERS_MAX * GS_IO_BUFFER;
	uint64_t bytes = rate / 1000 * (lat / 1000) / 1000;

	bytes = bytes < max ? bytes : max;
	return (unsigned)((bytes + SLICE - 1) / SLICE);
}

void window_plan(struct gs_engine *e, struct window *w, unsigned span,
		 unsigned first, unsigned next, enum gs_tier t, unsigned min)
{
	unsigned lat = next ? latency_slices(e, t) : 0, n;

	w->min = span < min ? span : min;
	next = lat > next ? lat : next;
	n = (first + next + SLICES - 1) / SLICES;
	n = n > w->min ? n : w->min;
	w->want = n < span ? n : span;
}

/* Reports the span <d> when it holds DRAIN_SAMPLE bytes, then starts the
 * next at its last take; <end> closes it, reported or not. */
static void drain_report(struct gs_engine *e, struct drain *d, bool end)
{
	if (!d->since)
		return;
	if (d->bytes >= DRAIN_SAMPLE) {
		measure_delivery(e, d->bytes, d->last - d->since);
		d->bytes = 0;
		d->since = d->last;
	}
	if (end) {
		d->bytes = 0;
		d->since = 0;
	}
}

bool drain_wait(struct gs_engine *e, struct drain *d)
{
	if (d->wait_since)
		return false;
	d->wait_since = mono_ns();
	if (d->since && d->last > d->since && d->bytes >= DRAIN_RATE_MIN)
		d->rate = d->bytes * 1000000000ull / (d->last - d->since);
	drain_report(e, d, true);
	return true;
}

void drain_ready(struct gs_engine *e, struct drain *d)
{
	uint64_t now;

	if (d->since && !d->wait_since)
		return;
	now = mono_ns();
	if (d->wait_since)
		measure_wait(e, now - d->wait_since);
	d->wait_since = 0;
	d->since = d->last = now;
}

void drain_took(struct gs_engine *e, struct drain *d, uint64_t n, uint64_t now)
{
	d->bytes += n;
	d->last = now;
	drain_report(e, d, false);
}

void drain_end(struct gs_engine *e, struct drain *d)
{
	if (d->wait_since)
		measure_wait(e, mono_ns() - d->wait_since);
	drain_report(e, d, true);
}
