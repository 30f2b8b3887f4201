/*
 * ngx_goblin_module/ngx_http_goblin_http.c: the Range parser, If-None-Match,
 * conditional GETs (If-None-Match, If-Range, Range together), the ETag and
 * Content-Range values, the key of a URI and its extension, table-driven.
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
	/* past INT64_MAX: more than any object, never malformed (RFC 9110) */
	{ "bytes=9223372036854775808-", 10, UNSAT, 0, 0 },
	{ "bytes=18446744073709551615-", 10, UNSAT, 0, 0 },
	{ "bytes=18446744073709551616-", 10, UNSAT, 0, 0 },
	{ "bytes=99999999999999999999-", INT64_MAX, UNSAT, 0, 0 },
	{ "bytes=18446744073709551615-18446744073709551616", 10, UNSAT, 0, 0 },
	{ "bytes=18446744073709551615-5", 10, WHOLE, 0, 0 },	/* invalid */
	{ "bytes=0-9223372036854775807", 10, PART, 0, 10 },
	{ "bytes=0-99999999999999999999", 10, PART, 0, 10 },
	{ "bytes=7-18446744073709551616", 10, PART, 7, 10 },
	{ "bytes=-9223372036854775807", 10, PART, 0, 10 },
	{ "bytes=-99999999999999999999", 10, PART, 0, 10 },
	{ "bytes=-18446744073709551616", INT64_MAX, PART, 0, INT64_MAX },
	{ "bytes=00000000000000000000001-00000000000000000000002", 10, PART,
	  1, 3 },
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

#define KEY_OK		NGX_HTTP_GOBLIN_KEY_OK
#define KEY_CONTROL	NGX_HTTP_GOBLIN_KEY_CONTROL

static const struct {
	const char *uri, *prefix;
	int valid;
	const char *key;
} keys[] = {
	{ "/obj/a", "/obj/", KEY_OK, "a" },
	{ "/obj/a/b.txt", "/obj/", KEY_OK, "a/b.txt" },
	{ "/obj/", "/obj/", NGX_HTTP_GOBLIN_KEY_EMPTY, "" },
	{ "/other/a", "/obj/", KEY_OK, "/other/a" },
	{ "/obj/a", "", KEY_OK, "/obj/a" },
	{ "/obj/a b", "/obj/", KEY_OK, "a b" },
	{ "/obj/a\x7f", "/obj/", KEY_CONTROL, "a\x7f" },
	{ "/obj/a\x01", "/obj/", KEY_CONTROL, "a\x01" },
	{ "/obj/a\r\nb", "/obj/", KEY_CONTROL, "a\r\nb" },
	{ "/ob", "/obj/", KEY_OK, "/ob" },
};

#define NOT_MOD	NGX_HTTP_GOBLIN_NOT_MODIFIED

/* an object of 10 bytes, ETag "a1", stored at time 1000 */
static const struct {
	const char *title;
	const char *inm, *range, *if_range;
	int64_t if_range_time;
	int rc;
	int64_t start, end;
} conds[] = {
	{ "no header", NULL, NULL, NULL, -1, WHOLE, 0, 0 },
	{ "If-None-Match hit", "\"a1\"", NULL, NULL, -1, NOT_MOD, 0, 0 },
	{ "If-None-Match hit beats Range", "*", "bytes=2-3", NULL, -1,
	  NOT_MOD, 0, 0 },
	{ "If-None-Match miss", "\"b\"", NULL, NULL, -1, WHOLE, 0, 0 },
	{ "If-None-Match miss, Range", "\"b\"", "bytes=2-3", NULL, -1,
	  PART, 2, 4 },
	{ "Range", NULL, "bytes=2-3", NULL, -1, PART, 2, 4 },
	{ "Range past the end", NULL, "bytes=10-", NULL, -1, UNSAT, 0, 0 },
	{ "Range malformed", NULL, "bytes=x", NULL, -1, WHOLE, 0, 0 },
	{ "If-Range same ETag", NULL, "bytes=2-3", "\"a1\"", -1, PART, 2, 4 },
	{ "If-Range other ETag", NULL, "bytes=2-3", "\"b\"", -1, WHOLE, 0, 0 },
	{ "If-Range weak ETag", NULL, "bytes=2-3", "W/\"a1\"", -1,
	  WHOLE, 0, 0 },
	{ "If-Range same date", NULL, "bytes=2-3", "date", 1000, PART, 2, 4 },
	{ "If-Range other date", NULL, "bytes=2-3", "date", 999, WHOLE, 0, 0 },
	{ "If-Range no date", NULL, "bytes=2-3", "junk", -1, WHOLE, 0, 0 },
	{ "If-Range a lone quote", NULL, "bytes=2-3", "\"", -1, WHOLE, 0, 0 },
	{ "If-Range stale, Range past the end", NULL, "bytes=10-", "\"b\"",
	  -1, WHOLE, 0, 0 },
	{ "If-Range without Range", NULL, NULL, "\"a1\"", -1, WHOLE, 0, 0 },
};

static const struct {
	uint64_t store_id, cas;
	const char *etag;
} etag_values[] = {
	{ 0, 0, "\"0000000000000000-0\"" },
	{ 0x1234abcd, 0xabc, "\"000000001234abcd-abc\"" },
	{ UINT64_MAX, UINT64_MAX,
	  "\"ffffffffffffffff-ffffffffffffffff\"" },
};

static const struct {
	int rc;
	int64_t start, end;
	uint64_t size;
	const char *value;
} content_ranges[] = {
	{ PART, 0, 1, 10, "bytes 0-0/10" },
	{ PART, 2, 4, 10, "bytes 2-3/10" },
	{ PART, 0, INT64_MAX, INT64_MAX,
	  "bytes 0-9223372036854775806/9223372036854775807" },
	{ UNSAT, 0, 0, 10, "bytes */10" },
	{ UNSAT, 0, 0, UINT64_MAX, "bytes */18446744073709551615" },
};

static const struct {
	const char *key, *exten;	/* NULL: none */
} extens[] = {
	{ "a/b.txt", "txt" },
	{ "b.tar.gz", "gz" },
	{ ".hidden", "hidden" },
	{ "file.", "" },
	{ "a.b/c", NULL },
	{ "noext", NULL },
	{ "dir/", NULL },
};

static const unsigned char *str(const char *s)
{
	return (const unsigned char *)s;
}

static size_t len(const char *s)
{
	return s ? strlen(s) : 0;
}

static void check_conditionals(void)
{
	size_t i;

	for (i = 0; i < sizeof(conds) / sizeof(conds[0]); i++) {
		ngx_http_goblin_cond_t c = {
			.if_none_match = str(conds[i].inm),
			.if_none_match_len = len(conds[i].inm),
			.range = str(conds[i].range),
			.range_len = len(conds[i].range),
			.if_range = str(conds[i].if_range),
			.if_range_len = len(conds[i].if_range),
			.if_range_time = conds[i].if_range_time,
			.etag = str("\"a1\""),
			.etag_len = 4,
			.mtime = 1000,
			.size = 10,
		};
		int64_t s = -7, e = -7;
		int rc = ngx_http_goblin_conditional(&c, &s, &e);

		CHECK(rc == conds[i].rc, "%s: %d, want %d", conds[i].title,
		      rc, conds[i].rc);
		if (rc == PART && conds[i].rc == PART)
			CHECK(s == conds[i].start && e == conds[i].end,
			      "%s: [%lld, %lld)", conds[i].title,
			      (long long)s, (long long)e);
	}
}

/* PUT/DELETE preconditions in store 0x1234abcd; the object, when
 * present, has CAS 0xabc ("000000001234abcd-abc") and mtime 1000 */
#define ME	"\"000000001234abcd-abc\""
#define OTHER	"\"000000001234abce-abc\""
#define W_ANY	NGX_HTTP_GOBLIN_WRITE_ANY
#define W_ABS	NGX_HTTP_GOBLIN_WRITE_ABSENT
#define W_PRE	NGX_HTTP_GOBLIN_WRITE_PRESENT
#define W_CAS	NGX_HTTP_GOBLIN_WRITE_CAS
#define W_LOOK	NGX_HTTP_GOBLIN_WRITE_LOOKUP
#define W_FAIL	NGX_HTTP_GOBLIN_WRITE_FAILED

static const struct {
	const char *title, *im, *inm;
	int64_t ius;
	int plan;			/* write_plan() */
	uint64_t cas;			/* its CAS when W_CAS */
	int present, absent;		/* write_check() on each state */
} wconds[] = {
	{ "none", NULL, NULL, -1, W_ANY, 0, W_CAS, W_ABS },
	{ "If-None-Match: *", NULL, " * ", -1, W_ABS, 0, W_FAIL, W_ABS },
	{ "If-Match: *", "*", NULL, -1, W_PRE, 0, W_CAS, W_FAIL },
	{ "If-Match: ours", ME, NULL, -1, W_CAS, 0xabc, W_CAS, W_FAIL },
	{ "If-Match: ours, spaced", "  " ME " ", NULL, -1, W_CAS, 0xabc,
	  W_CAS, W_FAIL },
	{ "If-Match: other store", OTHER, NULL, -1, W_FAIL, 0, W_FAIL,
	  W_FAIL },
	{ "If-Match: weak ours", "W/" ME, NULL, -1, W_FAIL, 0, W_FAIL,
	  W_FAIL },
	{ "If-Match: leading zero", "\"000000001234abcd-0abc\"", NULL, -1,
	  W_FAIL, 0, W_FAIL, W_FAIL },
	{ "If-Match: junk", "\"x\"", NULL, -1, W_FAIL, 0, W_FAIL, W_FAIL },
	{ "If-Match: older CAS", "\"000000001234abcd-abb\"", NULL, -1, W_CAS,
	  0xabb, W_FAIL, W_FAIL },
	{ "If-Match: list with ours", "\"000000001234abcd-1\", " ME, NULL, -1,
	  W_LOOK, 0, W_CAS, W_FAIL },
	{ "If-Match: list, none ours", OTHER ", \"zz\"", NULL, -1, W_FAIL, 0,
	  W_FAIL, W_FAIL },
	{ "If-Match beats If-Unmodified-Since", ME, NULL, 10, W_CAS, 0xabc,
	  W_CAS, W_FAIL },
	{ "If-None-Match: ours", NULL, ME, -1, W_LOOK, 0, W_FAIL, W_ABS },
	{ "If-None-Match: weak ours", NULL, "W/" ME, -1, W_LOOK, 0, W_FAIL,
	  W_ABS },
	{ "If-None-Match: other", NULL, OTHER, -1, W_LOOK, 0, W_CAS, W_ABS },
	{ "If-Unmodified-Since later", NULL, NULL, 1000, W_LOOK, 0, W_CAS,
	  W_ABS },
	{ "If-Unmodified-Since earlier", NULL, NULL, 999, W_LOOK, 0, W_FAIL,
	  W_ABS },
	{ "If-None-Match: * and If-Unmodified-Since", NULL, "*", 2000, W_LOOK,
	  0, W_FAIL, W_ABS },
};

static void check_write_conditions(void)
{
	size_t i;
	uint64_t cas;

	for (i = 0; i < sizeof(wconds) / sizeof(wconds[0]); i++) {
		ngx_http_goblin_wcond_t c = {
			.if_match = str(wconds[i].im),
			.if_match_len = len(wconds[i].im),
			.if_none_match = str(wconds[i].inm),
			.if_none_match_len = len(wconds[i].inm),
			.if_unmodified_since = wconds[i].ius,
			.store_id = 0x1234abcd,
		};
		int rc;

		cas = 7;
		rc = ngx_http_goblin_write_plan(&c, &cas);
		CHECK(rc == wconds[i].plan, "%s: plan %d, want %d",
		      wconds[i].title, rc, wconds[i].plan);
		if (rc == W_CAS)
			CHECK(cas == wconds[i].cas, "%s: CAS %llx",
			      wconds[i].title, (unsigned long long)cas);
		rc = ngx_http_goblin_write_check(&c, 1, 0xabc, 1000);
		CHECK(rc == wconds[i].present, "%s, present: %d, want %d",
		      wconds[i].title, rc, wconds[i].present);
		rc = ngx_http_goblin_write_check(&c, 0, 0, 0);
		CHECK(rc == wconds[i].absent, "%s, absent: %d, want %d",
		      wconds[i].title, rc, wconds[i].absent);
	}

	CHECK(ngx_http_goblin_etag_match_strong(str(ME), strlen(ME),
						str(ME), strlen(ME)),
	      "strong match");
	CHECK(!ngx_http_goblin_etag_match_strong(str("W/" ME), strlen(ME) + 2,
						 str(ME), strlen(ME)),
	      "a weak tag matches nothing strongly");
}

static void check_header_values(void)
{
	unsigned char buf[NGX_HTTP_GOBLIN_CONTENT_RANGE_LEN];
	const unsigned char *x;
	size_t i, n;

	CHECK(NGX_HTTP_GOBLIN_ETAG_LEN <= sizeof(buf), "ETag fits");
	for (i = 0; i < sizeof(etag_values) / sizeof(etag_values[0]); i++) {
		n = ngx_http_goblin_etag(buf, etag_values[i].store_id,
					 etag_values[i].cas);
		CHECK(n == strlen(etag_values[i].etag)
		      && memcmp(buf, etag_values[i].etag, n) == 0,
		      "ETag of %llx: '%.*s', want '%s'",
		      (unsigned long long)etag_values[i].cas, (int)n,
		      (const char *)buf, etag_values[i].etag);
	}

	for (i = 0; i < sizeof(content_ranges) / sizeof(content_ranges[0]);
	     i++) {
		n = ngx_http_goblin_content_range(buf, content_ranges[i].rc,
						  content_ranges[i].start,
						  content_ranges[i].end,
						  content_ranges[i].size);
		CHECK(n == strlen(content_ranges[i].value)
		      && memcmp(buf, content_ranges[i].value, n) == 0,
		      "Content-Range '%.*s', want '%s'", (int)n,
		      (const char *)buf, content_ranges[i].value);
	}

	for (i = 0; i < sizeof(extens) / sizeof(extens[0]); i++) {
		x = str("?");
		n = 99;
		ngx_http_goblin_key_exten(str(extens[i].key),
					  strlen(extens[i].key), &x, &n);
		if (extens[i].exten == NULL)
			CHECK(x == NULL && n == 0, "'%s' has no extension",
			      extens[i].key);
		else
			CHECK(x != NULL && n == strlen(extens[i].exten)
			      && memcmp(x, extens[i].exten, n) == 0,
			      "extension of '%s': '%.*s', want '%s'",
			      extens[i].key, (int)n, x ? (const char *)x : "",
			      extens[i].exten);
	}
}

/* The path a Location or Content-Location names on this server. */
static void check_location_paths(void)
{
	static const struct {
		const char *v, *path;	/* path NULL: names none of ours */
		const char *target;	/* as sent */
	} cases[] = {
		{ "/o/a", "/o/a", "/o/a" },
		{ "/o/a?x=1#f", "/o/a", "/o/a?x=1" },
		{ "/o/a%20b%2Fc", "/o/a b/c", "/o/a%20b%2Fc" },
		{ "http://localhost/o/a", "/o/a", "/o/a" },
		{ "HTTPS://LocalHost/o/a?b", "/o/a", "/o/a?b" },
		{ "//localhost/o/a", "/o/a", "/o/a" },
		{ "http://localhost", "/", "" },
		{ "http://localhost?q", "/", "?q" },
		{ "http://localhost:8080/o/a", NULL, NULL },	/* another host */
		{ "http://other/o/a", NULL, NULL },
		{ "http://user@localhost/o/a", NULL, NULL },
		{ "ftp://localhost/o/a", NULL, NULL },
		{ "o/a", NULL, NULL },			/* relative */
		{ "", NULL, NULL },
		{ "/o/%zz", NULL, NULL },
		{ "/o/%2", NULL, NULL },
		{ "/o//a", NULL, NULL },		/* nginx merges these */
		{ "/o/./a", NULL, NULL },
		{ "/o/../a", NULL, NULL },
		{ "/o/..", NULL, NULL },
		{ "/o/%2e%2E/a", NULL, NULL },
		{ "/o/..a/.b", "/o/..a/.b", "/o/..a/.b" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned char buf[64];
		size_t len = strlen(cases[i].v);
		size_t t = 99, tlen = 99;
		long n = ngx_http_goblin_location_path(
			(const unsigned char *)cases[i].v, len,
			(const unsigned char *)"localhost", 9, buf, &t, &tlen);

		if (!cases[i].path) {
			CHECK(n == -1, "location '%s': none, got %ld", cases[i].v,
			      n);
			continue;
		}
		CHECK(n >= 0 && (size_t)n <= len + 1
		      && (size_t)n == strlen(cases[i].path)
		      && memcmp(buf, cases[i].path, (size_t)n) == 0,
		      "location '%s': '%.*s', want '%s'", cases[i].v,
		      n < 0 ? 0 : (int)n, (const char *)buf, cases[i].path);
		CHECK(t + tlen <= len && tlen == strlen(cases[i].target)
		      && memcmp(cases[i].v + t, cases[i].target, tlen) == 0,
		      "location '%s': target at %zu, %zu bytes, want '%s'",
		      cases[i].v, t, tlen, cases[i].target);
	}
}

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
		size_t klen = 0, bad = 99;
		int valid = ngx_http_goblin_key_map(
			(const unsigned char *)keys[i].uri, strlen(keys[i].uri),
			(const unsigned char *)keys[i].prefix,
			strlen(keys[i].prefix), 250, &k, &klen, &bad);

		CHECK(valid == keys[i].valid, "key of '%s': valid %d",
		      keys[i].uri, valid);
		if (valid == KEY_CONTROL)
			CHECK(bad == 1, "key of '%s': bad byte at %zu",
			      keys[i].uri, bad);
		CHECK(klen == strlen(keys[i].key)
		      && memcmp(k, keys[i].key, klen) == 0,
		      "key of '%s': '%.*s', want '%s'", keys[i].uri,
		      (int)klen, (const char *)k, keys[i].key);
	}

	{
		unsigned char long_key[251];

		memset(long_key, 'k', sizeof(long_key));
		size_t bad;

		CHECK(ngx_http_goblin_key_valid(long_key, 250, 250, &bad)
		      == KEY_OK, "250 bytes");
		CHECK(ngx_http_goblin_key_valid(long_key, 251, 250, &bad)
		      == NGX_HTTP_GOBLIN_KEY_LONG, "251 bytes");
	}

	check_conditionals();
	check_header_values();
	check_write_conditions();
	check_location_paths();

	return check_result();
}
