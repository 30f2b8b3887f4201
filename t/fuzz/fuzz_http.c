/*
 * libFuzzer target: the module's Range parser, If-None-Match evaluation and
 * key mapping (ngx_goblin_module/ngx_http_goblin_http.c), with their
 * invariants: a range lies inside the object (0 <= start < end <= size),
 * nothing is written for a whole or unsatisfiable answer, the conditional
 * evaluation agrees with Range alone and its Content-Range fits, a tag
 * always matches itself, a key and its extension lie inside its URI and
 * the key is valid when said so; Cache-Control (ngx_http_goblin_fresh.c)
 * is read within its bytes and the freshness left is never negative, never
 * over what the response said, and 0 for no-store, private and no-cache;
 * the path a Location names is decoded inside its buffer, normalized.
 * Input: byte 0 picks the function (0xcc: Cache-Control, 0xc1: Location,
 * then a host length byte, the host, the value), bytes 1-8 the
 * object size (or the response's Age), the rest is the header (or, for
 * keys, prefix length byte then URI).
 * sources: ngx_goblin_module/ngx_http_goblin_http.c ngx_goblin_module/ngx_http_goblin_fresh.c
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ngx_http_goblin_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Range alone gives the same answer through ngx_http_goblin_conditional(),
 * and its Content-Range fits its buffer. */
static void check_conditional(const uint8_t *v, size_t len, int64_t osize,
			      int rc, int64_t start, int64_t end)
{
	unsigned char cr[NGX_HTTP_GOBLIN_CONTENT_RANGE_LEN];
	ngx_http_goblin_cond_t c = {
		.range = v, .range_len = len, .if_range_time = -1,
		.size = osize,
	};
	int64_t s = -1, e = -1;
	size_t n;

	if (ngx_http_goblin_conditional(&c, &s, &e) != rc || s != start ||
	    e != end)
		abort();
	if (rc == NGX_HTTP_GOBLIN_RANGE_WHOLE)
		return;
	n = ngx_http_goblin_content_range(cr, rc, start, end,
					  (uint64_t)osize);
	if (n == 0 || n >= sizeof(cr))
		abort();
}

/* PUT/DELETE preconditions: If-Match and If-None-Match copied out of
 * <p> (split at its first byte), the store <id>; what write_plan() says
 * before the object is known holds for write_check() on it. */
static void check_write(const uint8_t *p, size_t len, uint64_t id)
{
	ngx_http_goblin_wcond_t c;
	size_t split;
	uint8_t *v;
	uint64_t cas = 0;
	int plan, pres, abs_;

	if (len == 0)
		return;
	split = p[0] % len;
	v = malloc(len);
	if (v == NULL)
		return;
	memcpy(v, p + 1, len - 1);
	memset(&c, 0, sizeof(c));
	c.if_match = (p[0] & 1) ? v : NULL;
	c.if_match_len = c.if_match ? split : 0;
	c.if_none_match = (p[0] & 2) ? v + split : NULL;
	c.if_none_match_len = c.if_none_match ? len - 1 - split : 0;
	c.if_unmodified_since = (p[0] & 4) ? (int64_t)(id & 0xffff) : -1;
	c.store_id = id;

	plan = ngx_http_goblin_write_plan(&c, &cas);
	pres = ngx_http_goblin_write_check(&c, 1, cas, 0);
	abs_ = ngx_http_goblin_write_check(&c, 0, 0, 0);
	if (plan < NGX_HTTP_GOBLIN_WRITE_ANY ||
	    plan > NGX_HTTP_GOBLIN_WRITE_FAILED ||
	    (pres != NGX_HTTP_GOBLIN_WRITE_CAS &&
	     pres != NGX_HTTP_GOBLIN_WRITE_FAILED) ||
	    (abs_ != NGX_HTTP_GOBLIN_WRITE_ABSENT &&
	     abs_ != NGX_HTTP_GOBLIN_WRITE_FAILED))
		abort();
	if (plan == NGX_HTTP_GOBLIN_WRITE_CAS &&
	    (pres != NGX_HTTP_GOBLIN_WRITE_CAS ||
	     ngx_http_goblin_write_check(&c, 1, cas + 1, 0) !=
	     NGX_HTTP_GOBLIN_WRITE_FAILED))
		abort();
	if (plan == NGX_HTTP_GOBLIN_WRITE_ABSENT &&
	    (pres != NGX_HTTP_GOBLIN_WRITE_FAILED ||
	     abs_ != NGX_HTTP_GOBLIN_WRITE_ABSENT))
		abort();
	if (plan == NGX_HTTP_GOBLIN_WRITE_PRESENT &&
	    abs_ != NGX_HTTP_GOBLIN_WRITE_FAILED)
		abort();
	if (plan == NGX_HTTP_GOBLIN_WRITE_FAILED &&
	    pres != NGX_HTTP_GOBLIN_WRITE_FAILED)
		abort();
	free(v);
}

/* One Cache-Control value <v>,<len> of a response that came with <age>;
 * returns 0. */
static int check_cc(const uint8_t *v, size_t len, int64_t age)
{
	ngx_http_goblin_cc_t cc;
	uint8_t *copy = malloc(len ? len : 1);
	int64_t left, said;

	if (copy == NULL)
		return 0;
	memcpy(copy, v, len);
	ngx_http_goblin_cc_init(&cc);
	ngx_http_goblin_cc_parse(copy, len, &cc);
	free(copy);
	if (cc.max_age < -1 || cc.max_age > NGX_HTTP_GOBLIN_DELTA_MAX ||
	    cc.s_maxage < -1 || cc.s_maxage > NGX_HTTP_GOBLIN_DELTA_MAX ||
	    cc.min_fresh < -1 || cc.min_fresh > NGX_HTTP_GOBLIN_DELTA_MAX ||
	    cc.stale_if_error < -1 ||
	    cc.stale_if_error > NGX_HTTP_GOBLIN_DELTA_MAX ||
	    cc.stale_while_revalidate < -1 ||
	    cc.stale_while_revalidate > NGX_HTTP_GOBLIN_DELTA_MAX ||
	    (cc.no_cache && ngx_http_goblin_cc_satisfies(&cc, 0, age)))
		abort();
	left = ngx_http_goblin_lifetime(&cc, NGX_HTTP_GOBLIN_NO_EXPIRES,
					1800000000, age, 600);
	said = cc.s_maxage >= 0 ? cc.s_maxage
	       : cc.max_age >= 0 ? cc.max_age : 600;
	if (left < 0 || left > said ||
	    ((cc.no_store || cc.private || cc.no_cache) && left != 0) ||
	    (age <= 0 && !cc.no_store && !cc.private && !cc.no_cache &&
	     left != said))
		abort();
	return 0;
}

/* A Location value (after a host of the length its first byte says): the
 * path lies in its buffer, starts with '/', has no empty, "." or ".."
 * segment, and the target lies inside the value. */
static int check_location(const uint8_t *p, size_t len)
{
	size_t hlen, vlen, t = 0, tlen = 0;
	uint8_t *host, *v, *buf;
	long n;

	if (len == 0)
		return 0;
	hlen = p[0] % 32 < len - 1 ? p[0] % 32 : len - 1;
	vlen = len - 1 - hlen;
	host = malloc(hlen ? hlen : 1);
	v = malloc(vlen ? vlen : 1);
	buf = malloc(vlen + 1);
	if (!host || !v || !buf)
		goto out;
	memcpy(host, p + 1, hlen);
	memcpy(v, p + 1 + hlen, vlen);
	n = ngx_http_goblin_location_path(v, vlen, host, hlen, buf, &t, &tlen);
	if (n == -1)
		goto out;
	if (n < 1 || (size_t)n > vlen + 1 || buf[0] != '/' || t + tlen > vlen)
		abort();
	for (long i = 0; i < n; i++)
		if (buf[i] == '/' && i + 1 < n &&
		    (buf[i + 1] == '/' ||
		     (buf[i + 1] == '.' && (i + 2 == n || buf[i + 2] == '/' ||
					    (buf[i + 2] == '.' &&
					     (i + 3 == n || buf[i + 3] == '/'))))))
			abort();
out:
	free(host);
	free(v);
	free(buf);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int64_t osize, start = -1, end = -1;
	const uint8_t *p;
	size_t len, i;
	int rc;

	if (size < 9)
		return 0;
	memcpy(&osize, data + 1, sizeof(osize));
	p = data + 9;
	len = size - 9;

	if (data[0] == 0xcc || data[0] == 0xc1)
		return data[0] == 0xcc ? check_cc(p, len, osize)
				       : check_location(p, len);

	switch (data[0] % 4) {
	case 0: {
		/* a copy of exactly len bytes so ASan sees any over-read */
		uint8_t *v = malloc(len ? len : 1);

		if (v == NULL)
			return 0;
		memcpy(v, p, len);
		if (data[0] & 0x80)
			osize &= 0xffffff;	/* small objects too */
		rc = ngx_http_goblin_range_parse(v, len, osize, &start, &end);
		if (rc == NGX_HTTP_GOBLIN_RANGE_PART) {
			if (!(osize > 0 && start >= 0 && start < end &&
			      end <= osize))
				abort();
		} else if (rc == NGX_HTTP_GOBLIN_RANGE_WHOLE ||
			   rc == NGX_HTTP_GOBLIN_RANGE_UNSATISFIABLE) {
			if (start != -1 || end != -1)
				abort();
		} else {
			abort();
		}
		check_conditional(v, len, osize, rc, start, end);
		free(v);
		break;
	}
	case 1: {
		uint8_t *v = malloc(len ? len : 1), *tag;
		size_t half = len / 2;

		if (v == NULL)
			return 0;
		memcpy(v, p, len);
		rc = ngx_http_goblin_etag_match(v, len, v, half);
		if (rc != 0 && rc != 1)
			abort();
		/* "<bytes without quotes>" matches itself, plain and W/ */
		tag = malloc(half + 4);
		if (tag == NULL) {
			free(v);
			return 0;
		}
		tag[0] = 'W';
		tag[1] = '/';
		tag[2] = '"';
		for (i = 0; i < half; i++)
			tag[3 + i] = v[i] == '"' ? 'q' : v[i];
		tag[3 + half] = '"';
		if (ngx_http_goblin_etag_match(tag + 2, half + 2, tag + 2,
					       half + 2) != 1 ||
		    ngx_http_goblin_etag_match(tag, half + 4, tag + 2,
					       half + 2) != 1)
			abort();
		free(tag);
		free(v);
		break;
	}
	case 2:
		check_write(p, len, (uint64_t)osize);
		break;
	default: {
		const unsigned char *key = NULL;
		size_t klen = 0, plen, bad = 0;
		uint8_t *v;

		if (len == 0)
			return 0;
		plen = p[0] % (len);
		v = malloc(len - 1 ? len - 1 : 1);
		if (v == NULL)
			return 0;
		memcpy(v, p + 1, len - 1);
		rc = ngx_http_goblin_key_map(v, len - 1, v, plen < len - 1 ?
					     plen : 0, 250, &key, &klen, &bad);
		if (key < v || klen > len - 1 || key + klen > v + len - 1)
			abort();
		if (rc == NGX_HTTP_GOBLIN_KEY_OK) {
			if (klen == 0 || klen > 250)
				abort();
			for (i = 0; i < klen; i++)
				if (key[i] < ' ' || key[i] == 0x7f)
					abort();
		} else if (rc == NGX_HTTP_GOBLIN_KEY_CONTROL) {
			if (bad >= klen ||
			    (key[bad] >= ' ' && key[bad] != 0x7f))
				abort();
		} else if (rc == NGX_HTTP_GOBLIN_KEY_LONG ? klen <= 250
			   : rc != NGX_HTTP_GOBLIN_KEY_EMPTY || klen != 0) {
			abort();
		}
		{
			const unsigned char *x;
			size_t xlen;

			ngx_http_goblin_key_exten(key, klen, &x, &xlen);
			if (x != NULL ? x <= key || x + xlen != key + klen ||
					x[-1] != '.'
				      : xlen != 0)
				abort();
		}
		free(v);
		break;
	}
	}
	return 0;
}
