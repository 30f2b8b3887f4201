/*
 * Fills: the grid records of writers of unknown size and of shared
 * writers, found by gs_lookup_filling() while they fill, their progress
 * told to readers on any thread, and the stored record built from them at
 * finish (design in fill.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attr.h"
#include "fill.h"
#include "heads.h"
#include "index.h"
#include "layout.h"
#include "pool.h"
#include "ramchunk.h"
#include "region.h"
#include "uring.h"

int fill_init(struct gs_obj *g, uint64_t cap, uint64_t size, uint64_t head_cap)
{
	struct fill *f = obj_fill(g);

	memset(f, 0, sizeof(*f));
	f->done = calloc(g->nchunks ? g->nchunks : 1, 1);
	if (!f->done)
		return -ENOMEM;
	pthread_mutex_init(&f->lock, NULL);
	f->grid = g;
	f->cap = cap;
	f->head_cap = head_cap;
	f->size = size;
	f->state = FILL_FILLING;
	f->trunc = UINT32_MAX;
	list_init(&f->node);
	list_init(&f->waiters);
	return 0;
}

uint64_t fill_chunk_reserved(struct gs_engine *e, const struct gs_obj *g,
			     uint32_t i)
{
	const struct chunk *c = &obj_chunks(g)[i];
	const struct fill *f = obj_fill(g);
	uint64_t len = i == f->trunc ? f->trunc_len : c->len;

	return c->tier == GS_TIER_RAM ? len :
	       round_up(len, e->pools[c->tier].align);
}

/* Gives back the space grid <g> holds for its chunks from <from> on (the
 * part of a run before <from> stays: its chunks' bytes, rounded to the
 * alignment). */
static void grid_free_from(struct gs_engine *e, struct gs_obj *g,
			   uint32_t from)
{
	const struct chunk *c = obj_chunks(g);
	const struct fill *f = obj_fill(g);
	uint64_t *runs = obj_runs(g);

	for (uint32_t i = 0; i < g->nchunks;) {
		uint32_t r = c[i].run, first = i;
		uint64_t total = 0, kept = 0;

		for (; i < g->nchunks && c[i].run == r; i++) {
			total += fill_chunk_reserved(e, g, i);
			if (i < from)
				kept += c[i].len;
		}
		if (runs[r] == UINT64_MAX ||
		    (i <= from && (f->trunc < first || f->trunc >= i)))
			continue;
		if (c[first].tier == GS_TIER_RAM) {
			if (first >= from)
				region_free(&e->region, runs[r]);
		} else {
			kept = round_up(kept, e->pools[c[first].tier].align);
			if (total > kept)
				pool_free(&e->pools[c[first].tier], runs[r] + kept,
					  total - kept);
		}
		if (first >= from)
			runs[r] = UINT64_MAX;
	}
}

void fill_free_record(struct gs_engine *e, struct gs_obj *g)
{
	struct fill *f = obj_fill(g);

	ramchunk_free_all(e, g);	/* what its readers were offered */
	if (!f->given)
		grid_free_from(e, g, 0);
	if (f->head_owned && f->final && f->final->on_disk)
		engine_head_publish(e, f->final, f->head_off);
	else if (f->head_owned)
		region_free(&e->region, f->head_off);
	if (f->final)
		engine_unref(e, f->final);
	free(f->done);
	pthread_mutex_destroy(&f->lock);
	free(g);
}

/* ---- shared fills ---- */

static struct fill *fill_find(struct gs_engine *e, const void *key,
			      size_t klen)
{
	for (struct list *n = e->fills.next; n != &e->fills; n = n->next) {
		struct fill *f = list_entry(n, struct fill, node);

		if (f->grid->klen == klen && !memcmp(f->grid->key, key, klen))
			return f;
	}
	return NULL;
}

int fill_share(struct gs_engine *e, struct gs_obj *g, bool attr_coming)
{
	struct fill *f = obj_fill(g);
	int ret = 0;

	pthread_mutex_lock(&e->lock);
	if (fill_find(e, g->key, g->klen)) {
		ret = -EBUSY;
	} else {
		list_add_tail(&e->fills, &f->node);
		f->shared = true;
		f->attr_coming = attr_coming;
	}
	pthread_mutex_unlock(&e->lock);
	return ret;
}

int gs_lookup_filling(struct gs_engine *e, const void *key, size_t klen,
		      struct gs_obj **objp)
{
	struct fill *f;

	if (klen > GS_KEY_MAX)
		return -ENOENT;
	pthread_mutex_lock(&e->lock);
	f = fill_find(e, key, klen);
	if (f && f->attr_coming)
		f = NULL;	/* not without its attributes */
	if (f)
		engine_pin(e, f->grid);
	pthread_mutex_unlock(&e->lock);
	if (!f)
		return -ENOENT;
	*objp = f->grid;
	return 0;
}

bool gs_obj_filling(const struct gs_obj *obj)
{
	return obj->fill &&
	       __atomic_load_n(&obj_fill(obj)->state, __ATOMIC_ACQUIRE) ==
	       FILL_FILLING;
}

/* ---- progress and wakes ---- */

/* Tells every waiting reader's gs_io that <f> moved on.  f->lock held. */
static void fill_tell(struct fill *f)
{
	while (!list_empty(&f->waiters)) {
		struct fill_waiter *w = list_entry(f->waiters.next,
						   struct fill_waiter, fill_node);
		struct gs_io *io = w->io;

		list_del(&w->fill_node);
		pthread_mutex_lock(&io->remote_lock);
		if (!list_linked(&w->io_node))
			list_add_tail(&io->remote, &w->io_node);
		pthread_mutex_unlock(&io->remote_lock);
		kick(io);
	}
}

void fill_head_bytes(struct fill *f, uint64_t n)
{
	pthread_mutex_lock(&f->lock);
	if (n > f->head_avail) {
		f->head_avail = n;
		fill_tell(f);
	}
	pthread_mutex_unlock(&f->lock);
}

void fill_ram_bytes(struct fill *f, uint64_t end)
{
	pthread_mutex_lock(&f->lock);
	if (end > f->ram_end) {
		f->ram_end = end;
		fill_tell(f);
	}
	pthread_mutex_unlock(&f->lock);
}

void fill_chunk_written(struct gs_engine *e, struct fill *f, uint32_t ci,
			const void *data, uint64_t len)
{
	uint32_t was;

	/* before readers hear of it: cached, it is never read back; in
	 * colder chunks' place while someone reads the fill along */
	if (f->shared && len >= obj_chunks(f->grid)[ci].len)
		ramchunk_offer(e, f->grid, ci, data,
			       __atomic_load_n(&f->readers, __ATOMIC_RELAXED));
	pthread_mutex_lock(&f->lock);
	f->done[ci] = 1;
	was = f->landed;
	while (f->landed < f->grid->nchunks && f->done[f->landed])
		f->landed++;
	if (f->landed != was)
		fill_tell(f);
	pthread_mutex_unlock(&f->lock);
}

/* Ends <f> in <state> (with <size> when done) and tells its readers. */
static void fill_end(struct fill *f, int state, uint64_t size)
{
	pthread_mutex_lock(&f->lock);
	if (f->state == FILL_FILLING) {
		if (state == FILL_DONE)
			f->size = size;
		__atomic_store_n(&f->state, state, __ATOMIC_RELEASE);
	}
	fill_tell(f);
	pthread_mutex_unlock(&f->lock);
}

/* Takes <f> off e->fills: the next shared writer may start.  e->lock held. */
static void fill_unshare(struct fill *f)
{
	if (list_linked(&f->node))
		list_del(&f->node);
}

void fill_abort(struct gs_engine *e, struct fill *f)
{
	pthread_mutex_lock(&e->lock);
	fill_unshare(f);
	pthread_mutex_unlock(&e->lock);
	fill_end(f, FILL_ABORTED, 0);
}

void fill_wait(struct fill *f, struct fill_waiter *w, struct gs_io *io,
	       gs_wake_fn fn, void *arg)
{
	if (list_linked(&w->fill_node))
		return;
	w->io = io;
	w->fn = fn;
	w->arg = arg;
	list_add_tail(&f->waiters, &w->fill_node);
}

void fill_waiter_del(struct fill *f, struct fill_waiter *w)
{
	pthread_mutex_lock(&f->lock);
	if (list_linked(&w->fill_node))
		list_del(&w->fill_node);
	if (w->io) {
		pthread_mutex_lock(&w->io->remote_lock);
		if (list_linked(&w->io_node))
			list_del(&w->io_node);
		pthread_mutex_unlock(&w->io->remote_lock);
	}
	pthread_mutex_unlock(&f->lock);
}

int fill_remote_run(struct gs_io *io)
{
	int n = 0;

	for (;;) {
		struct fill_waiter *w;

		pthread_mutex_lock(&io->remote_lock);
		if (list_empty(&io->remote)) {
			pthread_mutex_unlock(&io->remote_lock);
			return n;
		}
		w = list_entry(io->remote.next, struct fill_waiter, io_node);
		list_del(&w->io_node);
		pthread_mutex_unlock(&io->remote_lock);
		w->fn(w->arg);
		n++;
	}
}

/* ---- the stored record ---- */

/* The stored record of a value of <size> (at most the RAM limit) whose
 * bytes are in <g>'s head slot: its own head, as a known size gets it. */
static struct gs_obj *final_small(struct gs_engine *e, struct gs_obj *g,
				  uint64_t size)
{
	struct fill *f = obj_fill(g);
	struct gs_obj *obj;

	if (engine_new_record(e, g->key, g->klen, size, &obj) < 0)
		return NULL;
	if (engine_reserve_part(e, &obj, -1) < 0) {
		engine_free_record(e, obj);
		return NULL;
	}
	if (size)
		memcpy(obj_head_ptr(e, obj),
		       (char *)e->region.base + f->head_off, size);
	return obj;
}

/* Whether run <r> of <g> (starting at chunk <i>) lies right after the
 * run before it on the same disk tier. */
static bool run_follows(const struct gs_obj *g, uint32_t i,
			uint64_t prev_addr, uint64_t prev_len)
{
	const struct chunk *c = obj_chunks(g);

	return i > 0 && c[i].tier != GS_TIER_RAM && c[i - 1].tier == c[i].tier &&
	       obj_runs(g)[c[i].run] == prev_addr + prev_len;
}

/* The stored record of <size> bytes made of <g>'s first chunks: the
 * layout a known size gets, runs that lie back to back merged. */
static struct gs_obj *final_chunks(struct gs_engine *e, struct gs_obj *g,
				   uint64_t size)
{
	const struct chunk *c = obj_chunks(g);
	uint32_t n = 0, nruns = 0, *map;
	uint64_t off = g->on_disk ? 0 : obj_fill(g)->head_cap;
	uint64_t prev_addr = 0, prev_len = 0;
	struct gs_obj *obj;

	while (n < g->nchunks && off < size)
		off += c[n++].len;
	map = calloc(n ? n : 1, sizeof(*map));
	if (!map)
		return NULL;
	for (uint32_t i = 0; i < n; i++) {
		if (i > 0 && c[i].run == c[i - 1].run) {
			map[i] = map[i - 1];
		} else if (run_follows(g, i, prev_addr, prev_len)) {
			map[i] = map[i - 1];
			prev_addr = obj_runs(g)[c[i].run];
			prev_len = 0;
		} else {
			map[i] = nruns++;
			prev_addr = obj_runs(g)[c[i].run];
			prev_len = 0;
		}
		prev_len += fill_chunk_reserved(e, g, i);
	}
	obj = engine_record_alloc(g->key, g->klen, n, nruns);
	if (!obj) {
		free(map);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct chunk *d = &obj_chunks(obj)[i];

		*d = c[i];
		d->run = map[i];
		if (i == 0 || map[i] != map[i - 1])
			obj_runs(obj)[map[i]] = obj_runs(g)[c[i].run];
	}
	free(map);
	obj->on_disk = g->on_disk;
	obj->meta.size = size;
	if (!obj->on_disk) {
		obj->meta.head_len = obj_fill(g)->head_cap;
		obj_set_head(e, obj, obj_fill(g)->head_off);
	}
	return obj;
}

int fill_link(struct gs_engine *e, struct gs_obj *g, uint64_t size,
	      enum gs_if cond, uint64_t cas, struct gs_stored *st)
{
	struct fill *f = obj_fill(g);
	bool small = size <= engine_ram_limit(e);
	struct gs_obj *obj;
	uint32_t n;
	int ret;

	fill_unshare(f);
	obj = small ? final_small(e, g, size) : final_chunks(e, g, size);
	if (!obj) {
		fill_end(f, FILL_ABORTED, 0);
		return -ENOMEM;
	}
	obj->meta.flags = g->meta.flags;
	obj->meta.exptime = g->meta.exptime;
	ret = g->has_attr ? attr_copy(e, obj, g) : 0;
	if (ret == 0)
		ret = engine_link(e, obj, cond, cas, &st->replaced);
	if (ret < 0) {
		if (small) {
			engine_free_record(e, obj);
		} else {
			attr_drop(e, obj);
			free(obj);	/* its space is still the grid's */
		}
		fill_end(f, FILL_ABORTED, 0);
		return ret;
	}
	st->cas = obj->meta.cas;
	if (!small) {
		n = obj->nchunks;
		grid_free_from(e, g, n);
		f->given = true;
		if (!obj->on_disk)
			f->head_owned = false;	/* the object's own head */
	}
	f->final = obj;			/* the record's first ref: the fill's */
	g->meta.cas = obj->meta.cas;
	g->meta.mtime = obj->meta.mtime;
	g->meta.exptime = obj->meta.exptime;
	__atomic_store_n(&g->meta.size, size, __ATOMIC_RELEASE);
	fill_end(f, FILL_DONE, size);
	return 0;
}
