/*
 * Reads: streams that read an object's disk chunks ahead of the sender
 * (tail first); whole-object reads into caller memory are in read_into.c.
 *
 * A stream's read-ahead window is buffers of io->stream_bufs, cut into
 * SSD-chunk slices, sized to what it must cover: the bytes in flight a
 * consumer needs are its drain rate times the device's latency.  It starts
 * with what its first chunk and the next take (more when the measured
 * delivery rate x median read time asks for it), all at once, so a stream
 * that holds buffers can always go on and streams can't deadlock on each
 * other.  It grows by one free buffer (never waiting, never while others
 * wait for a window), up to io_buffers, each time its consumer catches up
 * with the disk (asks for a chunk not landed yet) while the window holds
 * less than the consumer's rate x the read's p99, and shrinks by one,
 * down to one buffer (two when a whole HDD chunk leads), when the socket is
 * the limit (the chunk after the one its consumer starts on landed
 * already) or others wait: the buffer goes back once its slices are free
 * (window.c keeps the buffers and slices).  While others wait for a
 * window, gs_io_run() takes the whole window back from a stream whose
 * consumer left its landed bytes unread for READAHEAD_STALL_MS (they are
 * read, and checked, again when it returns).  A stream opened with
 * gs_stream_open_into() reads into its caller's buffers instead: it never
 * waits, never grows or shrinks and is never reclaimed.
 *
 * Each stream reports its consumer's drain rate (bytes over the time it
 * never waited for the disk) and each wait after its first byte to
 * measure.h (window.c's struct drain).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "heads.h"
#include "index.h"
#include "layout.h"
#include "log.h"
#include "ramchunk.h"
#include "stream-t.h"
#include "uring.h"
#include "window.h"

#define READAHEAD_STALL_MS 100		/* a consumer this slow loses its window */
#define CALLER_BUF_ALIGN 4096		/* direct I/O on any pool */
#define CALLER_BUFS_MAX	GS_IO_BUFFERS_MAX /* stream_slot.win fits */

static void stream_refill(struct gs_stream *s);
static void stream_plan(struct gs_stream *s);

static void put_slices(struct gs_stream *s, struct stream_slot *sl)
{
	window_unplace(&s->win, &sl->win, sl->slices);
}

/* The HDD chunks a stream of a window of at most <window_max> buffers
 * reads back to back, ahead of the SSD chunks before them: one buffer each,
 * one left for those; LEAD_MAX at most (4 MiB per seek: the seek is then
 * under a fifth of the transfer), none in one buffer. */
#define LEAD_MAX	4
static uint32_t lead_max(unsigned window_max)
{
	return window_max < 2 ? 0 : window_max - 1 < LEAD_MAX ?
	       window_max - 1 : LEAD_MAX;
}

/* read_order() of [<first>, s->last) less what RAM holds; how many. */
static uint32_t stream_order(struct gs_stream *s, uint32_t first)
{
	uint32_t n = read_order(s->obj, first, s->last, lead_max(s->window_max),
				s->order), k = 0;

	for (uint32_t i = 0; i < n; i++)
		if (!s->slots[s->order[i] - s->first].ram)
			s->order[k++] = s->order[i];
	return k;
}

/* Gives the window buffers of <s> back to io->stream_bufs. */
static void stream_put_window(struct gs_stream *s)
{
	if (!s->have_window || s->caller_bufs)
		return;
	window_put(s->io, &s->win);
	s->have_window = false;
	list_del(&s->hold);
}

/* Ends a head load that did not complete. */
static void head_load_cancel(struct gs_stream *s)
{
	struct gs_engine *e = s->io->e;

	if (!s->head_loading)
		return;
	s->head_loading = false;
	pthread_mutex_lock(&e->lock);
	engine_head_cancel(e, s->obj, s->head_slot);
	pthread_mutex_unlock(&e->lock);
}

/* Copies the head's bytes in landed chunk <c> to the head slot; publishes
 * the head once every chunk holding some of it is copied. */
static void head_load_chunk(struct gs_stream *s, uint32_t c, const char *data)
{
	struct gs_engine *e = s->io->e;
	struct stream_slot *sl = &s->slots[c - s->first];
	uint64_t hb = engine_head_bytes(e, s->obj);
	uint64_t n;

	if (!s->head_loading || sl->head_copied || sl->off >= hb)
		return;
	n = hb - sl->off < obj_chunks(s->obj)[c].len ? hb - sl->off :
	    obj_chunks(s->obj)[c].len;
	memcpy((char *)e->region.base + s->head_slot + sl->off, data, n);
	sl->head_copied = true;
	if (--s->head_chunks)
		return;
	s->head_loading = false;
	pthread_mutex_lock(&e->lock);
	engine_head_publish(e, s->obj, s->head_slot);
	pthread_mutex_unlock(&e->lock);
}

/* Frees the early buffer once its read is over. */
static void early_put(struct gs_stream *s)
{
	if (!s->early)
		return;
	free(s->early);
	s->early = NULL;
	s->io->early_bufs--;
}

static void stream_free(struct gs_stream *s)
{
	struct gs_io *io = s->io;

	early_put(s);
	head_load_cancel(s);
	stream_put_window(s);
	waiter_del(&s->waiter);
	gs_obj_put(io->e, &s->obj);
	free(s->order);
	free(s->slots);
	window_free(&s->win);
	free(s);
}

static void stream_released(void *arg, int res)
{
	struct gs_stream *s = arg;
	gs_wake_fn released = s->released;

	(void)res;
	arg = s->arg;
	stream_free(s);
	released(arg);
}

/* Closed and no read in flight: frees <s>, telling the caller whose buffers
 * it read into (from gs_io_run). */
static void stream_end(struct gs_stream *s)
{
	if (s->released)
		defer(s->io, &s->def, stream_released, s, 0);
	else
		stream_free(s);
}

/* A window came free (called from gs_io_run). */
static void stream_retry(void *arg)
{
	struct gs_stream *s = arg;

	stream_refill(s);
	if (s->error && s->wake)
		s->wake(s->arg);
}

/* Whether <s> holds a window its consumer has left unused for
 * READAHEAD_STALL_MS: nothing in flight, the next chunk ready, wherever it
 * lies (the window, the early buffer, RAM: a consumer stalled on a chunk
 * from RAM holds the window its later chunks landed in all the same). */
static bool stream_stalled(const struct gs_stream *s, uint64_t now)
{
	const struct stream_slot *sl;

	if (s->inflight || s->cur >= s->last)
		return false;
	sl = &s->slots[s->cur - s->first];
	return sl->state == CH_READY &&
	       now - s->stall_since >= READAHEAD_STALL_MS * 1000000ull;
}

/* Takes the window from a stalled stream: its landed chunks are forgotten
 * and read again (checksums checked again) when its consumer comes back. */
static void stream_reclaim(struct gs_stream *s)
{
	for (uint32_t c = s->cur; c < s->last; c++) {
		struct stream_slot *sl = &s->slots[c - s->first];

		if (obj_chunks(s->obj)[c].tier == GS_TIER_RAM || sl->ram)
			continue;
		put_slices(s, sl);
		if (sl->early)
			early_put(s);
		sl->early = false;
		sl->state = CH_IDLE;
	}
	s->norder = stream_order(s, s->cur);
	s->next_submit = 0;
	stream_put_window(s);
	stream_plan(s);
	STAT_ADD(s->io->e, readahead_reclaims, 1);
}

/* Only from gs_io_run(), between callbacks: a consumer may use what
 * gs_stream_peek() returned until it is back in its event loop, never
 * longer.  Holders are tried newest first. */
bool stream_reclaim_windows(struct gs_io *io)
{
	struct list *head = &io->stream_bufs.waiters, *n, *prev;
	unsigned need = 0, before = io->stream_bufs.nfree;
	uint64_t now = mono_ns();

	for (n = head->next; n != head; n = n->next)
		need += list_entry(n, struct gs_stream, waiter.node)->win.want;
	for (n = io->holders.prev;
	     n != &io->holders && io->stream_bufs.nfree < need; n = prev) {
		struct gs_stream *h = list_entry(n, struct gs_stream, hold);

		prev = n->prev;
		if (stream_stalled(h, now))
			stream_reclaim(h);
	}
	return io->stream_bufs.nfree > before;
}

void stream_arm_stall_timer(struct gs_io *io)
{
	uring_arm_timer(io, READAHEAD_STALL_MS * 1000000ll / 2);
}

static bool take_window(struct gs_stream *s)
{
	struct gs_io *io = s->io;

	if (s->have_window)
		return true;
	if (!window_take(io, &s->win)) {
		waiter_add(&io->stream_bufs.waiters, &s->waiter, stream_retry, s);
		stream_waiters_check(io);	/* the timer finds stalled holders */
		return false;
	}
	s->have_window = true;
	list_add_tail(&io->holders, &s->hold);
	return true;
}

static unsigned chunk_slices(const struct gs_stream *s, uint32_t c)
{
	const struct chunk *ch = &obj_chunks(s->obj)[c];
	uint32_t alen = round_up(ch->len, tier_align(s->io->e, ch->tier));

	return (alen + SLICE - 1) / SLICE;
}

static char *slot_ptr(const struct gs_stream *s, const struct stream_slot *sl)
{
	return sl->early ? s->early : s->win.buf[sl->win].mem + sl->boff;
}

static void stream_read_done(struct io_op *op)
{
	struct gs_stream *s = op->owner;
	struct stream_slot *sl = &s->slots[op->chunk - s->first];
	int res;

	s->inflight--;
	if (s->closed) {
		if (!s->inflight)
			stream_end(s);
		return;
	}
	res = chunk_check(s->io, s->obj, op->chunk, op->buf, op->res);
	if (res < 0 && !s->error)
		s->error = res;
	if (res == 0) {
		head_load_chunk(s, op->chunk, op->buf);
		ramchunk_offer(s->io->e, s->obj, op->chunk, op->buf,
			       s->read_again);
	}
	sl->state = CH_READY;
	if (op->chunk == s->cur)
		s->stall_since = mono_ns();
	if (s->wake && (op->chunk == s->cur || s->error))
		s->wake(s->arg);
}

static void stream_read_done(struct io_op *op);

/*
 * A stream that has to wait for a window still reads the chunk its client
 * waits for first (a head not in RAM, or the bytes after a RAM head) into
 * a buffer of its own, so that read is armed at arrival.  At most
 * io_streams such buffers per gs_io; freed once the chunk is sent.
 */
static void early_start(struct gs_stream *s)
{
	struct gs_io *io = s->io;
	uint32_t c = s->norder ? s->order[0] : 0;
	const struct chunk *ch = &obj_chunks(s->obj)[c];
	struct stream_slot *sl;

	if (s->caller_bufs || s->next_submit || !s->norder || c != s->cur ||
	    io->early_bufs >= io->e->cfg.io_streams)
		return;
	sl = &s->slots[c - s->first];
	s->early_len = round_up(ch->len, tier_align(io->e, ch->tier));
	s->early = aligned_alloc(4096, s->early_len);
	if (!s->early)
		return;
	io->early_bufs++;
	if (uring_op_start(io, s->obj, c, false, s->early, -1,
			   stream_read_done, s) < 0) {
		early_put(s);
		return;
	}
	sl->early = true;
	sl->state = CH_INFLIGHT;
	s->inflight++;
	s->next_submit = 1;
	STAT_ADD(io->e, early_reads, 1);
	uring_submit(io);
}

/* When the consumer of <s> needs <sl>'s bytes had it gone on since it was
 * opened at the delivery rate (the chunk it opened in: then), so the
 * oldest request's chunks go first. */
static uint64_t slot_due(const struct gs_stream *s, const struct stream_slot *sl)
{
	return uring_due(s->io, s->open_ns,
			 sl->off > s->start ? sl->off - s->start : 0);
}

static void stream_refill(struct gs_stream *s)
{
	struct gs_engine *e = s->io->e;

	if (s->closed || s->error || s->next_submit == s->norder)
		return;
	if (!take_window(s)) {
		early_start(s);
		return;
	}
	while (s->next_submit < s->norder) {
		uint32_t c = s->order[s->next_submit];
		struct stream_slot *sl = &s->slots[c - s->first];
		int ret;

		if (!window_place(&s->win, chunk_slices(s, c), &sl->win,
				  &sl->slices, &sl->boff))
			break;
		ret = uring_read_start(s->io, s->obj, c, slot_ptr(s, sl),
				       s->win.buf[sl->win].idx,
				       stream_read_done, s, slot_due(s, sl));
		if (ret < 0) {
			put_slices(s, sl);
			s->error = -EIO;
			STAT_ADD(e, io_errors, 1);
			break;
		}
		sl->state = CH_INFLIGHT;
		s->inflight++;
		s->next_submit++;
		if (c != s->cur)
			STAT_ADD(e, readahead_chunks, 1);
		STAT_MAX(e, readahead_max_depth, s->inflight);
	}
	uring_submit(s->io);
}

/* The HDD chunks leading <s->order>: order[1], and the *<n> from there
 * up to where the order turns back to the chunks they jumped (0: none). */
static uint32_t order_lead(const struct gs_stream *s, uint32_t *n)
{
	for (uint32_t i = 2; i < s->norder; i++)
		if (s->order[i] < s->order[i - 1]) {
			*n = i - 1;
			return s->order[1];
		}
	*n = 0;
	return 0;
}

/* Buffers the chunks leading <s->order> need: they stay until every chunk
 * they jumped is sent, so theirs (an HDD chunk fills one, its object's last
 * may not) and, unless the last leaves a slice for each, one more for the
 * jumped (one slice each: SSD chunks); 1 when nothing leads. */
static unsigned lead_bufs(const struct gs_stream *s)
{
	uint32_t n, lead = order_lead(s, &n), most = 0, room;

	if (!n)
		return 1;
	for (uint32_t i = 1 + n; i < s->norder; i++)
		if (s->order[i] < lead && chunk_slices(s, s->order[i]) > most)
			most = chunk_slices(s, s->order[i]);
	room = SLICES - chunk_slices(s, s->order[n]);
	return n + (most > 1 || most > room);
}

/* Window buffers for the chunks in <s->order>: what they span, at most
 * <max>, and the <lead> buffers a lead needs (lead_bufs). */
static unsigned window_for(struct gs_stream *s, unsigned max, unsigned lead)
{
	unsigned slices = 0, n;

	for (uint32_t i = 0; i < s->norder; i++)
		slices += chunk_slices(s, s->order[i]);
	n = (slices + SLICES - 1) / SLICES;
	n = n > lead ? n : lead;
	return n < max ? n : max;
}

/* Sizes the window <s> (re)starts with for the chunks in <s->order>:
 * its first chunk and what comes next, the whole lead when one leads
 * (window_plan). */
static void stream_plan(struct gs_stream *s)
{
	unsigned first = s->norder ? chunk_slices(s, s->order[0]) : 0;
	unsigned next = s->norder > 1 ? chunk_slices(s, s->order[1]) : 0;
	enum gs_tier t = s->norder > 1 ? obj_chunks(s->obj)[s->order[1]].tier :
			 GS_TIER_SSD;
	unsigned lead = lead_bufs(s);
	uint32_t n;

	order_lead(s, &n);
	for (uint32_t i = 2; i <= n; i++)
		next += chunk_slices(s, s->order[i]);
	window_plan(s->io->e, &s->win, window_for(s, s->win.cap, lead), first,
		    next, t, lead);
}

/* A stream of [<off>, <off>+<len>) of <obj> whose window will be at most
 * <window_max> buffers; not pinned or started yet. */
static int stream_new(struct gs_io *io, struct gs_obj *obj, uint64_t off,
		      uint64_t len, unsigned window_max, struct gs_stream **sp)
{
	const struct gs_meta *m = &obj->meta;
	uint64_t end = off + len > m->size || off + len < off ? m->size : off + len;
	struct gs_stream *s = calloc(1, sizeof(*s));
	uint64_t coff;

	if (!s)
		return -ENOMEM;
	s->io = io;
	s->obj = obj;			/* pinned once it can't fail */
	s->head = gs_obj_head(io->e, obj, &s->head_len);
	s->pos = off < end ? off : end;
	s->start = s->pos;
	s->open_ns = mono_ns();
	s->end = end;
	s->window_max = window_max;
	list_init(&s->hold);
	waiter_init(&s->waiter);
	if (s->end > s->head_len)	/* the chunks past the head */
		chunk_span(obj, s->pos > s->head_len ? s->pos : s->head_len,
			   s->end, &s->first, &s->last);
	s->cur = s->first;
	if (s->last > s->first) {
		uint32_t n = s->last - s->first;

		s->slots = calloc(n, sizeof(*s->slots));
		s->order = calloc(n, sizeof(*s->order));
		if (!s->slots || !s->order)
			goto out_free;
		coff = engine_chunk_start(obj, s->first);
		for (uint32_t c = s->first; c < s->last; c++) {
			struct stream_slot *sl = &s->slots[c - s->first];

			sl->win = -1;
			sl->off = coff;
			coff += obj_chunks(obj)[c].len;
			if (obj_chunks(obj)[c].tier == GS_TIER_RAM)
				sl->state = CH_READY;
		}
		s->norder = read_order(obj, s->first, s->last,
				       lead_max(window_max), s->order);
		if (window_init(&s->win, window_for(s, window_max,
						    lead_bufs(s))) < 0)
			goto out_free;
		stream_plan(s);
	}
	*sp = s;
	return 0;

out_free:
	free(s->slots);
	free(s->order);
	free(s);
	return -ENOMEM;
}

/* Whether the chunks <s> reads hold the whole head of its on-disk object:
 * then it may bring the head into RAM (a Range past the head never
 * touches it). */
static uint32_t head_chunks(const struct gs_stream *s)
{
	const struct gs_obj *obj = s->obj;
	uint64_t hb = engine_ram_limit(s->io->e);
	uint32_t n = 0;

	if (!obj->on_disk || s->head_len || s->first != 0 || s->last <= s->first)
		return 0;
	for (uint32_t c = 0; c < s->last; c++) {
		n++;
		if (s->slots[c].off + obj_chunks(obj)[c].len >= hb ||
		    c + 1 == obj->nchunks)
			return n;
	}
	return 0;
}

/* Pins the object of <s> and takes what RAM holds of it: its head to
 * load (<hc> chunks hold it), its cached chunks.  An object wholly in RAM
 * needs only the pin, taken without e->lock beside the caller's. */
static void stream_pin(struct gs_stream *s, uint32_t hc)
{
	struct gs_engine *e = s->io->e;

	if (!s->obj->on_disk) {
		engine_pin(e, s->obj);
		return;
	}
	pthread_mutex_lock(&e->lock);
	engine_pin(e, s->obj);
	if (hc && engine_head_want(e, s->obj, &s->head_slot)) {
		s->head_loading = true;
		s->head_chunks = hc;
	}
	s->read_again = ramchunk_read(e, s->obj);
	/* pinned: what is cached now stays until the stream is closed */
	for (uint32_t c = s->first; c < s->last; c++) {
		struct stream_slot *sl = &s->slots[c - s->first];

		if (s->head_loading && c - s->first < hc)
			continue;	/* read: the head is copied from it */
		sl->ram = ramchunk_get(e, s->obj, c);
		if (sl->ram)
			sl->state = CH_READY;
	}
	pthread_mutex_unlock(&e->lock);
}

static void stream_start(struct gs_stream *s, gs_wake_fn wake, void *arg)
{
	s->wake = wake;
	s->arg = arg;
	stream_pin(s, head_chunks(s));
	s->norder = stream_order(s, s->first);	/* less what RAM holds */
	if (s->caller_bufs)
		window_cut(&s->win, window_for(s, s->win.size, lead_bufs(s)));
	else
		stream_plan(s);
	stream_refill(s);
}

int gs_stream_open(struct gs_io *io, struct gs_obj *obj, uint64_t off,
		   uint64_t len, gs_wake_fn wake, void *arg,
		   struct gs_stream **sp)
{
	int ret;

	if (obj->fill)
		return fill_open(io, obj, off, len, NULL, 0, wake, NULL, arg, sp);
	ret = stream_new(io, obj, off, len, io->e->cfg.io_buffers, sp);

	if (ret < 0)
		return ret;
	stream_start(*sp, wake, arg);
	return 0;
}

int gs_stream_open_into(struct gs_io *io, struct gs_obj *obj, uint64_t off,
			uint64_t len, void *const *bufs, unsigned nbufs,
			gs_wake_fn wake, gs_wake_fn released, void *arg,
			struct gs_stream **sp)
{
	struct gs_stream *s;
	int ret;

	if (!nbufs || nbufs > CALLER_BUFS_MAX || !released)
		return -EINVAL;
	for (unsigned i = 0; i < nbufs; i++)
		if ((uintptr_t)bufs[i] % CALLER_BUF_ALIGN)
			return -EINVAL;
	if (obj->fill)
		return fill_open(io, obj, off, len, bufs, nbufs, wake, released,
				 arg, sp);
	ret = stream_new(io, obj, off, len, nbufs, &s);
	if (ret < 0)
		return ret;
	s->caller_bufs = true;
	s->have_window = true;
	s->released = released;
	window_give(&s->win, bufs, s->win.cap);
	stream_start(s, wake, arg);
	*sp = s;
	return 0;
}

/* The consumer of <s> finds its chunk not landed: past its first byte,
 * a wait (measure_wait once it ends) and, when the window is short of what
 * the disk's latency needs at the consumer's rate, it grows by a buffer. */
static void stream_wait(struct gs_stream *s)
{
	if (s->pos == s->start || !drain_wait(s->io->e, &s->drain))
		return;
	if (!s->have_window || s->caller_bufs)
		return;
	if (window_grow(s->io, &s->win, obj_chunks(s->obj)[s->cur].tier,
			chunk_slices(s, s->cur), s->drain.rate))
		stream_refill(s);
}

/* <s> moved on to a new chunk: it shrinks by a buffer when the socket is
 * the limit (the chunk after this one landed already) or others wait for
 * a window, and gives back what drained. */
static void stream_next_chunk(struct gs_stream *s)
{
	const struct stream_slot *sl, *next;
	bool ahead = false;

	if (s->caller_bufs || !s->have_window)
		return;
	if (s->cur + 1 < s->last) {
		sl = &s->slots[s->cur - s->first];
		next = sl + 1;
		ahead = sl->state == CH_READY && next->state == CH_READY &&
			next->win >= 0;
	}
	window_shrink(s->io, &s->win, ahead);
}

int gs_stream_peek_at(struct gs_stream *s, uint64_t skip, const void **data,
		      size_t *len)
{
	uint64_t p = s->pos + skip, cend;
	const struct chunk *ch;
	struct stream_slot *sl;

	if (s->fs)
		return fill_stream_peek_at(s->fs, skip, data, len);
	if (!skip && !s->error && s->pos >= s->head_len)
		stream_refill(s);
	if (s->error)
		return s->error;
	if (p >= s->end) {
		*len = 0;
		return 0;
	}
	if (p < s->head_len) {
		if (!skip)
			drain_ready(s->io->e, &s->drain);
		*data = s->head + p;
		*len = (s->head_len < s->end ? s->head_len : s->end) - p;
		return 0;
	}
	ch = obj_chunks(s->obj) + s->cur;
	for (sl = &s->slots[s->cur - s->first]; p >= sl->off + ch->len; sl++)
		ch++;
	if (sl->state != CH_READY) {
		if (!skip)		/* a wait: not a look further ahead */
			stream_wait(s);
		return -EAGAIN;
	}
	if (!skip)
		drain_ready(s->io->e, &s->drain);
	cend = sl->off + ch->len < s->end ? sl->off + ch->len : s->end;
	*len = cend - p;
	if (sl->ram)
		*data = ramchunk_bytes(s->io->e, sl->ram, p - sl->off, *len, len);
	else if (ch->tier == GS_TIER_RAM)
		*data = (const char *)chunk_ram(s->io->e, s->obj,
				(uint32_t)(ch - obj_chunks(s->obj))) + (p - sl->off);
	else
		*data = slot_ptr(s, sl) + (p - sl->off);
	return 0;
}

void gs_stream_consume(struct gs_stream *s, size_t n)
{
	uint64_t lo = s->pos > s->head_len ? s->pos : s->head_len;
	uint32_t was = s->cur;

	if (s->fs) {
		fill_stream_consume(s->fs, n);
		return;
	}
	s->pos += n;
	while (s->cur < s->last) {
		struct stream_slot *sl = &s->slots[s->cur - s->first];
		uint64_t cend = sl->off + obj_chunks(s->obj)[s->cur].len;
		uint64_t hi = s->pos < cend ? s->pos : cend;

		lo = lo > sl->off ? lo : sl->off;
		if (sl->ram && hi > lo)		/* [lo, hi) came from RAM */
			STAT_ADD(s->io->e, chunk_hit_bytes, hi - lo);
		if (s->pos < cend)
			break;
		if (!s->keep)
			put_slices(s, sl);
		if (sl->early)
			early_put(s);
		sl->early = false;
		sl->state = CH_DONE;
		s->cur++;
	}
	s->stall_since = mono_ns();
	drain_took(s->io->e, &s->drain, n, s->stall_since);
	if (s->cur != was)
		stream_next_chunk(s);
	stream_refill(s);
}

void gs_stream_hold(struct gs_stream *s)
{
	if (s->fs)
		return fill_stream_hold(s->fs);
	if (s->caller_bufs)
		s->keep = true;
	s->rel = s->first;
}

void gs_stream_release(struct gs_stream *s, uint64_t off)
{
	bool freed = false;

	if (s->fs)
		return fill_stream_release(s->fs, off);
	if (!s->keep)
		return;
	if (s->rel < s->first)
		s->rel = s->first;
	while (s->rel < s->cur) {
		struct stream_slot *sl = &s->slots[s->rel - s->first];

		if (off < sl->off + obj_chunks(s->obj)[s->rel].len)
			break;
		put_slices(s, sl);
		s->rel++;
		freed = true;
	}
	if (freed)
		stream_refill(s);
}

unsigned gs_stream_bufs_used(const struct gs_stream *s)
{
	if (s->fs)
		return fill_stream_bufs_used(s->fs);
	return s->caller_bufs ? s->win.size : 0;
}

uint64_t gs_stream_left(const struct gs_stream *s)
{
	return s->fs ? fill_stream_left(s->fs) : s->end - s->pos;
}

void gs_stream_close(struct gs_stream **sp)
{
	struct gs_stream *s = *sp;

	if (!s)
		return;
	*sp = NULL;
	if (s->fs) {
		fill_stream_close(&s->fs);
		free(s);
		return;
	}
	s->closed = true;
	drain_end(s->io->e, &s->drain);
	waiter_del(&s->waiter);
	s->inflight -= hddq_cancel(s->io, s);
	if (!s->inflight)
		stream_end(s);
}
