/*
 * goblin-store: parse options, open the engine, start the fronts, run
 * until SIGINT or SIGTERM (SIGHUP reopens the log), then stop them in
 * reverse order.
 *
 * Every front starts and stops the same way: X_start(&x, &opt, e, err,
 * errlen) reads its own options (a front they leave off starts nothing
 * and leaves x NULL), returns 0 or -errno with a reason in <err>;
 * X_stop(&x) stops it, frees it and clears x (nothing on NULL).  In
 * order: the RDMA endpoint (rdma/rdma_thread.h), the memcache server
 * (mc/server.h), the nginx link (link/link.h).  The process around them
 * (log, --user, systemd) is process.h's.
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
#include "process.h"
#include "rdma_thread.h"
#include "server.h"
#include "version.h"

/* The link's STATS replies read what `stats` does (link_snapshot_fn). */
static void server_snapshot(void *srv, struct stats_snapshot *s)
{
	server_stats_snapshot(srv, s);
}

/* Opens the engine into *<e>, as --user when root was given one: 0, or
 * the exit status after printing why not. */
static int open_engine(struct gs_engine **e, struct options *opt,
		       const struct process_user *user)
{
	char err[512];
	int ret;

	ret = process_as_user(opt, user, true, err, sizeof(err));
	if (!ret) {
		ret = gs_engine_open(e, &opt->cfg, err, sizeof(err));
		if (ret < 0)
			options_word_error(err, sizeof(err));
		if (process_as_user(opt, user, false, err, sizeof(err)) &&
		    ret >= 0) {
			gs_engine_close(e);
			ret = -EPERM;
		}
	}
	if (ret < 0) {
		fprintf(stderr, "goblin-store: %s\n", err);
		return ret == -EINVAL ? 2 : 1;
	}
	return 0;
}

/* Waits for SIGINT or SIGTERM among <sigs>, reopening the log on each
 * SIGHUP meanwhile. */
static void serve_until_stopped(const struct options *opt,
				const sigset_t *sigs)
{
	int sig;

	for (;;) {
		sigwait(sigs, &sig);
		if (sig != SIGHUP)
			break;
		process_log_reopen(opt);
	}
	log_info("signal %d: stopping", sig);
	process_notify("STOPPING=1");
}

int main(int argc, char **argv)
{
	struct options opt;
	struct process_user user;
	struct gs_engine *e = NULL;
	struct rdma_thread *rdma = NULL;
	struct server *srv = NULL;
	struct link_server *link = NULL;
	char err[512];
	sigset_t sigs;
	int ret;

	/* first: a SIGHUP (a reload) while starting must not kill it */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	ret = options_parse(&opt, argc, argv);
	if (ret)
		return ret == 1 ? 0 : 2;
	if (process_log_open(&opt, err, sizeof(err)) ||
	    process_user_find(&opt, &user, err, sizeof(err))) {
		fprintf(stderr, "goblin-store: %s\n", err);
		return 2;
	}

	/* before the pools are opened: nothing to undo */
	if (*opt.rdma && !strcmp(opt.rdma_transport, "verbs") &&
	    rdma_thread_verbs_check(err, sizeof(err))) {
		fprintf(stderr, "goblin-store: %s\n", err);
		return 1;
	}
	ret = open_engine(&e, &opt, &user);
	if (ret)
		return ret;
	ret = -1;
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
	ret = process_user_drop(&opt, &user, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "goblin-store: %s\n", err);
		goto out_link;
	}
	log_info("goblin-store %s ready: memcache on %s:%u, %u serving thread(s), socket %s",
		 GOBLIN_VERSION, opt.listen, (unsigned)opt.memcache_port,
		 (unsigned)opt.cores, opt.no_http ? "off (--no-http)" : opt.socket);
	process_notify("READY=1");

	serve_until_stopped(&opt, &sigs);
	ret = 0;
out_link:
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
