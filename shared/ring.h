/*
 * Ring helpers both sides use: geometry, mapping, the two SPSC queues,
 * doorbells and the descriptor hand-over.  See ring-t.h for the design.
 *
 * Threading: a struct ring is used by one thread on each side.  The SQ
 * has one producer (the worker) and one consumer (the daemon), the CQ the
 * reverse; nothing here takes a lock.
 */
#ifndef GOBLIN_RING_H
#define GOBLIN_RING_H

#include <stdbool.h>
#include <stddef.h>

#include "ring-t.h"

/* Fills the zero fields of <h> with defaults and clamps the others to the
 * limits (sq_entries rounded up to a power of two). */
void ring_geometry(struct ring_hello *h);

/*
 * Daemon side: creates a memfd for geometry <h> (clamped first), seals
 * it against resizing (RING_SEALS), maps it read-write and writes the
 * header.  Returns 0 or -errno.
 */
int ring_create(struct ring *r, struct ring_hello *h);

/*
 * Worker side: maps the ring memfd <fd> of <size> bytes received in a
 * welcome and checks it (sealed, large enough) and its header.  Takes
 * <fd> on success.  Returns 0, -EPROTO for a descriptor or header that
 * does not fit <size>, or -errno.
 */
int ring_attach(struct ring *r, int fd, uint64_t size);

/*
 * Is <fd> a memfd of at least <size> bytes sealed against resizing
 * (RING_SEALS)?  Mapping it then cannot fault past its end.  Returns 0,
 * -EPROTO, or -errno.
 */
int ring_fd_check(int fd, uint64_t size);

/*
 * Worker side, once connected to <path> on <fd>: is it the daemon?  The
 * listener must run as root or as the user that owns <path>'s directory
 * (the daemon refuses a directory others can write), so whoever bound a
 * stale path first cannot pose as goblin-store.  Returns 0, or -EPERM
 * (or -errno) with a one-line reason in <err>.
 */
int ring_check_server(int fd, const char *path, char *err, size_t errlen);

/* Unmaps <r> and closes its memfd; safe on a zeroed or unmapped ring. */
void ring_unmap(struct ring *r);

/*
 * Queue a copy of <e>.  Returns 0, or -EAGAIN when the queue is full: the
 * wait flag is then set, and the consumer rings the doorbell once it has
 * made room.
 */
int ring_sq_push(struct ring *r, const struct ring_sqe *e);
int ring_cq_push(struct ring *r, const struct ring_cqe *e);

/*
 * Copies the oldest entry to <e> and frees its slot.  Returns 1, 0 when
 * the queue is empty, or -EPROTO when the indices are impossible (the
 * peer scribbled on them).
 */
int ring_sq_pop(struct ring *r, struct ring_sqe *e);
int ring_cq_pop(struct ring *r, struct ring_cqe *e);

/* After popping: true (once) when the producer found the queue full and
 * waits for a doorbell. */
bool ring_sq_wants_doorbell(struct ring *r);
bool ring_cq_wants_doorbell(struct ring *r);

/* Writes one doorbell byte on <fd> without blocking; a full socket buffer
 * already holds one.  Returns 0 or -errno (-EPIPE: peer gone). */
int ring_doorbell(int fd);

/* Reads every pending doorbell byte.  Returns the count (0: none yet),
 * or -ECONNRESET when the peer closed, or -errno. */
int ring_doorbell_drain(int fd);

/*
 * The hand-over.  Hello and welcome are single small messages; the
 * welcome carries [region fd, ring fd] when its res is 0.  All return 0,
 * -EAGAIN (nothing yet on a non-blocking socket), -ECONNRESET, -EPROTO
 * (bad message) or -errno.  ring_recv_welcome sets both fds to -1 unless
 * it returns 0 with a res of 0.
 */
int ring_send_hello(int fd, const struct ring_hello *h);
int ring_recv_hello(int fd, struct ring_hello *h);
int ring_send_welcome(int fd, const struct ring_welcome *w, int region_fd,
		      int ring_fd);
int ring_recv_welcome(int fd, struct ring_welcome *w, int *region_fd,
		      int *ring_fd);

/* Staging buffer <i> of each kind; the caller checks i < n_rx / n_tx. */
static inline char *ring_rx_buf(const struct ring *r, uint32_t i)
{
	return r->bufs + (uint64_t)i * r->buf_size;
}

static inline char *ring_tx_buf(const struct ring *r, uint32_t i)
{
	return r->bufs + (uint64_t)(r->n_rx + i) * r->buf_size;
}

#endif /* GOBLIN_RING_H */
