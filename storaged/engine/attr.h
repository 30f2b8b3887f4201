/*
 * Objects' attributes (attr.c): opaque bytes (at most GS_ATTR_MAX) an
 * object carries besides its value, kept beside the index in a table of
 * their own keyed by record, so a record without any costs nothing more
 * than its has_attr bit.  Replaceable on a live object (gs_obj_set_attr),
 * so never handed out by pointer: gs_obj_attr() copies them under e->lock.
 * Journaled with the record's PUT and by an ATTR record (journal.h).
 * Every call but attr_new and attr_free expects e->lock held.
 */
#ifndef GOBLIN_ATTR_H
#define GOBLIN_ATTR_H

#include "engine-t.h"

struct attr {
	struct attr *next;		/* in its bucket */
	const struct gs_obj *obj;	/* NULL until attached */
	uint32_t len;
	char bytes[];
};

/* A copy of the <len> (1 to GS_ATTR_MAX) bytes at <p>, attached to
 * nothing yet; NULL without memory.  attr_free frees one not attached (a
 * writer's) and clears <*ap>. */
struct attr *attr_new(const void *p, size_t len);
void attr_free(struct attr **ap);

/* Gives <obj> (which has none) the attributes <*ap> and clears <*ap>:
 * 0, or -ENOMEM (the table could not be made; <*ap> stays the caller's). */
int attr_attach(struct gs_engine *e, struct gs_obj *obj, struct attr **ap);
/* <obj>'s attributes, NULL when it has none. */
const struct attr *attr_of(const struct gs_engine *e, const struct gs_obj *obj);
/* <obj>'s attribute bytes, 0 when none. */
static inline uint32_t attr_len_of(const struct gs_engine *e,
				   const struct gs_obj *obj)
{
	const struct attr *a = obj->has_attr ? attr_of(e, obj) : NULL;

	return a ? a->len : 0;
}
/* Drops <obj>'s attributes (its record goes, or they are replaced). */
void attr_drop(struct gs_engine *e, struct gs_obj *obj);
/* Gives <dst> (which has none) a copy of <src>'s: 0 or -ENOMEM. */
int attr_copy(struct gs_engine *e, struct gs_obj *dst,
	      const struct gs_obj *src);
/* Bytes the attributes and their table take (stats index_attr_bytes). */
uint64_t attr_bytes(const struct gs_engine *e);
/* Frees the table (engine close: no record left). */
void attr_table_free(struct gs_engine *e);

#endif /* GOBLIN_ATTR_H */
