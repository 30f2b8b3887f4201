/*
 * Serving threads: each has an epoll loop watching the shared memcache
 * listener (EPOLLEXCLUSIVE), its own gs_io, and the connections it accepted.  Output is
 * a queue of byte buffers and objects; an object becomes a stream (and
 * takes a read-ahead window) only when it reaches the head of the queue, so
 * a pipelining client can't hold windows it is not sending from, and at
 * most CONN_PINS_MAX objects are queued per connection.
 *
 * Timeouts: each connection keeps when it last read and last sent; the
 * loop's epoll_wait() sleeps until the earliest deadline any connection
 * could have (next_check), then one pass closes those past theirs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "server.h"

#define RBUF_MIN	16384
#define OUT_ITEMS_MAX	64		/* stop reading commands past this */
#define OUT_BYTES_MAX	(4u << 20)
#define IOV_MAX_SEND	64
#define ACCEPT_RETRY_MS	100		/* out of fds: try accepting again */
#define FD_HEADROOM	1100		/* fds besides memcache connections:
					 * pools, nginx ring links, epoll */

static const char too_many[] = "ERROR Too many open connections\r\n";

struct out {
	struct out *next;
	struct gs_obj *obj;		/* object reply: pinned until streamed */
	struct gs_stream *stream;
	bool is_obj;
	size_t len, off, cap;
	char data[];
};

struct worker {
	struct server *srv;
	unsigned id;
	pthread_t tid;
	struct loop loop;		/* its epoll set, stop fd and gs_io */
	struct conn *sched;
	struct conn *dead;
	struct conn *all;		/* guarded by lock (stats conns reads it) */
	pthread_mutex_t lock;
	bool inited, started;
	bool accept_off;		/* listener out of the loop (no fds) */
	uint64_t accept_retry;		/* when to take it back */
	uint64_t next_check;		/* earliest timeout deadline, 0: none */
};

struct gs_io *conn_io(struct conn *c)
{
	return c->w->loop.io;
}

/* ---- output queue ---- */

static void out_free(struct conn *c, struct out *o)
{
	gs_stream_close(&o->stream);
	gs_obj_put(c->srv->e, &o->obj);
	if (!o->is_obj)
		c->out_bytes -= o->len - o->off;
	else
		c->out_objs--;
	c->out_items--;
	free(o);
}

static void out_push(struct conn *c, struct out *o)
{
	o->next = NULL;
	if (c->out_tail)
		c->out_tail->next = o;
	else
		c->out_head = o;
	c->out_tail = o;
	c->out_items++;
	c->out_objs += o->is_obj;
}

/* A text buffer with room for at least <len> bytes. */
static struct out *out_text_new(size_t len)
{
	size_t cap = len > 4096 ? len : 4096;
	struct out *o = malloc(sizeof(*o) + cap);

	if (o)
		*o = (struct out){ .cap = cap };
	return o;
}

/* Appends <len> bytes to the text buffer <o>, which has room. */
static void out_text_add(struct conn *c, struct out *o, const char *s,
			 size_t len)
{
	memcpy(o->data + o->len, s, len);
	o->len += len;
	c->out_bytes += len;
}

/* Whether the queue's last buffer takes <len> more bytes. */
static bool tail_has_room(const struct conn *c, size_t len)
{
	const struct out *o = c->out_tail;

	return o && !o->is_obj && o->cap - o->len >= len;
}

static void out_pop(struct conn *c)
{
	struct out *o = c->out_head;

	c->out_head = o->next;
	if (!c->out_head)
		c->out_tail = NULL;
	out_free(c, o);
}

/* A reply that can't be queued must not leave the client reading the
 * next one in its place: the connection is cut (conn_run). */
int conn_reply(struct conn *c, const char *s, size_t len)
{
	struct out *o;

	if (!tail_has_room(c, len)) {
		o = out_text_new(len);
		if (!o) {
			c->broken = true;
			return -ENOMEM;
		}
		out_push(c, o);
	}
	out_text_add(c, c->out_tail, s, len);
	return 0;
}

int conn_replyf(struct conn *c, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(buf)) {
		/* a cut line would lose its "\r\n": cut the connection */
		c->broken = true;
		return -ENOBUFS;
	}
	return conn_reply(c, buf, n);
}

int conn_reply_value(struct conn *c, const char *hdr, size_t len,
		     struct gs_obj *obj)
{
	struct out *h = NULL, *o, *t;

	/* everything is allocated before anything is queued */
	if (!tail_has_room(c, len))
		h = out_text_new(len);
	o = malloc(sizeof(*o));
	t = out_text_new(2);
	if ((!h && !tail_has_room(c, len)) || !o || !t) {
		free(h);
		free(o);
		free(t);
		gs_obj_put(c->srv->e, &obj);
		c->broken = true;
		return -ENOMEM;
	}
	if (h)
		out_push(c, h);
	out_text_add(c, c->out_tail, hdr, len);
	*o = (struct out){ .obj = obj, .is_obj = true };
	out_push(c, o);
	out_push(c, t);
	out_text_add(c, t, "\r\n", 2);
	return 0;
}

static void stream_wake(void *arg)
{
	conn_schedule(arg);
}

/* Sends what can go now.  Returns 1 when the socket is full, 0 when the
 * queue is drained or waits on a stream, -1 when the connection must go. */
static int conn_send(struct conn *c)
{
	for (;;) {
		struct iovec iov[IOV_MAX_SEND];
		struct out *o = c->out_head;
		size_t total = 0;
		ssize_t sent;
		int n = 0;

		while (o && n < IOV_MAX_SEND) {
			const void *p;
			size_t len;
			int ret;

			if (!o->is_obj) {
				iov[n++] = (struct iovec){ o->data + o->off, o->len - o->off };
				total += o->len - o->off;
				o = o->next;
				continue;
			}
			if (!o->stream) {
				ret = gs_stream_open(c->w->loop.io, o->obj, 0,
						     gs_obj_meta(o->obj)->size,
						     stream_wake, c, &o->stream);
				if (ret < 0)
					return -1;
				gs_obj_put(c->srv->e, &o->obj);
			}
			ret = gs_stream_peek(o->stream, &p, &len);
			if (ret == -EAGAIN)
				break;
			if (ret < 0) {
				/* a broken object: the value line is out, so the
				 * only honest end is to cut the connection */
				SRV_ADD(c->srv, aborted_responses, 1);
				return -1;
			}
			if (len == 0 && n == 0) {
				out_pop(c);
				o = c->out_head;
				continue;
			}
			iov[n++] = (struct iovec){ (void *)p, len };
			total += len;
			o->len = len;		/* the piece in this writev */
			if (len < gs_stream_left(o->stream))
				break;
			o = o->next;		/* its last piece: "\r\n" may follow */
		}
		if (n == 0)
			return 0;
		sent = writev(c->fd, iov, n);
		if (sent < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 1 : -1;
		}
		SRV_ADD(c->srv, bytes_written, sent);
		c->last_write = loop_now_ms();
		for (size_t left = sent; left;) {
			size_t k;

			o = c->out_head;
			if (o->is_obj) {
				k = o->len < left ? o->len : left;
				gs_stream_consume(o->stream, k);
				left -= k;
				if (!gs_stream_left(o->stream))
					out_pop(c);
				continue;
			}
			k = o->len - o->off < left ? o->len - o->off : left;
			o->off += k;
			c->out_bytes -= k;
			left -= k;
			if (o->off == o->len)
				out_pop(c);
		}
		if ((size_t)sent < total)
			return 1;
	}
}

/* ---- connection life ---- */

static void conn_set_events(struct conn *c, bool want_out)
{
	uint32_t ev = 0;

	if (!c->input_paused && !c->eof && c->state != CONN_WAIT &&
	    c->state != CONN_CLOSING && c->state != CONN_GET &&
	    c->out_items < OUT_ITEMS_MAX && c->out_bytes < OUT_BYTES_MAX &&
	    c->out_objs < CONN_PINS_MAX)
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
	if (c->dead || c->scheduled)
		return;
	c->scheduled = true;
	c->next_sched = c->w->sched;
	c->w->sched = c;
}

void conn_pause_input(struct conn *c, bool pause)
{
	c->input_paused = pause;
	if (!pause)
		conn_schedule(c);
	else
		conn_set_events(c, c->events & EPOLLOUT);
}

/* accepting_conns is 0 while any thread's listener is out; the time until
 * all are back counts in time_in_listen_disabled_us. */
static void listen_off(struct server *srv, bool off)
{
	if (off) {
		if (__atomic_fetch_add(&srv->listen_off, 1, __ATOMIC_ACQ_REL) == 0)
			__atomic_store_n(&srv->listen_off_since, loop_now_us(),
					 __ATOMIC_RELEASE);
	} else if (__atomic_sub_fetch(&srv->listen_off, 1, __ATOMIC_ACQ_REL) == 0) {
		SRV_ADD(srv, time_in_listen_disabled_us,
			loop_now_us() - __atomic_load_n(&srv->listen_off_since,
						   __ATOMIC_ACQUIRE));
	}
}

/* Takes the listener back into <w>'s loop after accepting stopped. */
static void accept_resume(struct worker *w)
{
	if (!w->accept_off)
		return;
	if (loop_listen_resume(&w->loop) == 0) {
		w->accept_off = false;
		listen_off(w->srv, false);
	} else
		w->accept_retry = loop_now_ms() + ACCEPT_RETRY_MS;
}

static void conn_close(struct conn *c)
{
	struct worker *w = c->w;

	if (c->dead)
		return;
	c->dead = true;
	loop_del(&w->loop, c->fd);
	pthread_mutex_lock(&w->lock);
	if (c->all_prev)
		c->all_prev->all_next = c->all_next;
	else
		w->all = c->all_next;
	if (c->all_next)
		c->all_next->all_prev = c->all_prev;
	pthread_mutex_unlock(&w->lock);
	close(c->fd);
	c->fd = -1;
	while (c->out_head)
		out_pop(c);
	__atomic_fetch_sub(&c->srv->st.curr_connections, 1, __ATOMIC_RELAXED);
	proto_abort(c);
	/* a descriptor is free again */
	accept_resume(w);
	/* a pending engine callback frees it (proto_text.c) */
	if (c->state != CONN_WAIT) {
		c->next_sched = w->dead;
		w->dead = c;
	}
}

void conn_release(struct conn *c)
{
	free(c->rbuf);
	free(c);
}

enum timeout_kind { TIMEOUT_NONE, TIMEOUT_IDLE, TIMEOUT_READ, TIMEOUT_SEND };

/* When <c> times out (monotonic ms, 0: it can't now) and for what.  Only
 * the client's turn counts: a full socket (send), a partial command line
 * or value (read), nothing at all (idle); not engine waits, not disk
 * reads, not admission. */
static uint64_t conn_deadline(const struct conn *c, enum timeout_kind *kind)
{
	const struct options *o = c->srv->opt;
	uint64_t last;

	*kind = TIMEOUT_NONE;
	if (c->events & EPOLLOUT) {
		*kind = TIMEOUT_SEND;
		return o->send_timeout ? c->last_write + o->send_timeout : 0;
	}
	if (c->out_head || c->input_paused || c->eof ||
	    c->state == CONN_WAIT || c->state == CONN_GET ||
	    c->state == CONN_CLOSING)
		return 0;
	if (c->state == CONN_CMD && c->rend == c->rstart) {
		*kind = TIMEOUT_IDLE;
		last = c->last_read > c->last_write ? c->last_read : c->last_write;
		return o->idle_timeout ? last + o->idle_timeout : 0;
	}
	*kind = TIMEOUT_READ;
	return o->read_timeout ? c->last_read + o->read_timeout : 0;
}

/* Brings <w>'s next timeout pass forward to <c>'s deadline if sooner. */
static void conn_arm(struct conn *c)
{
	enum timeout_kind kind;
	uint64_t at = conn_deadline(c, &kind);

	if (at && (!c->w->next_check || at < c->w->next_check))
		c->w->next_check = at;
}

static const char *conn_state_name(const struct conn *c)
{
	if (c->events & EPOLLOUT || c->state == CONN_GET)
		return "conn_mwrite";
	switch (c->state) {
	case CONN_CMD:
		return c->rend > c->rstart ? "conn_read" : "conn_waiting";
	case CONN_VALUE:
	case CONN_VALUE_CONCAT:
	case CONN_VALUE_END:
		return "conn_nread";
	case CONN_SWALLOW:
		return "conn_swallow";
	case CONN_CLOSING:
		return "conn_closing";
	default:
		return "conn_parse_cmd";
	}
}

/* Whether proto_process() can take another step now. */
static bool conn_can_process(const struct conn *c)
{
	if (c->input_paused || c->out_items >= OUT_ITEMS_MAX / 2 ||
	    c->out_bytes >= OUT_BYTES_MAX || c->out_objs >= CONN_PINS_MAX)
		return false;
	return c->state == CONN_GET ||
	       (c->state == CONN_CMD && c->rend > c->rstart && !c->want_input);
}

static void conn_run(struct conn *c)
{
	int ret;

	if (c->dead)
		return;
	if (!proto_process(c) || c->broken)
		goto out_close;
	ret = conn_send(c);
	if (ret < 0)
		goto out_close;
	if (!c->out_head && (c->state == CONN_CLOSING ||
			     (c->eof && c->want_input)))
		goto out_close;
	/* the send freed room: take more commands from the buffer */
	if (ret == 0 && conn_can_process(c))
		conn_schedule(c);
	/* the send timeout runs from when the socket was found full (as
	 * nginx's send_timeout), not from an older last write */
	if (ret == 1 && !(c->events & EPOLLOUT))
		c->last_write = loop_now_ms();
	conn_set_events(c, ret == 1);
	__atomic_store_n(&c->stat_state, conn_state_name(c), __ATOMIC_RELAXED);
	conn_arm(c);
	return;

out_close:
	if (c->broken)
		SRV_ADD(c->srv, aborted_responses, 1);
	conn_close(c);
}

/* Closes the connections of <w> past their deadline; sets when to look
 * again. */
static void check_timeouts(struct worker *w)
{
	const struct options *o = w->srv->opt;
	uint64_t now = loop_now_ms(), next = 0, slack;
	struct conn *c = w->all, *cnext;

	for (; c; c = cnext) {
		enum timeout_kind kind;
		uint64_t at = conn_deadline(c, &kind);

		cnext = c->all_next;
		if (!at)
			continue;
		if (at > now) {
			if (!next || at < next)
				next = at;
			continue;
		}
		if (kind == TIMEOUT_IDLE)
			SRV_ADD(w->srv, idle_timeouts, 1);
		else if (kind == TIMEOUT_READ)
			SRV_ADD(w->srv, read_timeouts, 1);
		else
			SRV_ADD(w->srv, send_timeouts, 1);
		if (kind == TIMEOUT_SEND)
			SRV_ADD(w->srv, aborted_responses, 1);
		conn_close(c);
	}
	/* passes at most every 1/16 of the shortest timeout */
	slack = o->read_timeout;
	if (o->send_timeout && (!slack || o->send_timeout < slack))
		slack = o->send_timeout;
	if (o->idle_timeout && (!slack || o->idle_timeout < slack))
		slack = o->idle_timeout;
	slack /= 16;
	w->next_check = next ? next + slack : 0;
}

ssize_t conn_fill(struct conn *c)
{
	ssize_t n;

	if (c->rstart == c->rend) {
		c->rstart = c->rend = 0;
		if (c->rcap > 4 * RBUF_MIN) {	/* after a long get line */
			char *p = realloc(c->rbuf, RBUF_MIN);

			if (p) {
				c->rbuf = p;
				c->rcap = RBUF_MIN;
			}
		}
	} else if (c->rstart > 0 && c->rend == c->rcap) {
		memmove(c->rbuf, c->rbuf + c->rstart, c->rend - c->rstart);
		c->rend -= c->rstart;
		c->rstart = 0;
	}
	if (c->eof)
		return 0;
	if (c->rend == c->rcap) {
		size_t cap = c->rcap * 2;
		char *p = cap <= 2 * (MC_GET_LINE_MAX + 2) + RBUF_MIN ?
			  realloc(c->rbuf, cap) : NULL;

		if (!p)
			return -1;
		c->rbuf = p;
		c->rcap = cap;
	}
	n = conn_recv(c, c->rbuf + c->rend, c->rcap - c->rend);
	if (n > 0)
		c->rend += n;
	return n;
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

/* Refuses <fd>: past --max-conns, memcached's line first. */
static void refuse(struct server *srv, int fd, bool tell)
{
	ssize_t n = tell ? write(fd, too_many, sizeof(too_many) - 1) : 0;

	(void)n;
	close(fd);
	SRV_ADD(srv, rejected_connections, 1);
}

static void peer_name(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[INET6_ADDRSTRLEN] = "?", port[8] = "?";

	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
		getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host),
			    port, sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(buf, len, "tcp:%s%s%s:%s", ss.ss_family == AF_INET6 ? "[" : "",
		 host, ss.ss_family == AF_INET6 ? "]" : "", port);
}

static void accept_all(struct worker *w)
{
	struct server *srv = w->srv;

	for (;;) {
		int fd = accept4(srv->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *c;
		int one = 1;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				/* level-triggered: leaving the listener in
				 * would spin; back when a connection closes */
				loop_listen_pause(&w->loop);
				w->accept_off = true;
				w->accept_retry = loop_now_ms() + ACCEPT_RETRY_MS;
				SRV_ADD(srv, listen_disabled_num, 1);
				listen_off(srv, true);
			}
			return;
		}
		if (__atomic_add_fetch(&srv->st.curr_connections, 1,
				       __ATOMIC_RELAXED) > srv->opt->max_conns) {
			__atomic_fetch_sub(&srv->st.curr_connections, 1,
					   __ATOMIC_RELAXED);
			refuse(srv, fd, true);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (c)
			c->rbuf = malloc(RBUF_MIN);
		if (!c || !c->rbuf)
			goto out_refuse;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->w = w;
		c->srv = srv;
		c->fd = fd;
		c->rcap = RBUF_MIN;
		c->state = CONN_CMD;
		c->events = EPOLLIN;
		c->last_read = c->last_write = loop_now_ms();
		c->last_cmd = time(NULL);
		c->stat_state = "conn_waiting";
		peer_name(fd, c->addr, sizeof(c->addr));
		if (loop_add(&w->loop, fd, EPOLLIN, c) < 0)
			goto out_refuse;
		pthread_mutex_lock(&w->lock);
		c->all_next = w->all;
		if (w->all)
			w->all->all_prev = c;
		w->all = c;
		pthread_mutex_unlock(&w->lock);
		SRV_ADD(srv, total_connections, 1);
		conn_arm(c);
		continue;

out_refuse:
		if (c)
			conn_release(c);
		__atomic_fetch_sub(&srv->st.curr_connections, 1, __ATOMIC_RELAXED);
		refuse(srv, fd, false);
	}
}

/* ---- threads ---- */

static void pin_to_cpu(unsigned id)
{
	cpu_set_t allowed, one;
	int n = 0, want;

	if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
		return;
	want = id % CPU_COUNT(&allowed);
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed))
			continue;
		if (n++ != want)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		sched_setaffinity(0, sizeof(one), &one);
		return;
	}
}

/* ---- the loop's rounds ---- */

static void worker_accept(struct loop *l)
{
	accept_all(l->owner);
}

static void worker_event(struct loop *l, void *ptr, uint32_t events)
{
	struct conn *c = ptr;

	(void)l;
	if (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN))
		conn_close(c);
	else
		conn_run(c);
}

/* No sleep while connections are scheduled; else until the next timeout
 * pass or the listener's retry. */
static uint64_t worker_deadline(struct loop *l)
{
	struct worker *w = l->owner;
	uint64_t wake = w->next_check;

	if (w->sched)
		return LOOP_NOW;
	if (w->accept_off && (!wake || w->accept_retry < wake))
		wake = w->accept_retry;
	return wake;
}

static void worker_due(struct loop *l, uint64_t now)
{
	struct worker *w = l->owner;

	if (w->accept_off && w->accept_retry <= now)
		accept_resume(w);
	if (w->next_check && w->next_check <= now)
		check_timeouts(w);
}

/* Runs scheduled connections (a bounded number of rounds, so the loop
 * still waits on the others), then frees the dead. */
static void worker_round_end(struct loop *l)
{
	struct worker *w = l->owner;

	for (int rounds = 0; w->sched && rounds < 64; rounds++) {
		struct conn *list = w->sched;

		w->sched = NULL;
		while (list) {
			struct conn *c = list;

			list = c->next_sched;
			c->scheduled = false;
			conn_run(c);
		}
	}
	while (w->dead) {
		struct conn *c = w->dead;

		w->dead = c->next_sched;
		conn_release(c);
	}
}

static const struct loop_ops worker_ops = {
	.accept = worker_accept,
	.event = worker_event,
	.deadline = worker_deadline,
	.due = worker_due,
	.round_end = worker_round_end,
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	pin_to_cpu(w->id);
	loop_run(&w->loop);
	return NULL;
}

static int listen_socket(const struct options *o, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *ai;
	char port[16];
	int fd, one = 1, ret;

	snprintf(port, sizeof(port), "%u", (unsigned)o->memcache_port);
	ret = getaddrinfo(o->listen, port, &hints, &ai);
	if (ret) {
		snprintf(err, errlen, "--listen %s: %s", o->listen, gai_strerror(ret));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto out_err;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 1024) < 0) {
		close(fd);
		goto out_err;
	}
	freeaddrinfo(ai);
	return fd;

out_err:
	ret = -errno;
	snprintf(err, errlen, "memcache port %s:%s: %s", o->listen, port,
		 strerror(errno));
	freeaddrinfo(ai);
	return ret;
}

static int worker_init(struct worker *w, char *err, size_t errlen)
{
	struct gs_io *io;
	int ret;

	pthread_mutex_init(&w->lock, NULL);
	w->inited = true;
	ret = loop_init(&w->loop, &worker_ops, w);
	if (ret < 0) {
		snprintf(err, errlen, "epoll/eventfd: %s", strerror(-ret));
		return ret;
	}
	ret = gs_io_create(w->srv->e, &io);
	if (ret < 0) {
		snprintf(err, errlen, "io_uring for serving thread %u: %s",
			 w->id, strerror(-ret));
		return ret;
	}
	ret = loop_set_io(&w->loop, io);
	if (ret < 0) {
		gs_io_destroy(&io);
		snprintf(err, errlen, "epoll: %s", strerror(-ret));
		return ret;
	}
	if (w->srv->lfd >= 0)
		loop_listen(&w->loop, w->srv->lfd, true);
	return 0;
}

/* Closes every connection, lets pending engine calls end, frees them all. */
static void worker_fini(struct worker *w)
{
	if (!w->inited)
		return;
	while (w->all)
		conn_close(w->all);
	gs_io_destroy(&w->loop.io);
	while (w->dead) {
		struct conn *c = w->dead;

		w->dead = c->next_sched;
		conn_release(c);
	}
	loop_fini(&w->loop);
	pthread_mutex_destroy(&w->lock);
}

/* Raises the soft fd limit toward what --max-conns needs (never lowers it;
 * the hard limit caps it, and accepting then pauses on EMFILE). */
static void raise_nofile(const struct options *opt)
{
	struct rlimit rl;
	rlim_t want = opt->max_conns + FD_HEADROOM;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want ?
		      rl.rlim_max : want;
	setrlimit(RLIMIT_NOFILE, &rl);
}

int server_start(struct server *srv, struct gs_engine *e,
		 const struct options *opt, char *err, size_t errlen)
{
	int ret = 0;

	srv->e = e;
	srv->opt = opt;
	srv->started = time(NULL);
	srv->nworkers = opt->cores;
	srv->lfd = -1;
	pthread_mutex_init(&srv->reset_lock, NULL);
	raise_nofile(opt);
	if (opt->memcache_port) {
		/* one socket shared by the threads: a second goblin-store on the
		 * same port fails to bind instead of splitting the traffic */
		srv->lfd = listen_socket(opt, err, errlen);
		if (srv->lfd < 0)
			return srv->lfd;
	}
	srv->workers = calloc(srv->nworkers, sizeof(*srv->workers));
	if (!srv->workers) {
		if (srv->lfd >= 0)
			close(srv->lfd);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < srv->nworkers; i++) {
		struct worker *w = &srv->workers[i];

		w->srv = srv;
		w->id = i;
		ret = worker_init(w, err, errlen);
		if (ret < 0)
			goto out_stop;
	}
	for (unsigned i = 0; i < srv->nworkers; i++) {
		ret = -pthread_create(&srv->workers[i].tid, NULL, worker_main,
				      &srv->workers[i]);
		if (ret < 0) {
			snprintf(err, errlen, "thread: %s", strerror(-ret));
			goto out_stop;
		}
		srv->workers[i].started = true;
	}
	return 0;

out_stop:
	server_stop(srv);
	return ret;
}

void server_stop(struct server *srv)
{
	if (!srv->workers)
		return;
	for (unsigned i = 0; i < srv->nworkers; i++) {
		struct worker *w = &srv->workers[i];

		if (w->started) {
			loop_stop(&w->loop);
			pthread_join(w->tid, NULL);
		}
		worker_fini(w);
	}
	free(srv->workers);
	srv->workers = NULL;
	if (srv->lfd >= 0)
		close(srv->lfd);
	srv->lfd = -1;
	pthread_mutex_destroy(&srv->reset_lock);
}

/* ---- stats conns ---- */

void server_stats_conns(struct conn *c)
{
	struct server *srv = c->srv;
	time_t now = time(NULL);

	if (srv->lfd >= 0) {
		conn_replyf(c, "STAT %d:addr tcp:%s:%u\r\n", srv->lfd,
			    srv->opt->listen, (unsigned)srv->opt->memcache_port);
		conn_replyf(c, "STAT %d:state conn_listening\r\n", srv->lfd);
	}
	for (unsigned i = 0; i < srv->nworkers; i++) {
		struct worker *w = &srv->workers[i];

		pthread_mutex_lock(&w->lock);
		for (struct conn *o = w->all; o; o = o->all_next) {
			time_t last = __atomic_load_n(&o->last_cmd, __ATOMIC_RELAXED);

			conn_replyf(c, "STAT %d:addr %s\r\n", o->fd, o->addr);
			conn_replyf(c, "STAT %d:listen_addr tcp:%s:%u\r\n", o->fd,
				    srv->opt->listen,
				    (unsigned)srv->opt->memcache_port);
			conn_replyf(c, "STAT %d:state %s\r\n", o->fd, o == c ?
				    "conn_parse_cmd" :
				    __atomic_load_n(&o->stat_state, __ATOMIC_RELAXED));
			conn_replyf(c, "STAT %d:secs_since_last_cmd %ld\r\n",
				    o->fd, (long)(now > last ? now - last : 0));
		}
		pthread_mutex_unlock(&w->lock);
	}
}
