/*
 * The daemon's RDMA endpoint (--rdma, rdma.h): one thread, goblin-rdma,
 * with its own gs_io and the engine as the object source, stepping the
 * protocol server and sleeping in rdma_server_wait() when a step did
 * nothing; a stop eventfd wakes it to leave.
 *
 *   main                         goblin-rdma
 *   rdma_thread_start() ---+---> gs_io_create, rdma_engine_create,
 *     (waits: listening    |     rdma_server_create (listens)
 *      or failed)        <-+---  ready
 *                              loop: step; publish the counters;
 *                                    nothing done: wait (CM, CQs, io, stop)
 *   rdma_thread_stop() --stopfd-> destroy server, source, io; exit
 *
 * The thread publishes its counters after each step that did something
 * (stats_rdma_publish, stats.h) for the memcache workers' `stats goblin`.
 */
#ifndef GOBLIN_RDMA_THREAD_H
#define GOBLIN_RDMA_THREAD_H

#include <stdbool.h>
#include <stddef.h>

#include "rdma.h"

struct gs_engine;
struct options;
struct rdma_thread;

/*
 * Starts the goblin-rdma thread serving <e> on --rdma ("ADDR:PORT",
 * "[IPV6]:PORT") over --rdma-transport ("verbs" or "tcp"), and returns
 * once it listens: 0 with the thread in *<tp> (NULL without --rdma), or
 * -errno with the reason in <err> (verbs without an RDMA device is
 * -ENODEV, never a fallback to tcp).  <opt> must outlive the thread.
 */
int rdma_thread_start(struct rdma_thread **tp, const struct options *opt,
		      struct gs_engine *e, char *err, size_t errlen);

/* 0 when ibv_get_device_list() finds an RDMA device; -ENODEV with the
 * reason, naming --rdma-transport tcp, in <err>. */
int rdma_thread_verbs_check(char *err, size_t errlen);

/* Wakes the thread, waits for it to free everything; clears *<tp>.
 * Safe on NULL. */
void rdma_thread_stop(struct rdma_thread **tp);

#endif
