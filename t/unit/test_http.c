/*
 * ngx_goblin_module/ngx_http_goblin_http.c: the Range parser, If-None-Match
 * and the key of a URI, table-driven.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "../../ngx_goblin_module/ngx_http_goblin_http.h"

#define WHOLE	NGX_HTTP_GOBLIN_RANGE_WHOLE
#define PART	NGX_HTTP_GOBLIN_RANGE_PART
#define UNSAT	NGX_HTTP_GOBLIN_RANGE_UNSATISFIABLE

static const struct {
	const char *v;
	int64_t size;
	int rc;
	int64_t start, end;
} ranges[] = {
	{ "bytes=0-0", 10, PART, 0, 1 },
	{ "bytes=0-9", 10, PART, 0, 10 },
	{ "bytes=0-99", 10, PART, 0, 10 },
	{ "bytes=3-", 10, PART, 3, 10 },
	{ "bytes=9-", 10, PART, 9, 10 },
	{ "bytes=10-", 10, UNSAT, 0, 0 },
	{ "bytes=10-20", 10, UNSAT, 0, 0 },
	{ "bytes=-1", 10, PART, 9, 10 },
	{ "bytes=-10", 10, PART, 0, 10 },
	{ "bytes=-11", 10, PART, 0, 10 },
	{ "bytes=-0", 10, UNSAT, 0, 0 },
	{ "bytes=-5", 0, UNSAT, 0, 0 },
	{ "bytes=0-", 0, UNSAT, 0, 0 },
	{ "BYTES=2-3", 10, PART, 2, 4 },
	{ "Bytes= 2 - 3 ", 10, PART, 2, 4 },
	{ "bytes=\t2-3", 10, PART, 2, 4 },
	{ "bytes=5-2", 10, WHOLE, 0, 0 },	/* invalid: ignored */
	{ "bytes=0-1,4-5", 10, WHOLE, 0, 0 },	/* several: the whole */
	{ "bytes=", 10, WHOLE, 0, 0 },
	{ "bytes=-", 10, WHOLE, 0, 0 },
	{ "bytes=a-1", 10, WHOLE, 0, 0 },
	{ "bytes=1-a", 10, WHOLE, 0, 0 },
	{ "bytes 1-2", 10, WHOLE, 0, 0 },
	{ "bytes\x1d" "1-2", 10, WHOLE, 0, 0 },	/* not '=' */
	{ "items=1-2", 10, WHOLE, 0, 0 },
	{ "bytes=--1", 10, WHOLE, 0, 0 },
	{ "bytes=1--2", 10, WHOLE, 0, 0 },
	{ "bytes", 10, WHOLE, 0, 0 },
	{ "", 10, WHOLE, 0, 0 },
	{ "bytes=9223372036854775807-", 10, UNSAT, 0, 0 },
	{ "bytes=9223372036854775808-", 10, WHOLE, 0, 0 },	/* overflow */
	{ "bytes=0-9223372036854775807", 10, PART, 0, 10 },
	{ "bytes=0-99999999999999999999", 10, WHOLE, 0, 0 },
	{ "bytes=-9223372036854775807", 10, PART, 0, 10 },
	{ "bytes=-99999999999999999999", 10, WHOLE, 0, 0 },
	{ "bytes=5-", INT64_MAX, PART, 5, INT64_MAX },
	{ "bytes=0-9223372036854775806", INT64_MAX, PART, 0, INT64_MAX },
	{ "bytes=1-2", -1, WHOLE, 0, 0 },
};

static const struct {
	const char *list;
	int match;
} etags[] = {
	{ "\"a1\"", 1 },
	{ "W/\"a1\"", 1 },
	{ "\"b\", \"a1\"", 1 },
	{ "\"b\",W/\"a1\"", 1 },
	{ " \t,\"a1\" ", 1 },
	{ "*", 1 },
	{ " * ", 1 },
	{ "\"b\", *", 1 },
	{ "\"a1", 0 },		/* no closing quote */
	{ "\"a", 0 },
	{ "\"", 0 },
	{ "a1", 0 },		/* not quoted */
	{ "\"a1\"x", 0 },
	{ "\"A1\"", 0 },
	{ "W/", 0 },
	{ "W/\"", 0 },
	{ "*x", 0 },
	{ "\"b\"", 0 },
	{ "", 0 },
	{ ",,,", 0 },
	{ "\"a1,\"", 0 },
};

static const struct {
	const char *uri, *prefix;
	int valid;
	const char *key;
} keys[] = {
	{ "/obj/a", "/obj/", 1, "a" },
	{ "/obj/a/b.txt", "/obj/", 1, "a/b.txt" },
	{ "/obj/", "/obj/", 0, "" },
	{ "/other/a", "/obj/", 1, "/other/a" },
	{ "/obj/a", "", 1, "/obj/a" },
	{ "/obj/a b", "/obj/", 0, "a b" },
	{ "/obj/a\x7f", "/obj/", 0, "a\x7f" },
	{ "/obj/a\x01", "/obj/", 0, "a\x01" },
	{ "/ob", "/obj/", 1, "/ob" },
};

int main(void)
{
	size_t i;

	for (i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		int64_t s = -7, e = -7;
		int rc = ngx_http_goblin_range_parse(
			(const unsigned char *)ranges[i].v, strlen(ranges[i].v),
			ranges[i].size, &s, &e);

		CHECK(rc == ranges[i].rc, "\"%s\" of %lld: %d, want %d",
		      ranges[i].v, (long long)ranges[i].size, rc,
		      ranges[i].rc);
		if (rc == PART && ranges[i].rc == PART)
			CHECK(s == ranges[i].start && e == ranges[i].end,
			      "\"%s\": [%lld, %lld), want [%lld, %lld)",
			      ranges[i].v, (long long)s, (long long)e,
			      (long long)ranges[i].start,
			      (long long)ranges[i].end);
		if (rc != PART)
			CHECK(s == -7 && e == -7, "\"%s\": start/end set",
			      ranges[i].v);
	}

	for (i = 0; i < sizeof(etags) / sizeof(etags[0]); i++) {
		int m = ngx_http_goblin_etag_match(
			(const unsigned char *)etags[i].list,
			strlen(etags[i].list),
			(const unsigned char *)"\"a1\"", 4);

		CHECK(m == etags[i].match, "If-None-Match '%s': %d, want %d",
		      etags[i].list, m, etags[i].match);
	}

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const unsigned char *k = NULL;
		size_t klen = 0;
		int valid = ngx_http_goblin_key_map(
			(const unsigned char *)keys[i].uri, strlen(keys[i].uri),
			(const unsigned char *)keys[i].prefix,
			strlen(keys[i].prefix), 250, &k, &klen);

		CHECK(valid == keys[i].valid, "key of '%s': valid %d",
		      keys[i].uri, valid);
		CHECK(klen == strlen(keys[i].key)
		      && memcmp(k, keys[i].key, klen) == 0,
		      "key of '%s': '%.*s', want '%s'", keys[i].uri,
		      (int)klen, (const char *)k, keys[i].key);
	}

	{
		unsigned char long_key[251];

		memset(long_key, 'k', sizeof(long_key));
		CHECK(ngx_http_goblin_key_valid(long_key, 250, 250), "250 bytes");
		CHECK(!ngx_http_goblin_key_valid(long_key, 251, 250),
		      "251 bytes");
	}

	return check_result();
}
