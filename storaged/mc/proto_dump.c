/*
 * Listing the keys: memcached's `lru_crawler metadump <classes>` and
 * `stats cachedump <class> <limit>` (what memcdump sends), over gs_walk().
 * Every object is in class 1: there are no slab classes.  The listing is
 * streamed DUMP_BATCH objects at a time, each batch one short hold of the
 * index lock, the next only once the connection's output queue has room:
 * a client that reads slowly holds nothing up but itself, and one that
 * reads nothing is closed by --send-timeout.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "proto_text.h"

#define DUMP_BATCH	16
/* A metadump line: "key=" and its key URL-encoded (3 bytes per byte at
 * most), then six fields of 20 digits at most and their names. */
#define DUMP_LINE_MAX	(4 + 3 * GS_KEY_MAX + 160)

/* memcached's uriencode(): unreserved bytes as they are, others %XX. */
static size_t uri_encode(char *out, const char *key, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char b = key[i];

		if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') ||
		    (b >= '0' && b <= '9') || strchr("-._~", b)) {
			out[n++] = b;
		} else {
			out[n++] = '%';
			out[n++] = hex[b >> 4];
			out[n++] = hex[b & 15];
		}
	}
	return n;
}

/* One object's line into <out> (DUMP_LINE_MAX bytes): its length. */
static int dump_line(char *out, bool meta, const struct gs_walk_item *it)
{
	const struct gs_meta *m = &it->meta;
	size_t n;

	if (!meta)
		return snprintf(out, DUMP_LINE_MAX, "ITEM %.*s [%" PRIu64 " b; %" PRIu32 " s]\r\n",
				it->klen, it->key, m->size, m->exptime);
	n = 4;
	memcpy(out, "key=", 4);
	n += uri_encode(out + n, it->key, it->klen);
	/* la: when it was stored, as no access time is kept */
	return n + snprintf(out + n, DUMP_LINE_MAX - n,
			    " exp=%" PRId64 " la=%" PRIu32 " cas=%" PRIu64
			    " fetch=%s cls=1 size=%" PRIu64 "\n",
			    m->exptime ? (int64_t)m->exptime : -1, m->mtime,
			    m->cas, it->fetched ? "yes" : "no", m->size);
}

void dump_step(struct conn *c)
{
	struct pending_dump *d = &c->mc.dump;
	struct gs_walk_item items[DUMP_BATCH];
	char buf[DUMP_BATCH * DUMP_LINE_MAX];
	unsigned n, want = DUMP_BATCH;
	size_t len = 0;

	if (d->limit && d->limit - d->listed < want)
		want = d->limit - d->listed;
	n = d->all && want ? gs_walk(c->srv->e, &d->pos, items, want) : 0;
	for (unsigned i = 0; i < n; i++)
		len += dump_line(buf + len, d->meta, &items[i]);
	d->listed += n;
	if (len)
		conn_reply(c, buf, len);
	if (!n) {
		REPLY(c, "END\r\n");
		c->mc.state = CONN_CMD;
	}
}

void dump_start(struct conn *c, bool meta, bool all, uint64_t limit)
{
	c->mc.dump = (struct pending_dump){
		.meta = meta, .all = all, .limit = limit,
	};
	c->mc.state = CONN_DUMP;
	dump_step(c);
}

/* The classes of a metadump, "all" or "1,2,...": whether they take in
 * class 1 (every object) in *<all>; false when one is not a class id. */
static bool dump_classes(const char *arg, size_t len, bool *all)
{
	size_t i = 0;

	*all = len == 3 && !memcmp(arg, "all", 3);
	if (*all)
		return true;
	while (i < len) {
		unsigned id = 0;
		size_t start = i;

		for (; i < len && arg[i] >= '0' && arg[i] <= '9' && id < 64; i++)
			id = id * 10 + (arg[i] - '0');
		if (i == start || id >= 64 || (i < len && arg[i] != ','))
			return false;
		*all |= id == 1;
		i += i < len;
	}
	return len > 0;
}

void proto_lru_crawler(struct conn *c, const char *arg, size_t len)
{
	size_t sub = 0, rest;
	bool all;

	while (sub < len && arg[sub] != ' ')
		sub++;
	rest = sub;
	while (rest < len && arg[rest] == ' ')
		rest++;
	if (sub != 8 || memcmp(arg, "metadump", 8) || rest == len ||
	    memchr(arg + rest, ' ', len - rest)) {
		SRV_ADD(c->srv, protocol_errors, 1);
		REPLY(c, "ERROR\r\n");
		return;
	}
	if (!dump_classes(arg + rest, len - rest, &all)) {
		REPLY(c, "BADCLASS invalid class id\r\n");
		return;
	}
	dump_start(c, true, all, 0);
}
