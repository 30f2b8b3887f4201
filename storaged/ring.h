/*
 * The nginx front of goblin-store: a unix socket that nginx workers attach
 * to, each getting the head region and its own ring (shared/ring-t.h).
 * One thread with its own gs_io serves every worker.
 */
#ifndef GOBLIN_STORAGED_RING_H
#define GOBLIN_STORAGED_RING_H

#include <stddef.h>

#include "goblin.h"

/*
 * Listens on <socket_path> (a stale socket file is replaced, a live one is
 * refused) and starts the ring thread.  Returns 0, or -errno with a
 * one-line reason in <err>.
 */
int ring_server_start(struct gs_engine *e, const char *socket_path,
		      char *err, size_t errlen);

/* Stops the thread, drops every worker (their pins with them) and removes
 * the socket file.  Safe when not started. */
void ring_server_stop(void);

#endif /* GOBLIN_STORAGED_RING_H */
