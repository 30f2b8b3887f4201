/*
 * memcache text protocol: parser of one command line (memcached 1.6 rules).
 *
 * Pure: no I/O, no allocation, no state.  Keys and arguments point into the
 * caller's line, which must outlive the parsed command.
 *
 *   get|gets <key>+                  gat|gats <exptime> <key>+
 *   set|add|replace|append|prepend <key> <flags> <exptime> <bytes> [noreply]
 *   cas <key> <flags> <exptime> <bytes> <cas unique> [noreply]
 *   delete <key> [0] [noreply]       incr|decr <key> <delta> [noreply]
 *   touch <key> <exptime> [noreply]  flush_all [<delay>] [noreply]
 *   verbosity <level> [noreply]      stats [<args>]     version     quit
 *   lru_crawler [<args>]
 *   mg <key> <flag>*   ms <key> <bytes> <flag>*   md <key> <flag>*   mn
 *   ma <key> <flag>*   me <key> [b]
 *     flags (meta): mg  c f k O q s t v T<ttl>
 *                   ms  c k O q C<cas> F<flags> T<ttl> M<mode: E A P R S>
 *                   md  k O q C<cas>
 *                   ma  c k O q t v C<cas> N<ttl> J<initial> D<delta>
 *                       T<ttl> M<mode: I + D ->; f h I l s u ignored
 *                   all b (the key is base64: decoded into <kbuf>)
 *                       P<...> L<...> (proxy hints, ignored)
 *     others (h, u, E, I, R, l, x, ...) are refused: "invalid flag"
 *     (ma: any bad flag or value is "invalid or duplicate flag", as
 *     memcached 1.6.18 says; a key that is not padded base64 is "error
 *     decoding key", for ma and md "invalid or duplicate flag", for me "bad
 *     command line format".  Stricter than memcached: a '=' before the
 *     end is refused, not read as the end)
 *
 * Tokens are separated by one or more spaces (only ' ').  Results:
 *   MC_PARSE_ERROR         unknown command or wrong number of tokens: the
 *                          server answers "ERROR".
 *   MC_PARSE_CLIENT_ERROR  right command, bad token: the server answers
 *                          "CLIENT_ERROR <cmd->error>".  As in memcached, the
 *                          data block of a rejected storage command is not
 *                          consumed: it is read as the next command line.
 *   MC_PARSE_CLOSE         an unknown command whose last token starts with
 *                          "HTTP/" ("GET / HTTP/1.1"): as memcached does
 *                          against cross-protocol attacks, the server hangs
 *                          up without a reply.
 * Numbers are decimal digits only (exptime and delay may start with '-')
 * and must fit their field: flags 32 bits, exptime/delay/T int64, cas/C and
 * delta 64 bits, <bytes> at most MC_BYTES_MAX; anything else is refused,
 * never truncated or wrapped.  A meta flag is a printable letter: a token
 * starting with NUL or any other byte is "invalid flag".
 * Stricter than memcached: an unknown token where "noreply" may stand, or
 * any token after it, is a CLIENT_ERROR ("bad command line format"), not
 * ignored; version and quit take no arguments; gat/gats need a key; flags
 * of 2^32 and more are refused instead of truncated.  "verbosity noreply"
 * is verbosity 0, silently (as memcached).
 */
#ifndef GOBLIN_PROTO_PARSE_H
#define GOBLIN_PROTO_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "goblin.h"			/* GS_KEY_MAX: bytes in a key */

#define MC_LINE_MAX	65536		/* bytes in a command line, no "\r\n" */
#define MC_GET_LINE_MAX	(1 << 20)	/* a get/gets/gat/gats line: memcached takes
					 * multigets of any length, we 1 MiB */
#define MC_KEYS_MAX	1024		/* keys parsed at once (a get with more
					 * is answered in batches: <rest>) */
#define MC_BYTES_MAX	((uint64_t)INT32_MAX - 2)	/* memcached's rule: <bytes> + "\r\n"
						 * fits an int */

enum mc_op {
	MC_GET, MC_GETS, MC_GAT, MC_GATS,
	MC_SET, MC_ADD, MC_REPLACE, MC_APPEND, MC_PREPEND, MC_CAS,
	MC_DELETE, MC_INCR, MC_DECR, MC_TOUCH,
	MC_FLUSH_ALL, MC_STATS, MC_VERSION, MC_VERBOSITY, MC_QUIT,
	MC_LRU_CRAWLER,
	MC_MG, MC_MS, MC_MD, MC_MN, MC_MA, MC_ME,	/* meta commands */
};

#define MC_META_MAX	16		/* flags on one meta command */

/* One meta flag: its letter and what follows it in the token. */
struct mc_meta {
	char flag;
	uint8_t len;
	const char *v;
};

enum mc_parse_result {
	MC_PARSE_OK,
	MC_PARSE_ERROR,
	MC_PARSE_CLIENT_ERROR,
	MC_PARSE_CLOSE,		/* looks like HTTP: hang up, no reply */
};

/* 1 to GS_KEY_MAX bytes, none of them a control character or space. */
struct mc_key {
	const char *p;
	uint8_t len;
};

struct mc_cmd {
	enum mc_op op;
	struct mc_key key;	/* single-key commands; get family: keys[0] */
	struct mc_key *keys;	/* get family: the caller's <keys> array */
	unsigned nkeys;
	const char *rest;	/* get family: the keys past <keys> (all
				 * checked), for mc_next_keys(); NULL if none */
	size_t rest_len;
	uint32_t flags;
	int64_t exptime;	/* as sent: memcached's relative/absolute rule */
	uint64_t bytes;		/* storage commands: value bytes, no "\r\n" */
	uint64_t cas;
	uint64_t delta;		/* incr/decr */
	bool noreply;
	const char *arg;	/* stats: text after "stats " (NULL if none) */
	size_t arg_len;
	uint32_t level;		/* verbosity */
	int64_t delay;		/* flush_all: an exptime (<= 30 days relative,
				 * else absolute); <= 0 means now */
	const char *error;	/* MC_PARSE_CLIENT_ERROR: text after "CLIENT_ERROR " */
	/* meta commands: flags in the order sent; their values are also
	 * parsed into the fields above (F -> flags, T -> exptime, C -> cas,
	 * q -> noreply, D -> delta) and <mode> (ms: 'S' unless M says
	 * otherwise; ma: 'I' incr or 'D' decr) */
	struct mc_meta meta[MC_META_MAX];
	unsigned nmeta;
	bool has_exptime, has_cas;
	char mode;
	bool vivify;		/* ma N<ttl>: create on a miss, TTL <viv_exptime> */
	int64_t viv_exptime;
	uint64_t initial;	/* ma J: the value created on a miss */
	bool binary;		/* b: <key> points into <kbuf>, decoded */
	char kbuf[GS_KEY_MAX];
	bool swallow;		/* MC_PARSE_CLIENT_ERROR of an ms whose <bytes>
				 * were read: the data block must be skipped */
};

/*
 * Parses the command <line> of <len> bytes, without its "\r\n" or "\n",
 * into <cmd>; get-family keys go to <keys>, which has room for <max_keys>
 * (more than MC_KEYS_MAX are never taken; every key is checked, those that do
 * not fit are left in <cmd>->rest).  Returns an mc_parse_result.
 * On MC_PARSE_CLIENT_ERROR, <cmd>->error says why (memcached's wording where
 * it has one; "line too long" is ours), <cmd>->op is
 * set unless the line was too long, and <cmd>->noreply tells whether the
 * line ended in "noreply" (memcached then sends no error either).
 */
int mc_parse(const char *line, size_t len, struct mc_cmd *cmd,
	     struct mc_key *keys, unsigned max_keys);

/*
 * Takes up to <max_keys> keys from the <*rest_len> bytes at <*rest> (a get's
 * <rest>, already checked by mc_parse) into <keys>, advancing <*rest> and
 * <*rest_len> past them (to NULL, 0 after the last).  Returns the count.
 */
unsigned mc_next_keys(const char **rest, size_t *rest_len,
		      struct mc_key *keys, unsigned max_keys);

/* True when the first <len> bytes of a line (no "\n" yet) may begin a get,
 * gets, gat or gats, whose lines may be up to MC_GET_LINE_MAX bytes. */
bool mc_is_get_line(const char *line, size_t len);

/* Writes the base64 form of <len> bytes at <src> to <dst> (room for
 * MC_BASE64_LEN(len) bytes, no NUL); returns its length. */
#define MC_BASE64_LEN(len)	(((len) + 2) / 3 * 4)
size_t mc_base64_encode(const void *src, size_t len, char *dst);

#endif /* GOBLIN_PROTO_PARSE_H */
