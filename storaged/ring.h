/*
 * The nginx front of goblin-store: a unix socket that nginx workers attach
 * to, each getting the head region and its own ring (shared/ring-t.h).
 * One thread with its own gs_io serves every worker.
 */
#ifndef GOBLIN_STORAGED_RING_H
#define GOBLIN_STORAGED_RING_H

#include <stddef.h>

#include "goblin.h"

/* RING_STAT(name, description): the ring's counters, in STATS replies. */
#define RING_STATS(ACTION)						\
	ACTION(ring_connections, "nginx workers attached now")		\
	ACTION(ring_total_connections, "nginx workers attached since start") \
	ACTION(ring_lookups, "LOOKUPs (each pins on a hit)")		\
	ACTION(ring_lookup_hits, "LOOKUPs that found the object")		\
	ACTION(ring_pins, "objects pinned by nginx workers now")		\
	ACTION(ring_reads, "READs: disk parts streamed to nginx")		\
	ACTION(ring_read_bytes, "bytes staged in rx buffers")		\
	ACTION(ring_buffer_waits, "times a READ waited for an rx buffer")	\
	ACTION(ring_stores, "PUTs stored")				\
	ACTION(ring_store_bytes, "PUT bytes taken from tx buffers")	\
	ACTION(ring_store_errors, "PUTs that failed or were aborted")	\
	ACTION(ring_deletes, "DELETEs that removed an object")		\
	ACTION(ring_cq_overflows, "completions held back by a full CQ")	\
	ACTION(ring_protocol_errors, "workers dropped for a bad submission")

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
