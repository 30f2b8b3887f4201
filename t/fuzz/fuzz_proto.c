/*
 * libFuzzer target: the memcache command-line parser (storaged/mc/proto_parse.c).
 * sources: storaged/mc/proto_parse.c
 *
 * The input is split on '\n' like the daemon's reader (a trailing '\r'
 * dropped); each line is copied to a buffer of its exact size, so ASan sees
 * any read past its end, and parsed twice: with room for every key and with
 * room for only a few.  Beyond "no crash", every result must make sense:
 * the result is one of the three; a CLIENT_ERROR has a one-line reason; an
 * accepted line has a known op named by its first token, keys of 1 to 250
 * bytes with no control byte or space, inside the line, numbers within
 * their limits, meta flags among the command's own, each once; and the
 * command written back in canonical form parses to the same command.
 * A broken invariant aborts with the line and the reason.
 *
 * FUZZ_OPEN (set by t/fuzz/run from t/fuzz/crashes/open) names bugs found
 * but not fixed yet, by the short description of their reproducer
 * (proto-<desc>): their checks are skipped, so a run can find others.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>

#include "fuzz.h"
#include "proto_parse.h"
#include "../unit/mc_op_name.h"

static struct mc_key keys[MC_KEYS_MAX + 1], keys2[MC_KEYS_MAX + 1];

static void __attribute__((noreturn))
broken(const char *line, size_t len, const char *why)
{
	fprintf(stderr, "fuzz_proto: %s: \"%.*s\" (%zu bytes)\n", why,
		len > 200 ? 200 : (int)len, line, len);
	abort();
}

#define EXPECT(cond) do { if (!(cond)) broken(line, len, #cond); } while (0)

static bool inside(const char *p, size_t n, const char *line, size_t len)
{
	return p >= line && n <= len && p - line <= (ptrdiff_t)(len - n);
}

static bool key_ok(const struct mc_key *k, const char *line, size_t len)
{
	if (!k->p || k->len < 1 || k->len > GS_KEY_MAX ||
	    !inside(k->p, k->len, line, len))
		return false;
	for (unsigned i = 0; i < k->len; i++) {
		unsigned char c = k->p[i];

		if (c <= 0x20 || c == 0x7f)
			return false;
	}
	return true;
}

static bool key_eq(const struct mc_key *a, const struct mc_key *b)
{
	return a->len == b->len && !memcmp(a->p, b->p, a->len);
}

static bool is_get(enum mc_op op)
{
	return op == MC_GET || op == MC_GETS || op == MC_GAT || op == MC_GATS;
}

static bool is_meta(enum mc_op op)
{
	return op == MC_MG || op == MC_MS || op == MC_MD || op == MC_MA;
}

/* The flags each meta command takes (proto_parse.h's list), with P and L
 * (proxy hints, any value) which the front-end hardening accepts. */
static const char *meta_allowed(enum mc_op op)
{
	return op == MC_MG ? "bcfkOqstvTPL" : op == MC_MS ? "bckOqCFTMPL" :
	       op == MC_MA ? "bcktOqvCNJDTMPLfhIlsu" : "bkOqCPL";
}

static bool has_key(enum mc_op op)
{
	return (op >= MC_SET && op <= MC_TOUCH) || is_meta(op) || op == MC_ME;
}

/* Appends <len> raw bytes (NULs too) at <*n>. */
static void put_bytes(char *buf, size_t cap, size_t *n, const char *p,
		      size_t len)
{
	if (*n + len < cap)
		memcpy(buf + *n, p, len);
	*n += len;
}

/* A canonical line for <c>: single spaces, every field as parsed. */
static size_t write_back(const struct mc_cmd *c, char *buf, size_t cap)
{
	const char *name = mc_op_name(c->op);
	size_t n = snprintf(buf, cap, "%s", name);

#define PUT(...) (n += snprintf(buf + n, n < cap ? cap - n : 0, __VA_ARGS__))
#define PUT_BYTES(p, len) (PUT(" "), put_bytes(buf, cap, &n, (p), (len)))
	if (c->op == MC_GAT || c->op == MC_GATS)
		PUT(" %" PRId64, c->exptime);
	if (is_get(c->op)) {
		for (unsigned i = 0; i < c->nkeys; i++)
			PUT_BYTES(c->keys[i].p, c->keys[i].len);
	} else if (has_key(c->op) && c->binary) {
		char b64[2 * GS_KEY_MAX + 4];

		PUT_BYTES(b64, mc_base64_encode(c->key.p, c->key.len, b64));
		if (c->op == MC_ME)
			PUT(" b");
	} else if (has_key(c->op)) {
		PUT_BYTES(c->key.p, c->key.len);
	}
	switch (c->op) {
	case MC_SET: case MC_ADD: case MC_REPLACE: case MC_APPEND:
	case MC_PREPEND: case MC_CAS:
		PUT(" %" PRIu32 " %" PRId64 " %" PRIu64, c->flags, c->exptime,
		    c->bytes);
		if (c->op == MC_CAS)
			PUT(" %" PRIu64, c->cas);
		break;
	case MC_INCR: case MC_DECR:
		PUT(" %" PRIu64, c->delta);
		break;
	case MC_TOUCH:
		PUT(" %" PRId64, c->exptime);
		break;
	case MC_FLUSH_ALL:
		PUT(" %" PRId64, c->delay);
		break;
	case MC_VERBOSITY:
		PUT(" %" PRIu32, c->level);
		break;
	case MC_STATS: case MC_LRU_CRAWLER:
		if (c->arg)
			PUT_BYTES(c->arg, c->arg_len);
		break;
	case MC_MS:
		PUT(" %" PRIu64, c->bytes);
		break;
	default:
		break;
	}
	if (is_meta(c->op)) {
		for (unsigned i = 0; i < c->nmeta; i++) {
			PUT_BYTES(&c->meta[i].flag, 1);
			put_bytes(buf, cap, &n, c->meta[i].v, c->meta[i].len);
		}
	} else if (c->noreply) {
		PUT(" noreply");
	}
#undef PUT_BYTES
#undef PUT
	return n;
}

/* <b> (parsed from the written-back line) is the same command as <a>. */
static void same_cmd(const char *line, size_t len, const struct mc_cmd *a,
		     const struct mc_cmd *b)
{
	EXPECT(a->op == b->op && a->noreply == b->noreply);
	EXPECT(a->nkeys == b->nkeys);
	for (unsigned i = 0; i < a->nkeys; i++)
		EXPECT(key_eq(&a->keys[i], &b->keys[i]));
	if (has_key(a->op) || is_get(a->op))
		EXPECT(key_eq(&a->key, &b->key));
	EXPECT(a->flags == b->flags && a->exptime == b->exptime);
	EXPECT(a->bytes == b->bytes && a->cas == b->cas);
	EXPECT(a->delta == b->delta && a->level == b->level);
	EXPECT(a->delay == b->delay || (a->op == MC_FLUSH_ALL && !a->delay));
	EXPECT(!a->arg == !b->arg && a->arg_len == b->arg_len);
	EXPECT(!a->arg || !memcmp(a->arg, b->arg, a->arg_len));
	EXPECT(a->nmeta == b->nmeta && a->mode == b->mode);
	EXPECT(a->has_exptime == b->has_exptime && a->has_cas == b->has_cas);
	EXPECT(a->binary == b->binary && a->vivify == b->vivify);
	EXPECT(a->viv_exptime == b->viv_exptime && a->initial == b->initial);
	for (unsigned i = 0; i < a->nmeta; i++)
		EXPECT(a->meta[i].flag == b->meta[i].flag &&
		       a->meta[i].len == b->meta[i].len &&
		       !memcmp(a->meta[i].v, b->meta[i].v, a->meta[i].len));
}

/* The keys past the first <max_keys>, taken in batches as the daemon does:
 * each one a good key inside the line, and the rest used up at the end. */
static void check_rest(const char *line, size_t len, const struct mc_cmd *c,
		       unsigned max_keys)
{
	const char *rest = c->rest;
	size_t rest_len = c->rest_len;
	unsigned n;

	if (!rest) {
		EXPECT(!rest_len);
		return;
	}
	EXPECT(c->nkeys == max_keys || c->nkeys == MC_KEYS_MAX);
	EXPECT(rest_len && inside(rest, rest_len, line, len));
	while (rest) {
		n = mc_next_keys(&rest, &rest_len, keys2, max_keys);
		EXPECT(n >= 1 && n <= max_keys);
		for (unsigned k = 0; k < n; k++)
			EXPECT(key_ok(&keys2[k], line, len));
		EXPECT(!rest == !rest_len);
	}
}

static void check_ok(const char *line, size_t len, const struct mc_cmd *c,
		     unsigned max_keys)
{
	const char *name = mc_op_name(c->op);
	size_t nlen = strlen(name), i = 0;
	static char back[3 * MC_LINE_MAX];
	static struct mc_cmd again;
	size_t blen;

	EXPECT(c->op <= MC_ME && strcmp(name, "unknown"));
	/* the first token is the command's name */
	while (i < len && line[i] == ' ')
		i++;
	EXPECT(len - i >= nlen && !memcmp(line + i, name, nlen) &&
	       (len - i == nlen || line[i + nlen] == ' '));
	EXPECT(!c->error && !c->swallow);

	if (is_get(c->op)) {
		EXPECT(c->keys == keys || c->keys == keys2);
		EXPECT(c->nkeys >= 1 && c->nkeys <= max_keys &&
		       c->nkeys <= MC_KEYS_MAX);
		for (unsigned k = 0; k < c->nkeys; k++)
			EXPECT(key_ok(&c->keys[k], line, len));
		EXPECT(c->key.p == c->keys[0].p && c->key.len == c->keys[0].len);
		EXPECT(!c->noreply && mc_is_get_line(line, len));
		check_rest(line, len, c, max_keys);
	} else {
		EXPECT(c->nkeys == 0);
		if (has_key(c->op) && c->binary)	/* decoded: any bytes */
			EXPECT(c->key.p == c->kbuf && c->key.len >= 1 &&
			       c->key.len <= GS_KEY_MAX);
		else if (has_key(c->op))
			EXPECT(key_ok(&c->key, line, len));
		else
			EXPECT(!c->key.p);
	}
	if (c->op >= MC_SET && c->op <= MC_CAS)
		EXPECT(c->bytes <= MC_BYTES_MAX);
	if (c->op == MC_MS)
		EXPECT(c->bytes <= MC_BYTES_MAX);
	/* stats and lru_crawler keep their arguments as one raw span */
	if ((c->op == MC_STATS || c->op == MC_LRU_CRAWLER) && c->arg)
		EXPECT(c->arg_len > 0 && inside(c->arg, c->arg_len, line, len) &&
		       c->arg[0] != ' ' && c->arg[c->arg_len - 1] != ' ');
	if (c->op != MC_STATS && c->op != MC_LRU_CRAWLER)
		EXPECT(!c->arg);

	if (is_meta(c->op)) {
		bool q = false;

		EXPECT(c->nmeta <= MC_META_MAX);
		if (!OPEN_BUG("meta-nul-mode"))
			EXPECT(strchr(c->op == MC_MA ? "ID" : "EAPRS", c->mode) &&
			       c->mode);
		for (unsigned k = 0; k < c->nmeta; k++) {
			const struct mc_meta *m = &c->meta[k];

			if (!OPEN_BUG("meta-nul-flag"))
				EXPECT(m->flag && strchr(meta_allowed(c->op), m->flag));
			EXPECT(m->len <= 32 && inside(m->v, m->len, line, len));
			EXPECT(m->v[-1] == m->flag);
			for (unsigned j = 0; j < k; j++)
				EXPECT(c->meta[j].flag != m->flag);
			if (m->flag == 'q')
				q = true;
			if (m->flag == 'M' && c->op == MC_MA)
				EXPECT(m->len == 1 && strchr(c->mode == 'I' ? "I+" :
							     "D-", m->v[0]));
			else if (m->flag == 'M')
				EXPECT(m->len == 1 && m->v[0] == c->mode);
			/* flags without a value take none (O, P, L: opaque) */
			if (!strchr("TFCMOPLNJD", m->flag))
				EXPECT(m->len == 0);
		}
		EXPECT(c->noreply == q);
	} else {
		EXPECT(c->nmeta == 0);
	}

	/* written back in canonical form, it parses to the same command */
	blen = write_back(c, back, sizeof(back));
	EXPECT(blen < sizeof(back));
	if (blen > MC_LINE_MAX)		/* only spacing was dropped: can't grow */
		broken(line, len, "canonical form longer than the line limit");
	{
		int rc = mc_parse(back, blen, &again, keys2 == c->keys ? keys :
				  keys2, MC_KEYS_MAX);

		if (rc != MC_PARSE_OK)
			broken(back, blen, "canonical form of an accepted line refused");
		same_cmd(back, blen, c, &again);
	}
}

static void check_client_error(const char *line, size_t len,
			       const struct mc_cmd *c)
{
	EXPECT(c->error && c->error[0]);
	EXPECT(!strpbrk(c->error, "\r\n"));
	EXPECT(strlen(c->error) < 128);
	if (len > MC_LINE_MAX)
		EXPECT(!strcmp(c->error, "line too long"));
	else
		EXPECT(c->op <= MC_ME);
	if (c->swallow)
		EXPECT(c->op == MC_MS && c->bytes <= MC_BYTES_MAX);
}

/* A hang-up only for a line whose last token starts with "HTTP/". */
static void check_close(const char *line, size_t len)
{
	size_t end = len, start;

	while (end && line[end - 1] == ' ')
		end--;
	start = end;
	while (start && line[start - 1] != ' ')
		start--;
	EXPECT(end - start >= 5 && !memcmp(line + start, "HTTP/", 5));
}

static void parse_line(const char *data, size_t len, unsigned max_keys)
{
	char *line = malloc(len ? len : 1);
	struct mc_cmd cmd;
	int rc;

	memcpy(line, data, len);
	rc = mc_parse(line, len, &cmd, keys, max_keys);
	switch (rc) {
	case MC_PARSE_OK:
		check_ok(line, len, &cmd, max_keys);
		break;
	case MC_PARSE_CLIENT_ERROR:
		check_client_error(line, len, &cmd);
		break;
	case MC_PARSE_ERROR:
		break;
	case MC_PARSE_CLIENT_ERROR + 1:	/* MC_PARSE_CLOSE, since the front-end
					 * hardening: an HTTP request line */
		check_close(line, len);
		break;
	default:
		broken(line, len, "result not an mc_parse_result");
	}
	free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		size_t len = (nl ? nl : end) - p;

		parse_line(p, len && p[len - 1] == '\r' && nl ? len - 1 : len,
			   MC_KEYS_MAX);
		parse_line(p, len, 1 + size % 4);
		p += len + 1;
	}
	return 0;
}
