/*
 * Objects' attributes and conditional writes over the nginx link: the
 * attribute bytes a LOOKUP_ATTR hands over in an rx buffer (waiting for
 * one as READs do), the ones WOPEN's attr_len takes off the front of the
 * WDATAs, SETATTR, and WFINISH's sqe.cond.  Prototypes in
 * link_internal.h; link_ops.c calls them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exptime.h"
#include "link_internal.h"

/* The LOOKUP completion of <h>'s pinned object: its meta, attr_len. */
void link_lookup_meta(struct link_handle *h, struct ring_cqe *cqe)
{
	struct gs_engine *e = h->c->srv->e;
	const struct gs_meta *m = gs_obj_meta(h->obj);
	uint64_t head_len;

	gs_obj_head(e, h->obj, &head_len);	/* 0: the head comes over the ring */
	cqe->handle = h->id;
	cqe->meta = (struct ring_meta){
		.size = m->size, .cas = m->cas, .mtime = m->mtime,
		.exptime = m->exptime, .head_off = m->head_off,
		.head_len = head_len, .flags = m->flags,
		.attr_len = gs_obj_attr(e, h->obj, NULL, 0),
		.state = (gs_obj_filling(h->obj) ? RING_META_FILLING : 0) |
			 (gs_obj_recovered(h->obj) ? RING_META_RECOVERED : 0),
	};
}

/* LOOKUP_ATTR: the attributes into an rx buffer handed over with <cqe>
 * (RING_NO_BUF when there are none); false when no rx buffer is free. */
bool link_lookup_attr_buf(struct link_handle *h, struct ring_cqe *cqe)
{
	struct link_conn *c = h->c;
	int b;

	if (!cqe->meta.attr_len)
		return true;
	b = rx_take(c);
	if (b < 0)
		return false;
	/* copied now: a SETATTR since the meta was read may have changed
	 * their length */
	cqe->meta.attr_len = gs_obj_attr(c->srv->e, h->obj,
					 ring_rx_buf(&c->ring, (uint32_t)b),
					 c->ring.buf_size);
	if (!cqe->meta.attr_len) {
		rx_give(c, (uint32_t)b);
		return true;
	}
	c->rx_state[b] = RX_NGINX;
	c->rx_owner[b] = 0;		/* no READ's: BUFREL just frees it */
	cqe->buf = (uint32_t)b;
	return true;
}

/* A LOOKUP_ATTR that waited for an rx buffer: one came free. */
void link_pump_lookup_attr(struct link_handle *h)
{
	struct ring_cqe cqe = { .user_data = h->ud, .op = RING_OP_LOOKUP,
				.buf = RING_NO_BUF };

	link_lookup_meta(h, &cqe);
	if (!link_lookup_attr_buf(h, &cqe)) {
		wait_for_buffer(h);
		return;
	}
	h->lookup_attr = false;
	post_cqe(h->c, &cqe);
}

/* WOPEN's attr_len: the first so many bytes the WDATAs carry are the
 * attributes.  0, -E2BIG or -ENOMEM. */
int link_wopen_attr(struct link_handle *h, const struct ring_sqe *sqe)
{
	if (sqe->attr_len > RING_ATTR_MAX)
		return -E2BIG;
	if (sqe->attr_len && !(h->attr = malloc(sqe->attr_len)))
		return -ENOMEM;
	h->attr_len = sqe->attr_len;
	return 0;
}

/* Takes the attributes' bytes off the front of <q> into h->attr, handing
 * them to the writer once whole; true when <q> held nothing else. */
bool link_writer_take_attr(struct link_handle *h, struct wdata *q)
{
	uint32_t n = h->attr_len - h->attr_got;
	int ret;

	if (!n || h->error)
		return false;
	if (n > q->len - q->done)
		n = q->len - q->done;
	memcpy(h->attr + h->attr_got,
	       ring_tx_buf(&h->c->ring, q->buf) + q->done, n);
	q->done += n;
	h->attr_got += n;
	if (h->attr_got == h->attr_len) {
		ret = gs_writer_attr(h->w, h->attr, h->attr_len);
		if (ret)
			h->error = ret;
		free(h->attr);
		h->attr = NULL;
	}
	return q->done == q->len;
}

/* The pinned object's attributes become the <len> bytes of tx buffer
 * <buf>, which is nginx's again with the completion (no TXDONE). */
void link_op_setattr(struct link_conn *c, const struct ring_sqe *sqe)
{
	struct link_handle *h = handle_find(c, sqe->handle, H_OBJ);
	struct ring_cqe cqe = { .user_data = sqe->user_data,
				.op = RING_OP_SETATTR, .handle = sqe->handle,
				.buf = sqe->buf };
	char attr[RING_ATTR_MAX];

	if (sqe->buf >= c->ring.n_tx || c->tx_daemon[sqe->buf]) {
		link_conn_kill(c, "SETATTR of a buffer nginx does not hold");
		return;
	}
	if (!h || h->lookup_attr) {
		cqe.res = -EINVAL;
	} else if (sqe->len > RING_ATTR_MAX) {
		cqe.res = -E2BIG;
	} else {
		/* our own copy: nginx may write the buffer meanwhile */
		memcpy(attr, ring_tx_buf(&c->ring, sqe->buf), sqe->len);
		cqe.res = gs_obj_set_attr(c->srv->e, h->obj, attr, sqe->len);
		/* with an exptime, a new expiry too (a revalidated response) */
		if (cqe.res == 0 && sqe->exptime)
			cqe.res = gs_obj_touch(c->srv->e, h->obj,
					       exptime_absolute(sqe->exptime));
	}
	post_cqe(c, &cqe);
}

int link_wfinish_cond(struct link_handle *h, const struct ring_sqe *sqe)
{
	static const uint8_t conds[] = {
		[RING_IF_ANY] = GS_IF_ANY, [RING_IF_ABSENT] = GS_IF_ABSENT,
		[RING_IF_PRESENT] = GS_IF_PRESENT, [RING_IF_CAS] = GS_IF_CAS,
	};

	if (sqe->cond >= sizeof(conds))
		return -EINVAL;
	h->cond = conds[sqe->cond];
	h->cas = sqe->off;
	return 0;
}
