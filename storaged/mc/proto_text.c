/*
 * The memcache text protocol on top of libgoblin: command lines are parsed
 * by proto_parse.c and turned into engine calls; values stream from the
 * socket straight into the writer's buffers (head slot, then chunk
 * buffers); replies go to the connection's output queue.  The classic
 * commands and the input state machine live here, the meta commands in
 * proto_meta.c, the stats commands in proto_stats.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "mc_items.h"
#include "proto_text.h"

static bool is_storage(enum mc_op op)
{
	return op >= MC_SET && op <= MC_CAS;
}

static bool is_meta(enum mc_op op)
{
	return op >= MC_MG && op <= MC_ME;
}

void reply_unless(struct conn *c, bool noreply, const char *s)
{
	if (!noreply)
		conn_reply(c, s, strlen(s));
}

/* ---- storage ---- */

const char *store_reply(enum mc_op op, int res)
{
	switch (res) {
	case 0:
		return "STORED\r\n";
	case -EEXIST:
		return op == MC_CAS ? "EXISTS\r\n" : "NOT_STORED\r\n";
	case -ENOENT:
		return op == MC_CAS ? "NOT_FOUND\r\n" : "NOT_STORED\r\n";
	case -ENOMEM:
		return "SERVER_ERROR out of memory storing object\r\n";
	case -E2BIG:
		return "SERVER_ERROR object too large for cache\r\n";
	case -EBUSY:
		return "SERVER_ERROR other writes kept replacing the value; not stored\r\n";
	default:
		return "SERVER_ERROR I/O error storing object\r\n";
	}
}

const char *arith_error(int res)
{
	if (res == -ENOMEM)
		return "SERVER_ERROR out of memory\r\n";
	if (res == -E2BIG)
		return "SERVER_ERROR object too large for cache\r\n";
	return "SERVER_ERROR I/O error\r\n";
}

void store_done(void *arg, int res, const struct gs_stored *stored)
{
	struct conn *c = arg;
	struct pending_store *st = &c->mc.store;

	if (c->dead) {
		conn_release(c);
		return;
	}
	if (st->op == MC_CAS)
		SRV_ADD(c->srv, cas_hits, res == 0);
	if (st->op == MC_CAS && res == -EEXIST)
		SRV_ADD(c->srv, cas_badval, 1);
	if (st->op == MC_CAS && res == -ENOENT)
		SRV_ADD(c->srv, cas_misses, 1);
	if (res == -ENOMEM)
		SRV_ADD(c->srv, store_no_memory, 1);
	if (st->meta)
		proto_meta_store_reply(c, res, stored->cas);
	else
		reply_unless(c, st->noreply && res != -ENOMEM && res != -EIO &&
			     res != -EBUSY, store_reply(st->op, res));
	c->mc.state = CONN_CMD;
	conn_schedule(c);
}

void value_wake(void *arg)
{
	conn_pause_input(arg, false);
}

/* <meta>: an ms, whose q hides only its success (errors always show). */
bool start_store(struct conn *c, const struct mc_cmd *cmd, bool meta)
{
	struct pending_store *st = &c->mc.store;
	struct gs_engine *e = c->srv->e;
	int ret;

	SRV_ADD(c->srv, cmd_set, 1);
	*st = (struct pending_store){ .op = cmd->op, .klen = cmd->key.len,
				      .flags = cmd->flags,
				      .exptime = mc_exptime(cmd->exptime),
				      .cas = cmd->cas, .noreply = cmd->noreply,
				      .meta = meta, .len = cmd->bytes };
	memcpy(st->key, cmd->key.p, cmd->key.len);
	if (gs_check_size(e, cmd->bytes) < 0) {
		ret = -E2BIG;
	} else {
		ret = gs_writer_open(conn_io(c), st->key, st->klen, cmd->bytes,
				     cmd->flags, st->exptime, mc_write_mode(cmd->op),
				     &st->writer);
		c->mc.state = CONN_VALUE;
	}
	if (ret == 0)
		return true;
	/* refused: say so, swallow the value; like memcached, a refused set
	 * also drops the key's old value */
	if (ret == -E2BIG) {
		SRV_ADD(c->srv, store_too_large, 1);
		if (cmd->op == MC_SET)
			gs_delete(e, st->key, st->klen);
	} else {
		SRV_ADD(c->srv, store_no_memory, 1);
	}
	reply_unless(c, cmd->noreply && !meta && ret == -E2BIG,
		     store_reply(cmd->op, ret));
	c->mc.swallow = cmd->bytes + 2;
	c->mc.state = CONN_SWALLOW;
	return true;
}

static void end_value(struct conn *c)
{
	struct pending_store *st = &c->mc.store;
	int ret;

	c->mc.state = CONN_WAIT;
	if (st->bad_chunk) {
		gs_writer_abort(&st->writer);
		SRV_ADD(c->srv, protocol_errors, 1);
		reply_unless(c, st->noreply && !st->meta,
			     "CLIENT_ERROR bad data chunk\r\n");
		c->mc.state = CONN_CMD;
		return;
	}
	ret = gs_writer_finish(&st->writer, mc_store_if(st->op), st->cas,
			       store_done, c);
	if (ret < 0) {
		gs_writer_abort(&st->writer);
		if (st->op == MC_CAS && ret == -ENOENT)
			SRV_ADD(c->srv, cas_misses, 1);
		if (st->meta)
			proto_meta_store_reply(c, ret, 0);
		else
			reply_unless(c, st->noreply && ret == -ENOENT,
				     store_reply(st->op, ret));
		c->mc.state = CONN_CMD;
	}
}

void proto_abort(struct conn *c)
{
	if (c->mc.state == CONN_VALUE || c->mc.state == CONN_VALUE_END) {
		SRV_ADD(c->srv, aborted_values, 1);
		gs_writer_abort(&c->mc.store.writer);
	}
}

/* ---- retrieval ---- */

void proto_touch_found(struct conn *c, struct gs_obj *obj, int64_t exptime)
{
	SRV_ADD(c->srv, cmd_touch, 1);
	SRV_ADD(c->srv, touch_hits, obj != NULL);
	SRV_ADD(c->srv, touch_misses, obj == NULL);
	/* no longer live: a write replaced it after the lookup, so the touch
	 * came before that write and has nothing left to do */
	if (obj)
		gs_obj_touch(c->srv->e, obj, exptime);
}

/* Looks up the pending get's next keys while the connection holds fewer
 * than CONN_PINS_MAX values, queueing each hit; END after the last key.
 * Keys past MC_KEYS_MAX are taken from the line a batch at a time. */
static void get_step(struct conn *c)
{
	struct pending_get *g = &c->mc.get;
	struct gs_engine *e = c->srv->e;

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
		SRV_ADD(c->srv, cmd_get, 1);
		ret = gs_lookup(e, k->p, k->len, &obj);
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
		.exptime = touch ? mc_exptime(cmd->exptime) : 0,
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
			   mc_exptime(cmd->exptime), NULL);

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
		return start_store(c, &cmd, false);
	switch (cmd.op) {
	case MC_GET:
	case MC_GETS:
	case MC_GAT:
	case MC_GATS:
		do_get(c, &cmd);
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
		/* an exptime, as memcached: relative up to 30 days, else
		 * absolute; no arithmetic that a huge delay overflows */
		mc_flush(c->srv->e, cmd.delay);
		reply_unless(c, cmd.noreply, "OK\r\n");
		break;
	case MC_STATS:
		proto_stats(c, cmd.arg, cmd.arg ? cmd.arg_len : 0);
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
		proto_meta_get(c, &cmd);
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
			end_value(c);
			continue;
		case CONN_SWALLOW:
			avail = buffered(c);
			if (avail < 0)
				return false;
			if (avail == 0) {
				c->mc.want_input = true;
				return true;
			}
			if ((uint64_t)avail > c->mc.swallow)
				avail = c->mc.swallow;
			c->rstart += avail;
			c->mc.swallow -= avail;
			if (!c->mc.swallow)
				c->mc.state = CONN_CMD;
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
			if (!run_command(c, line, len))
				return false;
			continue;
		default:
			return true;
		}
	}
}
