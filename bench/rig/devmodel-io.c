/*
 * goblin-devmodel's data path: the device's queue (channels, then the shared
 * bus), the backing file through a per-worker bounce buffer, and the faults
 * a request meets (injected errors, stalls).  The design is in devmodel.h.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devmodel.h"

static void sleep_abs(uint64_t t)
{
	struct timespec ts = {
		.tv_sec = (time_t)(t / 1000000000u),
		.tv_nsec = (long)(t % 1000000000u),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/*
 * Sleeps until <deadline>, never less.  A long sleep wakes WAKE_MARGIN_NS
 * early first: waking an idle vCPU costs ~150 us here, the second, short
 * sleep ~50 us, so replies land closer to their deadline.
 */
#define WAKE_MARGIN_NS	200000u
void sleep_until(uint64_t deadline)
{
	if (deadline > now_ns() + 2 * WAKE_MARGIN_NS)
		sleep_abs(deadline - WAKE_MARGIN_NS);
	sleep_abs(deadline);
}
/*
 * Books <len> bytes at <off> on the channel whose transfer can start soonest
 * (a continuing channel wins ties) and on the bus after it; returns the
 * absolute completion time in ns.
 */
static uint64_t schedule_io(struct model *m, struct worker *w, uint64_t off,
			    uint64_t len)
{
	struct channel *best = NULL;
	uint64_t start = UINT64_MAX, end, now;
	bool seek = true;

	pthread_mutex_lock(&m->lock);
	wait_turn(m, w);
	now = now_ns();
	for (unsigned i = 0; i < m->p.channels; i++) {
		struct channel *c = &m->ch[i];
		bool cont = c->next_off == off;
		uint64_t ready = (c->busy_until > now ? c->busy_until : now) +
				 (cont ? 0 : m->access_ns);

		if (ready < m->bus_until)
			ready = m->bus_until;
		if (ready < start || (ready == start && cont && seek)) {
			best = c;
			start = ready;
			seek = !cont;
		}
	}
	end = start + (uint64_t)llround((double)len * 1000.0 / m->p.bandwidth_mbps);
	best->busy_until = end;
	best->next_off = off + len;
	m->bus_until = end;
	if (seek)
		atomic_fetch_add(&m->st.seeks, 1);
	pass_turn(m, w);
	pthread_mutex_unlock(&m->lock);
	return end;
}

/* Takes <w>'s turn without booking the device; returns when the device is idle. */
uint64_t schedule_barrier(struct model *m, struct worker *w)
{
	uint64_t idle;

	pthread_mutex_lock(&m->lock);
	wait_turn(m, w);
	idle = m->bus_until;
	for (unsigned i = 0; i < m->p.channels; i++)
		if (m->ch[i].busy_until > idle)
			idle = m->ch[i].busy_until;
	pass_turn(m, w);
	pthread_mutex_unlock(&m->lock);
	return idle;
}

/* Grows <w>'s bounce buffer to at least <need> bytes; returns 0 or -errno. */
int bounce_reserve(struct worker *w, size_t need)
{
	void *p;

	if (need <= w->bounce_size)
		return 0;
	if (posix_memalign(&p, DIO_ALIGN, need))
		return -ENOMEM;
	free(w->bounce);
	w->bounce = p;
	w->bounce_size = need;
	return 0;
}

/* Full pread/pwrite of <len> bytes at <off>; returns 0 or -errno. */
static int backing_io(struct model *m, bool write, char *buf, size_t len,
		      uint64_t off)
{
	while (len) {
		ssize_t n = write ? pwrite(m->backing_fd, buf, len, (off_t)off)
				  : pread(m->backing_fd, buf, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			atomic_fetch_add(&m->st.errors, 1);
			return n < 0 ? -errno : -EIO;
		}
		buf += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/*
 * Moves <len> bytes at <off> between the backing file and <w>'s bounce
 * buffer, which holds the aligned span [a0, a1) around them.  A write that
 * does not cover whole blocks reads the partial edge blocks first, under
 * rmw_lock so two writes into one block cannot lose each other's bytes.
 */
static int bounce_io(struct model *m, struct worker *w, bool write,
		     const char *wbuf, size_t len, uint64_t off)
{
	uint64_t a0 = off & ~(uint64_t)(DIO_ALIGN - 1);
	uint64_t a1 = (off + len + DIO_ALIGN - 1) & ~(uint64_t)(DIO_ALIGN - 1);
	size_t span = (size_t)(a1 - a0), head = (size_t)(off - a0);
	bool partial = head || (off + len) % DIO_ALIGN;
	int ret;

	ret = bounce_reserve(w, span);
	if (ret)
		return ret;
	if (!write)
		return backing_io(m, false, w->bounce, span, a0);
	if (!partial) {
		memcpy(w->bounce, wbuf, len);
		return backing_io(m, true, w->bounce, span, a0);
	}
	pthread_mutex_lock(&m->rmw_lock);
	ret = backing_io(m, false, w->bounce, DIO_ALIGN, a0);
	if (!ret && span > DIO_ALIGN)
		ret = backing_io(m, false, w->bounce + span - DIO_ALIGN,
				 DIO_ALIGN, a1 - DIO_ALIGN);
	if (!ret) {
		memcpy(w->bounce + head, wbuf, len);
		ret = backing_io(m, true, w->bounce, span, a0);
	}
	pthread_mutex_unlock(&m->rmw_lock);
	return ret;
}
static bool fault_matches(const struct fault *f, uint64_t off, uint64_t len)
{
	return f->on && (!f->len || (off < f->start + f->len && f->start < off + len));
}

/*
 * Decides whether the request of <len> bytes at <off> fails; returns 0 or
 * the errno to answer (ENOSPC before EIO for writes) and counts it.
 */
static int fault_check(struct model *m, bool write, uint64_t off, uint64_t len)
{
	static const enum fault_kind order[] = { F_WRITE_ENOSPC, F_WRITE_EIO, F_READ_EIO };
	int err = 0;

	pthread_mutex_lock(&m->fault_lock);
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]) && !err; i++) {
		struct fault *f = &m->faults.f[order[i]];

		if (fault_kinds[order[i]].write != write || !fault_matches(f, off, len))
			continue;
		if (++f->seen % f->every)
			continue;
		err = fault_kinds[order[i]].err;
		if (f->left != UINT64_MAX && !--f->left)
			f->on = false;
		switch (order[i]) {
		case F_READ_EIO:
			atomic_fetch_add(&m->st.injected_read_eio, 1);
			break;
		case F_WRITE_EIO:
			atomic_fetch_add(&m->st.injected_write_eio, 1);
			break;
		default:
			atomic_fetch_add(&m->st.injected_write_enospc, 1);
			break;
		}
	}
	pthread_mutex_unlock(&m->fault_lock);
	return err;
}

/*
 * Holds a request that arrived at <arrival> until the stall in force (read
 * again on every change) has passed since then; a cleared stall or SIGTERM
 * lets it go at once.
 */
void stall_wait(struct model *m, uint64_t arrival)
{
	bool held = false;

	pthread_mutex_lock(&m->fault_lock);
	for (;;) {
		uint64_t until = arrival + m->faults.stall_ms * 1000000u;
		struct timespec ts;

		if (m->stopping || !m->faults.stall_ms || now_ns() >= until)
			break;
		held = true;
		ts.tv_sec = (time_t)(until / 1000000000u);
		ts.tv_nsec = (long)(until % 1000000000u);
		pthread_cond_timedwait(&m->stall_cv, &m->fault_lock, &ts);
	}
	pthread_mutex_unlock(&m->fault_lock);
	if (held) {
		atomic_fetch_add(&m->st.stalled, 1);
		atomic_fetch_add(&m->st.stalled_us, (now_ns() - arrival) / 1000);
	}
}
/* Serves one read or write on dev and answers it at its modelled time. */
void dev_io(fuse_req_t req, bool write, const char *wbuf, size_t len,
		   off_t offset)
{
	struct worker *w = this_worker;
	struct model *m = w->m;
	uint64_t off = (uint64_t)offset, deadline, arrival = now_ns();
	int ret;

	if (offset < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (off >= m->size || !len) {
		if (write && len)
			fuse_reply_err(req, ENOSPC);
		else if (write)
			fuse_reply_write(req, 0);
		else
			fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (len > m->size - off)
		len = (size_t)(m->size - off);

	deadline = schedule_io(m, w, off, len);
	ret = -fault_check(m, write, off, len);
	if (!ret)
		ret = bounce_io(m, w, write, wbuf, len, off);
	if (now_ns() > deadline)
		atomic_fetch_add(&m->st.late, 1);
	else
		sleep_until(deadline);
	atomic_fetch_add(&m->st.overshoot_us, (now_ns() - deadline) / 1000);
	stall_wait(m, arrival);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (write) {
		atomic_fetch_add(&m->st.writes, 1);
		atomic_fetch_add(&m->st.write_bytes, len);
		fuse_reply_write(req, len);
	} else {
		atomic_fetch_add(&m->st.reads, 1);
		atomic_fetch_add(&m->st.read_bytes, len);
		fuse_reply_buf(req, w->bounce + (off % DIO_ALIGN), len);
	}
}
