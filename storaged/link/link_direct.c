/*
 * READs whose disk chunks the kernel reads straight into the worker's rx
 * buffers: no copy between the engine and nginx.
 *
 * A READ that finds room takes one or two "quads" — four adjacent free rx
 * buffers, GS_IO_BUFFER bytes together — and opens its stream on them
 * (gs_stream_open_into, held: consuming frees nothing).  A landed chunk is
 * staged buffer by buffer as it is: a DATA's bytes start at the buffer's
 * start, so the first buffer of a READ that starts inside a chunk (after a
 * RAM head, or a Range) carries the bytes before it too, and its <off>
 * says where they start.  When nginx gives a buffer back (BUFREL) it
 * returns to the READ, and once every buffer of a chunk is back the
 * stream reads ahead into its room.  Bytes the stream hands out from RAM
 * (a head, RAM chunks) are copied as on the copy path.
 *
 *   quad q = rx buffers 4q .. 4q+3:  RX_FREE -> RX_DIRECT (the READ's, the
 *   kernel may write) -> RX_NGINX (staged) -> RX_DIRECT (BUFREL) -> ...
 *   -> RX_FREE once the stream is closed and its reads are over.
 *
 * Quads come from the rx buffers only while a quarter of them (at least
 * per_stream) stays free for the copy path, so copying READs always make
 * progress; a READ that finds no quad copies.  With the default 32 rx
 * buffers that is six quads: four READs at once go direct.  The ring stays mapped, and
 * the worker's memory allocated, until every direct stream of the worker
 * has released its buffers (c->ndirect), even after the worker is gone.
 */
#include <errno.h>
#include <stdlib.h>

#include "link_internal.h"

#define QUAD_BUFS	(GS_IO_BUFFER / RING_BUF_SIZE)
#define DIRECT_QUADS	2		/* 2 HDD or 8 SSD chunks in flight */
#define DIRECT_SEGS	(DIRECT_QUADS * QUAD_BUFS)

struct link_direct {
	struct link_conn *c;
	struct link_handle *h;		/* NULL once closed */
	unsigned nquads;
	uint32_t quad[DIRECT_QUADS];	/* first rx buffer of each */
	uint32_t mine;			/* closed: bit q*4+i, still RX_DIRECT */
	/* buffers with nginx, in offset order: where their bytes end */
	struct { uint64_t end; uint32_t buf; bool back; } seg[DIRECT_SEGS];
	unsigned shead, slen;
};

/* Whether rx buffer <b> is free and may go to a quad. */
static bool rx_is_free(const struct link_conn *c, uint32_t b)
{
	return c->rx_state[b] == RX_FREE;
}

/* Takes rx buffer <b> off the free list for <h>. */
static void rx_claim(struct link_conn *c, uint32_t b, uint32_t owner)
{
	for (uint32_t i = 0; i < c->nrx_free; i++)
		if (c->rx_free[i] == b) {
			c->rx_free[i] = c->rx_free[--c->nrx_free];
			break;
		}
	c->rx_state[b] = RX_DIRECT;
	c->rx_owner[b] = owner;
}

/* Up to DIRECT_QUADS quads for <h>, within the budget: a second one only
 * while two more would still be left for other READs, so that under load
 * every READ gets one before any gets two.  Returns how many. */
static unsigned take_quads(struct link_handle *h, struct link_direct *d)
{
	struct link_conn *c = h->c;
	uint32_t keep = c->ring.n_rx / 4 > c->per_stream ? c->ring.n_rx / 4 :
			c->per_stream;

	for (uint32_t q = 0; q < c->ring.n_rx / QUAD_BUFS &&
	     d->nquads < DIRECT_QUADS; q++) {
		uint32_t b = q * QUAD_BUFS, i;

		if (c->nrx_free < keep + QUAD_BUFS * (d->nquads ? 3 : 1))
			break;
		for (i = 0; i < QUAD_BUFS && rx_is_free(c, b + i); i++)
			;
		if (i < QUAD_BUFS)
			continue;
		for (i = 0; i < QUAD_BUFS; i++)
			rx_claim(c, b + i, h->id);
		d->quad[d->nquads++] = b;
	}
	return d->nquads;
}

/* The stream has something new (from gs_io_run). */
static void direct_wake(void *arg)
{
	struct link_direct *d = arg;

	if (d->h)
		mark_ready(d->h);
}

/* The stream's reads are over: its buffers that never went back to nginx
 * are free again; a dead worker's ring can go (from gs_io_run). */
static void direct_released(void *arg)
{
	struct link_direct *d = arg;
	struct link_conn *c = d->c;

	for (unsigned q = 0; q < d->nquads; q++)
		for (unsigned i = 0; i < QUAD_BUFS; i++)
			if (d->mine & 1u << (q * QUAD_BUFS + i) && !c->dead)
				rx_give(c, d->quad[q] + i);
	if (!--c->ndirect && c->dead)
		ring_unmap(&c->ring);
	free(d);
}

int link_direct_open(struct link_handle *h)
{
	struct link_conn *c = h->c;
	struct link_direct *d;
	void *bufs[DIRECT_QUADS];
	int ret;

	if (c->ring.buf_size * QUAD_BUFS != GS_IO_BUFFER || h->end <= h->pos)
		return -EAGAIN;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->c = c;
	d->h = h;
	if (!take_quads(h, d)) {
		free(d);
		return -EAGAIN;
	}
	for (unsigned q = 0; q < d->nquads; q++)
		bufs[q] = ring_rx_buf(&c->ring, d->quad[q]);
	ret = gs_stream_open_into(c->srv->io, h->obj, h->pos, h->end - h->pos,
				  bufs, d->nquads, direct_wake, direct_released,
				  d, &h->s);
	if (ret < 0) {
		for (unsigned q = 0; q < d->nquads; q++)
			for (unsigned i = 0; i < QUAD_BUFS; i++)
				rx_give(c, d->quad[q] + i);
		free(d);
		return ret;
	}
	gs_stream_hold(h->s);
	while (d->nquads > 1 && d->nquads > gs_stream_bufs_used(h->s)) {
		d->nquads--;		/* its range needs fewer */
		for (unsigned i = 0; i < QUAD_BUFS; i++)
			rx_give(c, d->quad[d->nquads] + i);
	}
	h->d = d;
	c->ndirect++;
	c->srv->st[ST_ring_direct_reads]++;
	return 0;
}

int link_direct_buf(const struct link_handle *h, const void *data)
{
	const struct link_direct *d = h->d;
	const char *p = data;

	for (unsigned q = 0; q < d->nquads; q++) {
		const char *base = ring_rx_buf(&h->c->ring, d->quad[q]);

		if (p >= base && p < base + GS_IO_BUFFER)
			return (int)(d->quad[q] + (p - base) / RING_BUF_SIZE);
	}
	return -1;
}

bool link_direct_stage(struct link_handle *h, int b, const void *data,
		       size_t len)
{
	struct link_conn *c = h->c;
	struct link_direct *d = h->d;
	size_t in = (const char *)data - ring_rx_buf(&c->ring, (uint32_t)b);
	size_t n = c->ring.buf_size - in < len ? c->ring.buf_size - in : len;
	struct ring_cqe cqe = {
		.user_data = h->ud, .op = RING_OP_DATA, .handle = h->id,
		.buf = (uint32_t)b, .off = h->pos - in, .len = in + n,
	};
	unsigned k;

	/* a buffer goes out whole or not at all: it can't go out twice */
	if (h->pos + n > h->limit || d->slen == DIRECT_SEGS)
		return false;
	k = (d->shead + d->slen++) % DIRECT_SEGS;
	d->seg[k].end = h->pos + n;
	d->seg[k].buf = (uint32_t)b;
	d->seg[k].back = false;
	c->rx_state[b] = RX_NGINX;
	c->srv->st[ST_ring_read_bytes] += n;
	c->srv->st[ST_ring_direct_bytes] += n;
	gs_stream_consume(h->s, n);
	h->pos += n;
	post_cqe(c, &cqe);
	return true;
}

bool link_direct_bufrel(struct link_handle *h, uint32_t b)
{
	struct link_direct *d = h->d;
	uint64_t rel = 0;
	unsigned i;

	for (i = 0; i < d->slen; i++)
		if (d->seg[(d->shead + i) % DIRECT_SEGS].buf == b)
			break;
	if (i == d->slen)
		return false;
	d->seg[(d->shead + i) % DIRECT_SEGS].back = true;
	h->c->rx_state[b] = RX_DIRECT;
	while (d->slen && d->seg[d->shead].back) {
		rel = d->seg[d->shead].end;
		d->shead = (d->shead + 1) % DIRECT_SEGS;
		d->slen--;
	}
	if (rel)
		gs_stream_release(h->s, rel);
	mark_ready(h);
	return true;
}

void link_direct_close(struct link_handle *h)
{
	struct link_direct *d = h->d;
	struct link_conn *c = h->c;

	if (!d)
		return;
	h->d = NULL;
	d->h = NULL;
	for (unsigned q = 0; q < d->nquads; q++)
		for (unsigned i = 0; i < QUAD_BUFS; i++) {
			uint32_t b = d->quad[q] + i;

			c->rx_owner[b] = 0;	/* staged: a BUFREL frees it */
			if (c->rx_state[b] == RX_DIRECT)
				d->mine |= 1u << (q * QUAD_BUFS + i);
		}
	gs_stream_close(&h->s);
}
