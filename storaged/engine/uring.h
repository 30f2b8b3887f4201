/*
 * A thread's gs_io (uring.c): the io_uring core, its buffers, waiters and
 * deferred callbacks.  Types and the design in uring-t.h.
 */
#ifndef GOBLIN_URING_H
#define GOBLIN_URING_H

#include <sys/eventfd.h>
#include <time.h>

#include "clock.h"
#include "engine.h"
#include "uring-t.h"

/* ---- small helpers ---- */

static inline void waiter_init(struct io_waiter *w)
{
	list_init(&w->node);
}

static inline bool waiter_queued(const struct io_waiter *w)
{
	return list_linked(&w->node);
}

/* Queues <w> on <head> to call <fn>(<arg>); a no-op when already queued. */
static inline void waiter_add(struct list *head, struct io_waiter *w,
			      gs_wake_fn fn, void *arg)
{
	if (waiter_queued(w))
		return;
	w->fn = fn;
	w->arg = arg;
	list_add_tail(head, &w->node);
}

static inline void waiter_del(struct io_waiter *w)
{
	list_del(&w->node);
}

static inline void kick(struct gs_io *io)
{
	eventfd_write(io->efd, 1);
}

/* Queues <fn>(<arg>, <res>) for the next gs_io_run() in <d>, which its
 * owner embeds. */
static inline void defer(struct gs_io *io, struct deferred *d, gs_done_fn fn,
			 void *arg, int res)
{
	d->fn = fn;
	d->arg = arg;
	d->res = res;
	list_add_tail(&io->deferred, &d->node);
	kick(io);
}

/* A buffer of <bs>, registered on its first use; -1 when none is free. */
int iobuf_get(struct gs_io *io, struct iobufs *bs);

/* Gives back what stayed free for IOBUF_IDLE_MS and arms the timer for
 * the next (from gs_io_run, while that timer is not armed). */
void iobufs_idle(struct gs_io *io);

/* The registered-buffer index for I/O on buffer <idx>, -1 for plain I/O. */
static inline int iobuf_fixed(const struct gs_io *io, int idx)
{
	return idx >= 0 && io->buf_state[idx] == BUF_REGISTERED ? idx : -1;
}

static inline void iobuf_put(struct iobufs *bs, int idx)
{
	bs->put_ns[bs->nfree] = mono_ns();
	bs->free[bs->nfree++] = idx;
}

static inline char *iobuf_ptr(struct gs_io *io, int idx)
{
	return io->bufmem + (size_t)idx * GS_IO_BUFFER;
}

static inline uint32_t tier_align(struct gs_engine *e, enum gs_tier t)
{
	return e->pools[t].align;
}

/* Sends the HDD queue's next runs while --hdd-queue allows (uring-t.h),
 * then submits every queued SQE; -EAGAIN/-EBUSY are waited out, any other
 * error (or a kernel that stays busy) fails the queued operations. */
void uring_submit(struct gs_io *io);
/* Arms a read or write of chunk <ci> of <obj> to/from <buf> (registered
 * buffer <buf_idx>, or -1); <done>(op) fires from gs_io_run() with op->res.
 * The caller submits, once for all it arms.  Returns 0 or -errno. */
int uring_op_start(struct gs_io *io, struct gs_obj *obj, uint32_t ci,
		   bool write, char *buf, int buf_idx, op_done_fn done,
		   void *owner);
/* uring_op_start() of a read due at <due> (mono_ns(), 0: now): an HDD
 * read waits in the HDD queue until its turn, the due first going first
 * (uring_op_start()'s reads are due now). */
int uring_read_start(struct gs_io *io, struct gs_obj *obj, uint32_t ci,
		     char *buf, int buf_idx, op_done_fn done, void *owner,
		     uint64_t due);
/* Hands the pieces of <op> to the SQ; one the SQ has no room for fails
 * with -EBUSY through io->stash. */
void uring_op_send(struct gs_io *io, struct io_op *op);

/* ---- the HDD queue (hddq.c) ---- */

/* Sends runs from the HDD queue of <io> while fewer than --hdd-queue are
 * in flight (from uring_submit()). */
void hddq_dispatch(struct gs_io *io);
/* Drops the reads of <owner> still waiting in the HDD queue, unsent (a
 * closed stream's read-ahead: nobody will take those bytes); their done
 * callbacks are not called.  How many; the caller counts them off its
 * reads in flight. */
unsigned hddq_cancel(struct gs_io *io, const void *owner);
/* When a consumer that started at <since> (mono_ns()) reaches <bytes> on,
 * at the measured delivery rate (100 MB/s until measured). */
uint64_t uring_due(struct gs_io *io, uint64_t since, uint64_t bytes);
/* Arms the timer that makes gs_io_run() come back after <ns> even when no
 * completion does. */
void uring_arm_timer(struct gs_io *io, long long ns);

#endif /* GOBLIN_URING_H */
