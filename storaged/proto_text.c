/*
 * The memcache text protocol on top of libgoblin: command lines are parsed
 * by proto_parse.c and turned into engine calls; values stream from the
 * socket straight into the writer's buffers (head slot, then chunk
 * buffers); replies go to the connection's output queue.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "mc_items.h"
#include "server.h"

#define REPLY(c, s) conn_reply((c), s, sizeof(s) - 1)

static bool is_storage(enum mc_op op)
{
	return op >= MC_SET && op <= MC_CAS;
}

static void reply_unless(struct conn *c, bool noreply, const char *s)
{
	if (!noreply)
		conn_reply(c, s, strlen(s));
}

/* ---- storage ---- */

static const char *store_reply(enum mc_op op, int res)
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
	default:
		return "SERVER_ERROR I/O error storing object\r\n";
	}
}

/* ---- meta commands ---- */

static bool start_store(struct conn *c, const struct mc_cmd *cmd, bool meta);

/* " k<key>", or with b " k<key in base64> b", at <buf>; its length. */
static int key_text(char *buf, size_t len, const char *key, size_t klen,
		    bool binary)
{
	char b64[MC_BASE64_LEN(GS_KEY_MAX)];

	if (!binary)
		return snprintf(buf, len, " k%.*s", (int)klen, key);
	return snprintf(buf, len, " k%.*s b",
			(int)mc_base64_encode(key, klen, b64), b64);
}

/* The TTL a meta t flag shows for the absolute <exptime>: -1 for never. */
static int64_t meta_ttl(int64_t exptime)
{
	int64_t ttl = exptime ? exptime - time(NULL) : -1;

	return exptime && ttl < 0 ? 0 : ttl;
}

/* Appends " <flag><value>" for each flag of <cmd> that a reply echoes:
 * O and k always; with <m> (a hit), c f s t too. */
static size_t meta_flags_text(char *buf, size_t len, const struct mc_cmd *cmd,
			      const struct gs_meta *m)
{
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < cmd->nmeta && n < len; i++) {
		const struct mc_meta *f = &cmd->meta[i];

		switch (f->flag) {
		case 'O':
			n += snprintf(buf + n, len - n, " O%.*s", f->len, f->v);
			break;
		case 'k':
			n += key_text(buf + n, len - n, cmd->key.p, cmd->key.len,
				      cmd->binary);
			break;
		case 'c':
			if (m)
				n += snprintf(buf + n, len - n, " c%" PRIu64, m->cas);
			break;
		case 'f':
			if (m)
				n += snprintf(buf + n, len - n, " f%" PRIu32, m->flags);
			break;
		case 's':
			if (m)
				n += snprintf(buf + n, len - n, " s%" PRIu64, m->size);
			break;
		case 't':
			if (m)
				n += snprintf(buf + n, len - n, " t%" PRId64,
					      meta_ttl(m->exptime));
			break;
		}
	}
	return n < len ? n : len - 1;
}

static bool meta_has(const struct mc_cmd *cmd, char flag)
{
	for (unsigned i = 0; i < cmd->nmeta; i++)
		if (cmd->meta[i].flag == flag)
			return true;
	return false;
}

/* mg <key> <flags>: VA <size> <flags> + value with v, else HD <flags>;
 * EN on a miss (not sent with q). */
static void do_meta_get(struct conn *c, const struct mc_cmd *cmd)
{
	struct gs_engine *e = c->srv->e;
	char flags[1024], line[1100];
	struct gs_obj *obj;
	const struct gs_meta *m;
	int n;

	SRV_ADD(c->srv, cmd_get, 1);
	if (cmd->has_exptime) {
		int ret = gs_touch(e, cmd->key.p, cmd->key.len,
				   mc_exptime(cmd->exptime), NULL);

		SRV_ADD(c->srv, cmd_touch, 1);
		SRV_ADD(c->srv, touch_hits, ret == 0);
		SRV_ADD(c->srv, touch_misses, ret != 0);
	}
	if (gs_lookup(e, cmd->key.p, cmd->key.len, &obj) < 0) {
		if (!cmd->noreply) {
			meta_flags_text(flags, sizeof(flags), cmd, NULL);
			conn_replyf(c, "EN%s\r\n", flags);
		}
		return;
	}
	m = gs_obj_meta(obj);
	meta_flags_text(flags, sizeof(flags), cmd, m);
	if (!meta_has(cmd, 'v')) {
		conn_replyf(c, "HD%s\r\n", flags);
		gs_obj_put(e, &obj);
		return;
	}
	n = snprintf(line, sizeof(line), "VA %" PRIu64 "%s\r\n", m->size, flags);
	conn_reply_value(c, line, n, obj);
}

/* md <key> <flags>: HD, NF, EX (C<cas> mismatch); q hides HD. */
static void do_meta_delete(struct conn *c, const struct mc_cmd *cmd)
{
	struct gs_engine *e = c->srv->e;
	char flags[1024];
	int ret = cmd->has_cas ?
		  gs_delete_cas(e, cmd->key.p, cmd->key.len, cmd->cas) :
		  gs_delete(e, cmd->key.p, cmd->key.len);

	SRV_ADD(c->srv, delete_hits, ret == 0);
	SRV_ADD(c->srv, delete_misses, ret == -ENOENT);
	if (ret == 0 && cmd->noreply)
		return;
	meta_flags_text(flags, sizeof(flags), cmd, NULL);
	conn_replyf(c, "%s%s\r\n", ret == 0 ? "HD" : ret == -EEXIST ? "EX" : "NF",
		    flags);
}

static bool echo_has(const struct pending_store *st, char flag)
{
	for (unsigned i = 0; i < st->necho; i++)
		if (st->echo[i].flag == flag)
			return true;
	return false;
}

/* Keeps the flags of <cmd> in <flags> that its reply will need. */
static void keep_echo(struct pending_store *st, const struct mc_cmd *cmd,
		      const char *flags)
{
	st->necho = 0;
	for (unsigned i = 0; i < cmd->nmeta; i++) {
		const struct mc_meta *f = &cmd->meta[i];

		if (!strchr(flags, f->flag))
			continue;
		st->echo[st->necho].flag = f->flag;
		snprintf(st->echo[st->necho].v, sizeof(st->echo[0].v), "%.*s",
			 f->len, f->v);
		st->necho++;
	}
}

static void meta_store_reply(struct conn *c, int res, uint64_t cas)
{
	struct pending_store *st = &c->store;
	const char *code;
	char flags[1024];
	size_t n = 0;

	switch (res) {
	case 0:
		if (st->noreply)
			return;
		code = "HD";
		break;
	case -EEXIST:
		code = st->op == MC_CAS ? "EX" : "NS";
		break;
	case -ENOENT:
		code = st->op == MC_CAS ? "NF" : "NS";
		break;
	default:
		conn_reply(c, store_reply(st->op, res), strlen(store_reply(st->op, res)));
		return;
	}
	for (unsigned i = 0; i < st->necho && n < sizeof(flags); i++) {
		const struct meta_echo *f = &st->echo[i];

		if (f->flag == 'c')
			n += snprintf(flags + n, sizeof(flags) - n, " c%" PRIu64,
				      res == 0 ? cas : 0);
		else if (f->flag == 'k')
			n += key_text(flags + n, sizeof(flags) - n, st->key,
				      st->klen, echo_has(st, 'b'));
		else if (f->flag == 'O')
			n += snprintf(flags + n, sizeof(flags) - n, " O%s", f->v);
	}
	flags[n < sizeof(flags) ? n : sizeof(flags) - 1] = '\0';
	conn_replyf(c, "%s%s\r\n", code, flags);
}

/* ms <key> <bytes> <flags>: a storage command in meta form. */
static bool start_meta_set(struct conn *c, const struct mc_cmd *cmd)
{
	static const enum mc_op modes[] = {
		['S'] = MC_SET, ['E'] = MC_ADD, ['R'] = MC_REPLACE,
		['A'] = MC_APPEND, ['P'] = MC_PREPEND,
	};
	struct mc_cmd plain = *cmd;
	struct pending_store *st = &c->store;
	bool ok;

	plain.op = modes[(unsigned char)cmd->mode];
	if (cmd->has_cas && (plain.op == MC_SET || plain.op == MC_REPLACE))
		plain.op = MC_CAS;
	if (!cmd->has_exptime)
		plain.exptime = 0;
	ok = start_store(c, &plain, true);
	keep_echo(st, cmd, "Okcb");
	return ok;
}

static void store_done(void *arg, int res, const struct gs_stored *stored)
{
	struct conn *c = arg;
	struct pending_store *st = &c->store;

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
		meta_store_reply(c, res, stored->cas);
	else
		reply_unless(c, st->noreply && res != -ENOMEM && res != -EIO,
			     store_reply(st->op, res));
	c->state = CONN_CMD;
	conn_schedule(c);
}

static void value_wake(void *arg)
{
	conn_pause_input(arg, false);
}

/* ---- meta arithmetic ---- */

/* The reply of an ma from the flags kept in <st>: <code> with O and k
 * (and b); on success (<value>) t and c too, and VA with v. */
static void ma_reply(struct conn *c, const char *code, const char *value,
		     uint64_t cas, int64_t exptime)
{
	struct pending_store *st = &c->store;
	bool v = echo_has(st, 'v') && value;
	char flags[1024];
	size_t n = 0;

	for (unsigned i = 0; i < st->necho && n < sizeof(flags); i++) {
		const struct meta_echo *f = &st->echo[i];

		if (f->flag == 'O')
			n += snprintf(flags + n, sizeof(flags) - n, " O%s", f->v);
		else if (f->flag == 'k')
			n += key_text(flags + n, sizeof(flags) - n, st->key,
				      st->klen, echo_has(st, 'b'));
		else if (f->flag == 'c' && value)
			n += snprintf(flags + n, sizeof(flags) - n, " c%" PRIu64, cas);
		else if (f->flag == 't' && value)
			n += snprintf(flags + n, sizeof(flags) - n, " t%" PRId64,
				      meta_ttl(exptime));
	}
	flags[n < sizeof(flags) ? n : sizeof(flags) - 1] = '\0';
	if (v)
		conn_replyf(c, "VA %zu%s\r\n%s\r\n", strlen(value), flags, value);
	else
		conn_replyf(c, "%s%s\r\n", code, flags);
}

/* The reply to an ma N that created (or failed to create) its counter. */
static void ma_created_reply(struct conn *c, int res, uint64_t cas)
{
	struct pending_store *st = &c->store;
	char value[24];

	/* q does not hide the HD of a created counter (memcached 1.6.18) */
	snprintf(value, sizeof(value), "%" PRIu64, st->cas);
	if (res == 0)
		ma_reply(c, "HD", value, cas, st->exptime);
	else if (res == -EEXIST)	/* created by another client meanwhile */
		ma_reply(c, "NS", NULL, 0, 0);
	else if (res != 0)
		conn_reply(c, store_reply(MC_SET, res), strlen(store_reply(MC_SET, res)));
	if (res == -ENOMEM)
		SRV_ADD(c->srv, store_no_memory, 1);
}

static void ma_created(void *arg, int res, const struct gs_stored *stored)
{
	struct conn *c = arg;

	if (c->dead) {
		conn_release(c);
		return;
	}
	ma_created_reply(c, res, stored->cas);
	c->state = CONN_CMD;
	conn_schedule(c);
}

/* ma N on a miss: stores J (no delta applied, as memcached) with TTL N, if
 * the key is still absent; the reply comes from ma_created(). */
static void ma_create(struct conn *c, const struct mc_cmd *cmd)
{
	struct pending_store *st = &c->store;
	char value[24];
	size_t len = snprintf(value, sizeof(value), "%" PRIu64, cmd->initial);
	size_t got = 0;
	int ret;

	st->cas = cmd->initial;
	st->exptime = mc_exptime(cmd->viv_exptime);
	ret = gs_writer_open(conn_io(c), st->key, st->klen, len, 0, st->exptime,
			     &st->writer);
	while (ret == 0 && got < len) {
		void *p;
		size_t n;

		ret = gs_writer_buf(st->writer, &p, &n, value_wake, c);
		if (ret == 0 && !n)
			ret = -EIO;
		if (ret < 0)
			break;
		n = n < len - got ? n : len - got;
		memcpy(p, value + got, n);
		gs_writer_advance(st->writer, n);
		got += n;
	}
	if (ret == 0) {
		c->state = CONN_WAIT;	/* the callback may fire at once */
		ret = gs_writer_finish(&st->writer, GS_IF_ABSENT, 0, ma_created, c);
		if (ret == 0)
			return;
		c->state = CONN_CMD;
	}
	gs_writer_abort(&st->writer);
	ma_created_reply(c, ret == -EAGAIN || ret == -E2BIG ? -ENOMEM : ret, 0);
}

/* ma <key> <flags>: incr (or decr with MD) by D through the engine.  C is
 * compared before the incr (the engine has no compare-and-incr: a store
 * between the two is not seen); T sets the TTL after it. */
static void do_meta_arith(struct conn *c, const struct mc_cmd *cmd)
{
	struct pending_store *st = &c->store;
	struct gs_engine *e = c->srv->e;
	bool decr = cmd->mode == 'D';
	struct gs_meta m = { 0 };
	struct gs_obj *obj;
	char value[24];
	uint64_t v;
	int ret;

	*st = (struct pending_store){ .op = MC_INCR, .klen = cmd->key.len,
				      .noreply = cmd->noreply };
	memcpy(st->key, cmd->key.p, cmd->key.len);
	keep_echo(st, cmd, "Okbctv");
	if (cmd->has_cas && gs_lookup(e, cmd->key.p, cmd->key.len, &obj) == 0) {
		bool same = gs_obj_meta(obj)->cas == cmd->cas;

		gs_obj_put(e, &obj);
		if (!same) {
			SRV_ADD(c->srv, cas_badval, 1);
			ma_reply(c, "EX", NULL, 0, 0);
			return;
		}
	}
	ret = mc_incr(e, cmd->key.p, cmd->key.len, decr, cmd->delta, &v);
	/* a miss that N turns into a new counter is no miss (memcached) */
	if (decr) {
		SRV_ADD(c->srv, decr_hits, ret != -ENOENT);
		SRV_ADD(c->srv, decr_misses, ret == -ENOENT && !cmd->vivify);
	} else {
		SRV_ADD(c->srv, incr_hits, ret != -ENOENT);
		SRV_ADD(c->srv, incr_misses, ret == -ENOENT && !cmd->vivify);
	}
	if (ret == -ENOENT && cmd->vivify) {
		ma_create(c, cmd);
		return;
	}
	if (ret == -ENOENT) {		/* q does not hide NF (memcached) */
		ma_reply(c, "NF", NULL, 0, 0);
		return;
	}
	if (ret == -EINVAL) {
		REPLY(c, "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
		return;
	}
	if (ret < 0) {
		REPLY(c, "SERVER_ERROR out of memory\r\n");
		return;
	}
	if (cmd->has_exptime) {
		SRV_ADD(c->srv, cmd_touch, 1);
		gs_touch(e, cmd->key.p, cmd->key.len, mc_exptime(cmd->exptime), &m);
	} else if (gs_lookup(e, cmd->key.p, cmd->key.len, &obj) == 0) {
		m = *gs_obj_meta(obj);
		gs_obj_put(e, &obj);
	}
	if (cmd->noreply)
		return;
	snprintf(value, sizeof(value), "%" PRIu64, v);
	ma_reply(c, "HD", value, m.cas, m.exptime);
}

/* me <key>: memcached's debug line with the fields goblin keeps: exp
 * (seconds left, -1 never), cas, size (value bytes; memcached's counts
 * its item header too); no la, fetch, cls (goblin keeps no access time
 * and has no slab classes).  EN on a miss. */
static void do_meta_debug(struct conn *c, const struct mc_cmd *cmd)
{
	struct gs_engine *e = c->srv->e;
	char key[MC_BASE64_LEN(GS_KEY_MAX) + 1];
	const struct gs_meta *m;
	struct gs_obj *obj;
	int klen;

	if (gs_lookup(e, cmd->key.p, cmd->key.len, &obj) < 0) {
		REPLY(c, "EN\r\n");
		return;
	}
	m = gs_obj_meta(obj);
	klen = cmd->binary ? (int)mc_base64_encode(cmd->key.p, cmd->key.len, key) :
			     snprintf(key, sizeof(key), "%.*s", cmd->key.len, cmd->key.p);
	conn_replyf(c, "ME %.*s exp=%" PRId64 " cas=%" PRIu64 " size=%" PRIu64
		    "\r\n", klen, key, meta_ttl(m->exptime), m->cas, m->size);
	gs_obj_put(e, &obj);
}

/* <meta>: an ms, whose q hides only its success (errors always show). */
static bool start_store(struct conn *c, const struct mc_cmd *cmd, bool meta)
{
	struct pending_store *st = &c->store;
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
	} else if (cmd->op == MC_APPEND || cmd->op == MC_PREPEND) {
		ret = gs_concat_open(conn_io(c), st->key, st->klen,
				     cmd->op == MC_PREPEND, cmd->bytes, &st->concat);
		c->state = CONN_VALUE_CONCAT;
	} else {
		ret = gs_writer_open(conn_io(c), st->key, st->klen, cmd->bytes,
				     cmd->flags, st->exptime, &st->writer);
		c->state = CONN_VALUE;
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
	c->swallow = cmd->bytes + 2;
	c->state = CONN_SWALLOW;
	return true;
}

static void end_value(struct conn *c)
{
	struct pending_store *st = &c->store;
	int ret;

	c->state = CONN_WAIT;
	if (st->bad_chunk) {
		gs_writer_abort(&st->writer);
		gs_concat_abort(&st->concat);
		SRV_ADD(c->srv, protocol_errors, 1);
		reply_unless(c, st->noreply && !st->meta,
			     "CLIENT_ERROR bad data chunk\r\n");
		c->state = CONN_CMD;
		return;
	}
	if (st->op == MC_APPEND || st->op == MC_PREPEND) {
		ret = gs_concat_finish(&st->concat, store_done, c);
	} else {
		ret = gs_writer_finish(&st->writer, mc_store_if(st->op), st->cas,
				       store_done, c);
	}
	if (ret < 0) {
		gs_concat_abort(&st->concat);
		gs_writer_abort(&st->writer);
		if (st->op == MC_CAS && ret == -ENOENT)
			SRV_ADD(c->srv, cas_misses, 1);
		if (st->meta)
			meta_store_reply(c, ret, 0);
		else
			reply_unless(c, st->noreply && ret == -ENOENT,
				     store_reply(st->op, ret));
		c->state = CONN_CMD;
	}
}

void proto_abort(struct conn *c)
{
	if (c->state == CONN_VALUE || c->state == CONN_VALUE_CONCAT ||
	    c->state == CONN_VALUE_END) {
		SRV_ADD(c->srv, aborted_values, 1);
		gs_writer_abort(&c->store.writer);
		gs_concat_abort(&c->store.concat);
	}
}

/* ---- retrieval ---- */

/* Looks up the pending get's next keys while the connection holds fewer
 * than CONN_PINS_MAX values, queueing each hit; END after the last key.
 * Keys past MC_KEYS_MAX are taken from the line a batch at a time. */
static void get_step(struct conn *c)
{
	struct pending_get *g = &c->get;
	struct gs_engine *e = c->srv->e;

	for (;;) {
		const struct mc_key *k;
		const struct gs_meta *m;
		struct gs_obj *obj;
		char line[320];
		int n;

		if (c->out_objs >= CONN_PINS_MAX || c->broken)
			return;
		if (g->next == g->nkeys) {
			if (!g->rest)
				break;
			g->nkeys = mc_next_keys(&g->rest, &g->rest_len, c->keys,
						MC_KEYS_MAX);
			g->next = 0;
			continue;
		}
		k = &c->keys[g->next];
		g->next++;
		SRV_ADD(c->srv, cmd_get, 1);
		if (g->touch) {
			int ret = gs_touch(e, k->p, k->len, g->exptime, NULL);

			SRV_ADD(c->srv, cmd_touch, 1);
			SRV_ADD(c->srv, touch_hits, ret == 0);
			SRV_ADD(c->srv, touch_misses, ret != 0);
		}
		if (gs_lookup(e, k->p, k->len, &obj) < 0)
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
	c->state = CONN_CMD;
}

static void do_get(struct conn *c, const struct mc_cmd *cmd)
{
	bool touch = cmd->op == MC_GAT || cmd->op == MC_GATS;

	c->get = (struct pending_get){
		.nkeys = cmd->nkeys, .touch = touch,
		.rest = cmd->rest, .rest_len = cmd->rest_len,
		.with_cas = cmd->op == MC_GETS || cmd->op == MC_GATS,
		.exptime = touch ? mc_exptime(cmd->exptime) : 0,
	};
	c->state = CONN_GET;
	get_step(c);
}

/* ---- the rest ---- */

static void do_delete(struct conn *c, const struct mc_cmd *cmd)
{
	int ret = gs_delete(c->srv->e, cmd->key.p, cmd->key.len);

	SRV_ADD(c->srv, delete_hits, ret == 0);
	SRV_ADD(c->srv, delete_misses, ret != 0);
	reply_unless(c, cmd->noreply, ret == 0 ? "DELETED\r\n" : "NOT_FOUND\r\n");
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
		REPLY(c, "SERVER_ERROR out of memory\r\n");
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
	int ret = mc_parse(line, len, &cmd, c->keys, MC_KEYS_MAX);

	__atomic_store_n(&c->last_cmd, time(NULL), __ATOMIC_RELAXED);
	if (ret == MC_PARSE_CLOSE) {
		/* HTTP on the memcache port: earlier replies go out, then
		 * the connection closes without reading further */
		c->state = CONN_CLOSING;
		return true;
	}
	if (ret == MC_PARSE_ERROR) {
		SRV_ADD(c->srv, protocol_errors, 1);
		REPLY(c, "ERROR\r\n");
		return true;
	}
	if (ret == MC_PARSE_CLIENT_ERROR) {
		SRV_ADD(c->srv, protocol_errors, 1);
		if (!cmd.noreply || cmd.op == MC_MS)
			conn_replyf(c, "CLIENT_ERROR %s\r\n", cmd.error);
		if (cmd.swallow) {	/* ms: its data block follows */
			c->swallow = cmd.bytes + 2;
			c->state = CONN_SWALLOW;
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
		c->state = CONN_CLOSING;	/* after what is queued */
		break;
	case MC_MG:
		do_meta_get(c, &cmd);
		break;
	case MC_MS:
		return start_meta_set(c, &cmd);
	case MC_MD:
		do_meta_delete(c, &cmd);
		break;
	case MC_MN:
		REPLY(c, "MN\r\n");
		break;
	case MC_MA:
		do_meta_arith(c, &cmd);
		break;
	case MC_ME:
		do_meta_debug(c, &cmd);
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
	struct pending_store *st = &c->store;
	void *p;
	size_t n;
	ssize_t got;

	if ((c->state == CONN_VALUE_CONCAT ?
	     gs_concat_buf(st->concat, &p, &n, value_wake, c) :
	     gs_writer_buf(st->writer, &p, &n, value_wake, c)) == -EAGAIN) {
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
	if (c->state == CONN_VALUE_CONCAT)
		gs_concat_advance(st->concat, got);
	else
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

		c->want_input = false;
		if (c->state == CONN_WAIT || c->state == CONN_CLOSING ||
		    c->input_paused || c->out_items >= 64 ||
		    c->out_bytes >= (4u << 20) || c->out_objs >= CONN_PINS_MAX ||
		    c->broken)
			return true;
		switch (c->state) {
		case CONN_GET:
			get_step(c);
			continue;
		case CONN_VALUE:
		case CONN_VALUE_CONCAT:
			if (c->store.got == c->store.len) {
				c->state = CONN_VALUE_END;
				continue;
			}
			if (!step_value(c))
				return false;
			if (c->store.got < c->store.len && c->rend == c->rstart) {
				c->want_input = !c->input_paused;
				return true;	/* wait for the socket */
			}
			continue;
		case CONN_VALUE_END:
			if (c->rend - c->rstart < 2) {
				avail = conn_fill(c);
				if (avail < 0)
					return false;
				if (c->rend - c->rstart < 2) {
					c->want_input = true;
					return true;
				}
			}
			c->store.bad_chunk = memcmp(c->rbuf + c->rstart, "\r\n", 2) != 0;
			c->rstart += 2;
			end_value(c);
			continue;
		case CONN_SWALLOW:
			avail = buffered(c);
			if (avail < 0)
				return false;
			if (avail == 0) {
				c->want_input = true;
				return true;
			}
			if ((uint64_t)avail > c->swallow)
				avail = c->swallow;
			c->rstart += avail;
			c->swallow -= avail;
			if (!c->swallow)
				c->state = CONN_CMD;
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
					c->state = CONN_CLOSING;
					return true;
				}
				avail = conn_fill(c);
				if (avail < 0)
					return false;
				if (avail == 0) {
					c->want_input = true;
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

/* ---- stats ---- */

static void stat_setting(void *arg, const char *name, const char *value)
{
	conn_replyf(arg, "STAT %s %s\r\n", name, value);
}

static bool arg_is(const char *arg, size_t len, const char *s)
{
	return len == strlen(s) && !memcmp(arg, s, len);
}

/* stats cachedump <class> <limit>: memcached's checks and errors; there are
 * no slab classes (stats items lists none), so every class is empty. */
static void stats_cachedump(struct conn *c, const char *arg, size_t len)
{
	unsigned long id, limit;
	char buf[64], *end;
	int n;

	if (len >= sizeof(buf)) {
		REPLY(c, "CLIENT_ERROR bad command line format\r\n");
		return;
	}
	memcpy(buf, arg, len);
	buf[len] = 0;
	n = 0;
	for (end = buf; *end; end++)
		if (*end != ' ' && (end == buf || end[-1] == ' '))
			n++;
	if (n < 2) {
		REPLY(c, "CLIENT_ERROR bad command line\r\n");
		return;
	}
	errno = 0;
	id = strtoul(buf, &end, 10);
	if (errno || end == buf || *end != ' ' || buf[strspn(buf, " ")] == '-') {
		REPLY(c, "CLIENT_ERROR bad command line format\r\n");
		return;
	}
	arg = end + strspn(end, " ");
	limit = strtoul(arg, &end, 10);
	if (errno || end == arg || (*end && *end != ' ') || *arg == '-') {
		REPLY(c, "CLIENT_ERROR bad command line format\r\n");
		return;
	}
	(void)limit;
	if ((uint32_t)id >= 64) {	/* memcached's MAX_NUMBER_OF_SLAB_CLASSES,
					 * its id an unsigned int */
		REPLY(c, "CLIENT_ERROR Illegal slab id\r\n");
		return;
	}
	REPLY(c, "END\r\n");
}

static void stat_line(void *arg, const char *name, const char *value,
		      const char *desc)
{
	(void)desc;
	stat_setting(arg, name, value);
}

/* The stats tables a `stats <arg>` lists, 0 for none. */
static unsigned stats_tables(const char *arg, size_t len)
{
	if (len == 0)
		return STATS_PROCESS | STATS_SERVER | STATS_SUMMARY;
	if (arg_is(arg, len, "slabs"))
		return STATS_SLABS;
	if (arg_is(arg, len, "goblin"))
		return STATS_ENGINE | STATS_POOLS;
	return 0;
}

void proto_stats(struct conn *c, const char *arg, size_t len)
{
	struct server *srv = c->srv;
	struct stats_sink sink = { stat_line, c };
	struct stats_snapshot snap;
	unsigned tables;
	size_t sub = 0;

	/* memcached judges the first word; the rest is ignored but for
	 * cachedump's arguments */
	while (sub < len && arg[sub] != ' ')
		sub++;
	if (arg_is(arg, sub, "cachedump")) {
		while (sub < len && arg[sub] == ' ')
			sub++;
		stats_cachedump(c, arg + sub, len - sub);
		return;
	}
	len = sub;

	tables = stats_tables(arg, len);
	if (tables) {
		server_stats_snapshot(srv, &snap);
		stats_emit(tables, &snap, &sink);
	} else if (arg_is(arg, len, "reset")) {
		server_stats_reset(srv);
		REPLY(c, "RESET\r\n");
		return;
	} else if (arg_is(arg, len, "settings")) {
		options_each(srv->opt, stat_setting, c);
	} else if (arg_is(arg, len, "items")) {
		/* per-class item stats: none (memcached's answer when empty) */
	} else if (arg_is(arg, len, "sizes")) {
		conn_replyf(c, "STAT sizes_status disabled\r\n");
	} else if (arg_is(arg, len, "conns")) {
		server_stats_conns(c);
	} else {
		SRV_ADD(srv, protocol_errors, 1);
		REPLY(c, "ERROR\r\n");
		return;
	}
	REPLY(c, "END\r\n");
}
