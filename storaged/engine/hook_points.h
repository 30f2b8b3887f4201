/*
 * The engine's test hook points.  In the product each compiles to nothing:
 * a crash point to no code, the head-admission switch to false, the
 * simulated NUMA topology to none.  The hooked test build (goblin-store-hooks,
 * t/hooks/hooks.mk) force-includes t/hooks/hooks.h (gcc -include) into the
 * engine files that use them; it defines the macros first, to functions in
 * t/hooks/hooks.c that read the GOBLIN_TEST_* environment.  Nothing in the
 * product reads it.
 *
 * GS_CRASH_POINT(<point>): a place a restart test may kill the process at
 *   (the points: t/hooks/hooks.h).
 * GS_HOOK_HEAD_ADMIT_ANY(): whether every head miss admits, instead of the
 *   second-miss policy (heads.c): the policy's measure.
 * GS_HOOK_CHUNKS_OFF(): whether the RAM chunk cache takes nothing
 *   (ramchunk.c), so suites that inject disk faults read the disk at every
 *   GET.
 * GS_HOOK_NUMA_TOPO(<t>, <cfg>, <err>, <errlen>): fills <t> for <cfg> with
 *   a simulated topology: 1, 0 for none (the real one is read), or -EINVAL
 *   with a reason in <err>.
 * GS_HOOK_NUMA_CPU_NODE(<node>): the real node the serving threads of
 *   --numa <node> run on (numa_topo_cpu_node()).
 * GS_HOOK_COMPACT_MOVE(): runs between compaction's finding a record
 *   unpinned and its move (arena.c), to widen the window a lockless
 *   lookup's pin must not slip into (test_lookup).
 */
#ifndef GOBLIN_HOOK_POINTS_H
#define GOBLIN_HOOK_POINTS_H

#ifndef GS_CRASH_POINT
#define GS_CRASH_POINT(point)			do { } while (0)
#endif
#ifndef GS_HOOK_HEAD_ADMIT_ANY
#define GS_HOOK_HEAD_ADMIT_ANY()		false
#endif
#ifndef GS_HOOK_CHUNKS_OFF
#define GS_HOOK_CHUNKS_OFF()			false
#endif
#ifndef GS_HOOK_NUMA_TOPO
#define GS_HOOK_NUMA_TOPO(t, cfg, err, errlen)	0
#endif
#ifndef GS_HOOK_NUMA_CPU_NODE
#define GS_HOOK_NUMA_CPU_NODE(node)		(node)
#endif

#ifndef GS_HOOK_COMPACT_MOVE
#define GS_HOOK_COMPACT_MOVE()			do { } while (0)
#endif

#endif /* GOBLIN_HOOK_POINTS_H */
