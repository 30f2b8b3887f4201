/*
 * A memcache connection's output queue: byte buffers and pinned objects in
 * reply order.  An object becomes a stream (and takes a read-ahead window)
 * only when it reaches the head of the queue, so a pipelining client can't
 * hold windows it is not sending from.  An object whose head is not in RAM
 * carries its value line, sent when the head lands: a head that cannot be
 * read makes the key a miss instead of a cut reply.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "clock.h"
#include "loop.h"
#include "server.h"

#define IOV_MAX_SEND	64
#define SEND_MAX	(4u << 20)	/* bytes of one object gathered per writev */

struct out {
	struct list link;		/* on conn.out */
	struct gs_obj *obj;		/* object reply: pinned until streamed */
	struct gs_stream *stream;
	bool is_obj;
	size_t len, off, cap;		/* object: len is the piece in a writev */
	size_t line_len, line_off;	/* object: its value line, in data */
	char data[];
};

/* The queue's first and last replies and the one after <o>; NULL: none. */
static inline struct out *out_first(const struct conn *c)
{
	return list_empty(&c->out) ? NULL :
	       list_entry(c->out.next, struct out, link);
}

static inline struct out *out_last(const struct conn *c)
{
	return list_empty(&c->out) ? NULL :
	       list_entry(c->out.prev, struct out, link);
}

static inline struct out *out_next(const struct conn *c, const struct out *o)
{
	return o->link.next == &c->out ? NULL :
	       list_entry(o->link.next, struct out, link);
}

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
	list_add_tail(&c->out, &o->link);
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
	const struct out *o = out_last(c);

	return o && !o->is_obj && o->cap - o->len >= len;
}

static void out_pop(struct conn *c)
{
	struct out *o = out_first(c);

	list_del(&o->link);
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
	out_text_add(c, out_last(c), s, len);
	c->queued += len;
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
	uint64_t head_len;
	bool deferred;

	gs_obj_head(c->srv->e, obj, &head_len);
	deferred = !head_len && gs_obj_meta(obj)->size;
	/* everything is allocated before anything is queued */
	if (!deferred && !tail_has_room(c, len))
		h = out_text_new(len);
	o = malloc(sizeof(*o) + (deferred ? len : 0));
	t = out_text_new(2);
	if ((!deferred && !h && !tail_has_room(c, len)) || !o || !t) {
		free(h);
		free(o);
		free(t);
		gs_obj_put(c->srv->e, &obj);
		c->broken = true;
		return -ENOMEM;
	}
	if (h)
		out_push(c, h);
	*o = (struct out){ .obj = obj, .is_obj = true };
	if (deferred) {
		memcpy(o->data, hdr, len);
		o->line_len = len;
	} else {
		out_text_add(c, out_last(c), hdr, len);
	}
	out_push(c, o);
	out_push(c, t);
	out_text_add(c, t, "\r\n", 2);
	c->queued += len + gs_obj_meta(obj)->size + 2;
	return 0;
}

void conn_reply_mark(struct conn *c)
{
	if (c->nmarks < CONN_MARKS)
		c->marks[(c->mark0 + c->nmarks++) % CONN_MARKS] =
			(struct reply_mark){ .at = c->queued, .us = mono_us() };
}

void conn_reply_unmark_empty(struct conn *c)
{
	if (c->nmarks &&
	    c->marks[(c->mark0 + c->nmarks - 1) % CONN_MARKS].at == c->queued)
		c->nmarks--;
}

/* Times the replies whose first byte is now written (or dropped). */
static void marks_reached(struct conn *c)
{
	uint64_t now = 0;

	while (c->nmarks && c->marks[c->mark0].at < c->sent) {
		if (!now)
			now = mono_us();
		stats_first_byte_add(&c->srv->first_byte,
				     now - c->marks[c->mark0].us);
		c->mark0 = (c->mark0 + 1) % CONN_MARKS;
		c->nmarks--;
	}
}

/* Drops object reply <o>, first in the queue, before any of it was sent,
 * with the "\r\n" that follows it. */
static void drop_unsent(struct conn *c, struct out *o)
{
	struct out *t = out_next(c, o);

	SRV_ADD(c->srv, get_unreadable, 1);
	/* its bytes count as gone out: what follows is the reply's first */
	c->sent += o->line_len + gs_stream_left(o->stream) + 2;
	t->off += 2;			/* a buffer of its own, "\r\n" first */
	c->out_bytes -= 2;
	out_pop(c);
	if (t->off == t->len)
		out_pop(c);
}

static void stream_wake(void *arg)
{
	conn_schedule(arg);
}

int conn_send(struct conn *c)
{
	for (;;) {
		struct iovec iov[IOV_MAX_SEND];
		struct out *o = out_first(c);
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
				o = out_next(c, o);
				continue;
			}
			if (!o->stream) {
				ret = gs_stream_open(conn_io(c), o->obj, 0,
						     gs_obj_meta(o->obj)->size,
						     stream_wake, c, &o->stream);
				if (ret < 0)
					return -1;
				gs_obj_put(c->srv->e, &o->obj);
			}
			ret = gs_stream_peek(o->stream, &p, &len);
			if (ret == -EAGAIN)
				break;
			if (ret < 0 && o->line_len && !o->line_off) {
				/* nothing of it sent: the key is a miss */
				drop_unsent(c, o);
				o = out_first(c);
				continue;
			}
			if (ret < 0) {
				/* a broken object: the value line is out, so the
				 * only honest end is to cut the connection */
				SRV_ADD(c->srv, aborted_responses, 1);
				return -1;
			}
			if (len == 0 && n == 0) {
				out_pop(c);
				o = out_first(c);
				continue;
			}
			if (o->line_off < o->line_len) {
				if (n + 2 > IOV_MAX_SEND)
					break;
				iov[n++] = (struct iovec){ o->data + o->line_off,
							   o->line_len - o->line_off };
				total += o->line_len - o->line_off;
			}
			/* the pieces that have landed, in one writev */
			o->len = 0;
			do {
				iov[n++] = (struct iovec){ (void *)p, len };
				o->len += len;
			} while (n < IOV_MAX_SEND && o->len < SEND_MAX &&
				 gs_stream_peek_at(o->stream, o->len, &p, &len) == 0 &&
				 len);
			total += o->len;	/* o->len: its bytes in this writev */
			if (o->len < gs_stream_left(o->stream))
				break;
			o = out_next(c, o);	/* its last piece: "\r\n" may follow */
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
		c->sent += sent;
		marks_reached(c);
		for (size_t left = sent; left;) {
			size_t k;

			o = out_first(c);
			if (o->is_obj && o->line_off < o->line_len) {
				k = o->line_len - o->line_off < left ?
				    o->line_len - o->line_off : left;
				o->line_off += k;
				left -= k;
				continue;
			}
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

void conn_out_drop(struct conn *c)
{
	while (!conn_out_empty(c))
		out_pop(c);
}
