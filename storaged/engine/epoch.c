/*
 * Epoch-based reclamation of records and bucket tables (epoch.h).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#include "epoch.h"

int epoch_init(struct gs_engine *e)
{
	e->epoch_slots = aligned_alloc(64, EPOCH_SLOTS *
				       sizeof(*e->epoch_slots));
	if (!e->epoch_slots)
		return -ENOMEM;
	e->retired = malloc(EPOCH_RETIRED_MAX * sizeof(*e->retired));
	if (!e->retired) {
		free(e->epoch_slots);
		e->epoch_slots = NULL;
		return -ENOMEM;
	}
	for (unsigned i = 0; i < EPOCH_SLOTS; i++)
		e->epoch_slots[i].epoch = 0;
	e->epoch = 1;
	e->nretired = 0;
	return 0;
}

void epoch_fini(struct gs_engine *e)
{
	if (!e->retired)
		return;
	for (uint32_t i = 0; i < e->nretired; i++)
		free(e->retired[i].p);
	free(e->retired);
	e->retired = NULL;
	e->nretired = 0;
	free(e->epoch_slots);
	e->epoch_slots = NULL;
}

/* Each thread's first slot to try: threads numbered as they first look. */
static unsigned thread_slot(void)
{
	static unsigned next;
	static __thread unsigned mine;

	if (!mine)
		mine = __atomic_add_fetch(&next, 1, __ATOMIC_RELAXED);
	return mine;
}

int epoch_enter(struct gs_engine *e)
{
	unsigned first = thread_slot();
	uint64_t now = __atomic_load_n(&e->epoch, __ATOMIC_ACQUIRE);

	for (unsigned i = 0; i < 4; i++) {
		struct epoch_slot *s = &e->epoch_slots[(first + i) % EPOCH_SLOTS];
		uint64_t idle = 0;

		if (__atomic_compare_exchange_n(&s->epoch, &idle, now, false,
						__ATOMIC_SEQ_CST,
						__ATOMIC_RELAXED)) {
			/* the slot before any load of the walk */
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			return (int)((first + i) % EPOCH_SLOTS);
		}
	}
	return -1;
}

void epoch_leave(struct gs_engine *e, int slot)
{
	__atomic_store_n(&e->epoch_slots[slot].epoch, 0, __ATOMIC_RELEASE);
}

/* Frees the retired pointers of <e> no reader can reach any more.
 * e->lock held. */
static void reclaim(struct gs_engine *e)
{
	uint64_t oldest = UINT64_MAX;
	uint32_t kept = 0;

	/* the unlinks (before each tag) before the slots are read */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < EPOCH_SLOTS; i++) {
		uint64_t v = __atomic_load_n(&e->epoch_slots[i].epoch,
					     __ATOMIC_ACQUIRE);

		if (v && v < oldest)
			oldest = v;
	}
	for (uint32_t i = 0; i < e->nretired; i++) {
		if (e->retired[i].tag <= oldest)
			free(e->retired[i].p);
		else
			e->retired[kept++] = e->retired[i];
	}
	e->nretired = kept;
}

void engine_retire(struct gs_engine *e, void *p)
{
	while (e->nretired == EPOCH_RETIRED_MAX) {
		reclaim(e);
		if (e->nretired == EPOCH_RETIRED_MAX)
			sched_yield();
	}
	e->retired[e->nretired].p = p;
	e->retired[e->nretired].tag = __atomic_add_fetch(&e->epoch, 1,
							 __ATOMIC_SEQ_CST);
	e->nretired++;
	if (e->nretired >= EPOCH_RECLAIM_AT)
		reclaim(e);
}
