/*
 * The RDMA protocol, client side (rdma.h has the design): one connection,
 * one registered bulk buffer, one GET at a time.  Waits poll the CQ (the
 * transport makes progress there) and sleep in the transport's wait
 * between polls, for at most RDMA_CLIENT_WAIT_NS.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "rdma_client.h"

#define RDMA_CLIENT_WAIT_NS	(10ull * 1000000000ull)
#define CTX(i)			((void *)(uintptr_t)(i))

struct rdma_client {
	const struct rdma_transport *tp;
	struct rdma_dev *dev;
	struct rdma_ep *ep;
	char *mem;		/* recvs | sends */
	struct rdma_mr mr;
	char *bulk;		/* the bulk buffer the server writes into */
	size_t bulk_len;
	struct rdma_mr bulk_mr;
	unsigned send_free;
	unsigned lines[RDMA_RECVS];	/* completed receives, in order */
	size_t line_len[RDMA_RECVS];
	unsigned head, n;
};

static char *recv_buf(struct rdma_client *c, unsigned i)
{
	return c->mem + i * RDMA_MSG;
}

static char *send_buf(struct rdma_client *c, unsigned i)
{
	return c->mem + (RDMA_RECVS + i) * RDMA_MSG;
}

/* One round of completions: receives queue up, sends free their
 * buffer.  Returns 0 or -errno. */
static int cl_poll(struct rdma_client *c)
{
	struct rdma_wc wc[16];
	unsigned slot;
	int n, i;

	n = c->tp->poll(c->ep, wc, 16);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		if (wc[i].err)
			return wc[i].err;
		if (wc[i].op == RDMA_OP_SEND) {
			c->send_free |= 1u << (uintptr_t)wc[i].ctx;
			continue;
		}
		if (wc[i].op != RDMA_OP_RECV || c->n == RDMA_RECVS)
			return -EPROTO;
		slot = (c->head + c->n) % RDMA_RECVS;
		c->lines[slot] = (unsigned)(uintptr_t)wc[i].ctx;
		c->line_len[slot] = wc[i].len;
		c->n++;
	}
	if (!n)
		return c->tp->wait(c->ep, 100);
	return 0;
}

/* Polls until *<what> (a free send, a received line) is not 0. */
static int cl_wait(struct rdma_client *c, const unsigned *what)
{
	uint64_t end = mono_ns() + RDMA_CLIENT_WAIT_NS;
	int r;

	while (!*what) {
		r = cl_poll(c);
		if (r)
			return r;
		if (mono_ns() > end)
			return -ETIMEDOUT;
	}
	return 0;
}

static int cl_send(struct rdma_client *c, const char *line)
{
	size_t len = strlen(line);
	unsigned i;
	int r;

	if (len >= RDMA_MSG)
		return -EMSGSIZE;
	r = cl_wait(c, &c->send_free);
	if (r)
		return r;
	i = (unsigned)__builtin_ctz(c->send_free);
	memcpy(send_buf(c, i), line, len);
	c->send_free &= ~(1u << i);
	return c->tp->post_send(c->ep, send_buf(c, i), len, &c->mr, CTX(i));
}

/* The next line from the server, NUL-terminated and without its CRLF,
 * copied into <line> (RDMA_MSG bytes); its receive is posted again. */
static int cl_line(struct rdma_client *c, char *line)
{
	unsigned i;
	size_t len;
	int r;

	r = cl_wait(c, &c->n);
	if (r)
		return r;
	i = c->lines[c->head];
	len = c->line_len[c->head];
	c->head = (c->head + 1) % RDMA_RECVS;
	c->n--;
	if (len >= RDMA_MSG)
		len = RDMA_MSG - 1;
	memcpy(line, recv_buf(c, i), len);
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	line[len] = '\0';
	return c->tp->post_recv(c->ep, recv_buf(c, i), RDMA_MSG, &c->mr,
				CTX(i));
}

/* Before connecting: the message buffers and the bulk buffer registered,
 * the receives posted. */
static int cl_prepare(struct rdma_client *c)
{
	unsigned i;
	int r;

	r = c->tp->reg(c->dev, c->mem, (RDMA_RECVS + RDMA_SENDS) *
		       RDMA_MSG, RDMA_LOCAL, &c->mr);
	if (r)
		return r;
	r = c->tp->reg(c->dev, c->bulk, c->bulk_len, RDMA_REMOTE_WRITE,
		       &c->bulk_mr);
	for (i = 0; !r && i < RDMA_RECVS; i++)
		r = c->tp->post_recv(c->ep, recv_buf(c, i), RDMA_MSG,
				     &c->mr, CTX(i));
	return r;
}

static void cl_err(char *err, size_t errlen, const char *line)
{
	if (errlen)
		snprintf(err, errlen, "%s", line);
}

int rdma_client_create(const struct rdma_transport *tp,
		       const char *host, uint16_t port, size_t bulk_len,
		       char *err, size_t errlen,
		       struct rdma_client **cp)
{
	struct rdma_client *c;
	char line[RDMA_MSG];
	int r;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->tp = tp;
	c->bulk_len = bulk_len ? bulk_len : 1;
	c->send_free = (1u << RDMA_SENDS) - 1;
	if (posix_memalign((void **)&c->mem, 4096,
			   (RDMA_RECVS + RDMA_SENDS) * RDMA_MSG) ||
	    posix_memalign((void **)&c->bulk, 4096, c->bulk_len)) {
		r = -ENOMEM;
		goto out;
	}
	r = tp->dial(host, port, &c->dev, &c->ep);
	if (!r)
		r = cl_prepare(c);
	if (!r)
		r = tp->connect(c->ep);
	if (r)
		goto out;
	snprintf(line, sizeof(line), "WINDOW %llu %llu %zu\r\n",
		 (unsigned long long)tp->remote_addr(c->dev, &c->bulk_mr,
						     c->bulk),
		 (unsigned long long)c->bulk_mr.key, bulk_len);
	r = cl_send(c, line);
	if (!r)
		r = cl_line(c, line);
	if (!r && strcmp(line, "OK")) {
		cl_err(err, errlen, line);
		r = -EPROTO;
	}
	if (r)
		goto out;
	*cp = c;
	return 0;
out:
	rdma_client_destroy(&c);
	return r;
}

/* The rounds of one hit: BULK_READY per round (NEXT after each but the
 * last), then END. */
static int cl_rounds(struct rdma_client *c, uint64_t size, void *out,
		     size_t cap, uint64_t t0, struct rdma_times *t,
		     char *err, size_t errlen)
{
	unsigned long long off, n;
	char line[RDMA_MSG];
	uint64_t got = 0;
	int r;

	do {
		r = cl_line(c, line);
		if (r)
			return r;
		if (sscanf(line, "BULK_READY %llu %llu", &off, &n) != 2 ||
		    off != got || n > c->bulk_len || n > size - got ||
		    (!n && size)) {
			cl_err(err, errlen, line);
			return -EPROTO;
		}
		if (got + n == size)	/* every byte is in the bulk buffer */
			t->bulk_ns = mono_ns() - t0;
		if (size <= cap)
			memcpy((char *)out + off, c->bulk, n);
		got += n;
		if (got < size) {
			r = cl_send(c, "NEXT\r\n");
			if (r)
				return r;
		}
	} while (got < size);
	r = cl_line(c, line);
	if (r)
		return r;
	if (strcmp(line, "END")) {
		cl_err(err, errlen, line);
		return -EPROTO;
	}
	t->end_ns = mono_ns() - t0;
	return size <= cap ? 1 : -EMSGSIZE;
}

int rdma_client_get(struct rdma_client *c, const char *key,
		    void *out, size_t cap, size_t *len, uint32_t *flags,
		    struct rdma_times *t, char *err, size_t errlen)
{
	char line[RDMA_MSG], vkey[256];
	unsigned long long size;
	struct rdma_times tt;
	unsigned f;
	uint64_t t0;
	int r;

	if (!t)
		t = &tt;
	memset(t, 0, sizeof(*t));
	if (strlen(key) > 250)
		return -EINVAL;
	snprintf(line, sizeof(line), "get %s\r\n", key);
	t0 = mono_ns();
	r = cl_send(c, line);
	if (!r)
		r = cl_line(c, line);
	if (r)
		return r;
	t->header_ns = mono_ns() - t0;
	if (!strcmp(line, "END")) {
		t->end_ns = t->header_ns;
		return 0;
	}
	if (sscanf(line, "VALUE %255s %u %llu", vkey, &f, &size) != 3 ||
	    strcmp(vkey, key)) {
		cl_err(err, errlen, line);
		return -EPROTO;
	}
	r = cl_rounds(c, size, out, cap, t0, t, err, errlen);
	if (r == 1) {
		*len = (size_t)size;
		*flags = f;
	}
	return r;
}

void rdma_client_destroy(struct rdma_client **cp)
{
	struct rdma_client *c = *cp;

	if (!c)
		return;
	if (c->ep)
		c->tp->ep_destroy(&c->ep);
	if (c->bulk_mr.handle)
		c->tp->dereg(&c->bulk_mr);
	if (c->mr.handle)
		c->tp->dereg(&c->mr);
	if (c->dev)
		c->tp->dev_destroy(&c->dev);
	free(c->bulk);
	free(c->mem);
	free(c);
	*cp = NULL;
}
