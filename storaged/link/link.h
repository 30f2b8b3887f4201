/*
 * The nginx link, daemon side: a unix socket that nginx workers attach
 * to, each getting the head region and its own ring (shared/ring-t.h).
 * One thread with its own gs_io serves every worker.
 *
 *   link_conn.c      a worker's connection: hello, welcome (fd passing),
 *                    doorbells, CQ overflow, dropping it; who may attach
 *   link_ops.c       the ring operations (LOOKUP, READ, ... STATS)
 *   link_attr.c      objects' attributes (LOOKUP_ATTR, WOPEN's attr_len,
 *                    SETATTR) and WFINISH's condition
 *   link_server.c    the socket, accepting, the thread (loop.c),
 *                    start/stop
 *   link_internal.h  the types they share, the hot-path helpers inline
 */
#ifndef GOBLIN_STORAGED_LINK_H
#define GOBLIN_STORAGED_LINK_H

#include <stddef.h>

#include "goblin.h"

/* Workers attached at once (a reload briefly keeps old ones too). */
#define LINK_MAX_WORKERS	256u
/* Handles (pins, writers, STATS) one worker may hold. */
#define LINK_HANDLES_MAX	4096u
/* Distinct objects one worker may pin (any number of pins each, within
 * LINK_HANDLES_MAX): a quarter of the RAM-head slots, at least this many. */
#define LINK_PINS_MIN		128u

struct link_server;
struct options;
struct stats_snapshot;

/* Fills <s> with what `stats` reports (the memcache front's
 * server_stats_snapshot: process, front, summary, engine and pool
 * fields); <arg> is the front's.  Called on the link's thread. */
typedef void (*link_snapshot_fn)(void *arg, struct stats_snapshot *s);

/*
 * Listens on --socket and starts the link thread (nothing with
 * --no-http: *<lp> NULL).  Who may attach: root, goblin-store's user,
 * --socket-user and --socket-group.  The socket's directory is created
 * 0750 (group: --socket-group, else --socket-user's primary group; search
 * for others too when --socket-mode lets them write) when
 * missing; an existing one must be a directory owned by goblin-store's
 * user or root that neither group nor others can write.  A stale socket
 * of ours is replaced; a live one, or one another user made, is refused.
 * The socket gets --socket-mode (0660) and the same group.  <opt> must
 * outlive the link.  STATS replies carry what <snapshot>(<snapshot_arg>)
 * fills, then the arena and link counters.  Returns 0 with the link in
 * *<lp>, or -errno with a one-line reason in <err>.
 */
int link_start(struct link_server **lp, const struct options *opt,
	       struct gs_engine *e, link_snapshot_fn snapshot,
	       void *snapshot_arg, char *err, size_t errlen);

/* Stops the thread, drops every worker (their pins with them), removes
 * the socket file, frees the link and clears *<lp>.  Safe on NULL. */
void link_stop(struct link_server **lp);

#endif /* GOBLIN_STORAGED_LINK_H */
