/*
 * The nginx link's operations: what a worker submits through its ring
 * (LOOKUP, READ, MORE, BUFREL, RELEASE, WOPEN, WDATA, WFINISH, WABORT,
 * DELETE, STATS), each checked on its own copy of the SQE, and the pumps
 * that stream objects into rx buffers and tx buffers into writers; what
 * objects' attributes and WFINISH's condition add is in link_attr.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exptime.h"
#include "link_internal.h"
#include "log.h"

/* ---- the distinct objects a worker pins: a linear-probing set ---- */

static struct pin_slot *pin_slot(struct link_conn *c, const struct gs_obj *obj)
{
	uint32_t mask = c->pin_cap - 1;
	uint32_t i = (uint32_t)(((uintptr_t)obj >> 4) * 0x9e3779b1u) & mask;

	while (c->pinset[i].obj && c->pinset[i].obj != obj)
		i = (i + 1) & mask;
	return &c->pinset[i];
}

/* One more pin of <obj>: -EBUSY when it is a new object and the worker
 * pins max_pins already. */
static int pin_add(struct link_conn *c, struct gs_obj *obj)
{
	struct pin_slot *p = pin_slot(c, obj);

	if (!p->obj) {
		if (c->npinned >= c->srv->max_pins)
			return -EBUSY;
		p->obj = obj;
		c->npinned++;
	}
	p->n++;
	return 0;
}

static void pin_del(struct link_conn *c, const struct gs_obj *obj)
{
	uint32_t mask = c->pin_cap - 1, i, j, home;
	struct pin_slot *p = pin_slot(c, obj);

	if (--p->n)
		return;
	c->npinned--;
	/* backward-shift deletion keeps every probe chain whole */
	i = (uint32_t)(p - c->pinset);
	for (j = (i + 1) & mask; c->pinset[j].obj; j = (j + 1) & mask) {
		home = (uint32_t)(((uintptr_t)c->pinset[j].obj >> 4) *
				  0x9e3779b1u) & mask;
		if (((j - home) & mask) >= ((j - i) & mask)) {
			c->pinset[i] = c->pinset[j];
			i = j;
		}
	}
	c->pinset[i] = (struct pin_slot){ 0 };
}

/* ---- objects: LOOKUP, READ, MORE, BUFREL, RELEASE ---- */

/* A LOOKUP or WOPEN refused: the worker holds its most <what>. */
static void busy(struct link_conn *c, const char *what)
{
	c->srv->st[ST_ring_busy]++;
	if (link_refusal_log_due(c->srv))
		log_warn("nginx worker %d holds its most %s (%u pins of %u objects, %u writers): EBUSY",
			 (int)c->pid, what, c->nkind[H_OBJ], c->npinned,
			 c->nkind[H_WRITER]);
}

static bool key_ok(const struct ring_sqe *sqe)
{
	return sqe->klen > 0 && sqe->klen <= RING_KEY_MAX;
}

static void op_lookup(struct link_conn *c, const struct ring_sqe *sqe)
{
	struct ring_cqe cqe = { .user_data = sqe->user_data,
				.op = RING_OP_LOOKUP, .buf = RING_NO_BUF };
	struct link_server *srv = c->srv;
	struct link_handle *h;
	struct gs_obj *obj;

	srv->st[ST_ring_lookups]++;
	if (!key_ok(sqe)) {
		cqe.res = -EINVAL;
		goto out;
	}
	h = handle_get(c, H_OBJ);
	if (!h) {
		busy(c, "handles");
		cqe.res = -EBUSY;
		goto out;
	}
	/* FILLING: the object a shared writer fills, else the live one */
	cqe.res = -ENOENT;
	if (sqe->opflags & RING_LOOKUP_FILLING)
		cqe.res = gs_lookup_filling(srv->e, sqe->key, sqe->klen, &obj);
	if (cqe.res)
		cqe.res = gs_lookup(srv->e, sqe->key, sqe->klen, &obj);
	if (cqe.res) {
		handle_put(h);
		goto out;
	}
	/* many requests for one object pin it once as far as eviction goes:
	 * the bound is on distinct objects */
	if (pin_add(c, obj)) {
		gs_obj_put(srv->e, &obj);
		handle_put(h);
		busy(c, "pinned objects");
		cqe.res = -EBUSY;
		goto out;
	}
	h->obj = obj;
	srv->st[ST_ring_lookup_hits]++;
	srv->st[ST_ring_pins]++;
	link_lookup_meta(h, &cqe);
	if ((sqe->opflags & RING_LOOKUP_ATTR) && !link_lookup_attr_buf(h, &cqe)) {
		/* no rx buffer free: the completion waits for one, as READs
		 * do (a BUFREL brings us back) */
		h->ud = sqe->user_data;
		h->lookup_attr = true;
		wait_for_buffer(h);
		return;
	}
out:
	post_cqe(c, &cqe);
}

/* Hands the buffer being filled to nginx. */
static void stage(struct link_handle *h)
{
	struct link_conn *c = h->c;
	struct ring_cqe cqe = {
		.user_data = h->ud, .op = RING_OP_DATA, .handle = h->id,
		.buf = (uint32_t)h->fill, .off = h->fill_off, .len = h->fill_len,
	};

	c->rx_state[h->fill] = RX_NGINX;
	c->rx_owner[h->fill] = h->id;
	c->srv->st[ST_ring_read_bytes] += h->fill_len;
	h->nbufs++;
	h->fill = -1;
	h->fill_len = 0;
	post_cqe(c, &cqe);
}

/* Ends the READ of <h> with <res>; the pin stays until RELEASE. */
static void read_end(struct link_handle *h, int res)
{
	struct ring_cqe cqe = { .user_data = h->ud, .op = RING_OP_READ,
				.res = res, .handle = h->id };

	if (res == 0)		/* of an object that was filling: known now */
		cqe.len = gs_obj_meta(h->obj)->size;
	if (h->fill >= 0)
		rx_give(h->c, (uint32_t)h->fill);
	h->fill = -1;
	if (h->d)
		link_direct_close(h);
	gs_stream_close(&h->s);
	list_del(&h->wait_link);
	post_cqe(h->c, &cqe);
}

/*
 * Copies what the stream has into rx buffers, in offset order.  A buffer
 * is taken only for bytes already there, and what it holds is staged as
 * soon as the stream has to wait: rx buffers are never held idle by a
 * READ that waits for the disk (or for the engine's read-ahead windows,
 * which READs holding buffers may need to give back first).  A direct
 * READ (link_direct.c) stages the disk's bytes where they landed and
 * copies only bytes from RAM.
 */
static void pump_read(struct link_handle *h)
{
	struct link_conn *c = h->c;
	const void *data;
	size_t len, n;
	int ret, b;

	while (h->s && !c->dead) {
		if (h->pos >= h->limit && h->pos < h->end) {
			/* a MORE brings us back */
			if (h->fill_len)
				stage(h);
			return;
		}
		ret = gs_stream_peek(h->s, &data, &len);
		if (ret == -EAGAIN) {
			if (h->fill_len)
				stage(h);	/* what has landed goes now */
			return;
		}
		if (ret < 0 || !len) {
			if (!ret && h->fill_len)
				stage(h);
			read_end(h, ret);
			return;
		}
		b = h->d ? link_direct_buf(h, data) : -1;
		if (b >= 0) {
			if (h->fill_len)
				stage(h);	/* copied bytes before it go first */
			if (!link_direct_stage(h, b, data, len))
				return;
			continue;
		}
		if (h->fill < 0) {
			/* a BUFREL of one of ours, or any, brings us back */
			if (h->nbufs >= c->per_stream)
				return;
			h->fill = rx_take(c);
			if (h->fill < 0) {
				wait_for_buffer(h);
				return;
			}
			h->fill_off = h->pos;
		}
		n = c->ring.buf_size - h->fill_len;
		if (n > len)
			n = len;
		if (n > h->limit - h->pos)
			n = h->limit - h->pos;
		memcpy(ring_rx_buf(&c->ring, (uint32_t)h->fill) + h->fill_len,
		       data, n);
		gs_stream_consume(h->s, n);
		h->fill_len += n;
		h->pos += n;
		if (h->fill_len == c->ring.buf_size)
			stage(h);
	}
}

static void op_read(struct link_conn *c, const struct ring_sqe *sqe)
{
	struct link_handle *h = handle_find(c, sqe->handle, H_OBJ);
	struct ring_cqe cqe = { .user_data = sqe->user_data,
				.op = RING_OP_READ, .handle = sqe->handle };
	uint64_t size;

	if (!h || h->s) {
		cqe.res = -EINVAL;
		post_cqe(c, &cqe);
		return;
	}
	/* an object filling may not know its size yet: its stream ends at
	 * the final one (RING_SIZE_UNKNOWN: to the end) */
	size = gs_obj_filling(h->obj) ? RING_SIZE_UNKNOWN :
	       gs_obj_meta(h->obj)->size;
	h->ud = sqe->user_data;
	h->pos = sqe->off < size ? sqe->off : size;
	h->end = sqe->off + sqe->len < sqe->off || sqe->off + sqe->len > size ?
		 size : sqe->off + sqe->len;
	h->limit = sqe->grant && h->pos + sqe->grant > h->pos ?
		   h->pos + sqe->grant : UINT64_MAX;
	cqe.res = link_direct_open(h);
	if (cqe.res == -EAGAIN)
		cqe.res = gs_stream_open(c->srv->io, h->obj, h->pos,
					 h->end - h->pos, handle_wake, h, &h->s);
	if (cqe.res) {
		post_cqe(c, &cqe);
		return;
	}
	c->srv->st[ST_ring_reads]++;
	mark_ready(h);
}

static void release_obj(struct link_handle *h)
{
	if (h->d)
		link_direct_close(h);
	if (h->s)
		gs_stream_close(&h->s);
	if (h->fill >= 0)
		rx_give(h->c, (uint32_t)h->fill);
	pin_del(h->c, h->obj);
	gs_obj_put(h->c->srv->e, &h->obj);
	h->c->srv->st[ST_ring_pins]--;
	handle_put(h);
}

/* nginx lets a READ stage <len> more bytes. */
static void op_more(struct link_conn *c, const struct ring_sqe *sqe)
{
	struct link_handle *h = handle_find(c, sqe->handle, H_OBJ);

	if (!h) {
		link_conn_kill(c, "MORE for an unknown handle");
		return;
	}
	h->limit = h->limit + sqe->len < h->limit ? UINT64_MAX :
		   h->limit + sqe->len;
	if (h->s)
		mark_ready(h);
}

static void op_bufrel(struct link_conn *c, const struct ring_sqe *sqe)
{
	struct link_handle *h;
	uint32_t b = sqe->buf;

	if (b >= c->ring.n_rx || c->rx_state[b] != RX_NGINX) {
		link_conn_kill(c, "BUFREL of a buffer nginx does not hold");
		return;
	}
	h = handle_find(c, c->rx_owner[b], H_OBJ);
	if (h && h->d && link_direct_bufrel(h, b))
		return;
	if (h && h->nbufs) {
		h->nbufs--;
		if (h->s)
			mark_ready(h);
	}
	rx_give(c, b);
}

/* ---- writers: WOPEN, WDATA, WFINISH, WABORT ---- */

static void op_wopen(struct link_conn *c, const struct ring_sqe *sqe)
{
	struct ring_cqe cqe = { .user_data = sqe->user_data,
				.op = RING_OP_WOPEN };
	struct link_handle *h;

	if (!key_ok(sqe)) {
		cqe.res = -EINVAL;
		goto out;
	}
	/*
	 * nginx holds a tx buffer per PUT from WOPEN to WFINISH, and gives
	 * it to the next PUT before an abandoned WOPEN's writer is aborted:
	 * at most twice n_tx writers not yet finishing.
	 */
	h = c->nkind[H_WRITER] - c->busy < 2 * c->ring.n_tx ?
	    handle_get(c, H_WRITER) : NULL;
	if (!h) {
		busy(c, "writers");
		cqe.res = -EBUSY;
		goto out;
	}
	h->q = calloc(c->ring.n_tx, sizeof(*h->q));
	cqe.res = h->q ? link_wopen_attr(h, sqe) : -ENOMEM;
	if (cqe.res)
		goto out_put;
	cqe.res = gs_writer_open(c->srv->io, sqe->key, sqe->klen, sqe->len,
				 sqe->flags, exptime_absolute(sqe->exptime), GS_WRITE_SET,
				 &h->w);
	if (cqe.res)
		goto out_put;
	/* SHARED: findable while filling, once its attributes are in (the
	 * WDATAs bring them); one at a time per key */
	if (sqe->opflags & RING_WOPEN_SHARED)
		cqe.res = gs_writer_share(h->w, sqe->attr_len > 0);
	if (cqe.res) {
		gs_writer_abort(&h->w);
		goto out_put;
	}
	h->size = sqe->len;
	h->klen = sqe->klen;
	memcpy(h->key, sqe->key, sqe->klen);
	cqe.handle = h->id;
	goto out;

out_put:
	c->srv->st[ST_ring_store_errors]++;
	handle_put(h);
out:
	post_cqe(c, &cqe);
}

static void txdone(struct link_conn *c, const struct wdata *q)
{
	struct ring_cqe cqe = { .user_data = q->ud, .op = RING_OP_TXDONE,
				.buf = q->buf };

	c->tx_daemon[q->buf] = 0;
	post_cqe(c, &cqe);
}

/* Gives every queued tx buffer back. */
static void writer_drain(struct link_handle *h)
{
	while (h->qlen) {
		txdone(h->c, &h->q[h->qhead]);
		h->qhead = (h->qhead + 1) % h->c->ring.n_tx;
		h->qlen--;
	}
}

static void writer_done(void *arg, int res, const struct gs_stored *stored)
{
	struct link_handle *h = arg;
	struct link_conn *c = h->c;
	struct ring_cqe cqe = { .user_data = h->finish_ud,
				.op = RING_OP_WFINISH, .res = res,
				.handle = h->id };

	c->busy--;
	if (res == 0) {
		cqe.len = stored->replaced;
		cqe.meta.cas = stored->cas;
		c->srv->st[ST_ring_stores]++;
	} else {
		c->srv->st[ST_ring_store_errors]++;
	}
	if (!h->orphan)
		post_cqe(c, &cqe);
	handle_put(h);
}

/* Every byte given: link the object (created or replaced, for 201/204). */
static void writer_finish(struct link_handle *h)
{
	struct ring_cqe cqe = { .user_data = h->finish_ud,
				.op = RING_OP_WFINISH, .handle = h->id };
	struct link_conn *c = h->c;
	int ret = h->error;

	if (!ret && h->attr_got < h->attr_len)
		ret = -EINVAL;		/* the attributes were cut short */
	if (!ret)
		ret = gs_writer_finish(&h->w, h->cond, h->cas, writer_done, h);
	if (!ret) {
		h->finishing = true;
		c->busy++;
		return;
	}
	gs_writer_abort(&h->w);
	c->srv->st[ST_ring_store_errors]++;
	cqe.res = ret;
	post_cqe(c, &cqe);
	handle_put(h);
}

/* Copies queued tx buffers into the writer, in order. */
static void pump_write(struct link_handle *h)
{
	struct link_conn *c = h->c;
	struct wdata *q;
	size_t len, n;
	void *p;
	int ret;

	while (h->qlen && !c->dead) {
		q = &h->q[h->qhead];
		if (link_writer_take_attr(h, q)) {
			txdone(c, q);
			h->qhead = (h->qhead + 1) % c->ring.n_tx;
			h->qlen--;
			continue;
		}
		if (!h->error) {
			ret = gs_writer_buf(h->w, &p, &len, handle_wake, h);
			if (ret == -EAGAIN)
				return;
			if (ret < 0 || !len)
				h->error = ret ? ret : -EINVAL;
		}
		if (!h->error) {
			n = q->len - q->done;
			if (n > len)
				n = len;
			memcpy(p, ring_tx_buf(&c->ring, q->buf) + q->done, n);
			gs_writer_advance(h->w, n);
			q->done += n;
			c->srv->st[ST_ring_store_bytes] += n;
		}
		if (h->error || q->done == q->len) {
			txdone(c, q);
			h->qhead = (h->qhead + 1) % c->ring.n_tx;
			h->qlen--;
		}
	}
	if (h->finish && !h->finishing && !h->qlen && !c->dead)
		writer_finish(h);
}

static void op_wdata(struct link_conn *c, const struct ring_sqe *sqe)
{
	struct link_handle *h = handle_find(c, sqe->handle, H_WRITER);
	uint32_t b = sqe->buf;

	if (!h || h->finish || b >= c->ring.n_tx || c->tx_daemon[b] ||
	    !sqe->len || sqe->len > c->ring.buf_size ||
	    (h->given + sqe->len > h->attr_len &&	/* RING_SIZE_UNKNOWN: */
	     h->given + sqe->len - h->attr_len > h->size) ||	/* no wrap */
	    h->qlen >= c->ring.n_tx) {
		link_conn_kill(c, "bad WDATA");
		return;
	}
	c->tx_daemon[b] = 1;
	h->q[(h->qhead + h->qlen) % c->ring.n_tx] = (struct wdata){
		.ud = sqe->user_data, .buf = b, .len = (uint32_t)sqe->len,
	};
	h->qlen++;
	h->given += sqe->len;
	mark_ready(h);
}

static void op_wfinish(struct link_conn *c, const struct ring_sqe *sqe)
{
	struct link_handle *h = handle_find(c, sqe->handle, H_WRITER);

	if (!h || h->finish || link_wfinish_cond(h, sqe) < 0) {
		link_conn_kill(c, "bad WFINISH");
		return;
	}
	h->finish = true;
	h->finish_ud = sqe->user_data;
	mark_ready(h);
}

/* Drops a writer: nothing stored, its tx buffers back to nginx. */
static void writer_drop(struct link_handle *h)
{
	writer_drain(h);
	if (h->finishing) {
		h->orphan = true;	/* writer_done frees it */
		return;
	}
	gs_writer_abort(&h->w);
	h->c->srv->st[ST_ring_store_errors]++;
	handle_put(h);
}

static void op_wabort(struct link_conn *c, const struct ring_sqe *sqe)
{
	struct link_handle *h = handle_find(c, sqe->handle, H_WRITER);

	if (!h) {
		link_conn_kill(c, "WABORT of an unknown writer");
		return;
	}
	writer_drop(h);
}

/* ---- DELETE, STATS (SETATTR: link_attr.c) ---- */

/* DELETE: with sqe.off, only the object of that CAS (-EEXIST). */
static void op_delete(struct link_conn *c, const struct ring_sqe *sqe)
{
	struct ring_cqe cqe = { .user_data = sqe->user_data,
				.op = RING_OP_DELETE };
	struct gs_engine *e = c->srv->e;

	if (!key_ok(sqe))
		cqe.res = -EINVAL;
	else if (sqe->off)
		cqe.res = gs_delete_cas(e, sqe->key, sqe->klen, sqe->off);
	else
		cqe.res = gs_delete(e, sqe->key, sqe->klen);
	if (!cqe.res)
		c->srv->st[ST_ring_deletes]++;
	post_cqe(c, &cqe);
}

/* "name value\n" for every stat `stats` and `stats goblin` list (only the
 * engine's, numa_* and pools' without a snapshot source) and the link's
 * counters into <buf>. */
static size_t format_stats(struct link_server *srv, char *buf, size_t size)
{
	struct stats_snapshot snap = { 0 };
	unsigned tables = STATS_ENGINE | STATS_POOLS | STATS_LINK;

	if (srv->snapshot) {
		srv->snapshot(srv->snapshot_arg, &snap);
		tables |= STATS_PROCESS | STATS_SERVER | STATS_SUMMARY |
			  STATS_FIRST_BYTE;
	} else {
		gs_stats(srv->e, &snap.engine);
		gs_numa_stats(srv->e, &snap.numa);
	}
	gs_arena_stats(srv->e, &snap.arena);
	memcpy(snap.link, srv->st, sizeof(snap.link));
	return stats_format(tables, &snap, buf, size);
}

static void pump_stats(struct link_handle *h)
{
	struct link_conn *c = h->c;
	struct ring_cqe cqe = { .user_data = h->ud, .op = RING_OP_STATS };
	int b = rx_take(c);

	if (b < 0) {
		wait_for_buffer(h);
		return;
	}
	cqe.buf = (uint32_t)b;
	cqe.len = format_stats(c->srv, ring_rx_buf(&c->ring, (uint32_t)b),
			       c->ring.buf_size);
	c->rx_state[b] = RX_NGINX;
	handle_put(h);
	post_cqe(c, &cqe);
}

static void op_stats(struct link_conn *c, const struct ring_sqe *sqe)
{
	struct link_handle *h = handle_get(c, H_STATS);
	struct ring_cqe cqe = { .user_data = sqe->user_data,
				.op = RING_OP_STATS, .res = -EBUSY };

	if (!h) {
		post_cqe(c, &cqe);
		return;
	}
	h->ud = sqe->user_data;
	mark_ready(h);
}

/* ---- serving a worker ---- */

static void dispatch(struct link_conn *c, const struct ring_sqe *sqe)
{
	struct link_handle *h;

	switch (sqe->op) {
	case RING_OP_LOOKUP:
		op_lookup(c, sqe);
		break;
	case RING_OP_READ:
		op_read(c, sqe);
		break;
	case RING_OP_BUFREL:
		op_bufrel(c, sqe);
		break;
	case RING_OP_MORE:
		op_more(c, sqe);
		break;
	case RING_OP_RELEASE:
		h = handle_find(c, sqe->handle, H_OBJ);
		if (h)
			release_obj(h);
		else
			link_conn_kill(c, "RELEASE of an unknown handle");
		break;
	case RING_OP_WOPEN:
		op_wopen(c, sqe);
		break;
	case RING_OP_WDATA:
		op_wdata(c, sqe);
		break;
	case RING_OP_WFINISH:
		op_wfinish(c, sqe);
		break;
	case RING_OP_WABORT:
		op_wabort(c, sqe);
		break;
	case RING_OP_DELETE:
		op_delete(c, sqe);
		break;
	case RING_OP_STATS:
		op_stats(c, sqe);
		break;
	case RING_OP_SETATTR:
		link_op_setattr(c, sqe);
		break;
	default:
		link_conn_kill(c, "unknown opcode");
	}
}

void link_drain_sq(struct link_conn *c)
{
	struct ring_sqe sqe;
	int ret;

	flush_overflow(c);
	while (!c->dead && (ret = ring_sq_pop(&c->ring, &sqe)) == 1)
		dispatch(c, &sqe);
	if (c->dead)
		return;
	if (ret < 0)
		link_conn_kill(c, "submission queue indices corrupt");
	else if (ring_sq_wants_doorbell(&c->ring))
		c->bell = true;
}

void link_run_ready(struct link_server *srv)
{
	struct link_handle *h;

	while (!list_empty(&srv->ready)) {
		h = list_entry(srv->ready.next, struct link_handle, ready_link);
		list_del(&h->ready_link);
		h->on_ready = false;
		if (h->c->dead)
			continue;
		switch (h->kind) {
		case H_OBJ:
			if (h->lookup_attr)
				link_pump_lookup_attr(h);
			else
				pump_read(h);
			break;
		case H_WRITER:
			pump_write(h);
			break;
		case H_STATS:
			pump_stats(h);
			break;
		}
	}
}

unsigned link_drop_handles(struct link_conn *c)
{
	unsigned pins = 0;

	for (uint32_t i = 0; i < c->nh; i++) {
		struct link_handle *h = &c->h[i];

		switch (h->kind) {
		case H_OBJ:
			pins++;
			release_obj(h);
			break;
		case H_WRITER:
			writer_drop(h);
			break;
		case H_STATS:
			handle_put(h);
			break;
		}
	}
	return pins;
}
