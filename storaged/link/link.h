/*
 * The nginx link, daemon side: a unix socket that nginx workers attach
 * to, each getting the head region and its own ring (shared/ring-t.h).
 * One thread with its own gs_io serves every worker.
 *
 *   link_conn.c      a worker's connection: hello, welcome (fd passing),
 *                    doorbells, CQ overflow, dropping it; who may attach
 *   link_ops.c       the ring operations (LOOKUP, READ, ... STATS)
 *   link_server.c    the socket, accepting, the thread (loop.c),
 *                    start/stop, the local server
 *   link_internal.h  the types they share, the hot-path helpers inline
 */
#ifndef GOBLIN_STORAGED_LINK_H
#define GOBLIN_STORAGED_LINK_H

#include <stddef.h>

#include "goblin.h"
#include "ring-t.h"

/* Workers attached at once (a reload briefly keeps old ones too). */
#define LINK_MAX_WORKERS	256u
/* Handles (pins, writers, STATS) one worker may hold. */
#define LINK_HANDLES_MAX	4096u
/* Distinct objects one worker may pin (any number of pins each, within
 * LINK_HANDLES_MAX): a quarter of the RAM-head slots, at least this many. */
#define LINK_PINS_MIN		128u

/* Who may attach, and where (from --socket, --socket-user, --socket-group;
 * empty strings: unset). */
struct link_conf {
	const char *socket;
	const char *socket_user;
	const char *socket_group;
};

/*
 * Listens on <conf>'s socket and starts the link thread.  The socket's
 * directory is created 0750 (group: --socket-group, else --socket-user's
 * primary group) when missing; an existing one must be a directory owned
 * by goblin-store's user or root that neither group nor others can write.
 * A stale socket of ours is replaced; a live one, or one another user
 * made, is refused.  The socket gets mode 0660 and the same group.
 * Returns 0, or -errno with a one-line reason in <err>.
 */
int link_start(struct gs_engine *e, const struct link_conf *conf, char *err,
	       size_t errlen);

/* Stops the thread, drops every worker (their pins with them) and removes
 * the socket file.  Safe when not started. */
void link_stop(void);

/*
 * The same op machinery without socket or thread, for tests and the
 * fuzzer: everything runs on the caller's thread, over the caller's <io>.
 * link_local_create makes a server; link_local_attach gives it a worker
 * with geometry <h> and returns the ring memfd for the worker's side
 * (ring_attach); link_local_run serves every worker's SQ once, runs the
 * I/O that is ready, and returns how many workers are still attached
 * (a bad submission drops one); link_local_drop drops every worker and
 * waits for their commits; link_local_destroy does that and frees <*srvp>.
 */
struct link_server;
int link_local_create(struct gs_engine *e, struct gs_io *io,
		      struct link_server **srvp);
int link_local_attach(struct link_server *srv, struct ring_hello *h,
		      int *ring_fd);
unsigned link_local_run(struct link_server *srv);
void link_local_drop(struct link_server *srv);
void link_local_destroy(struct link_server **srvp);
/* Counter <name> of LINK_STATS (stats.h), or UINT64_MAX for an unknown
 * name. */
uint64_t link_local_stat(const struct link_server *srv, const char *name);

#endif /* GOBLIN_STORAGED_LINK_H */
