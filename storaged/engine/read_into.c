/*
 * Whole-object reads into caller memory (gs_read_into): the head copied,
 * every disk chunk read by the kernel straight into its place, checked
 * as stream.c checks a stream's chunks (chunk_check, read_order: here,
 * for both).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "index.h"
#include "layout.h"
#include "log.h"
#include "stream.h"
#include "uring.h"

/* ---- checks and order shared with streams (stream.h) ---- */

/* Verifies a landed chunk; on failure counts it and drops the object. */
int chunk_check(struct gs_io *io, struct gs_obj *obj, uint32_t ci,
		const char *data, int res)
{
	struct gs_engine *e = io->e;
	const struct chunk *c = &obj_chunks(obj)[ci];

	if (res == 0 && XXH3_64bits(data, c->len) != c->sum) {
		STAT_ADD(e, checksum_errors, 1);
		log_warn("checksum mismatch in chunk %u of \"%.*s\": object dropped",
			 ci, obj->klen, obj->key);
		res = -EBADMSG;
	}
	if (res < 0) {
		engine_drop(e, obj);
		return res;
	}
	STAT_ADD(e, disk_reads, 1);
	STAT_ADD(e, disk_read_bytes, c->len);
	return 0;
}

/* The first chunk is what the client waits for now (a head not in RAM, or
 * the bytes after it); the tail's first HDD chunks the longest wait: up to
 * <lead_max> of them, back to back, go next, so the HDD seeks once for
 * them.  A window too small to send the chunks they jump must not lead. */
uint32_t read_order(const struct gs_obj *obj, uint32_t first, uint32_t last,
		    uint32_t lead_max, uint32_t *order)
{
	uint32_t n = 0, lead = last, lead_end, c;

	for (c = first; c < last && obj_chunks(obj)[c].tier == GS_TIER_RAM; c++)
		;
	if (c < last)
		order[n++] = c;
	for (c++; lead_max && c < last; c++)
		if (obj_chunks(obj)[c].tier == GS_TIER_HDD) {
			lead = c;
			break;
		}
	for (c = lead; c < last && c - lead < lead_max &&
	     obj_chunks(obj)[c].tier == GS_TIER_HDD; c++)
		order[n++] = c;
	lead_end = c;
	for (c = n ? order[0] + 1 : last; c < last; c++)
		if ((c < lead || c >= lead_end) &&
		    obj_chunks(obj)[c].tier != GS_TIER_RAM)
			order[n++] = c;
	return n;
}

void chunk_span(const struct gs_obj *obj, uint64_t start, uint64_t end,
		uint32_t *first, uint32_t *last)
{
	uint64_t coff = engine_chunk_start(obj, 0);

	*first = UINT32_MAX;
	for (uint32_t c = 0; c < obj->nchunks; c++) {
		uint64_t cend = coff + obj_chunks(obj)[c].len;

		if (*first == UINT32_MAX && cend > start)
			*first = c;
		if (cend >= end) {
			*last = c + 1;
			break;
		}
		coff = cend;
	}
}

struct read_into {
	struct deferred def;
	struct gs_io *io;
	struct gs_obj *obj;
	unsigned pending;
	int res;
	gs_done_fn done;
	void *arg;
};

static void read_into_finish(struct read_into *r)
{
	gs_obj_put(r->io->e, &r->obj);
	r->done(r->arg, r->res);
	free(r);
}

static void read_into_chunk_done(struct io_op *op)
{
	struct read_into *r = op->owner;
	int res = chunk_check(r->io, r->obj, op->chunk, op->buf, op->res);

	if (res < 0 && !r->res)
		r->res = res;
	if (--r->pending == 0)
		read_into_finish(r);
}

static void read_into_deferred(void *arg, int res)
{
	(void)res;
	read_into_finish(arg);
}

size_t gs_read_size(const struct gs_obj *obj)
{
	return round_up(obj->meta.size ? obj->meta.size : 1, 65536);
}

int gs_read_into(struct gs_io *io, struct gs_obj *obj, void *buf,
		 gs_done_fn done, void *arg)
{
	uint64_t now = mono_ns();
	struct read_into *r;
	uint32_t *order;
	uint32_t n;
	int ret = 0;

	if (obj->fill)
		return -EINVAL;		/* a fill's: read it with a stream */
	r = calloc(1, sizeof(*r));
	order = calloc(obj->nchunks + 1, sizeof(*order));
	if (!r || !order) {
		free(r);
		free(order);
		return -ENOMEM;
	}
	*r = (struct read_into){ .io = io, .obj = obj, .done = done, .arg = arg };
	pthread_mutex_lock(&io->e->lock);
	engine_pin(io->e, obj);
	pthread_mutex_unlock(&io->e->lock);
	n = read_order(obj, 0, obj->nchunks, 1, order);
	r->pending = 1;			/* held until every read is armed */
	for (uint32_t i = 0; i < n && ret == 0; i++) {
		char *dst = (char *)buf + engine_chunk_start(obj, order[i]);

		r->pending++;
		ret = uring_read_start(io, obj, order[i], dst, -1,
				       read_into_chunk_done, r,
				       uring_due(io, now, engine_chunk_start(obj,
							       order[i])));
		if (ret < 0) {
			r->pending--;
			r->res = ret;
		}
	}
	free(order);
	uring_submit(io);		/* the disk starts while we copy */
	if (!obj->on_disk && obj->meta.head_len)
		memcpy(buf, obj_head_ptr(io->e, obj), obj->meta.head_len);
	for (uint32_t c = 0; c < obj->nchunks; c++)
		if (obj_chunks(obj)[c].tier == GS_TIER_RAM)
			memcpy((char *)buf + engine_chunk_start(obj, c),
			       chunk_ram(io->e, obj, c),
			       obj_chunks(obj)[c].len);
	if (--r->pending == 0)
		defer(io, &r->def, read_into_deferred, r, 0);
	return 0;
}

