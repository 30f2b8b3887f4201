/*
 * What the in-process engine benches (engine-read.c,
 * engine-scale.d/engine-scale.c) share: their keys, the completions they
 * ignore or wait on, and a SET of a whole value on one gs_io, its bytes
 * made by the caller.  Each call runs in the caller's thread on its own
 * gs_io; none takes a lock of its own.
 */
#ifndef GOBLIN_BENCH_ENGINE_BENCH_H
#define GOBLIN_BENCH_ENGINE_BENCH_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "goblin.h"

/* Writes key number <k>'s name ("k<k>") into <buf> of <len> bytes. */
static inline void bench_key(char *buf, size_t len, uint64_t k)
{
	snprintf(buf, len, "k%llu", (unsigned long long)k);
}

/* A wake-up nobody waits for: the benches poll their gs_io. */
static inline void bench_on_wake(void *arg)
{
	(void)arg;
}

/* A store's completion: *(int *)<arg> becomes 1, or <res> when nonzero. */
static inline void bench_on_stored(void *arg, int res,
				   const struct gs_stored *st)
{
	(void)st;
	*(int *)arg = res ? res : 1;
}

/* Makes <n> bytes of a value at offset <pos> into <p>, for <arg>. */
typedef void bench_fill_fn(void *arg, unsigned char *p, uint64_t pos,
			   size_t n);

/* SETs key number <k> to <size> bytes that <fill>(<fill_arg>, ...) makes,
 * running <io> until the store is done: 0, or the -errno the writer or its
 * completion gave. */
static inline int bench_store(struct gs_io *io, uint64_t k, uint64_t size,
			      bench_fill_fn *fill, void *fill_arg)
{
	struct gs_writer *w;
	char key[32];
	uint64_t pos = 0;
	int done = 0, ret;

	bench_key(key, sizeof(key), k);
	ret = gs_writer_open(io, key, strlen(key), size, 0, 0, GS_WRITE_SET, &w);
	if (ret < 0)
		return ret;
	while (pos < size) {
		void *p;
		size_t n;

		if (gs_writer_buf(w, &p, &n, bench_on_wake, NULL) == -EAGAIN) {
			gs_io_run(io, true);
			continue;
		}
		fill(fill_arg, p, pos, n);
		gs_writer_advance(w, n);
		pos += n;
	}
	ret = gs_writer_finish(&w, GS_IF_ANY, 0, bench_on_stored, &done);
	while (ret == 0 && !done)
		gs_io_run(io, true);
	return ret < 0 ? ret : done == 1 ? 0 : done;
}

#endif /* GOBLIN_BENCH_ENGINE_BENCH_H */
