/*
 * Whole-object reads into caller memory (gs_read_into): the head copied,
 * every disk chunk read by the kernel straight into its place, checked
 * as stream.c checks a stream's chunks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "layout.h"
#include "stream.h"
#include "uring.h"

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
	struct read_into *r = calloc(1, sizeof(*r));
	uint32_t *order = calloc(obj->nchunks + 1, sizeof(*order));
	uint32_t n;
	int ret = 0;

	if (!r || !order) {
		free(r);
		free(order);
		return -ENOMEM;
	}
	*r = (struct read_into){ .io = io, .obj = obj, .done = done, .arg = arg };
	pthread_mutex_lock(&io->e->lock);
	engine_pin(io->e, obj);
	pthread_mutex_unlock(&io->e->lock);
	n = read_order(obj, 0, obj->nchunks, true, order);
	r->pending = 1;			/* held until every read is armed */
	for (uint32_t i = 0; i < n && ret == 0; i++) {
		char *dst = (char *)buf + engine_chunk_start(obj, order[i]);

		r->pending++;
		ret = uring_op_start(io, obj, order[i], false, dst, -1,
			       read_into_chunk_done, r);
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

