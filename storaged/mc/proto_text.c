/*
 * The memcache text protocol on top of libgoblin: command lines are parsed
 * by proto_parse.c and turned into engine calls; values stream from the
 * socket straight into the writer's buffers (head slot, then chunk
 * buffers); replies go to the connection's output queue.  The classic
 * commands and the input state machine live here, the meta commands in
 * proto_meta.c, the stats commands in proto_stats.c, what storing and the
 * replies share in proto_store.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exptime.h"
#include "log.h"
#include "mc_items.h"
#include "proto_text.h"
#include "version.h"

static bool is_storage(enum mc_op op)
{
	return op >= MC_SET && op <= MC_CAS;
}

static bool is_meta(enum mc_op op)
{
	return op >= MC_MG && op <= MC_ME;
}

/* ---- retrieval ---- */

/* Looks up the pending get's next keys while the connection holds fewer
 * than CONN_PINS_MAX values, queueing each hit; END after the last key.
 * Keys past MC_KEYS_MAX are taken from the line a batch at a time. */
static void get_step(struct conn *c)
{
	struct pending_get *g = &c->mc.get;

	for (;;) {
		const struct mc_key *k;
		const struct gs_meta *m;
		struct gs_obj *obj;
		char line[320];
		int n, ret;

		if (c->out_objs >= CONN_PINS_MAX || c->broken)
			return;
		if (g->next == g->nkeys) {
			if (!g->rest)
				break;
			g->nkeys = mc_next_keys(&g->rest, &g->rest_len, c->mc.keys,
						MC_KEYS_MAX);
			g->next = 0;
			continue;
		}
		k = &c->mc.keys[g->next];
		g->next++;
		ret = proto_lookup(c, k, &obj);
		if (g->touch)
			proto_touch_found(c, ret == 0 ? obj : NULL, g->exptime);
		if (ret < 0)
			continue;
		m = gs_obj_meta(obj);
		if (g->with_cas)
			n = snprintf(line, sizeof(line), "VALUE %.*s %" PRIu32 " %" PRIu64
				     " %" PRIu64 "\r\n", k->len, k->p, m->flags,
				     m->size, m->cas);
		else
			n = snprintf(line, sizeof(line), "VALUE %.*s %" PRIu32 " %" PRIu64
				     "\r\n", k->len, k->p, m->flags, m->size);
		conn_reply_value(c, line, n, obj);
	}
	REPLY(c, "END\r\n");
	c->mc.state = CONN_CMD;
}

static void do_get(struct conn *c, const struct mc_cmd *cmd)
{
	bool touch = cmd->op == MC_GAT || cmd->op == MC_GATS;

	c->mc.get = (struct pending_get){
		.nkeys = cmd->nkeys, .touch = touch,
		.rest = cmd->rest, .rest_len = cmd->rest_len,
		.with_cas = cmd->op == MC_GETS || cmd->op == MC_GATS,
		.exptime = touch ? exptime_absolute(cmd->exptime) : 0,
	};
	c->mc.state = CONN_GET;
	get_step(c);
}

/* ---- the rest ---- */

static void do_delete(struct conn *c, const struct mc_cmd *cmd)
{
	int ret = gs_delete(c->srv->e, cmd->key.p, cmd->key.len);

	SRV_ADD(c->srv, delete_hits, ret == 0);
	SRV_ADD(c->srv, delete_misses, ret == -ENOENT);
	reply_unless(c, cmd->noreply && ret != -EIO,
		     ret == 0 ? "DELETED\r\n" : ret == -ENOENT ? "NOT_FOUND\r\n" :
		     "SERVER_ERROR the delete could not be journaled\r\n");
}

static void do_incr(struct conn *c, const struct mc_cmd *cmd)
{
	bool decr = cmd->op == MC_DECR;
	uint64_t v;
	int ret = mc_incr(c->srv->e, cmd->key.p, cmd->key.len, decr, cmd->delta, &v);

	if (decr) {
		SRV_ADD(c->srv, decr_hits, ret != -ENOENT);
		SRV_ADD(c->srv, decr_misses, ret == -ENOENT);
	} else {
		SRV_ADD(c->srv, incr_hits, ret != -ENOENT);
		SRV_ADD(c->srv, incr_misses, ret == -ENOENT);
	}
	if (cmd->noreply)
		return;
	if (ret == 0)
		conn_replyf(c, "%" PRIu64 "\r\n", v);
	else if (ret == -ENOENT)
		REPLY(c, "NOT_FOUND\r\n");
	else if (ret == -EINVAL)
		REPLY(c, "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
	else
		reply_unless(c, false, arith_error(ret));
}

static void do_touch(struct conn *c, const struct mc_cmd *cmd)
{
	int ret = gs_touch(c->srv->e, cmd->key.p, cmd->key.len,
			   exptime_absolute(cmd->exptime), NULL);

	SRV_ADD(c->srv, cmd_touch, 1);
	SRV_ADD(c->srv, touch_hits, ret == 0);
	SRV_ADD(c->srv, touch_misses, ret != 0);
	reply_unless(c, cmd->noreply, ret == 0 ? "TOUCHED\r\n" : "NOT_FOUND\r\n");
}

static bool run_command(struct conn *c, const char *line, size_t len)
{
	struct mc_cmd cmd;
	int ret = mc_parse(line, len, &cmd, c->mc.keys, MC_KEYS_MAX);

	__atomic_store_n(&c->last_cmd, time(NULL), __ATOMIC_RELAXED);
	if (ret == MC_PARSE_CLOSE) {
		/* HTTP on the memcache port: earlier replies go out, then
		 * the connection closes without reading further */
		c->mc.state = CONN_CLOSING;
		return true;
	}
	if (ret == MC_PARSE_ERROR) {
		SRV_ADD(c->srv, protocol_errors, 1);
		REPLY(c, "ERROR\r\n");
		return true;
	}
	if (ret == MC_PARSE_CLIENT_ERROR) {
		SRV_ADD(c->srv, protocol_errors, 1);
		/* a meta command's q never hides an error (memcached) */
		if (!cmd.noreply || is_meta(cmd.op))
			conn_replyf(c, "CLIENT_ERROR %s\r\n", cmd.error);
		if (cmd.swallow) {	/* ms: its data block follows */
			c->mc.swallow = cmd.bytes + 2;
			c->mc.state = CONN_SWALLOW;
		}
		return true;
	}
	if (is_storage(cmd.op))
		return start_store(c, &cmd, NULL);
	switch (cmd.op) {
	case MC_GET:
	case MC_GETS:
	case MC_GAT:
	case MC_GATS:
		conn_reply_mark(c);
		do_get(c, &cmd);
		if (c->mc.state != CONN_GET)	/* else its keys follow */
			conn_reply_unmark_empty(c);
		break;
	case MC_DELETE:
		do_delete(c, &cmd);
		break;
	case MC_INCR:
	case MC_DECR:
		do_incr(c, &cmd);
		break;
	case MC_TOUCH:
		do_touch(c, &cmd);
		break;
	case MC_FLUSH_ALL:
		SRV_ADD(c->srv, cmd_flush, 1);
		if (c->srv->opt->disable_flush) {	/* memcached's -F */
			reply_unless(c, cmd.noreply,
				     "CLIENT_ERROR flush_all not allowed\r\n");
			break;
		}
		/* an exptime, as memcached: relative up to 30 days, else
		 * absolute; no arithmetic that a huge delay overflows */
		mc_flush(c->srv->e, cmd.delay);
		reply_unless(c, cmd.noreply, "OK\r\n");
		break;
	case MC_STATS:
		proto_stats(c, cmd.arg, cmd.arg ? cmd.arg_len : 0);
		break;
	case MC_LRU_CRAWLER:
		proto_lru_crawler(c, cmd.arg, cmd.arg ? cmd.arg_len : 0);
		break;
	case MC_VERSION:
		REPLY(c, "VERSION " GOBLIN_VERSION "\r\n");
		break;
	case MC_VERBOSITY:
		log_level = cmd.level > LOG_DEBUG ? LOG_DEBUG :
			    cmd.level < LOG_INFO ? LOG_INFO : (int)cmd.level;
		reply_unless(c, cmd.noreply, "OK\r\n");
		break;
	case MC_QUIT:
		c->mc.state = CONN_CLOSING;	/* after what is queued */
		break;
	case MC_MG:
		conn_reply_mark(c);
		proto_meta_get(c, &cmd);
		conn_reply_unmark_empty(c);	/* q: a miss says nothing */
		break;
	case MC_MS:
		return proto_meta_set(c, &cmd);
	case MC_MD:
		proto_meta_delete(c, &cmd);
		break;
	case MC_MN:
		REPLY(c, "MN\r\n");
		break;
	case MC_MA:
		proto_meta_arith(c, &cmd);
		break;
	case MC_ME:
		proto_meta_debug(c, &cmd);
		break;
	default:
		REPLY(c, "ERROR\r\n");
		break;
	}
	return true;
}

/* ---- the input state machine ---- */

/* Bytes buffered in rbuf; reads more when empty.  -1: the peer is gone. */
static ssize_t buffered(struct conn *c)
{
	if (c->rend > c->rstart)
		return c->rend - c->rstart;
	return conn_fill(c);
}

/* Takes up to <want> buffered bytes, copied to <dst> unless NULL: how
 * many, 0 when it must wait for the socket (want_input set), -1 when the
 * peer is gone. */
static ssize_t take(struct conn *c, uint64_t want, char *dst)
{
	ssize_t avail = buffered(c);

	if (avail == 0)
		c->mc.want_input = true;
	if (avail <= 0)
		return avail;
	if ((uint64_t)avail > want)
		avail = want;
	if (dst)
		memcpy(dst, c->rbuf + c->rstart, avail);
	c->rstart += avail;
	return avail;
}

static bool step_value(struct conn *c)
{
	struct pending_store *st = &c->mc.store;
	void *p;
	size_t n;
	ssize_t got;

	if (gs_writer_buf(st->writer, &p, &n, value_wake, c) == -EAGAIN) {
		conn_pause_input(c, true);
		return true;
	}
	if (n > st->len - st->got)
		n = st->len - st->got;
	if (c->rend > c->rstart) {
		got = c->rend - c->rstart < n ? c->rend - c->rstart : n;
		memcpy(p, c->rbuf + c->rstart, got);
		c->rstart += got;
	} else {
		got = conn_recv(c, p, n);
		if (got <= 0)
			return got == 0;
	}
	gs_writer_advance(st->writer, got);
	st->got += got;
	return true;
}

bool proto_process(struct conn *c)
{
	for (;;) {
		ssize_t avail;
		char *line, *nl;
		size_t len;

		c->mc.want_input = false;
		if (c->mc.state == CONN_WAIT || c->mc.state == CONN_CLOSING ||
		    c->input_paused || conn_out_full(c) || c->broken)
			return true;
		switch (c->mc.state) {
		case CONN_GET:
			get_step(c);
			continue;
		case CONN_DUMP:
			dump_step(c);
			continue;
		case CONN_VALUE:
			if (c->mc.store.got == c->mc.store.len) {
				c->mc.state = CONN_VALUE_END;
				continue;
			}
			if (!step_value(c))
				return false;
			if (c->mc.store.got < c->mc.store.len && c->rend == c->rstart) {
				c->mc.want_input = !c->input_paused;
				return true;	/* wait for the socket */
			}
			continue;
		case CONN_VALUE_END:
			if (c->rend - c->rstart < 2) {
				avail = conn_fill(c);
				if (avail < 0)
					return false;
				if (c->rend - c->rstart < 2) {
					c->mc.want_input = true;
					return true;
				}
			}
			c->mc.store.bad_chunk = memcmp(c->rbuf + c->rstart, "\r\n", 2) != 0;
			c->rstart += 2;
			store_end(c);
			continue;
		case CONN_SWALLOW:
			avail = take(c, c->mc.swallow, NULL);
			if (avail <= 0)
				return avail == 0;
			c->mc.swallow -= avail;
			if (!c->mc.swallow)
				c->mc.state = CONN_CMD;
			continue;
		case CONN_AUTH:
			avail = take(c, c->mc.auth_len - c->mc.auth_got,
				     c->mc.auth_buf + c->mc.auth_got);
			if (avail <= 0)
				return avail == 0;
			c->mc.auth_got += avail;
			if (c->mc.auth_got == c->mc.auth_len)
				proto_auth_token(c);
			continue;
		case CONN_CMD:
			nl = memchr(c->rbuf + c->rstart, '\n', c->rend - c->rstart);
			if (!nl) {
				size_t have = c->rend - c->rstart;

				if (have > MC_GET_LINE_MAX + 1 ||
				    (have > MC_LINE_MAX + 1 &&
				     !mc_is_get_line(c->rbuf + c->rstart, have))) {
					SRV_ADD(c->srv, protocol_errors, 1);
					REPLY(c, "CLIENT_ERROR line too long\r\n");
					c->mc.state = CONN_CLOSING;
					return true;
				}
				avail = conn_fill(c);
				if (avail < 0)
					return false;
				if (avail == 0) {
					c->mc.want_input = true;
					return true;
				}
				continue;
			}
			line = c->rbuf + c->rstart;
			len = nl - line;
			if (len && line[len - 1] == '\r')
				len--;
			c->rstart = nl + 1 - c->rbuf;
			if (c->srv->auth && !c->mc.authenticated) {
				proto_auth_line(c, line, len);
				continue;
			}
			if (!run_command(c, line, len))
				return false;
			continue;
		default:
			return true;
		}
	}
}
