/*
 * A memcache connection's primitives, below the protocol and the serving
 * threads alike: its thread's gs_io, the events it waits for, being
 * scheduled again, reading from its socket, being freed.  The text
 * protocol's fuzzer (t/fuzz/fuzz_text.c) puts a fake socket in the place
 * of this file (and of conn_output.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "loop.h"
#include "server.h"

struct gs_io *conn_io(struct conn *c)
{
	return c->w->loop.io;
}

void conn_set_events(struct conn *c, bool want_out)
{
	uint32_t ev = 0;

	if (!c->input_paused && !c->eof && c->mc.state != CONN_WAIT &&
	    c->mc.state != CONN_CLOSING && c->mc.state != CONN_GET &&
	    !conn_out_full(c))
		ev |= EPOLLIN;
	if (want_out)
		ev |= EPOLLOUT;
	if (ev == c->events)
		return;
	if (loop_mod(&c->w->loop, c->fd, ev, c) == 0)
		c->events = ev;
}

void conn_schedule(struct conn *c)
{
	if (c->dead || list_linked(&c->sched_link))
		return;
	list_add_tail(&c->w->sched, &c->sched_link);
}

void conn_pause_input(struct conn *c, bool pause)
{
	c->input_paused = pause;
	if (!pause)
		conn_schedule(c);
	else
		conn_set_events(c, c->events & EPOLLOUT);
}

ssize_t conn_recv(struct conn *c, void *p, size_t len)
{
	ssize_t n;

	if (c->eof)
		return 0;
	n = read(c->fd, p, len);
	if (n > 0) {
		SRV_ADD(c->srv, bytes_read, n);
		c->last_read = loop_now_ms();
		return n;
	}
	if (n == 0) {
		/* half-closed: what was read before still gets its answers */
		c->eof = true;
		return 0;
	}
	if (errno == EAGAIN || errno == EINTR)
		return 0;
	return -1;
}

void conn_release(struct conn *c)
{
	free(c->rbuf);
	free(c);
}
