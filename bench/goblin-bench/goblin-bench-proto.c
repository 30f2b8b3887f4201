/* goblin-bench wire protocols: see goblin-bench-proto.h. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "goblin-bench-proto.h"

enum {
	ST_HEAD,	/* memcache reply line / http status line */
	ST_HEADERS,	/* http header lines */
	ST_BODY,
	ST_DATA_END,	/* memcache "\r\n" after the data */
	ST_END_LINE,	/* memcache "END" after a value */
};

int gb_key_name(char *buf, size_t cap, uint64_t index)
{
	return snprintf(buf, cap, "gb:%" PRIu64, index);
}

size_t gb_req_head(char *buf, size_t cap, enum gb_proto proto, enum gb_op op,
		   const char *key, uint64_t size, const char *host_hdr,
		   const char *prefix)
{
	int n;

	if (proto == GB_PROTO_MEMCACHE && op == GB_OP_GET)
		n = snprintf(buf, cap, "get %s\r\n", key);
	else if (proto == GB_PROTO_MEMCACHE)
		n = snprintf(buf, cap, "set %s 0 0 %" PRIu64 "\r\n", key, size);
	else if (op == GB_OP_GET)
		n = snprintf(buf, cap, "GET %s%s HTTP/1.1\r\nHost: %s\r\n\r\n",
			     prefix, key, host_hdr);
	else
		n = snprintf(buf, cap,
			     "PUT %s%s HTTP/1.1\r\nHost: %s\r\n"
			     "Content-Length: %" PRIu64 "\r\n\r\n",
			     prefix, key, host_hdr, size);
	return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

const char *gb_req_tail(enum gb_proto proto, enum gb_op op)
{
	return proto == GB_PROTO_MEMCACHE && op == GB_OP_SET ? "\r\n" : "";
}

void gb_resp_start(struct gb_resp *r, enum gb_proto proto, enum gb_op op,
		   const char *key)
{
	r->proto = proto;
	r->op = op;
	r->key = key;
	r->state = ST_HEAD;
	r->result = GB_RESP_MORE;
	r->line_len = 0;
	r->body_len = r->body_got = 0;
	r->have_len = r->sink_body = r->close_after = false;
	r->status = 0;
	r->end_got = 0;
	r->msg[0] = '\0';
}

static enum gb_outcome fail(struct gb_resp *r, const char *what)
{
	snprintf(r->msg, sizeof(r->msg), "%s: \"%.100s\"", what, r->line);
	return GB_RESP_PROTO;
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Strict decimal, no sign, no overflow; whole string unless <end>. */
static bool parse_u64(const char *s, uint64_t *v, const char **end)
{
	char *e;

	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	*v = strtoull(s, &e, 10);
	if (errno)
		return false;
	if (end)
		*end = e;
	return end || *e == '\0';
}

static bool mc_error_line(struct gb_resp *r)
{
	if (!has_prefix(r->line, "SERVER_ERROR") &&
	    !has_prefix(r->line, "CLIENT_ERROR") && strcmp(r->line, "ERROR"))
		return false;
	snprintf(r->msg, sizeof(r->msg), "%.150s", r->line);
	return true;
}

static enum gb_outcome mc_value_line(struct gb_resp *r)
{
	const char *s = r->line + 6, *e;
	size_t klen = strlen(r->key);
	uint64_t flags, bytes;

	if (strncmp(s, r->key, klen) || s[klen] != ' ')
		return fail(r, "VALUE for another key");
	s += klen + 1;
	if (!parse_u64(s, &flags, &e) || *e != ' ')
		return fail(r, "bad VALUE flags");
	if (!parse_u64(e + 1, &bytes, &e) || (*e != '\0' && *e != ' '))
		return fail(r, "bad VALUE length");
	r->body_len = bytes;
	r->sink_body = true;
	r->result = GB_RESP_HIT;
	r->state = bytes ? ST_BODY : ST_DATA_END;
	return GB_RESP_MORE;
}

static enum gb_outcome mc_line(struct gb_resp *r)
{
	if (r->state == ST_END_LINE)
		return strcmp(r->line, "END") ? fail(r, "no END after value")
					      : r->result;
	if (mc_error_line(r))
		return GB_RESP_ERROR;
	if (r->op == GB_OP_SET) {
		if (!strcmp(r->line, "STORED"))
			return GB_RESP_STORED;
		if (!strcmp(r->line, "NOT_STORED") ||
		    !strcmp(r->line, "EXISTS") ||
		    !strcmp(r->line, "NOT_FOUND")) {
			snprintf(r->msg, sizeof(r->msg), "%.150s", r->line);
			return GB_RESP_ERROR;
		}
		return fail(r, "unexpected reply to set");
	}
	if (!strcmp(r->line, "END"))
		return GB_RESP_MISS;
	if (has_prefix(r->line, "VALUE "))
		return mc_value_line(r);
	return fail(r, "unexpected reply to get");
}

static enum gb_outcome http_status_line(struct gb_resp *r)
{
	const char *s = r->line;

	if (!has_prefix(s, "HTTP/1.") || !isdigit((unsigned char)s[7]) ||
	    s[8] != ' ' || !isdigit((unsigned char)s[9]) ||
	    !isdigit((unsigned char)s[10]) || !isdigit((unsigned char)s[11]) ||
	    (s[12] != ' ' && s[12] != '\0'))
		return fail(r, "bad HTTP status line");
	r->status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
	r->close_after = s[7] == '0';
	r->have_len = false;
	r->state = ST_HEADERS;
	return GB_RESP_MORE;
}

static bool has_token(const char *list, const char *token)
{
	size_t n = strlen(token);

	for (const char *s = list; *s; s++)
		if (!strncasecmp(s, token, n) &&
		    (s == list || s[-1] == ' ' || s[-1] == ',') &&
		    (s[n] == '\0' || s[n] == ' ' || s[n] == ','))
			return true;
	return false;
}

static enum gb_outcome http_header(struct gb_resp *r)
{
	char *colon = strchr(r->line, ':'), *v;
	uint64_t len;

	if (!colon || colon == r->line)
		return fail(r, "bad HTTP header");
	*colon = '\0';
	for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
		;
	if (!strcasecmp(r->line, "Content-Length")) {
		if (!parse_u64(v, &len, NULL) || (r->have_len && len != r->body_len)) {
			*colon = ':';
			return fail(r, "bad Content-Length");
		}
		r->body_len = len;
		r->have_len = true;
	} else if (!strcasecmp(r->line, "Transfer-Encoding")) {
		if (strcasecmp(v, "identity")) {
			*colon = ':';
			return fail(r, "unsupported Transfer-Encoding");
		}
	} else if (!strcasecmp(r->line, "Connection")) {
		if (has_token(v, "close"))
			r->close_after = true;
		else if (has_token(v, "keep-alive"))
			r->close_after = false;
	}
	return GB_RESP_MORE;
}

static enum gb_outcome http_head_done(struct gb_resp *r)
{
	int st = r->status;

	if (st >= 100 && st < 200) {	/* interim: the real answer follows */
		r->state = ST_HEAD;
		return GB_RESP_MORE;
	}
	if (r->op == GB_OP_GET && st == 200)
		r->result = GB_RESP_HIT;
	else if (r->op == GB_OP_GET && st == 404)
		r->result = GB_RESP_MISS;
	else if (r->op == GB_OP_SET && (st == 200 || st == 201 || st == 204))
		r->result = GB_RESP_STORED;
	else
		r->result = GB_RESP_ERROR;
	if (r->result == GB_RESP_ERROR)
		snprintf(r->msg, sizeof(r->msg), "HTTP status %d", st);
	if (st == 204 || st == 304) {
		r->body_len = 0;
	} else if (!r->have_len) {
		snprintf(r->msg, sizeof(r->msg),
			 "HTTP %d without Content-Length", st);
		return GB_RESP_PROTO;
	}
	r->sink_body = r->result == GB_RESP_HIT;
	if (!r->body_len)
		return r->result;
	r->state = ST_BODY;
	return GB_RESP_MORE;
}

static enum gb_outcome http_line(struct gb_resp *r)
{
	if (r->state == ST_HEAD)
		return http_status_line(r);
	if (r->line_len == 0)
		return http_head_done(r);
	return http_header(r);
}

/* One complete line in r->line: returns MORE to go on, else the outcome. */
static enum gb_outcome on_line(struct gb_resp *r)
{
	r->line_len--;				/* '\n' */
	if (r->line_len && r->line[r->line_len - 1] == '\r')
		r->line_len--;
	r->line[r->line_len] = '\0';
	if (memchr(r->line, '\0', r->line_len))
		return fail(r, "NUL in reply line");
	if (r->proto == GB_PROTO_MEMCACHE)
		return mc_line(r);
	return http_line(r);
}

size_t gb_resp_feed(struct gb_resp *r, const char *p, size_t n,
		    gb_body_sink sink, void *ctx, enum gb_outcome *out)
{
	size_t i = 0, take;
	const char *nl;
	enum gb_outcome o;

	*out = GB_RESP_MORE;
	while (i < n) {
		switch (r->state) {
		case ST_BODY:
			take = n - i;
			if (take > r->body_len - r->body_got)
				take = (size_t)(r->body_len - r->body_got);
			if (r->sink_body && sink)
				sink(ctx, r->body_got, p + i, take, r->body_len);
			r->body_got += take;
			i += take;
			if (r->body_got < r->body_len)
				break;
			if (r->proto == GB_PROTO_HTTP) {
				*out = r->result;
				return i;
			}
			r->state = ST_DATA_END;
			break;
		case ST_DATA_END:
			if (p[i] != "\r\n"[r->end_got]) {
				snprintf(r->msg, sizeof(r->msg),
					 "no \\r\\n after %" PRIu64 " data bytes",
					 r->body_len);
				*out = GB_RESP_PROTO;
				return i;
			}
			i++;
			if (++r->end_got == 2)
				r->state = ST_END_LINE;
			break;
		default:
			nl = memchr(p + i, '\n', n - i);
			take = nl ? (size_t)(nl - (p + i)) + 1 : n - i;
			if (r->line_len + take >= GB_LINE_MAX) {
				r->line[r->line_len] = '\0';
				*out = fail(r, "reply line too long");
				return i;
			}
			memcpy(r->line + r->line_len, p + i, take);
			r->line_len += take;
			i += take;
			if (!nl)
				break;
			o = on_line(r);
			r->line_len = 0;
			if (o != GB_RESP_MORE) {
				*out = o;
				return i;
			}
		}
	}
	return i;
}
