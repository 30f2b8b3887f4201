/*
 * The goblin-rdma thread (rdma_thread.h): the RDMA endpoint inside the
 * daemon.  Everything the protocol server touches (its gs_io, the engine
 * source, the server) is made, stepped and freed on this one thread.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "goblin.h"
#include "log.h"
#include "options.h"
#include "rdma_thread.h"
#include "stats.h"

struct rdma_thread {
	struct gs_engine *e;
	const struct rdma_transport *tp;
	const char *addr, *tname;	/* as given, for the log */
	char host[INET6_ADDRSTRLEN + 1];
	uint16_t port;
	int stopfd;			/* wakes rdma_server_wait() */
	bool stop;			/* atomic: leave the loop */
	pthread_t th;
	pthread_mutex_t lock;		/* guards state */
	pthread_cond_t cond;
	int state;			/* 0 starting, 1 serving, <0 -errno */
	char *err;			/* rdma_thread_start's, while starting */
	size_t errlen;
};

/* The counters as of the last step, for `stats goblin` (stats.c). */
static void publish(const struct rdma_server *s, bool on)
{
	struct rdma_server_stats st = { 0 };

	if (s)
		rdma_server_stats(s, &st);
	stats_rdma_publish(on ? &st : NULL);
}

/* Tells rdma_thread_start() how the start went: 1, or -errno. */
static void started(struct rdma_thread *t, int state)
{
	pthread_mutex_lock(&t->lock);
	t->state = state;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

/* Steps <s> until told to stop or a step fails; 0 or -errno. */
static int serve(struct rdma_thread *t, struct rdma_server *s)
{
	int r;

	for (;;) {
		r = rdma_server_step(s);
		if (r < 0)
			return r;
		if (__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE))
			return 0;
		if (r > 0) {
			publish(s, true);
			continue;
		}
		r = rdma_server_wait(s, -1);
		if (r < 0)
			return r;
	}
}

static void *rdma_main(void *arg)
{
	struct rdma_thread *t = arg;
	struct rdma_server *s = NULL;
	struct rdma_engine *es = NULL;
	struct gs_io *io = NULL;
	const char *what = "gs_io_create";
	void *region;
	size_t len;
	uint16_t bound;
	int r;

	r = gs_io_create(t->e, &io);
	if (r)
		goto out_fail;
	what = "the engine source";
	r = rdma_engine_create(t->e, io, &es);
	if (r)
		goto out_io;
	what = "listen or register the RAM region";
	region = rdma_engine_region(es, &len);
	r = rdma_server_create(t->tp, t->host, t->port, &bound,
			       &rdma_engine_ops, es, &region, &len, 1,
			       &s);
	if (r)
		goto out_source;
	rdma_server_wake_fd(s, t->stopfd);
	publish(s, true);
	started(t, 1);

	r = serve(t, s);
	if (r < 0)
		log_err("rdma: the endpoint on %s stopped: %s", t->addr,
			strerror(-r));
	publish(s, false);
	rdma_server_destroy(&s);
	rdma_engine_destroy(&es);
	gs_io_destroy(&io);
	return NULL;

out_source:
	rdma_engine_destroy(&es);
out_io:
	gs_io_destroy(&io);
out_fail:
	snprintf(t->err, t->errlen, "--rdma %s over %s: %s: %s%s", t->addr,
		 t->tname, what, strerror(-r),
		 r == -ENODEV && t->tp == &rdma_verbs ?
		 " (not an address of an RDMA device's interface)" : "");
	started(t, r);
	return NULL;
}

int rdma_thread_verbs_check(char *err, size_t errlen)
{
	struct ibv_device **list;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (list)
		ibv_free_device_list(list);
	if (list && n > 0)
		return 0;
	snprintf(err, errlen, "--rdma-transport verbs: no RDMA device (ibv_get_device_list: %s); "
		 "--rdma-transport tcp is the emulated transport (libfabric's tcp provider, no RDMA hardware)",
		 list ? "none found" : strerror(errno));
	return -ENODEV;
}

static void thread_free(struct rdma_thread *t)
{
	close(t->stopfd);
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

int rdma_thread_start(struct rdma_thread **tp, const struct options *opt,
		      struct gs_engine *e, char *err, size_t errlen)
{
	const char *addr = opt->rdma, *transport = opt->rdma_transport;
	struct rdma_thread *t;
	int r;

	*tp = NULL;
	if (!*addr)
		return 0;
	if (!strcmp(transport, "verbs")) {
		r = rdma_thread_verbs_check(err, errlen);
		if (r)
			return r;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, errlen, "--rdma: out of memory");
		return -ENOMEM;
	}
	t->e = e;
	t->addr = addr;
	t->tname = transport;
	t->tp = strcmp(transport, "verbs") ? &rdma_fabric : &rdma_verbs;
	t->err = err;
	t->errlen = errlen;
	r = options_rdma_addr(addr, t->host, sizeof(t->host), &t->port, err,
			      errlen);
	if (r) {
		free(t);
		return r;
	}
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	t->stopfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (t->stopfd < 0) {
		r = -errno;
		snprintf(err, errlen, "--rdma: eventfd: %s", strerror(-r));
		goto out_free;
	}
	r = -pthread_create(&t->th, NULL, rdma_main, t);
	if (r) {
		snprintf(err, errlen, "--rdma: thread: %s", strerror(-r));
		goto out_free;
	}
	pthread_setname_np(t->th, "goblin-rdma");
	pthread_mutex_lock(&t->lock);
	while (!t->state)
		pthread_cond_wait(&t->cond, &t->lock);
	r = t->state < 0 ? t->state : 0;
	pthread_mutex_unlock(&t->lock);
	t->err = NULL;
	if (r) {
		pthread_join(t->th, NULL);
		goto out_free;
	}
	log_info("rdma: listening on %s over %s", addr,
		 t->tp == &rdma_verbs ? "verbs" :
		 "tcp (emulated: libfabric's tcp provider)");
	*tp = t;
	return 0;

out_free:
	thread_free(t);
	return r;
}

void rdma_thread_stop(struct rdma_thread **tp)
{
	struct rdma_thread *t = *tp;
	uint64_t one = 1;

	if (!t)
		return;
	__atomic_store_n(&t->stop, true, __ATOMIC_RELEASE);
	if (write(t->stopfd, &one, sizeof(one)) != sizeof(one))
		log_err("rdma: stop: %s", strerror(errno));
	pthread_join(t->th, NULL);
	thread_free(t);
	*tp = NULL;
}
