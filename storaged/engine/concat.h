/*
 * The writer's append and prepend modes (concat.c), behind gs_writer_*()
 * (writer.c): the bytes to add, taken from the caller once the key's turn
 * and the admission bound let them in, then the stored value and them
 * written as a new value linked over the old one.  Not part of the API;
 * from the gs_io's own thread.
 */
#ifndef GOBLIN_CONCAT_H
#define GOBLIN_CONCAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "goblin.h"

struct concat;

/* An append (a prepend with <prepend>) of <len> bytes to <key>: 0 and
 * <*kp>, or -EINVAL (a key over GS_KEY_MAX), -E2BIG, -ENOMEM. */
int concat_open(struct gs_io *io, const void *key, size_t klen,
		bool prepend, size_t len, struct concat **kp);
/* gs_writer_buf() of an append: where the next bytes of <k> go. */
int concat_buf(struct concat *k, void **p, size_t *len, gs_wake_fn wake,
	       void *arg);
/* <n> bytes were put where concat_buf() said. */
void concat_advance(struct concat *k, size_t n);
/* Whether every byte to add is in. */
bool concat_complete(const struct concat *k);
/* Stores <k> (complete) as gs_writer_finish() says of an append, over
 * <cas> (0: any); takes <k>: freed when this returns an error. */
int concat_finish(struct concat *k, uint64_t cas, gs_stored_fn done,
		  void *arg);
/* Drops <*kp> (NULL: nothing) before finish and clears it. */
void concat_abort(struct concat **kp);

#endif /* GOBLIN_CONCAT_H */
