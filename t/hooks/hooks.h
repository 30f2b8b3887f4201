/*
 * The test hooks, force-included (gcc -include) into the engine files that
 * call the hook points of storaged/engine/hook_points.h, for the hooked
 * test build (t/hooks/hooks.mk: $BUILD/t/goblin-store-hooks and the unit
 * tests that set these variables).  They read the environment:
 *
 *   GOBLIN_TEST_CRASH=<point>[:<n>]  the process kills itself (SIGKILL)
 *     the <n>th time (default 1) it passes <point>: chunk-write (a chunk
 *     write completed, the object not finished), before-journal (every
 *     chunk on disk, the record not journaled), after-journal (journaled,
 *     not yet acknowledged), recovery (a record replayed at start),
 *     checkpoint (a checkpoint written, not yet renamed over the journal),
 *     after-checkpoint (renamed: the append that weighed it not yet made);
 *   GOBLIN_TEST_CHUNKS=off      the RAM chunk cache takes nothing (disk
 *                               faults meet every GET)
 *   GOBLIN_TEST_HEAD_ADMIT=any  every head miss admits (the policy's
 *     measure, README "Head cache");
 *   GOBLIN_TEST_NUMA="10 20 30 20"  with --numa, simulates as many nodes
 *     as the row has (node 0's distance row; node i's row is it rotated
 *     right by i), every share placed on the real node --numa NODE binds
 *     to (NODE modulo the real nodes).
 *   GOBLIN_TEST_COMPACT_DELAY_US=N  compaction sleeps N us between finding
 *     a record unpinned and moving it (test_lookup: a lockless pin there
 *     must be turned away).
 *
 * Never part of the product: t/check-product finds none of these names in
 * goblin-store or libgoblin.a.
 */
#ifndef GOBLIN_HOOKS_H
#define GOBLIN_HOOKS_H

#include <stdbool.h>
#include <stddef.h>

struct gs_config;
struct numa_topo;

/* Kills the process at <point> as GOBLIN_TEST_CRASH says; thread-safe. */
void hooks_crash_point(const char *point);
/* Whether GOBLIN_TEST_HEAD_ADMIT is "any" (read once). */
bool hooks_head_admit_any(void);
/* Whether GOBLIN_TEST_CHUNKS is "off" (read once). */
bool hooks_chunks_off(void);
/* The simulated topology of GOBLIN_TEST_NUMA for <cfg> (numa >= 0)
 * into <t>: 1, 0 without the variable, or -EINVAL with a reason in <err>
 * for a bad row or a node the row does not have. */
int hooks_numa_topo(struct numa_topo *t, const struct gs_config *cfg,
		    char *err, size_t errlen);
/* With GOBLIN_TEST_NUMA: <node> modulo the real nodes (-1 when libnuma
 * sees none); else <node>. */
int hooks_numa_cpu_node(int node);

/* Sleeps GOBLIN_TEST_COMPACT_DELAY_US microseconds (read at each call;
 * unset: not at all). */
void hooks_compact_move(void);

#define GS_CRASH_POINT(point)			hooks_crash_point(point)
#define GS_HOOK_HEAD_ADMIT_ANY()		hooks_head_admit_any()
#define GS_HOOK_CHUNKS_OFF()			hooks_chunks_off()
#define GS_HOOK_NUMA_TOPO(t, cfg, err, errlen)	hooks_numa_topo(t, cfg, err, errlen)
#define GS_HOOK_NUMA_CPU_NODE(node)		hooks_numa_cpu_node(node)
#define GS_HOOK_COMPACT_MOVE()			hooks_compact_move()

#endif /* GOBLIN_HOOKS_H */
