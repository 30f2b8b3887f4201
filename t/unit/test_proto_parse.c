/* usage: test_proto_parse
 * Checks storaged/mc/proto_parse.c on the classic commands: every command
 * form, every error form and the line limits of the memcache text-protocol
 * parser (meta commands: test_proto_meta; numbers, HTTP and random lines:
 * test_proto_edges).
 * Exit 0 when every check passes, 1 otherwise (each failure printed). */
#include "proto_check.h"

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
	if (OK("lru_crawler  metadump all "))
		CHECK(cmd.op == MC_LRU_CRAWLER && cmd.arg_len == 12 &&
		      !memcmp(cmd.arg, "metadump all", 12));
	if (OK("lru_crawler"))
		CHECK(cmd.op == MC_LRU_CRAWLER && cmd.arg == NULL);

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

int main(int argc, char **argv)
{
	if (argc > 1)
		return proto_test_usage(argc, argv, "test_proto_parse",
					"Checks the memcache text-protocol parser");
	test_get();
	test_line_limit();
	test_storage();
	test_delete();
	test_arith();
	test_touch();
	test_flush_all();
	test_misc();
	return proto_test_result("test_proto_parse");
}
