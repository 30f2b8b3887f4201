/*
 * The memcache front's side of `stats`, `stats reset` and `stats conns`:
 * its counters and the engine's, read into a snapshot for stats_emit()
 * (stats.h), and the serving threads' connections listed.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "log.h"
#include "server.h"

void server_stats_snapshot(struct server *srv, struct stats_snapshot *s)
{
	*s = (struct stats_snapshot){ 0 };
	stats_process(s, srv->started);
	s->threads = srv->nworkers;
	snprintf(s->store_id, sizeof(s->store_id), "%016llx",
		 (unsigned long long)gs_engine_identity(srv->e));
#define SERVER_STAT_LOAD(name, desc) \
	s->server.name = __atomic_load_n(&srv->st.name, __ATOMIC_RELAXED);
	SERVER_STATS(SERVER_STAT_LOAD)
#undef SERVER_STAT_LOAD
	stats_first_byte_load(&srv->first_byte, &s->first_byte);
	s->accepting_conns = !__atomic_load_n(&srv->listen_off, __ATOMIC_RELAXED);
	gs_stats(srv->e, &s->engine);
	gs_numa_stats(srv->e, &s->numa);
	pthread_mutex_lock(&srv->reset_lock);
	s->engine_base = srv->base;
	pthread_mutex_unlock(&srv->reset_lock);
	s->limit_maxbytes = s->engine.ram_region_bytes +
		s->engine.ssd_pool_bytes + s->engine.hdd_pool_bytes;
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
	stats_first_byte_reset(&srv->first_byte);
	gs_stats(srv->e, &st);
	pthread_mutex_lock(&srv->reset_lock);
	srv->base = st;
	pthread_mutex_unlock(&srv->reset_lock);
}

void server_stats_settings(struct conn *c)
{
	const struct options *o = c->srv->opt;
	struct gs_stats st;

	gs_stats(c->srv->e, &st);
	/* memcached's names and units; maxbytes is limit_maxbytes' scope */
	conn_replyf(c, "STAT maxbytes %llu\r\n", (unsigned long long)
		    (st.ram_region_bytes + st.ssd_pool_bytes + st.hdd_pool_bytes));
	conn_replyf(c, "STAT maxconns %llu\r\n", (unsigned long long)o->max_conns);
	conn_replyf(c, "STAT tcpport %llu\r\n", (unsigned long long)o->memcache_port);
	conn_replyf(c, "STAT udpport 0\r\n");
	conn_replyf(c, "STAT inter %s\r\n", o->listen);
	conn_replyf(c, "STAT verbosity %d\r\n", log_level - LOG_INFO);
	conn_replyf(c, "STAT evictions %s\r\n", o->cfg.no_evict ? "off" : "on");
	conn_replyf(c, "STAT num_threads %llu\r\n", (unsigned long long)o->cores);
	conn_replyf(c, "STAT cas_enabled yes\r\n");
	conn_replyf(c, "STAT binding_protocol ascii\r\n");
	conn_replyf(c, "STAT auth_enabled_sasl no\r\n");
	conn_replyf(c, "STAT auth_enabled_ascii %s\r\n",
		    *o->auth_file ? o->auth_file : "no");
	conn_replyf(c, "STAT item_size_max %llu\r\n",
		    (unsigned long long)o->cfg.max_object);
	conn_replyf(c, "STAT flush_enabled %s\r\n", o->disable_flush ? "no" : "yes");
	conn_replyf(c, "STAT dump_enabled yes\r\n");
	conn_replyf(c, "STAT idle_timeout %llu\r\n",
		    (unsigned long long)(o->idle_timeout / 1000));
}

void server_stats_conns(struct conn *c)
{
	struct server *srv = c->srv;
	time_t now = time(NULL);

	for (unsigned i = 0; i < srv->nlfd; i++) {
		conn_replyf(c, "STAT %d:addr %s\r\n", srv->lfd[i], srv->laddr[i]);
		conn_replyf(c, "STAT %d:state conn_listening\r\n", srv->lfd[i]);
	}
	for (unsigned i = 0; i < srv->nworkers; i++) {
		struct worker *w = &srv->workers[i];

		pthread_mutex_lock(&w->lock);
		for (struct list *p = w->conns.next; p != &w->conns; p = p->next) {
			struct conn *o = list_entry(p, struct conn, all_link);
			time_t last = __atomic_load_n(&o->last_cmd, __ATOMIC_RELAXED);

			conn_replyf(c, "STAT %d:addr %s\r\n", o->fd, o->addr);
			conn_replyf(c, "STAT %d:listen_addr %s\r\n", o->fd,
				    srv->laddr[o->listener]);
			conn_replyf(c, "STAT %d:state %s\r\n", o->fd, o == c ?
				    "conn_parse_cmd" :
				    __atomic_load_n(&o->stat_state, __ATOMIC_RELAXED));
			conn_replyf(c, "STAT %d:secs_since_last_cmd %ld\r\n",
				    o->fd, (long)(now > last ? now - last : 0));
		}
		pthread_mutex_unlock(&w->lock);
	}
}
