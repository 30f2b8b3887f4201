/*
 * A read-ahead stream's insides (stream.c), and the shell a stream over a
 * fill's grid is (stream_fill.c): not part of the API.
 */
#ifndef GOBLIN_STREAM_T_H
#define GOBLIN_STREAM_T_H

#include "stream.h"
#include "window.h"

enum { CH_IDLE, CH_INFLIGHT, CH_READY, CH_DONE };

struct stream_slot {
	uint8_t state;
	const struct ramchunk *ram;	/* cached in RAM: read from there */
	bool head_copied;		/* its bytes of the head are in head_slot */
	bool early;			/* read into s->early, not the window */
	int8_t win;			/* window buffer holding it, -1 none */
	uint8_t slices;			/* its slices in that buffer */
	uint32_t boff;			/* where it starts in that buffer */
	uint64_t off;			/* object offset of the chunk */
};

struct gs_stream {
	struct fill_stream *fs;		/* over a fill's grid: all it is */
	struct gs_io *io;
	struct gs_obj *obj;
	const char *head;		/* the RAM head when opened, or NULL */
	uint64_t head_len;
	uint64_t head_slot;		/* head_loading: where the head goes */
	uint32_t head_chunks;		/* head_loading: chunks still to copy */
	bool head_loading;		/* bringing the object's head into RAM */
	bool read_again;		/* ramchunk_read(): push colder ones out */
	uint64_t pos, end;
	uint32_t first, last, cur;
	uint32_t *order;
	uint32_t norder, next_submit;
	struct stream_slot *slots;	/* index: chunk - first */
	struct window win;		/* taken at once, held until close or
					 * reclaim, grown and shrunk meanwhile */
	char *early;			/* the first chunk, read while waiting */
	size_t early_len;		/*   for a window (early_start) */
	unsigned window_max;
	bool have_window;
	bool caller_bufs;		/* the window is the caller's, for good */
	bool keep;			/* consumed chunks keep their slices */
	uint32_t rel;			/*   until gs_stream_release() */
	struct list hold;		/* on io->holders while it has a window */
	uint64_t stall_since;		/* ns: bytes ready, consumer idle since */
	uint64_t start;			/* where it was opened */
	uint64_t open_ns;		/* when (mono_ns()) */
	struct drain drain;		/* what its consumer drained, waited */
	unsigned inflight;
	int error;
	bool closed;
	gs_wake_fn wake;
	gs_wake_fn released;		/* caller_bufs: the kernel is done with them */
	void *arg;
	struct io_waiter waiter;
	struct deferred def;		/* fires <released> */
};

/* gs_stream_open() and gs_stream_open_into() of a fill's grid <obj>
 * (<bufs> NULL for the former): a shell around a fill_stream. */
int fill_open(struct gs_io *io, struct gs_obj *obj, uint64_t off,
	      uint64_t len, void *const *bufs, unsigned nbufs, gs_wake_fn wake,
	      gs_wake_fn released, void *arg, struct gs_stream **sp);

#endif /* GOBLIN_STREAM_T_H */
