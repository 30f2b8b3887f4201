/*
 * The memcache front's side of `stats` and `stats reset`: its counters and
 * the engine's, read into a snapshot for stats_emit() (stats.h).
 */
#include <pthread.h>

#include "server.h"

void server_stats_snapshot(struct server *srv, struct stats_snapshot *s)
{
	*s = (struct stats_snapshot){ 0 };
	stats_process(s, srv->started);
	s->threads = srv->nworkers;
#define SERVER_STAT_LOAD(name, desc) \
	s->server.name = __atomic_load_n(&srv->st.name, __ATOMIC_RELAXED);
	SERVER_STATS(SERVER_STAT_LOAD)
#undef SERVER_STAT_LOAD
	s->accepting_conns = !__atomic_load_n(&srv->listen_off, __ATOMIC_RELAXED);
	gs_stats(srv->e, &s->engine);
	gs_numa_stats(srv->e, &s->numa);
	pthread_mutex_lock(&srv->reset_lock);
	s->engine_base = srv->base;
	pthread_mutex_unlock(&srv->reset_lock);
	s->limit_maxbytes = srv->opt->cfg.memory;
	s->max_connections = srv->opt->max_conns;
	s->index_bytes_per_object = s->engine.curr_items ?
		s->engine.index_bytes / s->engine.curr_items : 0;
	s->ssd_dirs = srv->opt->cfg.ssd_dir.n;
	s->hdd_dirs = srv->opt->cfg.hdd_dir.n;
	s->total_malloced = s->engine.ram_used_bytes;
	s->rdma_on = stats_rdma_read(&s->rdma);
}

void server_stats_reset(struct server *srv)
{
	struct gs_stats st;

/* curr_connections is a gauge: connections still open stay counted */
#define SERVER_STAT_RESET(name, desc)					\
	if (&srv->st.name != &srv->st.curr_connections)			\
		__atomic_store_n(&srv->st.name, 0, __ATOMIC_RELAXED);
	SERVER_STATS(SERVER_STAT_RESET)
#undef SERVER_STAT_RESET
	gs_stats(srv->e, &st);
	pthread_mutex_lock(&srv->reset_lock);
	srv->base = st;
	pthread_mutex_unlock(&srv->reset_lock);
}
