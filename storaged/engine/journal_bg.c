/*
 * Checkpoints in the background, in a thread of their own (journal.h,
 * struct journal_bg): no append and no lookup waits for a walk of the
 * whole index.
 *
 * An append that finds the journal due to be weighed asks the thread; it
 * weighs the live index a slice at a time and, when the journal has
 * outgrown it, takes a snapshot: under e->lock it flips <parity> (every
 * linked object is then not yet written), writes the header, and walks
 * e->clock a slice of CP_SLICE records per hold of the lock, writing what
 * it encoded with the lock dropped.  Meanwhile:
 *   - an append goes to the old file, as ever, and is copied to <tail>;
 *   - a linked object is marked written: its PUT is in <tail>;
 *   - an object the walk has not reached that leaves the index, or that
 *     the CLOCK's swap-remove moves behind the walk, is encoded on the spot
 *     (captured), as it was when the snapshot began (a TOUCH or ATTR since
 *     shows in its record and again in <tail>: replay lands on the same).
 * So the snapshot is the index of the moment it began, and the new file,
 * snapshot then <tail>, says what the old one does.  <tail> is written
 * with the lock dropped until a little is left; the rest, the rename and
 * the swap happen under it (with --sync-interval, an fdatasync of that
 * rest and of the dir too: an acknowledged record is never only in the
 * file that the rename replaces).  A crash before the rename leaves the
 * old journal whole; JOURNAL_BG_TMP is removed at the next open.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "engine.h"
#include "journal.h"
#include "log.h"

#define CP_SLICE	128		/* records per hold of e->lock */
#define WEIGH_SLICE	1024		/* records weighed per hold */
#define CP_WRITE	(1u << 20)	/* snapshot bytes gathered per write */
#define CP_TAIL_LEFT	(64u << 10)	/* <tail> left for the final hold */
#define CP_PAUSE_NS	20000		/* between holds: waiters go first */

static bool pending(const struct journal *j, const struct gs_obj *obj)
{
	return j->bg.active && obj->cp_done != j->bg.parity;
}

/* <len> zeroed bytes at the end of <b>; NULL without memory. */
static void *buf_room(struct cp_buf *b, size_t len)
{
	void *p;

	if (b->len + len > b->cap) {
		size_t cap = b->cap ? 2 * b->cap : CP_WRITE;

		while (cap < b->len + len)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p)
			return NULL;
		b->p = p;
		b->cap = cap;
	}
	p = b->p + b->len;
	memset(p, 0, len);
	b->len += len;
	return p;
}

static void buf_free(struct cp_buf *b)
{
	free(b->p);
	*b = (struct cp_buf){ 0 };
}

/* Takes <b>'s bytes (the caller frees them), leaving it empty. */
static struct cp_buf buf_take(struct cp_buf *b)
{
	struct cp_buf t = *b;

	*b = (struct cp_buf){ 0 };
	return t;
}

/* Puts <obj>, live, in the snapshot and marks it written.  e->lock. */
static void capture(struct gs_engine *e, struct gs_obj *obj, int64_t now)
{
	struct journal *j = e->journal;
	size_t len = journal_put_len(e, obj);
	struct jrec *r;

	obj->cp_done = j->bg.parity;
	if (!len || journal_obj_dead(e, obj, now))
		return;
	r = buf_room(&j->bg.snap, len);
	if (!r) {
		j->bg.failed = true;
		return;
	}
	journal_put_encode(e, r, len, obj, obj->meta.cas);
	j->bg.nrec++;
}

void journal_bg_mark(struct gs_engine *e, struct gs_obj *obj)
{
	obj->cp_done = e->journal ? e->journal->bg.parity : false;
}

void journal_bg_unlink(struct gs_engine *e, struct gs_obj *obj,
		       struct gs_obj *last)
{
	struct journal *j = e->journal;
	int64_t now;

	if (!j || !j->bg.active || j->bg.flushed)
		return;
	now = time(NULL);
	if (pending(j, obj))
		capture(e, obj, now);
	if (last != obj && obj->clock_pos < j->bg.pos && pending(j, last))
		capture(e, last, now);
}

void journal_bg_appended(struct gs_engine *e, const void *rec, size_t len)
{
	struct journal *j = e->journal;
	void *p;

	if (!j->bg.active)
		return;
	p = buf_room(&j->bg.tail, len);
	if (!p) {
		j->bg.failed = true;
		return;
	}
	memcpy(p, rec, len);
	j->bg.nrec++;
}

void journal_bg_flushed(struct gs_engine *e)
{
	if (e->journal->bg.active)
		e->journal->bg.flushed = true;
}

void journal_bg_cancel(struct gs_engine *e)
{
	struct journal *j = e->journal;

	if (!j->bg.active)
		return;
	j->bg.active = false;
	buf_free(&j->bg.snap);
	buf_free(&j->bg.tail);
}

/* Drops e->lock for a moment: the GETs that wait for it go first. */
static void pause_unlocked(struct gs_engine *e)
{
	struct timespec t = { 0, CP_PAUSE_NS };

	pthread_mutex_unlock(&e->lock);
	nanosleep(&t, NULL);
	pthread_mutex_lock(&e->lock);
}

/* Writes <b> at <*off> with e->lock dropped, its writeback started at
 * once (no burst of dirty pages for the appends to be throttled behind);
 * frees it.  Keeps the first error in <*err>. */
static void write_unlocked(struct gs_engine *e, int fd, struct cp_buf *b,
			   uint64_t *off, int *err)
{
	pthread_mutex_unlock(&e->lock);
	if (!*err && b->len)
		*err = journal_pwrite_all(fd, b->p, b->len, *off);
	if (!*err && b->len)
		sync_file_range(fd, *off, b->len, SYNC_FILE_RANGE_WRITE);
	*off += b->len;
	buf_free(b);
	pthread_mutex_lock(&e->lock);
}

/* Starts the snapshot: header, a FLUSH for later, every object pending.
 * e->lock held; 0 or -ENOMEM. */
static int snap_begin(struct gs_engine *e)
{
	struct journal *j = e->journal;
	int64_t now = time(NULL);
	struct jhdr *h;

	j->bg.parity = !j->bg.parity;
	j->bg.active = true;
	j->bg.failed = j->bg.flushed = false;
	j->bg.pos = 0;
	j->bg.nrec = 0;
	h = buf_room(&j->bg.snap, sizeof(*h));
	if (h)
		journal_hdr_fill(h, e->next_cas);
	if (h && e->invalid_at > now) {	/* a flush_all for later */
		size_t len = sizeof(struct jrec) + sizeof(struct jflush);
		struct jrec *r = buf_room(&j->bg.snap, len);
		struct jflush *f;

		if (r) {
			f = (struct jflush *)(r + 1);
			f->when = e->invalid_at;
			f->time = now;
			journal_rec_seal(r, len, JREC_FLUSH, 0, 0);
			j->bg.nrec++;
		}
		h = r ? h : NULL;
	}
	return h ? 0 : -ENOMEM;
}

/* Walks the index a slice at a time, writing the snapshot to <fd> from
 * <*off>.  e->lock held (dropped between slices); false when the
 * checkpoint was cancelled meanwhile. */
static bool snap_walk(struct gs_engine *e, int fd, uint64_t *off, int *err)
{
	struct journal *j = e->journal;

	while (j->bg.active) {
		int64_t now = time(NULL);
		struct cp_buf b;
		bool end;

		for (unsigned n = 0; n < CP_SLICE && j->bg.pos < e->clock_len; n++) {
			struct gs_obj *obj = e->clock[j->bg.pos++];

			if (pending(j, obj))
				capture(e, obj, now);
		}
		end = j->bg.pos >= e->clock_len;
		if (!end && j->bg.snap.len < CP_WRITE) {
			pause_unlocked(e);
			continue;
		}
		b = buf_take(&j->bg.snap);
		write_unlocked(e, fd, &b, off, err);
		if (end)
			break;
	}
	return j->bg.active;
}

/* Writes what was appended since the snapshot began, with e->lock dropped,
 * until little is left.  e->lock held. */
static void tail_write(struct gs_engine *e, int fd, uint64_t *off, int *err)
{
	struct journal *j = e->journal;

	for (int round = 0; j->bg.active && round < 8 &&
	     j->bg.tail.len > CP_TAIL_LEFT; round++) {
		struct cp_buf b = buf_take(&j->bg.tail);

		write_unlocked(e, fd, &b, off, err);
	}
}

/* The tail written, the file synced (even without --sync-interval: the
 * rename over the journal would otherwise make the file system allocate
 * and start writing all of it, tens of ms, under the lock), the tail since
 * written too.  e->lock held; false when cancelled meanwhile. */
static bool tail_catch_up(struct gs_engine *e, int fd, uint64_t *off,
			  int *err)
{
	struct journal *j = e->journal;

	tail_write(e, fd, off, err);
	if (j->bg.active && !*err) {
		pthread_mutex_unlock(&e->lock);
		if (fdatasync(fd) < 0)
			*err = -errno;
		pthread_mutex_lock(&e->lock);
	}
	tail_write(e, fd, off, err);
	return j->bg.active;
}

/* The rest of <tail>, then the new file in place; the old one is closed
 * with e->lock dropped.  e->lock held. */
static int snap_commit(struct gs_engine *e, int fd, bool sync, uint64_t off,
		       uint64_t t0)
{
	struct journal *j = e->journal;
	struct cp_buf b = buf_take(&j->bg.tail);
	int64_t nrec = j->bg.nrec;
	int ret = 0, old;

	j->bg.active = false;
	if (b.len)
		ret = journal_pwrite_all(fd, b.p, b.len, off);
	off += b.len;
	buf_free(&b);
	if (ret == 0 && sync && fdatasync(fd) < 0)
		ret = -errno;
	if (ret < 0) {
		close(fd);
		unlinkat(j->dfd, JOURNAL_BG_TMP, 0);
		return ret;
	}
	ret = journal_cp_install(e, JOURNAL_BG_TMP, fd, off, nrec, sync, t0,
				 &old);
	if (ret == 0) {
		pthread_mutex_unlock(&e->lock);
		close(old);
		pthread_mutex_lock(&e->lock);
	}
	return ret;
}

/* Opens JOURNAL_BG_TMP anew, e->lock dropped meanwhile: its fd or -errno. */
static int cp_open(struct gs_engine *e)
{
	struct journal *j = e->journal;
	char err[512], label[4300];
	int fd;

	pthread_mutex_unlock(&e->lock);
	snprintf(label, sizeof(label), "%s.bg", j->path);
	if (unlinkat(j->dfd, JOURNAL_BG_TMP, 0) < 0 && errno != ENOENT) {
		fd = -errno;
	} else {
		fd = dirtrust_open(j->dfd, JOURNAL_BG_TMP,
				   O_RDWR | O_CREAT | O_EXCL, label, 0, err,
				   sizeof(err));
		if (fd < 0)
			log_err("%s", err);
	}
	pthread_mutex_lock(&e->lock);
	return fd;
}

/* A checkpoint from a snapshot.  e->lock held (dropped at times); 0 or
 * -errno (the old journal stays). */
static int checkpoint_bg(struct gs_engine *e)
{
	struct journal *j = e->journal;
	bool sync = e->cfg.sync_interval > 0;
	uint64_t t0 = mono_ms(), off = 0;
	int err = 0, fd = cp_open(e);

	if (fd < 0)
		return fd;
	if (j->bg.stop) {
		err = -ECANCELED;
	} else {
		err = snap_begin(e);
		if (snap_walk(e, fd, &off, &err) &&
		    tail_catch_up(e, fd, &off, &err) && !err &&
		    !j->bg.failed)
			return snap_commit(e, fd, sync, off, t0);
		err = !j->bg.active ? -ECANCELED : err ? err : -ENOMEM;
	}
	journal_bg_cancel(e);
	close(fd);
	unlinkat(j->dfd, JOURNAL_BG_TMP, 0);
	return err;
}

/* journal_weigh() a slice at a time.  e->lock held (dropped at times). */
static void weigh(struct gs_engine *e)
{
	struct journal *j = e->journal;
	uint64_t live = sizeof(struct jhdr), limit;
	int ret;

	for (uint32_t i = 0; i < e->clock_len && !j->bg.stop; ) {
		int64_t now = time(NULL);

		for (unsigned n = 0; n < WEIGH_SLICE && i < e->clock_len; n++, i++)
			if (!journal_obj_dead(e, e->clock[i], now))
				live += journal_put_len(e, e->clock[i]);
		pause_unlocked(e);
	}
	limit = journal_weigh_limit(e, live);
	if (j->end > limit && !j->bg.stop) {
		ret = checkpoint_bg(e);
		if (ret == 0)
			return;
		if (ret != -ECANCELED)
			log_err("%s: checkpoint failed, the journal stays as it is: %s",
				j->path, strerror(-ret));
	}
	journal_weigh_again(j, limit);
}

static void *bg_main(void *arg)
{
	struct gs_engine *e = arg;
	struct journal *j = e->journal;

	pthread_mutex_lock(&e->lock);
	while (!j->bg.stop) {
		if (!j->bg.want) {
			pthread_cond_wait(&j->bg.wake, &e->lock);
			continue;
		}
		j->bg.want = false;
		j->bg.busy = true;
		weigh(e);
		j->bg.busy = false;
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

bool journal_bg_weigh(struct gs_engine *e)
{
	struct journal *j = e->journal;

	if (!j->bg.running) {
		if (j->bg.stop ||
		    pthread_create(&j->bg.thread, NULL, bg_main, e) != 0)
			return false;
		pthread_setname_np(j->bg.thread, "gs-checkpoint");
		j->bg.running = true;
	}
	j->bg.want = true;
	j->next_check = UINT64_MAX;	/* the thread sets it */
	pthread_cond_signal(&j->bg.wake);
	return true;
}

void journal_bg_stop(struct gs_engine *e)
{
	struct journal *j = e->journal;

	pthread_mutex_lock(&e->lock);
	j->bg.stop = true;
	journal_bg_cancel(e);
	pthread_cond_signal(&j->bg.wake);
	pthread_mutex_unlock(&e->lock);
	if (j->bg.running)
		pthread_join(j->bg.thread, NULL);
	j->bg.running = false;
}

void journal_bg_wait(struct gs_engine *e)
{
	struct journal *j = e->journal;
	struct timespec t = { 0, 1000000 };
	bool idle;

	do {
		pthread_mutex_lock(&e->lock);
		idle = !j->bg.want && !j->bg.busy;
		pthread_mutex_unlock(&e->lock);
		if (!idle)
			nanosleep(&t, NULL);
	} while (!idle);
}
