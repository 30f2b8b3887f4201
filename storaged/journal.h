/*
 * The index journal: what makes the index survive a restart, kill -9
 * included.  Every change to the set of objects on the pools is appended,
 * under e->lock and before the change is acknowledged or the space it frees
 * can be reused: a PUT (the record: key, meta, chunk extents and sums; the
 * value itself for an object wholly in RAM), a DEL (delete, replace by
 * nothing, eviction, expiry reclaim), a TOUCH (new exptime) and a FLUSH
 * (flush_all).  Each carries a sequence number from the engine's CAS
 * counter; replay keeps, per key, the event with the highest.  Appends are
 * buffered writes: a process crash loses none once the call returned;
 * --sync-interval adds group-committed fdatasync for power loss.  The
 * journal is rewritten as a checkpoint of the live index when it grows.
 * It lives in the first dir of the SSD pool (the HDD pool without one);
 * an engine without pools has none (e->journal == NULL, every call a no-op).
 */
#ifndef GOBLIN_JOURNAL_H
#define GOBLIN_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gs_engine;
struct gs_obj;
struct journal;

/* Opens (creating) the journal of <e>'s pools; with e->cfg.fresh, wipes it.
 * Sets e->journal (NULL without pools).  Returns 0 or -errno with a
 * one-line reason in <err>. */
int journal_open(struct gs_engine *e, char *err, size_t errlen);
/* Replays the journal into the empty index: links every object it holds,
 * claims their pool space, sets recovered_objects and recovery_ms.
 * Returns 0 or -errno with a reason (a damaged tail is not an error: it
 * is cut, and logged). */
int journal_recover(struct gs_engine *e, char *err, size_t errlen);
/* Checkpoints and closes; clears e->journal. */
void journal_close(struct gs_engine *e);

/* Appends, e->lock held; 0 or -errno (the change must then not happen). */
int journal_put(struct gs_engine *e, const struct gs_obj *obj);
int journal_del(struct gs_engine *e, const void *key, size_t klen,
		uint64_t seq);
int journal_touch(struct gs_engine *e, const struct gs_obj *obj);
int journal_flush(struct gs_engine *e, uint64_t seq, int64_t when);

/* With --sync-interval: the highest sequence number known to be on stable
 * storage; without, every appended one.  Lock-free. */
uint64_t journal_synced(const struct gs_engine *e);
/* Blocks until journal_synced() >= <seq> (at most one sync interval). */
void journal_wait_synced(struct gs_engine *e, uint64_t seq);

#endif
