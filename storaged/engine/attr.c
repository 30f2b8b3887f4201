/*
 * Objects' attributes (attr.h): a chained hash from record to its
 * attributes, grown by doubling as the index is.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attr.h"
#include "engine.h"
#include "index.h"

/* <obj>'s bucket in a table of <n> (a power of two). */
static uint32_t hash_of(const struct gs_obj *obj, uint32_t n)
{
	return (uint32_t)((((uintptr_t)obj >> 4) * 0x9e3779b97f4a7c15ull) >> 32) &
	       (n - 1);
}

struct attr *attr_new(const void *p, size_t len)
{
	struct attr *a = malloc(sizeof(*a) + len);

	if (!a)
		return NULL;
	a->next = NULL;
	a->obj = NULL;
	a->len = len;
	memcpy(a->bytes, p, len);
	return a;
}

void attr_free(struct attr **ap)
{
	free(*ap);
	*ap = NULL;
}

static uint64_t one_bytes(const struct attr *a)
{
	return engine_malloc_bytes(sizeof(*a) + a->len);
}

/* Doubles the table (at first: makes it); keeps the longer chains when
 * there is no memory for more buckets.  0, or -ENOMEM when there is no
 * table at all. */
static int grow(struct attr_table *t)
{
	uint32_t n = t->nbuckets ? 2 * t->nbuckets : 256;
	struct attr **b = calloc(n, sizeof(*b));

	if (!b)
		return t->nbuckets ? 0 : -ENOMEM;
	for (uint32_t i = 0; i < t->nbuckets; i++) {
		struct attr *a = t->buckets[i], *next;

		for (; a; a = next) {
			uint32_t h = hash_of(a->obj, n);

			next = a->next;
			a->next = b[h];
			b[h] = a;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = n;
	return 0;
}

int attr_attach(struct gs_engine *e, struct gs_obj *obj, struct attr **ap)
{
	struct attr_table *t = &e->attrs;
	struct attr *a = *ap;
	uint32_t h;

	if ((t->n >= t->nbuckets || !t->nbuckets) && grow(t) < 0)
		return -ENOMEM;
	a->obj = obj;
	h = hash_of(obj, t->nbuckets);
	a->next = t->buckets[h];
	t->buckets[h] = a;
	t->n++;
	obj->has_attr = true;
	STAT_ADD(e, index_attr_bytes, one_bytes(a));
	STAT_ADD(e, attr_objects, 1);
	*ap = NULL;
	return 0;
}

static struct attr **slot_of(const struct gs_engine *e, const struct gs_obj *obj)
{
	const struct attr_table *t = &e->attrs;
	struct attr **s;

	if (!t->nbuckets)
		return NULL;
	for (s = &t->buckets[hash_of(obj, t->nbuckets)]; *s; s = &(*s)->next)
		if ((*s)->obj == obj)
			return s;
	return NULL;
}

const struct attr *attr_of(const struct gs_engine *e, const struct gs_obj *obj)
{
	struct attr **s = obj->has_attr ? slot_of(e, obj) : NULL;

	return s ? *s : NULL;
}

void attr_drop(struct gs_engine *e, struct gs_obj *obj)
{
	struct attr **s = obj->has_attr ? slot_of(e, obj) : NULL;
	struct attr *a;

	obj->has_attr = false;
	if (!s)
		return;
	a = *s;
	*s = a->next;
	e->attrs.n--;
	STAT_SUB(e, index_attr_bytes, one_bytes(a));
	STAT_SUB(e, attr_objects, 1);
	free(a);
}

int attr_copy(struct gs_engine *e, struct gs_obj *dst,
	      const struct gs_obj *src)
{
	const struct attr *from = attr_of(e, src);
	struct attr *a;
	int ret;

	if (!from)
		return 0;
	a = attr_new(from->bytes, from->len);
	if (!a)
		return -ENOMEM;
	ret = attr_attach(e, dst, &a);
	attr_free(&a);
	return ret;
}

uint64_t attr_bytes(const struct gs_engine *e)
{
	return __atomic_load_n(&e->st.index_attr_bytes, __ATOMIC_RELAXED) +
	       (uint64_t)e->attrs.nbuckets * sizeof(*e->attrs.buckets);
}

void attr_table_free(struct gs_engine *e)
{
	free(e->attrs.buckets);
	e->attrs.buckets = NULL;
	e->attrs.nbuckets = e->attrs.n = 0;
}
