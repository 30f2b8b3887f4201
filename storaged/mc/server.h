/*
 * The memcache front: serving threads (one epoll loop and one gs_io each,
 * one shared listener) and their connections.  A connection belongs to
 * one thread for its whole life.
 *
 *   server.c        the threads, the listener, accepting, timeouts,
 *                   running a connection and closing it; start and stop
 *   proto_text.c    the text protocol: command lines, the classic
 *                   commands, the input state machine
 *   proto_meta.c    the meta commands (mg, ms, md, ma, me)
 *   proto_stats.c   the stats commands
 *   proto_dump.c    listing the keys: lru_crawler metadump, stats
 *                   cachedump, streamed a batch at a time
 *   proto_auth.c    ASCII authentication (--auth-file): the file, the
 *                   set that authenticates, the refusals before it
 *   proto_store.c   what the commands share: storing a value, the touch,
 *                   the error replies
 *   server_stats.c  the front's counters and the engine's for `stats`,
 *                   `stats reset`, `stats conns`
 *   conn_output.c   a connection's output queue: replies, values streamed
 *   conn_input.c    a connection's read buffer
 *   conn.c          a connection's primitives: its gs_io, its events,
 *                   scheduling, reading its socket, freeing it
 *   mc_items.c      memcache item semantics over the engine (mc_items.h)
 *   proto_parse.c   the command line parser, pure (proto_parse.h)
 *
 * Who calls whom (t/check-front-calls checks it against the objects; no
 * cycles):
 *
 *   server        ->  conn conn_output proto_auth proto_store proto_text
 *   proto_text    ->  conn conn_input conn_output mc_items proto_auth proto_dump proto_meta proto_parse proto_stats proto_store
 *   proto_auth    ->  conn_output
 *   proto_meta    ->  conn conn_output mc_items proto_parse proto_store
 *   proto_stats   ->  conn_output proto_dump server_stats
 *   proto_dump    ->  conn_output
 *   proto_store   ->  conn conn_output
 *   server_stats  ->  conn_output
 *   conn_output   ->  conn
 *   conn_input    ->  conn
 *   conn          ->
 *   mc_items      ->
 *   proto_parse   ->
 *
 * The way up goes through pointers, as the engine's callbacks do: a
 * store's completion (store_done) and an ms's reply (the meta_reply an ms
 * gives start_store) are called back, never named from below.
 */
#ifndef GOBLIN_SERVER_H
#define GOBLIN_SERVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "goblin.h"
#include "list.h"
#include "loop.h"
#include "mc_items.h"
#include "options.h"
#include "proto_parse.h"
#include "stats.h"

#define SRV_ADD(srv, name, n) \
	__atomic_fetch_add(&(srv)->st.name, (n), __ATOMIC_RELAXED)

struct worker;
struct conn;
struct mc_auth;

/* An --auth-file line's bytes, at most (memcached's MAX_ENTRY_LEN). */
#define AUTH_MAX_ENTRY	256

/* Objects one connection may hold pinned in its output queue: a 1,024-key
 * get looks keys up in batches, the next ones as earlier values are sent. */
#define CONN_PINS_MAX	16
/* A connection's read buffer: its size, and four times it after a long
 * get line until the buffer is empty again. */
#define CONN_RBUF_MIN	16384
/* Replies one connection may have queued before it stops taking commands. */
#define CONN_OUT_ITEMS_MAX	64
#define CONN_OUT_BYTES_MAX	(4u << 20)
/* Retrieval replies one connection times at once (first-byte histogram). */
#define CONN_MARKS		32

struct server {
	struct gs_engine *e;
	const struct options *opt;
	struct worker *workers;
	unsigned nworkers;
	int lfd[OPTIONS_LISTEN_MAX];	/* the memcache listeners, shared: */
	char laddr[OPTIONS_LISTEN_MAX][64];	/* one a --listen address, */
	unsigned nlfd;			/* "tcp:<ip>:<port>" */
	time_t started;
	struct server_stats st;
	struct first_byte_hist first_byte;	/* stats_first_byte_*() */
	unsigned listen_off;		/* threads whose listener is out */
	uint64_t listen_off_since;	/* when the first went out, us */
	pthread_mutex_t reset_lock;	/* guards base */
	struct gs_stats base;		/* engine counters at the last stats reset */
	struct mc_auth *auth;		/* --auth-file's users, NULL: none */
};

/* A serving thread (server.c's; server_stats.c lists its connections). */
struct worker {
	struct server *srv;
	unsigned id;
	pthread_t tid;
	struct loop loop;		/* its epoll set, stop fd and gs_io */
	struct list sched;		/* connections to run this round */
	struct list dead;		/* closed, freed at the round's end */
	struct list conns;		/* guarded by lock (stats conns reads it) */
	pthread_mutex_t lock;
	bool inited, started;
	bool accept_off;		/* listener out of the loop (no fds) */
	uint64_t accept_retry;		/* when to take it back */
	uint64_t next_check;		/* earliest timeout deadline, 0: none */
};

/*
 * server.c: opens the memcache listener (none with --memcache-port 0) and
 * starts --cores serving threads over <e>; <opt> must outlive the server.
 * Returns 0 with the server in *<srvp>, or -errno with a reason in <err>
 * (nothing left open).
 */
int server_start(struct server **srvp, const struct options *opt,
		 struct gs_engine *e, char *err, size_t errlen);
/* Stops every thread, closes every connection, frees the server and
 * clears *<srvp>.  Safe on NULL. */
void server_stop(struct server **srvp);

struct out;

enum conn_state {
	CONN_CMD,		/* reading command lines */
	CONN_VALUE,		/* reading a value into a writer */
	CONN_VALUE_END,		/* expecting the "\r\n" after a value */
	CONN_SWALLOW,		/* discarding a refused value */
	CONN_AUTH,		/* reading an authenticating set's token */
	CONN_GET,		/* sending a get's values, CONN_PINS_MAX at a time */
	CONN_DUMP,		/* listing keys, a batch each time there is room */
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
	/* an ms: its reply, HD/NS/EX/NF with <echo> (proto_meta.c's); NULL
	 * for a classic store */
	void (*meta_reply)(struct conn *c, int res, uint64_t cas);
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

/* A key listing (proto_dump.c) under way. */
struct pending_dump {
	uint64_t pos;			/* gs_walk()'s */
	uint64_t limit, listed;		/* cachedump's limit, 0: none */
	bool meta;			/* metadump lines, else cachedump's */
	bool all;			/* class 1 asked for: every object */
};

/* What the memcache protocol keeps on a connection between calls
 * (the protocol's files'; conn.c and server.c read state to pick the
 * events to wait for). */
struct mc_session {
	enum conn_state state;
	bool authenticated;		/* by proto_auth.c's set (--auth-file) */
	uint32_t auth_len, auth_got;	/* CONN_AUTH: the token's bytes, "\r\n"
					 * included, and those read */
	char auth_buf[AUTH_MAX_ENTRY + 2];
	bool want_input;		/* proto_process() stopped for more bytes */
	uint64_t swallow;		/* bytes of a refused value still to drop */
	struct pending_store store;
	struct pending_get get;
	struct pending_dump dump;
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
	unsigned listener;		/* which of srv->lfd took it */
	struct list sched_link;		/* on the worker's sched or dead list */
	struct list all_link;		/* on the worker's conns, under its lock */
	char *rbuf;
	size_t rcap, rstart, rend;
	struct list out;		/* struct out, in reply order */
	unsigned out_items;
	unsigned out_objs;		/* values queued: pins held */
	size_t out_bytes;
	uint64_t queued, sent;		/* reply bytes ever queued, sent */
	struct reply_mark {		/* a retrieval's reply: where its */
		uint64_t at, us;	/* first byte is queued, since when */
	} marks[CONN_MARKS];
	unsigned mark0, nmarks;		/* the oldest, how many */
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

/* conn.c: the gs_io of <c>'s thread. */
struct gs_io *conn_io(struct conn *c);
/* Waits for input when <c> can take it, and for output when <want_out>. */
void conn_set_events(struct conn *c, bool want_out);
/* Marks <c> to be looked at again from its thread's loop. */
void conn_schedule(struct conn *c);
/* Stops or resumes reading from <c>'s socket (writer backpressure). */
void conn_pause_input(struct conn *c, bool pause);
/* Reads straight into <p>: bytes read, 0 when it would block (or after
 * the peer's FIN, which sets eof), -1 when the peer is gone. */
ssize_t conn_recv(struct conn *c, void *p, size_t len);
/* Frees a closed connection (server.c at the round's end, or the engine
 * callback a closed connection still waited for). */
void conn_release(struct conn *c);

/* conn_output.c: queues reply bytes. */
int conn_reply(struct conn *c, const char *s, size_t len);
int conn_replyf(struct conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Queues <hdr> (a VALUE or VA line), the bytes [0, size) of the pinned
 * <obj> and "\r\n", all or nothing; takes over the pin either way.  On
 * -ENOMEM nothing is queued and the connection is cut. */
int conn_reply_value(struct conn *c, const char *hdr, size_t len,
		     struct gs_obj *obj);
/* A retrieval command starts: its reply's first byte, the next queued, is
 * timed into the first-byte histogram when it is written (not when <c>
 * times CONN_MARKS replies already: deeper pipelines go untimed). */
void conn_reply_mark(struct conn *c);
/* The command just run queued nothing (an mg with q that missed): forgets
 * its mark (when conn_reply_mark() timed none, the last mark's command
 * queued something: it is kept). */
void conn_reply_unmark_empty(struct conn *c);
/* Sends what can go now.  Returns 1 when the socket is full, 0 when the
 * queue is drained or waits on a stream, -1 when the connection must
 * go. */
int conn_send(struct conn *c);
/* Frees everything queued (the connection is closing). */
void conn_out_drop(struct conn *c);

/* conn_input.c: reads what the socket has into rbuf, first making room
 * (moving what is left to the front, growing up to twice a get line);
 * bytes read, 0 when it would block, -1 when the peer is gone or rbuf
 * can't grow. */
ssize_t conn_fill(struct conn *c);

/* proto_auth.c: reads the users of the --auth-file <path> into *<ap>
 * (warns when anyone may read it).  Returns 0, or -errno with the reason
 * in <err>: missing, unreadable, empty, a line not user:password. */
int auth_load(struct mc_auth **ap, const char *path, char *err, size_t errlen);
/* Frees what auth_load() read and clears *<ap>.  Safe on NULL. */
void auth_free(struct mc_auth **ap);

/* proto_text.c: runs as many buffered commands as it can; returns false
 * when the connection must close. */
bool proto_process(struct conn *c);
/* proto_store.c: ends a pending store (connection closing). */
void proto_abort(struct conn *c);
/* proto_stats.c: `stats <arg>`. */
void proto_stats(struct conn *c, const char *arg, size_t len);

/* server_stats.c: the values of every table `stats` lists, now. */
void server_stats_snapshot(struct server *srv, struct stats_snapshot *s);
/* stats reset: zeroes the counters (not gauges such as curr_connections). */
void server_stats_reset(struct server *srv);
/* stats settings, memcached's part: its names and units (maxbytes,
 * maxconns, tcpport, num_threads, item_size_max, flush_enabled, ...). */
void server_stats_settings(struct conn *c);
/* stats conns: one block per open connection and the listener. */
void server_stats_conns(struct conn *c);

#endif
