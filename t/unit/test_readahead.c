/*
 * Read-ahead windows sized to need, and I/O buffers given back when idle.
 * A stream whose consumer leaves landed chunks unread keeps the window it
 * started with (two buffers over HDD chunks); one whose consumer keeps
 * catching up with the disk grows (up to --io-buffers: how far depends on
 * how often the disk is behind), and shrinks back once it slows down.  Buffers free for a second go back (io_buffer_bytes falls
 * to 0, io_buffer_returns counts them, their pages are gone), the last one
 * back is the next out, so a thread that goes on with one stream keeps
 * only that stream's window.  Every byte read is compared with what was
 * written, before and after the buffers were given back and registered
 * again, and the streams fed the measurements (read times, drain rate).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "goblin.h"
#include "check.h"
#include "engine_util.h"
#include "stream.h"
#include "uring.h"

#define SIZE	(24u << 20)
#define OFF	(4u << 20)		/* past head and prefix: HDD chunks only */
#define SMALL	(20u << 20) + 123, (1u << 20) + 1	/* spans two HDD chunks */
#define ALL	OFF, UINT64_MAX
#define SMALL_SIZE ((5u << 18) + (100u << 10))	/* head, prefix, 100K on HDD */
#define BUFS	4u			/* cfg.io_buffers */

static char tmpdir[] = "/var/tmp/goblin-test-readahead.XXXXXX";

/* Stream buffers held now (by the one stream open). */
static unsigned held(const struct gs_io *io)
{
	return io->stream_bufs.n - io->stream_bufs.nfree;
}

struct reader {
	struct gs_stream *s;
	const char *want;		/* the value, from offset 0 */
	uint64_t pos;
	unsigned max_held;
};

static int reader_open_key(struct gs_engine *e, struct gs_io *io,
			   struct reader *r, const char *key, const char *val,
			   uint64_t off, uint64_t len)
{
	struct gs_obj *obj;
	int ret = gs_lookup(e, key, strlen(key), &obj);

	if (ret < 0)
		return ret;
	*r = (struct reader){ .want = val, .pos = off };
	ret = gs_stream_open(io, obj, off, len, on_wake, NULL, &r->s);
	gs_obj_put(e, &obj);
	return ret;
}

/* A fast consumer's look at what it got: its first and last 4K (every
 * chunk's checksum is checked as it lands), so that it outruns the disk. */
static int spot_check(const char *p, const char *want, size_t len)
{
	size_t n = len < 4096 ? len : 4096;

	return memcmp(p, want, n) || memcmp(p + len - n, want + len - n, n);
}

/*
 * Reads <chunks> chunks of <r> (all when 0): a slow consumer (<slow>) lets
 * every read in flight land before it asks for more, a fast one asks as
 * soon as it has sent what it got.  0 when every byte was right.
 */
static int reader_open(struct gs_engine *e, struct gs_io *io, struct reader *r,
		       const char *val, uint64_t off, uint64_t len)
{
	return reader_open_key(e, io, r, "big", val, off, len);
}

static int reader_go(struct gs_io *io, struct reader *r, bool slow,
		     unsigned chunks)
{
	for (unsigned n = 0; !chunks || n < chunks; ) {
		const void *p;
		size_t len;
		int ret;

		while (slow && gs_io_pending(io))
			gs_io_run(io, true);
		ret = gs_stream_peek(r->s, &p, &len);
		if (held(io) > r->max_held)
			r->max_held = held(io);
		if (ret == -EAGAIN) {
			gs_io_run(io, true);
			continue;
		}
		if (ret < 0)
			return ret;
		if (!len)
			return gs_stream_left(r->s) ? -EPIPE : 0;
		if (slow ? memcmp(p, r->want + r->pos, len) :
			   spot_check(p, r->want + r->pos, len))
			return -EILSEQ;
		gs_stream_consume(r->s, len);
		r->pos += len;
		n++;			/* a peek hands out one chunk at most */
	}
	return 0;
}

static void reader_close(struct gs_io *io, struct reader *r)
{
	gs_stream_close(&r->s);
	while (gs_io_pending(io))
		gs_io_run(io, true);
}

/* Runs <io> as a server loop does for <ms>. */
static struct gs_stats stats(struct gs_engine *e)
{
	struct gs_stats st;

	gs_stats(e, &st);
	return st;
}

/* Pages of <io>'s buffer memory resident now. */
static size_t resident_pages(const struct gs_io *io)
{
	size_t page = sysconf(_SC_PAGESIZE), n = io->bufmem_len / page, r = 0;
	unsigned char *v = malloc(n);

	if (!v || mincore(io->bufmem, io->bufmem_len, v) < 0) {
		free(v);
		return SIZE_MAX;
	}
	for (size_t i = 0; i < n; i++)
		r += v[i] & 1;
	free(v);
	return r;
}

static void windows(struct gs_engine *e, struct gs_io *io, const char *val)
{
	struct reader r;
	struct gs_stats st;

	CHECK(reader_open(e, io, &r, val, ALL) == 0, "open slow");
	CHECK(reader_go(io, &r, true, 0) == 0, "slow: byte-exact");
	CHECK(r.max_held == 2, "slow consumer: window of %u buffers", r.max_held);
	reader_close(io, &r);

	CHECK(reader_open(e, io, &r, val, ALL) == 0, "open fast");
	CHECK(reader_go(io, &r, false, 0) == 0, "fast: byte-exact");
	CHECK(r.max_held > 2 && r.max_held <= BUFS,
	      "fast consumer: window of %u buffers", r.max_held);
	reader_close(io, &r);

	/* fast until grown, then slow: the window goes back to two */
	CHECK(reader_open(e, io, &r, val, ALL) == 0, "open fast, then slow");
	CHECK(reader_go(io, &r, false, 8) == 0, "fast part");
	CHECK(r.max_held > 2, "grown to %u buffers", r.max_held);
	CHECK(reader_go(io, &r, true, 4) == 0, "slow part");
	CHECK(held(io) == 2, "slowed down: %u buffers", held(io));
	CHECK(reader_go(io, &r, true, 0) == 0, "the rest");
	reader_close(io, &r);
	CHECK(held(io) == 0, "closed: %u buffers held", held(io));

	st = stats(e);
	CHECK(st.hdd_read_p99_us > 0, "HDD reads measured");
	CHECK(st.delivery_rate > 0, "drain rate measured");
}

/* read_order() of "big": its first chunk, then its first <lead_max> HDD
 * chunks back to back (one seek), then the SSD chunks they jumped, then the
 * rest in offset order; every disk chunk once. */
static void lead_order(struct gs_engine *e)
{
	uint32_t order[64], seen[64] = { 0 }, n, h, first;
	struct gs_obj *obj;
	bool ok = true;

	if (gs_lookup(e, "big", 3, &obj) < 0) {
		CHECK(0, "big stored");
		return;
	}
	CHECK(obj->nchunks <= 64, "chunks %u", obj->nchunks);
	for (h = 0; h < obj->nchunks &&
	     obj_chunks(obj)[h].tier != GS_TIER_HDD; h++)
		;
	for (first = 0; obj_chunks(obj)[first].tier == GS_TIER_RAM; first++)
		;
	CHECK(first + 1 < h && h + 3 < obj->nchunks,
	      "an SSD prefix before the tail (%u, %u)", first, h);
	n = read_order(obj, 0, obj->nchunks, 3, order);
	CHECK(n == obj->nchunks - first, "%u chunks ordered", n);
	for (uint32_t i = 0; i < n; i++)
		ok = ok && order[i] < 64 && !seen[order[i]]++;
	CHECK(ok, "each once");
	CHECK(order[0] == first && order[1] == h && order[2] == h + 1 &&
	      order[3] == h + 2 && order[4] == first + 1,
	      "first, three HDD chunks, then the prefix: %u %u %u %u %u",
	      order[0], order[1], order[2], order[3], order[4]);
	for (uint32_t i = 5; i < n; i++)
		ok = ok && order[i] > order[i - 1];
	CHECK(ok, "then offset order");
	n = read_order(obj, 0, obj->nchunks, 0, order);
	CHECK(order[1] == first + 1, "no lead: offset order");
	gs_obj_put(e, &obj);
}

/* A whole GET of an object whose HDD tail leads its SSD prefix: a tail
 * chunk that leaves a slice for each prefix chunk shares their buffer (one
 * in all); whole 1 MiB HDD chunks lead back to back, as many as the window
 * holds with a buffer left for the prefix (BUFS - 1 here), each in a
 * buffer of its own.  Each runs with nothing measured (no delivery rate):
 * its window the least. */
static void leads(struct gs_engine *e, struct gs_io *io, const char *val,
		  const char *small)
{
	struct reader r;

	CHECK(reader_open_key(e, io, &r, "small", small, 0, UINT64_MAX) == 0,
	      "open small");
	CHECK(reader_go(io, &r, true, 0) == 0, "small: byte-exact");
	CHECK(r.max_held == 1, "short HDD tail leads: %u buffers", r.max_held);
	reader_close(io, &r);
	idle_for(io, 2100);		/* what it measured goes stale */
	lead_order(e);
	CHECK(reader_open(e, io, &r, val, 0, UINT64_MAX) == 0, "open big at 0");
	CHECK(reader_go(io, &r, true, 3) == 0, "big from 0: byte-exact");
	CHECK(r.max_held == BUFS, "whole HDD chunks lead: %u buffers",
	      r.max_held);
	reader_close(io, &r);
}

static void idle_return(struct gs_engine *e, struct gs_io *io, const char *val)
{
	struct gs_stats before = stats(e), st;
	struct reader r;
	uint64_t returns;
	unsigned fast;

	CHECK(before.io_buffer_bytes >= BUFS * GS_IO_BUFFER,
	      "resident after the reads: %llu",
	      (unsigned long long)before.io_buffer_bytes);
	idle_for(io, 1600);
	st = stats(e);
	CHECK(st.io_buffer_bytes == 0, "idle 1.6 s: %llu buffer bytes left",
	      (unsigned long long)st.io_buffer_bytes);
	returns = st.io_buffer_returns - before.io_buffer_returns;
	CHECK(returns == before.io_buffer_bytes / GS_IO_BUFFER,
	      "io_buffer_returns %llu", (unsigned long long)returns);
	CHECK(resident_pages(io) == 0, "pages left: %zu", resident_pages(io));

	/* registered again on use, byte-exact; a thread that goes on with a
	 * two-buffer stream keeps those two only */
	CHECK(reader_open(e, io, &r, val, SMALL) == 0, "open small");
	CHECK(reader_go(io, &r, true, 0) == 0, "byte-exact after return");
	CHECK(r.max_held == 2, "small stream: %u buffers", r.max_held);
	reader_close(io, &r);
	CHECK(reader_open(e, io, &r, val, ALL) == 0, "open fast");
	CHECK(reader_go(io, &r, false, 0) == 0, "fast: byte-exact");
	reader_close(io, &r);
	fast = r.max_held;
	before = stats(e);
	CHECK(fast > 2 && before.io_buffer_bytes == fast * GS_IO_BUFFER,
	      "the fast stream's %u buffers: %llu", fast,
	      (unsigned long long)before.io_buffer_bytes);
	for (uint64_t end = mono_ms() + 1600; mono_ms() < end; ) {
		CHECK(reader_open(e, io, &r, val, SMALL) == 0, "open small");
		CHECK(reader_go(io, &r, true, 0) == 0, "small stream");
		reader_close(io, &r);
		idle_for(io, 50);
	}
	st = stats(e);
	CHECK(st.io_buffer_bytes == 2 * GS_IO_BUFFER,
	      "busy with one small stream: %llu buffer bytes",
	      (unsigned long long)st.io_buffer_bytes);
	CHECK(st.io_buffer_returns - before.io_buffer_returns == fast - 2,
	      "returned %llu", (unsigned long long)(st.io_buffer_returns -
						   before.io_buffer_returns));
}

int main(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	struct gs_stats st;
	char ssd[300], hdd[300];
	char *val = malloc(SIZE), *small = malloc(SMALL_SIZE);

	if (!val || !small || scratch_make(tmpdir) < 0)
		return 1;
	/* a small head region, every slot taken by a head (the fillers below),
	 * so the RAM chunk cache holds nothing and every chunk is read */
	store_config(&cfg, 4 << 20, 2 << 20, 64 << 20, 128 << 20);
	cfg.io_buffers = BUFS;
	cfg.io_streams = 4;
	store_two_pools(&cfg, tmpdir, ssd, hdd, sizeof(ssd));
	if (store_open(&e, &cfg) < 0)
		return 1;
	CHECK(gs_io_create(e, &io) == 0, "io");
	fill(val, SIZE, 7);
	CHECK(put_if(io, "big", val, SIZE, 0, GS_IF_ANY, 0, NULL) == 0, "put");
	fill(small, SMALL_SIZE, 8);
	CHECK(put_if(io, "small", small, SMALL_SIZE, 0, GS_IF_ANY, 0, NULL) == 0,
	      "put small");
	for (int i = 0; i < 40; i++) {
		char key[24];

		snprintf(key, sizeof(key), "filler-%d", i);
		CHECK(put_if(io, key, small, 300u << 10, 0, GS_IF_ANY, 0, NULL) == 0,
		      "put %s", key);
	}
	leads(e, io, val, small);	/* first: nothing measured yet */
	idle_for(io, 2100);		/* what it measured goes stale */
	windows(e, io, val);
	idle_return(e, io, val);
	st = stats(e);
	CHECK(st.checksum_errors == 0 && st.io_errors == 0, "errors");
	CHECK(st.ram_chunks == 0, "chunks cached in RAM: %llu",
	      (unsigned long long)st.ram_chunks);
	CHECK(st.pins == 0, "pins left %llu", (unsigned long long)st.pins);
	gs_io_destroy(&io);
	st = stats(e);
	CHECK(st.io_buffer_bytes == 0, "io gone: %llu",
	      (unsigned long long)st.io_buffer_bytes);
	gs_engine_close(&e);
	free(val);
	free(small);
	if (scratch_remove(tmpdir) < 0)
		failures++;
	return check_result();
}
