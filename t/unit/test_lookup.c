/*
 * A GET without the engine lock (lookup.c, epoch.c): a model check with
 * threads.  Writers set, replace, expire and delete the keys they own
 * while the index grows from 16 buckets through several doublings, the
 * arena compacts away what replaced and deleted values leave dead, and
 * checkpoints run in the background.  Readers look keys up meanwhile
 * (half of them through engine_lookup_lockless() alone, to count that the
 * lockless path is taken) and check every byte they pinned, twice, against
 * the value's self-describing content: the key and version it names, a
 * length and bytes derived from both.  A key present (absent) for the
 * whole lookup must be found at its version (not be found); whatever is
 * found is of its key and of a version stored within the lookup's window.
 * Run twice: as is, and with compaction sleeping between finding a record
 * unpinned and moving it (GOBLIN_TEST_COMPACT_DELAY_US, the hooked build):
 * a pin taken there must be turned away.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "engine_util.h"
#include "index.h"

#define KEYS		6000
#define WRITERS		2
#define READERS		3
#define WRITER_STEPS	80000

static char tmpdir[] = "/var/tmp/goblin-test-lookup.XXXXXX";
static char pooldir[300];

/* Key <k> as its writer left it: <seq> odd while a change is in flight;
 * <ver> the last version stored (0: none), <live> whether it is there. */
static struct {
	uint64_t seq;
	uint32_t ver;
	bool live;
} model[KEYS];
static bool writers_done;
static unsigned writer_steps;		/* per writer */
static unsigned hold_us;		/* how long some pins are held */
static unsigned bad;			/* failures found by the threads */
static uint64_t lockless_hits, lookups;

#define BAD(...)							\
	do {								\
		if (__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED) < 20)	\
			fprintf(stderr, "FAIL: " __VA_ARGS__);		\
	} while (0)

static uint64_t next_rand(uint64_t *r)
{
	*r ^= *r << 13;
	*r ^= *r >> 7;
	*r ^= *r << 17;
	return *r;
}

static void key_of(unsigned k, char *key, size_t len)
{
	snprintf(key, len, "lk:%u", k);
}

static uint32_t size_of(unsigned k, uint32_t v)
{
	return 8 + (k * 7 + v * 13) % 600;
}

static unsigned char byte_of(unsigned k, uint32_t v, uint32_t i)
{
	return (k * 131 + v * 31 + i) & 0xff;
}

/* Version <v> of key <k>: the key and version, then derived bytes. */
static void value_of(unsigned k, uint32_t v, char *buf)
{
	uint32_t n = size_of(k, v);

	memcpy(buf, &k, 4);
	memcpy(buf + 4, &v, 4);
	for (uint32_t i = 8; i < n; i++)
		buf[i] = byte_of(k, v, i);
}

/* The pinned <obj> holds a whole version of key <k> at <*at> (set when
 * NULL: a pinned object never moves): that version, or 0 after reporting
 * what is wrong. */
static uint32_t check_bytes(struct gs_engine *e, struct gs_obj *obj,
			    unsigned k, const void **at)
{
	const unsigned char *h;
	uint32_t kk, v;
	uint64_t len;

	h = gs_obj_head(e, obj, &len);
	if (*at && h != *at) {
		BAD("key %u: moved while pinned\n", k);
		return 0;
	}
	*at = h;
	if (!h || len < 8 || len != gs_obj_meta(obj)->size) {
		BAD("key %u: head %p of %llu bytes, size %llu\n", k, h,
		    (unsigned long long)len,
		    (unsigned long long)gs_obj_meta(obj)->size);
		return 0;
	}
	memcpy(&kk, h, 4);
	memcpy(&v, h + 4, 4);
	if (kk != k || !v || len != size_of(k, v)) {
		BAD("key %u: holds key %u version %u, %llu bytes\n", k, kk, v,
		    (unsigned long long)len);
		return 0;
	}
	for (uint32_t i = 8; i < len; i++)
		if (h[i] != byte_of(k, v, i)) {
			BAD("key %u version %u: byte %u is %u\n", k, v, i, h[i]);
			return 0;
		}
	return v;
}

/* One lookup of key <k>, checked against the model over its window. */
static void read_one(struct gs_engine *e, unsigned k, bool lockless_only)
{
	uint64_t s1, s2;
	uint32_t ver1, ver2, v = 0;
	struct gs_obj *obj = NULL;
	const void *at = NULL;
	bool live1, found, stable;
	char key[16];

	key_of(k, key, sizeof(key));
	s1 = __atomic_load_n(&model[k].seq, __ATOMIC_ACQUIRE);
	ver1 = __atomic_load_n(&model[k].ver, __ATOMIC_RELAXED);
	live1 = __atomic_load_n(&model[k].live, __ATOMIC_RELAXED);
	if (lockless_only) {
		found = engine_lookup_lockless(e, key, strlen(key), &obj);
		if (found)
			__atomic_add_fetch(&lockless_hits, 1, __ATOMIC_RELAXED);
	} else {
		found = gs_lookup(e, key, strlen(key), &obj) == 0;
	}
	if (found) {
		v = check_bytes(e, obj, k, &at);
		if (k % 4 == 0 && hold_us)
			usleep(hold_us);	/* past a compaction's window */
		else if (k % 4 == 0)
			sched_yield();		/* a compaction may want it */
		if (v && check_bytes(e, obj, k, &at) != v)
			BAD("key %u: version %u changed while pinned\n", k, v);
		gs_obj_put(e, &obj);
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	s2 = __atomic_load_n(&model[k].seq, __ATOMIC_ACQUIRE);
	ver2 = __atomic_load_n(&model[k].ver, __ATOMIC_RELAXED);
	stable = s1 == s2 && !(s1 & 1);
	__atomic_add_fetch(&lookups, 1, __ATOMIC_RELAXED);
	if (stable && live1 && !found && !lockless_only)
		BAD("key %u: version %u present throughout, not found\n", k,
		    ver1);
	if (stable && !live1 && found)
		BAD("key %u: absent throughout, found version %u\n", k, v);
	if (found && v && (v < ver1 || v > ver2 + 1))
		BAD("key %u: found version %u, window %u..%u\n", k, v, ver1,
		    ver2 + 1);
}

static void *reader_main(void *arg)
{
	struct gs_engine *e = arg;
	uint64_t r = (uintptr_t)&r | 1;

	while (!__atomic_load_n(&writers_done, __ATOMIC_ACQUIRE)) {
		unsigned k = next_rand(&r) % KEYS;

		/* slowed compaction holds the lock: lockless lookups only */
		read_one(e, k, hold_us || (next_rand(&r) & 1));
	}
	return NULL;
}

/* One change of key <k> by its writer: a set of its next version (3 in
 * 4), else a delete or an expiry in the past (the lookup must reap it). */
static void write_one(struct gs_engine *e, struct gs_io *io, unsigned k,
		      uint64_t *r)
{
	static __thread char val[1024];
	uint32_t v = model[k].ver + 1, roll = next_rand(r) % 8;
	bool live = model[k].live;
	char key[16];
	int ret;

	key_of(k, key, sizeof(key));
	__atomic_store_n(&model[k].seq, model[k].seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	if (roll < 6 || !live) {
		value_of(k, v, val);
		ret = put_if(io, key, val, size_of(k, v), 0, GS_IF_ANY, 0,
			     NULL);
		if (ret)
			BAD("set %s: %d\n", key, ret);
		__atomic_store_n(&model[k].ver, v, __ATOMIC_RELAXED);
		live = ret == 0;
	} else if (roll == 6) {
		ret = gs_delete(e, key, strlen(key));
		if (ret)
			BAD("delete %s: %d\n", key, ret);
		live = false;
	} else {
		ret = gs_touch(e, key, strlen(key), -1, NULL);
		if (ret)
			BAD("touch %s: %d\n", key, ret);
		live = false;
	}
	__atomic_store_n(&model[k].live, live, __ATOMIC_RELAXED);
	__atomic_store_n(&model[k].seq, model[k].seq + 1, __ATOMIC_RELEASE);
}

struct writer {
	struct gs_engine *e;
	unsigned id;
	pthread_t thread;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint64_t r = 0x9e3779b97f4a7c15ull * (w->id + 1);
	struct gs_io *io;

	if (gs_io_create(w->e, &io) < 0) {
		BAD("gs_io_create\n");
		return NULL;
	}
	/* the keys fill in slowly at first: the index doubles as they do */
	for (unsigned i = 0; i < writer_steps; i++) {
		unsigned span = KEYS / WRITERS;
		unsigned n = i < writer_steps / 2 ? 1 + span * 2 * i /
			     writer_steps : span;

		write_one(w->e, io, (next_rand(&r) % n) * WRITERS + w->id, &r);
	}
	gs_io_destroy(&io);
	return NULL;
}

/* Writers and readers over a fresh engine, then every key checked; with
 * <slow_compaction>, compaction sleeps 200 us before each move. */
static void run(bool slow_compaction)
{
	struct writer w[WRITERS];
	pthread_t rd[READERS];
	struct gs_arena_stats as;
	struct gs_engine *e;
	struct gs_stats st;

	writer_steps = slow_compaction ? WRITER_STEPS / 4 : WRITER_STEPS;
	hold_us = slow_compaction ? 400 : 0;
	if (slow_compaction)
		setenv("GOBLIN_TEST_COMPACT_DELAY_US", "200", 1);
	e = open_small_index(pooldir, true, 4096);
	CHECK(e != NULL, "open");
	if (!e)
		return;
	for (unsigned i = 0; i < READERS; i++)
		pthread_create(&rd[i], NULL, reader_main, e);
	for (unsigned i = 0; i < WRITERS; i++) {
		w[i] = (struct writer){ .e = e, .id = i };
		pthread_create(&w[i].thread, NULL, writer_main, &w[i]);
	}
	for (unsigned i = 0; i < WRITERS; i++)
		pthread_join(w[i].thread, NULL);
	__atomic_store_n(&writers_done, true, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < READERS; i++)
		pthread_join(rd[i], NULL);
	for (unsigned k = 0; k < KEYS; k++)
		read_one(e, k, false);

	gs_stats(e, &st);
	gs_arena_stats(e, &as);
	printf("%llu lookups, %llu lockless hits; %llu buckets, %llu checkpoints, "
	       "%llu arena bytes moved, %llu evictions\n",
	       (unsigned long long)lookups, (unsigned long long)lockless_hits,
	       (unsigned long long)e->nbuckets,
	       (unsigned long long)st.checkpoints,
	       (unsigned long long)as.arena_bytes_moved,
	       (unsigned long long)st.evictions);
	CHECK(bad == 0, "%u failures in the threads", bad);
	CHECK(st.evictions == 0, "evictions make the model wrong");
	CHECK(lockless_hits > 0, "the lockless path never hit");
	CHECK(e->nbuckets >= 2048, "the index grew to %llu buckets only",
	      (unsigned long long)e->nbuckets);
	CHECK(st.checkpoints > 0, "no checkpoint ran");
	gs_engine_close(&e);
	unsetenv("GOBLIN_TEST_COMPACT_DELAY_US");
}

int main(void)
{
	if (scratch_make(tmpdir) < 0)
		return 1;
	snprintf(pooldir, sizeof(pooldir), "%s/ssd", tmpdir);
	run(false);
	memset(model, 0, sizeof(model));
	writers_done = false;
	lockless_hits = lookups = 0;
	run(true);
	if (scratch_remove(tmpdir) < 0)
		failures++;
	return check_result();
}
