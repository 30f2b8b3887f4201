/*
 * gs_stream_open_into(): read-ahead streams that read the disk chunks into
 * buffers the caller provides.  Objects laid across the RAM head, the SSD
 * prefix and striped HDD chunks are read back over ranges that straddle
 * every tier and chunk boundary, with one to five caller buffers, every
 * byte compared with what was written and every disk byte handed out from
 * the caller's buffers.  Such a stream never waits for the gs_io's own
 * windows, and tells its caller, from gs_io_run() and only after close,
 * when the kernel is done with the buffers.  A held stream (the nginx
 * link's) leaves consumed bytes in place until released.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "goblin.h"
#include "check.h"
#include "engine_util.h"
#include "log.h"
#include "uring.h"

#define HEAD	(256u << 10)		/* cfg.ram_head */
#define PREFIX	(1u << 20)		/* cfg.ssd_prefix */
#define DISK	(HEAD + PREFIX)		/* where the HDD chunks start */
#define NBUFS	5

static char tmpdir[] = "/var/tmp/goblin-test-stream.XXXXXX";
static char *bufs[NBUFS];

static void set_flag(void *arg)
{
	*(bool *)arg = true;
}

/* Stores <size> bytes of <val> under <key>; returns the done result. */
static int put(struct gs_io *io, const char *key, const char *val,
	       uint64_t size)
{
	return put_if(io, key, val, size, 0, GS_IF_ANY, 0, NULL);
}

/* Whether [<p>, <p>+<n>) lies inside one of the first <nbufs> buffers. */
static bool in_bufs(const char *p, size_t n, unsigned nbufs)
{
	for (unsigned i = 0; i < nbufs; i++)
		if (p >= bufs[i] && p + n <= bufs[i] + GS_IO_BUFFER)
			return true;
	return false;
}

/* Whether [p, p+n) is in the RAM region: a head, or a cached chunk. */
static bool in_region(const struct gs_engine *e, const char *p, size_t n)
{
	const char *base = gs_engine_region_base(e);

	return p >= base && p + n <= base + gs_engine_region_size(e);
}

/* Closes <s> and runs <io> until the caller's buffers are released. */
static int close_and_release(struct gs_io *io, struct gs_stream **s,
			     bool *released)
{
	gs_stream_close(s);
	if (*released)
		return -EALREADY;	/* fired inside the call */
	while (!*released)
		if (gs_io_run(io, true) < 0)
			return -EIO;
	return gs_io_pending(io) ? -EBUSY : 0;
}

/*
 * Reads [<off>, <off>+<len>) of <key> through <nbufs> caller buffers,
 * consuming at most <step> bytes at a time; returns 0 when every byte
 * equals <val> at its offset and came from where it should.
 */
static int read_range(struct gs_engine *e, struct gs_io *io, const char *key,
		      const char *val, uint64_t off, uint64_t len,
		      unsigned nbufs, size_t step)
{
	struct gs_obj *obj;
	struct gs_stream *s;
	bool released = false;
	uint64_t size, head, pos = off;
	int ret = gs_lookup(e, key, strlen(key), &obj);

	if (ret < 0)
		return ret;
	size = gs_obj_meta(obj)->size;
	head = gs_obj_meta(obj)->head_len;
	ret = gs_stream_open_into(io, obj, off, len, (void *const *)bufs, nbufs,
				  on_wake, set_flag, &released, &s);
	gs_obj_put(e, &obj);
	if (ret < 0)
		return ret;
	for (;;) {
		const void *p;
		size_t n;

		ret = gs_stream_peek(s, &p, &n);
		if (ret == -EAGAIN) {
			gs_io_run(io, true);
			continue;
		}
		if (ret < 0 || n == 0)
			break;
		n = n < step ? n : step;
		if (memcmp(p, val + pos, n))
			ret = -EILSEQ;
		else if (pos >= head && !in_bufs(p, n, nbufs) &&
			 !in_region(e, p, n))
			ret = -EFAULT;
		if (ret < 0)
			break;
		gs_stream_consume(s, n);
		pos += n;
	}
	if (ret == 0 && pos != (off + len < size ? off + len : size))
		ret = -ENODATA;
	if (close_and_release(io, &s, &released) < 0 && ret == 0)
		ret = -EBUSY;
	return ret;
}

static const uint64_t sizes[] = {
	0, 1, HEAD - 1, HEAD, HEAD + 1, HEAD + 4097, DISK - 1, DISK, DISK + 1,
	DISK + (1u << 20) + 1, (3u << 20) + 12345, (9u << 20) + 7,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Ranges of an object of <size>: the whole and across every boundary. */
static unsigned ranges(uint64_t size, uint64_t *off, uint64_t *len)
{
	static const uint64_t at[] = {
		HEAD, HEAD + (256u << 10), DISK, DISK + (1u << 20),
	};
	unsigned n = 0;

	off[n] = 0;
	len[n++] = UINT64_MAX;
	for (unsigned i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		if (at[i] < size) {
			off[n] = at[i] - 3;
			len[n++] = 4099;
			off[n] = at[i] > (300u << 10) ? at[i] - (300u << 10) : 0;
			len[n++] = 600u << 10;
		}
	off[n] = size > 5000 ? size - 5000 : 0;
	len[n++] = 5000;
	off[n] = size / 3;
	len[n++] = size / 3 + 1;
	return n;
}

static void byte_exact(struct gs_engine *e, struct gs_io *io, char *val)
{
	static const unsigned nbufs[] = { 1, 2, 5 };
	static const size_t steps[] = { SIZE_MAX, 70001, SIZE_MAX };
	uint64_t off[16], len[16];
	char key[32];

	for (unsigned i = 0; i < NSIZES; i++) {
		snprintf(key, sizeof(key), "obj-%llu", (unsigned long long)sizes[i]);
		fill(val, sizes[i], i + 1);
		CHECK(put(io, key, val, sizes[i]) == 0, "put %s", key);
		for (unsigned r = ranges(sizes[i], off, len); r--; )
			for (unsigned b = 0; b < 3; b++) {
				int ret = read_range(e, io, key, val, off[r], len[r],
						     nbufs[b], steps[b]);

				CHECK(ret == 0, "%s [%llu, +%llu) through %u buffer(s): %d",
				      key, (unsigned long long)off[r],
				      (unsigned long long)len[r], nbufs[b], ret);
			}
	}
}

/* While a stream of the gs_io holds every window buffer, one reading into
 * caller buffers still goes (nobody waits, nobody is reclaimed); and one
 * closed with reads in flight releases its buffers once they land. */
static void own_window(struct gs_engine *e, struct gs_io *io, char *val)
{
	uint64_t size = (9u << 20) + 7;
	struct gs_stream *held, *s;
	struct gs_obj *obj;
	struct gs_stats st;
	const void *p;
	size_t n;
	bool released = false;

	fill(val, size, 12);		/* sizes[11] again */
	CHECK(gs_lookup(e, "obj-9437191", 11, &obj) == 0, "lookup");
	CHECK(gs_stream_open(io, obj, DISK, UINT64_MAX, on_wake, NULL, &held) == 0,
	      "pooled stream");
	while (gs_stream_peek(held, &p, &n) == -EAGAIN)
		gs_io_run(io, true);
	CHECK(read_range(e, io, "obj-9437191", val, 0, UINT64_MAX, 2, SIZE_MAX) == 0,
	      "read into caller buffers beside a held window");
	CHECK(memcmp(p, val + DISK, n) == 0, "held stream's bytes");
	gs_stream_close(&held);

	CHECK(gs_stream_open_into(io, obj, DISK, UINT64_MAX, (void *const *)bufs,
				  NBUFS, on_wake, set_flag, &released, &s) == 0,
	      "open into");
	gs_obj_put(e, &obj);
	CHECK(close_and_release(io, &s, &released) == 0,
	      "closed with reads in flight: released after they land");
	while (gs_io_pending(io))
		gs_io_run(io, true);
	gs_stats(e, &st);
	CHECK(st.readahead_reclaims == 0, "reclaims %llu",
	      (unsigned long long)st.readahead_reclaims);
}

/* Reads what is left of <s>, byte by byte against <want>; with <ram>,
 * whether every byte came from <e>'s RAM region. */
static int drain_ram(struct gs_engine *e, struct gs_io *io, struct gs_stream *s,
		     const char *want, bool *ram)
{
	uint64_t pos = 0;
	const void *p;
	size_t n;
	int ret;

	while ((ret = gs_stream_peek(s, &p, &n)) == -EAGAIN || (!ret && n)) {
		if (ret == -EAGAIN) {
			gs_io_run(io, true);
			continue;
		}
		if (memcmp(p, want + pos, n))
			return -EBADMSG;
		if (ram)
			*ram &= in_region(e, p, n);
		gs_stream_consume(s, n);
		pos += n;
	}
	return ret ? ret : gs_stream_left(s) ? -EPIPE : 0;
}

static int drain(struct gs_io *io, struct gs_stream *s, const char *want)
{
	return drain_ram(NULL, io, s, want, NULL);
}

/* Streams waiting for a window (io_streams 1: one holds them all) still
 * read their first chunk at once, one such early buffer per io_streams;
 * the rest follows once the window comes free, byte-exact. */
static void early_first_chunk(struct gs_engine *e, struct gs_io *io, char *val)
{
	uint64_t size = (9u << 20) + 7;
	struct gs_stream *held, *s, *third;
	struct gs_obj *obj;
	struct gs_stats before, st;
	const void *p;
	size_t n;

	fill(val, size, 14);		/* not read before: nothing cached */
	CHECK(put(io, "early", val, size) == 0, "put");
	gs_stats(e, &before);
	CHECK(gs_lookup(e, "early", 5, &obj) == 0, "lookup");
	CHECK(gs_stream_open(io, obj, DISK, UINT64_MAX, on_wake, NULL, &held) == 0,
	      "the stream holding the window");
	while (gs_stream_peek(held, &p, &n) == -EAGAIN)
		gs_io_run(io, true);
	CHECK(gs_stream_open(io, obj, HEAD, UINT64_MAX, on_wake, NULL, &s) == 0 &&
	      gs_stream_open(io, obj, DISK + (3u << 20), UINT64_MAX, on_wake,
			     NULL, &third) == 0,
	      "two streams that wait for it (the third past what the first"
	      " read, so not in the RAM chunk cache)");
	while (gs_stream_peek(s, &p, &n) == -EAGAIN)
		gs_io_run(io, true);
	CHECK(n && !memcmp(p, val + HEAD, n),
	      "the waiting stream's first chunk came, byte-exact");
	CHECK(gs_stream_peek(third, &p, &n) == -EAGAIN,
	      "the third one waits: one early buffer per io_streams");
	gs_stats(e, &st);
	CHECK(st.early_reads == before.early_reads + 1, "early_reads %llu",
	      (unsigned long long)(st.early_reads - before.early_reads));
	gs_stream_close(&held);
	CHECK(drain(io, s, val + HEAD) == 0, "the rest once the window came");
	gs_stream_close(&s);
	CHECK(drain(io, third, val + DISK + (3u << 20)) == 0,
	      "the third stream, whole");
	gs_stream_close(&third);
	gs_obj_put(e, &obj);
	while (gs_io_pending(io))
		gs_io_run(io, true);
}

/* A held stream through one buffer (one HDD chunk): the consumed chunk's
 * bytes stay where they landed, nothing is read over them, until
 * gs_stream_release() passes its end; then the next chunk comes. */
static void held(struct gs_engine *e, struct gs_io *io, char *val)
{
	uint64_t size = (9u << 20) + 7, pos = DISK;
	struct gs_stream *s;
	struct gs_obj *obj;
	bool released = false;
	const void *p, *first;
	size_t n;
	int ret;

	fill(val, size, 13);		/* not read before: nothing cached */
	CHECK(put(io, "held", val, size) == 0, "put");
	CHECK(gs_lookup(e, "held", 4, &obj) == 0, "lookup");
	CHECK(gs_stream_open_into(io, obj, DISK, 3u << 20, (void *const *)bufs,
				  1, on_wake, set_flag, &released, &s) == 0,
	      "open into one buffer");
	gs_obj_put(e, &obj);
	gs_stream_hold(s);
	while ((ret = gs_stream_peek(s, &first, &n)) == -EAGAIN)
		gs_io_run(io, true);
	CHECK(ret == 0 && n == GS_HDD_CHUNK && first == bufs[0] &&
	      !memcmp(first, val + pos, n), "the first HDD chunk, in place");
	gs_stream_consume(s, n);
	pos += n;
	gs_io_run(io, false);
	CHECK(gs_stream_peek(s, &p, &n) == -EAGAIN && !gs_io_pending(io),
	      "consumed but held: nothing read into its room");
	CHECK(!memcmp(first, val + DISK, GS_HDD_CHUNK), "its bytes untouched");
	gs_stream_release(s, pos - 1);
	CHECK(!gs_io_pending(io), "a release short of the chunk's end frees nothing");
	gs_stream_release(s, pos);
	CHECK(gs_io_pending(io) == 1, "released: the next chunk is read");
	for (;;) {
		ret = gs_stream_peek(s, &p, &n);
		if (ret == -EAGAIN) {
			gs_io_run(io, true);
			continue;
		}
		if (ret < 0 || !n)
			break;
		CHECK(!memcmp(p, val + pos, n), "bytes at %llu",
		      (unsigned long long)pos);
		gs_stream_consume(s, n);
		pos += n;
		gs_stream_release(s, pos);
	}
	CHECK(ret == 0 && pos == DISK + (3u << 20), "whole: %d at %llu", ret,
	      (unsigned long long)pos);
	CHECK(close_and_release(io, &s, &released) == 0, "released");

	/* a range of one chunk given five buffers reads into the first only
	 * (an object not read before: none of its chunks is cached) */
	released = false;
	CHECK(put(io, "one-chunk", val, (9u << 20) + 7) == 0, "put");
	CHECK(gs_lookup(e, "one-chunk", 9, &obj) == 0, "lookup");
	CHECK(gs_stream_open_into(io, obj, DISK + 5, 100, (void *const *)bufs,
				  NBUFS, on_wake, set_flag, &released, &s) == 0,
	      "open into five buffers");
	gs_obj_put(e, &obj);
	CHECK(gs_stream_bufs_used(s) == 1, "buffers used: %u",
	      gs_stream_bufs_used(s));
	CHECK(drain(io, s, val + DISK + 5) == 0, "its 100 bytes");
	CHECK(close_and_release(io, &s, &released) == 0, "released");
}

/* A stream's chunks read from disk are cached in RAM slots (the RAM is
 * full of other chunks by now: free slots take the first read's, the
 * second read, within a lap, pushes colder ones out); the next stream of
 * the object takes them from the region, byte-exact, with no disk read,
 * and an object replaced meanwhile never serves the old bytes. */
static void ram_chunks(struct gs_engine *e, struct gs_io *io, char *val)
{
	uint64_t size = (5u << 20) + 4099;
	struct gs_stats a, b, c;
	struct gs_stream *s;
	struct gs_obj *obj;
	int ret;

	fill(val, size, 77);
	CHECK(put(io, "cached", val, size) == 0, "put");
	gs_stats(e, &a);
	for (int round = 0; round < 3; round++) {
		bool from_region = true;

		CHECK(gs_lookup(e, "cached", 6, &obj) == 0, "lookup");
		CHECK(gs_stream_open(io, obj, 0, UINT64_MAX, on_wake, NULL, &s) == 0,
		      "open");
		gs_obj_put(e, &obj);
		ret = drain_ram(e, io, s, val, &from_region);
		CHECK(ret == 0, "round %d whole, byte-exact: %d", round, ret);
		CHECK(round < 2 || from_region, "the third read is all RAM");
		gs_stream_close(&s);
		while (gs_io_pending(io))
			gs_io_run(io, true);
		if (round)
			gs_stats(e, round == 1 ? &b : &c);
	}
	/* 5 SSD chunks (the first is the head), 3 HDD and a cut one: what
	 * free slots did not take on the first read, the second (the object
	 * read again within a lap) took in colder chunks' place */
	CHECK(b.chunk_admissions - a.chunk_admissions == 8, "admitted %llu",
	      (unsigned long long)(b.chunk_admissions - a.chunk_admissions));
	CHECK(c.chunk_hits - b.chunk_hits == 8 && c.disk_reads == b.disk_reads,
	      "third read: %llu hits, %llu disk reads",
	      (unsigned long long)(c.chunk_hits - b.chunk_hits),
	      (unsigned long long)(c.disk_reads - b.disk_reads));

	/* gathered without consuming (gs_stream_peek_at): the same bytes */
	{
		uint64_t skip = 0;
		const void *p;
		size_t n;

		CHECK(gs_lookup(e, "cached", 6, &obj) == 0, "lookup");
		CHECK(gs_stream_open(io, obj, 0, UINT64_MAX, on_wake, NULL, &s) == 0,
		      "open");
		gs_obj_put(e, &obj);
		while ((ret = gs_stream_peek_at(s, skip, &p, &n)) == 0 && n) {
			CHECK(!memcmp(p, val + skip, n), "gathered at %llu",
			      (unsigned long long)skip);
			skip += n;
		}
		CHECK(ret == 0 && skip == size && gs_stream_left(s) == size,
		      "all of it gathered, none consumed: %d, %llu", ret,
		      (unsigned long long)skip);
		gs_stream_consume(s, size - 1);
		CHECK(gs_stream_peek(s, &p, &n) == 0 && n == 1 &&
		      *(const char *)p == val[size - 1], "the last byte");
		gs_stream_close(&s);
	}

	/* replaced: the new bytes, the old ones' slots given back */
	fill(val, size, 78);
	CHECK(put(io, "cached", val, size) == 0, "put again");
	gs_stats(e, &a);
	CHECK(a.ram_chunk_bytes <= c.ram_chunk_bytes - (size - (256u << 10)),
	      "old chunks freed: %llu", (unsigned long long)a.ram_chunk_bytes);
	CHECK(read_range(e, io, "cached", val, 0, UINT64_MAX, 2, SIZE_MAX) == 0,
	      "the new value");
	CHECK(read_range(e, io, "cached", val, 0, UINT64_MAX, 2, SIZE_MAX) == 0,
	      "the new value, read again");
	CHECK(read_range(e, io, "cached", val, 0, UINT64_MAX, 2, 100000) == 0,
	      "the new value from RAM");
}

/* Reads <key> whole through a pooled window; returns the chunk hits it
 * took, or -1 when a byte was wrong. */
static int64_t read_hits(struct gs_engine *e, struct gs_io *io,
			 const char *key, const char *val)
{
	struct gs_stats a, b;

	gs_stats(e, &a);
	if (read_range(e, io, key, val, 0, UINT64_MAX, 1, SIZE_MAX) < 0)
		return -1;
	gs_stats(e, &b);
	return (int64_t)(b.chunk_hits - a.chunk_hits);
}

/*
 * The chunk cache's policy, on 32 slots of 256K and objects of 2.25M (a
 * head, then four SSD chunks and one HDD chunk in 8 slots): free slots take any chunk; once RAM is full, a
 * pass over cold objects pushes nothing out, an object read again within a
 * lap pushes colder chunks out but never a pinned object's, and a new
 * object's head takes a chunk's slot, never another head's.
 */
static void chunk_policy(char *val)
{
	const uint64_t size = (2u << 20) + (256u << 10);
	struct gs_engine *e;
	struct gs_io *io;
	struct gs_stream *pin;
	struct gs_obj *obj;
	struct gs_stats a, b;
	struct gs_config cfg;
	char err[256], ssd[300], hdd[300], key[16];
	uint64_t idx0;

	store_config(&cfg, 8 << 20, 2 << 20, 64 << 20, 128 << 20);
	store_pool(&cfg, false, ssd, sizeof(ssd), "%s/policy-ssd", tmpdir);
	store_pool(&cfg, true, hdd, sizeof(hdd), "%s/policy-hdd", tmpdir);
	if (gs_engine_open(&e, &cfg, err, sizeof(err)) < 0) {
		CHECK(0, "open: %s", err);
		return;
	}
	CHECK(gs_io_create(e, &io) == 0, "io");
	fill(val, size, 90);
	for (int i = 0; i < 8; i++) {	/* c0..c5, hot, warm: 8 heads */
		snprintf(key, sizeof(key), i < 6 ? "c%d" : i == 6 ? "hot" : "warm", i);
		CHECK(put(io, key, val, size) == 0, "put %s", key);
	}
	gs_stats(e, &a);
	idx0 = a.index_record_bytes;
	CHECK(read_hits(e, io, "hot", val) == 0, "hot: read, cached");
	CHECK(read_hits(e, io, "warm", val) == 0, "warm: read, cached");
	gs_stats(e, &a);
	CHECK(a.ram_chunks == 2 * 5 && a.ram_heads == 8 &&
	      a.ram_used_bytes == 24 * (256u << 10),
	      "%llu chunks, %llu heads, %llu bytes", (unsigned long long)a.ram_chunks,
	      (unsigned long long)a.ram_heads, (unsigned long long)a.ram_used_bytes);

	/* a scan: c0 takes the last 8 free slots, c1..c5 find none */
	for (int i = 0; i < 6; i++) {
		snprintf(key, sizeof(key), "c%d", i);
		CHECK(read_hits(e, io, key, val) == 0, "scan %s", key);
	}
	gs_stats(e, &b);
	CHECK(b.chunk_evictions == a.chunk_evictions &&
	      b.chunk_admissions == a.chunk_admissions + 5,
	      "the scan pushed nothing out: %llu evictions, %llu admissions",
	      (unsigned long long)(b.chunk_evictions - a.chunk_evictions),
	      (unsigned long long)(b.chunk_admissions - a.chunk_admissions));
	CHECK(read_hits(e, io, "hot", val) == 5, "hot still cached");

	/* hot pinned (its stream open, unread); c1 and c2 read again push
	 * colder chunks out, never hot's */
	CHECK(gs_lookup(e, "hot", 3, &obj) == 0, "lookup");
	CHECK(gs_stream_open(io, obj, 0, UINT64_MAX, on_wake, NULL, &pin) == 0,
	      "pin hot");
	gs_obj_put(e, &obj);
	gs_stats(e, &a);
	CHECK(read_hits(e, io, "c1", val) == 0 && read_hits(e, io, "c2", val) == 0,
	      "c1, c2 read again");
	gs_stats(e, &b);
	CHECK(b.chunk_admissions == a.chunk_admissions + 10 &&
	      b.chunk_evictions > a.chunk_evictions,
	      "read again within a lap: admitted %llu, evicted %llu",
	      (unsigned long long)(b.chunk_admissions - a.chunk_admissions),
	      (unsigned long long)(b.chunk_evictions - a.chunk_evictions));
	CHECK(read_hits(e, io, "c2", val) == 5, "c2 from RAM now");
	gs_stream_close(&pin);
	while (gs_io_pending(io))
		gs_io_run(io, true);
	CHECK(read_hits(e, io, "hot", val) == 5, "hot was never pushed out");

	/* new objects' heads take the free slots, then cached chunks' slots,
	 * never a head's */
	gs_stats(e, &a);
	for (uint64_t i = 0; i <= 32 - a.ram_used_bytes / (256u << 10); i++) {
		snprintf(key, sizeof(key), "new%d", (int)i);
		CHECK(put(io, key, val, size) == 0, "put %s", key);
	}
	gs_stats(e, &b);
	CHECK(b.ram_heads == a.ram_heads + 33 - a.ram_used_bytes / (256u << 10) &&
	      b.head_evictions == a.head_evictions &&
	      b.chunk_evictions > a.chunk_evictions,
	      "heads first: %llu heads, %llu head evictions, %llu chunk evictions",
	      (unsigned long long)b.ram_heads,
	      (unsigned long long)(b.head_evictions - a.head_evictions),
	      (unsigned long long)(b.chunk_evictions - a.chunk_evictions));
	CHECK(b.pins == 0, "pins %llu", (unsigned long long)b.pins);

	/* once an object's last cached chunk goes, so does its table: with
	 * every new object deleted, no chunk of c0..hot left, the index is
	 * what it was before anything was read */
	for (int i = 0; i < 40 && b.ram_chunks; i++) {
		snprintf(key, sizeof(key), "more%d", i);
		CHECK(put(io, key, val, size) == 0, "put %s", key);
		gs_stats(e, &b);
	}
	CHECK(b.ram_chunks == 0, "every chunk dropped for heads: %llu left",
	      (unsigned long long)b.ram_chunks);
	for (int i = 0; i < 40; i++)	/* some of these were never stored */
		for (int k = 0; k < 2; k++) {
			snprintf(key, sizeof(key), k ? "more%d" : "new%d", i);
			gs_delete(e, key, strlen(key));
		}
	gs_stats(e, &b);
	CHECK(b.index_record_bytes == idx0, "index record bytes %llu, before "
	      "any read %llu", (unsigned long long)b.index_record_bytes,
	      (unsigned long long)idx0);
	gs_io_destroy(&io);
	gs_engine_close(&e);
}

static void bad_args(struct gs_engine *e, struct gs_io *io)
{
	struct gs_stream *s = NULL;
	struct gs_obj *obj;
	bool released = false;
	void *odd[2] = { bufs[0], bufs[1] + 512 };

	CHECK(gs_lookup(e, "obj-1", 5, &obj) == 0, "lookup");
	CHECK(gs_stream_open_into(io, obj, 0, 1, (void *const *)bufs, 0, on_wake,
				  set_flag, &released, &s) == -EINVAL, "no buffer");
	CHECK(gs_stream_open_into(io, obj, 0, 1, (void *const *)bufs, 65, on_wake,
				  set_flag, &released, &s) == -EINVAL, "65 buffers");
	CHECK(gs_stream_open_into(io, obj, 0, 1, odd, 2, on_wake, set_flag,
				  &released, &s) == -EINVAL, "misaligned buffer");
	CHECK(gs_stream_open_into(io, obj, 0, 1, (void *const *)bufs, 1, on_wake,
				  NULL, NULL, &s) == -EINVAL, "no release callback");
	CHECK(!s && !released, "nothing opened");
	gs_obj_put(e, &obj);
}

int main(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	struct gs_stats st;
	char err[256], ssd[300], hdd[2][300];
	char *val = malloc(10u << 20);

	if (!val || scratch_make(tmpdir) < 0)
		return 1;
	for (unsigned i = 0; i < NBUFS; i++)
		bufs[i] = aligned_alloc(4096, GS_IO_BUFFER);
	store_config(&cfg, 32 << 20, 8 << 20, 64 << 20, 128 << 20);
	cfg.stripe_unit = 64 << 10;
	cfg.io_buffers = 2;
	cfg.io_streams = 1;		/* one stream holds every window buffer */
	store_pool(&cfg, false, ssd, sizeof(ssd), "%s/ssd", tmpdir);
	for (int i = 0; i < 2; i++)
		store_pool(&cfg, true, hdd[i], sizeof(hdd[i]), "%s/hdd%d",
			   tmpdir, i);
	if (gs_engine_open(&e, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "open: %s\n", err);
		return 1;
	}
	CHECK(gs_io_create(e, &io) == 0, "io");
	byte_exact(e, io, val);
	own_window(e, io, val);
	early_first_chunk(e, io, val);
	held(e, io, val);
	ram_chunks(e, io, val);
	chunk_policy(val);
	bad_args(e, io);
	gs_stats(e, &st);
	CHECK(st.checksum_errors == 0 && st.io_errors == 0, "errors");
	CHECK(st.pins == 0, "pins left %llu", (unsigned long long)st.pins);
	gs_io_destroy(&io);
	gs_engine_close(&e);
	for (unsigned i = 0; i < NBUFS; i++)
		free(bufs[i]);
	free(val);
	if (scratch_remove(tmpdir) < 0)
		failures++;
	return check_result();
}
