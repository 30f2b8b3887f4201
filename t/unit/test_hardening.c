/*
 * The engine defects of issue 8, each as it was found: incr on a counter
 * CLOCK evicts under it, --stripe-unit too small for a chunk, failed
 * io_uring submits, allocation failures in gs_writer_finish and
 * engine_link, a stalled reader holding every read-ahead window, an unfed
 * set reserving (and evicting for) its whole size, append/prepend copying
 * the value and reading with pread (pool dirs opened through symlinks or
 * owned by others: test_pool).  Built with the fault hooks of faults.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <liburing.h>

#include "engine.h"
#include "check.h"
#include "engine_util.h"
#include "log.h"
#include "mc_items.h"
#include "index.h"

unsigned fault_malloc_n, fault_calloc_n, fault_realloc_n, fault_submit_n;
int fault_submit_err;
size_t fault_alloc_bytes;
unsigned fault_preads;
unsigned fault_fdatasync_n;

static bool fire(unsigned *n)
{
	return *n && --*n == 0;
}

void *fault_malloc(size_t n)
{
	fault_alloc_bytes += n;
	return fire(&fault_malloc_n) ? NULL : (malloc)(n);
}

void *fault_calloc(size_t n, size_t size)
{
	fault_alloc_bytes += n * size;
	return fire(&fault_calloc_n) ? NULL : (calloc)(n, size);
}

void *fault_realloc(void *p, size_t n)
{
	fault_alloc_bytes += n;
	return fire(&fault_realloc_n) ? NULL : (realloc)(p, n);
}

int (io_uring_submit)(struct io_uring *ring);	/* the real one */

/* A ring the fault hits is made to look like one set up with
 * IORING_SETUP_NO_SQARRAY (liburing 2.6 on Linux 6.6 and later): no
 * sq.array, so the failure path must not use it (issue 21).  liburing 2.3
 * fills the array once at setup; the kernel keeps reading its own copy. */
int fault_io_uring_submit(struct io_uring *ring)
{
	if (fault_submit_n) {
		fault_submit_n--;
		ring->sq.array = NULL;
		return fault_submit_err;
	}
	return (io_uring_submit)(ring);
}

ssize_t fault_pread(int fd, void *buf, size_t n, off_t off)
{
	fault_preads++;
	return (pread)(fd, buf, n, off);
}

int fault_fdatasync(int fd)
{
	if (__atomic_load_n(&fault_fdatasync_n, __ATOMIC_ACQUIRE)) {
		errno = EIO;
		return -1;
	}
	return (fdatasync)(fd);
}

static char tmp[] = "/var/tmp/goblin-test-hardening.XXXXXX";

/* Writes <size> bytes of <val> under <key>; returns the done result. */
static int put(struct gs_io *io, const char *key, const char *val,
	       uint64_t size, uint32_t flags)
{
	return put_if(io, key, val, size, flags, GS_IF_ANY, 0, NULL);
}

struct reader {
	struct gs_stream *s;
	uint64_t pos, size;
	const char *want;
	bool woke;
	int err;
};

static void reader_wake(void *arg)
{
	((struct reader *)arg)->woke = true;
}

static int reader_open(struct gs_engine *e, struct gs_io *io, struct reader *r,
		       const char *key, const char *want)
{
	struct gs_obj *obj;
	int ret = gs_lookup(e, key, strlen(key), &obj);

	if (ret < 0)
		return ret;
	*r = (struct reader){ .want = want, .size = gs_obj_meta(obj)->size };
	ret = gs_stream_open(io, obj, 0, r->size, reader_wake, r, &r->s);
	gs_obj_put(e, &obj);
	return ret;
}

/* Peeks at what has landed past the head: 0 and <*p>,<*n>, -EAGAIN, or an
 * error; every byte checked against want. */
static int reader_peek(struct reader *r, const void **p, size_t *n)
{
	int ret = gs_stream_peek(r->s, p, n);

	if (ret == 0 && memcmp(*p, r->want + r->pos, *n))
		ret = -EILSEQ;
	return ret;
}

/* Reads the rest of <r>, checking every byte; closes it. */
static int reader_drain(struct gs_io *io, struct reader *r)
{
	int ret;

	for (;;) {
		const void *p;
		size_t n;

		ret = reader_peek(r, &p, &n);
		if (ret == -EAGAIN) {
			r->woke = false;
			if (!run_for(io, &r->woke, 10000)) {
				ret = -ETIMEDOUT;
				break;
			}
			continue;
		}
		if (ret < 0 || n == 0)
			break;
		gs_stream_consume(r->s, n);
		r->pos += n;
	}
	gs_stream_close(&r->s);
	if (ret == 0 && r->pos != r->size)
		ret = -EPIPE;
	return ret;
}

static struct gs_engine *open_engine(struct gs_config *cfg, const char *name,
				     int nssd)
{
	static char dirs[4][300];
	struct gs_engine *e;
	char err[256];

	for (int i = 0; i < nssd; i++) {
		snprintf(dirs[i], sizeof(dirs[i]), "%s/%s-%d", tmp, name, i);
		cfg->ssd_dir.v[cfg->ssd_dir.n++] = dirs[i];
	}
	if (gs_engine_open(&e, cfg, err, sizeof(err)) < 0) {
		CHECK(0, "%s: open: %s", name, err);
		return NULL;
	}
	return e;
}

static void small_config(struct gs_config *cfg)
{
	gs_config_init(cfg);
	cfg->memory = 16 << 20;
	cfg->sub_memory = 4 << 20;
	cfg->no_mlock = true;
	cfg->max_object = 8 << 20;
	cfg->ssd_size = 64 << 20;
}

/* Defect 1: incr reserves room for the new value while the old counter is
 * the CLOCK's first candidate; it must not be freed under incr. */
static void incr_evicts_counter(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	struct gs_obj *obj;
	char key[16];
	uint64_t v = 0;
	int ret;

	gs_config_init(&cfg);
	cfg.memory = cfg.sub_memory = cfg.block = cfg.ram_head = 4096;
	cfg.no_mlock = true;
	e = open_engine(&cfg, "incr", 0);
	if (!e)
		return;
	CHECK(gs_io_create(e, &io) == 0, "incr: io");
	CHECK(put(io, "c", "1", 1, 77) == 0, "incr: set c");
	for (int i = 0; i < 63; i++) {
		snprintf(key, sizeof(key), "f%d", i);
		CHECK(put(io, key, "x", 1, 0) == 0, "incr: fill %d", i);
	}
	ret = mc_incr(e, "c", 1, false, 1, &v);
	CHECK(ret == 0 && v == 2, "incr: %d, %llu", ret, (unsigned long long)v);
	CHECK(gs_lookup(e, "c", 1, &obj) == 0, "incr: c gone");
	if (obj) {
		CHECK(gs_obj_meta(obj)->flags == 77 && gs_obj_meta(obj)->size == 1 &&
		      !memcmp(gs_obj_head(e, obj, NULL), "2", 1), "incr: c is wrong");
		gs_obj_put(e, &obj);
	}
	gs_io_destroy(&io);
	gs_engine_close(&e);
}

/* Defect 8: a stripe so small that a chunk spans more segments than one
 * I/O can carry is refused when the engine opens. */
static void stripe_too_small(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	char err[256] = "", d0[300], d1[300];

	small_config(&cfg);
	snprintf(d0, sizeof(d0), "%s/stripe-0", tmp);
	snprintf(d1, sizeof(d1), "%s/stripe-1", tmp);
	cfg.ssd_dir.v[0] = d0;
	cfg.ssd_dir.v[1] = d1;
	cfg.ssd_dir.n = 2;
	cfg.stripe_unit = 32 << 10;
	/* the daemon's wording of it (--stripe-unit): test_options */
	CHECK(gs_engine_open(&e, &cfg, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "`stripe_unit` must be at least 64K"),
	      "32K stripe over two dirs: %s", err);
	cfg.stripe_unit = 64 << 10;
	CHECK(gs_engine_open(&e, &cfg, err, sizeof(err)) == 0, "64K: %s", err);
	if (e) {
		struct gs_io *io;
		char *val = malloc(4 << 20);
		struct reader r;

		gs_io_create(e, &io);
		fill(val, 4 << 20, 3);
		CHECK(put(io, "s", val, 4 << 20, 0) == 0, "64K stripe: put");
		CHECK(reader_open(e, io, &r, "s", val) == 0 &&
		      reader_drain(io, &r) == 0, "64K stripe: read back");
		gs_io_destroy(&io);
		gs_engine_close(&e);
		free(val);
	}
}

/* Defect 8: io_uring_submit failures.  -EAGAIN/-EBUSY are retried; any
 * other error fails the queued reads (the reader hears of it, nothing is
 * stranded, no pin is left), on a ring without sq.array too (issue 21:
 * fault_io_uring_submit), and the ring serves on. */
static void submit_failures(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	struct gs_stats st;
	struct reader r;
	char *val = malloc(2 << 20);
	int ret;

	small_config(&cfg);
	e = open_engine(&cfg, "submit", 1);
	if (!e)
		return;
	gs_io_create(e, &io);
	fill(val, 2 << 20, 5);
	CHECK(put(io, "a", val, 2 << 20, 0) == 0, "submit: put a");
	CHECK(put(io, "b", val, 2 << 20, 0) == 0, "submit: put b");

	fault_submit_err = -EAGAIN;
	fault_submit_n = 2;
	CHECK(reader_open(e, io, &r, "a", val) == 0, "submit: open a");
	ret = reader_drain(io, &r);
	CHECK(ret == 0, "submit: -EAGAIN twice, read gave %d", ret);
	fault_submit_err = -EBUSY;
	fault_submit_n = 1;
	CHECK(reader_open(e, io, &r, "a", val) == 0, "submit: open a");
	ret = reader_drain(io, &r);
	CHECK(ret == 0, "submit: -EBUSY, read gave %d", ret);

	fault_submit_err = -ENXIO;
	fault_submit_n = 1;
	CHECK(reader_open(e, io, &r, "b", val) == 0, "submit: open b");
	ret = reader_drain(io, &r);
	CHECK(ret == -EIO, "submit: -ENXIO, read gave %d", ret);
	fault_submit_n = 0;
	CHECK(gs_io_pending(io) == 0, "submit: %u ops stranded", gs_io_pending(io));
	gs_stats(e, &st);
	CHECK(st.pins == 0, "submit: %llu pins left", (unsigned long long)st.pins);
	CHECK(reader_open(e, io, &r, "a", val) == 0 && reader_drain(io, &r) == 0,
	      "submit: a after the failure");
	gs_io_destroy(&io);
	gs_engine_close(&e);
	free(val);
}

/* Defect 8: gs_writer_finish and engine_link under allocation failure:
 * nothing leaks, nothing already stored is lost. */
static void alloc_failures(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	struct gs_writer *w;
	struct gs_stats st0, st;
	struct waitres wr = { 0 };
	struct gs_obj *obj;
	char key[32];
	void *p;
	size_t n;
	int ret;

	small_config(&cfg);
	e = open_engine(&cfg, "alloc", 0);
	if (!e)
		return;
	gs_io_create(e, &io);
	gs_stats(e, &st0);

	/* finish with no memory for anything */
	CHECK(gs_writer_open(io, "f", 1, 5, 0, 0, GS_WRITE_SET, &w) == 0, "alloc: open");
	gs_writer_buf(w, &p, &n, on_wake, NULL);
	memcpy(p, "hello", 5);
	gs_writer_advance(w, 5);
	fault_malloc_n = fault_calloc_n = fault_realloc_n = 1;
	ret = gs_writer_finish(&w, GS_IF_ANY, 0, on_stored, &wr);
	fault_malloc_n = fault_calloc_n = fault_realloc_n = 0;
	if (ret < 0)
		gs_writer_abort(&w);
	else
		run_for(io, &wr.done, 10000);
	CHECK(ret == 0 && wr.done && wr.res == 0, "alloc: finish %d/%d", ret, wr.res);
	gs_delete(e, "f", 1);
	gs_stats(e, &st);
	CHECK(st.ram_used_bytes == st0.ram_used_bytes && st.curr_items == 0,
	      "alloc: %llu RAM bytes leaked",
	      (unsigned long long)(st.ram_used_bytes - st0.ram_used_bytes));

	/* fill the CLOCK to its capacity, then replace a key while the CLOCK
	 * cannot grow: the replacement needs no room, so it must work */
	for (int i = 0; i < 1024; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		CHECK(put(io, key, key, strlen(key), 0) == 0, "alloc: put %s", key);
	}
	fault_realloc_n = 1;
	ret = put(io, "k5", "new", 3, 0);
	fault_realloc_n = 0;
	CHECK(ret == 0, "alloc: replace under a failing realloc gave %d", ret);
	CHECK(gs_lookup(e, "k5", 2, &obj) == 0, "alloc: k5 lost");
	if (obj) {
		CHECK(!memcmp(gs_obj_head(e, obj, NULL), "new", 3), "alloc: k5 wrong");
		gs_obj_put(e, &obj);
	}
	/* a new key then fails cleanly, its reservation given back */
	gs_stats(e, &st0);
	fault_realloc_n = 1;
	ret = put(io, "k1024", "x", 1, 0);
	fault_realloc_n = 0;
	gs_stats(e, &st);
	CHECK(ret == -ENOMEM && st.curr_items == 1024 &&
	      st.ram_used_bytes == st0.ram_used_bytes,
	      "alloc: new key under a failing realloc: %d, %llu items", ret,
	      (unsigned long long)st.curr_items);
	CHECK(put(io, "k1024", "x", 1, 0) == 0, "alloc: k1024 afterwards");
	gs_io_destroy(&io);
	gs_engine_close(&e);
}

/* Reads <r> (open) up to 100 bytes past the head and stops, holding what
 * it peeked last; 0 or what the peek said. */
static int reader_stop_early(struct gs_io *io, struct reader *r)
{
	const void *p;
	size_t n;
	int ret;

	while ((ret = reader_peek(r, &p, &n)) == 0 &&
	       r->pos < (256 << 10) + 100) {
		if (r->pos + n > (256 << 10) + 100)
			n = (256 << 10) + 100 - r->pos;
		gs_stream_consume(r->s, n);
		r->pos += n;
		r->woke = false;
	}
	while (ret == -EAGAIN) {
		r->woke = false;
		run_for(io, &r->woke, 10000);
		ret = reader_peek(r, &p, &n);
	}
	return ret;
}

/* Defect 4a: a reader that never takes its bytes holds a whole read-ahead
 * window; a second reader must get it after a while, and the first one's
 * bytes, read again when it comes back, are still exact. */
static void stalled_reader(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	struct gs_stats st;
	struct reader a, b;
	char *va = malloc(8 << 20), *vb = malloc(8 << 20);
	const void *p, *pa;
	size_t n, na;
	int ret;

	small_config(&cfg);
	cfg.io_streams = 1;		/* one window in all: the two buffers */
	cfg.io_buffers = 2;		/* a stream whose HDD chunk leads takes */
	e = open_engine(&cfg, "stall", 1);
	if (!e)
		return;
	gs_io_create(e, &io);
	fill(va, 8 << 20, 11);
	fill(vb, 8 << 20, 12);
	CHECK(put(io, "a", va, 8 << 20, 0) == 0, "stall: put a");
	CHECK(put(io, "b", vb, 8 << 20, 0) == 0, "stall: put b");

	/* a takes the head and 100 bytes of its first disk chunk, then stops */
	CHECK(reader_open(e, io, &a, "a", va) == 0, "stall: open a");
	ret = reader_stop_early(io, &a);
	CHECK(ret == 0, "stall: a peek %d", ret);
	ret = reader_peek(&a, &pa, &na);
	CHECK(ret == 0 && na > 0, "stall: a has bytes");

	/* b asks for a window: none is free until a's is taken, and never
	 * while a's consumer may still use what it peeked */
	CHECK(reader_open(e, io, &b, "b", vb) == 0, "stall: open b");
	ret = reader_peek(&b, &p, &n);	/* b's head is in RAM */
	CHECK(ret == 0 && !memcmp(pa, va + a.pos, na), "stall: a's peeked bytes changed");
	gs_stream_consume(b.s, n);
	b.pos += n;
	ret = reader_peek(&b, &p, &n);
	CHECK(ret == -EAGAIN, "stall: b got a window at once (%d)", ret);
	/* its first disk chunk comes without a window (early_reads) */
	b.woke = false;
	CHECK(run_for(io, &b.woke, 5000), "stall: b's first chunk never came");
	ret = reader_peek(&b, &p, &n);
	CHECK(ret == 0 && n && !memcmp(p, vb + b.pos, n), "stall: b's first chunk");
	gs_stream_consume(b.s, n);
	b.pos += n;
	gs_stats(e, &st);
	CHECK(st.early_reads == 1, "stall: early_reads %llu",
	      (unsigned long long)st.early_reads);
	ret = reader_peek(&b, &p, &n);
	CHECK(ret == -EAGAIN, "stall: b got a window at once (%d)", ret);
	b.woke = false;
	CHECK(run_for(io, &b.woke, 5000), "stall: b never got a window");
	gs_stats(e, &st);
	CHECK(st.readahead_reclaims >= 1, "stall: readahead_reclaims %llu",
	      (unsigned long long)st.readahead_reclaims);
	CHECK(reader_drain(io, &b) == 0, "stall: b's bytes");
	ret = reader_drain(io, &a);
	CHECK(ret == 0, "stall: a's bytes after the reclaim: %d", ret);
	gs_stats(e, &st);
	CHECK(st.checksum_errors == 0 && st.pins == 0, "stall: errors or pins");
	gs_io_destroy(&io);
	gs_engine_close(&e);
	free(va);
	free(vb);
}

/* A reader stalled on a chunk that RAM holds (the chunk cache) still holds
 * the window its later chunks landed in: a second reader must get it all
 * the same (it waited for ever: only a stall on a chunk in the window or
 * in the early buffer counted). */
static void stalled_on_ram(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	struct gs_stats st;
	struct reader a, b;
	char *va = malloc(8 << 20), *vb = malloc(8 << 20);
	int ret;

	small_config(&cfg);
	cfg.memory = 4 << 20;		/* RAM for a's first chunks, not all */
	cfg.io_streams = 1;
	cfg.io_buffers = 2;
	e = open_engine(&cfg, "stallram", 1);
	if (!e)
		return;
	gs_io_create(e, &io);
	fill(va, 8 << 20, 13);
	fill(vb, 8 << 20, 14);
	CHECK(put(io, "a", va, 8 << 20, 0) == 0 &&
	      put(io, "b", vb, 8 << 20, 0) == 0, "stallram: puts");
	/* read whole once, a's first disk chunks take free RAM; again, */
	CHECK(reader_open(e, io, &a, "a", va) == 0 && reader_drain(io, &a) == 0,
	      "stallram: a read whole");
	/* its first disk chunk from RAM, the next ones in its window: it
	 * stops 100 bytes in, its reads ahead land */
	CHECK(reader_open(e, io, &a, "a", va) == 0 &&
	      (ret = reader_stop_early(io, &a)) == 0, "stallram: a stops");
	idle_for(io, 50);
	gs_stats(e, &st);
	CHECK(st.ram_chunks > 0 && st.chunk_hit_bytes > 0,
	      "stallram: a's first disk chunk was not from RAM");
	CHECK(reader_open(e, io, &b, "b", vb) == 0 && reader_drain(io, &b) == 0,
	      "stallram: b's bytes (it waits until a's window is taken)");
	CHECK((ret = reader_drain(io, &a)) == 0,
	      "stallram: a's bytes after the reclaim: %d", ret);
	gs_stats(e, &st);
	CHECK(st.readahead_reclaims >= 1, "stallram: readahead_reclaims %llu",
	      (unsigned long long)st.readahead_reclaims);
	CHECK(st.checksum_errors == 0 && st.pins == 0, "stallram: errors or pins");
	gs_io_destroy(&io);
	gs_engine_close(&e);
	free(va);
	free(vb);
}

/* Readers that stall and come back at random, over SSD and HDD chunks
 * (the HDD chunk leads a window), fewer windows than readers: windows are
 * reclaimed mid-chunk and everyone still reads every byte exactly. */
static void reclaim_churn(void)
{
	enum { NR = 6 };
	static const uint64_t sizes[NR] = {
		(3 << 20) + 5, 5 << 20, (1 << 20) + (256 << 10) + 1, 7 << 20,
		(2 << 20) - 3, 6 << 20,
	};
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	struct gs_stats st;
	struct reader r[NR];
	char *val[NR], key[16], hdd[300];
	uint64_t wake_at[NR] = { 0 }, seed = 12345;
	unsigned left = NR;
	int ret;

	small_config(&cfg);
	cfg.ssd_prefix = 512 << 10;
	cfg.io_streams = 2;
	cfg.hdd_size = 128 << 20;
	snprintf(hdd, sizeof(hdd), "%s/churn-hdd", tmp);
	cfg.hdd_dir.v[cfg.hdd_dir.n++] = hdd;
	e = open_engine(&cfg, "churn", 1);
	if (!e)
		return;
	gs_io_create(e, &io);
	for (int i = 0; i < NR; i++) {
		val[i] = malloc(sizes[i]);
		fill(val[i], sizes[i], 40 + i);
		snprintf(key, sizeof(key), "r%d", i);
		CHECK(put(io, key, val[i], sizes[i], 0) == 0, "churn: put %s", key);
	}
	for (int i = 0; i < NR; i++) {
		snprintf(key, sizeof(key), "r%d", i);
		CHECK(reader_open(e, io, &r[i], key, val[i]) == 0, "churn: open");
	}
	for (uint64_t end = mono_ms() + 30000; left && mono_ms() < end;) {
		struct pollfd pfd = { .fd = gs_io_fd(io), .events = POLLIN };

		for (int i = 0; i < NR; i++) {
			const void *p;
			size_t n;

			if (!r[i].s || mono_ms() < wake_at[i])
				continue;
			ret = reader_peek(&r[i], &p, &n);
			if (ret == -EAGAIN)
				continue;
			if (ret < 0 || n == 0) {
				CHECK(ret == 0 && r[i].pos == r[i].size,
				      "churn: reader %d: %d at %llu", i, ret,
				      (unsigned long long)r[i].pos);
				gs_stream_close(&r[i].s);
				left--;
				continue;
			}
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			if (n > (seed >> 40) % 300000 + 1)
				n = (seed >> 40) % 300000 + 1;
			gs_stream_consume(r[i].s, n);
			r[i].pos += n;
			if ((seed >> 20) % 4 == 0)	/* stall past the limit */
				wake_at[i] = mono_ms() + 150;
		}
		gs_io_run(io, false);
		poll(&pfd, 1, 5);
	}
	CHECK(left == 0, "churn: %u readers never finished", left);
	for (int i = 0; i < NR; i++) {
		gs_stream_close(&r[i].s);
		free(val[i]);
	}
	gs_stats(e, &st);
	CHECK(st.readahead_reclaims > 0 && st.checksum_errors == 0 && st.pins == 0,
	      "churn: reclaims %llu, checksum errors %llu, pins %llu",
	      (unsigned long long)st.readahead_reclaims,
	      (unsigned long long)st.checksum_errors, (unsigned long long)st.pins);
	gs_io_destroy(&io);
	gs_engine_close(&e);
}

/* Defect 4b: a set whose bytes never come reserves nothing, so it neither
 * evicts nor stops anyone; space is taken as bytes arrive. */
static void unfed_set(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	struct gs_stats st0, st;
	struct gs_writer *w[4];
	char key[16], *val = malloc(8 << 20);
	int ret;

	small_config(&cfg);
	cfg.ssd_size = 16 << 20;
	e = open_engine(&cfg, "unfed", 1);
	if (!e)
		return;
	gs_io_create(e, &io);
	fill(val, 8 << 20, 21);
	CHECK(put(io, "old", val, 8 << 20, 0) == 0, "unfed: put old");
	gs_stats(e, &st0);
	for (int i = 0; i < 4; i++) {
		snprintf(key, sizeof(key), "p%d", i);
		ret = gs_writer_open(io, key, strlen(key), 8 << 20, 0, 0, GS_WRITE_SET,
				     &w[i]);
		CHECK(ret == 0, "unfed: open %d: %d", i, ret);
		if (ret)
			w[i] = NULL;
	}
	gs_stats(e, &st);
	CHECK(st.evictions == 0 && st.curr_items == 1 &&
	      st.ssd_used_bytes == st0.ssd_used_bytes &&
	      st.ram_used_bytes == st0.ram_used_bytes,
	      "unfed: four unfed 8M sets evicted %llu, took %llu SSD bytes",
	      (unsigned long long)st.evictions,
	      (unsigned long long)(st.ssd_used_bytes - st0.ssd_used_bytes));
	fill(val, 1 << 20, 22);
	CHECK(put(io, "fed", val, 1 << 20, 0) == 0, "unfed: a fed set");
	gs_stats(e, &st);
	CHECK(st.evictions == 0, "unfed: the fed set evicted");
	for (int i = 0; i < 4; i++)
		gs_writer_abort(&w[i]);
	gs_io_destroy(&io);
	gs_engine_close(&e);

	/* with --no-evict and no room, the error comes with the bytes */
	small_config(&cfg);
	cfg.ssd_size = 16 << 20;
	cfg.no_evict = true;
	e = open_engine(&cfg, "unfed-ne", 1);
	if (!e)
		return;
	gs_io_create(e, &io);
	fill(val, 8 << 20, 23);
	CHECK(put(io, "x", val, 8 << 20, 0) == 0, "no-evict: x");
	CHECK(put(io, "x2", val, 8 << 20, 0) == 0, "no-evict: x2");
	gs_stats(e, &st0);
	ret = put(io, "y", val, 8 << 20, 0);
	CHECK(ret == -ENOMEM, "no-evict: a set with no room gave %d", ret);
	gs_stats(e, &st);
	CHECK(st.ssd_used_bytes == st0.ssd_used_bytes && st.curr_items == 2 &&
	      st.admission_bytes == 0, "no-evict: space kept after a refused set");
	gs_io_destroy(&io);
	gs_engine_close(&e);
	free(val);
}

/* Defect 5: append/prepend neither copy the value nor read old chunks with
 * pread on the calling thread, and wait for admission. */
static void concat_bounded(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	struct gs_stats st;
	struct waitres wr = { 0 };
	struct reader r;
	uint64_t base = (3 << 20) + 7, add = 1 << 20;
	char *val = malloc(base + 2 * add), *want = malloc(base + 2 * add);
	char *data = malloc(add);
	size_t heap;

	small_config(&cfg);
	cfg.admission_bytes = add;	/* the append alone fills it */
	e = open_engine(&cfg, "concat", 1);
	if (!e)
		return;
	gs_io_create(e, &io);
	fill(val, base, 31);
	fill(data, add, 32);
	CHECK(put(io, "cat", val, base, 0) == 0, "concat: put");
	fault_preads = 0;
	fault_alloc_bytes = 0;
	CHECK(concat(io, "cat", false, data, add, &wr) == 0, "concat: append");
	CHECK(run_for(io, &wr.done, 10000) && wr.res == 0, "concat: append done %d",
	      wr.res);
	heap = fault_alloc_bytes - add;	/* beyond the engine's copy of <data> */
	CHECK(fault_preads == 0, "concat: %u blocking preads", fault_preads);
	CHECK(heap < 64 << 10, "concat: %zu heap bytes for a 1 MiB append", heap);
	memcpy(want, val, base);
	memcpy(want + base, data, add);
	CHECK(reader_open(e, io, &r, "cat", want) == 0 && reader_drain(io, &r) == 0,
	      "concat: appended bytes");

	wr.done = false;
	CHECK(concat(io, "cat", true, data, add, &wr) == 0, "concat: prepend");
	CHECK(run_for(io, &wr.done, 10000) && wr.res == 0, "concat: prepend done");
	memmove(want + add, want, base + add);
	memcpy(want, data, add);
	CHECK(reader_open(e, io, &r, "cat", want) == 0 && reader_drain(io, &r) == 0,
	      "concat: prepended bytes");
	gs_stats(e, &st);
	CHECK(st.admission_bytes == 0 && st.pins == 0, "concat: admission %llu",
	      (unsigned long long)st.admission_bytes);
	gs_io_destroy(&io);
	gs_engine_close(&e);
	free(val);
	free(want);
	free(data);
}

/* --sync-interval: a store, delete or incr whose group commit fails is answered
 * -EIO (SERVER_ERROR), never hung and never acknowledged; once syncs
 * work again so are the answers. */
static void sync_failure(void)
{
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	char *val = malloc(600 << 10);
	uint64_t n = 0;

	small_config(&cfg);
	cfg.sync_interval = 5;
	e = open_engine(&cfg, "syncfail", 1);
	if (!e || !val) {
		free(val);
		return;
	}
	gs_io_create(e, &io);
	memset(val, 'S', 600 << 10);
	CHECK(put(io, "a", val, 600 << 10, 0) == 0, "sync: a stored");
	CHECK(put(io, "n", "5", 1, 0) == 0, "sync: n stored");
	__atomic_store_n(&fault_fdatasync_n, 1, __ATOMIC_RELEASE);
	CHECK(put(io, "b", val, 600 << 10, 0) == -EIO,
	      "sync: a store whose sync failed is not acknowledged");
	CHECK(gs_delete(e, "a", 1) == -EIO,
	      "sync: a delete whose sync failed is not acknowledged");
	CHECK(mc_incr(e, "n", 1, false, 1, &n) == -EIO,
	      "sync: an incr whose sync failed is not acknowledged");
	__atomic_store_n(&fault_fdatasync_n, 0, __ATOMIC_RELEASE);
	CHECK(put(io, "c", val, 600 << 10, 0) == 0, "sync: syncs work again");
	CHECK(mc_incr(e, "n", 1, false, 1, &n) == 0 && n == 7,
	      "sync: incr after syncs work again: %llu", (unsigned long long)n);
	gs_io_destroy(&io);
	gs_engine_close(&e);
	free(val);
}

int main(void)
{
	char cmd[400];

	log_level = LOG_ERR;
	if (!mkdtemp(tmp))
		return 1;
	incr_evicts_counter();
	stripe_too_small();
	submit_failures();
	alloc_failures();
	stalled_reader();
	stalled_on_ram();
	reclaim_churn();
	unfed_set();
	concat_bounded();
	sync_failure();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd))
		failures++;
	return check_result();
}
