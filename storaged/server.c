/*
 * Serving threads: each has an epoll loop watching the shared memcache
 * listener (EPOLLEXCLUSIVE), its own gs_io, and the connections it accepted.  Output is
 * a queue of byte buffers and objects; an object becomes a stream (and
 * takes a read-ahead window) only when it reaches the head of the queue, so
 * a pipelining client can't hold windows it is not sending from.
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
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log.h"
#include "server.h"

#define RBUF_MIN	16384
#define OUT_ITEMS_MAX	64		/* stop reading commands past this */
#define OUT_BYTES_MAX	(4u << 20)
#define IOV_MAX_SEND	64

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
	int epfd, stopfd;
	struct gs_io *io;
	struct conn *sched;
	struct conn *dead;
	struct conn *all;
	bool started;
};

/* epoll tags for the non-connection descriptors */
static char tag_listen, tag_stop, tag_io;

struct gs_io *conn_io(struct conn *c)
{
	return c->w->io;
}

/* ---- output queue ---- */

static void out_free(struct conn *c, struct out *o)
{
	gs_stream_close(&o->stream);
	gs_obj_put(c->srv->e, &o->obj);
	if (!o->is_obj)
		c->out_bytes -= o->len - o->off;
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
}

static void out_pop(struct conn *c)
{
	struct out *o = c->out_head;

	c->out_head = o->next;
	if (!c->out_head)
		c->out_tail = NULL;
	out_free(c, o);
}

int conn_reply(struct conn *c, const char *s, size_t len)
{
	struct out *o = c->out_tail;

	if (!o || o->is_obj || o->cap - o->len < len) {
		size_t cap = len > 4096 ? len : 4096;

		o = malloc(sizeof(*o) + cap);
		if (!o)
			return -ENOMEM;
		*o = (struct out){ .cap = cap };
		out_push(c, o);
	}
	memcpy(o->data + o->len, s, len);
	o->len += len;
	c->out_bytes += len;
	return 0;
}

int conn_replyf(struct conn *c, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(buf))
		n = sizeof(buf) - 1;
	return conn_reply(c, buf, n);
}

int conn_reply_obj(struct conn *c, struct gs_obj *obj)
{
	struct out *o = malloc(sizeof(*o));

	if (!o) {
		gs_obj_put(c->srv->e, &obj);
		return -ENOMEM;
	}
	*o = (struct out){ .obj = obj, .is_obj = true };
	out_push(c, o);
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
				ret = gs_stream_open(c->w->io, o->obj, 0,
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
	struct epoll_event e;

	if (!c->input_paused && c->state != CONN_WAIT && c->state != CONN_CLOSING &&
	    c->out_items < OUT_ITEMS_MAX && c->out_bytes < OUT_BYTES_MAX)
		ev |= EPOLLIN;
	if (want_out)
		ev |= EPOLLOUT;
	if (ev == c->events)
		return;
	e = (struct epoll_event){ .events = ev, .data.ptr = c };
	if (epoll_ctl(c->w->epfd, EPOLL_CTL_MOD, c->fd, &e) == 0)
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

static void conn_close(struct conn *c)
{
	struct worker *w = c->w;

	if (c->dead)
		return;
	c->dead = true;
	epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	while (c->out_head)
		out_pop(c);
	__atomic_fetch_sub(&c->srv->st.curr_connections, 1, __ATOMIC_RELAXED);
	proto_abort(c);
	if (c->all_prev)
		c->all_prev->all_next = c->all_next;
	else
		w->all = c->all_next;
	if (c->all_next)
		c->all_next->all_prev = c->all_prev;
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

static void conn_run(struct conn *c)
{
	int ret;

	if (c->dead)
		return;
	if (!proto_process(c))
		goto out_close;
	ret = conn_send(c);
	if (ret < 0)
		goto out_close;
	if (c->state == CONN_CLOSING && !c->out_head)
		goto out_close;
	/* the send freed room: take more commands from the buffer */
	if (ret == 0 && c->rend > c->rstart && c->state == CONN_CMD &&
	    c->out_items < OUT_ITEMS_MAX / 2)
		conn_schedule(c);
	conn_set_events(c, ret == 1);
	return;

out_close:
	conn_close(c);
}

ssize_t conn_fill(struct conn *c)
{
	ssize_t n;

	if (c->rstart == c->rend) {
		c->rstart = c->rend = 0;
	} else if (c->rstart > 0 && c->rend == c->rcap) {
		memmove(c->rbuf, c->rbuf + c->rstart, c->rend - c->rstart);
		c->rend -= c->rstart;
		c->rstart = 0;
	}
	if (c->rend == c->rcap) {
		size_t cap = c->rcap * 2;
		char *p = cap <= 4 * (MC_LINE_MAX + 2) + RBUF_MIN ?
			  realloc(c->rbuf, cap) : NULL;

		if (!p)
			return -1;
		c->rbuf = p;
		c->rcap = cap;
	}
	n = read(c->fd, c->rbuf + c->rend, c->rcap - c->rend);
	if (n > 0) {
		c->rend += n;
		SRV_ADD(c->srv, bytes_read, n);
		return n;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	return -1;
}

ssize_t conn_recv(struct conn *c, void *p, size_t len)
{
	ssize_t n = read(c->fd, p, len);

	if (n > 0) {
		SRV_ADD(c->srv, bytes_read, n);
		return n;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	return -1;
}

static void accept_all(struct worker *w)
{
	for (;;) {
		int fd = accept4(w->srv->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct epoll_event ev;
		struct conn *c;
		int one = 1;

		if (fd < 0)
			return;
		c = calloc(1, sizeof(*c));
		if (c)
			c->rbuf = malloc(RBUF_MIN);
		if (!c || !c->rbuf) {
			SRV_ADD(w->srv, rejected_connections, 1);
			if (c)
				free(c);
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->w = w;
		c->srv = w->srv;
		c->fd = fd;
		c->rcap = RBUF_MIN;
		c->state = CONN_CMD;
		c->events = EPOLLIN;
		ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = c };
		if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			conn_release(c);
			close(fd);
			continue;
		}
		c->all_next = w->all;
		if (w->all)
			w->all->all_prev = c;
		w->all = c;
		SRV_ADD(w->srv, curr_connections, 1);
		SRV_ADD(w->srv, total_connections, 1);
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

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct epoll_event evs[64];
	bool stop = false;

	pin_to_cpu(w->id);
	while (!stop) {
		int n = epoll_wait(w->epfd, evs, 64, w->sched ? 0 : -1);

		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;

			if (p == &tag_listen) {
				accept_all(w);
			} else if (p == &tag_stop) {
				stop = true;
			} else if (p == &tag_io) {
				gs_io_run(w->io, false);
			} else {
				struct conn *c = p;

				if (evs[i].events & (EPOLLERR | EPOLLHUP) &&
				    !(evs[i].events & EPOLLIN))
					conn_close(c);
				else
					conn_run(c);
			}
		}
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
	struct epoll_event ev;
	int ret;

	w->stopfd = -1;
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	w->stopfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->epfd < 0 || w->stopfd < 0) {
		snprintf(err, errlen, "epoll/eventfd: %s", strerror(errno));
		return -errno;
	}
	ret = gs_io_create(w->srv->e, &w->io);
	if (ret < 0) {
		snprintf(err, errlen, "io_uring for serving thread %u: %s",
			 w->id, strerror(-ret));
		return ret;
	}
	if (w->srv->lfd >= 0) {
		ev = (struct epoll_event){ .events = EPOLLIN | EPOLLEXCLUSIVE,
					   .data.ptr = &tag_listen };
		epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->srv->lfd, &ev);
	}
	ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &tag_stop };
	epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->stopfd, &ev);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &tag_io };
	epoll_ctl(w->epfd, EPOLL_CTL_ADD, gs_io_fd(w->io), &ev);
	return 0;
}

/* Closes every connection, lets pending engine calls end, frees them all. */
static void worker_fini(struct worker *w)
{
	while (w->all)
		conn_close(w->all);
	gs_io_destroy(&w->io);
	while (w->dead) {
		struct conn *c = w->dead;

		w->dead = c->next_sched;
		conn_release(c);
	}
	if (w->stopfd >= 0)
		close(w->stopfd);
	if (w->epfd >= 0)
		close(w->epfd);
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
		w->epfd = -1;
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
			eventfd_write(w->stopfd, 1);
			pthread_join(w->tid, NULL);
		}
		worker_fini(w);
	}
	free(srv->workers);
	srv->workers = NULL;
	if (srv->lfd >= 0)
		close(srv->lfd);
	srv->lfd = -1;
}
