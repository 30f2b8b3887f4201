/*
 * What the memcache text protocol's files (proto_text.c: classic commands
 * and the input state machine; proto_meta.c; proto_stats.c; proto_store.c)
 * share.
 */
#ifndef GOBLIN_PROTO_TEXT_H
#define GOBLIN_PROTO_TEXT_H

#include "server.h"

/* Queues the string literal <s>. */
#define REPLY(c, s) conn_reply((c), s, sizeof(s) - 1)

/* proto_store.c */
void reply_unless(struct conn *c, bool noreply, const char *s);
/* The classic reply to a store of <op> that ended in <res>. */
const char *store_reply(enum mc_op op, int res);
/* The SERVER_ERROR line for an incr, decr or ma that failed with <res>
 * (not -ENOENT, -EINVAL or -EEXIST, which have replies of their own). */
const char *arith_error(int res);
/* Starts a storage command: its value is read next (or swallowed when
 * refused, the refusal replied).  <meta_reply>: an ms's reply (its q
 * hides only its success), NULL for a classic store.  Returns true (the
 * connection stays). */
bool start_store(struct conn *c, const struct mc_cmd *cmd,
		 void (*meta_reply)(struct conn *c, int res, uint64_t cas));
/* The pending store's value and its "\r\n" are read (bad_chunk set):
 * finishes the writer; the reply comes from store_done(), or at once
 * when the store fails here. */
void store_end(struct conn *c);
/* A writer has room again: input resumes. */
void value_wake(void *arg);
/* get, gets, gat, gats, mg: looks <k> up as gs_lookup() does and counts
 * it in cmd_get, get_hits, get_misses, get_expired, get_flushed (the
 * memcache front's own, as memcached's). */
int proto_lookup(struct conn *c, const struct mc_key *k, struct gs_obj **objp);
/* gat, gats, mg T: touches the object a lookup found (<obj>, pinned; NULL
 * on a miss), so the value answered is the one touched; counts it. */
void proto_touch_found(struct conn *c, struct gs_obj *obj, int64_t exptime);

/* proto_auth.c: the command <line> (<len> bytes, no "\r\n") of a
 * connection not yet authenticated: the authenticating set starts reading
 * its token (CONN_AUTH), anything else is refused. */
void proto_auth_line(struct conn *c, const char *line, size_t len);
/* The token is in mc.auth_buf: checks it, replies, back to CONN_CMD. */
void proto_auth_token(struct conn *c);

/* proto_dump.c: lru_crawler <arg>: metadump of "all" or class ids. */
void proto_lru_crawler(struct conn *c, const char *arg, size_t len);
/* Starts a listing of every object when <all> (else none), metadump's
 * lines when <meta>, else cachedump's, at most <limit> (0: no limit);
 * CONN_DUMP until its END is queued. */
void dump_start(struct conn *c, bool meta, bool all, uint64_t limit);
/* Queues the listing's next batch, or END and back to CONN_CMD. */
void dump_step(struct conn *c);

/* proto_meta.c */
void proto_meta_get(struct conn *c, const struct mc_cmd *cmd);
void proto_meta_delete(struct conn *c, const struct mc_cmd *cmd);
/* ms: a storage command in meta form. */
bool proto_meta_set(struct conn *c, const struct mc_cmd *cmd);
void proto_meta_arith(struct conn *c, const struct mc_cmd *cmd);
void proto_meta_debug(struct conn *c, const struct mc_cmd *cmd);

#endif /* GOBLIN_PROTO_TEXT_H */
