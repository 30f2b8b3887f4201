/*
 * The writers of unknown size and the shared writers (fill.h): their head
 * slot, the bytes readers are told of as they come, the last chunk cut at
 * finish, and gs_writer_share().  The rest of their life is any set
 * writer's (writer.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "fill.h"
#include "heads.h"
#include "layout.h"
#include "uring.h"
#include "writer.h"

/* gs_writer_buf() of a fill writer, up to its chunks: -E2BIG past
 * max_object (unknown size), 0 with the head slot's room (where readers
 * find the head's bytes at once; a RAM-only grid's head is the slot), the
 * sink after a failure, or 1: the chunk's buffer, as any writer's. */
int fill_writer_head(struct gs_writer *w, void **p, size_t *len)
{
	struct gs_engine *e = w->io->e;
	struct fill *f = w->fill;

	if (w->pos >= f->cap) {
		if (f->size != GS_SIZE_UNKNOWN) {
			*len = 0;
			return 0;
		}
		writer_fail(w, -E2BIG);
		return -E2BIG;
	}
	if (!w->error && f->head_cap && !f->head_owned) {
		int ret;

		pthread_mutex_lock(&e->lock);
		ret = engine_head_alloc(e, ROOM_DROP_HEADS | ROOM_EVICT,
					&f->head_off);
		f->head_owned = ret == 0;
		pthread_mutex_unlock(&e->lock);
		if (ret < 0)
			writer_fail(w, -ENOMEM);
	}
	if (w->error)
		return writer_sink(w, p, len, f->cap);
	if (w->pos < f->head_cap && !w->obj->on_disk) {
		*p = (char *)e->region.base + f->head_off + w->pos;
		*len = f->head_cap - w->pos;
		w->last_p = *p;
		return 0;
	}
	return 1;
}

/* gs_writer_advance() of a fill writer: the bytes just given (at
 * w->last_p) go to the head slot too, and its readers are told. */
void fill_writer_fed(struct gs_writer *w, size_t n)
{
	struct gs_engine *e = w->io->e;
	struct fill *f = w->fill;
	uint64_t from = w->pos - n;

	if (w->error || !n)
		return;
	if (from < f->head_cap) {
		uint64_t k = f->head_cap - from < n ? f->head_cap - from : n;
		char *dst = (char *)e->region.base + f->head_off + from;

		if (w->obj->on_disk)
			memcpy(dst, w->last_p, k);
		fill_head_bytes(f, from + k);
	}
	if (!w->obj->on_disk && w->pos > f->head_cap)
		fill_ram_bytes(f, w->pos);
}

int gs_writer_share(struct gs_writer *w, bool attr_coming)
{
	struct gs_engine *e = w->io->e;
	struct gs_obj *obj = w->obj, *g;
	int ret;

	if (w->concat || w->pos || w->head_caching || obj->has_head ||
	    (w->fill && w->fill->head_owned))
		return -EINVAL;
	if (!w->fill) {
		/* no space reserved yet: the record becomes a grid */
		ret = engine_new_grid(e, obj->key, obj->klen, obj->meta.size, &g);
		if (ret < 0)
			return ret;
		g->meta.flags = obj->meta.flags;
		g->meta.exptime = obj->meta.exptime;
		w->obj = g;
		w->fill = obj_fill(g);
		w->cur_off = engine_chunk_start(g, 0);
		free(obj);
		if (w->attr && (ret = writer_attr_to_grid(w)) < 0)
			return ret;
	}
	if (w->fill->shared)
		return 0;
	return fill_share(e, w->obj, attr_coming);
}

/* Finish of a writer of unknown size: the size is what was given; the
 * chunk it ends in is cut there and written (reserved first at its whole
 * length, which the stored record gives back).  A value the RAM limit
 * holds is stored from the head slot: its last chunk needs no write. */
void fill_writer_cut(struct gs_writer *w)
{
	struct gs_engine *e = w->io->e;
	struct fill *f = w->fill;
	struct gs_obj *obj = w->obj;
	struct chunk *c;
	uint32_t len, alen, old;
	char *buf;

	if (w->cur >= obj->nchunks || w->pos <= w->cur_off ||
	    (!obj->on_disk && w->pos <= f->head_cap))
		goto out_drop;
	c = &obj_chunks(obj)[w->cur];
	len = w->pos - w->cur_off;
	if (c->tier == GS_TIER_RAM) {
		c->len = len;		/* in place already */
		return;
	}
	if (w->error || w->pos <= engine_ram_limit(e))
		goto out_drop;
	writer_reserve(w, w->cur);
	if (w->error)
		goto out_drop;
	f->trunc = w->cur;
	f->trunc_len = c->len;
	old = w->cur_admitted;
	c->len = len;
	alen = round_up(len, tier_align(e, c->tier));
	w->cur_admitted = alen;
	admission_release(w->io, old - alen);
	if (w->cur_buf >= 0) {
		buf = iobuf_ptr(w->io, w->cur_buf);
	} else {
		w->fin_buf = aligned_alloc(4096, round_up(alen, 4096));
		if (!w->fin_buf) {
			writer_fail(w, -ENOMEM);
			goto out_drop;
		}
		memcpy(w->fin_buf, w->spill, len);
		free(w->spill);
		w->spill = NULL;
		w->spilled = false;
		buf = w->fin_buf;
	}
	memset(buf + len, 0, alen - len);
	c->sum = XXH3_64bits(buf, len);
	if (uring_op_start(w->io, obj, w->cur, true, buf, w->cur_buf,
			   writer_write_done, w) < 0) {
		STAT_ADD(e, io_errors, 1);
		writer_fail(w, -EIO);
		if (w->cur_buf < 0)
			admission_release(w->io, w->cur_admitted);
		goto out_drop;
	}
	w->inflight++;
	uring_submit(w->io);
	if (w->cur_buf >= 0) {
		list_del(&w->hold);	/* the write gives the buffer back */
		w->cur_buf = -1;
	}
	w->cur++;
	return;

out_drop:
	free(w->fin_buf);
	w->fin_buf = NULL;
	writer_drop_spill(w);
	if (w->cur_buf >= 0) {
		writer_unhold(w);
		admission_release(w->io, w->cur_admitted);
		kick(w->io);
	}
}

