/*
 * Ring helpers: geometry, mapping, SPSC queues, doorbells, hand-over.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ring.h"

_Static_assert(sizeof(struct ring_sqe) == 320, "ring_sqe is 320 bytes");
_Static_assert(sizeof(struct ring_cqe) == 104, "ring_cqe is 104 bytes");
_Static_assert(RING_KEY_MAX < sizeof(((struct ring_sqe *)0)->key),
	       "a key fits an sqe");

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static uint32_t clamp(uint32_t v, uint32_t def, uint32_t lo, uint32_t hi)
{
	if (!v)
		return def;
	return v < lo ? lo : v > hi ? hi : v;
}

void ring_geometry(struct ring_hello *h)
{
	h->sq_entries = pow2_at_least(clamp(h->sq_entries, RING_SQ_DEFAULT,
					    RING_SQ_MIN, RING_SQ_MAX));
	h->n_rx = clamp(h->n_rx, RING_RX_DEFAULT, 2, RING_BUFS_MAX);
	h->n_tx = clamp(h->n_tx, RING_TX_DEFAULT, 2, RING_BUFS_MAX);
}

static uint32_t cq_entries_for(const struct ring_hello *h)
{
	/* room for a completion per submission plus one per buffer */
	return pow2_at_least(2 * h->sq_entries + h->n_rx + h->n_tx);
}

/* Offsets of the three areas for geometry <h>. */
static void layout(const struct ring_hello *h, uint32_t cq_entries,
		   uint64_t *sq_off, uint64_t *cq_off, uint64_t *buf_off,
		   uint64_t *size)
{
	*sq_off = align_up(sizeof(struct ring_hdr), RING_ALIGN);
	*cq_off = align_up(*sq_off + (uint64_t)h->sq_entries *
			   sizeof(struct ring_sqe), RING_ALIGN);
	*buf_off = align_up(*cq_off + (uint64_t)cq_entries *
			    sizeof(struct ring_cqe), RING_ALIGN);
	*size = *buf_off + (uint64_t)(h->n_rx + h->n_tx) * RING_BUF_SIZE;
}

/* Points <r>'s views into the mapping at <base> of geometry <hdr>. */
static void ring_set_views(struct ring *r, void *base,
			   const struct ring_hdr *hdr)
{
	r->hdr = base;
	r->sqes = (struct ring_sqe *)((char *)base + hdr->sq_off);
	r->cqes = (struct ring_cqe *)((char *)base + hdr->cq_off);
	r->bufs = (char *)base + hdr->buf_off;
	r->size = hdr->size;
	r->sq_entries = hdr->sq_entries;
	r->cq_entries = hdr->cq_entries;
	r->n_rx = hdr->n_rx;
	r->n_tx = hdr->n_tx;
	r->buf_size = hdr->buf_size;
	r->mapped = 1;
}

int ring_create(struct ring *r, struct ring_hello *h)
{
	struct ring_hdr hdr;
	void *base;
	int fd, ret;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	ring_geometry(h);
	memset(&hdr, 0, sizeof(hdr));
	hdr.magic = RING_MAGIC;
	hdr.version = RING_VERSION;
	hdr.sq_entries = h->sq_entries;
	hdr.cq_entries = cq_entries_for(h);
	hdr.n_rx = h->n_rx;
	hdr.n_tx = h->n_tx;
	hdr.buf_size = RING_BUF_SIZE;
	layout(h, hdr.cq_entries, &hdr.sq_off, &hdr.cq_off, &hdr.buf_off,
	       &hdr.size);

	fd = memfd_create("goblin-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	/* the worker maps it read-write: it must not be able to resize it
	 * under the daemon's mapping (SIGBUS) */
	if (ftruncate(fd, (off_t)hdr.size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, RING_SEALS) < 0) {
		ret = -errno;
		goto out_close;
	}
	base = mmap(NULL, hdr.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		ret = -errno;
		goto out_close;
	}
	memcpy(base, &hdr, sizeof(hdr));
	ring_set_views(r, base, &hdr);
	r->fd = fd;
	r->owned = 1;
	return 0;

out_close:
	close(fd);
	return ret;
}

int ring_attach(struct ring *r, int fd, uint64_t size)
{
	struct ring_hdr hdr;
	struct ring_hello g;
	uint64_t sq_off, cq_off, buf_off, want;
	void *base;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (size < sizeof(hdr) || ring_fd_check(fd, size))
		return -EPROTO;
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return -errno;
	memcpy(&hdr, base, sizeof(hdr));

	/* the geometry must be exactly what ring_create makes of it */
	memset(&g, 0, sizeof(g));
	g.sq_entries = hdr.sq_entries;
	g.n_rx = hdr.n_rx;
	g.n_tx = hdr.n_tx;
	ring_geometry(&g);
	layout(&g, cq_entries_for(&g), &sq_off, &cq_off, &buf_off, &want);
	if (hdr.magic != RING_MAGIC || hdr.version != RING_VERSION ||
	    g.sq_entries != hdr.sq_entries || g.n_rx != hdr.n_rx ||
	    g.n_tx != hdr.n_tx || hdr.cq_entries != cq_entries_for(&g) ||
	    hdr.buf_size != RING_BUF_SIZE || hdr.sq_off != sq_off ||
	    hdr.cq_off != cq_off || hdr.buf_off != buf_off ||
	    hdr.size != want || want != size) {
		munmap(base, size);
		return -EPROTO;
	}
	ring_set_views(r, base, &hdr);
	r->fd = fd;
	return 0;
}

int ring_fd_check(int fd, uint64_t size)
{
	struct stat st;
	int seals;

	if (fstat(fd, &st) < 0)
		return -errno;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0)
		return errno == EINVAL ? -EPROTO : -errno;
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size < size ||
	    (seals & RING_SEALS) != RING_SEALS)
		return -EPROTO;
	return 0;
}

void ring_unmap(struct ring *r)
{
	if (r->mapped)
		munmap(r->hdr, r->size);
	if (r->fd >= 0)
		close(r->fd);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

/* ---- the queues ---- */

static int q_push(struct ring_queue_idx *q, uint32_t entries, void *slots,
		  size_t esz, const void *e)
{
	uint32_t tail = __atomic_load_n(&q->tail, __ATOMIC_RELAXED);
	uint32_t head = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);

	if (tail - head >= entries) {
		/* full: ask for a doorbell, then look once more (the consumer
		 * may have made room before it could see the flag) */
		__atomic_store_n(&q->wait, 1, __ATOMIC_SEQ_CST);
		head = __atomic_load_n(&q->head, __ATOMIC_SEQ_CST);
		if (tail - head >= entries)
			return -EAGAIN;
	}
	memcpy((char *)slots + (size_t)(tail & (entries - 1)) * esz, e, esz);
	__atomic_store_n(&q->tail, tail + 1, __ATOMIC_RELEASE);
	return 0;
}

static int q_pop(struct ring_queue_idx *q, uint32_t entries, const void *slots,
		 size_t esz, void *e)
{
	uint32_t head = __atomic_load_n(&q->head, __ATOMIC_RELAXED);
	uint32_t tail = __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE);

	if (tail == head)
		return 0;
	if (tail - head > entries)
		return -EPROTO;
	memcpy(e, (const char *)slots + (size_t)(head & (entries - 1)) * esz,
	       esz);
	__atomic_store_n(&q->head, head + 1, __ATOMIC_RELEASE);
	return 1;
}

static bool q_wants_doorbell(struct ring_queue_idx *q)
{
	/* orders our head stores before the flag load; pairs with the
	 * producer's seq_cst flag store and head re-load */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&q->wait, __ATOMIC_RELAXED))
		return false;
	return __atomic_exchange_n(&q->wait, 0, __ATOMIC_SEQ_CST) != 0;
}

int ring_sq_push(struct ring *r, const struct ring_sqe *e)
{
	return q_push(&r->hdr->sq, r->sq_entries, r->sqes, sizeof(*e), e);
}

int ring_cq_push(struct ring *r, const struct ring_cqe *e)
{
	return q_push(&r->hdr->cq, r->cq_entries, r->cqes, sizeof(*e), e);
}

int ring_sq_pop(struct ring *r, struct ring_sqe *e)
{
	return q_pop(&r->hdr->sq, r->sq_entries, r->sqes, sizeof(*e), e);
}

int ring_cq_pop(struct ring *r, struct ring_cqe *e)
{
	return q_pop(&r->hdr->cq, r->cq_entries, r->cqes, sizeof(*e), e);
}

bool ring_sq_wants_doorbell(struct ring *r)
{
	return q_wants_doorbell(&r->hdr->sq);
}

bool ring_cq_wants_doorbell(struct ring *r)
{
	return q_wants_doorbell(&r->hdr->cq);
}

/* ---- doorbells ---- */

int ring_doorbell(int fd)
{
	static const char bell = 1;
	ssize_t n;

	do
		n = send(fd, &bell, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
		return -errno;
	return 0;
}

int ring_doorbell_drain(int fd)
{
	char buf[256];
	int total = 0;
	ssize_t n;

	for (;;) {
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0) {
			total += (int)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return total;
		return -errno;
	}
}

/* ---- hand-over ---- */

static int send_all(int fd, const void *p, size_t len)
{
	ssize_t n;

	do
		n = send(fd, p, len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EPROTO;
}

/* One small message: all of it, nothing yet (-EAGAIN), or -EPROTO. */
static int recv_msg(int fd, void *p, size_t len, struct msghdr *mh)
{
	struct iovec iov = { .iov_base = p, .iov_len = len };
	ssize_t n;

	mh->msg_iov = &iov;
	mh->msg_iovlen = 1;
	do
		n = recvmsg(fd, mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	if (n == 0)
		return -ECONNRESET;
	return (size_t)n == len ? 0 : -EPROTO;
}

int ring_send_hello(int fd, const struct ring_hello *h)
{
	return send_all(fd, h, sizeof(*h));
}

int ring_recv_hello(int fd, struct ring_hello *h)
{
	struct msghdr mh;
	int ret;

	memset(&mh, 0, sizeof(mh));
	ret = recv_msg(fd, h, sizeof(*h), &mh);
	if (ret)
		return ret;
	if (h->magic != RING_MAGIC || h->version != RING_VERSION)
		return -EPROTO;
	return 0;
}

int ring_send_welcome(int fd, const struct ring_welcome *w, int region_fd,
		      int ring_fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = (void *)w, .iov_len = sizeof(*w) };
	struct msghdr mh;
	struct cmsghdr *cm;
	int fds[2] = { region_fd, ring_fd };
	ssize_t n;

	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (w->res == 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(fds));
		memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	}
	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == sizeof(*w) ? 0 : -EPROTO;
}

int ring_recv_welcome(int fd, struct ring_welcome *w, int *region_fd,
		      int *ring_fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} ctl;
	struct msghdr mh;
	struct cmsghdr *cm;
	int fds[2] = { -1, -1 };
	int ret;

	*region_fd = -1;
	*ring_fd = -1;
	memset(&mh, 0, sizeof(mh));
	memset(&ctl, 0, sizeof(ctl));
	mh.msg_control = ctl.buf;
	mh.msg_controllen = sizeof(ctl.buf);
	ret = recv_msg(fd, w, sizeof(*w), &mh);
	/* descriptors may come with a short message too: never leak them */
	for (cm = ret == 0 || ret == -EPROTO ? CMSG_FIRSTHDR(&mh) : NULL; cm;
	     cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(fds)))
			memcpy(fds, CMSG_DATA(cm), sizeof(fds));
	}
	if (!ret && (w->magic != RING_MAGIC || w->version != RING_VERSION ||
		     (mh.msg_flags & MSG_CTRUNC)))
		ret = -EPROTO;
	if (!ret && w->res == 0 && (fds[0] < 0 || fds[1] < 0))
		ret = -EPROTO;
	if (ret || w->res) {
		if (fds[0] >= 0)
			close(fds[0]);
		if (fds[1] >= 0)
			close(fds[1]);
		return ret;
	}
	*region_fd = fds[0];
	*ring_fd = fds[1];
	return 0;
}

/* ---- who is at the other end ---- */

int ring_check_server(int fd, const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct stat st;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		snprintf(err, errlen, "SO_PEERCRED: %s", strerror(errno));
		return -errno;
	}
	if (strlen(path) >= sizeof(dir)) {
		snprintf(err, errlen, "socket path too long");
		return -ENAMETOOLONG;
	}
	strcpy(dir, path);
	if (stat(dirname(dir), &st) < 0) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -errno;
	}
	if (cred.uid == 0 || cred.uid == st.st_uid)
		return 0;
	snprintf(err, errlen, "the server on %s runs as uid %u (pid %d), neither root nor uid %u who owns %s",
		 path, (unsigned)cred.uid, (int)cred.pid, (unsigned)st.st_uid,
		 dir);
	return -EPERM;
}
