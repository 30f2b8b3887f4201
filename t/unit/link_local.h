/*
 * The nginx link's op machinery without socket or thread, for tests and
 * the fuzzer (t/fuzz/fuzz_ring.c): everything runs on the caller's
 * thread, over the caller's <io>.  Not in goblin-store: link_local.c is
 * compiled into the programs that use it.
 *
 * link_local_create makes a server; link_local_attach gives it a worker
 * with geometry <h> and returns the ring memfd for the worker's side
 * (ring_attach); link_local_run serves every worker's SQ once, runs the
 * I/O that is ready, and returns how many workers are still attached (a
 * bad submission drops one); link_local_drop drops every worker and
 * waits for their commits; link_local_destroy does that and frees
 * <*srvp>.
 */
#ifndef GOBLIN_T_LINK_LOCAL_H
#define GOBLIN_T_LINK_LOCAL_H

#include <stdint.h>

#include "goblin.h"
#include "ring-t.h"

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

#endif /* GOBLIN_T_LINK_LOCAL_H */
