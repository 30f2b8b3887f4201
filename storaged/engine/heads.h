/*
 * The head cache of on-disk objects (heads.c).
 */
#ifndef GOBLIN_HEADS_H
#define GOBLIN_HEADS_H

#include "engine-t.h"

/* Bytes of <obj> a cached head holds: engine_head_len() of its size. */
uint64_t engine_head_bytes(const struct gs_engine *e, const struct gs_obj *obj);

/* A head slot: 0 and <*off>, or -ENOMEM; cached chunks (ROOM_DROP_CHUNKS),
 * then cached heads (ROOM_DROP_HEADS: chunks first) are dropped for it as
 * <how> allows (layout.c); 0: a free slot only. */
int engine_head_alloc(struct gs_engine *e, unsigned how, uint64_t *off);
/* Drops one cached head, CLOCK order, never a pinned object's; false when
 * none could go. */
bool engine_head_drop_one(struct gs_engine *e);
/* Takes <obj>'s head off the CLOCK (it is being unlinked). */
void engine_head_forget(struct gs_engine *e, struct gs_obj *obj);
/* On a head miss of linked <obj>: whether to bring its head in, by the
 * admission policy; true with a slot at <*off> and obj->head_loading set,
 * to end with engine_head_publish() or engine_head_cancel(). */
bool engine_head_want(struct gs_engine *e, struct gs_obj *obj, uint64_t *off);
/* The head bytes are at <off>: caches them as <obj>'s head (or frees the
 * slot when <obj> has gone or has a head). */
void engine_head_publish(struct gs_engine *e, struct gs_obj *obj, uint64_t off);
void engine_head_cancel(struct gs_engine *e, struct gs_obj *obj, uint64_t off);

#endif /* GOBLIN_HEADS_H */
