/*
 * Writers fill chunk buffers from the network and write them out; nothing
 * is visible until every chunk is on disk and the object is linked.  Each
 * takes one buffer of io->writer_bufs per disk chunk and gives it back when
 * the write completes.  The admission bound stops writers when too many
 * bytes are accepted but not yet on disk.  A writer whose producer stalls
 * mid-chunk while others wait for a buffer gives its buffer back and keeps
 * its bytes in the heap (bounded by the admission bound, which still
 * counts them): a few slow clients never hold the buffers every writer
 * needs.  An append or prepend writer (GS_WRITE_APPEND, GS_WRITE_PREPEND)
 * is a front for concat.c, which builds the new value with a set-mode one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define WRITER_STALL_MS 100	/* a producer this slow loses its buffer */

#include "attr.h"
#include "concat.h"
#include "fill.h"
#include "heads.h"
#include "hook_points.h"
#include "index.h"
#include "journal.h"
#include "layout.h"
#include "region.h"
#include "uring.h"
#include "writer.h"

/* ---- admission ---- */

void writer_wake_admission(struct gs_engine *e)
{
	pthread_mutex_lock(&e->io_lock);
	for (struct list *n = e->io_list.next; n != &e->io_list; n = n->next) {
		struct gs_io *io = list_entry(n, struct gs_io, engine_node);

		if (!list_empty(&io->writer_bufs.waiters))
			kick(io);
	}
	pthread_mutex_unlock(&e->io_lock);
}

int admission_wait(struct gs_io *io, uint64_t n, struct io_waiter *w,
		   gs_wake_fn wake, void *arg)
{
	if (!admission_full(io->e, n))
		return 0;
	if (!waiter_queued(w))
		STAT_ADD(io->e, admission_waits, 1);
	waiter_add(&io->writer_bufs.waiters, w, wake, arg);
	return -EAGAIN;
}

void admission_charge(struct gs_io *io, uint64_t n)
{
	STAT_ADD(io->e, admission_bytes, n);
}

void admission_release(struct gs_io *io, uint64_t n)
{
	STAT_SUB(io->e, admission_bytes, n);
	writer_wake_admission(io->e);
}

/* ---- writers ---- */


/* An append or prepend writer: a front for concat.c. */
static int concat_writer_open(struct gs_io *io, const void *key, size_t klen,
			      uint64_t size, bool prepend,
			      struct gs_writer **wp)
{
	struct gs_writer *w = calloc(1, sizeof(*w));
	int ret;

	if (!w)
		return -ENOMEM;
	ret = concat_open(io, key, klen, prepend, size, &w->concat);
	if (ret < 0) {
		free(w);
		return ret;
	}
	*wp = w;
	return 0;
}

int gs_writer_open(struct gs_io *io, const void *key, size_t klen,
		   uint64_t size, uint32_t flags, int64_t exptime,
		   enum gs_write_mode mode, struct gs_writer **wp)
{
	struct gs_engine *e = io->e;
	struct gs_writer *w;
	struct gs_obj *obj;
	int ret;

	if (mode != GS_WRITE_SET)
		return concat_writer_open(io, key, klen, size,
					  mode == GS_WRITE_PREPEND, wp);
	if (klen > GS_KEY_MAX)
		return -EINVAL;
	if (size == GS_SIZE_UNKNOWN)
		ret = engine_new_grid(e, key, klen, size, &obj);
	else
		ret = engine_new_record(e, key, klen, size, &obj);
	if (ret < 0)
		return ret;
	w = calloc(1, sizeof(*w));
	if (!w) {
		free(obj);		/* no space reserved yet */
		return -ENOMEM;
	}
	w->obj = obj;
	w->io = io;
	w->fill = obj->fill ? obj_fill(obj) : NULL;
	w->obj->meta.flags = flags;
	w->obj->meta.exptime = gs_exptime(exptime);
	w->cur_off = engine_chunk_start(w->obj, 0);
	w->cur_buf = -1;
	waiter_init(&w->waiter);
	list_init(&w->sync_node);
	list_init(&w->hold);
	*wp = w;
	return 0;
}

/* <w> takes a buffer of io->writer_bufs for its current chunk. */
static void writer_hold(struct gs_writer *w)
{
	w->cur_buf = iobuf_get(w->io, &w->io->writer_bufs);
	w->fed_at = mono_ns();
	list_add_tail(&w->io->writer_holders, &w->hold);
}

/* Gives cur_buf back (after its write, or on an abort). */
void writer_unhold(struct gs_writer *w)
{
	iobuf_put(&w->io->writer_bufs, w->cur_buf);
	w->cur_buf = -1;
	if (list_linked(&w->hold))
		list_del(&w->hold);
}

/* Moves the bytes of the current chunk from cur_buf to the heap and gives
 * the buffer back; false when no memory (it keeps the buffer). */
static bool writer_spill(struct gs_writer *w)
{
	size_t n = w->pos - w->cur_off;

	if (n) {
		w->spill = malloc(n);
		if (!w->spill)
			return false;
		memcpy(w->spill, iobuf_ptr(w->io, w->cur_buf), n);
	}
	writer_unhold(w);
	w->spilled = true;
	STAT_ADD(w->io->e, writer_reclaims, 1);
	return true;
}

/* A buffer for the spilled chunk of <w>, its bytes copied back; -EAGAIN
 * with <w> queued when none is free. */
static int writer_unspill(struct gs_writer *w, gs_wake_fn wake, void *arg)
{
	struct gs_io *io = w->io;

	if (!io->writer_bufs.nfree) {
		waiter_add(&io->writer_bufs.waiters, &w->waiter, wake, arg);
		writer_waiters_check(io);
		return -EAGAIN;
	}
	writer_hold(w);
	if (w->spill)
		memcpy(iobuf_ptr(io, w->cur_buf), w->spill,
		       w->pos - w->cur_off);
	free(w->spill);
	w->spill = NULL;
	w->spilled = false;
	return 0;
}

/* The spilled chunk of <w> will not be written: its admission goes. */
void writer_drop_spill(struct gs_writer *w)
{
	if (!w->spilled)
		return;
	free(w->spill);
	w->spill = NULL;
	w->spilled = false;
	admission_release(w->io, w->cur_admitted);
}

/* Keeps the first failure of <w> for its done callback; a fill's readers
 * are cut at once. */
void writer_fail(struct gs_writer *w, int err)
{
	if (w->error)
		return;
	w->error = err;
	if (w->fill)
		fill_abort(w->io->e, w->fill);
}

bool writer_reclaim_bufs(struct gs_io *io)
{
	struct list *head = &io->writer_bufs.waiters, *n, *next;
	unsigned need = 0, before = io->writer_bufs.nfree;
	uint64_t now = mono_ns();

	for (n = head->next; n != head; n = n->next)
		need++;
	for (n = io->writer_holders.next;
	     n != &io->writer_holders && io->writer_bufs.nfree < need;
	     n = next) {
		struct gs_writer *h = list_entry(n, struct gs_writer, hold);

		next = n->next;
		if (now - h->fed_at >= WRITER_STALL_MS * 1000000ull)
			writer_spill(h);
	}
	return io->writer_bufs.nfree > before;
}

void writer_waiters_check(struct gs_io *io)
{
	if (io->timer_armed || list_empty(&io->writer_bufs.waiters) ||
	    list_empty(&io->writer_holders) || io->writer_bufs.nfree)
		return;
	uring_arm_timer(io, WRITER_STALL_MS * 1000000ll / 2);
}

static void writer_free(struct gs_writer *w)
{
	struct gs_engine *e = w->io->e;

	waiter_del(&w->waiter);
	writer_drop_spill(w);
	if (w->credit)
		admission_release(w->io, w->credit);
	attr_free(&w->attr);
	if (w->obj || w->head_caching) {
		pthread_mutex_lock(&e->lock);
		if (w->head_caching)
			region_free(&e->region, w->head_slot);
		if (w->obj)
			engine_unref(e, w->obj);
		pthread_mutex_unlock(&e->lock);
	}
	free(w);
}

/* --sync-interval: stored objects whose sync has come are acknowledged. */
void writer_sync_check(struct gs_io *io)
{
	uint64_t synced = journal_synced(io->e);
	struct list *n, *next;

	for (n = io->sync_waiters.next; n != &io->sync_waiters; n = next) {
		struct gs_writer *w = list_entry(n, struct gs_writer, sync_node);

		next = n->next;
		if (w->stored.cas > synced)
			continue;
		list_del(&w->sync_node);
		w->done(w->arg, journal_sync_result(io->e, w->stored.cas),
			&w->stored);
		writer_free(w);
	}
}

void writer_sync_drain(struct gs_io *io)
{
	uint64_t last = 0;

	for (struct list *n = io->sync_waiters.next; n != &io->sync_waiters;
	     n = n->next) {
		struct gs_writer *w = list_entry(n, struct gs_writer, sync_node);

		if (w->stored.cas > last)
			last = w->stored.cas;
	}
	if (!last)
		return;
	journal_wait_synced(io->e, last);
	writer_sync_check(io);
}

/* Called from the sync thread: every loop is kicked, since its waiters
 * list is its own thread's to read. */
void writer_wake_synced(struct gs_engine *e)
{
	pthread_mutex_lock(&e->io_lock);
	for (struct list *n = e->io_list.next; n != &e->io_list; n = n->next)
		kick(list_entry(n, struct gs_io, engine_node));
	pthread_mutex_unlock(&e->io_lock);
}

/* ---- attributes: gs_writer_attr() until the record is linked ---- */

int gs_writer_attr(struct gs_writer *w, const void *p, size_t len)
{
	struct attr *a = NULL;

	if (w->concat)
		return -EINVAL;
	if (len > GS_ATTR_MAX)
		return -E2BIG;
	if (len && !(a = attr_new(p, len)))
		return -ENOMEM;
	attr_free(&w->attr);
	w->attr = a;
	return w->fill ? writer_attr_to_grid(w) : 0;
}

int writer_attr_to_grid(struct gs_writer *w)
{
	struct gs_engine *e = w->io->e;
	int ret = 0;

	pthread_mutex_lock(&e->lock);
	attr_drop(e, w->obj);
	if (w->attr)
		ret = attr_attach(e, w->obj, &w->attr);
	if (!ret)
		w->fill->attr_coming = false;	/* findable now, if shared */
	pthread_mutex_unlock(&e->lock);
	return ret;
}

/* The record's space is all reserved (it moves no more): it takes the
 * writer's attributes.  e->lock held; 0 or -ENOMEM. */
static int writer_attach_attr(struct gs_writer *w)
{
	if (!w->attr)
		return 0;
	return attr_attach(w->io->e, w->obj, &w->attr);
}

static void writer_commit(void *arg, int res)
{
	struct gs_writer *w = arg;
	struct gs_engine *e = w->io->e;
	struct gs_stored stored = { 0 };

	(void)res;
	res = w->error;
	if (res == 0)
		GS_CRASH_POINT("before-journal");
	pthread_mutex_lock(&e->lock);
	if (res == 0 && !w->fill)
		res = writer_attach_attr(w);
	if (res == 0 && w->fill)
		res = fill_link(e, w->obj, w->pos, w->cond, w->cas, &stored);
	else if (res == 0)
		res = engine_link(e, w->obj, w->cond, w->cas, &stored.replaced);
	if (res == 0 && !w->fill)
		stored.cas = w->obj->meta.cas;
	if (res == 0 && w->head_caching) {
		engine_head_publish(e, w->obj, w->head_slot);
		w->head_caching = false;
	}
	engine_unref(e, w->obj);
	pthread_mutex_unlock(&e->lock);
	w->obj = NULL;
	w->fill = NULL;			/* the grid may be gone; a failure
					 * ended it (writer_fail, fill_link) */
	if (res == 0)
		GS_CRASH_POINT("after-journal");
	if (res == 0 && stored.cas > journal_synced(e)) {
		/* acknowledged once the sync thread has it on stable storage */
		w->stored = stored;
		list_add_tail(&w->io->sync_waiters, &w->sync_node);
		return;
	}
	if (res == 0)
		res = journal_sync_result(e, stored.cas);
	w->done(w->arg, res, &stored);
	writer_free(w);
}

void writer_write_done(struct io_op *op)
{
	struct gs_writer *w = op->owner;
	struct gs_engine *e = w->io->e;

	admission_release(w->io, op->len);
	w->inflight--;
	if (op->res < 0)
		writer_fail(w, -EIO);
	if (op->res == 0) {
		STAT_ADD(e, disk_writes, 1);
		STAT_ADD(e, disk_write_bytes, op->len);
		GS_CRASH_POINT("chunk-write");
		if (w->fill)	/* its bytes still in the buffer */
			fill_chunk_written(e, w->fill, op->chunk, op->buf,
					   op->len);
	}
	if (op->buf_idx >= 0)
		iobuf_put(&w->io->writer_bufs, op->buf_idx);
	if (op->buf_idx < 0 && op->buf == w->fin_buf) {
		free(w->fin_buf);
		w->fin_buf = NULL;
	}
	if (w->inflight)
		return;
	if (w->aborted)
		writer_free(w);
	else if (w->finishing)
		writer_commit(w, 0);
}

/* Reserves part <i> (-1: the head) of the writer's object as its bytes
 * arrive (a disk chunk once they are all in): a set whose bytes never come
 * holds no space.  A failure is kept for the done callback; the rest of
 * the value goes to the sink. */
void writer_reserve(struct gs_writer *w, int64_t i)
{
	struct gs_engine *e = w->io->e;
	int ret;

	pthread_mutex_lock(&e->lock);
	ret = engine_reserve_part(e, &w->obj, i);	/* it may move */
	/* an on-disk object's head is cached as it is written when a slot
	 * is free or holds a cached chunk; writes never drop heads for it */
	if (ret == 0 && i == 0 && w->obj->on_disk && !w->head_caching &&
	    !w->fill &&
	    engine_head_alloc(e, ROOM_DROP_CHUNKS, &w->head_slot) == 0)
		w->head_caching = true;
	pthread_mutex_unlock(&e->lock);
	if (ret < 0)
		writer_fail(w, ret);
}

int writer_sink(struct gs_writer *w, void **p, size_t *len,
		       uint64_t part_end)
{
	*p = w->io->sink;
	*len = part_end - w->pos < SINK_LEN ? part_end - w->pos : SINK_LEN;
	return 0;
}

int gs_writer_buf(struct gs_writer *w, void **p, size_t *len,
		  gs_wake_fn wake, void *arg)
{
	struct gs_io *io = w->io;
	struct gs_obj *obj = w->obj;
	const struct chunk *c;
	uint64_t need, part_end;

	if (w->concat)
		return concat_buf(w->concat, p, len, wake, arg);
	if (w->fill) {
		int ret = fill_writer_head(w, p, len);

		if (ret <= 0)
			return ret;
	} else if (w->pos < obj->meta.head_len) {
		if (!w->error && !obj->has_head)
			writer_reserve(w, -1);
		if (w->error)
			return writer_sink(w, p, len, obj->meta.head_len);
		*p = (char *)obj_head_ptr(io->e, obj) + w->pos;
		*len = obj->meta.head_len - w->pos;
		return 0;
	}
	if (w->cur >= obj->nchunks) {
		*len = 0;
		return 0;
	}
	c = &obj_chunks(obj)[w->cur];
	part_end = w->cur_off + c->len;
	/* disk space is reserved once a chunk's bytes are all in */
	if (c->tier == GS_TIER_RAM && chunk_addr(obj, w->cur) == UINT64_MAX &&
	    !w->error)
		writer_reserve(w, w->cur);	/* a head slot: the record stays */
	if (w->cur_buf < 0 && w->error) {
		writer_drop_spill(w);
		return writer_sink(w, p, len, part_end);
	}
	if (c->tier == GS_TIER_RAM) {
		*p = (char *)chunk_ram(io->e, obj, w->cur) + (w->pos - w->cur_off);
		*len = part_end - w->pos;
		w->last_p = *p;
		return 0;
	}
	if (w->cur_buf < 0 && w->spilled) {
		int ret = writer_unspill(w, wake, arg);

		if (ret < 0)
			return ret;
	} else if (w->cur_buf < 0) {
		uint64_t paid;

		need = round_up(c->len, tier_align(io->e, c->tier));
		paid = need < w->credit ? need : w->credit;
		if ((need > paid && admission_full(io->e, need - paid)) ||
		    !io->writer_bufs.nfree) {
			if (!w->waited)
				STAT_ADD(io->e, admission_waits, 1);
			w->waited = true;
			waiter_add(&io->writer_bufs.waiters, &w->waiter, wake, arg);
			writer_waiters_check(io);
			return -EAGAIN;
		}
		w->waited = false;
		writer_hold(w);
		w->cur_admitted = need;
		w->credit -= paid;
		STAT_ADD(io->e, admission_bytes, need - paid);
	}
	*p = iobuf_ptr(io, w->cur_buf) + (w->pos - w->cur_off);
	*len = part_end - w->pos;
	w->last_p = *p;
	return 0;
}

/* Copies the head's part of a chunk of <len> bytes at object offset <off>
 * into the head slot. */
static void head_copy(struct gs_writer *w, const char *buf, uint64_t off,
		      uint64_t len)
{
	struct gs_engine *e = w->io->e;
	uint64_t room = engine_ram_limit(e) - off;
	uint64_t n = room < len ? room : len;

	memcpy((char *)e->region.base + w->head_slot + off, buf, n);
}

void gs_writer_advance(struct gs_writer *w, size_t n)
{
	struct gs_obj *obj = w->obj;
	struct chunk *c;
	char *buf;
	uint32_t alen;

	if (w->concat) {
		concat_advance(w->concat, n);
		return;
	}
	w->pos += n;
	if (w->cur_buf >= 0)
		w->fed_at = mono_ns();
	if (w->fill)
		fill_writer_fed(w, n);
	if (w->pos <= obj->meta.head_len || w->pos <= w->cur_off ||
	    w->cur >= obj->nchunks)
		return;
	c = &obj_chunks(obj)[w->cur];
	if (w->pos < w->cur_off + c->len)
		return;
	w->cur++;
	w->cur_off += c->len;
	if (c->tier == GS_TIER_RAM || w->cur_buf < 0)
		return;			/* in place, or in the sink */
	buf = iobuf_ptr(w->io, w->cur_buf);
	if (!w->error) {
		writer_reserve(w, w->cur - 1);
		obj = w->obj;			/* the record may have moved */
		c = &obj_chunks(obj)[w->cur - 1];
	}
	if (w->head_caching && w->cur_off - c->len < engine_ram_limit(w->io->e))
		head_copy(w, buf, w->cur_off - c->len, c->len);
	alen = round_up(c->len, tier_align(w->io->e, c->tier));
	memset(buf + c->len, 0, alen - c->len);
	c->sum = XXH3_64bits(buf, c->len);
	if (w->error) {
		writer_unhold(w);
		admission_release(w->io, w->cur_admitted);
	} else if (uring_op_start(w->io, obj, w->cur - 1, true, buf, w->cur_buf,
			    writer_write_done, w) < 0) {
		writer_unhold(w);
		admission_release(w->io, w->cur_admitted);
		STAT_ADD(w->io->e, io_errors, 1);
		writer_fail(w, -EIO);
	} else {
		w->inflight++;
		uring_submit(w->io);
		list_del(&w->hold);	/* the write gives the buffer back */
		w->cur_buf = -1;
	}
}

void writer_set_credit(struct gs_writer *w, uint64_t credit)
{
	w->credit = credit;
}

int gs_writer_finish(struct gs_writer **wp, enum gs_if cond, uint64_t cas,
		     gs_stored_fn done, void *arg)
{
	struct gs_writer *w = *wp;
	struct concat *k = w->concat;

	if (k) {
		if (!concat_complete(k))
			return -EINVAL;
		*wp = NULL;
		free(w);
		return concat_finish(k, cas, done, arg);
	}
	if (w->fill && w->fill->size == GS_SIZE_UNKNOWN)
		fill_writer_cut(w);
	else if (w->pos != w->obj->meta.size)
		return -EINVAL;
	*wp = NULL;
	w->cond = cond;
	w->cas = cas;
	w->done = done;
	w->arg = arg;
	w->finishing = true;
	if (!w->inflight)
		defer(w->io, &w->def, writer_commit, w, 0);
	return 0;
}

void gs_writer_abort(struct gs_writer **wp)
{
	struct gs_writer *w = *wp;

	if (!w)
		return;
	*wp = NULL;
	if (w->concat) {
		concat_abort(&w->concat);
		free(w);
		return;
	}
	if (w->fill)
		fill_abort(w->io->e, w->fill);
	waiter_del(&w->waiter);
	writer_drop_spill(w);
	if (w->cur_buf >= 0) {
		writer_unhold(w);
		admission_release(w->io, w->cur_admitted);
		kick(w->io);
	}
	if (w->inflight)
		w->aborted = true;
	else
		writer_free(w);
}

