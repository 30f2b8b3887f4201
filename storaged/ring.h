/*
 * The nginx front of goblin-store: a unix socket that nginx workers attach
 * to, each getting the head region and its own ring (shared/ring-t.h).
 * One thread with its own gs_io serves every worker.
 */
#ifndef GOBLIN_STORAGED_RING_H
#define GOBLIN_STORAGED_RING_H

#include <stddef.h>

#include "goblin.h"
#include "stats.h"
#include "../shared/ring-t.h"

/* Workers attached at once (a reload briefly keeps old ones too). */
#define RING_MAX_WORKERS	256u
/* Handles (pins, writers, STATS) one worker may hold. */
#define RING_HANDLES_MAX	4096u
/* Distinct objects one worker may pin (any number of pins each, within
 * RING_HANDLES_MAX): a quarter of the RAM-head slots, at least this many. */
#define RING_PINS_MIN		128u

/* Who may attach, and where (from --socket, --socket-user, --socket-group;
 * empty strings: unset). */
struct ring_server_conf {
	const char *socket;
	const char *socket_user;
	const char *socket_group;
};

/*
 * Listens on <conf>'s socket and starts the ring thread.  The socket's
 * directory is created 0750 (group: --socket-group, else --socket-user's
 * primary group) when missing; an existing one must be a directory owned
 * by goblin-store's user or root that neither group nor others can write.
 * A stale socket of ours is replaced; a live one, or one another user
 * made, is refused.  The socket gets mode 0660 and the same group.
 * Returns 0, or -errno with a one-line reason in <err>.
 */
int ring_server_start(struct gs_engine *e, const struct ring_server_conf *conf,
		      char *err, size_t errlen);

/* Stops the thread, drops every worker (their pins with them) and removes
 * the socket file.  Safe when not started. */
void ring_server_stop(void);

/*
 * The same op machinery without socket or thread, for tests and the
 * fuzzer: everything runs on the caller's thread, over the caller's <io>.
 * ring_local_create makes a server; ring_local_attach gives it a worker
 * with geometry <h> and returns the ring memfd for the worker's side
 * (ring_attach); ring_local_run serves every worker's SQ once, runs the
 * I/O that is ready, and returns how many workers are still attached
 * (a bad submission drops one); ring_local_drop drops every worker and
 * waits for their commits; ring_local_destroy does that and frees <*srvp>.
 */
struct ring_server;
int ring_local_create(struct gs_engine *e, struct gs_io *io,
		      struct ring_server **srvp);
int ring_local_attach(struct ring_server *srv, struct ring_hello *h,
		      int *ring_fd);
unsigned ring_local_run(struct ring_server *srv);
void ring_local_drop(struct ring_server *srv);
void ring_local_destroy(struct ring_server **srvp);
/* Counter <name> of RING_STATS, or UINT64_MAX for an unknown name. */
uint64_t ring_local_stat(const struct ring_server *srv, const char *name);

#endif /* GOBLIN_STORAGED_RING_H */
