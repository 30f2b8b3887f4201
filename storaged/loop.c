/*
 * The serving-loop skeleton (loop.h).  The loop's own descriptors are
 * tagged in epoll with the address of their field in struct loop (every
 * listener with the array's), which no owner pointer can equal.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "loop.h"

#define LOOP_EVENTS	64		/* epoll events taken per wait */

uint64_t loop_now_ms(void)
{
	return mono_ms();
}

uint64_t loop_now_us(void)
{
	return mono_us();
}

static int epoll_add(struct loop *l, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

	return epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int loop_init(struct loop *l, const struct loop_ops *ops, void *owner)
{
	int ret;

	*l = (struct loop){ .epfd = -1, .stopfd = -1, .ops = ops,
			    .owner = owner };
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0)
		return -errno;
	l->stopfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (l->stopfd < 0) {
		ret = -errno;
		goto out_epoll;
	}
	ret = epoll_add(l, l->stopfd, EPOLLIN, &l->stopfd);
	if (ret)
		goto out_stopfd;
	return 0;

out_stopfd:
	close(l->stopfd);
out_epoll:
	close(l->epfd);
	l->epfd = l->stopfd = -1;
	return ret;
}

void loop_fini(struct loop *l)
{
	if (l->stopfd >= 0)
		close(l->stopfd);
	if (l->epfd >= 0)
		close(l->epfd);
	l->epfd = l->stopfd = -1;
}

int loop_set_io(struct loop *l, struct gs_io *io)
{
	int ret = epoll_add(l, gs_io_fd(io), EPOLLIN, &l->io);

	if (!ret)
		l->io = io;
	return ret;
}

int loop_listen(struct loop *l, int lfd, bool exclusive)
{
	uint32_t events = EPOLLIN | (exclusive ? EPOLLEXCLUSIVE : 0);
	int ret;

	if (l->nlfd == LOOP_LISTEN_MAX)
		return -ENOSPC;
	l->listen_exclusive = exclusive;
	if (l->listening || !l->nlfd) {
		ret = epoll_add(l, lfd, events, l->lfd);
		if (ret)
			return ret;
		l->listening = true;
	}
	l->lfd[l->nlfd++] = lfd;
	return 0;
}

int loop_listen_pause(struct loop *l)
{
	if (!l->listening)
		return 0;
	for (unsigned i = 0; i < l->nlfd; i++)
		if (epoll_ctl(l->epfd, EPOLL_CTL_DEL, l->lfd[i], NULL) < 0)
			return -errno;
	l->listening = false;
	return 0;
}

int loop_listen_resume(struct loop *l)
{
	uint32_t events = EPOLLIN | (l->listen_exclusive ? EPOLLEXCLUSIVE : 0);
	int ret;

	if (l->listening)
		return 0;
	for (unsigned i = 0; i < l->nlfd; i++) {
		ret = epoll_add(l, l->lfd[i], events, l->lfd);
		if (ret && ret != -EEXIST)
			return ret;
	}
	l->listening = true;
	return 0;
}

int loop_add(struct loop *l, int fd, uint32_t events, void *ptr)
{
	return epoll_add(l, fd, events, ptr);
}

int loop_mod(struct loop *l, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
}

void loop_del(struct loop *l, int fd)
{
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
}

void loop_stop(struct loop *l)
{
	eventfd_write(l->stopfd, 1);
}

/* Milliseconds epoll_wait() may sleep: -1 for ever. */
static int wait_ms(struct loop *l)
{
	uint64_t at, now;

	if (!l->ops->deadline)
		return -1;
	at = l->ops->deadline(l);
	if (!at)
		return -1;
	now = loop_now_ms();
	if (at <= now)
		return 0;
	return at - now > INT_MAX ? INT_MAX : (int)(at - now);
}

/* Hands the round's <n> events to their owners; false once stopped. */
static bool dispatch(struct loop *l, const struct epoll_event *evs, int n)
{
	bool run = true;

	for (int i = 0; i < n; i++) {
		void *p = evs[i].data.ptr;

		if (p == &l->stopfd) {
			eventfd_t v;

			eventfd_read(l->stopfd, &v);	/* a later run waits */
			run = false;
		} else if (p == l->lfd) {
			l->ops->accept(l);
		} else if (p == &l->io) {
			gs_io_run(l->io, false);
		} else {
			l->ops->event(l, p, evs[i].events);
		}
	}
	return run;
}

int loop_run(struct loop *l)
{
	struct epoll_event evs[LOOP_EVENTS];
	bool run = true;
	int n;

	while (run) {
		n = epoll_wait(l->epfd, evs, LOOP_EVENTS, wait_ms(l));
		if (n < 0 && errno != EINTR) {
			int err = errno;

			log_err("epoll_wait: %s", strerror(err));
			return -err;
		}
		if (l->ops->due)
			l->ops->due(l, loop_now_ms());
		run = dispatch(l, evs, n < 0 ? 0 : n);
		if (l->ops->round_end)
			l->ops->round_end(l);
	}
	return 0;
}
