/* usage: test_loop
 * Checks storaged/loop.c, the serving-loop skeleton: owner events, the
 * deadline and due timers, end-of-round work, a listener paused and
 * resumed, and loop_stop() from another thread.
 * Exit 0 when every check passes, 1 otherwise (each failure printed). */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "loop.h"

struct owner {
	int pipe[2];
	int lfd;
	unsigned events, accepts, rounds, dues;
	uint64_t wake_at;		/* the deadline it asks for */
	bool stop_on_event;
};

static void on_accept(struct loop *l)
{
	struct owner *o = l->owner;
	int fd = accept(o->lfd, NULL, NULL);

	if (fd >= 0)
		close(fd);
	o->accepts++;
	loop_stop(l);
}

static void on_event(struct loop *l, void *ptr, uint32_t events)
{
	struct owner *o = l->owner;
	char buf[16];

	CHECK(ptr == o, "event for %p, not the owner", ptr);
	CHECK(events & EPOLLIN, "events %#x", events);
	if (read(o->pipe[0], buf, sizeof(buf)) < 0)
		CHECK(0, "read: %s", strerror(errno));
	o->events++;
	if (o->stop_on_event)
		loop_stop(l);
}

static uint64_t on_deadline(struct loop *l)
{
	return ((struct owner *)l->owner)->wake_at;
}

static void on_due(struct loop *l, uint64_t now)
{
	struct owner *o = l->owner;

	if (o->wake_at && o->wake_at <= now) {
		o->dues++;
		o->wake_at = 0;
		loop_stop(l);
	}
}

static void on_round_end(struct loop *l)
{
	((struct owner *)l->owner)->rounds++;
}

static const struct loop_ops ops = {
	.accept = on_accept,
	.event = on_event,
	.deadline = on_deadline,
	.due = on_due,
	.round_end = on_round_end,
};

static void *stop_later(void *arg)
{
	usleep(50 * 1000);
	loop_stop(arg);
	return NULL;
}

static int listener(int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 8) < 0 || getsockname(fd, (struct sockaddr *)&sa, &sl))
		return -1;
	*port = ntohs(sa.sin_port);
	return fd;
}

static int connect_to(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* An owner descriptor's readiness reaches ops->event with its pointer. */
static void test_events(struct loop *l, struct owner *o)
{
	o->stop_on_event = true;
	CHECK(write(o->pipe[1], "x", 1) == 1, "write");
	CHECK(loop_run(l) == 0, "loop_run");
	CHECK(o->events == 1, "%u events", o->events);
	CHECK(o->rounds >= 1, "no round end");
	o->stop_on_event = false;
}

/* A deadline ends the wait and ops->due sees it past. */
static void test_deadline(struct loop *l, struct owner *o)
{
	uint64_t start = loop_now_ms();

	o->wake_at = start + 30;
	CHECK(loop_run(l) == 0, "loop_run");
	CHECK(o->dues == 1, "%u dues", o->dues);
	CHECK(loop_now_ms() - start >= 30, "woke after %llu ms",
	      (unsigned long long)(loop_now_ms() - start));
}

/* loop_stop() from another thread ends a loop waiting for ever. */
static void test_stop(struct loop *l)
{
	pthread_t t;

	CHECK(pthread_create(&t, NULL, stop_later, l) == 0, "thread");
	CHECK(loop_run(l) == 0, "loop_run");
	pthread_join(t, NULL);
}

/* A paused listener is not reported; resumed, its waiting connection is. */
static void test_listener(struct loop *l, struct owner *o)
{
	pthread_t t;
	int port = 0, c;

	o->lfd = listener(&port);
	CHECK(o->lfd >= 0, "listener");
	CHECK(loop_listen(l, o->lfd, true) == 0, "loop_listen");
	CHECK(loop_listen_pause(l) == 0 && !l->listening, "pause");
	CHECK(loop_listen_pause(l) == 0, "pause twice");
	c = connect_to(port);
	CHECK(c >= 0, "connect");
	CHECK(pthread_create(&t, NULL, stop_later, l) == 0, "thread");
	CHECK(loop_run(l) == 0, "loop_run");
	pthread_join(t, NULL);
	CHECK(o->accepts == 0, "accepted while paused");
	CHECK(loop_listen_resume(l) == 0 && l->listening, "resume");
	CHECK(loop_listen_resume(l) == 0, "resume twice");
	CHECK(loop_run(l) == 0, "loop_run");
	CHECK(o->accepts == 1, "%u accepts", o->accepts);
	close(c);
	close(o->lfd);
}

int main(int argc, char **argv)
{
	struct owner o = { .lfd = -1 };
	struct loop l;

	if (argc > 1) {
		printf("usage: test_loop\nChecks the serving-loop skeleton; "
		       "exit 0 pass, 1 fail.\n");
		return strcmp(argv[1], "--help") ? 2 : 0;
	}
	CHECK(pipe(o.pipe) == 0, "pipe");
	CHECK(loop_init(&l, &ops, &o) == 0, "loop_init");
	CHECK(loop_add(&l, o.pipe[0], EPOLLIN, &o) == 0, "loop_add");
	test_events(&l, &o);
	test_deadline(&l, &o);
	test_stop(&l);
	test_listener(&l, &o);
	loop_del(&l, o.pipe[0]);
	loop_fini(&l);
	CHECK(l.epfd == -1 && l.stopfd == -1, "loop_fini");
	close(o.pipe[0]);
	close(o.pipe[1]);
	return check_result();
}
