/*
 * Epochs (epoch.c): what lets a lookup walk the index without e->lock
 * (lookup.c) while writers unlink and free records and bucket tables.
 *
 *   reader (no lock)                      writer (e->lock held)
 *   ----------------                      ---------------------
 *   E = e->epoch                          unlink <p> from every chain
 *   slot = E  (CAS from 0), fence         engine_retire(<p>):
 *   walk chains, pin, check                 tag = ++e->epoch
 *   slot = 0                                retired[] += { p, tag }
 *                                         reclaim: fence, then free each
 *                                           retired <p> whose tag <= every
 *                                           busy slot's E
 *
 * A busy slot announcing E >= tag read e->epoch after <p>'s unlink (the
 * increment follows it), so that walk cannot reach <p>; a slot seen idle
 * by the reclaim is taken after the fence pair, so its walk sees the
 * unlink too.  Only a slot announcing E < tag keeps <p>.  Retired
 * pointers are at most EPOCH_RETIRED_MAX: the one retiring past it waits,
 * yielding, for the readers it waits on to leave (a walk holds no lock
 * and never blocks).  A reader that finds no free slot takes the lock.
 */
#ifndef GOBLIN_EPOCH_H
#define GOBLIN_EPOCH_H

#include "engine.h"

#define EPOCH_SLOTS		64
#define EPOCH_RETIRED_MAX	1024
#define EPOCH_RECLAIM_AT	64	/* retired before a reclaim is tried */

struct epoch_slot {
	uint64_t epoch;			/* 0: idle, else the reader's E */
	char pad[56];			/* a cache line each */
};

struct epoch_retired {
	void *p;			/* free()d once no reader can see it */
	uint64_t tag;
};

/* Allocates the slots and the retired list of <e>; 0 or -ENOMEM. */
int epoch_init(struct gs_engine *e);
/* Frees whatever is retired, then the slots and list: no reader may be
 * in an epoch of <e> (the engine is closing). */
void epoch_fini(struct gs_engine *e);
/* Announces the calling thread as a reader of <e>: its slot, or -1 when
 * none is free (take e->lock instead).  No lock held; until
 * epoch_leave(), nothing retired from now on is freed. */
int epoch_enter(struct gs_engine *e);
/* Ends the walk epoch_enter() started on slot <slot>. */
void epoch_leave(struct gs_engine *e, int slot);
/* Frees <p> (a malloc'd record or bucket table, unreachable from the
 * index from now on) once no reader that could have reached it is in
 * its epoch.  Called with e->lock held. */
void engine_retire(struct gs_engine *e, void *p);

#endif /* GOBLIN_EPOCH_H */
