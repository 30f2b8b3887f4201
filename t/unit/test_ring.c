/* usage: test_ring
 * Checks shared/ring.c: geometry, create/attach, both queues (order, wrap,
 * full -> wait flag -> doorbell), the SCM_RIGHTS hand-over, a forked
 * producer/consumer pair that only sleeps in poll() on doorbells, the
 * seals (a ring cannot be resized; an unsealed or short memfd is refused)
 * and, as root, ring_check_server against a listener of another uid.
 * Exit 0 when every check passes, 1 otherwise (each failure printed). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ring.h"
#include "ring_util.h"

static int failures;

#define CHECK(cond) do { if (!(cond)) { failures++; \
	printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

static void test_geometry(void)
{
	struct ring_hello h;

	memset(&h, 0, sizeof(h));
	ring_geometry(&h);
	CHECK(h.sq_entries == RING_SQ_DEFAULT);
	CHECK(h.n_rx == RING_RX_DEFAULT && h.n_tx == RING_TX_DEFAULT);

	h.sq_entries = 100;		/* rounded up to a power of two */
	h.n_rx = 1;			/* at least two */
	h.n_tx = 100000;
	ring_geometry(&h);
	CHECK(h.sq_entries == 128);
	CHECK(h.n_rx == 2 && h.n_tx == RING_BUFS_MAX);

	h.sq_entries = 1u << 30;
	ring_geometry(&h);
	CHECK(h.sq_entries == RING_SQ_MAX);

	memset(&h, 0, sizeof(h));
	CHECK(ring_size_for(&h) >= (uint64_t)(RING_RX_DEFAULT +
		RING_TX_DEFAULT) * RING_BUF_SIZE + RING_SQ_DEFAULT *
		sizeof(struct ring_sqe));
	CHECK(ring_size_for(&h) % RING_ALIGN == 0);
}

/* Creates a small ring and a second view of it through its fd. */
static int two_views(struct ring *a, struct ring *b, uint32_t sq)
{
	struct ring_hello h = { .sq_entries = sq, .n_rx = 2, .n_tx = 2 };
	int fd;

	if (ring_create(a, &h))
		return -1;
	fd = dup(a->fd);
	if (fd < 0 || ring_attach(b, fd, a->size)) {
		ring_unmap(a);
		return -1;
	}
	return 0;
}

static void test_queues(void)
{
	struct ring a, b;
	struct ring_sqe s;
	struct ring_cqe c;
	uint32_t i, n;

	if (two_views(&a, &b, 16)) {
		CHECK(!"two views of a ring");
		return;
	}
	CHECK(a.hdr != b.hdr && a.sq_entries == 16 && b.sq_entries == 16);
	CHECK(b.cq_entries >= 2 * 16 + 4);

	/* staging buffers are shared too, rx then tx */
	memset(ring_rx_buf(&a, 1), 'r', a.buf_size);
	memset(ring_tx_buf(&a, 0), 't', a.buf_size);
	CHECK(ring_rx_buf(&b, 1)[a.buf_size - 1] == 'r');
	CHECK(ring_tx_buf(&b, 0)[0] == 't' && ring_tx_buf(&b, 1)[0] == 0);

	/* fill the SQ: the 17th push fails and asks for a doorbell */
	memset(&s, 0, sizeof(s));
	for (i = 0; i < 16; i++) {
		s.user_data = i;
		CHECK(ring_sq_push(&b, &s) == 0);
	}
	s.user_data = 16;
	CHECK(ring_sq_push(&b, &s) == -EAGAIN);
	CHECK(ring_sq_pending(&a) == 16);

	CHECK(ring_sq_pop(&a, &s) == 1 && s.user_data == 0);
	CHECK(ring_sq_wants_doorbell(&a));
	CHECK(!ring_sq_wants_doorbell(&a));	/* only once */

	/* wrap the indices many times, order kept */
	for (n = 1, i = 16; i < 1000; i++) {
		s.user_data = i;
		CHECK(ring_sq_push(&b, &s) == 0);
		CHECK(ring_sq_pop(&a, &s) == 1 && s.user_data == n);
		n++;
	}
	while (ring_sq_pop(&a, &s) == 1)
		CHECK(s.user_data == n++);
	CHECK(n == 1000);
	CHECK(ring_sq_pop(&a, &s) == 0);

	/* the CQ the other way round */
	memset(&c, 0, sizeof(c));
	for (i = 0; i < a.cq_entries; i++) {
		c.user_data = i;
		c.res = -(int)i;
		CHECK(ring_cq_push(&a, &c) == 0);
	}
	CHECK(ring_cq_push(&a, &c) == -EAGAIN);
	for (i = 0; i < a.cq_entries; i++)
		CHECK(ring_cq_pop(&b, &c) == 1 && c.user_data == i &&
		      c.res == -(int)i);
	CHECK(ring_cq_wants_doorbell(&b));
	CHECK(ring_cq_pop(&b, &c) == 0);

	/* a peer scribbling on the indices is caught, not followed */
	a.hdr->sq.tail = a.hdr->sq.head + 1000;
	CHECK(ring_sq_pop(&a, &s) == -EPROTO);

	ring_unmap(&b);
	ring_unmap(&a);
	CHECK(a.fd == -1 && !a.mapped);
	ring_unmap(&a);			/* twice is harmless */
}

static void test_attach_checks(void)
{
	struct ring a, b;
	struct ring_hello h = { 0 };
	int fd;

	CHECK(ring_create(&a, &h) == 0);
	fd = dup(a.fd);
	CHECK(ring_attach(&b, fd, a.size - RING_ALIGN) == -EPROTO);
	a.hdr->magic ^= 1;
	CHECK(ring_attach(&b, fd, a.size) == -EPROTO);
	a.hdr->magic ^= 1;
	a.hdr->sq_entries = 100;	/* not what ring_create makes */
	CHECK(ring_attach(&b, fd, a.size) == -EPROTO);
	a.hdr->sq_entries = RING_SQ_DEFAULT;
	CHECK(ring_attach(&b, fd, a.size) == 0);
	ring_unmap(&b);			/* closes fd */
	ring_unmap(&a);
}

/* The ring cannot be resized under either side; a memfd that could be,
 * or is shorter than the welcome says, is refused. */
static void test_seals(void)
{
	struct ring a, b;
	struct ring_hello h = { .sq_entries = 16, .n_rx = 2, .n_tx = 2 };
	int fd, copy;
	void *p;

	CHECK(ring_create(&a, &h) == 0);
	CHECK((fcntl(a.fd, F_GET_SEALS) & RING_SEALS) == RING_SEALS);
	CHECK(ftruncate(a.fd, 0) < 0 && errno == EPERM);
	CHECK(ftruncate(a.fd, a.size * 2) < 0 && errno == EPERM);
	CHECK(ring_fd_check(a.fd, a.size) == 0);
	CHECK(ring_fd_check(a.fd, a.size + 1) == -EPROTO);

	/* the same bytes in an unsealed memfd */
	copy = memfd_create("copy", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	CHECK(copy >= 0 && ftruncate(copy, a.size) == 0);
	p = mmap(NULL, a.size, PROT_READ | PROT_WRITE, MAP_SHARED, copy, 0);
	CHECK(p != MAP_FAILED);
	if (p != MAP_FAILED) {
		memcpy(p, a.hdr, a.size);
		munmap(p, a.size);
	}
	fd = dup(copy);
	CHECK(ring_attach(&b, fd, a.size) == -EPROTO);
	CHECK(fcntl(copy, F_ADD_SEALS, RING_SEALS) == 0);
	CHECK(ring_attach(&b, fd, a.size) == 0);
	ring_unmap(&b);
	close(copy);

	/* memfd without MFD_ALLOW_SEALING, a pipe */
	copy = memfd_create("plain", MFD_CLOEXEC);
	CHECK(copy >= 0 && ftruncate(copy, 4096) == 0);
	CHECK(ring_fd_check(copy, 4096) == -EPROTO);
	close(copy);
	ring_unmap(&a);
}

/* A listener on <path> in a child running as <uid>; returns its pid, -1. */
static pid_t listen_as(const char *path, uid_t uid, int *ready)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int pfd[2], s;
	pid_t pid;
	char c = 0;

	if (pipe(pfd) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		if (setgid(uid) < 0 || setuid(uid) < 0)
			_exit(1);
		s = socket(AF_UNIX, SOCK_STREAM, 0);
		strcpy(sa.sun_path, path);
		unlink(path);
		if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    listen(s, 4) < 0)
			_exit(1);
		if (write(pfd[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	*ready = read(pfd[0], &c, 1) == 1;
	close(pfd[0]);
	return pid;
}

/* What ring_check_server says of a listener on <path> running as <uid>;
 * its reason in <err>. */
static int check_listener(const char *path, uid_t uid, char *err,
			  size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int ready, s, ret = -ENOTCONN;
	pid_t pid;

	err[0] = 0;
	pid = listen_as(path, uid, &ready);
	CHECK(pid > 0 && ready);
	strcpy(sa.sun_path, path);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		ret = ring_check_server(s, path, err, errlen);
	CHECK(s >= 0 && ret != -ENOTCONN);
	if (s >= 0)
		close(s);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return ret;
}

/* Whoever bound the path first cannot pose as the daemon. */
static void test_check_server(void)
{
	char dir[] = "/var/tmp/goblin-test-ring.XXXXXX", path[128], err[256];
	const uid_t nobody = 65534;

	if (geteuid() != 0) {
		printf("note: not root, ring_check_server checks skipped\n");
		return;
	}
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/s.sock", dir);

	/* nobody listens in root's world-writable dir: refused */
	CHECK(chmod(dir, 01777) == 0);
	CHECK(check_listener(path, nobody, err, sizeof(err)) == -EPERM);
	CHECK(strstr(err, "uid 65534") != NULL);

	/* ... the owner of the directory is the daemon */
	CHECK(chown(dir, nobody, nobody) == 0 && chmod(dir, 0750) == 0);
	CHECK(check_listener(path, nobody, err, sizeof(err)) == 0);

	/* root is the daemon anywhere */
	CHECK(check_listener(path, 0, err, sizeof(err)) == 0);
	unlink(path);
	rmdir(dir);
}

static void test_handover(void)
{
	struct ring_welcome w = { .magic = RING_MAGIC, .version = RING_VERSION };
	struct ring_hello h = { .magic = RING_MAGIC, .version = RING_VERSION,
				.sq_entries = 32 }, got;
	int sv[2], mfd, rfd, gfd;
	char *p;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(ring_recv_hello(sv[1], &got) == -EAGAIN);
	CHECK(ring_send_hello(sv[0], &h) == 0);
	CHECK(ring_recv_hello(sv[1], &got) == 0 && got.sq_entries == 32);

	/* an error welcome carries no descriptors */
	w.res = -ENOMEM;
	CHECK(ring_send_welcome(sv[1], &w, -1, -1) == 0);
	CHECK(ring_recv_welcome(sv[0], &w, &rfd, &gfd) == 0);
	CHECK(w.res == -ENOMEM && rfd == -1 && gfd == -1);

	/* a good one carries both, usable in this process */
	mfd = memfd_create("region", 0);
	CHECK(mfd >= 0 && ftruncate(mfd, 4096) == 0 &&
	      pwrite(mfd, "head bytes", 10, 100) == 10);
	w.res = 0;
	w.region_size = 4096;
	CHECK(ring_send_welcome(sv[1], &w, mfd, mfd) == 0);
	CHECK(ring_recv_welcome(sv[0], &w, &rfd, &gfd) == 0);
	CHECK(rfd >= 0 && gfd >= 0 && rfd != mfd && w.region_size == 4096);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, rfd, 0);
	CHECK(p != MAP_FAILED && memcmp(p + 100, "head bytes", 10) == 0);
	munmap(p, 4096);
	close(rfd);
	close(gfd);
	close(mfd);

	/* a bad hello and a closed peer */
	h.magic = 0;
	CHECK(ring_send_hello(sv[0], &h) == 0);
	CHECK(ring_recv_hello(sv[1], &got) == -EPROTO);
	CHECK(ring_doorbell(sv[0]) == 0 && ring_doorbell(sv[0]) == 0);
	CHECK(ring_doorbell_drain(sv[1]) == 2);
	CHECK(ring_doorbell_drain(sv[1]) == 0);
	close(sv[0]);
	CHECK(ring_doorbell_drain(sv[1]) == -ECONNRESET);
	CHECK(ring_doorbell(sv[1]) == -EPIPE);
	close(sv[1]);
}

#define PINGS 200000u

/* Waits on <fd> for a doorbell: 0, 1 when the peer has closed (what it
 * queued before is still to be read), -1 after 5 s of silence. */
static int wait_bell(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, 5000) != 1)
		return -1;
	return ring_doorbell_drain(fd) < 0 ? 1 : 0;
}

static bool is_open(int fd)
{
	char c;

	return recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) != 0;
}

/* Child: echoes every SQE as a CQE (user_data + 1), sleeping in poll. */
static int echo_child(int sock, struct ring *r)
{
	struct ring_sqe s;
	struct ring_cqe c;
	uint32_t seen = 0;
	bool bell;
	int ret;

	memset(&c, 0, sizeof(c));
	while (seen < PINGS) {
		if (wait_bell(sock))		/* the parent never leaves first */
			return 2;
		bell = false;
		while ((ret = ring_sq_pop(r, &s)) == 1) {
			if (s.user_data != seen || s.key[0] != (char)seen)
				return 3;
			seen++;
			c.user_data = s.user_data + 1;
			while (ring_cq_push(r, &c) == -EAGAIN) {
				/* CQ full: tell the parent, wait for room */
				ring_doorbell(sock);
				if (wait_bell(sock))
					return 4;
			}
			bell = true;
		}
		if (ret < 0)
			return 5;
		if (ring_sq_wants_doorbell(r))
			bell = true;
		if (bell)
			ring_doorbell(sock);
	}
	return 0;
}

static void test_ping_pong(void)
{
	struct ring_hello h = { .sq_entries = 16, .n_rx = 2, .n_tx = 2 };
	struct ring a, b;
	struct ring_sqe s;
	struct ring_cqe c;
	uint32_t sent = 0, got = 0;
	bool bad = false, gone = false;
	int sv[2], status;
	pid_t pid;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(ring_create(&a, &h) == 0);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		_exit(echo_child(sv[1], &a));
	}
	close(sv[1]);
	CHECK(ring_attach(&b, dup(a.fd), a.size) == 0);
	ring_unmap(&a);

	memset(&s, 0, sizeof(s));
	while (got < PINGS && !bad) {
		bool bell = false;

		while (sent < PINGS) {
			s.user_data = sent;
			s.key[0] = (char)sent;
			if (ring_sq_push(&b, &s) == -EAGAIN)
				break;
			sent++;
			bell = true;
		}
		if (bell)
			ring_doorbell(sv[0]);
		while (ring_cq_pop(&b, &c) == 1) {
			if (c.user_data != ++got) {
				bad = true;
				break;
			}
		}
		if (ring_cq_wants_doorbell(&b))
			ring_doorbell(sv[0]);
		if (got < PINGS && !ring_cq_pending(&b)) {
			if (gone || wait_bell(sv[0]) < 0) {
				bad = true;
				break;
			}
			gone = !is_open(sv[0]);
		}
	}
	if (bad || got != PINGS)
		printf("ping-pong: sent %u, got %u\n", sent, got);
	CHECK(!bad && got == PINGS && sent == PINGS);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(sv[0]);
	ring_unmap(&b);
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		printf("usage: %s\n", argv[0]);
		return strcmp(argv[1], "--help") ? 1 : 0;
	}
	test_geometry();
	test_queues();
	test_attach_checks();
	test_seals();
	test_check_server();
	test_handover();
	test_ping_pong();
	if (failures) {
		printf("%d check(s) failed\n", failures);
		return 1;
	}
	printf("ring: all checks passed\n");
	return 0;
}
