/*
 * memcache text protocol: one command line to a struct mc_cmd.  See
 * proto_parse.h for the grammar and for where this is stricter than
 * memcached.
 */
#include <string.h>

#include "proto_parse.h"

#define MC_ARGS_MAX	6	/* cas <key> <flags> <exptime> <bytes> <cas> noreply */

#define BAD_FORMAT	"bad command line format"
#define DELETE_USAGE	"bad command line format.  Usage: delete <key> [noreply]"
#define BAD_EXPTIME	"invalid exptime argument"
#define BAD_DELTA	"invalid numeric delta argument"

struct tok {
	const char *p;
	size_t len;
};

/* The unread part of a line. */
struct cursor {
	const char *p;
	const char *end;
};

/* Commands with a fixed argument count get their arguments as tokens. */
typedef int (*parse_args_fn)(struct mc_cmd *cmd, const struct tok *arg,
			     unsigned nargs);
/* The get family and stats read the rest of the line themselves. */
typedef int (*parse_rest_fn)(struct mc_cmd *cmd, struct cursor *cur,
			     struct mc_key *keys, unsigned max_keys);

/* A command: <args> or <rest> parses what follows its name (neither: no
 * arguments). */
struct mc_def {
	const char *name;
	uint8_t min_args;
	uint8_t max_args;	/* "noreply" included */
	bool noreply;		/* may end in "noreply" */
	parse_args_fn args;
	parse_rest_fn rest;
};

static int parse_get(struct mc_cmd *, struct cursor *, struct mc_key *, unsigned);
static int parse_stats(struct mc_cmd *, struct cursor *, struct mc_key *, unsigned);
static int parse_storage(struct mc_cmd *, const struct tok *, unsigned);
static int parse_delete(struct mc_cmd *, const struct tok *, unsigned);
static int parse_key_number(struct mc_cmd *, const struct tok *, unsigned);
static int parse_flush_all(struct mc_cmd *, const struct tok *, unsigned);
static int parse_verbosity(struct mc_cmd *, const struct tok *, unsigned);
static int parse_meta(struct mc_cmd *, struct cursor *, struct mc_key *, unsigned);

static const struct mc_def mc_defs[] = {
	[MC_GET]	= { "get",       0, 0, false, NULL, parse_get },
	[MC_GETS]	= { "gets",      0, 0, false, NULL, parse_get },
	[MC_GAT]	= { "gat",       0, 0, false, NULL, parse_get },
	[MC_GATS]	= { "gats",      0, 0, false, NULL, parse_get },
	[MC_SET]	= { "set",       4, 5, true, parse_storage, NULL },
	[MC_ADD]	= { "add",       4, 5, true, parse_storage, NULL },
	[MC_REPLACE]	= { "replace",   4, 5, true, parse_storage, NULL },
	[MC_APPEND]	= { "append",    4, 5, true, parse_storage, NULL },
	[MC_PREPEND]	= { "prepend",   4, 5, true, parse_storage, NULL },
	[MC_CAS]	= { "cas",       5, 6, true, parse_storage, NULL },
	[MC_DELETE]	= { "delete",    1, 3, true, parse_delete, NULL },
	[MC_INCR]	= { "incr",      2, 3, true, parse_key_number, NULL },
	[MC_DECR]	= { "decr",      2, 3, true, parse_key_number, NULL },
	[MC_TOUCH]	= { "touch",     2, 3, true, parse_key_number, NULL },
	[MC_FLUSH_ALL]	= { "flush_all", 0, 2, true, parse_flush_all, NULL },
	[MC_STATS]	= { "stats",     0, 0, false, NULL, parse_stats },
	[MC_VERSION]	= { "version",   0, 0, false, NULL, NULL },
	[MC_VERBOSITY]	= { "verbosity", 1, 2, true, parse_verbosity, NULL },
	[MC_QUIT]	= { "quit",      0, 0, false, NULL, NULL },
	[MC_LRU_CRAWLER] = { "lru_crawler", 0, 0, false, NULL, parse_stats },
	[MC_MG]		= { "mg",        0, 0, false, NULL, parse_meta },
	[MC_MS]		= { "ms",        0, 0, false, NULL, parse_meta },
	[MC_MD]		= { "md",        0, 0, false, NULL, parse_meta },
	[MC_MN]		= { "mn",        0, 0, false, NULL, NULL },
	[MC_MA]		= { "ma",        0, 0, false, NULL, parse_meta },
	[MC_ME]		= { "me",        0, 0, false, NULL, parse_meta },
};

#define MC_NDEFS	(sizeof(mc_defs) / sizeof(mc_defs[0]))

static int client_error(struct mc_cmd *cmd, const char *why)
{
	cmd->error = why;
	return MC_PARSE_CLIENT_ERROR;
}

/* Moves <cur> past the next space-separated token, stored in <t>; false at
 * the end of the line. */
static bool next_tok(struct cursor *cur, struct tok *t)
{
	while (cur->p < cur->end && *cur->p == ' ')
		cur->p++;
	if (cur->p == cur->end)
		return false;
	t->p = cur->p;
	while (cur->p < cur->end && *cur->p != ' ')
		cur->p++;
	t->len = cur->p - t->p;
	return true;
}

static bool tok_is(const struct tok *t, const char *s)
{
	return t->len == strlen(s) && !memcmp(t->p, s, t->len);
}

/* Decimal digits only, at most <max>. */
static bool tok_u64(const struct tok *t, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!t->len)
		return false;
	for (i = 0; i < t->len; i++) {
		unsigned d = (unsigned char)t->p[i] - '0';

		if (d > 9 || v > (max - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

/* An optional '-', then decimal digits; int64_t range. */
static bool tok_s64(const struct tok *t, int64_t *out)
{
	struct tok digits = *t;
	bool neg = t->len && t->p[0] == '-';
	uint64_t v;

	if (neg) {
		digits.p++;
		digits.len--;
	}
	if (!tok_u64(&digits, (uint64_t)INT64_MAX + neg, &v))
		return false;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

static bool tok_key(const struct tok *t, struct mc_key *key)
{
	size_t i;

	if (t->len > GS_KEY_MAX)
		return false;
	for (i = 0; i < t->len; i++) {
		unsigned char c = t->p[i];

		if (c < 0x20 || c == 0x7f)
			return false;
	}
	key->p = t->p;
	key->len = t->len;
	return true;
}

/* get|gets <key>+, gat|gats <exptime> <key>+: every key is checked, the
 * first <max_keys> are stored, the rest left in cmd->rest. */
static int parse_get(struct mc_cmd *cmd, struct cursor *cur,
		     struct mc_key *keys, unsigned max_keys)
{
	unsigned limit = max_keys < MC_KEYS_MAX ? max_keys : MC_KEYS_MAX;
	struct mc_key key;
	struct tok t;

	if (cmd->op == MC_GAT || cmd->op == MC_GATS) {
		if (!next_tok(cur, &t))
			return MC_PARSE_ERROR;
		if (!tok_s64(&t, &cmd->exptime))
			return client_error(cmd, BAD_EXPTIME);
	}
	cmd->keys = keys;
	while (next_tok(cur, &t)) {
		if (!tok_key(&t, &key))
			return client_error(cmd, BAD_FORMAT);
		if (cmd->nkeys < limit)
			keys[cmd->nkeys++] = key;
		else if (!cmd->rest)
			cmd->rest = t.p;
	}
	if (!cmd->nkeys)
		return MC_PARSE_ERROR;
	if (cmd->rest)
		cmd->rest_len = cur->end - cmd->rest;
	cmd->key = keys[0];
	return MC_PARSE_OK;
}

unsigned mc_next_keys(const char **rest, size_t *rest_len,
		      struct mc_key *keys, unsigned max_keys)
{
	struct cursor cur = { *rest, *rest + *rest_len };
	unsigned n = 0;
	struct tok t;

	while (n < max_keys && next_tok(&cur, &t)) {
		keys[n].p = t.p;
		keys[n].len = t.len;
		n++;
	}
	while (cur.p < cur.end && *cur.p == ' ')
		cur.p++;
	*rest_len = cur.end - cur.p;
	*rest = *rest_len ? cur.p : NULL;
	return n;
}

bool mc_is_get_line(const char *line, size_t len)
{
	static const char *const names[] = { "get ", "gets ", "gat ", "gats " };
	unsigned i;

	while (len && *line == ' ') {
		line++;
		len--;
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i]);

		if (len >= n && !memcmp(line, names[i], n))
			return true;
	}
	return false;
}

/* stats and lru_crawler [<args>]: the arguments are the daemon's to
 * judge. */
static int parse_stats(struct mc_cmd *cmd, struct cursor *cur,
		       struct mc_key *keys, unsigned max_keys)
{
	const char *end = cur->end;

	(void)keys;
	(void)max_keys;
	while (cur->p < end && *cur->p == ' ')
		cur->p++;
	while (end > cur->p && end[-1] == ' ')
		end--;
	if (end > cur->p) {
		cmd->arg = cur->p;
		cmd->arg_len = end - cur->p;
	}
	return MC_PARSE_OK;
}

/* <key> <flags> <exptime> <bytes> [<cas unique>] */
static int parse_storage(struct mc_cmd *cmd, const struct tok *arg,
			 unsigned nargs)
{
	unsigned want = cmd->op == MC_CAS ? 5 : 4;
	uint64_t flags;

	if (nargs != want || !tok_key(&arg[0], &cmd->key) ||
	    !tok_u64(&arg[1], UINT32_MAX, &flags) ||
	    !tok_s64(&arg[2], &cmd->exptime) ||
	    !tok_u64(&arg[3], MC_BYTES_MAX, &cmd->bytes) ||
	    (cmd->op == MC_CAS && !tok_u64(&arg[4], UINT64_MAX, &cmd->cas)))
		return client_error(cmd, BAD_FORMAT);
	cmd->flags = flags;
	return MC_PARSE_OK;
}

/* <key> [0]: memcached 1.6 refuses any other hold time. */
static int parse_delete(struct mc_cmd *cmd, const struct tok *arg,
			unsigned nargs)
{
	if (nargs > 2 || (nargs == 2 && !tok_is(&arg[1], "0")))
		return client_error(cmd, DELETE_USAGE);
	if (!tok_key(&arg[0], &cmd->key))
		return client_error(cmd, BAD_FORMAT);
	return MC_PARSE_OK;
}

/* incr|decr <key> <delta>, touch <key> <exptime> */
static int parse_key_number(struct mc_cmd *cmd, const struct tok *arg,
			    unsigned nargs)
{
	bool touch = cmd->op == MC_TOUCH;

	if (nargs != 2 || !tok_key(&arg[0], &cmd->key))
		return client_error(cmd, BAD_FORMAT);
	if (touch ? !tok_s64(&arg[1], &cmd->exptime) :
		    !tok_u64(&arg[1], UINT64_MAX, &cmd->delta))
		return client_error(cmd, touch ? BAD_EXPTIME : BAD_DELTA);
	return MC_PARSE_OK;
}

/* [<delay>] */
static int parse_flush_all(struct mc_cmd *cmd, const struct tok *arg,
			   unsigned nargs)
{
	if (nargs > 1)
		return client_error(cmd, BAD_FORMAT);
	if (nargs == 1 && !tok_s64(&arg[0], &cmd->delay))
		return client_error(cmd, BAD_EXPTIME);
	return MC_PARSE_OK;
}

/* <level>; "verbosity noreply" is level 0 (memcached reads it so) */
static int parse_verbosity(struct mc_cmd *cmd, const struct tok *arg,
			   unsigned nargs)
{
	uint64_t level;

	if (nargs == 0 && cmd->noreply)
		return MC_PARSE_OK;
	if (nargs != 1 || !tok_u64(&arg[0], UINT32_MAX, &level))
		return client_error(cmd, BAD_FORMAT);
	cmd->level = level;
	return MC_PARSE_OK;
}

/* The flags each meta command takes; the upper-case ones carry a value. */
static const char *const meta_flags[] = {
	[MC_MG] = "bcfkOqstvTPL",
	[MC_MS] = "bckOqCFTMPL",
	[MC_MD] = "bkOqCPL",
	[MC_MA] = "bcktOqvCNJDTMPLfhIlsu",	/* f..u: taken, ignored
						 * (memcached 1.6.18) */
};

#define BAD_TOKEN	"bad token in command line format"
#define MA_BAD_FLAG	"invalid or duplicate flag"

/* A bad flag of <cmd>: ma says so in one way (memcached 1.6.18). */
static int flag_error(struct mc_cmd *cmd, const char *why)
{
	return client_error(cmd, cmd->op == MC_MA ? MA_BAD_FLAG : why);
}

static int meta_flag(struct mc_cmd *cmd, const struct tok *t)
{
	struct tok v = { t->p + 1, t->len - 1 };
	uint64_t u;

	/* strchr() would find a NUL flag at the string's end */
	if (!t->p[0] || !strchr(meta_flags[cmd->op], t->p[0]))
		return flag_error(cmd, "invalid flag");
	for (unsigned i = 0; i < cmd->nmeta; i++)
		if (cmd->meta[i].flag == t->p[0])
			return flag_error(cmd, "duplicate flag");
	if (cmd->nmeta == MC_META_MAX || v.len > 32)
		return flag_error(cmd, BAD_FORMAT);
	/* only these carry a value: "vx" is not "v" */
	if (v.len && !strchr("TNJDFCMOPL", t->p[0]))
		return flag_error(cmd, "invalid flag");
	cmd->meta[cmd->nmeta++] = (struct mc_meta){ t->p[0], v.len, v.p };
	switch (t->p[0]) {
	case 'q':
		cmd->noreply = true;
		break;
	case 'b':
		cmd->binary = true;
		break;
	case 'T':
		cmd->has_exptime = true;
		if (!tok_s64(&v, &cmd->exptime))
			return flag_error(cmd, BAD_TOKEN);
		break;
	case 'N':
		cmd->vivify = true;
		if (!tok_s64(&v, &cmd->viv_exptime))
			return flag_error(cmd, BAD_TOKEN);
		break;
	case 'J':
		if (!tok_u64(&v, UINT64_MAX, &cmd->initial))
			return flag_error(cmd, BAD_TOKEN);
		break;
	case 'D':
		if (!tok_u64(&v, UINT64_MAX, &cmd->delta))
			return flag_error(cmd, BAD_TOKEN);
		break;
	case 'F':
		if (!tok_u64(&v, UINT32_MAX, &u))
			return flag_error(cmd, BAD_TOKEN);
		cmd->flags = u;
		break;
	case 'C':
		cmd->has_cas = true;
		if (!tok_u64(&v, UINT64_MAX, &cmd->cas))
			return flag_error(cmd, BAD_TOKEN);
		break;
	case 'M':
		if (cmd->op == MC_MA) {
			if (v.len != 1 || !v.p[0] || !strchr("I+D-", v.p[0]))
				return client_error(cmd, "invalid mode for ma M token");
			cmd->mode = v.p[0] == 'D' || v.p[0] == '-' ? 'D' : 'I';
			break;
		}
		if (v.len != 1 || !v.p[0] || !strchr("EAPRS", v.p[0]))
			return client_error(cmd, "invalid mode for ms M token");
		cmd->mode = v.p[0];
		break;
	case 'O':
	case 'P':	/* P and L: hints for proxies, ignored */
	case 'L':
	default:
		break;
	}
	return MC_PARSE_OK;
}

static int b64_digit(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Decodes the padded base64 <t> into <out>; its length, or -1 when <t> is
 * not base64 or decodes to nothing. */
static int b64_decode(const struct tok *t, char *out)
{
	size_t n = 0, pad = 0;

	if (!t->len || t->len % 4)
		return -1;
	if (t->p[t->len - 1] == '=')
		pad = t->p[t->len - 2] == '=' ? 2 : 1;
	for (size_t i = 0; i < t->len; i += 4) {
		uint32_t v = 0;

		for (size_t j = 0; j < 4; j++) {
			int d = b64_digit(t->p[i + j]);

			if (d < 0 && !(i + 4 == t->len && j >= 4 - pad))
				return -1;
			v = v << 6 | (d < 0 ? 0 : d);
		}
		out[n++] = v >> 16;
		if (i + 4 < t->len || pad < 2)
			out[n++] = v >> 8;
		if (i + 4 < t->len || pad < 1)
			out[n++] = v;
	}
	return n ? (int)n : -1;
}

size_t mc_base64_encode(const void *src, size_t len, char *dst)
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *s = src;
	size_t n = 0;

	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 |
			     (i + 1 < len ? (uint32_t)s[i + 1] << 8 : 0) |
			     (i + 2 < len ? s[i + 2] : 0);

		dst[n++] = abc[v >> 18];
		dst[n++] = abc[v >> 12 & 63];
		dst[n++] = i + 1 < len ? abc[v >> 6 & 63] : '=';
		dst[n++] = i + 2 < len ? abc[v & 63] : '=';
	}
	return n;
}

/* mg|md|ma <key> <flag>*, ms <key> <bytes> <flag>*, me <key> [b] */
static int parse_meta(struct mc_cmd *cmd, struct cursor *cur,
		      struct mc_key *keys, unsigned max_keys)
{
	struct tok t, key;
	int ret, n;

	(void)keys;
	(void)max_keys;
	cmd->mode = cmd->op == MC_MA ? 'I' : 'S';
	if (cmd->op == MC_MA)
		cmd->delta = 1;
	if (!next_tok(cur, &t))
		return cmd->op == MC_ME ? client_error(cmd, BAD_FORMAT) :
					  MC_PARSE_ERROR;
	key = t;
	if (!tok_key(&t, &cmd->key))
		return client_error(cmd, BAD_FORMAT);
	if (cmd->op == MC_ME) {
		/* memcached reads b only as the token after the key */
		cmd->binary = next_tok(cur, &t) && tok_is(&t, "b");
	} else {
		if (cmd->op == MC_MS) {
			if (!next_tok(cur, &t) ||
			    !tok_u64(&t, MC_BYTES_MAX, &cmd->bytes))
				return client_error(cmd, BAD_FORMAT);
			cmd->swallow = true;
		}
		while (next_tok(cur, &t))
			if ((ret = meta_flag(cmd, &t)) != MC_PARSE_OK)
				return ret;
	}
	if (cmd->binary) {
		n = b64_decode(&key, cmd->kbuf);
		if (n < 0 && cmd->op == MC_ME)
			return client_error(cmd, BAD_FORMAT);
		if (n < 0)	/* memcached 1.6.18's words for each */
			return client_error(cmd, cmd->op == MC_MA ||
						 cmd->op == MC_MD ?
						 MA_BAD_FLAG : "error decoding key");
		cmd->key.p = cmd->kbuf;
		cmd->key.len = n;
	}
	cmd->swallow = false;
	return MC_PARSE_OK;
}

/* memcached hangs up on an unknown command whose last token starts with
 * "HTTP/": an HTTP request sent to the memcache port. */
static int unknown_command(struct cursor *cur, const struct tok *name)
{
	struct tok last = *name, t;

	while (next_tok(cur, &t))
		last = t;
	if (last.len >= 5 && !memcmp(last.p, "HTTP/", 5))
		return MC_PARSE_CLOSE;
	return MC_PARSE_ERROR;
}

static const struct mc_def *find_def(const struct tok *name, enum mc_op *op)
{
	unsigned i;

	for (i = 0; i < MC_NDEFS; i++) {
		if (tok_is(name, mc_defs[i].name)) {
			*op = i;
			return &mc_defs[i];
		}
	}
	return NULL;
}

int mc_parse(const char *line, size_t len, struct mc_cmd *cmd,
	     struct mc_key *keys, unsigned max_keys)
{
	struct cursor cur = { line, line + len };
	struct tok arg[MC_ARGS_MAX], name, t;
	const struct mc_def *def;
	unsigned nargs = 0;

	memset(cmd, 0, sizeof(*cmd));
	if (len > MC_GET_LINE_MAX ||
	    (len > MC_LINE_MAX && !mc_is_get_line(line, len)))
		return client_error(cmd, "line too long");
	if (!next_tok(&cur, &name))
		return MC_PARSE_ERROR;
	def = find_def(&name, &cmd->op);
	if (!def)
		return unknown_command(&cur, &name);
	if (def->rest)
		return def->rest(cmd, &cur, keys, max_keys);

	while (next_tok(&cur, &t)) {
		if (nargs == def->max_args)
			return MC_PARSE_ERROR;
		arg[nargs++] = t;
	}
	if (nargs < def->min_args)
		return MC_PARSE_ERROR;
	if (def->noreply && nargs && (nargs > def->min_args ||
				      cmd->op == MC_VERBOSITY) &&
	    tok_is(&arg[nargs - 1], "noreply")) {
		cmd->noreply = true;
		nargs--;
	}
	return def->args ? def->args(cmd, arg, nargs) : MC_PARSE_OK;
}
