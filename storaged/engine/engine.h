/*
 * The helpers every engine file uses: stat counters, a record's layout
 * after its key, its head in the region, the RAM limit.  Types in
 * engine-t.h.
 */
#ifndef GOBLIN_ENGINE_H
#define GOBLIN_ENGINE_H

#include "engine-t.h"

#define STAT_ADD(e, name, n) \
	__atomic_fetch_add(&(e)->st.name, (n), __ATOMIC_RELAXED)
#define STAT_SUB(e, name, n) \
	__atomic_fetch_sub(&(e)->st.name, (n), __ATOMIC_RELAXED)
#define STAT_MAX(e, name, v)						\
	do {								\
		uint64_t cur_ = __atomic_load_n(&(e)->st.name, __ATOMIC_RELAXED); \
		while ((uint64_t)(v) > cur_ &&				\
		       !__atomic_compare_exchange_n(&(e)->st.name, &cur_, (v), \
				false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) \
			;						\
	} while (0)

/* <obj>'s references (engine-t.h): a pin may come or go without e->lock
 * (index.h), never the last one, so more than one is "pinned" for as long
 * as the caller holds e->lock and holds no pin itself. */
static inline uint32_t obj_refs(const struct gs_obj *obj)
{
	return __atomic_load_n(&obj->refs, __ATOMIC_ACQUIRE);
}

static inline uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static inline size_t obj_key_end(size_t klen)
{
	return (offsetof(struct gs_obj, key) + klen + 7) & ~(size_t)7;
}

/* <obj>'s struct obj_disk; only when obj->nchunks. */
static inline struct obj_disk *obj_disk(const struct gs_obj *obj)
{
	return (struct obj_disk *)((char *)obj + obj_key_end(obj->klen));
}

static inline struct chunk *obj_chunks(const struct gs_obj *obj)
{
	return obj_disk(obj)->chunks;
}

/* How many runs <obj>'s chunks make: the last chunk's run, plus one. */
static inline uint32_t obj_nruns(const struct gs_obj *obj)
{
	return obj->nchunks ? obj_chunks(obj)[obj->nchunks - 1].run + 1 : 0;
}

/* The address of each run of <obj>'s chunks, in chunk order. */
static inline uint64_t *obj_runs(const struct gs_obj *obj)
{
	return (uint64_t *)(obj_chunks(obj) + obj->nchunks);
}

/* Chunk <i>'s address on its tier's pool (a RAM chunk: its head slot's
 * offset in the region): its run's, past the chunks before it in the run;
 * UINT64_MAX while the run has no space. */
static inline uint64_t chunk_addr(const struct gs_obj *obj, uint32_t i)
{
	const struct chunk *c = obj_chunks(obj);
	uint64_t addr = obj_runs(obj)[c[i].run];

	if (addr == UINT64_MAX)
		return addr;
	for (uint32_t k = i; k > 0 && c[k - 1].run == c[i].run; k--)
		addr += c[k - 1].len;
	return addr;
}

/* The bytes of RAM chunk <i> of <obj> (an engine without pools). */
static inline void *chunk_ram(const struct gs_engine *e,
			      const struct gs_obj *obj, uint32_t i)
{
	return (char *)e->region.base + chunk_addr(obj, i);
}

/* Bytes one malloc'd record of a <klen>-byte key, <nchunks> chunks and
 * <nruns> runs asks for: the record and key, rounded to 8, then, with
 * chunks, struct obj_disk, the chunks and the run addresses. */
static inline uint64_t engine_record_size(size_t klen, uint32_t nchunks,
					  uint32_t nruns)
{
	return obj_key_end(klen) + (nchunks ? sizeof(struct obj_disk) +
				     (uint64_t)nchunks * sizeof(struct chunk) +
				     (uint64_t)nruns * sizeof(uint64_t) : 0);
}

/* <obj>'s head in the RAM region of <e>; NULL when it has none. */
static inline void *obj_head_ptr(const struct gs_engine *e,
				 const struct gs_obj *obj)
{
	return obj->has_head ? (char *)e->region.base + obj->meta.head_off :
	       NULL;
}

/* Points <obj>'s head at region offset <off>: the one place the arena
 * writes a record's location. */
static inline void obj_set_head(struct gs_engine *e, struct gs_obj *obj,
				uint64_t off)
{
	(void)e;			/* the head is found from the offset */
	obj->meta.head_off = off;
	obj->has_head = true;
}

/* The RAM/disk boundary (cfg.ram_head): the most bytes of an object RAM
 * holds.  On an engine with pools a larger object lives whole on disk (its
 * head a cached copy); a smaller one lives whole in RAM. */
static inline uint64_t engine_ram_limit(const struct gs_engine *e)
{
	return e->cfg.ram_head;
}

/* The head length of an object of <size>: min(size, the RAM limit). */
static inline uint64_t engine_head_len(const struct gs_engine *e,
				       uint64_t size)
{
	return size < engine_ram_limit(e) ? size : engine_ram_limit(e);
}

#endif /* GOBLIN_ENGINE_H */
