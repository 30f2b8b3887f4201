/*
 * Replay of the index journal (journal.h) at start.  The records are read
 * from a read-only map of the file and folded into a table of the last
 * event of each key.  A crash tears only the tail: a bad record with no
 * good one after it is cut; one with good records after it is damage,
 * refused (or, --journal-salvage, skipped with the object it names
 * dropped).  Then each live PUT becomes a record: its pool extents
 * claimed, or its value copied into a RAM slot, and linked.  Nothing is
 * linked or claimed before the whole journal is read, so a replaced or
 * deleted object's space never needs undoing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "attr.h"
#include "clock.h"
#include "engine.h"
#include "hook_points.h"
#include "index.h"
#include "journal.h"
#include "layout.h"
#include "log.h"
#include "pool.h"

#define DROP_LOG_LINES	5		/* per reason, then a count */

/* The event in force for one key. */
struct rent {
	const char *key;		/* in the map */
	const struct jrec *put;		/* NULL: deleted */
	const struct jrec *attr;	/* an ATTR after it, NULL: none */
	uint64_t seq;			/* what it was filed under */
	int64_t exptime;		/* the PUT's, or a later TOUCH's */
	uint32_t next;			/* hash chain: index + 1, 0 ends */
	uint8_t klen;
};

enum drop { DROP_POOL, DROP_LAYOUT, DROP_RAM, DROP_MEM, DROPS };

static const char *const drop_why[DROPS] = {
	"its extents lie outside the pool or overlap another object's (did a pool shrink?)",
	"its extents are on a tier without a pool or do not cover its size",
	"no RAM for its value (--memory or --sub-memory smaller?)",
	"out of memory for the index",
};

struct replay {
	struct rent *ents;
	uint32_t n, cap;
	uint32_t *buckets;		/* index + 1 into ents, 0: none */
	uint32_t nbuckets;
	uint64_t records;
	uint64_t max_seq;
	uint64_t flush_seq;		/* what was filed before it is gone */
	int64_t invalid_at;		/* a flush_all for later */
	uint64_t linked, dead, dropped[DROPS];
	/* --journal-salvage: damaged stretches skipped, their bytes, those
	 * whose record could not be read, objects they named dropped */
	uint64_t skipped, skipped_bytes, unknown, named;
};

static uint64_t round8(uint64_t v)
{
	return (v + 7) & ~7ull;
}

static const struct jput *put_body(const struct jrec *r)
{
	return (const struct jput *)(r + 1);
}

static const struct jchunk *put_chunks(const struct jrec *r)
{
	return (const struct jchunk *)((const char *)(put_body(r) + 1) +
				       round8(r->klen));
}

/* Bytes of PUT (or PUTA) <r> before a PUTA's jattr; <have> readable. */
static uint64_t put_base(const struct jrec *r, uint64_t have)
{
	const struct jput *p = put_body(r);
	uint64_t len = sizeof(*r) + sizeof(*p) + round8(r->klen) +
		       (uint64_t)p->nchunks * sizeof(struct jchunk);

	if (!p->nchunks)
		len += p->size > have ? have : round8(p->size);
	return len;
}

/* The jattr of PUTA <r> (its len checked by rec_check). */
static const struct jattr *puta_attr(const struct jrec *r)
{
	return (const struct jattr *)((const char *)r + put_base(r, r->len));
}

/* The bytes of ATTR <r>'s attributes (after its key). */
static const char *attr_rec_bytes(const struct jrec *r)
{
	return (const char *)((const struct jattr *)(r + 1) + 1) +
	       round8(r->klen);
}

/* ---- the table ---- */

static uint32_t *slot_of(struct replay *r, const char *key, uint8_t klen)
{
	uint32_t *s = &r->buckets[XXH3_64bits(key, klen) & (r->nbuckets - 1)];

	while (*s) {
		struct rent *x = &r->ents[*s - 1];

		if (x->klen == klen && !memcmp(x->key, key, klen))
			break;
		s = &x->next;
	}
	return s;
}

static int grow(struct replay *r)
{
	uint32_t nb = r->nbuckets ? 2 * r->nbuckets : 1024;
	uint32_t *b = calloc(nb, sizeof(*b));
	struct rent *ents = realloc(r->ents, nb * sizeof(*ents));

	if (!b || !ents) {
		free(b);
		if (ents)
			r->ents = ents;
		return -ENOMEM;
	}
	r->ents = ents;
	r->cap = nb;
	free(r->buckets);
	r->buckets = b;
	r->nbuckets = nb;
	for (uint32_t i = 0; i < r->n; i++) {
		uint32_t *s = slot_of(r, r->ents[i].key, r->ents[i].klen);

		r->ents[i].next = 0;
		*s = i + 1;
	}
	return 0;
}

/* The entry of <key>, added (as deleted, filed at 0) when absent; NULL
 * without memory. */
static struct rent *entry(struct replay *r, const char *key, uint8_t klen)
{
	uint32_t *s;

	if (r->n == r->cap && grow(r) < 0)
		return NULL;
	s = slot_of(r, key, klen);
	if (*s)
		return &r->ents[*s - 1];
	r->ents[r->n] = (struct rent){ .key = key, .klen = klen };
	*s = ++r->n;
	return &r->ents[r->n - 1];
}

static struct rent *lookup(struct replay *r, const char *key, uint8_t klen)
{
	uint32_t *s;

	if (!r->nbuckets)
		return NULL;
	s = slot_of(r, key, klen);
	return *s ? &r->ents[*s - 1] : NULL;
}

/* ---- records ---- */

/* The length a well-formed record of <kind> with <r>'s key length and
 * body has, <have> bytes of it readable; 0 when none. */
static uint64_t len_as(const struct jrec *r, uint8_t kind, uint64_t have)
{
	uint64_t key = round8(r->klen), len;
	const struct jput *p = put_body(r);
	const struct jattr *a;

	if (r->klen > GS_KEY_MAX)
		return 0;
	switch (kind) {
	case JREC_PUT:
	case JREC_PUTA:
		if (have < sizeof(*r) + sizeof(*p))
			return 0;
		len = put_base(r, have);
		if (kind == JREC_PUT)
			return len;
		a = (const struct jattr *)((const char *)r + len);
		if (len + sizeof(*a) > have || !a->len ||
		    a->len > GS_ATTR_MAX || a->cas || a->zero)
			return 0;
		return len + sizeof(*a) + round8(a->len);
	case JREC_ATTR:
		a = (const struct jattr *)(r + 1);
		if (have < sizeof(*r) + sizeof(*a) || a->len > GS_ATTR_MAX ||
		    a->zero)
			return 0;
		return sizeof(*r) + sizeof(*a) + key + round8(a->len);
	case JREC_DEL:
		return sizeof(*r) + key;
	case JREC_TOUCH:
		return sizeof(*r) + sizeof(struct jtouch) + key;
	case JREC_FLUSH:
		return r->klen ? 0 : sizeof(*r) + sizeof(struct jflush);
	}
	return 0;
}

/* The length a well-formed record with <r>'s header has; 0 when none. */
static uint64_t rec_expected_len(const struct jrec *r)
{
	return r->zero ? 0 : len_as(r, r->kind, r->len);
}

/* Whether <r> has a record's header: a kind, a key length, a length of
 * whole 8-byte words. */
static bool head_holds(const struct jrec *r)
{
	return r->kind >= JREC_PUT && r->kind <= JREC_ATTR && !r->zero &&
	       r->klen <= GS_KEY_MAX && r->len >= sizeof(*r) && r->len % 8 == 0;
}

/* The length of the record at <p>, <left> bytes before the end, or 0 with
 * what is wrong with it in <*why>.  The checksum is taken last: a scan
 * through damaged bytes hashes only what looks like a record. */
static uint32_t rec_check(const char *p, uint64_t left, const char **why)
{
	const struct jrec *r = (const struct jrec *)p;

	*why = "torn";
	if (left < sizeof(*r) || r->len > left)
		return 0;
	*why = "damaged (bad length)";
	if (r->len < sizeof(*r) || r->len % 8)
		return 0;
	*why = "damaged (malformed)";
	if (rec_expected_len(r) != r->len)
		return 0;
	*why = "damaged (checksum mismatch)";
	if (r->sum != journal_rec_sum(r))
		return 0;
	return r->len;
}

/* Where the good records from <off> on stop: <size>, or a bad one. */
static uint64_t chain_end(const char *map, uint64_t off, uint64_t size)
{
	const char *why;
	uint32_t len;

	while (off < size && (len = rec_check(map + off, size - off, &why)))
		off += len;
	return off;
}

/*
 * Where the first good record after the bad one at <off> starts, <size>
 * when none does: the bad one is a torn tail.  First where its length says
 * it ends, else at 8-byte steps (records are whole words); the bad one's
 * own bytes are not searched when its length holds and a record starts
 * there (a value may hold what looks like a record).  A bad one whose
 * length runs past the end is a torn tail unless good records from inside
 * it run to exactly the end (its length was what was damaged).
 */
static uint64_t resync(const char *map, uint64_t off, uint64_t size)
{
	const struct jrec *bad = (const struct jrec *)(map + off);
	const char *why;
	bool past_end;
	uint64_t at;

	if (size - off < sizeof(*bad))
		return size;
	past_end = head_holds(bad) && bad->len > size - off;
	if (head_holds(bad) && !past_end) {
		at = off + bad->len;
		if (at == size || rec_check(map + at, size - at, &why))
			return at;
	}
	for (at = off + 8; at + sizeof(*bad) <= size; at += 8) {
		uint64_t end;

		if (!rec_check(map + at, size - at, &why))
			continue;
		if (!past_end)
			return at;
		end = chain_end(map, at, size);
		if (end == size)
			return at;
		at = end - 8;		/* that chain is no way on */
	}
	return size;
}

/* Folds record <rec> into the table: 0 or -ENOMEM. */
static int apply(struct replay *r, const struct jrec *rec)
{
	const char *key = (const char *)(rec + 1);
	struct rent *x;

	if (rec->seq > r->max_seq)
		r->max_seq = rec->seq;
	switch (rec->kind) {
	case JREC_PUT:
	case JREC_PUTA:
		key = (const char *)(put_body(rec) + 1);
		if (put_body(rec)->cas > r->max_seq)
			r->max_seq = put_body(rec)->cas;
		/* fall through */
	case JREC_DEL:
		x = entry(r, key, rec->klen);
		if (!x)
			return -ENOMEM;
		if (rec->seq < x->seq)
			break;
		x->seq = rec->seq;
		x->put = rec->kind != JREC_DEL ? rec : NULL;
		x->attr = NULL;
		if (x->put)
			x->exptime = put_body(rec)->exptime;
		break;
	case JREC_TOUCH: {
		const struct jtouch *t = (const struct jtouch *)(rec + 1);

		x = lookup(r, (const char *)(t + 1), rec->klen);
		if (x && x->put && put_body(x->put)->cas == t->cas)
			x->exptime = t->exptime;
		break;
	}
	case JREC_ATTR: {
		const struct jattr *a = (const struct jattr *)(rec + 1);

		x = lookup(r, (const char *)(a + 1), rec->klen);
		if (x && x->put && put_body(x->put)->cas == a->cas)
			x->attr = rec;
		break;
	}
	case JREC_FLUSH: {
		const struct jflush *f = (const struct jflush *)(rec + 1);

		if (f->when > f->time) {
			r->invalid_at = f->when;
		} else {
			r->invalid_at = 0;
			if (rec->seq > r->flush_seq)
				r->flush_seq = rec->seq;
		}
		break;
	}
	}
	return 0;
}

/* Whether the <klen> bytes at <key> are a memcache key followed by the
 * zeros that pad it, before <end>. */
static bool key_ok(const char *key, uint8_t klen, const char *end)
{
	if (!klen || key + round8(klen) > end)
		return false;
	for (uint32_t i = 0; i < round8(klen); i++)
		if (i < klen ? (uint8_t)key[i] <= ' ' || key[i] == 0x7f : key[i])
			return false;
	return true;
}

/* The key of damaged record <bad>, the <span> bytes up to the next good
 * one, when it can be read: its kind (or, if that is what was damaged,
 * another) gives a record of exactly <span> bytes whose key is a key.
 * NULL otherwise (a FLUSH has none).  Its key bytes may be what was
 * damaged: the key read is then another. */
static const char *bad_key(const struct jrec *bad, uint64_t span)
{
	static const uint8_t kinds[] = { 0, JREC_PUT, JREC_DEL, JREC_TOUCH,
					 JREC_PUTA, JREC_ATTR };

	for (unsigned i = 0; i < sizeof(kinds); i++) {
		uint8_t kind = i ? kinds[i] : bad->kind;
		const char *key = (const char *)(bad + 1);

		if ((i && kind == bad->kind) || len_as(bad, kind, span) != span)
			continue;
		if (kind == JREC_PUT || kind == JREC_PUTA)
			key = (const char *)(put_body(bad) + 1);
		else if (kind == JREC_TOUCH)
			key = (const char *)((const struct jtouch *)(bad + 1) + 1);
		else if (kind == JREC_ATTR)
			key = (const char *)((const struct jattr *)(bad + 1) + 1);
		else if (kind != JREC_DEL)
			continue;
		if (key_ok(key, bad->klen, (const char *)bad + span))
			return key;
	}
	return NULL;
}

/* --journal-salvage: the damaged bytes [<off>, <next>) are skipped; the
 * object their record names, when its key can be read, is dropped (what
 * it held is not vouched for).  0 or -ENOMEM. */
static int skip(struct replay *r, const char *map, uint64_t off,
		uint64_t next)
{
	const struct jrec *bad = (const struct jrec *)(map + off);
	const char *key = next - off >= sizeof(*bad) ? bad_key(bad, next - off) :
			  NULL;
	struct rent *x;

	r->skipped++;
	r->skipped_bytes += next - off;
	if (!key) {
		r->unknown++;
		if (r->skipped <= DROP_LOG_LINES)
			log_warn("journal: --journal-salvage: %llu damaged bytes at byte %llu skipped; what they held is unknown (an object they replaced, deleted or flushed may be back as it was before)",
				 (unsigned long long)(next - off),
				 (unsigned long long)off);
		return 0;
	}
	if (r->skipped <= DROP_LOG_LINES)
		log_warn("journal: --journal-salvage: a damaged record of %.*s at byte %llu skipped: %.*s is dropped",
			 bad->klen, key, (unsigned long long)off, bad->klen, key);
	x = entry(r, key, bad->klen);
	if (!x)
		return -ENOMEM;
	r->named++;
	x->put = NULL;			/* a later record of it still counts */
	return 0;
}

/* Folds the records of the <size> bytes at <map> into <r>; returns where
 * the good ones end (<size>, or a torn tail there: <*why>), -ENOMEM, or
 * -EUCLEAN (<err> says why) for damage with good records after it, which
 * --journal-salvage skips. */
static int64_t read_records(struct gs_engine *e, struct replay *r,
			    const char *map, uint64_t size, const char **why,
			    char *err, size_t errlen)
{
	uint64_t off = sizeof(struct jhdr), next;

	while (off < size) {
		uint32_t len = rec_check(map + off, size - off, why);

		if (len) {
			GS_CRASH_POINT("recovery");
			if (apply(r, (const struct jrec *)(map + off)) < 0)
				return -ENOMEM;
			r->records++;
			off += len;
			continue;
		}
		next = resync(map, off, size);
		if (next == size)
			break;
		if (!e->cfg.journal_salvage) {
			snprintf(err, errlen, "%s: the record at byte %llu of %llu is %s, and good records follow from byte %llu: damage, not a torn tail; start with --journal-salvage to skip what is damaged (the objects it names are dropped and logged), or --fresh to start empty",
				 e->journal->path, (unsigned long long)off,
				 (unsigned long long)size, *why,
				 (unsigned long long)next);
			return -EUCLEAN;
		}
		if (skip(r, map, off, next) < 0)
			return -ENOMEM;
		off = next;
	}
	return off;
}

/* ---- building the live objects ---- */

static void drop(struct replay *r, enum drop why, const struct rent *x)
{
	if (r->dropped[why]++ < DROP_LOG_LINES)
		log_warn("journal: object %.*s dropped: %s", (int)x->klen,
			 x->key, drop_why[why]);
}

static bool dead(const struct replay *r, const struct rent *x, int64_t now)
{
	const struct jput *p = put_body(x->put);

	return (x->exptime && x->exptime <= now) || x->seq < r->flush_seq ||
	       (r->invalid_at && r->invalid_at <= now &&
		p->mtime <= r->invalid_at);
}

/* Whether the chunks of <x> make an on-disk object of this engine's. */
static bool layout_ok(const struct gs_engine *e, const struct rent *x)
{
	const struct jput *p = put_body(x->put);
	const struct jchunk *c = put_chunks(x->put);
	uint64_t total = 0;

	for (uint32_t i = 0; i < p->nchunks; i++) {
		if ((c[i].tier != GS_TIER_SSD && c[i].tier != GS_TIER_HDD) ||
		    !e->has_pool[c[i].tier] || !c[i].len)
			return false;
		total += c[i].len;
	}
	return total == p->size;
}

/* Whether journaled chunk <i> goes on in the run of chunk <i> - 1: the
 * same tier, right after it, which is a whole tier chunk. */
static bool same_run(const struct jchunk *c, uint32_t i)
{
	uint32_t whole = c[i].tier == GS_TIER_SSD ? GS_SSD_CHUNK : GS_HDD_CHUNK;

	return i > 0 && c[i].tier == c[i - 1].tier && c[i - 1].len == whole &&
	       c[i].addr == c[i - 1].addr + c[i - 1].len;
}

/* Claims <obj>'s runs: 0, or -EINVAL with <obj> freed. */
static int claim(struct gs_engine *e, struct gs_obj *obj)
{
	const struct chunk *c = obj_chunks(obj);
	uint64_t *runs = obj_runs(obj);

	for (uint32_t i = 0; i < obj->nchunks;) {
		uint32_t r = c[i].run;
		enum gs_tier t = c[i].tier;
		uint64_t len = 0;

		for (; i < obj->nchunks && c[i].run == r; i++)
			len += c[i].len;
		if (pool_claim(&e->pools[t], runs[r], len) == 0)
			continue;
		for (uint32_t k = r; k < obj_nruns(obj); k++)
			runs[k] = UINT64_MAX;	/* not ours */
		engine_free_record(e, obj);
		return -EINVAL;
	}
	return 0;
}

/* The record of live entry <x> with its space, or NULL (dropped). */
static struct gs_obj *build(struct gs_engine *e, struct replay *r,
			    const struct rent *x)
{
	const struct jput *p = put_body(x->put);
	const struct jchunk *c = put_chunks(x->put);
	struct gs_obj *obj;
	uint32_t nruns = 0;

	if (p->nchunks ? !layout_ok(e, x) : p->size > engine_ram_limit(e)) {
		drop(r, p->nchunks ? DROP_LAYOUT : DROP_RAM, x);
		return NULL;
	}
	for (uint32_t i = 0; i < p->nchunks; i++)
		nruns += !same_run(c, i);
	obj = engine_record_alloc(x->key, x->klen, p->nchunks, nruns);
	if (!obj) {
		drop(r, DROP_MEM, x);
		return NULL;
	}
	obj->meta.size = p->size;
	obj->meta.flags = p->flags;
	obj->meta.exptime = gs_exptime(x->exptime);
	obj->meta.cas = p->cas;
	obj->meta.mtime = p->mtime;
	for (uint32_t i = 0, run = 0; i < p->nchunks; i++) {
		if (i > 0 && !same_run(c, i))
			run++;
		obj_chunks(obj)[i] = (struct chunk){
			.sum = c[i].sum, .len = c[i].len, .tier = c[i].tier,
			.run = run,
		};
		if (!same_run(c, i))
			obj_runs(obj)[run] = c[i].addr;
	}
	if (p->nchunks) {
		obj->on_disk = true;
		if (claim(e, obj) < 0) {
			drop(r, DROP_POOL, x);
			return NULL;
		}
		return obj;
	}
	obj->meta.head_len = p->size;
	if (engine_reserve_part(e, &obj, -1) < 0) {
		engine_free_record(e, obj);
		drop(r, DROP_RAM, x);
		return NULL;
	}
	if (p->size)
		memcpy(obj_head_ptr(e, obj), c, p->size);
	return obj;
}

/* Gives the record <obj> of <x> the attributes in force: its last ATTR's,
 * else its PUTA's.  0 or -ENOMEM. */
static int replay_attr(struct gs_engine *e, const struct rent *x,
		       struct gs_obj *obj)
{
	const struct jattr *ja = NULL;
	const char *bytes = NULL;
	struct attr *a;
	int ret;

	if (x->attr) {
		ja = (const struct jattr *)(x->attr + 1);
		bytes = attr_rec_bytes(x->attr);
	} else if (x->put->kind == JREC_PUTA) {
		ja = puta_attr(x->put);
		bytes = (const char *)(ja + 1);
	}
	if (!ja || !ja->len)
		return 0;
	a = attr_new(bytes, ja->len);
	if (!a)
		return -ENOMEM;
	ret = attr_attach(e, obj, &a);
	attr_free(&a);
	return ret;
}

/* Links every live object of the table. */
static void link_all(struct gs_engine *e, struct replay *r)
{
	bool no_evict = e->cfg.no_evict;
	int64_t now = time(NULL);

	/* room for a recovered object is never made by evicting another */
	e->cfg.no_evict = true;
	for (uint32_t i = 0; i < r->n; i++) {
		struct rent *x = &r->ents[i];
		struct gs_obj *obj;

		if (!x->put)
			continue;
		if (dead(r, x, now)) {
			r->dead++;
			continue;
		}
		obj = build(e, r, x);
		if (!obj)
			continue;
		if (replay_attr(e, x, obj) < 0 ||
		    engine_link_recovered(e, obj) < 0) {
			engine_free_record(e, obj);
			drop(r, DROP_MEM, x);
			continue;
		}
		engine_unref(e, obj);		/* the index holds it now */
		r->linked++;
	}
	e->cfg.no_evict = no_evict;
	for (int k = 0; k < DROPS; k++)
		if (r->dropped[k])
			log_warn("journal: %llu object(s) dropped at recovery: %s",
				 (unsigned long long)r->dropped[k], drop_why[k]);
}

/* ---- the whole ---- */

/* Refuses a journal with live RAM-only objects larger than --ram-head (a
 * larger one stored them): they would be lost, as a changed stripe unit
 * would lose the pools. */
static int check_ram_head(const struct gs_engine *e, struct replay *r,
			  char *err, size_t errlen)
{
	uint64_t n = 0, largest = 0;
	int64_t now = time(NULL);

	for (uint32_t i = 0; i < r->n; i++) {
		const struct rent *x = &r->ents[i];

		if (!x->put || put_body(x->put)->nchunks ||
		    put_body(x->put)->size <= engine_ram_limit(e) || dead(r, x, now))
			continue;
		n++;
		if (put_body(x->put)->size > largest)
			largest = put_body(x->put)->size;
	}
	if (!n)
		return 0;
	snprintf(err, errlen, "%s: %llu RAM-only object(s) larger than --ram-head %lluK (the largest %llu bytes: a larger --ram-head stored them); start with --ram-head %lluK or more to keep them, or --fresh to start empty",
		 e->journal->path, (unsigned long long)n,
		 (unsigned long long)(e->cfg.ram_head >> 10),
		 (unsigned long long)largest,
		 (unsigned long long)(round_up(largest, 4096) >> 10));
	return -EEXIST;
}

/* Reads the journal into <r>, cutting a torn tail, and links what lives. */
static int replay(struct gs_engine *e, struct replay *r, char *err,
		  size_t errlen)
{
	struct journal *j = e->journal;
	uint64_t size = j->end;
	const char *why = NULL;
	char *map = NULL;
	int64_t end = sizeof(struct jhdr);

	if (size > sizeof(struct jhdr)) {
		map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, j->fd, 0);
		if (map == MAP_FAILED) {
			snprintf(err, errlen, "%s: cannot map: %s", j->path,
				 strerror(errno));
			return -errno;
		}
		end = read_records(e, r, map, size, &why, err, errlen);
	}
	if (end == -ENOMEM)
		snprintf(err, errlen, "%s: out of memory for the replay", j->path);
	if (end >= 0 && check_ram_head(e, r, err, errlen) < 0)
		end = -EEXIST;
	if (end < 0) {
		munmap(map, size);
		return end;
	}
	if ((uint64_t)end < size) {
		log_warn("%s: the last record, at byte %lld of %llu, is %s: torn by a crash in mid-append (or damaged), the journal is cut there",
			 j->path, (long long)end, (unsigned long long)size, why);
		if (ftruncate(j->fd, end) < 0) {
			snprintf(err, errlen, "%s: cannot cut: %s", j->path,
				 strerror(errno));
			munmap(map, size);
			return -errno;
		}
	}
	j->end = end;
	journal_room_reset(e);
	j->records = r->records;
	link_all(e, r);
	if (map)
		munmap(map, size);
	journal_shed(j->fd, end);	/* read once, not again */
	return 0;
}

/* After --journal-salvage read past damage: says what it skipped, and
 * checkpoints what is left, so the next start reads a whole journal. */
static void salvaged(struct gs_engine *e, const struct replay *r)
{
	struct journal *j = e->journal;

	STAT_ADD(e, journal_skipped, r->skipped);
	log_warn("%s: --journal-salvage skipped %llu damaged stretch(es), %llu bytes: %llu object(s) they named dropped, %llu stretch(es) of unknown content",
		 j->path, (unsigned long long)r->skipped,
		 (unsigned long long)r->skipped_bytes,
		 (unsigned long long)r->named, (unsigned long long)r->unknown);
	if (journal_checkpoint(e, true) < 0)
		log_err("%s: the damaged journal stays: the next start needs --journal-salvage again",
			j->path);
}

int journal_recover(struct gs_engine *e, char *err, size_t errlen)
{
	struct journal *j = e->journal;
	struct replay r = { 0 };
	uint64_t t0, ms;
	int ret;

	if (!j || j->recovered)
		return 0;
	t0 = mono_ns();
	pthread_mutex_lock(&e->lock);
	ret = replay(e, &r, err, errlen);
	if (ret == 0) {
		if (r.max_seq > j->last)
			__atomic_store_n(&j->last, r.max_seq, __ATOMIC_RELEASE);
		/* the header's base is lost: CAS values past the records' may
		 * have been handed out, and must not come again */
		if (j->damaged_header)
			__atomic_store_n(&j->last, j->last + (1ull << 32),
					 __ATOMIC_RELEASE);
		if (j->last > e->next_cas)
			e->next_cas = j->last;
		__atomic_store_n(&j->synced, j->last, __ATOMIC_RELEASE);
		e->invalid_at = r.invalid_at;
		j->recovered = true;
		if (r.skipped || j->damaged_header)
			salvaged(e, &r);
		STAT_ADD(e, recovered_objects, r.linked);
		__atomic_store_n(&e->st.journal_bytes, j->end, __ATOMIC_RELAXED);
		__atomic_store_n(&e->st.journal_records, j->records,
				 __ATOMIC_RELAXED);
		journal_weigh_now(e);
	}
	pthread_mutex_unlock(&e->lock);
	free(r.ents);
	free(r.buckets);
	ms = (mono_ns() - t0) / 1000000;
	if (ret < 0)
		return ret;
	STAT_ADD(e, recovery_ms, ms);
	log_info("%s: recovered %llu objects (%llu dead) from %llu records in %llu ms",
		 j->path, (unsigned long long)r.linked, (unsigned long long)r.dead,
		 (unsigned long long)r.records, (unsigned long long)ms);
	return 0;
}
