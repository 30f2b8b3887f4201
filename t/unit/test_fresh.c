/*
 * ngx_goblin_module/ngx_http_goblin_fresh.c: Cache-Control as a shared
 * cache reads it, delta-seconds, and how long a response stays fresh
 * (s-maxage over max-age over Expires over the configured lifetime, less
 * its Age), and which may be stored for a request with Authorization,
 * table-driven.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "../../ngx_goblin_module/ngx_http_goblin_http.h"

#define BIG	NGX_HTTP_GOBLIN_DELTA_MAX

/* one Cache-Control value and what it says: -1 absent */
static const struct {
	const char *v;
	int64_t max_age, s_maxage;
	unsigned no_store, no_cache, private;
	int shared;	/* may be stored for a request with Authorization */
} ccs[] = {
	{ "", -1, -1, 0, 0, 0, 0 },
	{ "max-age=60", 60, -1, 0, 0, 0, 0 },
	{ "MAX-AGE=60", 60, -1, 0, 0, 0, 0 },
	{ "public, max-age=60", 60, -1, 0, 0, 0, 1 },
	{ "max-age=\"60\"", 60, -1, 0, 0, 0, 0 },
	{ "max-age = 60", 60, -1, 0, 0, 0, 0 },
	{ "max-age=60, s-maxage=5", 60, 5, 0, 0, 0, 1 },
	{ "max-age=0, s-maxage=3600", 0, 3600, 0, 0, 0, 1 },
	{ "max-age=abc", 0, -1, 0, 0, 0, 0 },	/* malformed: stale */
	{ "max-age=", 0, -1, 0, 0, 0, 0 },
	{ "max-age", 0, -1, 0, 0, 0, 0 },
	{ "max-age=-5", 0, -1, 0, 0, 0, 0 },
	{ "max-age=60x", 0, -1, 0, 0, 0, 0 },
	{ "max-age=60,max-age=10", 10, -1, 0, 0, 0, 0 },	/* the smaller */
	{ "max-age=99999999999999999999", BIG, -1, 0, 0, 0, 0 },
	{ "no-store", -1, -1, 1, 0, 0, 0 },
	{ "No-Cache", -1, -1, 0, 1, 0, 0 },
	{ "no-cache=\"Set-Cookie, X-A\", max-age=9", 9, -1, 0, 1, 0, 0 },
	{ "private=\"X\"", -1, -1, 0, 0, 1, 0 },
	{ "privatex, no-storex, max-agex=5, publicx", -1, -1, 0, 0, 0, 0 },
	{ "x-ext=\"a,max-age=5\", max-age=7", 7, -1, 0, 0, 0, 0 },
	{ ",,, ,\tmax-age=3 ,", 3, -1, 0, 0, 0, 0 },
	{ "must-revalidate, proxy-revalidate, max-age=4", 4, -1, 0, 0, 0, 1 },
	{ "Must-Revalidate", -1, -1, 0, 0, 0, 1 },
	{ "PUBLIC", -1, -1, 0, 0, 0, 1 },
	{ "s-maxage=\"2\"", -1, 2, 0, 0, 0, 1 },
	{ "max-age=\"5", 5, -1, 0, 0, 0, 0 },	/* an open quote ends it */
};

#define NOEXP	NGX_HTTP_GOBLIN_NO_EXPIRES
#define NOW	1800000000LL

/* a response received at NOW: seconds of freshness left */
static const struct {
	const char *cc;
	int64_t expires, age, valid, left;
} lifetimes[] = {
	{ "", NOEXP, 0, 600, 600 },		/* nothing said: valid */
	{ "", NOEXP, 0, 0, 0 },			/* valid 0: not stored */
	{ "", NOEXP, 700, 600, 0 },		/* older than valid */
	{ "", NOEXP, 100, 600, 500 },
	{ "max-age=60", NOEXP, 0, 600, 60 },
	{ "max-age=60", NOW + 5, 0, 600, 60 },	/* max-age over Expires */
	{ "max-age=60", NOEXP, 59, 600, 1 },
	{ "max-age=60", NOEXP, 60, 600, 0 },
	{ "max-age=60", NOEXP, -3, 600, 60 },
	{ "max-age=0", NOEXP, 0, 600, 0 },
	{ "max-age=60, s-maxage=5", NOEXP, 0, 600, 5 },
	{ "max-age=0, s-maxage=30", NOEXP, 0, 600, 30 },
	{ "", NOW + 30, 0, 600, 30 },		/* Expires over valid */
	{ "", NOW + 30, 10, 600, 20 },
	{ "", NOW - 30, 0, 600, 0 },		/* in the past */
	{ "", 0, 0, 600, 0 },			/* malformed */
	{ "public", NOW, 0, 600, 0 },
	{ "no-store, max-age=60", NOEXP, 0, 600, 0 },
	{ "private, max-age=60", NOEXP, 0, 600, 0 },
	{ "no-cache, max-age=60", NOEXP, 0, 600, 0 },
	{ "max-age=abc", NOEXP, 0, 600, 0 },
	{ "max-age=99999999999", NOEXP, 0, 600, BIG },
	{ "", INT64_MAX, 0, 600, BIG },
	{ "", NOEXP, 0, INT64_MAX, BIG },
};

static void parse(const char *v, ngx_http_goblin_cc_t *cc)
{
	memset(cc, 0xa5, sizeof(*cc));
	ngx_http_goblin_cc_init(cc);
	ngx_http_goblin_cc_parse((const unsigned char *)v, strlen(v), cc);
}

/* a request's Cache-Control against a stored response <age> seconds old
 * with <left> seconds of freshness */
static const struct {
	const char *cc;
	int64_t age, left;
	int ok;
} requests[] = {
	{ "", 100, 10, 1 },
	{ "no-cache", 0, 1000, 0 },
	{ "max-age=0", 0, 10, 1 },
	{ "max-age=0", 1, 10, 0 },
	{ "max-age=60", 60, 10, 1 },
	{ "max-age=60", 61, 10, 0 },
	{ "max-age=abc", 1, 10, 0 },
	{ "min-fresh=30", 0, 30, 1 },
	{ "min-fresh=30", 0, 29, 0 },
	{ "max-stale=100", 10, 10, 1 },
	{ "only-if-cached", 5, 5, 1 },
	{ "MAX-AGE=10, Min-Fresh=5", 10, 5, 1 },
	{ "max-age=10, min-fresh=5", 10, 4, 0 },
};

static void check_requests(void)
{
	ngx_http_goblin_cc_t cc;
	size_t i;

	for (i = 0; i < sizeof(requests) / sizeof(requests[0]); i++) {
		int ok;

		parse(requests[i].cc, &cc);
		ok = ngx_http_goblin_cc_satisfies(&cc, requests[i].age,
						  requests[i].left);
		CHECK(ok == requests[i].ok, "request '%s', age %lld, %lld "
		      "left: %d, want %d", requests[i].cc,
		      (long long)requests[i].age, (long long)requests[i].left,
		      ok, requests[i].ok);
	}
	parse("only-if-cached, min-fresh=7", &cc);
	CHECK(cc.only_if_cached && cc.min_fresh == 7, "only-if-cached");
	parse("max-age=5, stale-if-error=60, stale-while-revalidate=30", &cc);
	CHECK(cc.stale_if_error == 60 && cc.max_age == 5 &&
	      cc.stale_while_revalidate == 30, "stale-if-error, "
	      "stale-while-revalidate");
	parse("stale-if-error=soon", &cc);
	CHECK(cc.stale_if_error == 0, "stale-if-error malformed: none");
	parse("max-age=5", &cc);
	CHECK(cc.stale_if_error == -1, "stale-if-error absent");
}

static void check_deltas(void)
{
	static const struct {
		const char *v;
		int64_t n;
	} d[] = {
		{ "0", 0 }, { "17", 17 }, { "007", 7 }, { "", -1 },
		{ " 1", -1 }, { "1 ", -1 }, { "-1", -1 }, { "1.5", -1 },
		{ "2147483648", BIG }, { "2147483649", BIG },
		{ "184467440737095516160", BIG },
	};
	size_t i;

	for (i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
		int64_t n = ngx_http_goblin_delta((const unsigned char *)d[i].v,
						  strlen(d[i].v));

		CHECK(n == d[i].n, "delta '%s': %lld, want %lld", d[i].v,
		      (long long)n, (long long)d[i].n);
	}
}

static void check_ages(void)
{
	static const struct {
		const char *v;
		int64_t n;
	} a[] = {
		{ "30", 30 }, { "7200,0", 7200 }, { "0,7200", 0 },
		{ "0, 0", 0 }, { " 12 , 5", 12 }, { "abc", -1 },
		{ "-7200", -1 }, { "7200.0", -1 }, { "7200;foo=bar", -1 },
		{ "", -1 }, { ",5", -1 },
	};

	for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++) {
		int64_t n = ngx_http_goblin_age((const unsigned char *)a[i].v,
						strlen(a[i].v));

		CHECK(n == a[i].n, "age '%s': %lld, want %lld", a[i].v,
		      (long long)n, (long long)a[i].n);
	}
}

int main(void)
{
	ngx_http_goblin_cc_t cc;
	size_t i;

	check_deltas();
	check_ages();
	check_requests();

	for (i = 0; i < sizeof(ccs) / sizeof(ccs[0]); i++) {
		parse(ccs[i].v, &cc);
		CHECK(cc.max_age == ccs[i].max_age
		      && cc.s_maxage == ccs[i].s_maxage
		      && cc.no_store == ccs[i].no_store
		      && cc.no_cache == ccs[i].no_cache
		      && cc.private == ccs[i].private
		      && ngx_http_goblin_cc_authorized(&cc) == ccs[i].shared,
		      "'%s': max-age %lld s-maxage %lld no-store %u no-cache "
		      "%u private %u shared %d", ccs[i].v,
		      (long long)cc.max_age, (long long)cc.s_maxage,
		      cc.no_store, cc.no_cache, cc.private,
		      ngx_http_goblin_cc_authorized(&cc));
	}

	/* what forbids serving stale (RFC 9111 4.2.4) */
	{
		static const struct {
			const char *v;
			int ok;
		} st[] = {
			{ "max-age=1, stale-if-error=60", 1 },
			{ "max-age=1, must-revalidate, stale-if-error=60", 0 },
			{ "max-age=1, proxy-revalidate", 0 },
			{ "s-maxage=1, stale-while-revalidate=60", 0 },
			{ "no-cache, stale-if-error=60", 0 },
			{ "public, max-age=1", 1 },
		};

		for (i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
			parse(st[i].v, &cc);
			CHECK(ngx_http_goblin_cc_stale_ok(&cc) == st[i].ok,
			      "'%s': stale %s", st[i].v,
			      st[i].ok ? "refused" : "allowed");
		}
		parse("proxy-revalidate", &cc);
		CHECK(!ngx_http_goblin_cc_authorized(&cc),
		      "proxy-revalidate does not let Authorization store");
	}

	/* two Cache-Control headers add up */
	parse("max-age=60", &cc);
	ngx_http_goblin_cc_parse((const unsigned char *)"no-store", 8, &cc);
	CHECK(cc.max_age == 60 && cc.no_store, "two values add up");

	for (i = 0; i < sizeof(lifetimes) / sizeof(lifetimes[0]); i++) {
		int64_t left;

		parse(lifetimes[i].cc, &cc);
		left = ngx_http_goblin_lifetime(&cc, lifetimes[i].expires, NOW,
						lifetimes[i].age,
						lifetimes[i].valid);
		CHECK(left == lifetimes[i].left,
		      "'%s' expires %lld age %lld valid %lld: %lld left, "
		      "want %lld", lifetimes[i].cc,
		      (long long)lifetimes[i].expires,
		      (long long)lifetimes[i].age,
		      (long long)lifetimes[i].valid, (long long)left,
		      (long long)lifetimes[i].left);
	}

	return check_result();
}
