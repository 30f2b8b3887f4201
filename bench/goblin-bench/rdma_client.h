/*
 * The RDMA protocol's client side (storaged/rdma/rdma.h has the design and
 * the transports): one connection, one registered bulk buffer, one GET at a
 * time.  For the tests (t/unit/test_rdma*, t/daemon/rdma-get.c) and
 * goblin-bench --proto rdma; not in goblin-store.
 */
#ifndef GOBLIN_BENCH_RDMA_CLIENT_H
#define GOBLIN_BENCH_RDMA_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "rdma.h"

struct rdma_client;

/* When a GET's steps were seen, in ns from its send (0: not seen):
 * the VALUE line; the last BULK_READY (the bulk buffer holds every byte:
 * taken before the client copies it out); END. */
struct rdma_times {
	uint64_t header_ns, bulk_ns, end_ns;
};

/* Connects and offers a bulk buffer of <bulk_len> bytes (its WINDOW
 * line).  0, -errno; the server's refusal is -EPROTO with its line in
 * <err>. */
int rdma_client_create(const struct rdma_transport *tp,
		       const char *host, uint16_t port, size_t bulk_len,
		       char *err, size_t errlen,
		       struct rdma_client **cp);
/*
 * GETs <key> into <out> (room for <cap> bytes).  Returns 1 (hit; *<len>,
 * *<flags>), 0 (miss) or -errno: -EPROTO with the server's line in <err>,
 * -EMSGSIZE when the object is larger than <cap> (read and dropped).
 */
int rdma_client_get(struct rdma_client *c, const char *key,
		    void *out, size_t cap, size_t *len, uint32_t *flags,
		    struct rdma_times *t, char *err, size_t errlen);
void rdma_client_destroy(struct rdma_client **cp);

#endif /* GOBLIN_BENCH_RDMA_CLIENT_H */
