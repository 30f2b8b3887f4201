/*
 * The HDD queue of a gs_io (--hdd-queue; its types in uring-t.h): reads of
 * the HDD pool wait here and leave as runs (a read and the same owner's
 * queued reads that go on from it on the disk: one seek), the one due
 * first going first, while fewer than --hdd-queue runs are in the
 * kernel's hands; a closed stream's reads still waiting are dropped.
 */
#include <stdlib.h>

#include "uring.h"

#define LEAD_RUN	4		/* chunks in a run at most: stream.c's
					 * LEAD_MAX */

/* Whether <next> reads on from where <op> ends on the disk, for the same
 * owner: the device goes on without a seek. */
static bool op_continues(const struct io_op *op, const struct io_op *next)
{
	const struct stripe_piece *a = &op->pieces[op->npieces - 1].piece;
	const struct stripe_piece *b = &next->pieces[0].piece;

	return next->owner == op->owner && a->dir == b->dir &&
	       a->off + a->len == b->off;
}

#define QOP(n)	list_entry(n, struct io_op, qnode)

/* The queued read that goes next: the one due first, the first queued
 * among those due alike. */
static struct io_op *sched_pick(struct io_sched *q)
{
	struct io_op *best = QOP(q->queue.next);

	for (struct list *n = best->qnode.next; n != &q->queue; n = n->next)
		if (QOP(n)->due_ns < best->due_ns)
			best = QOP(n);
	return best;
}

/* A queued read that continues <op> (op_continues), or NULL. */
static struct io_op *sched_next(struct io_sched *q, const struct io_op *op)
{
	for (struct list *n = q->queue.next; n != &q->queue; n = n->next)
		if (op_continues(op, QOP(n)))
			return QOP(n);
	return NULL;
}

/* Where the run of <op> starts: the queued read of its owner it continues,
 * and so on back (due times follow the measured rate, which moves: a later
 * chunk may be due first). */
static struct io_op *sched_first(struct io_sched *q, struct io_op *op)
{
	struct list *n = q->queue.next;

	while (n != &q->queue)
		if (op_continues(QOP(n), op)) {
			op = QOP(n);
			n = q->queue.next;
		} else {
			n = n->next;
		}
	return op;
}

/* Sends runs from the HDD queue of <io> while fewer than --hdd-queue are
 * in flight; each run leaves as one, the kernel gets it back to back. */
void hddq_dispatch(struct gs_io *io)
{
	struct io_sched *q = &io->hdd;
	struct io_op *op, *next;

	while (q->runs < io->e->cfg.hdd_queue && !list_empty(&q->queue)) {
		op = sched_first(q, sched_pick(q));
		for (unsigned n = 1; ; n++) {
			list_del(&op->qnode);
			uring_op_send(io, op);
			next = n < LEAD_RUN ? sched_next(q, op) : NULL;
			if (!next)
				break;
			op = next;
		}
		op->run_end = true;
		q->runs++;
		q->sent++;
	}
}

unsigned hddq_cancel(struct gs_io *io, const void *owner)
{
	struct list *n, *next;
	unsigned k = 0;

	for (n = io->hdd.queue.next; n != &io->hdd.queue; n = next) {
		struct io_op *op = QOP(n);

		next = n->next;
		if (op->owner != owner)
			continue;
		list_del(&op->qnode);
		io->inflight--;
		free(op);
		k++;
	}
	if (k)
		STAT_ADD(io->e, hdd_cancels, k);
	return k;
}
