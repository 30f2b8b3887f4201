/*
 * Writers of unknown size and shared writers read while they write:
 * unknown sizes of 0 bytes, under the head, at the RAM limit, several MiB
 * and across a reservation step, stored as a known size is (same tiers,
 * same pool bytes) and read back byte for byte; past max_object -E2BIG and
 * every byte of pool space back; a reader on another thread (its own
 * gs_io) reading a shared fill as it lands, having waited (-EAGAIN) before
 * the fill ended; an abort cutting it (-ECONNABORTED) and leaving nothing
 * findable; -EBUSY for a second shared writer; gs_lookup() (memcache's
 * GET) never seeing a filling object.
 */
#include <pthread.h>

#include "check.h"
#include "engine_util.h"

static char tmpdir[] = "/var/tmp/goblin-test-fill.XXXXXX";

/* Writes <size> bytes of <val> to the open writer <w> in pieces of at most
 * <step> bytes; 0, or gs_writer_buf()'s error. */
static int feed(struct gs_io *io, struct gs_writer *w, const char *val,
		uint64_t from, uint64_t size, size_t step)
{
	uint64_t pos = from;

	while (pos < size) {
		void *p;
		size_t n;
		int ret = gs_writer_buf(w, &p, &n, on_wake, NULL);

		if (ret == -EAGAIN) {
			gs_io_run(io, false);
			continue;
		}
		if (ret < 0)
			return ret;
		if (n > size - pos)
			n = size - pos;
		if (n > step)
			n = step;
		memcpy(p, val + pos, n);
		gs_writer_advance(w, n);
		pos += n;
	}
	return 0;
}

static int finish(struct gs_io *io, struct gs_writer **w)
{
	struct waitres wr = { 0 };
	int ret = gs_writer_finish(w, GS_IF_ANY, 0, on_stored, &wr);

	if (ret < 0)
		return ret;
	if (!run_for(io, &wr.done, 10000))
		return -ETIMEDOUT;
	return wr.res;
}

/* Stores <size> bytes of <val> under <key> as a writer of unknown size. */
static int put_unknown(struct gs_io *io, const char *key, const char *val,
		       uint64_t size, size_t step)
{
	struct gs_writer *w;
	int ret = gs_writer_open(io, key, strlen(key), GS_SIZE_UNKNOWN, 7, 0,
				 GS_WRITE_SET, &w);

	if (ret < 0)
		return ret;
	ret = feed(io, w, val, 0, size, step);
	if (ret < 0) {
		gs_writer_abort(&w);
		return ret;
	}
	return finish(io, &w);
}

struct reader {
	bool done;
	uint64_t n;
	unsigned eagain;
	int res;
};

static void set_flag(void *arg)
{
	*(bool *)arg = true;
}

/* Reads all of <obj> through a stream (<bufs> NULL: the gs_io's own
 * buffers) and checks it against <want> (<len> bytes when known, the
 * object's size once it ends); counts its waits. */
static void read_all(struct gs_io *io, struct gs_obj *obj, void *const *bufs,
		     const char *want, struct reader *r)
{
	struct gs_stream *s;
	bool flag = false;
	int ret;

	if (bufs)
		ret = gs_stream_open_into(io, obj, 0, GS_SIZE_UNKNOWN, bufs, 2,
					  set_flag, set_flag, &flag, &s);
	else
		ret = gs_stream_open(io, obj, 0, GS_SIZE_UNKNOWN, set_flag,
				     &flag, &s);
	if (ret < 0) {
		r->res = ret;
		return;
	}
	for (;;) {
		const void *p;
		size_t n;

		ret = gs_stream_peek(s, &p, &n);
		if (ret == -EAGAIN) {
			__atomic_add_fetch(&r->eagain, 1, __ATOMIC_RELEASE);
			flag = false;
			if (!run_for(io, &flag, 10000)) {
				ret = -ETIMEDOUT;
				break;
			}
			continue;
		}
		if (ret < 0 || n == 0)
			break;
		if (memcmp(p, want + r->n, n)) {
			ret = -EILSEQ;
			break;
		}
		__atomic_add_fetch(&r->n, n, __ATOMIC_RELEASE);
		gs_stream_consume(s, n);
	}
	r->res = ret;
	gs_stream_close(&s);
	while (gs_io_pending(io))	/* <released> fires from gs_io_run */
		gs_io_run(io, true);
}

/* A whole read of <key>, checked: whether all <size> bytes matched. */
static bool read_back(struct gs_engine *e, struct gs_io *io, const char *key,
		      const char *want, uint64_t size)
{
	struct reader r = { 0 };
	struct gs_obj *obj;

	if (gs_lookup(e, key, strlen(key), &obj) < 0)
		return false;
	CHECK(gs_obj_meta(obj)->size == size && !gs_obj_filling(obj),
	      "%s: size %llu", key, (unsigned long long)gs_obj_meta(obj)->size);
	read_all(io, obj, NULL, want, &r);
	gs_obj_put(e, &obj);
	return r.res == 0 && r.n == size;
}

static void used(struct gs_engine *e, uint64_t *u)
{
	struct gs_stats st;

	gs_stats(e, &st);
	u[0] = st.ram_used_bytes;
	u[1] = st.ssd_used_bytes;
	u[2] = st.hdd_used_bytes;
}

/* Unknown sizes store as known ones do: same tiers and pool bytes. */
static void unknown_sizes(struct gs_engine *e, struct gs_io *io, char *val)
{
	static const uint64_t sizes[] = {
		0, 1000, 100 << 10, 256 << 10, (256 << 10) + 1, 1 << 20,
		(3 << 20) + 123, (9 << 20) + 4097,
	};
	uint64_t base[3], known[3], unk[3], after[3];
	struct gs_obj *obj;

	used(e, base);
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t size = sizes[i], tk[GS_TIERS], tu[GS_TIERS];

		fill(val, size, i + 1);
		CHECK(put_if(io, "known", val, size, 0, GS_IF_ANY, 0, NULL) == 0,
		      "known %llu", (unsigned long long)size);
		used(e, known);
		CHECK(put_unknown(io, "unknown", val, size, 70001) == 0,
		      "unknown %llu", (unsigned long long)size);
		used(e, unk);
		CHECK(read_back(e, io, "unknown", val, size),
		      "read back %llu", (unsigned long long)size);
		CHECK(gs_lookup(e, "known", 5, &obj) == 0, "known");
		for (int t = 0; t < GS_TIERS; t++)
			tk[t] = gs_obj_tier_bytes(obj, t);
		gs_obj_put(e, &obj);
		CHECK(gs_lookup(e, "unknown", 7, &obj) == 0, "unknown");
		for (int t = 0; t < GS_TIERS; t++)
			tu[t] = gs_obj_tier_bytes(obj, t);
		CHECK(gs_obj_meta(obj)->flags == 7, "flags");
		gs_obj_put(e, &obj);
		for (int t = 0; t < GS_TIERS; t++)
			CHECK(tk[t] == tu[t], "%llu: tier %d %llu vs %llu",
			      (unsigned long long)size, t,
			      (unsigned long long)tk[t], (unsigned long long)tu[t]);
		for (int t = 1; t < 3; t++)	/* RAM: heads are cached */
			CHECK(unk[t] - known[t] == known[t] - base[t],
			      "%llu: pool %d: known %llu unknown %llu",
			      (unsigned long long)size, t,
			      (unsigned long long)(known[t] - base[t]),
			      (unsigned long long)(unk[t] - known[t]));
		CHECK(gs_delete(e, "known", 5) == 0, "del");
		CHECK(gs_delete(e, "unknown", 7) == 0, "del");
		used(e, after);
		for (int t = 1; t < 3; t++)
			CHECK(after[t] == base[t], "%llu: pool %d not back",
			      (unsigned long long)size, t);
	}
}

/* More than max_object: -E2BIG from the writer and its finish, nothing
 * stored, every pool byte back. */
static void too_big(struct gs_engine *e, struct gs_io *io, char *val)
{
	uint64_t max = gs_engine_config(e)->max_object, base[3], after[3];
	struct gs_writer *w;
	struct gs_obj *obj;
	void *p;
	size_t n;

	used(e, base);
	fill(val, max, 99);
	CHECK(gs_writer_open(io, "big", 3, GS_SIZE_UNKNOWN, 0, 0, GS_WRITE_SET,
			     &w) == 0, "open");
	CHECK(feed(io, w, val, 0, max, 1 << 20) == 0, "max_object fits");
	CHECK(gs_writer_buf(w, &p, &n, on_wake, NULL) == -E2BIG, "past max");
	CHECK(finish(io, &w) == -E2BIG, "finish -E2BIG");
	CHECK(gs_lookup(e, "big", 3, &obj) == -ENOENT, "nothing stored");
	used(e, after);
	for (int t = 1; t < 3; t++)
		CHECK(after[t] == base[t], "pool %d: %llu left", t,
		      (unsigned long long)(after[t] - base[t]));
	CHECK(put_unknown(io, "big", val, max, 1 << 20) == 0, "max exactly");
	CHECK(read_back(e, io, "big", val, max), "max read back");
	CHECK(gs_delete(e, "big", 3) == 0, "del");
}

/* ---- a reader on another thread ---- */

struct shared_read {
	struct gs_engine *e;
	const char *key, *want;
	bool into;
	struct reader r;
	uint64_t seen;			/* atomic: bytes the reader has */
	unsigned waits;			/* atomic: its -EAGAINs so far */
	bool at_start;			/* it found the fill */
	void *bufs[2];
};

static void *reader_main(void *arg)
{
	struct shared_read *sr = arg;
	struct gs_io *io;
	struct gs_obj *obj;

	if (gs_io_create(sr->e, &io) < 0) {
		sr->r.res = -ENOMEM;
		goto out;
	}
	sr->r.res = gs_lookup_filling(sr->e, sr->key, strlen(sr->key), &obj);
	if (sr->r.res == 0) {
		__atomic_store_n(&sr->at_start, gs_obj_filling(obj),
				 __ATOMIC_RELEASE);
		/* published as it goes: the writer waits for the reader */
		sr->r.eagain = 0;
		read_all(io, obj, sr->into ? sr->bufs : NULL, sr->want, &sr->r);
		gs_obj_put(sr->e, &obj);
	}
	gs_io_destroy(&io);
out:
	__atomic_store_n(&sr->r.done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* Runs <io> until the reader has <n> bytes and has waited once more, or
 * ended. */
static bool wait_reader(struct gs_io *io, struct shared_read *sr, uint64_t n,
			unsigned waits)
{
	uint64_t end = mono_ms() + 10000;

	while (mono_ms() < end) {
		if (__atomic_load_n(&sr->r.done, __ATOMIC_ACQUIRE))
			return false;
		if (__atomic_load_n(&sr->r.n, __ATOMIC_ACQUIRE) >= n &&
		    __atomic_load_n(&sr->r.eagain, __ATOMIC_ACQUIRE) > waits)
			return true;
		gs_io_run(io, false);
		poll(NULL, 0, 1);
	}
	return false;
}

static void join_reader(pthread_t t, struct shared_read *sr)
{
	pthread_join(t, NULL);
	CHECK(sr->r.done, "reader done");
}

/* A shared fill read while it lands, in steps the reader waits for; its
 * disk chunks come from the RAM chunk cache, where the writer put them as
 * they landed (none read back), and leave it with the grid. */
static void shared_fill(struct gs_engine *e, struct gs_io *io, char *val,
			uint64_t size, bool known, bool into)
{
	static const uint64_t steps[] = { 1000, 200 << 10, 300 << 10,
					  (1 << 20) + 5, 3 << 20 };
	struct shared_read sr = { .e = e, .key = "shared", .want = val,
				  .into = into };
	struct gs_writer *w, *w2;
	struct gs_obj *obj;
	struct gs_stats st0, st1;
	uint64_t pos = 0, head = 256 << 10, slack = (1 << 20) + head;
	pthread_t t;

	for (int i = 0; i < 2; i++)
		sr.bufs[i] = aligned_alloc(4096, GS_IO_BUFFER);
	fill(val, size, 5);
	CHECK(gs_writer_open(io, "shared", 6, known ? size : GS_SIZE_UNKNOWN,
			     0, 0, GS_WRITE_SET, &w) == 0, "open");
	CHECK(gs_writer_share(w, false) == 0, "share");
	CHECK(gs_writer_open(io, "shared", 6, GS_SIZE_UNKNOWN, 0, 0,
			     GS_WRITE_SET, &w2) == 0, "open 2");
	CHECK(gs_writer_share(w2, false) == -EBUSY, "second shared writer: -EBUSY");
	gs_writer_abort(&w2);
	CHECK(gs_lookup(e, "shared", 6, &obj) == -ENOENT,
	      "gs_lookup (memcache GET) never finds a filling object");
	gs_stats(e, &st0);
	pthread_create(&t, NULL, reader_main, &sr);
	for (unsigned i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		uint64_t to = steps[i] < size ? steps[i] : size;

		if (to <= pos)
			continue;
		CHECK(feed(io, w, val, pos, to, 65536) == 0, "feed");
		pos = to;
		/* bytes on disk come once written: the reader waits for them */
		CHECK(wait_reader(io, &sr, pos < slack ? (pos < head ? pos : head) :
				  pos - slack, i),
		      "reader at %llu (has %llu)", (unsigned long long)pos,
		      (unsigned long long)sr.r.n);
	}
	CHECK(feed(io, w, val, pos, size, 65536) == 0, "feed rest");
	CHECK(!sr.r.done, "the reader did not end before the writer");
	CHECK(finish(io, &w) == 0, "finish");
	join_reader(t, &sr);
	CHECK(sr.r.res == 0 && sr.r.n == size, "reader: res %d, %llu of %llu",
	      sr.r.res, (unsigned long long)sr.r.n, (unsigned long long)size);
	CHECK(sr.r.eagain > 0 && sr.at_start, "read while filling (%u waits)",
	      sr.r.eagain);
	gs_stats(e, &st1);
	CHECK(st1.disk_reads == st0.disk_reads, "the reader read no chunk "
	      "back from disk (%llu reads)",
	      (unsigned long long)(st1.disk_reads - st0.disk_reads));
	CHECK(st1.ram_chunks == st0.ram_chunks, "the grid's chunks left the "
	      "RAM cache with it (%llu, was %llu)",
	      (unsigned long long)st1.ram_chunks,
	      (unsigned long long)st0.ram_chunks);
	if (st1.disk_writes - st0.disk_writes >= 2)	/* whole chunks on disk */
		CHECK(st1.chunk_hit_bytes > st0.chunk_hit_bytes,
		      "disk chunks came from RAM");
	CHECK(read_back(e, io, "shared", val, size), "stored");
	CHECK(gs_lookup_filling(e, "shared", 6, &obj) == -ENOENT, "fill over");
	CHECK(gs_writer_open(io, "shared", 6, GS_SIZE_UNKNOWN, 0, 0,
			     GS_WRITE_SET, &w) == 0 && gs_writer_share(w, false) == 0,
	      "the next shared writer may start");
	gs_writer_abort(&w);
	CHECK(gs_delete(e, "shared", 6) == 0, "del");
	for (int i = 0; i < 2; i++)
		free(sr.bufs[i]);
}

/* An abort mid-way cuts the reader; the older object stays the key's. */
static void shared_abort(struct gs_engine *e, struct gs_io *io, char *val)
{
	struct shared_read sr = { .e = e, .key = "cut", .want = val };
	struct gs_writer *w;
	struct gs_obj *obj;
	uint64_t base[3], after[3];
	pthread_t t;

	CHECK(put_if(io, "cut", "old", 3, 0, GS_IF_ANY, 0, NULL) == 0, "old");
	used(e, base);
	fill(val, 4 << 20, 6);
	CHECK(gs_writer_open(io, "cut", 3, GS_SIZE_UNKNOWN, 0, 0, GS_WRITE_SET,
			     &w) == 0 && gs_writer_share(w, false) == 0, "open");
	pthread_create(&t, NULL, reader_main, &sr);
	CHECK(feed(io, w, val, 0, 2 << 20, 65536) == 0, "feed");
	CHECK(wait_reader(io, &sr, 1 << 20, 0), "reader got some");
	CHECK(gs_lookup(e, "cut", 3, &obj) == 0 &&
	      gs_obj_meta(obj)->size == 3, "the old object meanwhile");
	gs_obj_put(e, &obj);
	gs_writer_abort(&w);
	join_reader(t, &sr);
	CHECK(sr.r.res == -ECONNABORTED, "reader cut: %d", sr.r.res);
	CHECK(sr.r.n <= (2 << 20), "no more than was written");
	CHECK(gs_lookup_filling(e, "cut", 3, &obj) == -ENOENT, "fill gone");
	CHECK(gs_lookup(e, "cut", 3, &obj) == 0 &&
	      gs_obj_meta(obj)->size == 3, "the old object still");
	gs_obj_put(e, &obj);
	while (gs_io_pending(io))
		gs_io_run(io, true);
	used(e, after);
	for (int t2 = 1; t2 < 3; t2++)
		CHECK(after[t2] == base[t2], "pool %d back", t2);
	CHECK(gs_delete(e, "cut", 3) == 0, "del");
}

/* A shared fill's attributes: readers of the filling object see them from
 * the start, the stored object has them, a later gs_writer_attr() on the
 * fill replaces them, a fill whose attributes are coming is found only
 * with them, and an aborted fill leaves none behind. */
static void shared_attr(struct gs_engine *e, struct gs_io *io, char *val,
			uint64_t size)
{
	static const char a1[] = "GA1 200 1\r\nContent-Type: a/b\r\n";
	static const char a2[] = "GA1 200 2\r\nContent-Type: c/d\r\n";
	struct gs_writer *w, *w2;
	struct gs_obj *obj;
	char got[GS_ATTR_MAX];
	int n;

	CHECK(gs_writer_open(io, "sattr", 5, GS_SIZE_UNKNOWN, 0, 0,
			     GS_WRITE_SET, &w) == 0, "open");
	CHECK(gs_writer_attr(w, a1, sizeof(a1)) == 0, "attr before share");
	CHECK(gs_writer_share(w, false) == 0, "share");
	CHECK(feed(io, w, val, 0, size / 2, 64 << 10) == 0, "first half");
	CHECK(gs_lookup_filling(e, "sattr", 5, &obj) == 0, "filling found");
	if (obj) {
		n = gs_obj_attr(e, obj, got, sizeof(got));
		CHECK(n == (int)sizeof(a1) && !memcmp(got, a1, n),
		      "a reader sees the fill's attributes (%d)", n);
		gs_obj_put(e, &obj);
	}
	CHECK(gs_writer_attr(w, a2, sizeof(a2)) == 0, "attr replaced");
	CHECK(feed(io, w, val, size / 2, size, 64 << 10) == 0, "second half");
	CHECK(finish(io, &w) == 0, "finish");
	CHECK(gs_lookup(e, "sattr", 5, &obj) == 0, "stored");
	if (obj) {
		n = gs_obj_attr(e, obj, got, sizeof(got));
		CHECK(n == (int)sizeof(a2) && !memcmp(got, a2, n),
		      "the stored object has the last attributes (%d)", n);
		CHECK(gs_obj_meta(obj)->size == size, "size");
		gs_obj_put(e, &obj);
	}
	CHECK(read_back(e, io, "sattr", val, size), "bytes back");
	CHECK(gs_delete(e, "sattr", 5) == 0, "del");

	/* attributes to come (the link's WOPEN then WDATAs): the key is
	 * taken, yet nobody finds the fill until they are in */
	CHECK(gs_writer_open(io, "sattr2", 6, GS_SIZE_UNKNOWN, 0, 0,
			     GS_WRITE_SET, &w) == 0 &&
	      gs_writer_share(w, true) == 0, "open, share, attributes coming");
	CHECK(gs_lookup_filling(e, "sattr2", 6, &obj) == -ENOENT,
	      "not findable without its attributes");
	CHECK(gs_writer_open(io, "sattr2", 6, GS_SIZE_UNKNOWN, 0, 0,
			     GS_WRITE_SET, &w2) == 0, "open a second");
	CHECK(gs_writer_share(w2, false) == -EBUSY, "its key is taken");
	gs_writer_abort(&w2);
	CHECK(gs_writer_attr(w, a1, sizeof(a1)) == 0, "attributes in");
	CHECK(gs_lookup_filling(e, "sattr2", 6, &obj) == 0, "findable now");
	if (obj) {
		n = gs_obj_attr(e, obj, got, sizeof(got));
		CHECK(n == (int)sizeof(a1) && !memcmp(got, a1, n),
		      "with them (%d)", n);
		gs_obj_put(e, &obj);
	}
	CHECK(feed(io, w, val, 0, size / 2, 64 << 10) == 0, "half");
	gs_writer_abort(&w);
	CHECK(gs_lookup_filling(e, "sattr2", 6, &obj) == -ENOENT &&
	      gs_lookup(e, "sattr2", 6, &obj) == -ENOENT, "aborted: nothing");
}

static int run_engine(bool pools, char *val)
{
	struct gs_config cfg;
	struct gs_engine *e;
	struct gs_io *io;
	struct gs_stats st;
	char ssd[300], hdd[300];

	store_config(&cfg, 64 << 20, 8 << 20, 128 << 20, 256 << 20);
	cfg.max_object = 16 << 20;
	if (pools) {
		store_two_pools(&cfg, tmpdir, ssd, hdd, sizeof(ssd));
		cfg.fixed_prefix = true;
		cfg.ssd_prefix = 1 << 20;
	}
	if (store_open(&e, &cfg) < 0)
		return -1;
	CHECK(gs_io_create(e, &io) == 0, "io");
	unknown_sizes(e, io, val);
	too_big(e, io, val);
	shared_fill(e, io, val, (5 << 20) + 3, false, false);
	shared_fill(e, io, val, 100 << 10, false, false);
	shared_fill(e, io, val, (2 << 20) + 1, true, pools);
	shared_abort(e, io, val);
	shared_attr(e, io, val, 100 << 10);
	shared_attr(e, io, val, (3 << 20) + 5);
	while (gs_io_pending(io))
		gs_io_run(io, true);
	gs_stats(e, &st);
	CHECK(st.checksum_errors == 0 && st.io_errors == 0, "errors");
	CHECK(st.pins == 0, "pins left %llu", (unsigned long long)st.pins);
	gs_io_destroy(&io);
	gs_engine_close(&e);
	return 0;
}

int main(void)
{
	char *val = malloc(17u << 20);

	if (!val || scratch_make(tmpdir) < 0)
		return 1;
	if (run_engine(true, val) < 0 || run_engine(false, val) < 0)
		failures++;
	free(val);
	if (scratch_remove(tmpdir) < 0)
		failures++;
	return check_result();
}
