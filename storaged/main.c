/*
 * goblin-store: parse options, open the engine, start the fronts, run
 * until SIGINT or SIGTERM, then stop them in reverse order.
 *
 * Every front starts and stops the same way: X_start(&x, &opt, e, err,
 * errlen) reads its own options (a front they leave off starts nothing
 * and leaves x NULL), returns 0 or -errno with a reason in <err>;
 * X_stop(&x) stops it, frees it and clears x (nothing on NULL).  In
 * order: the RDMA endpoint (rdma/rdma_thread.h), the memcache server
 * (mc/server.h), the nginx link (link/link.h).
 */
#include <errno.h>
#include <numa.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "link.h"
#include "log.h"
#include "goblin.h"
#include "options.h"
#include "rdma_thread.h"
#include "server.h"
#include "version.h"

/* The link's STATS replies read what `stats` does (link_snapshot_fn). */
static void server_snapshot(void *srv, struct stats_snapshot *s)
{
	server_stats_snapshot(srv, s);
}

int main(int argc, char **argv)
{
	struct options opt;
	struct gs_engine *e = NULL;
	struct rdma_thread *rdma = NULL;
	struct server *srv = NULL;
	struct link_server *link = NULL;
	char err[512];
	sigset_t sigs;
	int ret, sig;

	ret = options_parse(&opt, argc, argv);
	if (ret)
		return ret == 1 ? 0 : 2;
	log_level = LOG_INFO + opt.verbose > LOG_DEBUG ? LOG_DEBUG : LOG_INFO + opt.verbose;
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	/* before the pools are opened: nothing to undo */
	if (*opt.rdma && !strcmp(opt.rdma_transport, "verbs") &&
	    rdma_thread_verbs_check(err, sizeof(err))) {
		fprintf(stderr, "goblin-store: %s\n", err);
		return 1;
	}
	ret = gs_engine_open(&e, &opt.cfg, err, sizeof(err));
	if (ret < 0) {
		options_word_error(err, sizeof(err));
		fprintf(stderr, "goblin-store: %s\n", err);
		return ret == -EINVAL ? 2 : 1;
	}
	if (opt.cfg.numa >= 0 && numa_topo_cpu_node(opt.cfg.numa) >= 0 &&
	    numa_run_on_node(numa_topo_cpu_node(opt.cfg.numa)) < 0) {
		fprintf(stderr, "goblin-store: --numa %d: %s\n", (int)opt.cfg.numa,
			strerror(errno));
		goto out_engine;
	}
	/* before the memcache port opens: a client that reached it finds the
	 * RDMA listener up too */
	ret = rdma_thread_start(&rdma, &opt, e, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "goblin-store: %s\n", err);
		goto out_engine;
	}
	ret = server_start(&srv, &opt, e, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "goblin-store: %s\n", err);
		goto out_rdma;
	}
	ret = link_start(&link, &opt, e, server_snapshot, srv, err,
			 sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "goblin-store: %s\n", err);
		goto out_server;
	}
	log_info("goblin-store %s ready: memcache on %s:%u, %u serving thread(s), socket %s",
		 GOBLIN_VERSION, opt.listen, (unsigned)opt.memcache_port,
		 (unsigned)opt.cores, opt.no_http ? "off (--no-http)" : opt.socket);

	sigwait(&sigs, &sig);
	log_info("signal %d: stopping", sig);
	ret = 0;
	link_stop(&link);
out_server:
	server_stop(&srv);
	rdma_thread_stop(&rdma);
	gs_engine_close(&e);
	log_info("stopped");
	return ret < 0 ? 1 : 0;

out_rdma:
	rdma_thread_stop(&rdma);
out_engine:
	gs_engine_close(&e);
	return 1;
}
