/*
 * The io_uring core of a gs_io: one io_uring per thread with the pool
 * files and the I/O buffers registered, chunk operations cut into
 * per-stripe pieces, and gs_io_run(), which reaps completions and fires
 * callbacks.
 *
 * Every io_uring_submit() result is handled: -EAGAIN/-EBUSY are waited out
 * (completions reaped meanwhile go to a stash gs_io_run() drains), other
 * errors fail the queued operations through their callbacks (the SQEs
 * the kernel did not take, found through our own record of those handed
 * out: liburing's API only, whatever its ring layout).  A short read
 * or write, or one that completes with -EAGAIN, is resubmitted for what is
 * left (piece_complete).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fill.h"
#include "log.h"
#include "measure.h"
#include "pool.h"
#include "stream.h"
#include "uring.h"
#include "writer.h"

#define SUBMIT_TRIES	100		/* -EAGAIN/-EBUSY retries, 10 ms apart */
#define TIMER_DATA(io)	((void *)&(io)->timer_armed)
#define IDLE_DATA(io)	((void *)&(io)->idle_armed)

/* ---- submission and completion ---- */

static void stash(struct gs_io *io, struct io_piece *s, int res)
{
	s->stash_res = res;
	list_add_tail(&io->stash, &s->stash_node);
}

static struct io_piece *stash_pop(struct gs_io *io)
{
	struct io_piece *s;

	if (list_empty(&io->stash))
		return NULL;
	s = list_entry(io->stash.next, struct io_piece, stash_node);
	list_del(&s->stash_node);
	return s;
}

/* The piece a CQE's <data> completes, or NULL: a timer's (noted as
 * fired) or a NOP left by fail_unsubmitted(). */
static struct io_piece *cqe_piece(struct gs_io *io, void *data)
{
	if (data == TIMER_DATA(io)) {
		io->timer_armed = false;
		io->timer_fired = true;
		return NULL;
	}
	if (data == IDLE_DATA(io)) {
		io->idle_armed = false;
		return NULL;
	}
	return data;
}

/* Moves every completion waiting in the CQ to io->stash, to be handled by
 * gs_io_run(); returns how many. */
static unsigned reap_to_stash(struct gs_io *io)
{
	struct io_uring_cqe *cqe;
	unsigned n = 0;

	while (io_uring_peek_cqe(&io->uring, &cqe) == 0) {
		struct io_piece *s = cqe_piece(io, io_uring_cqe_get_data(cqe));

		if (s)
			stash(io, s, cqe->res);
		io_uring_cqe_seen(&io->uring, cqe);
		n++;
	}
	if (n)
		kick(io);
	return n;
}

/* The kernel refused the SQ for now (-EAGAIN: no memory for requests,
 * -EBUSY: the CQ is backed up): takes completions off its hands, waiting up
 * to 10 ms for one.  Returns false when nothing is in flight to wait for. */
static bool make_room(struct gs_io *io)
{
	struct __kernel_timespec ts = { .tv_nsec = 10 * 1000 * 1000 };
	struct io_uring_cqe *cqe;

	if (reap_to_stash(io))
		return true;
	if (!io->inflight && !io->timer_armed)
		return false;
	io_uring_wait_cqe_timeout(&io->uring, &cqe, &ts);
	reap_to_stash(io);
	return true;
}

/*
 * Fails the SQEs the kernel never consumed: the newest io_uring_sq_ready()
 * of those uring_get_sqe() handed out.  Each one's I/O completes with -EIO
 * through io->stash (its callback fires from gs_io_run); the SQE itself,
 * queued but not read by the kernel (it reads SQEs only inside
 * io_uring_enter), becomes a NOP nobody waits for and goes out with the
 * next submit.
 */
static void fail_unsubmitted(struct gs_io *io, int err)
{
	unsigned n = io_uring_sq_ready(&io->uring);

	log_warn("io_uring submit failed: %s; failing %u queued I/O(s)",
		 strerror(-err), n);
	for (unsigned i = io->sqes_out - n; i != io->sqes_out; i++) {
		struct io_uring_sqe *sqe = io->sqes[i % URING_ENTRIES];
		void *data = (void *)(uintptr_t)sqe->user_data;

		if (data == TIMER_DATA(io))
			io->timer_armed = false;
		else if (data == IDLE_DATA(io))
			io->idle_armed = false;
		else if (data)
			stash(io, data, -EIO);
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data(sqe, NULL);
	}
	kick(io);
}

/* Submits every SQE queued so far (uring_submit less the HDD queue). */
static void sq_flush(struct gs_io *io)
{
	unsigned tries = 0;
	int ret;

	while (io_uring_sq_ready(&io->uring)) {
		ret = io_uring_submit(&io->uring);
		if (ret > 0) {
			tries = 0;
			continue;
		}
		if (ret == 0 || ret == -EAGAIN || ret == -EBUSY || ret == -EINTR) {
			if (++tries <= SUBMIT_TRIES && make_room(io))
				continue;
			if (ret == 0 || ret == -EINTR)
				ret = -EAGAIN;
		}
		fail_unsubmitted(io, ret);
		return;
	}
}

/* An SQE to prepare, recorded for fail_unsubmitted(); NULL when the SQ
 * is full even after a submit. */
static struct io_uring_sqe *uring_get_sqe(struct gs_io *io)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&io->uring);

	if (!sqe) {
		sq_flush(io);
		sqe = io_uring_get_sqe(&io->uring);
	}
	if (sqe)
		io->sqes[io->sqes_out++ % URING_ENTRIES] = sqe;
	return sqe;
}

/* Arms a timeout of <ns> whose CQE carries <data>; false when no SQE. */
static bool arm_timeout(struct gs_io *io, struct __kernel_timespec *ts,
			long long ns, void *data)
{
	struct io_uring_sqe *sqe = uring_get_sqe(io);

	if (!sqe)
		return false;
	*ts = (struct __kernel_timespec){ .tv_sec = ns / 1000000000,
					  .tv_nsec = ns % 1000000000 };
	io_uring_prep_timeout(sqe, ts, 0, 0);
	io_uring_sqe_set_data(sqe, data);
	return true;
}

void uring_arm_timer(struct gs_io *io, long long ns)
{
	if (!arm_timeout(io, &io->timer_ts, ns, TIMER_DATA(io)))
		return;
	io->timer_armed = true;
	sq_flush(io);
}

static int piece_submit(struct gs_io *io, struct io_piece *s)
{
	struct io_op *op = s->op;
	struct pool *p = &io->e->pools[op->tier];
	struct io_uring_sqe *sqe = uring_get_sqe(io);
	int file = p->dirs[s->piece.dir].fixed;
	char *ptr = op->buf + s->piece.buf_off + s->done;
	uint32_t len = s->piece.len - s->done;
	uint64_t off = s->piece.off + s->done;
	int fixed = iobuf_fixed(io, op->buf_idx);

	if (!sqe)
		return -EBUSY;
	if (fixed >= 0 && op->write)
		io_uring_prep_write_fixed(sqe, file, ptr, len, off, fixed);
	else if (fixed >= 0)
		io_uring_prep_read_fixed(sqe, file, ptr, len, off, fixed);
	else if (op->write)
		io_uring_prep_write(sqe, file, ptr, len, off);
	else
		io_uring_prep_read(sqe, file, ptr, len, off);
	sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data(sqe, s);
	return 0;
}

void uring_op_send(struct gs_io *io, struct io_op *op)
{
	for (int i = 0; i < op->npieces; i++)
		if (piece_submit(io, &op->pieces[i]) < 0)
			stash(io, &op->pieces[i], -EBUSY);
}

void uring_submit(struct gs_io *io)
{
	if (!list_empty(&io->hdd.queue))
		hddq_dispatch(io);
	sq_flush(io);
}

/* A chunk operation of <ci> of <obj> for uring_op_start(), not yet sent;
 * NULL with *<err> set when it can't be. */
static struct io_op *op_new(struct gs_io *io, struct gs_obj *obj, uint32_t ci,
			    const struct io_op *how, int *err)
{
	struct chunk *c = &obj_chunks(obj)[ci];
	struct pool *p = &io->e->pools[c->tier];
	struct stripe_piece pieces[GS_MAX_PIECES];
	uint32_t len = round_up(c->len, p->align);
	uint64_t addr = chunk_addr(obj, ci);
	int n = pool_pieces(p, addr, len, pieces, GS_MAX_PIECES);
	struct io_op *op;

	if (n < 0) {
		log_warn("chunk %u at %llu (%u bytes) does not map onto the pool: %s",
			 ci, (unsigned long long)addr, len, strerror(-n));
		*err = n;
		return NULL;
	}
	op = calloc(1, sizeof(*op) + n * sizeof(struct io_piece));
	if (!op) {
		*err = -ENOMEM;
		return NULL;
	}
	*op = (struct io_op){ .io = io, .write = how->write, .buf = how->buf,
			      .buf_idx = how->buf_idx, .done = how->done,
			      .owner = how->owner, .len = len, .chunk = ci,
			      .tier = c->tier, .start_ns = mono_ns(),
			      .pending = n, .npieces = n };
	list_init(&op->qnode);
	for (int i = 0; i < n; i++)
		op->pieces[i] = (struct io_piece){ .op = op, .piece = pieces[i] };
	return op;
}

uint64_t uring_due(struct gs_io *io, uint64_t since, uint64_t bytes)
{
	uint64_t rate = measure_delivery_rate(io->e);

	return since + (uint64_t)((double)bytes * 1e9 / (rate ? rate : 1e8));
}

/* uring_op_start(), a read due at <due> (mono_ns; 0: now). */
static int op_start(struct gs_io *io, struct gs_obj *obj, uint32_t ci,
		    const struct io_op *how, uint64_t due)
{
	int err = 0;
	struct io_op *op = op_new(io, obj, ci, how, &err);

	if (!op)
		return err;
	io->inflight++;
	if (!op->write && op->tier == GS_TIER_HDD && io->e->cfg.hdd_queue) {
		op->due_ns = due ? due : op->start_ns;
		list_add_tail(&io->hdd.queue, &op->qnode);
		return 0;
	}
	uring_op_send(io, op);
	return 0;
}

int uring_read_start(struct gs_io *io, struct gs_obj *obj, uint32_t ci,
		     char *buf, int buf_idx, op_done_fn done, void *owner,
		     uint64_t due)
{
	struct io_op how = { .buf = buf, .buf_idx = buf_idx, .done = done,
			     .owner = owner };

	return op_start(io, obj, ci, &how, due);
}

int uring_op_start(struct gs_io *io, struct gs_obj *obj, uint32_t ci,
		   bool write, char *buf, int buf_idx, op_done_fn done,
		   void *owner)
{
	struct io_op how = { .write = write, .buf = buf, .buf_idx = buf_idx,
			     .done = done, .owner = owner };

	return op_start(io, obj, ci, &how, 0);
}

static void piece_complete(struct gs_io *io, struct io_piece *s, int res)
{
	struct io_op *op = s->op;
	struct gs_engine *e = io->e;

	if (res == -EAGAIN || res == -EINTR) {
		if (piece_submit(io, s) == 0) {
			sq_flush(io);
			return;
		}
		res = -EIO;
	}
	if (res > 0) {
		s->done += res;
		if (s->done < s->piece.len) {
			STAT_ADD(e, short_ios, 1);
			if (s->done % 512 == 0 && piece_submit(io, s) == 0) {
				sq_flush(io);
				return;
			}
			res = -EIO;
		}
	} else if (res == 0) {
		res = -EIO;		/* past the end of the extents file */
	}
	if (res < 0 && op->res == 0)
		op->res = res;
	if (--op->pending)
		return;
	io->inflight--;
	if (op->run_end)
		io->hdd.runs--;
	if (!op->write && op->res == 0)
		measure_io(e, op->tier, mono_ns() - op->start_ns);
	if (op->res < 0) {
		STAT_ADD(e, io_errors, 1);
		log_warn("%s of a %s chunk failed: %s", op->write ? "write" : "read",
			 op->tier == GS_TIER_SSD ? "ssd" : "hdd", strerror(-op->res));
	}
	op->done(op);
	free(op);
}

/* ---- gs_io_run ---- */

/* Fires every waiter on <head>; each re-registers if still blocked. */
static void waiters_fire(struct list *head)
{
	struct list fired;

	list_splice_init(head, &fired);
	while (!list_empty(&fired)) {
		struct io_waiter *w = list_entry(fired.next, struct io_waiter, node);

		waiter_del(w);
		w->fn(w->arg);
	}
}

/* Handles the stashed completions and those in the CQ; returns how many. */
static int complete_all(struct gs_io *io)
{
	struct io_uring_cqe *cqe;
	struct io_piece *s;
	int n = 0;

	for (;;) {
		if ((s = stash_pop(io))) {
			piece_complete(io, s, s->stash_res);
		} else if (io_uring_peek_cqe(&io->uring, &cqe) == 0) {
			struct io_piece *piece = cqe_piece(io, io_uring_cqe_get_data(cqe));
			int res = cqe->res;

			io_uring_cqe_seen(&io->uring, cqe);
			if (piece)
				piece_complete(io, piece, res);
		} else {
			break;
		}
		n++;
	}
	return n;
}

/* Fires the callbacks deferred so far; returns how many. */
static int fire_deferred(struct gs_io *io)
{
	struct list now;
	int n = 0;

	list_splice_init(&io->deferred, &now);
	while (!list_empty(&now)) {
		struct deferred *d = list_entry(now.next, struct deferred, node);

		list_del(&d->node);
		d->fn(d->arg, d->res);	/* may free the owner of <d> */
		n++;
	}
	return n;
}

int gs_io_run(struct gs_io *io, bool wait)
{
	struct io_uring_cqe *cqe;
	eventfd_t v;
	int n;

	eventfd_read(io->efd, &v);
	uring_submit(io);		/* the HDD queue's next runs */
	if (wait && list_empty(&io->deferred) && list_empty(&io->stash) &&
	    io->inflight) {
		int ret = io_uring_wait_cqe(&io->uring, &cqe);

		if (ret < 0 && ret != -EINTR)
			return ret;
	}
	n = complete_all(io);
	n += fill_remote_run(io);
	n += fire_deferred(io);
	if (!list_empty(&io->stream_bufs.waiters) && stream_reclaim_windows(io))
		io->timer_fired = true;
	if (io->stream_bufs.nfree || io->timer_fired) {
		io->timer_fired = false;
		waiters_fire(&io->stream_bufs.waiters);
	}
	if (!list_empty(&io->writer_bufs.waiters) && !io->writer_bufs.nfree)
		writer_reclaim_bufs(io);
	if ((io->writer_bufs.nfree || !io->writer_bufs.n) &&
	    !admission_full(io->e, GS_IO_BUFFER))
		waiters_fire(&io->writer_bufs.waiters);
	stream_waiters_check(io);
	writer_waiters_check(io);
	if (!list_empty(&io->sync_waiters))
		writer_sync_check(io);
	if (!io->idle_armed)
		iobufs_idle(io);
	uring_submit(io);
	return n;
}

int gs_io_fd(const struct gs_io *io)
{
	return io->efd;
}

unsigned gs_io_pending(const struct gs_io *io)
{
	return io->inflight + !list_empty(&io->deferred) + !list_empty(&io->stash);
}

/* ---- create / destroy ---- */

int iobuf_get(struct gs_io *io, struct iobufs *bs)
{
	int idx = bs->nfree ? bs->free[--bs->nfree] : -1;
	struct iovec iov;

	if (idx < 0 || io->buf_state[idx] != BUF_UNUSED)
		return idx;
	iov = (struct iovec){ iobuf_ptr(io, idx), GS_IO_BUFFER };
	if (io_uring_register_buffers_update_tag(&io->uring, idx, &iov,
						 NULL, 1) == 1)
		io->buf_state[idx] = BUF_REGISTERED;
	else
		io->buf_state[idx] = BUF_PLAIN;
	bs->resident++;
	STAT_ADD(io->e, io_buffer_bytes, GS_IO_BUFFER);
	return idx;
}

/* Gives buffer <idx> (free) back: its slot emptied, then its pages
 * dropped; false when the kernel keeps the slot (the pages stay, as its
 * pinned copy must match them). */
static bool iobuf_return(struct gs_io *io, int idx)
{
	struct iovec iov = { NULL, 0 };

	if (io->buf_state[idx] == BUF_REGISTERED &&
	    io_uring_register_buffers_update_tag(&io->uring, idx, &iov,
						 NULL, 1) != 1)
		return false;
	madvise(iobuf_ptr(io, idx), GS_IO_BUFFER, MADV_DONTNEED);
	io->buf_state[idx] = BUF_UNUSED;
	STAT_SUB(io->e, io_buffer_bytes, GS_IO_BUFFER);
	STAT_ADD(io->e, io_buffer_returns, 1);
	return true;
}

/* Gives back the buffers of <bs> free for IOBUF_IDLE_MS at <now>, oldest
 * first (the bottom of the stack); returns when the next one comes due,
 * 0 when no other free buffer holds pages. */
static uint64_t iobufs_trim(struct gs_io *io, struct iobufs *bs, uint64_t now)
{
	uint64_t due, next = 0;

	if (bs->resident + bs->nfree <= bs->n)
		return 0;		/* every resident buffer is in use */
	for (unsigned i = 0; i < bs->nfree; i++) {
		int idx = bs->free[i];

		if (io->buf_state[idx] == BUF_UNUSED)
			continue;
		due = bs->put_ns[i] + IOBUF_IDLE_MS * 1000000ull;
		if (due <= now && iobuf_return(io, idx))
			bs->resident--;
		else if (!next || due < next)
			next = due > now ? due : now;
	}
	return next;
}

void iobufs_idle(struct gs_io *io)
{
	uint64_t now = mono_ns(), floor = IOBUF_IDLE_MS * 1000000ull / 4;
	uint64_t due = iobufs_trim(io, &io->stream_bufs, now);
	uint64_t wdue = iobufs_trim(io, &io->writer_bufs, now);

	if (!due || (wdue && wdue < due))
		due = wdue;
	if (!due)
		return;
	due = due - now > floor ? due - now : floor;
	if (!arm_timeout(io, &io->idle_ts, due, IDLE_DATA(io)))
		return;
	io->idle_armed = true;
	uring_submit(io);
}

/* Registers <io>'s <n> buffers: a sparse table filled on first use, or,
 * on a kernel without sparse tables, all of them now.  0 or -errno. */
static int iobufs_register(struct gs_io *io, unsigned n)
{
	struct iovec *iov;
	int ret;

	io->buf_state = calloc(n, 1);
	if (!io->buf_state)
		return -ENOMEM;
	if (io_uring_register_buffers_sparse(&io->uring, n) == 0)
		return 0;
	iov = calloc(n, sizeof(*iov));
	if (!iov)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++)
		iov[i] = (struct iovec){ iobuf_ptr(io, i), GS_IO_BUFFER };
	ret = io_uring_register_buffers(&io->uring, iov, n);
	free(iov);
	if (ret < 0)
		return ret;
	memset(io->buf_state, BUF_REGISTERED, n);
	io->stream_bufs.resident = io->stream_bufs.n;
	io->writer_bufs.resident = io->writer_bufs.n;
	STAT_ADD(io->e, io_buffer_bytes, (uint64_t)n * GS_IO_BUFFER);
	return 0;
}

/* What <io>'s buffers no longer hold. */
static void iobufs_unaccount(struct gs_io *io)
{
	unsigned n = io->bufmem_len / GS_IO_BUFFER;

	for (unsigned i = 0; io->buf_state && i < n; i++)
		if (io->buf_state[i] != BUF_UNUSED)
			STAT_SUB(io->e, io_buffer_bytes, GS_IO_BUFFER);
}

static void iobufs_free(struct iobufs *bs)
{
	free(bs->free);
	free(bs->put_ns);
}

static int iobufs_init(struct iobufs *bs, unsigned n, unsigned base)
{
	bs->free = calloc(n ? n : 1, sizeof(int));
	bs->put_ns = calloc(n ? n : 1, sizeof(uint64_t));
	if (!bs->free || !bs->put_ns)
		return -ENOMEM;
	bs->n = n;
	bs->base = base;
	for (unsigned i = 0; i < n; i++)
		bs->free[bs->nfree++] = base + n - 1 - i;
	list_init(&bs->waiters);
	return 0;
}

int gs_io_create(struct gs_engine *e, struct gs_io **iop)
{
	bool disk = e->nfiles > 0;
	unsigned nstream = disk ? e->cfg.io_buffers * e->cfg.io_streams : 0;
	unsigned nwriter = disk ? 2 * e->cfg.io_buffers : 0;
	struct gs_io *io = calloc(1, sizeof(*io));
	int ret;

	if (!io)
		return -ENOMEM;
	io->e = e;
	list_init(&io->deferred);
	list_init(&io->stash);
	list_init(&io->holders);
	list_init(&io->writer_holders);
	list_init(&io->sync_waiters);
	list_init(&io->remote);
	list_init(&io->hdd.queue);
	pthread_mutex_init(&io->remote_lock, NULL);
	io->sink = malloc(SINK_LEN);
	if (!io->sink) {
		ret = -ENOMEM;
		goto out_free;
	}
	io->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (io->efd < 0) {
		ret = -errno;
		goto out_free;
	}
	ret = io_uring_queue_init(URING_ENTRIES, &io->uring, 0);
	if (ret < 0)
		goto out_efd;
	ret = io_uring_register_eventfd(&io->uring, io->efd);
	if (ret < 0)
		goto out_uring;
	if (iobufs_init(&io->stream_bufs, nstream, 0) < 0 ||
	    iobufs_init(&io->writer_bufs, nwriter, nstream) < 0) {
		ret = -ENOMEM;
		goto out_iobufs;
	}
	if (disk) {
		unsigned n = nstream + nwriter;

		io->bufmem_len = (size_t)n * GS_IO_BUFFER;
		io->bufmem = mmap(NULL, io->bufmem_len, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (io->bufmem == MAP_FAILED) {
			io->bufmem = NULL;
			ret = -ENOMEM;
			goto out_iobufs;
		}
		ret = iobufs_register(io, n);
		if (ret < 0)
			goto out_mem;
		ret = io_uring_register_files(&io->uring, e->files, e->nfiles);
		if (ret < 0)
			goto out_mem;
	}
	pthread_mutex_lock(&e->io_lock);
	list_add_tail(&e->io_list, &io->engine_node);
	pthread_mutex_unlock(&e->io_lock);
	*iop = io;
	return 0;

out_mem:
	iobufs_unaccount(io);
	free(io->buf_state);
	munmap(io->bufmem, io->bufmem_len);
out_iobufs:
	iobufs_free(&io->stream_bufs);
	iobufs_free(&io->writer_bufs);
out_uring:
	io_uring_queue_exit(&io->uring);
out_efd:
	close(io->efd);
out_free:
	pthread_mutex_destroy(&io->remote_lock);
	free(io->sink);
	free(io);
	return ret;
}

void gs_io_destroy(struct gs_io **iop)
{
	struct gs_io *io = *iop;
	if (!io)
		return;
	while (gs_io_pending(io))
		if (gs_io_run(io, true) < 0)
			break;
	writer_sync_drain(io);
	pthread_mutex_lock(&io->e->io_lock);
	list_del(&io->engine_node);
	pthread_mutex_unlock(&io->e->io_lock);
	io_uring_queue_exit(&io->uring);
	iobufs_unaccount(io);
	free(io->buf_state);
	if (io->bufmem)
		munmap(io->bufmem, io->bufmem_len);
	iobufs_free(&io->stream_bufs);
	iobufs_free(&io->writer_bufs);
	close(io->efd);
	pthread_mutex_destroy(&io->remote_lock);
	free(io->sink);
	free(io);
	*iop = NULL;
}
