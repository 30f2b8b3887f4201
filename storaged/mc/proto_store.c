/*
 * What the classic and the meta commands share: a storage command's value
 * read into a writer and its reply, the error replies, the
 * touch of gat and mg T.  Below proto_text.c and proto_meta.c: an ms
 * answers through the reply it gave start_store(), so nothing here calls
 * up into the meta commands.
 */
#include <errno.h>
#include <string.h>

#include "exptime.h"
#include "mc_items.h"
#include "proto_text.h"

void reply_unless(struct conn *c, bool noreply, const char *s)
{
	if (!noreply)
		conn_reply(c, s, strlen(s));
}


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

/* A writer's completion: the store's reply, then the next command. */
static void store_done(void *arg, int res, const struct gs_stored *stored)
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
	if (st->meta_reply)
		st->meta_reply(c, res, stored->cas);
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

bool start_store(struct conn *c, const struct mc_cmd *cmd,
		 void (*meta_reply)(struct conn *c, int res, uint64_t cas))
{
	struct pending_store *st = &c->mc.store;
	struct gs_engine *e = c->srv->e;
	int ret;

	SRV_ADD(c->srv, cmd_set, 1);
	*st = (struct pending_store){ .op = cmd->op, .klen = cmd->key.len,
				      .flags = cmd->flags,
				      .exptime = exptime_absolute(cmd->exptime),
				      .cas = cmd->cas, .noreply = cmd->noreply,
				      .meta_reply = meta_reply,
				      .len = cmd->bytes };
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
	reply_unless(c, cmd->noreply && !meta_reply && ret == -E2BIG,
		     store_reply(cmd->op, ret));
	c->mc.swallow = cmd->bytes + 2;
	c->mc.state = CONN_SWALLOW;
	return true;
}

void store_end(struct conn *c)
{
	struct pending_store *st = &c->mc.store;
	int ret;

	c->mc.state = CONN_WAIT;
	if (st->bad_chunk) {
		gs_writer_abort(&st->writer);
		SRV_ADD(c->srv, protocol_errors, 1);
		reply_unless(c, st->noreply && !st->meta_reply,
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
		if (st->meta_reply)
			st->meta_reply(c, ret, 0);
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


int proto_lookup(struct conn *c, const struct mc_key *k, struct gs_obj **objp)
{
	enum gs_miss why;
	int ret = gs_lookup_why(c->srv->e, k->p, k->len, objp, &why);

	SRV_ADD(c->srv, cmd_get, 1);
	SRV_ADD(c->srv, get_hits, ret == 0);
	SRV_ADD(c->srv, get_misses, ret != 0);
	SRV_ADD(c->srv, get_expired, ret != 0 && why == GS_MISS_EXPIRED);
	SRV_ADD(c->srv, get_flushed, ret != 0 && why == GS_MISS_FLUSHED);
	return ret;
}

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
