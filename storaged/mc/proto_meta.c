/*
 * The meta commands of the memcache text protocol (mg, ms, md, ma, me):
 * their flags, echoes and reply codes over the same engine calls as the
 * classic commands (proto_text.c), storing through proto_store.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "exptime.h"
#include "mc_items.h"
#include "proto_text.h"

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
void proto_meta_get(struct conn *c, const struct mc_cmd *cmd)
{
	struct gs_engine *e = c->srv->e;
	char flags[1024], line[1100];
	struct gs_obj *obj;
	const struct gs_meta *m;
	int n, ret;

	ret = proto_lookup(c, &cmd->key, &obj);
	if (cmd->has_exptime)
		proto_touch_found(c, ret == 0 ? obj : NULL,
				  exptime_absolute(cmd->exptime));
	if (ret < 0) {
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
void proto_meta_delete(struct conn *c, const struct mc_cmd *cmd)
{
	struct gs_engine *e = c->srv->e;
	char flags[1024];
	int ret = cmd->has_cas ?
		  gs_delete_cas(e, cmd->key.p, cmd->key.len, cmd->cas) :
		  gs_delete(e, cmd->key.p, cmd->key.len);

	SRV_ADD(c->srv, delete_hits, ret == 0);
	SRV_ADD(c->srv, delete_misses, ret == -ENOENT);
	if (ret == -EIO) {
		static const char no_journal[] =
			"SERVER_ERROR the delete could not be journaled\r\n";

		conn_reply(c, no_journal, sizeof(no_journal) - 1);
		return;
	}
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

/* Whether a store's -EEXIST was a C<cas> that did not match: the cas
 * command's, and an append's or prepend's (memcached), not an add's. */
static bool stale_cas(const struct pending_store *st)
{
	return st->op == MC_CAS || (st->cas && (st->op == MC_APPEND ||
						st->op == MC_PREPEND));
}

/* The reply of a finished ms from the flags it kept; <cas> when stored
 * (start_store() calls it for an ms). */
static void meta_store_reply(struct conn *c, int res, uint64_t cas)
{
	struct pending_store *st = &c->mc.store;
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
		code = stale_cas(st) ? "EX" : "NS";
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
bool proto_meta_set(struct conn *c, const struct mc_cmd *cmd)
{
	static const enum mc_op modes[] = {
		['S'] = MC_SET, ['E'] = MC_ADD, ['R'] = MC_REPLACE,
		['A'] = MC_APPEND, ['P'] = MC_PREPEND,
	};
	struct mc_cmd plain = *cmd;
	struct pending_store *st = &c->mc.store;
	bool ok;

	plain.op = modes[(unsigned char)cmd->mode];
	if (cmd->has_cas && (plain.op == MC_SET || plain.op == MC_REPLACE))
		plain.op = MC_CAS;
	if (!cmd->has_exptime)
		plain.exptime = 0;
	ok = start_store(c, &plain, meta_store_reply);
	keep_echo(st, cmd, "Okcb");
	return ok;
}

/* ---- meta arithmetic ---- */

/* The reply of an ma from the flags kept in <st>: <code> with O and k
 * (and b); on success (<value>) t and c too, and VA with v. */
static void ma_reply(struct conn *c, const char *code, const char *value,
		     uint64_t cas, int64_t exptime)
{
	struct pending_store *st = &c->mc.store;
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
	struct pending_store *st = &c->mc.store;
	char value[24];

	/* q does not hide the HD of a created counter (memcached 1.6.18) */
	snprintf(value, sizeof(value), "%" PRIu64, st->cas);
	if (res == 0)
		ma_reply(c, "HD", value, cas, st->exptime);
	else
		conn_reply(c, store_reply(MC_SET, res), strlen(store_reply(MC_SET, res)));
	if (res == -ENOMEM)
		SRV_ADD(c->srv, store_no_memory, 1);
}

/* Counts an ma's incr or decr that returned <ret>; a miss that N turns
 * into a new counter is no miss (memcached). */
static void ma_count(struct conn *c, int ret, bool vivify)
{
	const struct mc_arith *a = &c->mc.store.arith;
	bool hit = ret != -ENOENT && ret != -EEXIST;
	bool miss = ret == -ENOENT && !vivify;

	SRV_ADD(c->srv, decr_hits, a->decr && hit);
	SRV_ADD(c->srv, decr_misses, a->decr && miss);
	SRV_ADD(c->srv, incr_hits, !a->decr && hit);
	SRV_ADD(c->srv, incr_misses, !a->decr && miss);
	SRV_ADD(c->srv, cmd_touch, ret == 0 && a->set_exptime);
}

/* The reply to an ma whose incr or decr returned <ret>: on success <v>
 * and <m>, the new object's meta. */
static void ma_arith_reply(struct conn *c, int ret, uint64_t v,
			   const struct gs_meta *m)
{
	char value[24];

	if (ret == 0 && c->mc.store.noreply)
		return;
	if (ret == 0) {
		snprintf(value, sizeof(value), "%" PRIu64, v);
		ma_reply(c, "HD", value, m->cas, m->exptime);
	} else if (ret == -ENOENT) {	/* q does not hide NF (memcached) */
		ma_reply(c, "NF", NULL, 0, 0);
	} else if (ret == -EEXIST) {
		SRV_ADD(c->srv, cas_badval, 1);
		ma_reply(c, "EX", NULL, 0, 0);
	} else if (ret == -EINVAL) {
		REPLY(c, "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
	} else {
		reply_unless(c, false, arith_error(ret));
	}
}

/* ma N whose counter another client created first: the incr or decr goes
 * to that one (memcached, holding the key's lock, never misses it). */
static void ma_again(struct conn *c)
{
	struct pending_store *st = &c->mc.store;
	struct gs_meta m;
	uint64_t v;
	int ret = mc_arith(c->srv->e, st->key, st->klen, &st->arith, &v, &m);

	ma_count(c, ret, true);
	if (ret == -ENOENT)		/* and gone again */
		ma_reply(c, "NS", NULL, 0, 0);
	else
		ma_arith_reply(c, ret, v, &m);
}

static void ma_created(void *arg, int res, const struct gs_stored *stored)
{
	struct conn *c = arg;

	if (c->dead) {
		conn_release(c);
		return;
	}
	if (res == -EEXIST)
		ma_again(c);
	else
		ma_created_reply(c, res, stored->cas);
	c->mc.state = CONN_CMD;
	conn_schedule(c);
}

/* ma N on a miss: stores J (no delta applied, as memcached) with TTL N, if
 * the key is still absent; the reply comes from ma_created(). */
static void ma_create(struct conn *c, const struct mc_cmd *cmd)
{
	struct pending_store *st = &c->mc.store;
	char value[24];
	size_t len = snprintf(value, sizeof(value), "%" PRIu64, cmd->initial);
	size_t got = 0;
	int ret;

	st->cas = cmd->initial;
	st->exptime = exptime_absolute(cmd->viv_exptime);
	ret = gs_writer_open(conn_io(c), st->key, st->klen, len, 0, st->exptime,
			     GS_WRITE_SET, &st->writer);
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
		c->mc.state = CONN_WAIT;	/* the callback may fire at once */
		ret = gs_writer_finish(&st->writer, GS_IF_ABSENT, 0, ma_created, c);
		if (ret == 0)
			return;
		c->mc.state = CONN_CMD;
	}
	gs_writer_abort(&st->writer);
	ma_created_reply(c, ret == -EAGAIN || ret == -E2BIG ? -ENOMEM : ret, 0);
}

/* ma <key> <flags>: incr (or decr with MD) by D through the engine, C
 * compared and T set in the same step, so the reply's value, c and t are
 * of one version. */
void proto_meta_arith(struct conn *c, const struct mc_cmd *cmd)
{
	struct pending_store *st = &c->mc.store;
	struct gs_meta m = { 0 };
	uint64_t v = 0;
	int ret;

	*st = (struct pending_store){
		.op = MC_INCR, .klen = cmd->key.len, .noreply = cmd->noreply,
		.arith = { .decr = cmd->mode == 'D', .delta = cmd->delta,
			   .cas = cmd->cas, .set_exptime = cmd->has_exptime,
			   .exptime = exptime_absolute(cmd->exptime) },
	};
	memcpy(st->key, cmd->key.p, cmd->key.len);
	keep_echo(st, cmd, "Okbctv");
	ret = mc_arith(c->srv->e, st->key, st->klen, &st->arith, &v, &m);
	ma_count(c, ret, cmd->vivify);
	if (ret == -ENOENT && cmd->vivify)
		ma_create(c, cmd);
	else
		ma_arith_reply(c, ret, v, &m);
}

/* me <key>: memcached's debug line with the fields goblin keeps: exp
 * (seconds left, -1 never), cas, size (value bytes; memcached's counts
 * its item header too); no la, fetch, cls (goblin keeps no access time
 * and has no slab classes).  EN on a miss. */
void proto_meta_debug(struct conn *c, const struct mc_cmd *cmd)
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

