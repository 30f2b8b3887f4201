/*
 * The memcache front: serving threads (one epoll loop and one gs_io each,
 * one shared listener) and their connections.  server.c owns sockets and
 * the output queue; proto_text.c turns input lines into engine calls and
 * replies.  A connection belongs to one thread for its whole life.
 */
#ifndef GOBLIN_SERVER_H
#define GOBLIN_SERVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "goblin.h"
#include "list.h"
#include "mc_items.h"
#include "options.h"
#include "proto_parse.h"
#include "stats.h"

#define SRV_ADD(srv, name, n) \
	__atomic_fetch_add(&(srv)->st.name, (n), __ATOMIC_RELAXED)

struct worker;
struct conn;

/* Objects one connection may hold pinned in its output queue: a 1,024-key
 * get looks keys up in batches, the next ones as earlier values are sent. */
#define CONN_PINS_MAX	16
/* A connection's read buffer: its size, and four times it after a long
 * get line until the buffer is empty again. */
#define CONN_RBUF_MIN	16384
/* Replies one connection may have queued before it stops taking commands. */
#define CONN_OUT_ITEMS_MAX	64
#define CONN_OUT_BYTES_MAX	(4u << 20)

struct server {
	struct gs_engine *e;
	const struct options *opt;
	struct worker *workers;
	unsigned nworkers;
	int lfd;			/* the memcache listener, shared */
	time_t started;
	struct server_stats st;
	unsigned listen_off;		/* threads whose listener is out */
	uint64_t listen_off_since;	/* when the first went out, us */
	pthread_mutex_t reset_lock;	/* guards base */
	struct gs_stats base;		/* engine counters at the last stats reset */
};

/* Opens the listeners and starts --cores threads.  0 or -errno with a
 * reason in <err>. */
int server_start(struct server *srv, struct gs_engine *e,
		 const struct options *opt, char *err, size_t errlen);
/* Stops every thread, closes every connection. */
void server_stop(struct server *srv);

/* ---- what proto_text.c uses ---- */

struct out;

enum conn_state {
	CONN_CMD,		/* reading command lines */
	CONN_VALUE,		/* reading a value into a writer */
	CONN_VALUE_END,		/* expecting the "\r\n" after a value */
	CONN_SWALLOW,		/* discarding a refused value */
	CONN_GET,		/* sending a get's values, CONN_PINS_MAX at a time */
	CONN_WAIT,		/* an engine call will answer */
	CONN_CLOSING,		/* flush what is queued, then close */
};

/* A meta flag kept for the reply. */
struct meta_echo {
	char flag;
	char v[33];
};

struct pending_store {
	enum mc_op op;
	bool meta;		/* ms: reply HD/NS/EX/NF with <echo> */
	struct meta_echo echo[MC_META_MAX];
	unsigned necho;
	char key[GS_KEY_MAX];
	uint8_t klen;
	uint32_t flags;
	int64_t exptime;
	uint64_t cas;
	struct mc_arith arith;	/* ma: redone when its N create loses */
	bool noreply;
	bool bad_chunk;
	struct gs_writer *writer;	/* also append/prepend's */
	uint64_t len, got;
};

/* A get whose keys are looked up as earlier values go out. */
struct pending_get {
	unsigned next, nkeys;		/* in mc_session.keys, which point into rbuf:
					 * rbuf is not refilled in CONN_GET */
	const char *rest;		/* keys not yet in conn.keys (in rbuf) */
	size_t rest_len;
	bool with_cas, touch;
	int64_t exptime;		/* gat/gats: the engine's absolute form */
};

/* What the memcache protocol keeps on a connection between calls
 * (proto_text.c's; server.c reads state to pick the events to wait for). */
struct mc_session {
	enum conn_state state;
	bool want_input;		/* proto_process() stopped for more bytes */
	uint64_t swallow;		/* bytes of a refused value still to drop */
	struct pending_store store;
	struct pending_get get;
	struct mc_key keys[MC_KEYS_MAX];
};

/* A memcache connection (server.c's): socket, buffers, output queue. */
struct conn {
	struct worker *w;
	struct server *srv;
	int fd;
	uint32_t events;
	bool dead, input_paused;
	bool eof;			/* the peer sent FIN: answer, then close */
	bool broken;			/* a reply could not be queued: cut */
	uint64_t last_read, last_write;	/* monotonic ms of the last progress */
	time_t last_cmd;		/* stats conns (atomic) */
	const char *stat_state;		/* stats conns (atomic) */
	char addr[64];			/* the peer, "tcp:<ip>:<port>" */
	struct list sched_link;		/* on the worker's sched or dead list */
	struct list all_link;		/* on the worker's conns, under its lock */
	char *rbuf;
	size_t rcap, rstart, rend;
	struct list out;		/* struct out, in reply order */
	unsigned out_items;
	unsigned out_objs;		/* values queued: pins held */
	size_t out_bytes;
	struct mc_session mc;
};

static inline bool conn_out_empty(const struct conn *c)
{
	return list_empty(&c->out);
}

/* Whether <c>'s output queue is full: no more commands run (nor reading
 * from the socket) until it drains. */
static inline bool conn_out_full(const struct conn *c)
{
	return c->out_items >= CONN_OUT_ITEMS_MAX ||
	       c->out_bytes >= CONN_OUT_BYTES_MAX ||
	       c->out_objs >= CONN_PINS_MAX;
}

struct gs_io *conn_io(struct conn *c);
/* Queues reply bytes. */
int conn_reply(struct conn *c, const char *s, size_t len);
int conn_replyf(struct conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Queues <hdr> (a VALUE or VA line), the bytes [0, size) of the pinned
 * <obj> and "\r\n", all or nothing; takes over the pin either way.  On
 * -ENOMEM nothing is queued and the connection is cut. */
int conn_reply_value(struct conn *c, const char *hdr, size_t len,
		     struct gs_obj *obj);
/* conn_output.c: sends what can go now.  Returns 1 when the socket is
 * full, 0 when the queue is drained or waits on a stream, -1 when the
 * connection must go. */
int conn_send(struct conn *c);
/* Frees everything queued (the connection is closing). */
void conn_out_drop(struct conn *c);
/* conn_input.c: reads what the socket has into rbuf, first making room
 * (moving what is left to the front, growing up to twice a get line);
 * bytes read, 0 when it would block, -1 when the peer is gone or rbuf
 * can't grow. */
ssize_t conn_fill(struct conn *c);
/* Reads straight into <p>; same returns as conn_fill(). */
ssize_t conn_recv(struct conn *c, void *p, size_t len);
/* Frees a closed connection (proto_text.c, after its last callback). */
void conn_release(struct conn *c);
/* Marks <c> to be looked at again from its thread's loop. */
void conn_schedule(struct conn *c);
/* Stops or resumes reading from <c>'s socket (writer backpressure). */
void conn_pause_input(struct conn *c, bool pause);

/* proto_text.c: runs as many buffered commands as it can; returns false
 * when the connection must close. */
bool proto_process(struct conn *c);
/* Ends a pending store (connection closing). */
void proto_abort(struct conn *c);
void proto_stats(struct conn *c, const char *arg, size_t len);
/* stats conns: one block per open connection and the listener. */
void server_stats_conns(struct conn *c);
/* The values of every table `stats` lists, now. */
void server_stats_snapshot(struct server *srv, struct stats_snapshot *s);
/* stats reset: zeroes the counters (not gauges such as curr_connections). */
void server_stats_reset(struct server *srv);

#endif
