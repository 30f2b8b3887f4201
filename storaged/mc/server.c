/*
 * Serving threads: each runs a loop (loop.c) watching the shared memcache
 * listener (EPOLLEXCLUSIVE), its own gs_io, and the connections it
 * accepted.  Replies queue in conn_output.c (at most CONN_PINS_MAX objects
 * per connection); the read buffer is conn_input.c's, the connection's
 * primitives conn.c's.
 *
 * Timeouts: each connection keeps when it last read and last sent; the
 * loop sleeps until the earliest deadline any connection could have
 * (next_check), then one pass closes those past theirs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "server.h"

#define ACCEPT_RETRY_MS	100		/* out of fds: try accepting again */
#define FD_HEADROOM	1100		/* fds besides memcache connections:
					 * pools, nginx links, epoll */

static const char too_many[] = "ERROR Too many open connections\r\n";


/* ---- connection life ---- */

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
	list_del(&c->all_link);
	pthread_mutex_unlock(&w->lock);
	close(c->fd);
	c->fd = -1;
	conn_out_drop(c);
	__atomic_fetch_sub(&c->srv->st.curr_connections, 1, __ATOMIC_RELAXED);
	proto_abort(c);
	/* a descriptor is free again */
	accept_resume(w);
	/* a pending engine callback frees it (proto_text.c) */
	list_del(&c->sched_link);
	if (c->mc.state != CONN_WAIT)
		list_add_tail(&w->dead, &c->sched_link);
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
	if (!conn_out_empty(c) || c->input_paused || c->eof ||
	    c->mc.state == CONN_WAIT || c->mc.state == CONN_GET ||
	    c->mc.state == CONN_DUMP || c->mc.state == CONN_CLOSING)
		return 0;
	if (c->mc.state == CONN_CMD && c->rend == c->rstart) {
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
	if (c->events & EPOLLOUT || c->mc.state == CONN_GET ||
	    c->mc.state == CONN_DUMP)
		return "conn_mwrite";
	switch (c->mc.state) {
	case CONN_CMD:
		return c->rend > c->rstart ? "conn_read" : "conn_waiting";
	case CONN_VALUE:
	case CONN_VALUE_END:
	case CONN_AUTH:
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
	if (c->input_paused || c->out_items >= CONN_OUT_ITEMS_MAX / 2 ||
	    conn_out_full(c))
		return false;
	return c->mc.state == CONN_GET || c->mc.state == CONN_DUMP ||
	       (c->mc.state == CONN_CMD && c->rend > c->rstart && !c->mc.want_input);
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
	if (conn_out_empty(c) && (c->mc.state == CONN_CLOSING ||
			     (c->eof && c->mc.want_input)))
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
	struct list *p, *pnext;

	for (p = w->conns.next; p != &w->conns; p = pnext) {
		struct conn *c = list_entry(p, struct conn, all_link);
		enum timeout_kind kind;
		uint64_t at = conn_deadline(c, &kind);

		pnext = p->next;
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

/* Accepts what listener <li> has; false once out of descriptors (the
 * listeners are then out of <w>'s loop). */
static bool accept_from(struct worker *w, unsigned li)
{
	struct server *srv = w->srv;

	for (;;) {
		int fd = accept4(srv->lfd[li], NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
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
				return false;
			}
			return true;
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
			c->rbuf = malloc(CONN_RBUF_MIN);
		if (!c || !c->rbuf)
			goto out_refuse;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		list_init(&c->sched_link);
		list_init(&c->all_link);
		list_init(&c->out);
		c->w = w;
		c->srv = srv;
		c->fd = fd;
		c->listener = li;
		c->rcap = CONN_RBUF_MIN;
		c->mc.state = CONN_CMD;
		c->events = EPOLLIN;
		c->last_read = c->last_write = loop_now_ms();
		c->last_cmd = time(NULL);
		c->stat_state = "conn_waiting";
		peer_name(fd, c->addr, sizeof(c->addr));
		if (loop_add(&w->loop, fd, EPOLLIN, c) < 0)
			goto out_refuse;
		pthread_mutex_lock(&w->lock);
		list_add_tail(w->conns.next, &c->all_link);	/* newest first */
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

static void accept_all(struct worker *w)
{
	for (unsigned i = 0; i < w->srv->nlfd; i++)
		if (!accept_from(w, i))
			return;
}

/* ---- threads ---- */

/* Pins serving thread <id> to a CPU of --cpus, or of those it may run on,
 * in turn; not with --no-pin. */
static void pin_to_cpu(const struct options *o, unsigned id)
{
	cpu_set_t allowed, one;
	int n = 0, want;

	if (o->no_pin)
		return;
	if (o->cpus_n)
		allowed = o->cpus_set;
	else if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
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

	if (!list_empty(&w->sched))
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

static void worker_free_dead(struct worker *w)
{
	while (!list_empty(&w->dead)) {
		struct conn *c = list_entry(w->dead.next, struct conn,
					    sched_link);

		list_del(&c->sched_link);
		conn_release(c);
	}
}

/* Runs scheduled connections (a bounded number of rounds, so the loop
 * still waits on the others), then frees the dead. */
static void worker_round_end(struct loop *l)
{
	struct worker *w = l->owner;

	struct list batch;

	for (int rounds = 0; !list_empty(&w->sched) && rounds < 64; rounds++) {
		list_splice_init(&w->sched, &batch);
		while (!list_empty(&batch)) {
			struct conn *c = list_entry(batch.next, struct conn,
						    sched_link);

			list_del(&c->sched_link);
			conn_run(c);
		}
	}
	worker_free_dead(w);
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

	pin_to_cpu(w->srv->opt, w->id);
	loop_run(&w->loop);
	return NULL;
}

/* Binds and listens on <addr> (one --listen address) at <port>: the
 * descriptor, or -errno with the reason in <err>.  <name> gets it as
 * "tcp:<ip>:<port>" (<namelen> bytes). */
static int listen_socket(const char *addr, unsigned port, char *name,
			 size_t namelen, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	char sport[16], host[INET6_ADDRSTRLEN] = "?";
	struct addrinfo *ai;
	int fd, one = 1, ret;

	snprintf(sport, sizeof(sport), "%u", port);
	ret = getaddrinfo(addr, sport, &hints, &ai);
	if (ret) {
		snprintf(err, errlen, "--listen %s: %s", addr, gai_strerror(ret));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto out_err;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* :: and 0.0.0.0 side by side, as nginx's listen [::] ipv6only=on */
	if (ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 1024) < 0) {
		close(fd);
		goto out_err;
	}
	getnameinfo(ai->ai_addr, ai->ai_addrlen, host, sizeof(host), NULL, 0,
		    NI_NUMERICHOST);
	snprintf(name, namelen, "tcp:%s%s%s:%u", ai->ai_family == AF_INET6 ?
		 "[" : "", host, ai->ai_family == AF_INET6 ? "]" : "", port);
	freeaddrinfo(ai);
	return fd;

out_err:
	ret = -errno;
	snprintf(err, errlen, "memcache port %s:%s: %s", addr, sport,
		 strerror(errno));
	freeaddrinfo(ai);
	return ret;
}

/* One listener per --listen address into <srv>: 0 or -errno (those
 * opened are closed by server_free()). */
static int listen_all(struct server *srv, char *err, size_t errlen)
{
	const struct options *o = srv->opt;
	char addr[256];
	const char *p = o->listen;

	while (*p && srv->nlfd < OPTIONS_LISTEN_MAX) {
		size_t len = strcspn(p, ",");
		int fd;

		snprintf(addr, sizeof(addr), "%.*s", (int)len, p);
		fd = listen_socket(addr, (unsigned)o->memcache_port,
				   srv->laddr[srv->nlfd], sizeof(srv->laddr[0]),
				   err, errlen);
		if (fd < 0)
			return fd;
		srv->lfd[srv->nlfd++] = fd;
		p += len + (p[len] == ',');
	}
	return 0;
}

static int worker_init(struct worker *w, char *err, size_t errlen)
{
	struct gs_io *io;
	int ret;

	pthread_mutex_init(&w->lock, NULL);
	list_init(&w->sched);
	list_init(&w->dead);
	list_init(&w->conns);
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
	for (unsigned i = 0; i < w->srv->nlfd; i++) {
		ret = loop_listen(&w->loop, w->srv->lfd[i], true);
		if (ret < 0) {
			snprintf(err, errlen, "epoll: %s", strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* Closes every connection, lets pending engine calls end, frees them all. */
static void worker_fini(struct worker *w)
{
	if (!w->inited)
		return;
	while (!list_empty(&w->conns))
		conn_close(list_entry(w->conns.next, struct conn, all_link));
	gs_io_destroy(&w->loop.io);
	worker_free_dead(w);
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

/* Frees <srv> once its threads are joined and its workers finished. */
static void server_free(struct server *srv)
{
	auth_free(&srv->auth);
	free(srv->workers);
	for (unsigned i = 0; i < srv->nlfd; i++)
		close(srv->lfd[i]);
	pthread_mutex_destroy(&srv->reset_lock);
	free(srv);
}

int server_start(struct server **srvp, const struct options *opt,
		 struct gs_engine *e, char *err, size_t errlen)
{
	struct server *srv = calloc(1, sizeof(*srv));
	int ret = 0;

	if (!srv) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	srv->e = e;
	srv->opt = opt;
	srv->started = time(NULL);
	srv->nworkers = opt->cores;
	pthread_mutex_init(&srv->reset_lock, NULL);
	raise_nofile(opt);
	if (*opt->auth_file && *opt->rdma) {
		snprintf(err, errlen, "--auth-file: the RDMA endpoint (--rdma) has no authentication; leave one out");
		ret = -EINVAL;
		goto out_free;
	}
	if (*opt->auth_file) {
		ret = auth_load(&srv->auth, opt->auth_file, err, errlen);
		if (ret < 0)
			goto out_free;
	}
	if (opt->memcache_port) {
		/* sockets shared by the threads: a second goblin-store on the
		 * same port fails to bind instead of splitting the traffic */
		ret = listen_all(srv, err, errlen);
		if (ret < 0)
			goto out_free;
	}
	srv->workers = calloc(srv->nworkers, sizeof(*srv->workers));
	if (!srv->workers) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out_free;
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
	*srvp = srv;
	return 0;

out_stop:
	server_stop(&srv);
	return ret;
out_free:
	server_free(srv);
	return ret;
}

void server_stop(struct server **srvp)
{
	struct server *srv = *srvp;

	if (!srv)
		return;
	for (unsigned i = 0; i < srv->nworkers; i++) {
		struct worker *w = &srv->workers[i];

		if (w->started) {
			loop_stop(&w->loop);
			pthread_join(w->tid, NULL);
		}
		worker_fini(w);
	}
	server_free(srv);
	*srvp = NULL;
}
