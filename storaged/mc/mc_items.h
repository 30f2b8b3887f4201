/*
 * Memcache item semantics on top of the engine's public calls: exptime
 * conversion, incr/decr, flush_all and the link condition of each storage
 * command.  The engine itself knows nothing of memcache.
 */
#ifndef GOBLIN_MC_ITEMS_H
#define GOBLIN_MC_ITEMS_H

#include <stdbool.h>
#include <stdint.h>

#include "goblin.h"
#include "proto_parse.h"

/* Converts a memcache exptime (0 never, <= 30 days relative, else absolute,
 * negative already expired) to the engine's absolute form. */
int64_t mc_exptime(int64_t exptime);

/* incr/decr of a decimal value (incr wraps at 2^64, decr stops at 0):
 * 0 and <*result>, -ENOENT, -EINVAL when the value is not a number, or
 * -ENOMEM. */
int mc_incr(struct gs_engine *e, const void *key, size_t klen, bool decr,
	    uint64_t delta, uint64_t *result);

/* An incr or decr as ma does it, all in the one step that replaces the
 * value: compared with C, the TTL set by T. */
struct mc_arith {
	bool decr;
	uint64_t delta;
	uint64_t cas;			/* C: only over it (0: any) */
	bool set_exptime;		/* T: */
	int64_t exptime;		/*   absolute (mc_exptime()) */
};

/* mc_incr() by <a>: also -EEXIST when <a>->cas is stale; <meta>, when not
 * NULL, gets the new object's (the CAS and TTL of the value answered). */
int mc_arith(struct gs_engine *e, const void *key, size_t klen,
	     const struct mc_arith *a, uint64_t *result, struct gs_meta *meta);

/* flush_all: every object stored until now is invalid after <delay> (a
 * memcache exptime; 0 or less: at once). */
void mc_flush(struct gs_engine *e, int64_t delay);

/* When storage command <op> may store its object (MC_CAS: over the CAS
 * it names). */
static inline enum gs_if mc_store_if(enum mc_op op)
{
	switch (op) {
	case MC_ADD:
		return GS_IF_ABSENT;
	case MC_REPLACE:
		return GS_IF_PRESENT;
	case MC_CAS:
		return GS_IF_CAS;
	default:
		return GS_IF_ANY;
	}
}

/* The writer mode of storage command <op>: append and prepend add to the
 * stored value. */
static inline enum gs_write_mode mc_write_mode(enum mc_op op)
{
	return op == MC_APPEND ? GS_WRITE_APPEND :
	       op == MC_PREPEND ? GS_WRITE_PREPEND : GS_WRITE_SET;
}

#endif
