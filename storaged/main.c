/*
 * goblin-store: parse options, open the engine, start the memcache front
 * (and the nginx link, and the RDMA endpoint), run until SIGINT or
 * SIGTERM, then stop cleanly.
 */
#include <errno.h>
#include <numa.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "goblin.h"
#include "options.h"
#include "link.h"
#include "rdma_thread.h"
#include "server.h"

int main(int argc, char **argv)
{
	struct options opt;
	struct gs_engine *e = NULL;
	struct server srv = { 0 };
	struct rdma_thread *rdma = NULL;
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
	if (*opt.rdma) {
		ret = rdma_thread_start(e, opt.rdma, opt.rdma_transport, &rdma,
					err, sizeof(err));
		if (ret < 0) {
			fprintf(stderr, "goblin-store: %s\n", err);
			goto out_engine;
		}
	}
	ret = server_start(&srv, e, &opt, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "goblin-store: %s\n", err);
		goto out_rdma;
	}
	if (!opt.no_http) {
		struct link_conf rc = {
			.socket = opt.socket, .socket_user = opt.socket_user,
			.socket_group = opt.socket_group,
		};

		ret = link_start(e, &rc, err, sizeof(err));
		if (ret < 0) {
			fprintf(stderr, "goblin-store: %s\n", err);
			goto out_server;
		}
	}
	log_info("goblin-store %s ready: memcache on %s:%u, %u serving thread(s), socket %s",
		 GOBLIN_VERSION, opt.listen, (unsigned)opt.memcache_port,
		 (unsigned)opt.cores, opt.no_http ? "off (--no-http)" : opt.socket);

	sigwait(&sigs, &sig);
	log_info("signal %d: stopping", sig);
	ret = 0;
	if (!opt.no_http)
		link_stop();
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
