/*
 * Streams over an object still filling (a fill's grid, fill.h): bytes go
 * out as they land, each from where the writer put it once it is there
 * and checked: the head slot's bytes as soon as they are copied, RAM
 * chunks in place, disk chunks once their write completed, one chunk per
 * buffer, a few ahead: copied from the RAM chunk cache when the writer
 * could offer it there (fill_chunk_written), else read (and their
 * checksum checked).  The stream
 * ends at the final size once the writer finished, and fails with
 * -ECONNABORTED once it was aborted.  When it has nothing to give it asks
 * the fill to tell its gs_io (from whichever thread writes) and returns
 * -EAGAIN; the wake fires from its own gs_io_run().  gs_stream_open()
 * and gs_stream_open_into() over a grid come here (stream.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fill.h"
#include "index.h"
#include "ramchunk.h"
#include "stream-t.h"
#include "uring.h"

#define FS_OWN_BUFS	2		/* buffers of its own (gs_stream_open) */
#define FS_BUFS_MAX	8

enum { FS_FREE, FS_INFLIGHT, FS_READY };

struct fs_slot {
	uint8_t state;
	uint32_t chunk;
	uint64_t start, end;		/* object bytes it holds */
};

struct fill_stream {
	struct gs_io *io;
	struct gs_obj *obj;		/* the grid, pinned */
	struct fill *f;
	uint64_t pos, end;		/* end as asked: may pass the size */
	uint32_t next;			/* the next disk chunk to read */
	uint64_t next_start;
	uint32_t cc;			/* chunk_at() memo: chunk and start */
	uint64_t cc_start;
	unsigned nbufs;
	char *bufs[FS_BUFS_MAX];
	struct fs_slot slots[FS_BUFS_MAX];
	bool caller_bufs, keep;
	uint64_t released;		/* keep: gs_stream_release() so far */
	unsigned inflight;
	int error;
	bool closed;
	gs_wake_fn wake, released_fn;
	void *arg;
	struct fill_waiter fw;
	struct deferred def;
};

/* Where the grid's chunks start: after the head of a RAM-only one. */
static uint64_t chunks_start(const struct fill_stream *fs)
{
	return fs->obj->on_disk ? 0 : fs->f->head_cap;
}

/* The chunk holding object byte <p> (past the head) and its start. */
static uint32_t chunk_at(struct fill_stream *fs, uint64_t p, uint64_t *start)
{
	const struct chunk *c = obj_chunks(fs->obj);
	uint32_t i = fs->cc;
	uint64_t off = fs->cc_start;

	if (p < off) {
		i = 0;
		off = chunks_start(fs);
	}
	while (i + 1 < fs->obj->nchunks && p >= off + c[i].len)
		off += c[i++].len;
	fs->cc = i;
	fs->cc_start = off;
	*start = off;
	return i;
}

static void fs_free(struct fill_stream *fs)
{
	gs_obj_put(fs->io->e, &fs->obj);
	if (!fs->caller_bufs)
		for (unsigned i = 0; i < fs->nbufs; i++)
			free(fs->bufs[i]);
	free(fs);
}

static void fs_released(void *arg, int res)
{
	struct fill_stream *fs = arg;
	gs_wake_fn released = fs->released_fn;
	void *rarg = fs->arg;

	(void)res;
	fs_free(fs);
	released(rarg);
}

/* Closed and no read in flight: frees <fs>, telling the caller whose
 * buffers it read into (from gs_io_run). */
static void fs_end(struct fill_stream *fs)
{
	if (fs->released_fn)
		defer(fs->io, &fs->def, fs_released, fs, 0);
	else
		fs_free(fs);
}

static void fs_read_done(struct io_op *op)
{
	struct fill_stream *fs = op->owner;
	struct fs_slot *sl = NULL;
	int res;

	fs->inflight--;
	if (fs->closed) {
		if (!fs->inflight)
			fs_end(fs);
		return;
	}
	for (unsigned i = 0; i < fs->nbufs; i++)
		if (fs->bufs[i] == op->buf)
			sl = &fs->slots[i];
	res = chunk_check(fs->io, fs->obj, op->chunk, op->buf, op->res);
	if (res < 0 && !fs->error)
		fs->error = res;
	sl->state = FS_READY;
	if (fs->wake && (fs->pos >= sl->start || fs->error))
		fs->wake(fs->arg);
}

/* Whether slot <sl>'s bytes are all consumed (and released, held). */
static bool slot_done(const struct fill_stream *fs, const struct fs_slot *sl)
{
	return fs->pos >= sl->end && (!fs->keep || fs->released >= sl->end);
}

/* Copies chunk <ci> into <buf> when the RAM chunk cache holds it (its
 * writer offered it as it landed): true.  The grid's pin keeps it. */
static bool fs_from_ram(struct fill_stream *fs, uint32_t ci, char *buf)
{
	struct gs_engine *e = fs->io->e;
	const struct ramchunk *rc;
	uint64_t len = obj_chunks(fs->obj)[ci].len, pos = 0;
	const char *p;
	size_t n;

	pthread_mutex_lock(&e->lock);
	rc = ramchunk_get(e, fs->obj, ci);
	pthread_mutex_unlock(&e->lock);
	if (!rc)
		return false;
	for (; pos < len; pos += n) {
		p = ramchunk_bytes(e, rc, pos, len - pos, &n);
		memcpy(buf + pos, p, n);
	}
	STAT_ADD(e, chunk_hit_bytes, len);
	return true;
}

/* Reads the landed chunks [next, <landed>) that the free buffers hold:
 * from RAM when cached there, else from disk. */
static void fs_refill(struct fill_stream *fs, uint32_t landed, uint64_t end)
{
	const struct chunk *c = obj_chunks(fs->obj);
	bool armed = false;
	uint8_t state;

	if (fs->error || !fs->obj->on_disk)
		return;
	for (unsigned i = 0; i < fs->nbufs; i++) {
		struct fs_slot *sl = &fs->slots[i];

		if (sl->state == FS_READY && slot_done(fs, sl))
			sl->state = FS_FREE;
	}
	for (unsigned i = 0; i < fs->nbufs && fs->next < landed &&
	     fs->next_start < end; i++) {
		struct fs_slot *sl = &fs->slots[i];

		if (sl->state != FS_FREE)
			continue;
		if (fs_from_ram(fs, fs->next, fs->bufs[i])) {
			state = FS_READY;
		} else if (uring_op_start(fs->io, fs->obj, fs->next, false,
					  fs->bufs[i], -1, fs_read_done,
					  fs) < 0) {
			STAT_ADD(fs->io->e, io_errors, 1);
			fs->error = -EIO;
			break;
		} else {
			state = FS_INFLIGHT;
			fs->inflight++;
			armed = true;
		}
		*sl = (struct fs_slot){ .state = state, .chunk = fs->next,
					.start = fs->next_start,
					.end = fs->next_start + c[fs->next].len };
		fs->next_start = sl->end;
		fs->next++;
	}
	if (armed)
		uring_submit(fs->io);
}

/* The fill moved on (from gs_io_run). */
static void fs_fill_wake(void *arg)
{
	struct fill_stream *fs = arg;

	if (!fs->closed && fs->wake)
		fs->wake(fs->arg);
}

int fill_stream_open(struct gs_io *io, struct gs_obj *obj, uint64_t off,
		     uint64_t len, void *const *bufs, unsigned nbufs,
		     gs_wake_fn wake, gs_wake_fn released, void *arg,
		     struct fill_stream **fsp)
{
	struct gs_engine *e = io->e;
	struct fill_stream *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return -ENOMEM;
	fs->io = io;
	fs->f = obj_fill(obj);
	pthread_mutex_lock(&e->lock);
	engine_pin(e, obj);
	pthread_mutex_unlock(&e->lock);
	fs->obj = obj;
	fs->pos = off;
	fs->end = off + len < off ? GS_SIZE_UNKNOWN : off + len;
	fs->wake = wake;
	fs->released_fn = released;
	fs->arg = arg;
	list_init(&fs->fw.fill_node);
	list_init(&fs->fw.io_node);
	if (bufs) {
		fs->caller_bufs = true;
		fs->nbufs = nbufs < FS_BUFS_MAX ? nbufs : FS_BUFS_MAX;
		memcpy(fs->bufs, bufs, fs->nbufs * sizeof(*bufs));
	} else if (obj->on_disk) {
		for (; fs->nbufs < FS_OWN_BUFS; fs->nbufs++) {
			fs->bufs[fs->nbufs] = aligned_alloc(4096, GS_IO_BUFFER);
			if (!fs->bufs[fs->nbufs]) {
				fs_free(fs);
				return -ENOMEM;
			}
		}
	}
	fs->cc_start = chunks_start(fs);
	if (obj->on_disk)
		fs->next = chunk_at(fs, off > fs->f->head_cap ? off :
				    fs->f->head_cap, &fs->next_start);
	__atomic_add_fetch(&fs->f->readers, 1, __ATOMIC_RELAXED);
	*fsp = fs;
	return 0;
}

/* The slot holding chunk <ci>, or NULL. */
static struct fs_slot *slot_of(struct fill_stream *fs, uint32_t ci,
			       char **buf)
{
	for (unsigned i = 0; i < fs->nbufs; i++)
		if (fs->slots[i].state != FS_FREE && fs->slots[i].chunk == ci) {
			*buf = fs->bufs[i];
			return &fs->slots[i];
		}
	return NULL;
}

/* What <fs> may hand out at its byte <p>, looked at under f->lock (a
 * reader that must wait is queued on the fill under the same lock, so no
 * progress is missed): 0 with the stream's end in <*endp>, the bytes
 * there up to <*availp> (head and RAM) or the disk chunks landed in
 * <*landedp>; -EAGAIN to wait; -ECONNABORTED.  An end is only an end once
 * the value is stored. */
static int fs_look(struct fill_stream *fs, uint64_t p, uint64_t *endp,
		   uint64_t *availp, uint32_t *landedp)
{
	struct fill *f = fs->f;
	uint64_t end = fs->end, start;
	int ret = 0;

	pthread_mutex_lock(&f->lock);
	if (f->size < end)
		end = f->size;
	*endp = end;
	*landedp = f->landed;
	*availp = p < f->head_cap ? f->head_avail : f->ram_end;
	if (f->state == FILL_ABORTED)
		ret = -ECONNABORTED;
	else if (p >= end)
		ret = f->state == FILL_DONE ? 0 : -EAGAIN;
	else if (p < f->head_cap || !fs->obj->on_disk)
		ret = p < *availp ? 0 : -EAGAIN;
	else
		ret = chunk_at(fs, p, &start) < *landedp ? 0 : -EAGAIN;
	if (ret == -EAGAIN)
		fill_wait(f, &fs->fw, fs->io, fs_fill_wake, fs);
	pthread_mutex_unlock(&f->lock);
	return ret;
}

int fill_stream_peek_at(struct fill_stream *fs, uint64_t skip,
			const void **data, size_t *len)
{
	struct gs_engine *e = fs->io->e;
	struct fill *f = fs->f;
	uint64_t p = fs->pos + skip, end, start, avail;
	struct fs_slot *sl;
	uint32_t landed, ci;
	char *buf;
	int ret;

	if (fs->error)
		return fs->error;
	ret = fs_look(fs, p, &end, &avail, &landed);
	if (ret == -ECONNABORTED)
		fs->error = ret;
	if (ret < 0)
		return ret;
	if (p >= end) {
		*len = 0;
		return 0;
	}
	if (p < f->head_cap || !fs->obj->on_disk) {
		if (avail > end)
			avail = end;
		if (p < f->head_cap) {
			*data = (char *)e->region.base + f->head_off + p;
			*len = (avail < f->head_cap ? avail : f->head_cap) - p;
			return 0;
		}
		ci = chunk_at(fs, p, &start);
		if (avail > start + obj_chunks(fs->obj)[ci].len)
			avail = start + obj_chunks(fs->obj)[ci].len;
		*data = (char *)chunk_ram(e, fs->obj, ci) + (p - start);
		*len = avail - p;
		return 0;
	}
	fs_refill(fs, landed, end);
	if (fs->error)
		return fs->error;
	ci = chunk_at(fs, p, &start);
	sl = slot_of(fs, ci, &buf);
	if (!sl || sl->state != FS_READY)
		return -EAGAIN;
	*data = buf + (p - start);
	*len = (sl->end < end ? sl->end : end) - p;
	return 0;
}

void fill_stream_consume(struct fill_stream *fs, size_t n)
{
	struct fill *f = fs->f;
	uint64_t end = fs->end;
	uint32_t landed;

	fs->pos += n;
	pthread_mutex_lock(&f->lock);
	landed = f->landed;
	if (f->size < end)
		end = f->size;
	pthread_mutex_unlock(&f->lock);
	fs_refill(fs, landed, end);
}

void fill_stream_hold(struct fill_stream *fs)
{
	fs->keep = fs->caller_bufs;
}

void fill_stream_release(struct fill_stream *fs, uint64_t off)
{
	if (!fs->keep || off <= fs->released)
		return;
	fs->released = off;
	fill_stream_consume(fs, 0);
}

unsigned fill_stream_bufs_used(const struct fill_stream *fs)
{
	return fs->caller_bufs ? fs->nbufs : 0;
}

uint64_t fill_stream_left(const struct fill_stream *fs)
{
	uint64_t end = fs->end, size;

	pthread_mutex_lock(&fs->f->lock);
	size = fs->f->size;
	pthread_mutex_unlock(&fs->f->lock);
	if (size < end)
		end = size;
	return end > fs->pos ? end - fs->pos : 0;
}

void fill_stream_close(struct fill_stream **fsp)
{
	struct fill_stream *fs = *fsp;

	if (!fs)
		return;
	*fsp = NULL;
	fs->closed = true;
	__atomic_sub_fetch(&fs->f->readers, 1, __ATOMIC_RELAXED);
	fill_waiter_del(fs->f, &fs->fw);
	fs->inflight -= hddq_cancel(fs->io, fs);
	if (!fs->inflight)
		fs_end(fs);
}

int fill_open(struct gs_io *io, struct gs_obj *obj, uint64_t off,
	      uint64_t len, void *const *bufs, unsigned nbufs, gs_wake_fn wake,
	      gs_wake_fn released, void *arg, struct gs_stream **sp)
{
	struct gs_stream *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	ret = fill_stream_open(io, obj, off, len, bufs, nbufs, wake, released,
			       arg, &s->fs);
	if (ret < 0) {
		free(s);
		return ret;
	}
	*sp = s;
	return 0;
}
