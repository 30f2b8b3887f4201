/*
 * What the memcache parser's unit tests (t/unit/test_proto_*.c) share:
 * the parse-and-compare helpers OK/ERR/CERR, CHECK, and line builders.
 * One test binary per file; each counts its own failures.
 */
#ifndef GOBLIN_TEST_PROTO_CHECK_H
#define GOBLIN_TEST_PROTO_CHECK_H

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

static inline const char *rc_name(int rc)
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
static inline int expect_at(const char *line, size_t len, unsigned max_keys, int rc,
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

static inline int key_is(const struct mc_key *k, const char *s)
{
	return k->p && k->len == strlen(s) && !memcmp(k->p, s, k->len);
}

/* "<prefix><n * c><suffix>" in a static buffer. */
static inline const char *repeat(const char *prefix, char c, size_t n,
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
static inline const char *get_n(unsigned n)
{
	static char buf[2 * MC_LINE_MAX];
	size_t len = sprintf(buf, "get");
	unsigned i;

	for (i = 0; i < n; i++)
		len += sprintf(buf + len, " k%u", i);
	return buf;
}

/* The usage line for --help, or the exit status of a bad argument. */
static inline int proto_test_usage(int argc, char **argv, const char *name,
				   const char *what)
{
	printf("usage: %s\n%s; exit 0 pass, 1 fail.\n", name, what);
	return argc > 1 && strcmp(argv[1], "--help") ? 2 : 0;
}

/* The last line, and the exit status. */
static inline int proto_test_result(const char *name)
{
	printf("%s: %d failure(s)\n", name, failures);
	return failures ? 1 : 0;
}

#endif /* GOBLIN_TEST_PROTO_CHECK_H */
