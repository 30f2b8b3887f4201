/* usage: test_proto_parse
 * Checks storaged/proto_parse.c: every command form, every error form and
 * the limits of the memcache text-protocol line parser.
 * Exit 0 when every check passes, 1 otherwise (each failure printed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_parse.h"

#define BAD_FORMAT	"bad command line format"
#define DELETE_USAGE	"bad command line format.  Usage: delete <key> [noreply]"
#define BAD_EXPTIME	"invalid exptime argument"
#define BAD_DELTA	"invalid numeric delta argument"

static int failures;
static struct mc_key keys[MC_KEYS_MAX + 8];
static struct mc_cmd cmd;

#define CHECK(cond) do { if (!(cond)) { failures++; \
	printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

static const char *rc_name(int rc)
{
	switch (rc) {
	case MC_PARSE_OK: return "OK";
	case MC_PARSE_ERROR: return "ERROR";
	case MC_PARSE_CLIENT_ERROR: return "CLIENT_ERROR";
	case MC_PARSE_CLOSE: return "CLOSE";
	}
	return "?";
}

/*
 * Parses <len> bytes of <line> with room for <max_keys> keys; the result
 * must be <rc> and, for a CLIENT_ERROR, the message <error>.  Returns
 * whether it was, so callers check fields only after a good parse.
 */
static int expect_at(const char *line, size_t len, unsigned max_keys, int rc,
		     const char *error, int at)
{
	int got = mc_parse(line, len, &cmd, keys, max_keys);

	if (got == rc && (rc != MC_PARSE_CLIENT_ERROR ||
			  (cmd.error && !strcmp(cmd.error, error))))
		return 1;
	failures++;
	printf("FAIL line %d: \"%.*s\" -> %s %s; want %s %s\n", at,
	       len > 60 ? 60 : (int)len, line, rc_name(got),
	       got == MC_PARSE_CLIENT_ERROR && cmd.error ? cmd.error : "",
	       rc_name(rc), error ? error : "");
	return 0;
}

#define OK(s)		expect_at(s, strlen(s), MC_KEYS_MAX, MC_PARSE_OK, NULL, __LINE__)
#define ERR(s)		expect_at(s, strlen(s), MC_KEYS_MAX, MC_PARSE_ERROR, NULL, __LINE__)
#define CERR(s, why)	expect_at(s, strlen(s), MC_KEYS_MAX, MC_PARSE_CLIENT_ERROR, why, __LINE__)

static int key_is(const struct mc_key *k, const char *s)
{
	return k->p && k->len == strlen(s) && !memcmp(k->p, s, k->len);
}

/* "<prefix><n * c><suffix>" in a static buffer. */
static const char *repeat(const char *prefix, char c, size_t n,
			  const char *suffix)
{
	static char buf[MC_GET_LINE_MAX + 64];
	size_t pl = strlen(prefix);

	memcpy(buf, prefix, pl);
	memset(buf + pl, c, n);
	strcpy(buf + pl + n, suffix);
	return buf;
}

/* "get k0 k1 ... k<n-1>" */
static const char *get_n(unsigned n)
{
	static char buf[2 * MC_LINE_MAX];
	size_t len = sprintf(buf, "get");
	unsigned i;

	for (i = 0; i < n; i++)
		len += sprintf(buf + len, " k%u", i);
	return buf;
}

static void test_get(void)
{
	const char *line;

	line = "get foo";
	if (OK(line)) {
		CHECK(cmd.op == MC_GET && cmd.nkeys == 1 && cmd.keys == keys);
		CHECK(key_is(&keys[0], "foo") && key_is(&cmd.key, "foo"));
		CHECK(keys[0].p == line + 4);	/* points into the line */
		CHECK(!cmd.noreply && cmd.exptime == 0);
	}
	if (OK("get a bb ccc")) {
		CHECK(cmd.nkeys == 3 && key_is(&keys[0], "a"));
		CHECK(key_is(&keys[1], "bb") && key_is(&keys[2], "ccc"));
	}
	if (OK("  get   a    b   ")) {
		CHECK(cmd.nkeys == 2 && key_is(&keys[0], "a") &&
		      key_is(&keys[1], "b"));
	}
	if (OK("gets a b"))
		CHECK(cmd.op == MC_GETS && cmd.nkeys == 2);
	if (OK("get noreply"))		/* get has no noreply: it is a key */
		CHECK(cmd.nkeys == 1 && key_is(&keys[0], "noreply") &&
		      !cmd.noreply);
	if (OK("get \xc3\xa9t\xc3\xa9"))	/* bytes >= 0x80 are allowed */
		CHECK(cmd.nkeys == 1 && keys[0].len == 5);
	if (OK("gat 100 a b")) {
		CHECK(cmd.op == MC_GAT && cmd.exptime == 100 && cmd.nkeys == 2);
		CHECK(key_is(&keys[0], "a") && key_is(&cmd.key, "a"));
	}
	if (OK("gats -1 a"))
		CHECK(cmd.op == MC_GATS && cmd.exptime == -1 && cmd.nkeys == 1);
	if (OK("gat 9223372036854775807 a"))
		CHECK(cmd.exptime == INT64_MAX);
	if (OK("gat -9223372036854775808 a"))
		CHECK(cmd.exptime == INT64_MIN);
	if (OK("gat -0 a"))
		CHECK(cmd.exptime == 0);

	CERR("gat 9223372036854775808 a", BAD_EXPTIME);
	CERR("gat -9223372036854775809 a", BAD_EXPTIME);
	CERR("gat x a", BAD_EXPTIME);
	CERR("gat 1.5 a", BAD_EXPTIME);
	CERR("gat - a", BAD_EXPTIME);
	CERR("gat +1 a", BAD_EXPTIME);
	CERR("gat x", BAD_EXPTIME);	/* memcached: exptime first */
	ERR("gat");
	ERR("gat 10");
	ERR("gats 10   ");
	ERR("get");
	ERR("get   ");
	ERR("gets");
	ERR("GET a");
	ERR("Get a");
	ERR("gett a");
	ERR("ge a");
	ERR("get\ta");

	/* key length: 250 is the most */
	if (OK(repeat("get ", 'k', 250, "")))
		CHECK(cmd.nkeys == 1 && keys[0].len == 250);
	CERR(repeat("get ", 'k', 251, ""), BAD_FORMAT);
	CERR(repeat("get a ", 'k', 251, " b"), BAD_FORMAT);
	CERR(repeat("gat 0 ", 'k', 251, ""), BAD_FORMAT);

	/* control characters in a key */
	CERR("get a\tb", BAD_FORMAT);
	CERR("get a\rb", BAD_FORMAT);
	CERR("get ok a\x01", BAD_FORMAT);
	CERR("get a\x7f", BAD_FORMAT);
	CERR("get a\x1f", BAD_FORMAT);
	expect_at("get a\0b", 7, MC_KEYS_MAX, MC_PARSE_CLIENT_ERROR,
		  BAD_FORMAT, __LINE__);
	if (expect_at("get ab\0", 6, MC_KEYS_MAX, MC_PARSE_OK, NULL, __LINE__))
		CHECK(key_is(&keys[0], "ab"));	/* <len> bounds the line */

	/* number of keys */
	if (OK(get_n(MC_KEYS_MAX)))
		CHECK(cmd.nkeys == MC_KEYS_MAX &&
		      key_is(&keys[MC_KEYS_MAX - 1], "k1023"));
	/* more keys than fit: all checked, the rest left for mc_next_keys */
	if (OK(get_n(MC_KEYS_MAX + 1))) {
		const char *rest = cmd.rest;
		size_t rest_len = cmd.rest_len;

		CHECK(cmd.nkeys == MC_KEYS_MAX && rest && rest_len == 5 &&
		      !memcmp(rest, "k1024", 5));
		CHECK(mc_next_keys(&rest, &rest_len, keys, 8) == 1 &&
		      key_is(&keys[0], "k1024") && !rest && !rest_len);
	}
	line = get_n(2);
	if (expect_at(line, strlen(line), 2, MC_PARSE_OK, NULL, __LINE__))
		CHECK(cmd.nkeys == 2 && !cmd.rest);
	line = get_n(7);
	if (expect_at(line, strlen(line), 2, MC_PARSE_OK, NULL, __LINE__)) {
		const char *rest = cmd.rest;
		size_t rest_len = cmd.rest_len;

		CHECK(cmd.nkeys == 2 && key_is(&keys[1], "k1"));
		CHECK(mc_next_keys(&rest, &rest_len, keys, 3) == 3 &&
		      key_is(&keys[0], "k2") && key_is(&keys[2], "k4") && rest);
		CHECK(mc_next_keys(&rest, &rest_len, keys, 3) == 2 &&
		      key_is(&keys[0], "k5") && key_is(&keys[1], "k6") && !rest);
	}
	/* a bad key past the first batch still fails the whole line */
	CERR(repeat("get a b c ", 'k', 251, ""), BAD_FORMAT);
	line = repeat("get a b c ", 'k', 251, "");
	expect_at(line, strlen(line), 1, MC_PARSE_CLIENT_ERROR, BAD_FORMAT,
		  __LINE__);
	if (expect_at("get a  b  ", 10, 1, MC_PARSE_OK, NULL, __LINE__)) {
		const char *rest = cmd.rest;
		size_t rest_len = cmd.rest_len;

		CHECK(mc_next_keys(&rest, &rest_len, keys, 4) == 1 &&
		      key_is(&keys[0], "b") && !rest);
	}
	CHECK(mc_is_get_line("get ", 4) && mc_is_get_line("  gats 1", 8) &&
	      !mc_is_get_line("get", 3) && !mc_is_get_line("set k", 5) &&
	      !mc_is_get_line("getx ", 5));
}

static void test_line_limit(void)
{
	char line[MC_LINE_MAX + 2];
	size_t len = 0;

	/* keys of 200 bytes up to exactly MC_LINE_MAX: the most allowed */
	len = sprintf(line, "get");
	while (len < MC_LINE_MAX) {
		size_t n = MC_LINE_MAX - len - 1;

		if (n > 200)
			n = 200;
		line[len++] = ' ';
		memset(line + len, 'a' + len % 26, n);
		len += n;
	}
	CHECK(len == MC_LINE_MAX);
	if (expect_at(line, len, MC_KEYS_MAX, MC_PARSE_OK, NULL, __LINE__))
		CHECK(cmd.nkeys == (MC_LINE_MAX - 3 + 200) / 201);
	/* a get line may be longer (memcached's multigets are unbounded) */
	line[len++] = 'z';
	expect_at(line, len, MC_KEYS_MAX, MC_PARSE_OK, NULL, __LINE__);
	CERR(repeat("get ", 'k', MC_GET_LINE_MAX - 4 + 1, ""), "line too long");
	CERR(repeat("stats ", 'k', MC_LINE_MAX - 6 + 1, ""), "line too long");
	CERR(repeat("set k 0 0 1", ' ', MC_LINE_MAX, ""), "line too long");
	if (OK(repeat("set k 0 0 1", ' ', MC_LINE_MAX - 11, "")))
		CHECK(cmd.op == MC_SET && cmd.bytes == 1);
	CERR(repeat("", ' ', MC_LINE_MAX + 1, ""), "line too long");
}

static void test_storage(void)
{
	static const struct { const char *name; enum mc_op op; } ops[] = {
		{ "set", MC_SET }, { "add", MC_ADD },
		{ "replace", MC_REPLACE }, { "append", MC_APPEND },
		{ "prepend", MC_PREPEND },
	};
	char line[128];
	unsigned i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		sprintf(line, "%s foo 5 100 10", ops[i].name);
		if (OK(line)) {
			CHECK(cmd.op == ops[i].op && key_is(&cmd.key, "foo"));
			CHECK(cmd.flags == 5 && cmd.exptime == 100);
			CHECK(cmd.bytes == 10 && !cmd.noreply);
		}
		sprintf(line, "%s foo 5 100 10 noreply", ops[i].name);
		if (OK(line))
			CHECK(cmd.op == ops[i].op && cmd.noreply &&
			      cmd.bytes == 10);
		sprintf(line, "%s foo 5 100", ops[i].name);
		ERR(line);
		sprintf(line, "%s foo 5 100 10 noreply x", ops[i].name);
		ERR(line);
		sprintf(line, "%s foo 5 100 10 junk", ops[i].name);
		CERR(line, BAD_FORMAT);
	}
	if (OK("cas foo 1 2 3 4")) {
		CHECK(cmd.op == MC_CAS && key_is(&cmd.key, "foo"));
		CHECK(cmd.flags == 1 && cmd.exptime == 2 && cmd.bytes == 3);
		CHECK(cmd.cas == 4 && !cmd.noreply);
	}
	if (OK("cas foo 1 2 3 18446744073709551615 noreply"))
		CHECK(cmd.cas == UINT64_MAX && cmd.noreply);
	if (OK("cas foo 1 2 3 0"))
		CHECK(cmd.cas == 0);
	CERR("cas foo 1 2 3 18446744073709551616", BAD_FORMAT);
	CERR("cas foo 1 2 3 -1", BAD_FORMAT);
	CERR("cas foo 1 2 3 x", BAD_FORMAT);
	CERR("cas foo 1 2 3 4 junk", BAD_FORMAT);
	ERR("cas foo 1 2 3");
	CERR("cas foo 1 2 3 noreply", BAD_FORMAT);
	ERR("cas foo 1 2 3 4 noreply x");

	/* flags: 32 bits unsigned */
	if (OK("set k 4294967295 0 1"))
		CHECK(cmd.flags == UINT32_MAX);
	if (OK("set k 0 0 1"))
		CHECK(cmd.flags == 0);
	CERR("set k 4294967296 0 1", BAD_FORMAT);
	CERR("set k 99999999999999999999 0 1", BAD_FORMAT);
	CERR("set k -1 0 1", BAD_FORMAT);
	CERR("set k +1 0 1", BAD_FORMAT);
	CERR("set k 0x1 0 1", BAD_FORMAT);
	CERR("set k abc 0 1", BAD_FORMAT);

	/* exptime: signed, negative means already expired */
	if (OK("set k 0 -1 1"))
		CHECK(cmd.exptime == -1);
	if (OK("set k 0 -9223372036854775808 1"))
		CHECK(cmd.exptime == INT64_MIN);
	if (OK("set k 0 2592000 1"))
		CHECK(cmd.exptime == 2592000);
	CERR("set k 0 - 1", BAD_FORMAT);
	CERR("set k 0 1x 1", BAD_FORMAT);
	CERR("set k 0 --1 1", BAD_FORMAT);
	CERR("set k 0 9223372036854775808 1", BAD_FORMAT);

	/* bytes: 0 to MC_BYTES_MAX (memcached: INT_MAX - 2) */
	if (OK("set k 0 0 0"))
		CHECK(cmd.bytes == 0);
	if (OK("set k 0 0 2147483645"))
		CHECK(cmd.bytes == MC_BYTES_MAX);
	CERR("set k 0 0 2147483646", BAD_FORMAT);
	CERR("set k 0 0 2147483647", BAD_FORMAT);
	CERR("set k 0 0 1099511627776", BAD_FORMAT);
	CERR("set k 0 0 9223372036854775805", BAD_FORMAT);
	CERR("set k 0 0 18446744073709551615", BAD_FORMAT);
	CERR("set k 0 0 99999999999999999999999", BAD_FORMAT);
	CERR("set k 0 0 -1", BAD_FORMAT);
	CERR("set k 0 0 1K", BAD_FORMAT);

	/* keys */
	if (OK(repeat("set ", 'k', 250, " 0 0 1")))
		CHECK(cmd.key.len == 250);
	CERR(repeat("set ", 'k', 251, " 0 0 1"), BAD_FORMAT);
	CERR("set a\x02 0 0 1", BAD_FORMAT);
	if (OK("set noreply 0 0 1"))
		CHECK(key_is(&cmd.key, "noreply") && !cmd.noreply);
	if (OK("set k 0 0 1 noreply"))
		CHECK(cmd.noreply);

	/* "noreply" must be spelt exactly */
	CERR("set k 0 0 1 NOREPLY", BAD_FORMAT);
	CERR("set k 0 0 1 noreplyy", BAD_FORMAT);

	/* a rejected line still tells which command and whether noreply */
	if (CERR("set k x 0 1 noreply", BAD_FORMAT))
		CHECK(cmd.op == MC_SET && cmd.noreply);
	if (CERR("add k x 0 1", BAD_FORMAT))
		CHECK(cmd.op == MC_ADD && !cmd.noreply);

	ERR("set");
	ERR("set k");
	ERR("set k 0 0 1 2 3 4 5 6 7 8 9");
	ERR("sett k 0 0 1");
}

static void test_delete(void)
{
	if (OK("delete foo"))
		CHECK(cmd.op == MC_DELETE && key_is(&cmd.key, "foo") &&
		      !cmd.noreply);
	if (OK("delete foo 0"))
		CHECK(key_is(&cmd.key, "foo") && !cmd.noreply);
	if (OK("delete foo noreply"))
		CHECK(key_is(&cmd.key, "foo") && cmd.noreply);
	if (OK("delete foo 0 noreply"))
		CHECK(key_is(&cmd.key, "foo") && cmd.noreply);
	if (OK("delete noreply"))
		CHECK(key_is(&cmd.key, "noreply") && !cmd.noreply);
	CERR("delete foo 1", DELETE_USAGE);
	CERR("delete foo -1", DELETE_USAGE);
	CERR("delete foo 00", DELETE_USAGE);
	CERR("delete foo 0 0", DELETE_USAGE);
	CERR("delete foo noreply 0", DELETE_USAGE);
	if (CERR("delete foo 1 noreply", DELETE_USAGE))
		CHECK(cmd.noreply);
	CERR(repeat("delete ", 'k', 251, ""), BAD_FORMAT);
	CERR("delete a\x03", BAD_FORMAT);
	if (OK(repeat("delete ", 'k', 250, " noreply")))
		CHECK(cmd.key.len == 250 && cmd.noreply);
	ERR("delete");
	ERR("delete a b c d");
}

static void test_arith(void)
{
	if (OK("incr foo 5"))
		CHECK(cmd.op == MC_INCR && key_is(&cmd.key, "foo") &&
		      cmd.delta == 5 && !cmd.noreply);
	if (OK("decr foo 18446744073709551615"))
		CHECK(cmd.op == MC_DECR && cmd.delta == UINT64_MAX);
	if (OK("incr foo 0 noreply"))
		CHECK(cmd.delta == 0 && cmd.noreply);
	if (OK("decr foo 1 noreply"))
		CHECK(cmd.op == MC_DECR && cmd.delta == 1 && cmd.noreply);
	CERR("incr foo 18446744073709551616", BAD_DELTA);
	CERR("incr foo -1", BAD_DELTA);
	CERR("decr foo abc", BAD_DELTA);
	CERR("incr foo 1.0", BAD_DELTA);
	CERR("incr foo noreply", BAD_DELTA);	/* it is the delta here */
	CERR("incr foo 1 junk", BAD_FORMAT);
	CERR(repeat("incr ", 'k', 251, " 1"), BAD_FORMAT);
	CERR("decr a\n 1", BAD_FORMAT);
	ERR("incr foo");
	ERR("decr");
	ERR("incr foo 1 noreply x");
}

static void test_touch(void)
{
	if (OK("touch foo 10"))
		CHECK(cmd.op == MC_TOUCH && key_is(&cmd.key, "foo") &&
		      cmd.exptime == 10 && !cmd.noreply);
	if (OK("touch foo -1 noreply"))
		CHECK(cmd.exptime == -1 && cmd.noreply);
	CERR("touch foo x", BAD_EXPTIME);
	CERR("touch foo 9223372036854775808", BAD_EXPTIME);
	CERR("touch foo 1 junk", BAD_FORMAT);
	CERR(repeat("touch ", 'k', 251, " 1"), BAD_FORMAT);
	ERR("touch foo");
	ERR("touch");
	ERR("touch foo 1 noreply x");
}

static void test_flush_all(void)
{
	if (OK("flush_all"))
		CHECK(cmd.op == MC_FLUSH_ALL && cmd.delay == 0 && !cmd.noreply);
	if (OK("flush_all 0"))
		CHECK(cmd.delay == 0 && !cmd.noreply);
	if (OK("flush_all 10"))
		CHECK(cmd.delay == 10);
	if (OK("flush_all -5"))
		CHECK(cmd.delay == -5);
	if (OK("flush_all noreply"))
		CHECK(cmd.delay == 0 && cmd.noreply);
	if (OK("flush_all 10 noreply"))
		CHECK(cmd.delay == 10 && cmd.noreply);
	CERR("flush_all junk", BAD_EXPTIME);
	CERR("flush_all 1s", BAD_EXPTIME);
	CERR("flush_all 0 junk", BAD_FORMAT);
	ERR("flush_all 1 2 3");
	ERR("flush_all 1 noreply x");
}

static void test_misc(void)
{
	if (OK("verbosity 1"))
		CHECK(cmd.op == MC_VERBOSITY && cmd.level == 1 && !cmd.noreply);
	if (OK("verbosity 4294967295 noreply"))
		CHECK(cmd.level == UINT32_MAX && cmd.noreply);
	CERR("verbosity 4294967296", BAD_FORMAT);
	CERR("verbosity x", BAD_FORMAT);
	CERR("verbosity -1", BAD_FORMAT);
	CERR("verbosity 1 junk", BAD_FORMAT);
	if (OK("verbosity noreply"))	/* memcached: level 0, silently */
		CHECK(cmd.level == 0 && cmd.noreply);
	CERR("verbosity noreply noreply", BAD_FORMAT);
	ERR("verbosity");
	ERR("verbosity 1 noreply x");

	if (OK("stats"))
		CHECK(cmd.op == MC_STATS && cmd.arg == NULL && cmd.arg_len == 0);
	if (OK("stats   "))
		CHECK(cmd.arg == NULL && cmd.arg_len == 0);
	if (OK("stats items"))
		CHECK(cmd.arg_len == 5 && !memcmp(cmd.arg, "items", 5));
	if (OK("stats  detail on  "))
		CHECK(cmd.arg_len == 9 && !memcmp(cmd.arg, "detail on", 9));

	if (OK("version"))
		CHECK(cmd.op == MC_VERSION);
	if (OK("  version  "))
		CHECK(cmd.op == MC_VERSION);
	ERR("version 1");
	if (OK("quit"))
		CHECK(cmd.op == MC_QUIT);
	ERR("quit now");

	ERR("");
	ERR(" ");
	ERR("          ");
	ERR("foo");
	ERR("foo bar");
	ERR("x");
	ERR("mg");		/* meta commands need a key */
	ERR("\x01get a");
	expect_at("\0", 1, MC_KEYS_MAX, MC_PARSE_ERROR, NULL, __LINE__);
	expect_at("get a", 0, MC_KEYS_MAX, MC_PARSE_ERROR, NULL, __LINE__);
	expect_at("get a", 2, MC_KEYS_MAX, MC_PARSE_ERROR, NULL, __LINE__);

	/* nothing of the previous command leaks into the next */
	OK("set k 1 2 3 noreply");
	if (OK("delete k"))
		CHECK(!cmd.noreply && cmd.flags == 0 && cmd.bytes == 0);
}

static void test_meta(void)
{
	if (OK("mg foo v f s c k O42 t T30 q")) {
		CHECK(cmd.op == MC_MG && cmd.key.len == 3 && cmd.nmeta == 9);
		CHECK(cmd.meta[0].flag == 'v' && cmd.meta[5].flag == 'O' &&
		      cmd.meta[5].len == 2 && !memcmp(cmd.meta[5].v, "42", 2));
		CHECK(cmd.has_exptime && cmd.exptime == 30 && cmd.noreply);
	}
	if (OK("ms k 5 F7 T-1 C99 MA c k")) {
		CHECK(cmd.op == MC_MS && cmd.bytes == 5 && cmd.flags == 7);
		CHECK(cmd.exptime == -1 && cmd.has_cas && cmd.cas == 99);
		CHECK(cmd.mode == 'A' && !cmd.noreply);
	}
	if (OK("ms k 0"))
		CHECK(cmd.mode == 'S' && !cmd.has_cas && !cmd.has_exptime);
	if (OK("md k C5 q O1"))
		CHECK(cmd.op == MC_MD && cmd.cas == 5 && cmd.noreply);
	if (OK("mn"))
		CHECK(cmd.op == MC_MN);
	ERR("mn x");
	ERR("ms");
	CERR("ms k", "bad command line format");
	CERR("ms k x", "bad command line format");
	CERR("mg k Z", "invalid flag");
	CERR("mg k b", "invalid flag");		/* base64 keys: not spoken */
	CERR("mg k v v", "duplicate flag");
	CERR("md k v", "invalid flag");
	CERR("mg k v5", "invalid flag");
	if (CERR("ms k 3 MX", "invalid mode for ms M token"))
		CHECK(cmd.swallow && cmd.bytes == 3);
	if (CERR("ms k 3 Tx", "bad token in command line format"))
		CHECK(cmd.swallow);
	CERR("ms k 3 F4294967296", "bad token in command line format");
	/* a flag token starting with NUL (strchr() finds the terminator) */
	expect_at("mg k \0v", 7, MC_KEYS_MAX, MC_PARSE_CLIENT_ERROR,
		  "invalid flag", __LINE__);
	expect_at("mg k v \0", 8, MC_KEYS_MAX, MC_PARSE_CLIENT_ERROR,
		  "invalid flag", __LINE__);
	expect_at("md k \0", 6, MC_KEYS_MAX, MC_PARSE_CLIENT_ERROR,
		  "invalid flag", __LINE__);
	expect_at("ms k 1 \0", 8, MC_KEYS_MAX, MC_PARSE_CLIENT_ERROR,
		  "invalid flag", __LINE__);
	expect_at("ms k 1 M\0", 9, MC_KEYS_MAX, MC_PARSE_CLIENT_ERROR,
		  "invalid mode for ms M token", __LINE__);
	CERR("mg k \x80", "invalid flag");
	/* P and L: proxy hints, taken and ignored (protocol.txt) */
	if (OK("mg k Pfoo/bar L v"))
		CHECK(cmd.nmeta == 3 && cmd.meta[2].flag == 'v');
	OK("ms k 1 P L/x");
	OK("md k Lx q");
	ERR("mn P");
	CERR("ms k 2147483646", "bad command line format");
	if (OK("ms k 2147483645"))
		CHECK(cmd.bytes == MC_BYTES_MAX);
	if (CERR("ms k x", "bad command line format"))
		CHECK(!cmd.swallow);
}

/* Every number a client sends, at and just past the edge of its field:
 * in range it parses to the exact value, past it the line is refused
 * (never truncated or wrapped). */
static void test_numbers(void)
{
	static const struct {
		const char *line;
		int rc;
		const char *error;
		char field;	/* f flags, e exptime, b bytes, c cas, d delta,
				 * y delay, l level */
		int64_t s;	/* signed fields */
		uint64_t u;	/* unsigned fields */
	} t[] = {
		{ "set k 4294967295 0 1", MC_PARSE_OK, NULL, 'f', 0, UINT32_MAX },
		{ "set k 4294967296 0 1", MC_PARSE_CLIENT_ERROR, BAD_FORMAT, 0, 0, 0 },
		{ "set k 18446744073709551616 0 1", MC_PARSE_CLIENT_ERROR, BAD_FORMAT, 0, 0, 0 },
		{ "set k 0 9223372036854775807 1", MC_PARSE_OK, NULL, 'e', INT64_MAX, 0 },
		{ "set k 0 -9223372036854775808 1", MC_PARSE_OK, NULL, 'e', INT64_MIN, 0 },
		{ "set k 0 9223372036854775808 1", MC_PARSE_CLIENT_ERROR, BAD_FORMAT, 0, 0, 0 },
		{ "set k 0 -9223372036854775809 1", MC_PARSE_CLIENT_ERROR, BAD_FORMAT, 0, 0, 0 },
		{ "set k 0 0 2147483645", MC_PARSE_OK, NULL, 'b', 0, 2147483645 },
		{ "set k 0 0 2147483646", MC_PARSE_CLIENT_ERROR, BAD_FORMAT, 0, 0, 0 },
		{ "set k 0 0 2147483647", MC_PARSE_CLIENT_ERROR, BAD_FORMAT, 0, 0, 0 },
		{ "set k 0 0 4294967297", MC_PARSE_CLIENT_ERROR, BAD_FORMAT, 0, 0, 0 },
		{ "append k 0 0 2147483646", MC_PARSE_CLIENT_ERROR, BAD_FORMAT, 0, 0, 0 },
		{ "cas k 0 0 1 18446744073709551615", MC_PARSE_OK, NULL, 'c', 0, UINT64_MAX },
		{ "cas k 0 0 1 18446744073709551616", MC_PARSE_CLIENT_ERROR, BAD_FORMAT, 0, 0, 0 },
		{ "cas k 0 0 2147483646 1", MC_PARSE_CLIENT_ERROR, BAD_FORMAT, 0, 0, 0 },
		{ "incr k 18446744073709551615", MC_PARSE_OK, NULL, 'd', 0, UINT64_MAX },
		{ "incr k 18446744073709551616", MC_PARSE_CLIENT_ERROR, BAD_DELTA, 0, 0, 0 },
		{ "decr k 99999999999999999999", MC_PARSE_CLIENT_ERROR, BAD_DELTA, 0, 0, 0 },
		{ "touch k 9223372036854775807", MC_PARSE_OK, NULL, 'e', INT64_MAX, 0 },
		{ "touch k 9223372036854775808", MC_PARSE_CLIENT_ERROR, BAD_EXPTIME, 0, 0, 0 },
		{ "gat -9223372036854775808 k", MC_PARSE_OK, NULL, 'e', INT64_MIN, 0 },
		{ "gats 9223372036854775808 k", MC_PARSE_CLIENT_ERROR, BAD_EXPTIME, 0, 0, 0 },
		{ "flush_all 9223372036854775800", MC_PARSE_OK, NULL, 'y', 9223372036854775800, 0 },
		{ "flush_all 9223372036854775807", MC_PARSE_OK, NULL, 'y', INT64_MAX, 0 },
		{ "flush_all -9223372036854775808", MC_PARSE_OK, NULL, 'y', INT64_MIN, 0 },
		{ "flush_all 9223372036854775808", MC_PARSE_CLIENT_ERROR, BAD_EXPTIME, 0, 0, 0 },
		{ "flush_all 18446744073709551616", MC_PARSE_CLIENT_ERROR, BAD_EXPTIME, 0, 0, 0 },
		{ "verbosity 4294967295", MC_PARSE_OK, NULL, 'l', 0, UINT32_MAX },
		{ "verbosity 4294967296", MC_PARSE_CLIENT_ERROR, BAD_FORMAT, 0, 0, 0 },
		{ "mg k T9223372036854775807", MC_PARSE_OK, NULL, 'e', INT64_MAX, 0 },
		{ "mg k T-9223372036854775808", MC_PARSE_OK, NULL, 'e', INT64_MIN, 0 },
		{ "mg k T9223372036854775808", MC_PARSE_CLIENT_ERROR, "bad token in command line format", 0, 0, 0 },
		{ "mg k T", MC_PARSE_CLIENT_ERROR, "bad token in command line format", 0, 0, 0 },
		{ "ms k 1 F4294967295", MC_PARSE_OK, NULL, 'f', 0, UINT32_MAX },
		{ "ms k 1 F4294967296", MC_PARSE_CLIENT_ERROR, "bad token in command line format", 0, 0, 0 },
		{ "ms k 1 F-1", MC_PARSE_CLIENT_ERROR, "bad token in command line format", 0, 0, 0 },
		{ "ms k 1 C18446744073709551615", MC_PARSE_OK, NULL, 'c', 0, UINT64_MAX },
		{ "ms k 1 C18446744073709551616", MC_PARSE_CLIENT_ERROR, "bad token in command line format", 0, 0, 0 },
		{ "md k C18446744073709551616", MC_PARSE_CLIENT_ERROR, "bad token in command line format", 0, 0, 0 },
		{ "ms k 1 T9223372036854775808", MC_PARSE_CLIENT_ERROR, "bad token in command line format", 0, 0, 0 },
		{ "ms k 2147483645", MC_PARSE_OK, NULL, 'b', 0, 2147483645 },
		{ "ms k 2147483646", MC_PARSE_CLIENT_ERROR, BAD_FORMAT, 0, 0, 0 },
		{ "ms k 99999999999999999999", MC_PARSE_CLIENT_ERROR, BAD_FORMAT, 0, 0, 0 },
		{ "mg k N30", MC_PARSE_CLIENT_ERROR, "invalid flag", 0, 0, 0 },
	};

	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (!expect_at(t[i].line, strlen(t[i].line), MC_KEYS_MAX,
			       t[i].rc, t[i].error, 1000 + i) ||
		    t[i].rc != MC_PARSE_OK)
			continue;
		switch (t[i].field) {
		case 'f': CHECK(cmd.flags == t[i].u); break;
		case 'e': CHECK(cmd.exptime == t[i].s); break;
		case 'b': CHECK(cmd.bytes == t[i].u); break;
		case 'c': CHECK(cmd.cas == t[i].u); break;
		case 'd': CHECK(cmd.delta == t[i].u); break;
		case 'y': CHECK(cmd.delay == t[i].s); break;
		case 'l': CHECK(cmd.level == t[i].u); break;
		}
	}
}

/* memcached hangs up on an unknown command whose last token starts with
 * "HTTP/"; a known command keeps its own rules. */
static void test_http(void)
{
	static const char *const close[] = {
		"GET / HTTP/1.0", "PUT /x HTTP/1.1", "DELETE HTTP/1.1",
		"HTTP/1.1", "POST /a/b?c=d HTTP/1.1", "OPTIONS * HTTP/2",
		"foo HTTP/", "HEAD  /  HTTP/1.0  ",
	};
	unsigned i;

	for (i = 0; i < sizeof(close) / sizeof(close[0]); i++)
		expect_at(close[i], strlen(close[i]), MC_KEYS_MAX,
			  MC_PARSE_CLOSE, NULL, 2000 + i);
	ERR("GET / HTTP/1.0 x");	/* not the last token */
	ERR("GET / http/1.0");
	ERR("GET");
	ERR("foo HTTP");
	if (OK("get a HTTP/1.1"))	/* a known command: its keys */
		CHECK(cmd.nkeys == 2);
	CERR("delete k HTTP/1.1", DELETE_USAGE);
	CERR("mg k HTTP/1.1", "invalid flag");
}

static void test_op_names(void)
{
	static const char *const names[] = {
		"get", "gets", "gat", "gats", "set", "add", "replace",
		"append", "prepend", "cas", "delete", "incr", "decr", "touch",
		"flush_all", "stats", "version", "verbosity", "quit",
		"mg", "ms", "md", "mn",
	};
	unsigned i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		CHECK(!strcmp(mc_op_name(i), names[i]));
	CHECK(i == MC_MN + 1);
	CHECK(!strcmp(mc_op_name(MC_MN + 1), "unknown"));
	CHECK(!strcmp(mc_op_name((enum mc_op)-1), "unknown"));
}

/* Random lines over the protocol's alphabet: any result is fine as long as
 * it is one of the three, consistent, and stays inside the line (ASan). */
static void test_random_lines(void)
{
	static const char *const words[] = {
		"get", "gat", "set", "cas", "delete", "incr", "touch",
		"flush_all", "verbosity", "stats", "version", "noreply", "0",
		"-1", "18446744073709551616", "4294967296", "k", "\t", "\x01",
		" ", "  ", "x",
	};
	const unsigned nwords = sizeof(words) / sizeof(words[0]);
	unsigned seed = 12345, pick[9], i, j, n;
	char *line;

	for (i = 0; i < 20000; i++) {
		size_t len = 0;
		int rc;

		seed = seed * 1103515245 + 12345;
		n = 1 + (seed >> 16) % 9;
		for (j = 0; j < n; j++) {
			seed = seed * 1103515245 + 12345;
			pick[j] = (seed >> 16) % nwords;
			len += strlen(words[pick[j]]) + 1;
		}
		line = malloc(len);	/* exact size: ASan sees overreads */
		if (!line)
			abort();
		len = 0;
		for (j = 0; j < n; j++) {
			memcpy(line + len, words[pick[j]], strlen(words[pick[j]]));
			len += strlen(words[pick[j]]);
			if (j + 1 < n)
				line[len++] = ' ';
		}
		rc = mc_parse(line, len, &cmd, keys, MC_KEYS_MAX);
		CHECK(rc == MC_PARSE_OK || rc == MC_PARSE_ERROR ||
		      rc == MC_PARSE_CLIENT_ERROR || rc == MC_PARSE_CLOSE);
		if (rc == MC_PARSE_CLIENT_ERROR)
			CHECK(cmd.error && *cmd.error);
		for (j = 0; rc == MC_PARSE_OK && j < cmd.nkeys; j++)
			CHECK(keys[j].p >= line && keys[j].len >= 1 &&
			      keys[j].p + keys[j].len <= line + len);
		free(line);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		printf("usage: test_proto_parse\n"
		       "Checks the memcache text-protocol parser; "
		       "exit 0 pass, 1 fail.\n");
		return strcmp(argv[1], "--help") ? 2 : 0;
	}
	test_get();
	test_line_limit();
	test_storage();
	test_delete();
	test_arith();
	test_touch();
	test_flush_all();
	test_misc();
	test_meta();
	test_numbers();
	test_http();
	test_op_names();
	test_random_lines();
	printf("test_proto_parse: %d failure(s)\n", failures);
	return failures ? 1 : 0;
}
