/*
 * The writer's append and prepend modes (GS_WRITE_APPEND, GS_WRITE_PREPEND:
 * writer.c hands them here): a stored value and new bytes concatenated,
 * built on a stream (the old value) and a set-mode writer (the new one).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "concat.h"
#include "uring.h"
#include "writer.h"

/* Builds of one append or prepend: each one that finds, at its link, that
 * another write replaced the value it read is redone on the newer value. */
#define CONCAT_TRIES	32

/* The appended bytes arrive from the caller into <buf> once admitted; at
 * finish the old value streams in through gs_stream (io_uring, checksummed)
 * and the new one goes out through a writer: no whole-value copy, no
 * blocking read.  The appended bytes count against the admission bound from
 * the start, then as the writer's credit: its first buffers are paid from
 * it, so a large append can't wait on its own charge.
 *
 * The new value is linked over the CAS of the one it was built from
 * (GS_IF_BASE, which keeps a touch that came meanwhile): a set, delete,
 * incr or append of the key in between makes it -EEXIST, and the build is
 * redone on what is there now (up to CONCAT_TRIES builds; then -EBUSY).
 * An acknowledged write is never overwritten with older bytes.  Appends
 * to one key take turns (first come, first served): they would otherwise
 * each be built on the same value and all but one built again, and those
 * on a busier thread could lose every time. */
struct concat {
	struct deferred def;
	struct gs_io *io;
	struct gs_writer *w;
	struct gs_obj *old;
	struct gs_stream *s;
	size_t len;
	bool prepend;
	uint64_t pos, total;
	gs_stored_fn done;
	void *arg;
	struct io_waiter waiter;
	char *buf;			/* the appended bytes as they arrive */
	uint64_t got;
	uint64_t charged;		/* admission held for buf, not yet the writer's */
	int error;			/* no room for buf: the bytes go to the sink */
	uint64_t want_cas;		/* ms C: only over it; 0: any */
	unsigned builds;
	bool turn;			/* the key's turn is ours (turns_lock) */
	bool holding;			/* our thread's copy of turn */
	struct list turn_node;		/* on turns, or a holder's queue */
	struct list turn_queue;		/* holding: those waiting, in order */
	uint8_t klen;
	char key[GS_KEY_MAX];
};

/* ---- turns: one append or prepend of a key at a time ---- */

static pthread_mutex_t turns_lock = PTHREAD_MUTEX_INITIALIZER;
static struct list turns = { &turns, &turns };	/* holders (turn_node) */

/* The concat holding <k>'s key's turn, or NULL.  turns_lock held. */
static struct concat *turn_holder(const struct concat *k)
{
	for (struct list *n = turns.next; n != &turns; n = n->next) {
		struct concat *h;

		h = list_entry(n, struct concat, turn_node);

		if (h->io->e == k->io->e && h->klen == k->klen &&
		    !memcmp(h->key, k->key, k->klen))
			return h;
	}
	return NULL;
}

/* Takes the key's turn, or queues for it: 0, or -EAGAIN when another
 * append holds it (<wake>(<arg>) fires when it may be ours). */
static int turn_take(struct concat *k, gs_wake_fn wake, void *arg)
{
	struct concat *h;

	/* queued before the look: a hand-over after it kicks our io */
	waiter_add(&k->io->writer_bufs.waiters, &k->waiter, wake, arg);
	pthread_mutex_lock(&turns_lock);
	if (!k->turn && !list_linked(&k->turn_node)) {
		h = turn_holder(k);
		if (h) {
			list_add_tail(&h->turn_queue, &k->turn_node);
		} else {
			k->turn = true;
			list_add_tail(&turns, &k->turn_node);
		}
	}
	k->holding = k->turn;
	pthread_mutex_unlock(&turns_lock);
	if (!k->holding)
		return -EAGAIN;
	waiter_del(&k->waiter);
	return 0;
}

/* Leaves the turn (to the first one queued) or the queue. */
static void turn_leave(struct concat *k)
{
	struct concat *next = NULL;

	pthread_mutex_lock(&turns_lock);
	list_del(&k->turn_node);
	if (k->turn && !list_empty(&k->turn_queue)) {
		next = list_entry(k->turn_queue.next, struct concat,
				  turn_node);
		list_del(&next->turn_node);
		list_splice_init(&k->turn_queue, &next->turn_queue);
		next->turn = true;
		list_add_tail(&turns, &next->turn_node);
	}
	k->turn = k->holding = false;
	pthread_mutex_unlock(&turns_lock);
	if (next)
		writer_wake_admission(k->io->e);
}

static void concat_free(struct concat *k)
{
	turn_leave(k);
	waiter_del(&k->waiter);
	gs_writer_abort(&k->w);
	gs_stream_close(&k->s);
	gs_obj_put(k->io->e, &k->old);
	if (k->charged)
		admission_release(k->io, k->charged);
	free(k->buf);
	free(k);
}

static int concat_build(struct concat *k);

static void concat_stored(void *arg, int res, const struct gs_stored *stored)
{
	struct concat *k = arg;

	if (res == -EEXIST && !k->want_cas) {
		/* the value changed under us: build again on the new one */
		res = -EBUSY;
		if (k->builds < CONCAT_TRIES) {
			STAT_ADD(k->io->e, append_retries, 1);
			res = concat_build(k);
		}
		if (res == 0)
			return;
	}
	k->done(k->arg, res, stored);
	concat_free(k);
}

/* Fails before anything is stored. */
static void concat_done(void *arg, int res)
{
	concat_stored(arg, res, &(struct gs_stored){ 0 });
}

static void concat_fail(struct concat *k, int res)
{
	gs_writer_abort(&k->w);
	gs_stream_close(&k->s);
	defer(k->io, &k->def, concat_done, k, res);
}

/* Copies old bytes into [p, p + *n) from the stream; -EAGAIN: not landed
 * (its wake brings us back). */
static int concat_copy_old(struct concat *k, char *p, size_t *n)
{
	const void *src;
	size_t have;
	int ret = gs_stream_peek(k->s, &src, &have);

	if (ret < 0)
		return ret;
	if (!have)
		return -EIO;		/* the old value ended early */
	if (*n > have)
		*n = have;
	memcpy(p, src, *n);
	gs_stream_consume(k->s, *n);
	return 0;
}

/* Whether another write has replaced the value being built on: the build
 * would only meet -EEXIST at its link.  Seen at each wake, so a build that
 * lost starts again at once, not after writing a value nobody will see
 * (on-disk ones would else lose every time to the winner's next append). */
static bool concat_stale(const struct concat *k)
{
	struct gs_engine *e = k->io->e;
	bool linked;

	pthread_mutex_lock(&e->lock);
	linked = k->old->linked;
	pthread_mutex_unlock(&e->lock);
	return !linked;
}

static void concat_pump(void *arg)
{
	struct concat *k = arg;
	uint64_t old_size = k->old->meta.size;
	uint64_t data_at = k->prepend ? 0 : old_size;

	if (k->w && concat_stale(k)) {
		concat_fail(k, -EEXIST);
		return;
	}
	while (k->w && k->pos < k->total) {
		void *p;
		size_t n;
		int ret = gs_writer_buf(k->w, &p, &n, concat_pump, k);

		if (ret == -EAGAIN)
			return;
		if (k->pos >= data_at && k->pos < data_at + k->len) {
			if (n > data_at + k->len - k->pos)
				n = data_at + k->len - k->pos;
			memcpy(p, k->buf + (k->pos - data_at), n);
		} else {
			uint64_t old_end = k->prepend ? k->total : old_size;

			if (n > old_end - k->pos)
				n = old_end - k->pos;
			ret = concat_copy_old(k, p, &n);
			if (ret == -EAGAIN)
				return;
			if (ret < 0) {
				concat_fail(k, ret);
				return;
			}
		}
		gs_writer_advance(k->w, n);
		k->pos += n;
	}
	if (!k->w)
		return;
	gs_stream_close(&k->s);
	gs_writer_finish(&k->w, GS_IF_BASE, k->old->meta.cas, concat_stored, k);
}

static void concat_wake(void *arg)
{
	struct concat *k = arg;

	if (k->w)
		concat_pump(k);
}

/* Admission is held (k->charged): hands it to the writer, reads the old
 * value in and pumps. */
static void concat_start(struct concat *k)
{
	struct gs_io *io = k->io;
	int ret;

	writer_set_credit(k->w, k->charged);
	k->charged = 0;
	ret = gs_stream_open(io, k->old, 0, k->old->meta.size, concat_wake, k,
			     &k->s);
	if (ret < 0) {
		defer(io, &k->def, concat_done, k, ret);
		return;
	}
	concat_pump(k);
}

/* Looks the key up and starts building its new value: 0 (armed), or
 * -ENOENT, -EEXIST (not the CAS asked for), -E2BIG, -ENOMEM. */
static int concat_build(struct concat *k)
{
	struct gs_io *io = k->io;
	const struct gs_meta *m;
	int ret;

	gs_obj_put(io->e, &k->old);
	ret = gs_lookup(io->e, k->key, k->klen, &k->old);
	if (ret < 0)
		return ret;
	m = gs_obj_meta(k->old);
	if (k->want_cas && m->cas != k->want_cas)
		return -EEXIST;
	k->total = m->size + k->len;
	k->pos = 0;
	ret = gs_writer_open(io, k->key, k->klen, k->total, m->flags,
			     m->exptime, GS_WRITE_SET, &k->w);
	if (ret < 0)
		return ret;
	if (!k->charged) {
		/* a rebuild: buf is still held, the last writer spent its
		 * charge; counted again, without a wait (the bytes are in) */
		admission_charge(io, k->len);
		k->charged = k->len;
	}
	k->builds++;
	concat_start(k);
	return 0;
}

int concat_open(struct gs_io *io, const void *key, size_t klen,
		bool prepend, size_t len, struct concat **kp)
{
	struct concat *k;

	if (klen > GS_KEY_MAX)
		return -EINVAL;
	if (gs_check_size(io->e, len) < 0)
		return -E2BIG;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	*k = (struct concat){ .io = io, .prepend = prepend, .len = len,
			      .klen = klen };
	waiter_init(&k->waiter);
	list_init(&k->turn_node);
	list_init(&k->turn_queue);
	memcpy(k->key, key, klen);
	*kp = k;
	return 0;
}

int concat_buf(struct concat *k, void **p, size_t *len, gs_wake_fn wake,
	       void *arg)
{
	struct gs_io *io = k->io;
	uint64_t left = k->len - k->got;

	if (!k->holding && turn_take(k, wake, arg) < 0)
		return -EAGAIN;
	if (!k->buf && !k->error) {
		if (admission_wait(io, k->len, &k->waiter, wake, arg) < 0)
			return -EAGAIN;
		k->buf = malloc(k->len ? k->len : 1);
		if (k->buf) {
			admission_charge(io, k->len);
			k->charged = k->len;
		} else {
			k->error = -ENOMEM;
		}
	}
	if (k->error) {
		*p = io->sink;
		*len = left < SINK_LEN ? left : SINK_LEN;
	} else {
		*p = k->buf + k->got;
		*len = left;
	}
	return 0;
}

void concat_advance(struct concat *k, size_t n)
{
	k->got += n;
}

bool concat_complete(const struct concat *k)
{
	return k->got == k->len;
}

int concat_finish(struct concat *k, uint64_t cas, gs_stored_fn done,
		  void *arg)
{
	int ret = k->error;

	if (!k->buf && !ret) {		/* nothing to append: no admission asked */
		k->buf = malloc(1);
		ret = k->buf ? 0 : -ENOMEM;
	}
	if (ret < 0)
		goto out_free;
	k->done = done;
	k->arg = arg;
	k->want_cas = cas;
	ret = concat_build(k);
	if (ret < 0)
		goto out_free;
	return 0;

out_free:
	concat_free(k);
	return ret;
}

void concat_abort(struct concat **kp)
{
	struct concat *k = *kp;

	if (!k)
		return;
	*kp = NULL;
	concat_free(k);
}
