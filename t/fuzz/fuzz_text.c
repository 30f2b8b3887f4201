/*
 * libFuzzer target: the daemon's whole memcache text protocol
 * (storaged/mc/proto_text.c: proto_process() and everything it calls) on a
 * RAM-only engine, with a fake socket and output in place of storaged/mc/conn.c,
 * conn_output.c and server.c (the read buffer is the real one,
 * storaged/mc/conn_input.c).
 * sources: storaged/mc/proto_text.c storaged/mc/proto_meta.c storaged/mc/proto_stats.c storaged/mc/proto_store.c storaged/mc/conn_input.c storaged/mc/server_stats.c storaged/stats.c storaged/mc/proto_parse.c storaged/mc/mc_items.c storaged/mc/proto_auth.c storaged/mc/proto_dump.c storaged/options.c storaged/options_check.c libgoblin
 *
 * The input is what one client sends.  Each input gets a fresh engine
 * (16K of heads in 4K blocks, so sets evict) and one connection; the
 * "socket" hands the input over in uneven pieces, sometimes says "would
 * block", and reports the peer gone at the end, as a client that sends and
 * closes.  Checks, besides ASan/UBSan and leaks:
 *   - every reply is framed: a line starting with a reply word memcached
 *     uses, "\r\n"-terminated; VALUE/VA lines followed by exactly their
 *     bytes and "\r\n";
 *   - a connection never stalls: waiting on the engine or paused only with
 *     I/O in flight, and each call either consumes input or changes state;
 *   - once the connection is closed no pin is left (stats "pins" is 0).
 * The fake connection queues replies straight into one buffer: the output
 * queue's limits (conn_output.c) are not exercised.
 *
 * FUZZ_OPEN (t/fuzz/fuzz.h) skips the checks of bugs found and not fixed;
 * FUZZ_TEXT_DUMP=1 prints the replies (build/fuzz/fuzz_text FILE).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "log.h"
#include "server.h"

static struct options opt;
static struct server srv;
static struct gs_io *io;

/* the client's bytes not yet read, and the replies so far */
static const char *in_p, *in_end;
static unsigned fills;
static char *out;
static size_t out_len, out_cap;

static const uint8_t *input;
static size_t input_size;

static void __attribute__((noreturn)) broken(const char *why)
{
	fprintf(stderr, "fuzz_text: %s; input \"%.*s\" (%zu bytes); output \"%.*s\"\n",
		why, input_size > 300 ? 300 : (int)input_size, (const char *)input,
		input_size, out_len > 300 ? 300 : (int)out_len, out ? out : "");
	abort();
}

#define EXPECT(cond) do { if (!(cond)) broken(#cond); } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char *args[] = { "goblin-store", NULL };

	(void)argc;
	(void)argv;
	optind = 0;
	if (options_parse(&opt, 1, args) != 0)
		abort();
	return 0;
}

/* ---- the fake connection (what conn.c and conn_output.c provide) ---- */

struct gs_io *conn_io(struct conn *c)
{
	(void)c;
	return io;
}

int conn_reply(struct conn *c, const char *s, size_t len)
{
	(void)c;
	if (!len)	/* an empty value's head may be NULL */
		return 0;
	if (out_len + len > out_cap) {
		out_cap = (out_len + len) * 2;
		out = realloc(out, out_cap);
		if (!out)
			abort();
	}
	memcpy(out + out_len, s, len);
	out_len += len;
	return 0;
}

int conn_replyf(struct conn *c, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(buf))
		n = sizeof(buf) - 1;
	return conn_reply(c, buf, n);
}

/* Queues the bytes of <obj> and unpins it: RAM-only with max_object =
 * ram_head, every byte is in the head. */
static void reply_bytes(struct conn *c, struct gs_obj *obj)
{
	const struct gs_meta *m = gs_obj_meta(obj);

	EXPECT(m->head_len == m->size);
	conn_reply(c, gs_obj_head(srv.e, obj, NULL), m->size);
	gs_obj_put(srv.e, &obj);
}

int conn_reply_value(struct conn *c, const char *hdr, size_t len,
		     struct gs_obj *obj)
{
	conn_reply(c, hdr, len);
	reply_bytes(c, obj);
	return conn_reply(c, "\r\n", 2);
}

/* the first-byte marks: only a retrieval that marked may unmark */
static unsigned marks;

void conn_reply_mark(struct conn *c)
{
	(void)c;
	marks++;
}

void conn_reply_unmark_empty(struct conn *c)
{
	(void)c;
	EXPECT(marks > 0);
}

/* the client half-closed: what it sent before gets its answers */
static ssize_t end_of_input(struct conn *c)
{
	c->eof = true;
	return 0;
}

/* Uneven pieces; every third call "would block"; -1 once all is read. */
static size_t piece(size_t want)
{
	size_t left = in_end - in_p;
	size_t n = 1 + ((in_p - (const char *)input) * 2654435761u >> 7) % 700;

	if (n > want)
		n = want;
	return n < left ? n : left;
}

ssize_t conn_recv(struct conn *c, void *p, size_t len)
{
	size_t n;

	if (in_p == in_end)
		return end_of_input(c);
	if (++fills % 3 == 0)
		return 0;
	n = piece(len);
	memcpy(p, in_p, n);
	in_p += n;
	return n;
}

void conn_release(struct conn *c)
{
	free(c->rbuf);
	free(c);
}

void conn_schedule(struct conn *c)
{
	(void)c;	/* run_conn() runs it again anyway */
}

void conn_pause_input(struct conn *c, bool pause)
{
	c->input_paused = pause;
}

/* ---- the checks ---- */

static const char *const reply_words[] = {
	"END", "STORED", "NOT_STORED", "EXISTS", "NOT_FOUND", "DELETED",
	"TOUCHED", "OK", "ERROR", "CLIENT_ERROR ", "SERVER_ERROR ", "VERSION ",
	"STAT ", "HD", "NS", "EX", "NF", "EN", "MN", "ME ", "RESET", NULL
};

/* The replies are a sequence of framed lines and values. */
static void check_output(void)
{
	size_t i = 0;

	while (i < out_len) {
		const char *line = out + i;
		const char *crlf = memmem(line, out_len - i, "\r\n", 2);
		size_t len, vlen = 0;
		unsigned long long size;
		bool word = false;

		EXPECT(crlf);
		len = crlf - line;
		EXPECT(!memchr(line, '\n', len));
		if (len > 0 && line[0] >= '0' && line[0] <= '9') {	/* incr */
			for (size_t k = 0; k < len; k++)
				EXPECT(line[k] >= '0' && line[k] <= '9');
			word = true;
		}
		for (unsigned k = 0; !word && reply_words[k]; k++) {
			size_t wl = strlen(reply_words[k]);

			word = len >= wl && !memcmp(line, reply_words[k], wl) &&
			       (len == wl || reply_words[k][wl - 1] == ' ' ||
				line[wl] == ' ');
		}
		if (!word && len > 6 && !memcmp(line, "VALUE ", 6)) {
			/* VALUE <key> <flags> <bytes> [<cas>] */
			char fmt_end;
			const char *p = memchr(line + 6, ' ', len - 6);

			EXPECT(p && p - line - 6 <= GS_KEY_MAX);
			EXPECT(sscanf(p, " %*u %llu%c", &size, &fmt_end) == 2 &&
			       (fmt_end == '\r' || fmt_end == ' '));
			vlen = size + 2;
			word = true;
		} else if (!word && len > 3 && !memcmp(line, "VA ", 3)) {
			EXPECT(sscanf(line + 3, "%llu", &size) == 1);
			vlen = size + 2;
			word = true;
		}
		if (!word)
			broken("reply line with no reply word");
		i += len + 2;
		if (vlen) {
			EXPECT(vlen <= out_len - i);
			EXPECT(!memcmp(out + i + vlen - 2, "\r\n", 2));
			i += vlen;
		}
	}
}

/* Runs one client over <c> until it is closed. */
static void run_conn(struct conn *c)
{
	struct gs_stats st;
	unsigned idle = 0;

	for (;;) {
		const char *was = in_p;
		enum conn_state state = c->mc.state;
		size_t out_was = out_len, rstart = c->rstart;

		if (c->mc.state == CONN_CLOSING)
			break;
		if (c->mc.state == CONN_WAIT || c->input_paused) {
			if (!gs_io_pending(io) && !OPEN_BUG("stuck-wait"))
				broken(c->mc.state == CONN_WAIT ?
				       "waits for the engine with no I/O in flight" :
				       "input paused with no I/O in flight");
			gs_io_run(io, true);
			continue;
		}
		if (!proto_process(c))
			break;
		if (c->broken || (c->eof && c->mc.want_input))
			break;
		if (in_p == was && c->mc.state == state && out_len == out_was &&
		    c->rstart == rstart && !c->input_paused &&
		    c->mc.state != CONN_WAIT && ++idle > 8)
			broken("proto_process() makes no progress");
		if (in_p != was)
			idle = 0;
	}
	/* closed: as server.c's conn_close() */
	c->dead = true;
	proto_abort(c);
	if (c->mc.state == CONN_WAIT) {
		while (gs_io_pending(io))
			gs_io_run(io, true);
		/* store_done() saw dead and released it */
	} else {
		conn_release(c);
	}
	gs_stats(srv.e, &st);
	if (!OPEN_BUG("pins-left"))
		EXPECT(st.pins == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gs_config cfg;
	struct conn *c;
	char err[256];

	log_level = -1;		/* no log lines, whatever verbosity said */
	gs_config_init(&cfg);
	cfg.memory = 16 << 10;
	cfg.sub_memory = 8 << 10;
	cfg.block = 4 << 10;
	cfg.ram_head = 4 << 10;
	cfg.max_object = 4 << 10;
	cfg.no_mlock = true;
	cfg.hash_power = 2;
	if (gs_engine_open(&srv.e, &cfg, err, sizeof(err)) < 0 ||
	    gs_io_create(srv.e, &io) < 0) {
		fprintf(stderr, "fuzz_text: engine: %s\n", err);
		abort();
	}
	srv.opt = &opt;
	srv.nlfd = 0;		/* stats conns: no listener, no threads */
	pthread_mutex_init(&srv.reset_lock, NULL);
	memset(&srv.st, 0, sizeof(srv.st));

	input = data;
	input_size = size;
	in_p = (const char *)data;
	in_end = in_p + size;
	fills = 0;
	out_len = 0;

	c = calloc(1, sizeof(*c));
	c->rbuf = malloc(CONN_RBUF_MIN);
	if (!c || !c->rbuf)
		abort();
	list_init(&c->out);
	c->srv = &srv;
	c->fd = -1;
	c->rcap = CONN_RBUF_MIN;
	c->mc.state = CONN_CMD;
	run_conn(c);
	if (getenv("FUZZ_TEXT_DUMP"))		/* to see what a run answered */
		fwrite(out, 1, out_len, stderr);
	check_output();

	gs_io_destroy(&io);
	gs_engine_close(&srv.e);
	pthread_mutex_destroy(&srv.reset_lock);
	return 0;
}
