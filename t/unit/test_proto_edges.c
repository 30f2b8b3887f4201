/* usage: test_proto_edges
 * Checks storaged/mc/proto_parse.c at its edges: numbers at the limits of
 * their fields, HTTP request lines, command names, random lines.
 * Exit 0 when every check passes, 1 otherwise (each failure printed). */
#include "proto_check.h"
#include "mc_op_name.h"

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
		"lru_crawler", "mg", "ms", "md", "mn", "ma", "me",
	};
	unsigned i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		CHECK(!strcmp(mc_op_name(i), names[i]));
		/* the parser's table gives the name the same op */
		mc_parse(names[i], strlen(names[i]), &cmd, keys, MC_KEYS_MAX);
		CHECK(cmd.op == i);
	}
	CHECK(i == MC_ME + 1);
	CHECK(!strcmp(mc_op_name(MC_ME + 1), "unknown"));
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
	if (argc > 1)
		return proto_test_usage(argc, argv, "test_proto_edges",
					"Checks the memcache parser at its edges");
	test_numbers();
	test_http();
	test_op_names();
	test_random_lines();
	return proto_test_result("test_proto_edges");
}
