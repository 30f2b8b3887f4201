/*
 * What the ring's tests (test_ring.c, t/fuzz/fuzz_ring.c) ask of a ring
 * that neither side of the product does: its size for a geometry before
 * it exists, and how many entries wait in each queue.
 */
#ifndef GOBLIN_TEST_RING_UTIL_H
#define GOBLIN_TEST_RING_UTIL_H

#include <stdint.h>

#include "ring.h"

/* Bytes the ring memfd takes for the (clamped) geometry <h>: those of a
 * ring ring_create() makes for it; 0 when it cannot make one. */
static inline uint64_t ring_size_for(const struct ring_hello *h)
{
	struct ring_hello g = *h;
	struct ring r;
	uint64_t size;

	if (ring_create(&r, &g))
		return 0;
	size = r.size;
	ring_unmap(&r);
	return size;
}

/* Entries waiting in queue <q>. */
static inline uint32_t ring_queue_pending(const struct ring_queue_idx *q)
{
	return __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);
}

/* Entries waiting in <r>'s submission and completion queues. */
static inline uint32_t ring_sq_pending(const struct ring *r)
{
	return ring_queue_pending(&r->hdr->sq);
}

static inline uint32_t ring_cq_pending(const struct ring *r)
{
	return ring_queue_pending(&r->hdr->cq);
}

#endif
