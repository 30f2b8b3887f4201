/*
 * The RDMA protocol, server side (rdma.h has the design): one state
 * machine per connection, driven by rdma_server_step() over any
 * transport and any object source.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>

#include "rdma.h"

#define SRV_MAX_REGIONS		8u
#define SC_MAX_WRITES		16u
#define SRV_DRAIN_STEPS		10000u	/* of 1 ms at most */

enum sc_state { SC_HELLO, SC_IDLE, SC_WRITING, SC_WAIT_NEXT, SC_FAILED,
		SC_CLOSING };

struct sconn {
	struct rdma_server *s;
	struct rdma_ep *ep;
	enum sc_state st;
	char *mem;			/* recvs | sends | stages, one MR */
	struct rdma_mr mr;
	char *recv[RDMA_RECVS];
	char *send[RDMA_SENDS];
	void *stage[RDMA_STAGES_MAX];
	unsigned send_free;		/* bit i: send[i] is free */
	unsigned pend[RDMA_RECVS];	/* received lines not handled yet */
	size_t pend_len[RDMA_RECVS];
	unsigned pend_head, pend_n;
	uint64_t waddr, wkey;
	size_t wlen;
	struct rdma_item it;
	int open;
	uint64_t round_off, round_end, pos, written;
	unsigned writes;
	int fail;			/* the source's error, for SC_FAILED */
	int live;			/* counted in st.live */
	struct sconn *next;
};

struct rdma_server {
	const struct rdma_transport *tp;
	struct rdma_dev *dev;
	const struct rdma_source_ops *src;
	void *arg;
	struct rdma_mr regions[SRV_MAX_REGIONS];
	unsigned nregions;
	struct sconn *conns;
	struct zombie *zombies;		/* closed connections' busy memory */
	struct pollfd *pfd;		/* rdma_server_wait's */
	unsigned npfd;
	int wake_fd;			/* polled too; -1: none */
	struct rdma_server_stats st;
};

struct zombie {
	char *mem;
	struct zombie *next;
};

#define SEND_ALL	((1u << RDMA_SENDS) - 1)
#define CTX(i)		((void *)(uintptr_t)(i))

static unsigned sends_free(const struct sconn *c)
{
	return (unsigned)__builtin_popcount(c->send_free);
}

/* SENDs one formatted line from a free send buffer; the caller made sure
 * there is one.  Returns 0 or -errno. */
static int sc_send(struct sconn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int sc_send(struct sconn *c, const char *fmt, ...)
{
	unsigned i = (unsigned)__builtin_ctz(c->send_free);
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(c->send[i], RDMA_MSG, fmt, ap);
	va_end(ap);
	if (n < 0 || (unsigned)n >= RDMA_MSG)
		return -EMSGSIZE;
	c->send_free &= ~(1u << i);
	return c->s->tp->post_send(c->ep, c->send[i], (size_t)n, &c->mr,
				   CTX(i));
}

static int sc_repost(struct sconn *c, unsigned i)
{
	return c->s->tp->post_recv(c->ep, c->recv[i], RDMA_MSG, &c->mr,
				   CTX(i));
}

/* The MR holding [<p>, <p>+<len>): the connection's block or a region. */
static struct rdma_mr *sc_mr_for(struct sconn *c, const void *p,
				 size_t len)
{
	const char *q = p;
	unsigned i;

	if (q >= c->mr.addr && q + len <= c->mr.addr + c->mr.len)
		return &c->mr;
	for (i = 0; i < c->s->nregions; i++) {
		struct rdma_mr *m = &c->s->regions[i];

		if (q >= m->addr && q + len <= m->addr + m->len)
			return m;
	}
	return NULL;
}

static void sc_close_item(struct sconn *c)
{
	if (c->open)
		c->s->src->close(&c->it);
	c->open = 0;
}

static int sc_start_round(struct sconn *c, uint64_t off)
{
	uint64_t left = c->it.size - off;

	c->round_off = off;
	c->round_end = off + (left < c->wlen ? left : c->wlen);
	c->pos = c->written = off;
	c->st = SC_WRITING;
	c->s->st.rounds++;
	return 0;
}

/* A `get` line (NUL-terminated; may be seen again after -EAGAIN): the
 * VALUE header and the first round, or a memcache reply.  Needs two free
 * sends. */
static int sc_get(struct sconn *c, char *line)
{
	char *key = line + 4, *end = key + strlen(key);
	int r;

	while (end > key && (end[-1] == '\n' || end[-1] == '\r'))
		end--;
	*end = '\0';
	if (end == key || end - key > 250 || strpbrk(key, " \t")) {
		c->s->st.gets++;
		return sc_send(c, "CLIENT_ERROR rdma get takes one key\r\n");
	}
	r = c->s->src->open(c->s->arg, key, (size_t)(end - key), c->stage,
			    &c->it);
	if (r == -EAGAIN)
		return r;
	c->s->st.gets++;
	if (r == -ENOENT) {
		c->s->st.misses++;
		return sc_send(c, "END\r\n");
	}
	if (r) {
		c->s->st.errors++;
		return sc_send(c, "SERVER_ERROR %s\r\n", strerror(-r));
	}
	c->open = 1;
	c->s->st.hits++;
	r = sc_send(c, "VALUE %s %u %llu\r\n", key, c->it.flags,
		    (unsigned long long)c->it.size);
	if (r)
		return r;
	return sc_start_round(c, 0);
}

static int sc_hello(struct sconn *c, char *line)
{
	unsigned long long addr, key, len;

	if (sscanf(line, "WINDOW %llu %llu %llu", &addr, &key, &len) != 3) {
		c->st = SC_CLOSING;
		return sc_send(c, "CLIENT_ERROR expected WINDOW\r\n");
	}
	if (len < RDMA_BULK_MIN) {
		c->st = SC_CLOSING;
		return sc_send(c, "CLIENT_ERROR window too small\r\n");
	}
	c->waddr = addr;
	c->wkey = key;
	c->wlen = len;
	c->st = SC_IDLE;
	return sc_send(c, "OK\r\n");
}

/* Handles the oldest received line if the state lets it. */
static int sc_line(struct sconn *c, int *did)
{
	unsigned i = c->pend[c->pend_head];
	size_t len = c->pend_len[c->pend_head];
	char *line = c->recv[i];
	int r;

	if (c->st == SC_WRITING || c->st == SC_FAILED || c->st == SC_CLOSING ||
	    sends_free(c) < 2)
		return 0;
	line[len < RDMA_MSG ? len : RDMA_MSG - 1] = '\0';
	if (c->st == SC_HELLO)
		r = sc_hello(c, line);
	else if (c->st == SC_WAIT_NEXT && !strncmp(line, "NEXT", 4))
		r = sc_start_round(c, c->round_end);
	else if (c->st == SC_IDLE && !strncmp(line, "get ", 4))
		r = sc_get(c, line);
	else
		r = sc_send(c, "ERROR\r\n");
	if (r == -EAGAIN)
		return 0;	/* the source's buffers are busy: later */
	c->pend_head = (c->pend_head + 1) % RDMA_RECVS;
	c->pend_n--;
	*did = 1;
	if (r)
		return r;
	return sc_repost(c, i);
}

/* Posts WRITEs for the landed bytes of the round. */
static int sc_pump(struct sconn *c, int *did)
{
	const struct rdma_transport *tp = c->s->tp;
	struct rdma_mr *mr;
	const void *data;
	size_t len;
	int r;

	while (c->pos < c->round_end && c->writes < SC_MAX_WRITES) {
		r = c->s->src->peek(&c->it, &data, &len);
		if (r == -EAGAIN)
			return 0;
		if (!r && !len)
			r = -EIO;	/* the source ended early */
		if (!r && len > c->round_end - c->pos)
			len = (size_t)(c->round_end - c->pos);
		if (!r && !(mr = sc_mr_for(c, data, len)))
			r = -EFAULT;
		if (r) {
			/* the object can't be read: the client gets a
			 * SERVER_ERROR once the writes in flight are done */
			c->fail = r;
			c->st = SC_FAILED;
			c->s->st.errors++;
			*did = 1;
			return 0;
		}
		r = tp->post_write(c->ep, data, len, mr,
				   c->waddr + (c->pos - c->round_off), c->wkey,
				   CTX(c->pos + len));
		if (r)
			return r;
		c->s->src->consume(&c->it, len);
		c->pos += len;
		c->writes++;
		*did = 1;
	}
	return 0;
}

/* Every WRITE of the round completed: BULK_READY, and END at the end. */
static int sc_round_done(struct sconn *c)
{
	uint64_t n = c->round_end - c->round_off;
	int r;

	c->s->st.bytes += n;
	r = sc_send(c, "BULK_READY %llu %llu\r\n",
		    (unsigned long long)c->round_off, (unsigned long long)n);
	if (r)
		return r;
	if (c->round_end < c->it.size) {
		c->st = SC_WAIT_NEXT;
		return 0;
	}
	sc_close_item(c);
	c->st = SC_IDLE;
	return sc_send(c, "END\r\n");
}

/* The source failed mid-object and no write is in flight: say so, drop
 * the object, serve the next request. */
static int sc_fail_done(struct sconn *c)
{
	sc_close_item(c);
	c->st = SC_IDLE;
	return sc_send(c, "SERVER_ERROR object unreadable: %s\r\n",
		       strerror(-c->fail));
}

static int sc_run(struct sconn *c, int *did)
{
	int r;

	for (;;) {
		if (c->st == SC_FAILED) {
			if (c->writes || !sends_free(c))
				return 0;
			r = sc_fail_done(c);
			if (r)
				return r;
			*did = 1;
			continue;
		}
		if (c->st == SC_WRITING) {
			r = sc_pump(c, did);
			if (r)
				return r;
			if (c->written < c->round_end || sends_free(c) < 2)
				return 0;
			r = sc_round_done(c);
			if (r)
				return r;
			*did = 1;
			continue;
		}
		if (!c->pend_n)
			return 0;
		int before = c->pend_n;

		r = sc_line(c, did);
		if (r || c->pend_n == (unsigned)before)
			return r;
	}
}

static int sc_complete(struct sconn *c, const struct rdma_wc *wc)
{
	uintptr_t v = (uintptr_t)wc->ctx;
	unsigned slot;

	if (wc->err)
		return wc->err;
	switch (wc->op) {
	case RDMA_OP_SEND:
		c->send_free |= 1u << v;
		return 0;
	case RDMA_OP_RECV:
		if (c->pend_n == RDMA_RECVS)
			return -EPROTO;
		slot = (c->pend_head + c->pend_n) % RDMA_RECVS;
		c->pend[slot] = (unsigned)v;
		c->pend_len[slot] = wc->len;
		c->pend_n++;
		return 0;
	case RDMA_OP_WRITE:
		c->writes--;
		c->written = v;
		if (c->open)
			c->s->src->release(&c->it, v);
		return 0;
	}
	return -EINVAL;
}

/* Frees a closed connection's memory, or keeps it while the source may
 * still read into its staging buffers. */
static void srv_free_mem(struct rdma_server *s, char *mem)
{
	struct zombie *z;

	if (mem && s->src->busy && s->src->busy(s->arg, mem)) {
		z = malloc(sizeof(*z));
		if (!z)
			return;	/* leaked rather than written after free */
		z->mem = mem;
		z->next = s->zombies;
		s->zombies = z;
		return;
	}
	free(mem);
}

/* Frees the kept memory the source has let go of. */
static void srv_reap(struct rdma_server *s)
{
	struct zombie **pp = &s->zombies, *z;

	while ((z = *pp)) {
		if (s->src->busy(s->arg, z->mem)) {
			pp = &z->next;
			continue;
		}
		*pp = z->next;
		free(z->mem);
		free(z);
	}
}

static void sc_destroy(struct sconn *c)
{
	struct sconn **pp;

	for (pp = &c->s->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	sc_close_item(c);
	if (c->live)
		c->s->st.live--;
	c->s->tp->ep_destroy(&c->ep);
	c->s->tp->dereg(&c->mr);
	srv_free_mem(c->s, c->mem);
	free(c);
}

/* A connection request: its buffers registered, receives posted,
 * accepted. */
static int sc_create(struct rdma_server *s, struct rdma_ep *ep)
{
	size_t stages = s->src->nstages * s->src->stage_size;
	size_t size = stages + (RDMA_RECVS + RDMA_SENDS) * RDMA_MSG;
	struct sconn *c;
	unsigned i;
	int r;

	c = calloc(1, sizeof(*c));
	if (!c || posix_memalign((void **)&c->mem, 4096, size)) {
		free(c);
		s->tp->ep_destroy(&ep);
		return -ENOMEM;
	}
	c->s = s;
	c->ep = ep;
	c->st = SC_HELLO;
	c->send_free = SEND_ALL;
	c->next = s->conns;
	s->conns = c;
	for (i = 0; i < s->src->nstages; i++)
		c->stage[i] = c->mem + i * s->src->stage_size;
	for (i = 0; i < RDMA_RECVS; i++)
		c->recv[i] = c->mem + stages + i * RDMA_MSG;
	for (i = 0; i < RDMA_SENDS; i++)
		c->send[i] = c->recv[0] + (RDMA_RECVS + i) * RDMA_MSG;
	r = s->tp->reg(s->dev, c->mem, size, RDMA_LOCAL, &c->mr);
	for (i = 0; !r && i < RDMA_RECVS; i++)
		r = sc_repost(c, i);
	if (!r)
		r = s->tp->accept(ep);
	if (r) {
		sc_destroy(c);
		return r;
	}
	s->st.conns++;
	s->st.live++;
	c->live = 1;
	return 0;
}

static struct sconn *sc_find(struct rdma_server *s, struct rdma_ep *ep)
{
	struct sconn *c;

	for (c = s->conns; c; c = c->next)
		if (c->ep == ep)
			return c;
	return NULL;
}

static int srv_cm(struct rdma_server *s)
{
	struct rdma_ep *ep = NULL;
	struct sconn *c;
	int ev, n = 0;

	while ((ev = s->tp->cm_poll(s->dev, &ep)) > 0) {
		n++;
		if (ev == RDMA_CM_REQUEST) {
			if (sc_create(s, ep))
				s->st.errors++;
		} else if (ev == RDMA_CM_DOWN) {
			c = sc_find(s, ep);
			if (c) {
				s->st.gone += c->st != SC_CLOSING;
				s->st.aborted += c->st != SC_CLOSING &&
						 c->open;
				sc_destroy(c);
			}
		}
	}
	return ev < 0 ? ev : n;
}

/* Completions and progress of one connection; 1 if it did something,
 * 0, or -errno (the caller drops it). */
static int sc_step(struct sconn *c)
{
	struct rdma_wc wc[16];
	int did = 0, n, i, r;

	n = c->s->tp->poll(c->ep, wc, 16);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		r = sc_complete(c, &wc[i]);
		if (r)
			return r;
	}
	if (c->st == SC_CLOSING)
		return c->send_free == SEND_ALL ? -ESHUTDOWN : n > 0;
	r = sc_run(c, &did);
	if (r)
		return r;
	return n > 0 || did;
}

/* A failure that says the peer went away: its disconnect flushed our
 * posted operations, or broke the connection. */
static int sc_gone(int r)
{
	return r == -ECANCELED || r == -ENOTCONN || r == -ECONNRESET ||
	       r == -EPIPE;
}

int rdma_server_step(struct rdma_server *s)
{
	struct sconn *c, *next;
	int n, r;

	n = srv_cm(s);
	if (n < 0)
		return n;
	if (s->src->progress) {
		r = s->src->progress(s->arg);
		if (r < 0)
			return r;
		n += r;
	}
	if (s->zombies)
		srv_reap(s);
	for (c = s->conns; c; c = next) {
		next = c->next;
		r = sc_step(c);
		if (r < 0) {
			if (sc_gone(r)) {
				s->st.gone++;
				s->st.aborted += c->open;
			}
			else if (r != -ESHUTDOWN)
				s->st.errors++;
			sc_destroy(c);
			n++;
		} else {
			n += r;
		}
	}
	return n;
}

/* Room for <n> descriptors to poll. */
static int srv_pfd(struct rdma_server *s, unsigned n)
{
	struct pollfd *p;

	if (n <= s->npfd)
		return 0;
	p = realloc(s->pfd, n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	s->pfd = p;
	s->npfd = n;
	return 0;
}

int rdma_server_wait(struct rdma_server *s, int timeout_ms)
{
	const struct rdma_transport *tp = s->tp;
	unsigned n = 0, want = 3;
	struct sconn *c;
	int r;

	for (c = s->conns; c; c = c->next)
		want++;
	r = srv_pfd(s, want);
	if (r)
		return r;
	if (tp->cm_arm(s->dev))
		return 1;
	s->pfd[n++] = (struct pollfd){ .fd = tp->cm_fd(s->dev),
				       .events = POLLIN };
	if (s->src->fd)
		s->pfd[n++] = (struct pollfd){ .fd = s->src->fd(s->arg),
					       .events = POLLIN };
	if (s->wake_fd >= 0)
		s->pfd[n++] = (struct pollfd){ .fd = s->wake_fd,
					       .events = POLLIN };
	for (c = s->conns; c; c = c->next) {
		if (tp->ep_arm(c->ep))
			return 1;
		s->pfd[n++] = (struct pollfd){ .fd = tp->ep_fd(c->ep),
					       .events = POLLIN };
	}
	r = poll(s->pfd, n, timeout_ms);
	if (r < 0)
		return errno == EINTR ? 1 : -errno;
	return r > 0;
}

int rdma_server_create(const struct rdma_transport *tp,
		       const char *host, uint16_t port, uint16_t *bound,
		       const struct rdma_source_ops *src, void *arg,
		       void *const *regions, const size_t *region_lens,
		       unsigned nregions, struct rdma_server **sp)
{
	struct rdma_server *s;
	unsigned i;
	int r;

	if (nregions > SRV_MAX_REGIONS || !src->nstages ||
	    src->nstages > RDMA_STAGES_MAX || !src->stage_size ||
	    src->stage_size % 4096)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->tp = tp;
	s->src = src;
	s->arg = arg;
	s->wake_fd = -1;
	r = tp->listen(host, port, bound, &s->dev);
	if (r) {
		free(s);
		return r;
	}
	for (i = 0; i < nregions; i++) {
		r = tp->reg(s->dev, regions[i], region_lens[i], 0,
			    &s->regions[i]);
		if (r) {
			rdma_server_destroy(&s);
			return r;
		}
		s->nregions++;
	}
	*sp = s;
	return 0;
}

void rdma_server_wake_fd(struct rdma_server *s, int fd)
{
	s->wake_fd = fd;
}

void rdma_server_stats(const struct rdma_server *s,
		       struct rdma_server_stats *st)
{
	*st = s->st;
}

void rdma_server_destroy(struct rdma_server **sp)
{
	struct rdma_server *s = *sp;
	unsigned i;

	if (!s)
		return;
	while (s->conns)
		sc_destroy(s->conns);
	/* the source lets go of closed items' buffers as its I/O ends;
	 * memory it never lets go of is left, not freed under it */
	for (i = 0; s->zombies && i < SRV_DRAIN_STEPS; i++) {
		if (s->src->progress(s->arg) < 0)
			break;
		srv_reap(s);
		if (s->zombies)
			usleep(1000);
	}
	for (i = 0; i < s->nregions; i++)
		s->tp->dereg(&s->regions[i]);
	s->tp->dev_destroy(&s->dev);
	free(s->pfd);
	free(s);
	*sp = NULL;
}
