/*
 * A read-ahead stream's window (window.c): the buffers it holds, of
 * io->stream_bufs or its caller's, each cut into slices of one SSD chunk
 * (an SSD chunk takes one, an HDD chunk as many as it spans, in one
 * buffer), and how many it should hold.  stream.c decides when a window
 * grows or shrinks; this file keeps the buffers and the slices, and what
 * the stream's consumer drained (struct drain), which sizes windows.
 *
 *   buf[0 .. cap): | held | held, draining | not held | held | ...
 *   size held (<= cap), want <= cap of them wanted; a draining buffer
 *   takes no new chunk and goes back to io->stream_bufs once free.
 */
#ifndef GOBLIN_WINDOW_H
#define GOBLIN_WINDOW_H

#include "uring-t.h"

#define SLICE		GS_SSD_CHUNK
#define SLICES		(GS_IO_BUFFER / SLICE)
#define ALL_SLICES	((1u << SLICES) - 1)

/* A buffer of a window: registered (one of io->stream_bufs) or given by
 * the caller of gs_stream_open_into(); mem NULL: not held. */
struct window_buf {
	char *mem;
	int idx;			/* registered buffer, -1 the caller's */
	uint8_t free_slices;		/* bit set = free */
	bool draining;			/* no new chunk goes in; back once free */
};

struct window {
	struct window_buf *buf;		/* cap entries */
	unsigned size;			/* buffers held */
	unsigned want;			/* buffers it should hold */
	unsigned min;			/* the least it shrinks to */
	unsigned cap;			/* what its chunks span, at most */
};

/* A window of at most <cap> buffers, none held; 0 or -ENOMEM. */
int window_init(struct window *w, unsigned cap);
void window_free(struct window *w);
/* Holds the <n> buffers <bufs> of a caller, for good. */
void window_give(struct window *w, void *const *bufs, unsigned n);
/* Keeps the first <n> of a caller's buffers (window_give), the rest
 * untouched, as when RAM holds chunks it need not read. */
void window_cut(struct window *w, unsigned n);
/* Takes w->want buffers of io->stream_bufs at once; false (none taken)
 * when fewer are free. */
bool window_take(struct gs_io *io, struct window *w);
/* Gives every buffer of <w> back to io->stream_bufs. */
void window_put(struct gs_io *io, struct window *w);
/* Brings <w> towards w->want: draining buffers kept first, then free ones
 * taken while nobody waits for a window (a window never waits to grow);
 * the freest buffers past w->want drain, and go back once free. */
void window_fit(struct gs_io *io, struct window *w);
/* A consumer on a chunk of <cur> slices on tier <t>, draining at <rate>
 * bytes/s (0: not known yet), waits for the disk: grows <w> by a buffer,
 * up to w->cap, when what <w> holds past that chunk is short of what the
 * consumer takes while a read of <t> completes (p99); when it holds more,
 * the wait is the disk's queue, which more read-ahead would only lengthen.
 * Returns whether it grew. */
bool window_grow(struct gs_io *io, struct window *w, enum gs_tier t,
		 unsigned cur, uint64_t rate);
/* A consumer moved on to a new chunk: <w> shrinks by a buffer, down to
 * w->min, when the socket is the limit (<ahead>: the chunk after the new
 * one landed already) or others wait for a window. */
void window_shrink(struct gs_io *io, struct window *w, bool ahead);
/* Places a chunk of <n> slices in one held, undrained buffer: its index
 * in *<win>, its slices in *<bits>, its offset in that buffer in *<boff>;
 * false when no such room is free. */
bool window_place(struct window *w, unsigned n, int8_t *win, uint8_t *bits,
		  uint32_t *boff);
/* Frees the slices *<win> and <bits> took; *<win> becomes -1. */
void window_unplace(struct window *w, int8_t *win, uint8_t bits);
/*
 * Sizes <w> for chunks that span <span> buffers: a first chunk of <first>
 * slices and a next one of <next> slices on tier <t>, room for the next
 * being what the consumer drains, at the measured delivery rate, while a
 * typical (median) read of <t> completes when that is more; at least
 * <min> buffers (what leading HDD chunks need to let the chunks they
 * jumped be sent first), or <span> when less.
 */
void window_plan(struct gs_engine *e, struct window *w, unsigned span,
		 unsigned first, unsigned next, enum gs_tier t, unsigned min);

/*
 * What a stream's consumer drained and waited, for measure.h: the bytes it
 * took over spans in which it never waited for the disk (reported from
 * DRAIN_SAMPLE bytes on, so the socket buffer's first fill at memory speed
 * weighs little) and each wait, from the ask to the bytes.
 */
struct drain {
	uint64_t since, last;		/* ns: the span's start, its last take */
	uint64_t bytes;			/* taken in the span */
	uint64_t wait_since;		/* ns: waiting since, or 0 */
	uint64_t rate;			/* bytes/s of its last span of
					 * DRAIN_RATE_MIN bytes or more, 0 */
};

/* The consumer asks for bytes that have not landed: ends the span (its
 * rate kept in d->rate), starts a wait; false when it was waiting already. */
bool drain_wait(struct gs_engine *e, struct drain *d);
/* The consumer has bytes to read: ends its wait (measure_wait), starts a
 * span if none is open. */
void drain_ready(struct gs_engine *e, struct drain *d);
/* The consumer took <n> bytes at <now> (ns). */
void drain_took(struct gs_engine *e, struct drain *d, uint64_t n, uint64_t now);
/* The stream closes: what is open is reported. */
void drain_end(struct gs_engine *e, struct drain *d);

#endif /* GOBLIN_WINDOW_H */
