/*
 * The one linked list of goblin-store: intrusive, circular, doubly linked,
 * with a head that is itself a node.  Embed a `struct list` in the element,
 * list_init() the head, and get the element back with list_entry().
 *
 *     head <-> a.node <-> b.node <-> head
 *
 * A removed node is re-initialised, so list_linked() tells whether an
 * element is on a list and list_del() of an unlinked node does nothing.
 */
#ifndef GOBLIN_LIST_H
#define GOBLIN_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list {
	struct list *next, *prev;
};

static inline void list_init(struct list *l)
{
	l->next = l->prev = l;
}

static inline bool list_empty(const struct list *l)
{
	return l->next == l;
}

/* Whether node <n> (initialised once) is on some list. */
static inline bool list_linked(const struct list *n)
{
	return n->next != n;
}

static inline void list_add_tail(struct list *head, struct list *n)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static inline void list_del(struct list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	list_init(n);
}

/* Moves every node of <from> to the empty list <to>; <from> ends empty. */
static inline void list_splice_init(struct list *from, struct list *to)
{
	list_init(to);
	if (list_empty(from))
		return;
	to->next = from->next;
	to->prev = from->prev;
	to->next->prev = to;
	to->prev->next = to;
	list_init(from);
}

#define list_entry(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))

#endif
