/*
 * Read-ahead streams (stream.c): what read_into.c and gs_io_run() call.
 */
#ifndef GOBLIN_STREAM_H
#define GOBLIN_STREAM_H

#include "uring-t.h"

/* ---- read_into.c, for stream.c too ---- */

/* Verifies a landed chunk (<res> is its read's result); on failure counts
 * it and drops the object.  0, -EBADMSG or -EIO. */
int chunk_check(struct gs_io *io, struct gs_obj *obj, uint32_t ci,
		const char *data, int res);
/* Fills <order> with the disk chunks of [first, last) in the order to
 * submit them (the first one, then the tail's first HDD chunks, at most
 * <lead_max>, then offset order); returns how many. */
uint32_t read_order(const struct gs_obj *obj, uint32_t first, uint32_t last,
		    uint32_t lead_max, uint32_t *order);
/* Finds the chunks [*<first>, *<last>) of <obj> that hold bytes of
 * [<start>, <end>), <start> past its head. */
void chunk_span(const struct gs_obj *obj, uint64_t start, uint64_t end,
		uint32_t *first, uint32_t *last);

/* ---- stream_fill.c: streams over a fill's grid (gs_stream_* there) ---- */

struct fill_stream;
/* gs_stream_open() (<bufs> NULL) or gs_stream_open_into() of grid <obj>. */
int fill_stream_open(struct gs_io *io, struct gs_obj *obj, uint64_t off,
		     uint64_t len, void *const *bufs, unsigned nbufs,
		     gs_wake_fn wake, gs_wake_fn released, void *arg,
		     struct fill_stream **fsp);
int fill_stream_peek_at(struct fill_stream *fs, uint64_t skip,
			const void **data, size_t *len);
void fill_stream_consume(struct fill_stream *fs, size_t n);
void fill_stream_hold(struct fill_stream *fs);
void fill_stream_release(struct fill_stream *fs, uint64_t off);
unsigned fill_stream_bufs_used(const struct fill_stream *fs);
uint64_t fill_stream_left(const struct fill_stream *fs);
void fill_stream_close(struct fill_stream **fsp);

/* ---- stream.c, for gs_io_run() ---- */

/* Frees window buffers for the streams waiting for one by reclaiming
 * stalled streams; returns whether any came free. */
bool stream_reclaim_windows(struct gs_io *io);
void stream_arm_stall_timer(struct gs_io *io);

/* While streams wait for a window, a timer makes gs_io_run() look for
 * stalled holders again, since no completion may ever come to do so. */
static inline void stream_waiters_check(struct gs_io *io)
{
	if (io->timer_armed || list_empty(&io->stream_bufs.waiters) ||
	    list_empty(&io->holders))
		return;
	stream_arm_stall_timer(io);
}

#endif /* GOBLIN_STREAM_H */
