/*
 * The nginx link without socket or thread (link_local.h): the link's own
 * server, workers and ops, driven from the caller's thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link_internal.h"
#include "link_local.h"

/* As goblin-store sizes it from --memory and --ram-head (link_start()). */
static uint32_t max_pins(struct gs_engine *e)
{
	const struct gs_config *cfg = gs_engine_config(e);

	return link_pins_bound(cfg->ram_head ? cfg->memory / cfg->ram_head : 0);
}

int link_local_create(struct gs_engine *e, struct gs_io *io,
		      struct link_server **srvp)
{
	struct link_server *srv = link_server_new(e, max_pins(e));

	if (!srv)
		return -ENOMEM;
	srv->io = io;
	*srvp = srv;
	return 0;
}

int link_local_attach(struct link_server *srv, struct ring_hello *h,
		      int *ring_fd)
{
	struct link_conn *c = link_conn_new(srv, -1);
	int ret;

	if (!c)
		return -ENOMEM;
	c->pid = (pid_t)h->pid;
	c->uid = geteuid();
	ret = link_conn_setup(c, h);
	if (ret) {
		link_conn_kill(c, NULL);
		link_conn_free(c);
		return ret;
	}
	*ring_fd = c->ring.fd;
	c->ring.fd = -1;
	link_conn_attached(c);
	return 0;
}

unsigned link_local_run(struct link_server *srv)
{
	unsigned live = 0;
	struct list *p;

	for (p = srv->conns.next; p != &srv->conns; p = p->next) {
		struct link_conn *c = list_entry(p, struct link_conn, link);

		if (!c->dead)
			link_drain_sq(c);
	}
	do
		link_run_ready(srv);
	while (gs_io_run(srv->io, false) > 0);
	link_end_round(srv);
	for (p = srv->conns.next; p != &srv->conns; p = p->next)
		live += !list_entry(p, struct link_conn, link)->dead;
	return live;
}

void link_local_drop(struct link_server *srv)
{
	link_drop_all(srv);
}

void link_local_destroy(struct link_server **srvp)
{
	if (!*srvp)
		return;
	link_drop_all(*srvp);
	link_server_free(*srvp);
	*srvp = NULL;
}

struct stat_query {
	const char *name;
	uint64_t value;
};

static void stat_match(void *arg, const char *name, const char *value,
		       const char *desc)
{
	struct stat_query *q = arg;

	(void)desc;
	if (!strcmp(name, q->name))
		q->value = strtoull(value, NULL, 10);
}

uint64_t link_local_stat(const struct link_server *srv, const char *name)
{
	struct stat_query q = { .name = name, .value = UINT64_MAX };
	struct stats_sink sink = { .emit = stat_match, .arg = &q };
	struct stats_snapshot snap = { 0 };

	memcpy(snap.link, srv->st, sizeof(snap.link));
	stats_emit(STATS_LINK, &snap, &sink);
	return q.value;
}
