/*
 * goblin-bench event loop: <conns> non-blocking TCP connections on one
 * epoll instance, closed loop (the next request leaves as soon as the
 * previous answer is complete), one request in flight per connection.
 * --open-loop: the measured phase issues each request at its scheduled
 * time on a free connection (or when one frees up), and times it from then.
 *
 * Request bytes are generated on the fly into a small buffer, answers are
 * verified as they stream in; no value is ever held whole.  With
 * --set-ratio, each key keeps the version last confirmed stored and the
 * latest version issued, and at most one SET per key is in flight, so a GET
 * may see exactly the versions in [stored at issue, issued at answer].
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "goblin-bench.h"

#define WBUF_SIZE	(256 * 1024)
#define RBUF_SIZE	(256 * 1024)
#define NSEC		1000000000ULL
#define TICK_MS		50
#define CAND_MAX	64	/* versions a GET may match, newest kept */
#define PRINT_MAX	10	/* messages of one kind before going quiet */
#define STREAK_MAX	5	/* failures in a row before a connection is dropped */
#define CONNECT_TRIES	3

enum phase {
	PH_POPULATE,
	PH_RUN,
};

struct bench;

struct conn {
	struct bench *b;
	int fd;
	unsigned id;
	bool busy, wdone, rdone, want_out, dead, bad;
	unsigned streak;		/* failures since the last answer */
	struct gb_rng rng;
	enum gb_op op;
	uint64_t key, size, vbase;
	uint32_t ver;			/* set: version written */
	uint32_t lo;			/* get: stored version at issue */
	uint32_t cand_lo;		/* get: candidates cand_lo + bit */
	uint64_t cand;
	char name[32];
	char head[512];
	size_t head_len, tail_len;
	const char *tail;
	uint64_t total, vpos;		/* request: head, value, tail */
	char *wbuf, *rbuf;
	size_t wlen, wpos;
	struct gb_resp resp;
	enum gb_outcome outcome;
	uint64_t t_issue, t_first, t_payload, t_done, t_recv, t_active;
};

struct bench {
	const struct gb_opts *o;
	const struct gb_sizer *sizer;
	struct gb_zipf zipf;
	uint64_t vtag;
	struct gb_addr addr;
	int epfd;
	struct conn *conns;
	unsigned live;
	enum phase phase;
	struct gb_stats *st;
	uint64_t next_key, hot_n;
	bool stopping;
	uint64_t start, deadline, next_progress;
	bool open;			/* this phase runs on <sched> */
	struct gb_sched sched;
	uint32_t *stored, *issued;
	uint8_t *setbusy;
	unsigned printed_verify, printed_err, printed_fail;
};

volatile sig_atomic_t gb_interrupted;

static void on_signal(int sig)
{
	(void)sig;
	gb_interrupted = 1;
}

void gb_catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* Prints at most PRINT_MAX messages per <counter>, then says it stops. */
static bool may_print(unsigned *counter)
{
	if (*counter > PRINT_MAX)
		return false;
	if (++*counter > PRINT_MAX) {
		fprintf(stderr, "goblin-bench: further messages of this kind "
			"are not shown\n");
		return false;
	}
	return true;
}

/* Connects <c> (bounded by --timeout) and adds it to epoll; 0 or -errno. */
static int conn_open(struct bench *b, struct conn *c)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
	int fd = gb_connect(&b->addr, b->o->timeout), err;

	if (fd < 0)
		return fd;
	if (epoll_ctl(b->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	c->fd = fd;
	c->want_out = false;
	return 0;
}

static void conn_close(struct bench *b, struct conn *c)
{
	if (c->fd < 0)
		return;
	epoll_ctl(b->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
}

static void set_out(struct bench *b, struct conn *c, bool on)
{
	struct epoll_event ev = {
		.events = EPOLLIN | (on ? EPOLLOUT : 0),
		.data.ptr = c,
	};

	if (c->want_out == on)
		return;
	c->want_out = on;
	epoll_ctl(b->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static void print_request(const struct conn *c, char *buf, size_t cap)
{
	if (c->busy)
		snprintf(buf, cap, " during %s %s", c->op == GB_OP_GET ?
			 "get" : "set", c->name);
	else
		buf[0] = '\0';
}

/* Counts the answered request on <c> and frees its key for new sets. */
static void account(struct bench *b, struct conn *c)
{
	struct gb_stats *st = b->st;
	uint64_t done = c->t_done > c->t_active ? c->t_done : c->t_active;

	switch (c->outcome) {
	case GB_RESP_HIT:
		st->hits++;
		st->get_bytes += c->resp.body_len;
		gb_hist_record(&st->ttfb, c->t_first - c->t_issue);
		gb_hist_record(&st->payload, (c->t_payload ? c->t_payload :
					      c->t_first) - c->t_issue);
		gb_hist_record(&st->complete, done - c->t_issue);
		if (b->o->verify && !c->bad && c->resp.body_len != c->size) {
			c->bad = true;	/* an empty value never reached the sink */
			if (may_print(&b->printed_verify))
				fprintf(stderr, "goblin-bench: verify error: key %s: "
					"length %" PRIu64 ", expected %" PRIu64 "\n",
					c->name, c->resp.body_len, c->size);
		}
		st->verify_errors += c->bad;
		break;
	case GB_RESP_MISS:
		st->misses++;
		gb_hist_record(&st->ttfb, c->t_first - c->t_issue);
		gb_hist_record(&st->complete, done - c->t_issue);
		break;
	case GB_RESP_STORED:
		st->sets++;
		st->set_bytes += c->size;
		gb_hist_record(&st->set_complete, done - c->t_issue);
		if (b->stored)
			b->stored[c->key] = c->ver;
		break;
	default:
		if (c->op == GB_OP_GET)
			st->get_errors++;
		else
			st->set_errors++;
		if (may_print(&b->printed_err))
			fprintf(stderr, "goblin-bench: %s %s: %s\n",
				c->op == GB_OP_GET ? "get" : "set", c->name,
				c->resp.msg);
		break;
	}
	if (c->op == GB_OP_SET && b->setbusy)
		b->setbusy[c->key] = 0;
	if (c->outcome != GB_RESP_ERROR)
		c->streak = 0;
	c->busy = false;
}

/* Counts the request on <c> as lost with its connection. */
static void lose(struct bench *b, struct conn *c)
{
	if (c->op == GB_OP_GET)
		b->st->get_failed++;
	else
		b->st->set_failed++;
	if (c->op == GB_OP_SET && b->setbusy)
		b->setbusy[c->key] = 0;
	c->busy = false;
}

/*
 * Closes <c> and connects it again; a request in flight is counted as
 * answered if its answer was complete, else lost.  <why> non-NULL marks a
 * connection failure.  The next request is issued by the main loop.
 */
static void conn_reset(struct bench *b, struct conn *c, const char *why)
{
	char req[64];
	int err = 0;

	if (c->busy && c->rdone)
		why = NULL;		/* answered, then closed: not a failure */
	print_request(c, req, sizeof(req));
	if (why) {
		b->st->conn_failures++;
		c->streak++;
		if (may_print(&b->printed_fail))
			fprintf(stderr, "goblin-bench: connection %u: %s%s\n",
				c->id, why, req);
	}
	if (c->busy && c->rdone)
		account(b, c);
	else if (c->busy)
		lose(b, c);
	conn_close(b, c);
	if (c->streak < STREAK_MAX) {
		for (int i = 0; i < CONNECT_TRIES && !gb_interrupted; i++) {
			err = conn_open(b, c);
			if (!err) {
				b->st->reconnects++;
				return;
			}
			b->st->conn_failures++;
			poll(NULL, 0, 100);
		}
	}
	c->dead = true;
	b->live--;
	fprintf(stderr, "goblin-bench: connection %u: giving up%s%s\n", c->id,
		err ? ": cannot reconnect: " : " after repeated failures",
		err ? strerror(-err) : "");
}

static void on_body(void *ctx, uint64_t off, const char *p, size_t n,
		    uint64_t total)
{
	struct conn *c = ctx;
	struct bench *b = c->b;
	uint32_t hi, fail_ver = 0;
	uint64_t fail_off = 0;
	size_t r;

	if (off == 0) {
		c->t_payload = c->t_recv;
		hi = b->issued ? b->issued[c->key] : 0;
		c->cand_lo = hi - c->lo >= CAND_MAX ? hi - (CAND_MAX - 1) : c->lo;
		c->cand = hi - c->cand_lo == CAND_MAX - 1 ? ~0ULL :
			  (1ULL << (hi - c->cand_lo + 1)) - 1;
		if (b->o->verify && total != c->size) {
			c->bad = true;
			if (may_print(&b->printed_verify))
				fprintf(stderr, "goblin-bench: verify error: key %s: "
					"length %" PRIu64 ", expected %" PRIu64 "\n",
					c->name, total, c->size);
		}
	}
	if (!b->o->verify || c->bad)
		return;
	for (uint64_t m = c->cand; m; m &= m - 1) {
		unsigned i = (unsigned)__builtin_ctzll(m);
		uint64_t base = gb_value_base(b->vtag, c->key, c->cand_lo + i);

		r = gb_value_check(base, off, p, n);
		if (r < n) {
			c->cand &= ~(1ULL << i);
			fail_off = off + r;
			fail_ver = c->cand_lo + i;
		}
	}
	if (c->cand)
		return;
	c->bad = true;
	if (may_print(&b->printed_verify))
		fprintf(stderr, "goblin-bench: verify error: key %s offset %" PRIu64
			" (of %" PRIu64 " bytes): got 0x%02x, expected 0x%02x "
			"(version %u)\n", c->name, fail_off, total,
			(unsigned char)p[fail_off - off],
			gb_value_byte(gb_value_base(b->vtag, c->key, fail_ver),
				      fail_off), fail_ver);
}

/* Refills the send buffer from the request: head, value, tail. */
static void fill(struct conn *c)
{
	uint64_t vsize = c->op == GB_OP_SET ? c->size : 0, off;
	size_t k, room;

	c->wlen = c->wpos = 0;
	while (c->wlen < WBUF_SIZE && c->vpos < c->total) {
		room = WBUF_SIZE - c->wlen;
		if (c->vpos < c->head_len) {
			off = c->vpos;
			k = c->head_len - off < room ? c->head_len - off : room;
			memcpy(c->wbuf + c->wlen, c->head + off, k);
		} else if (c->vpos < c->head_len + vsize) {
			off = c->vpos - c->head_len;
			k = vsize - off < room ? (size_t)(vsize - off) : room;
			gb_value_fill(c->vbase, off, c->wbuf + c->wlen, k);
		} else {
			off = c->vpos - c->head_len - vsize;
			k = c->tail_len - off < room ? c->tail_len - off : room;
			memcpy(c->wbuf + c->wlen, c->tail + off, k);
		}
		c->wlen += k;
		c->vpos += k;
	}
}

static void issue(struct bench *b, struct conn *c);

static void complete(struct bench *b, struct conn *c)
{
	char byte;

	account(b, c);
	if (c->resp.close_after) {
		conn_reset(b, c, NULL);
		return;
	}
	if (c->outcome == GB_RESP_ERROR &&
	    recv(c->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
		conn_reset(b, c, NULL);	/* the server closed after its error */
		return;
	}
	issue(b, c);
}

/* Sends what the socket takes; completes the request when both directions
 * are done. */
static void conn_flush(struct bench *b, struct conn *c)
{
	ssize_t n;

	while (!c->wdone) {
		if (c->wpos == c->wlen) {
			if (c->vpos == c->total) {
				c->wdone = true;
				break;
			}
			fill(c);
		}
		n = send(c->fd, c->wbuf + c->wpos, c->wlen - c->wpos,
			 MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			set_out(b, c, true);
			return;
		}
		if (n < 0) {
			conn_reset(b, c, strerror(errno));
			return;
		}
		c->wpos += (size_t)n;
		c->t_active = gb_now_ns();
	}
	set_out(b, c, false);
	if (c->rdone)
		complete(b, c);
}

static uint64_t pick_key(struct bench *b, struct conn *c)
{
	uint64_t i = b->o->key_dist == GB_KEYS_ZIPF ?
		     gb_zipf_next(&b->zipf, &c->rng) :
		     gb_rng_below(&c->rng, b->hot_n);

	return b->o->hot_start + i;
}

/* --rate: true while the phase has issued its share of requests so far. */
static bool rate_held(struct bench *b)
{
	uint64_t issued = b->st->get_issued + b->st->set_issued;

	return b->o->rate > 0 &&
	       (double)issued >= b->o->rate * (double)(gb_now_ns() - b->start) / NSEC;
}

static void issue(struct bench *b, struct conn *c)
{
	const struct gb_opts *o = b->o;

	if (b->stopping || c->dead || c->fd < 0 || c->busy)
		return;
	if (b->open ? !gb_sched_due(&b->sched, gb_now_ns()) : rate_held(b))
		return;
	if (b->phase == PH_POPULATE) {
		if (b->next_key >= o->keys) {
			b->stopping = true;
			return;
		}
		c->key = b->next_key++;
		c->op = GB_OP_SET;
	} else if (o->key_dist == GB_KEYS_SEQUENTIAL) {
		if (b->next_key >= o->hot_start + o->hot_keys) {
			b->stopping = true;
			return;
		}
		c->key = b->next_key++;
		c->op = o->set_ratio > 0 && gb_rng_unit(&c->rng) < o->set_ratio ?
			GB_OP_SET : GB_OP_GET;
	} else {
		c->key = pick_key(b, c);
		c->op = o->set_ratio > 0 && gb_rng_unit(&c->rng) < o->set_ratio &&
			!b->setbusy[c->key] ? GB_OP_SET : GB_OP_GET;
	}
	c->size = gb_size_of(b->sizer, c->key);
	gb_key_name(c->name, sizeof(c->name), c->key);
	c->head_len = gb_req_head(c->head, sizeof(c->head), o->proto, c->op,
				  c->name, c->size, b->addr.host_hdr, o->http_prefix);
	c->tail = gb_req_tail(o->proto, c->op);
	c->tail_len = strlen(c->tail);
	c->total = c->head_len + (c->op == GB_OP_SET ? c->size : 0) +
		   c->tail_len;
	if (c->op == GB_OP_SET) {
		c->ver = 0;
		if (b->phase == PH_RUN && b->issued) {
			c->ver = ++b->issued[c->key];
			b->setbusy[c->key] = 1;
		}
		c->vbase = gb_value_base(b->vtag, c->key, c->ver);
		b->st->set_issued++;
	} else {
		c->lo = b->stored ? b->stored[c->key] : 0;
		b->st->get_issued++;
	}
	gb_resp_start(&c->resp, o->proto, c->op, c->name);
	c->busy = true;
	c->wdone = c->rdone = c->bad = false;
	c->vpos = c->wlen = c->wpos = 0;
	c->cand = 0;
	c->t_first = c->t_payload = c->t_done = 0;
	c->t_issue = c->t_active = gb_now_ns();
	if (b->open) {
		c->t_issue = gb_sched_take(&b->sched);
		gb_hist_record(&b->st->send_lag, c->t_active - c->t_issue);
	}
	conn_flush(b, c);
}

static void conn_read(struct bench *b, struct conn *c)
{
	enum gb_outcome out;
	ssize_t n;
	size_t used;

	for (;;) {
		n = recv(c->fd, c->rbuf, RBUF_SIZE, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n < 0) {
			conn_reset(b, c, strerror(errno));
			return;
		}
		if (n == 0) {
			conn_reset(b, c, c->busy && !c->rdone ?
				   "connection closed by server" : NULL);
			return;
		}
		c->t_recv = c->t_active = gb_now_ns();
		if (!c->busy || c->rdone) {
			conn_reset(b, c, "bytes from the server after its answer");
			return;
		}
		if (!c->t_first)
			c->t_first = c->t_recv;
		used = gb_resp_feed(&c->resp, c->rbuf, (size_t)n, on_body, c,
				    &out);
		if (out == GB_RESP_PROTO) {
			conn_reset(b, c, c->resp.msg);
			return;
		}
		if (out != GB_RESP_MORE) {
			if (used < (size_t)n) {
				conn_reset(b, c, "bytes from the server after its answer");
				return;
			}
			c->rdone = true;
			c->outcome = out;
			c->t_done = c->t_recv;
			if (c->wdone)
				complete(b, c);
			return;
		}
		if ((size_t)n < RBUF_SIZE)
			return;
	}
}

static void progress(struct bench *b, uint64_t now)
{
	const struct gb_stats *st = b->st;
	double el = (double)(now - b->start) / NSEC;

	if (b->phase == PH_POPULATE)
		fprintf(stderr, "goblin-bench: populate %" PRIu64 "/%" PRIu64
			" keys, %.1f MiB, %.1f MB/s, %.1f s\n",
			st->sets + st->set_errors, b->o->keys,
			(double)st->set_bytes / (1 << 20),
			gb_mbps(st->set_bytes, el), el);
	else
		fprintf(stderr, "goblin-bench: run %.1f/%.1f s, %" PRIu64
			" requests, %.0f req/s, %.1f MB/s, verify errors %" PRIu64
			"\n", el, b->o->duration,
			gb_gets(st) + st->sets, (gb_gets(st) + st->sets) / el,
			gb_mbps(st->get_bytes + st->set_bytes, el),
			st->verify_errors);
}

static void tick(struct bench *b)
{
	uint64_t now = gb_now_ns(), limit = (uint64_t)(b->o->timeout * NSEC);

	if (gb_interrupted || (b->phase == PH_RUN && now >= b->deadline))
		b->stopping = true;
	if (!b->o->quiet && now >= b->next_progress) {
		progress(b, now);
		b->next_progress += NSEC;
	}
	for (unsigned i = 0; i < b->o->conns; i++) {
		struct conn *c = &b->conns[i];

		if (c->busy && now > c->t_active && now - c->t_active > limit)
			conn_reset(b, c, "no progress within --timeout");
	}
}

static bool phase_done(struct bench *b)
{
	if (!b->live)
		return true;
	if (!b->stopping)
		return false;
	for (unsigned i = 0; i < b->o->conns; i++)
		if (b->conns[i].busy)
			return false;
	return true;
}

/* Waits for socket events: with a schedule, no later than the next
 * intended start (unless requests already wait for a connection). */
static int wait_events(struct bench *b, struct epoll_event *ev, int max)
{
	uint64_t now, next, ns = (uint64_t)TICK_MS * 1000000;
	struct timespec ts;

	if (!b->open)
		return epoll_wait(b->epfd, ev, max, b->o->rate > 0 ? 1 : TICK_MS);
	now = gb_now_ns();
	next = gb_sched_next(&b->sched);
	if (next > now && next - now < ns)
		ns = next - now;
	ts.tv_sec = (time_t)(ns / NSEC);
	ts.tv_nsec = (long)(ns % NSEC);
	return epoll_pwait2(b->epfd, ev, max, &ts, NULL);
}

static void run_phase(struct bench *b, enum phase phase, struct gb_stats *st)
{
	struct epoll_event ev[64];
	int n;

	b->phase = phase;
	b->st = st;
	b->stopping = false;
	gb_hist_reset(&st->ttfb);
	gb_hist_reset(&st->payload);
	gb_hist_reset(&st->complete);
	gb_hist_reset(&st->set_complete);
	gb_hist_reset(&st->send_lag);
	b->start = gb_now_ns();
	b->deadline = b->start + (uint64_t)(b->o->duration * NSEC);
	b->open = phase == PH_RUN && b->o->arrivals != GB_ARRIVALS_NONE;
	if (b->open)
		gb_sched_init(&b->sched, b->o->arrivals, b->o->rate,
			      b->o->seed, b->start, b->deadline);
	b->next_progress = b->start + NSEC;
	b->next_key = phase == PH_POPULATE ? 0 : b->o->hot_start;
	for (unsigned i = 0; i < b->o->conns; i++)
		issue(b, &b->conns[i]);
	while (!phase_done(b)) {
		n = wait_events(b, ev, 64);
		for (int i = 0; i < n; i++) {
			struct conn *c = ev[i].data.ptr;

			if ((ev[i].events & EPOLLOUT) && c->fd >= 0 && c->busy)
				conn_flush(b, c);
			if ((ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) &&
			    c->fd >= 0)
				conn_read(b, c);
		}
		if (b->open)	/* what fell due before the deadline goes out */
			for (unsigned i = 0; i < b->o->conns; i++)
				issue(b, &b->conns[i]);
		tick(b);
		for (unsigned i = 0; i < b->o->conns; i++)
			issue(b, &b->conns[i]);
		if (b->open)
			gb_sched_note_backlog(&b->sched, gb_now_ns());
	}
	st->seconds = (double)(gb_now_ns() - b->start) / NSEC;
	if (b->open) {
		st->scheduled = gb_sched_total(&b->sched);
		st->unissued = st->scheduled - b->sched.issued.n;
		st->queued = b->sched.queued;
		st->backlog_max = b->sched.backlog_max;
	}
	if (!b->live)
		fprintf(stderr, "goblin-bench: every connection failed\n");
}

static int setup(struct bench *b, const struct gb_opts *o,
		 const struct gb_sizer *sizer)
{
	b->o = o;
	b->sizer = sizer;
	b->vtag = gb_value_tag(o->seed);
	b->hot_n = o->hot_keys;
	if (o->key_dist == GB_KEYS_ZIPF)
		gb_zipf_init(&b->zipf, o->hot_keys, o->zipf_theta);
	if (o->set_ratio > 0) {
		b->stored = calloc(o->keys, sizeof(*b->stored));
		b->issued = calloc(o->keys, sizeof(*b->issued));
		b->setbusy = calloc(o->keys, 1);
		if (!b->stored || !b->issued || !b->setbusy) {
			fprintf(stderr, "goblin-bench: out of memory for %" PRIu64
				" key versions\n", o->keys);
			return -1;
		}
	}
	b->conns = calloc(o->conns, sizeof(*b->conns));
	if (!b->conns)
		return -1;
	for (unsigned i = 0; i < o->conns; i++) {
		struct conn *c = &b->conns[i];

		c->b = b;
		c->fd = -1;
		c->id = i;
		gb_rng_seed(&c->rng, gb_mix64(o->seed ^ 0x72756e) + i);
		c->wbuf = malloc(WBUF_SIZE);
		c->rbuf = malloc(RBUF_SIZE);
		if (!c->wbuf || !c->rbuf) {
			fprintf(stderr, "goblin-bench: out of memory\n");
			return -1;
		}
	}
	b->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (b->epfd < 0) {
		perror("goblin-bench: epoll_create1");
		return -1;
	}
	gb_catch_signals();
	return gb_resolve(o->host, o->port, &b->addr);
}

static void teardown(struct bench *b)
{
	for (unsigned i = 0; b->conns && i < b->o->conns; i++) {
		conn_close(b, &b->conns[i]);
		free(b->conns[i].wbuf);
		free(b->conns[i].rbuf);
	}
	free(b->conns);
	if (b->epfd >= 0)
		close(b->epfd);
	free(b->stored);
	free(b->issued);
	free(b->setbusy);
}

int gb_run(const struct gb_opts *o, const struct gb_sizer *sizer,
	   struct gb_result *res)
{
	struct bench b = { .epfd = -1 };
	int rc = -1, err;

	if (setup(&b, o, sizer))
		goto out;
	for (unsigned i = 0; i < o->conns; i++) {
		err = conn_open(&b, &b.conns[i]);
		if (err) {
			fprintf(stderr, "goblin-bench: cannot connect to %s:%u: %s\n",
				o->host, o->port, strerror(-err));
			res->connect_failed = true;
			goto out;
		}
		b.live++;
	}
	if (!o->no_store) {
		run_phase(&b, PH_POPULATE, &res->populate);
		res->populated = true;
	}
	if (!o->populate_only && !gb_interrupted && b.live) {
		run_phase(&b, PH_RUN, &res->run);
		res->measured = true;
	}
	if (gb_interrupted)
		fprintf(stderr, "goblin-bench: gb_interrupted\n");
	rc = 0;
out:
	teardown(&b);
	return rc;
}
