/*
 * The byte-granular arena (storaged/engine/arena.c): every size from 1 byte to
 * --ram-head byte-exact through set/replace/delete churn while compaction
 * runs under reader threads that pin, read, compare and unpin (no wrong
 * read); fragmentation bounded and segments given back after deleting 75%;
 * --no-evict refuses and the CLOCK evicts when the arena is full; a pinned
 * object is never moved and holds its segment until unpinned.
 *
 * Values are written as the writers do: space reserved under the engine
 * lock, bytes copied without it (the record unlinked), then linked.  A
 * value's bytes follow from its key, its size and a version kept in its
 * flags, so a reader can check any value it finds.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "check.h"
#include "engine_util.h"
#include "log.h"
#include "stats.h"
#include "layout.h"
#include "index.h"

#define RAM_HEAD	4096u

static struct gs_config config(uint64_t block, uint64_t sub, bool no_evict)
{
	struct gs_config cfg;

	gs_config_init(&cfg);
	cfg.block = block;
	cfg.memory = 2 * block > (1 << 20) ? 2 * block : 1 << 20;
	cfg.sub_memory = sub;
	cfg.ram_head = RAM_HEAD;
	cfg.no_mlock = true;
	cfg.no_evict = no_evict;
	return cfg;
}

static int key_of(char *buf, uint32_t k)
{
	return sprintf(buf, "arena-%u", k);
}

static void value_of(char *buf, uint32_t k, uint32_t ver, uint64_t size)
{
	fill(buf, size, k * 7919u + ver);
}

/* Stores version <ver> of key <k>, <size> bytes: 0 or -errno. */
static int set_value(struct gs_engine *e, uint32_t k, uint32_t ver,
		     uint64_t size)
{
	char key[32], *val = NULL;
	int klen = key_of(key, k), ret;
	struct gs_obj *obj;

	pthread_mutex_lock(&e->lock);
	ret = engine_reserve(e, key, klen, size, &obj);
	pthread_mutex_unlock(&e->lock);
	if (ret < 0)
		return ret;
	if (size) {
		val = (char *)gs_obj_head(e, obj, NULL);
		value_of(val, k, ver, size);	/* unlinked: nobody moves it */
	}
	obj->meta.flags = ver;
	pthread_mutex_lock(&e->lock);
	ret = engine_link(e, obj, GS_IF_ANY, 0, NULL);
	engine_unref(e, obj);
	pthread_mutex_unlock(&e->lock);
	return ret;
}

/* Checks key <k> if present: 0 (or -ENOENT), or -EILSEQ on a wrong byte.
 * <want_size>, when not UINT64_MAX, must be its size; with <linger>, the
 * bytes are compared again after a yield, the pin still held. */
static int check_value_at(struct gs_engine *e, uint32_t k, char *buf,
			  uint64_t want_size, bool linger)
{
	char key[32];
	int klen = key_of(key, k), ret;
	const struct gs_meta *m;
	struct gs_obj *obj;
	const char *head;
	uint64_t len;

	ret = gs_lookup(e, key, klen, &obj);
	if (ret < 0)
		return ret;
	m = gs_obj_meta(obj);
	head = gs_obj_head(e, obj, &len);
	value_of(buf, k, m->flags, m->size);
	ret = 0;
	if (len != m->size || (want_size != UINT64_MAX && m->size != want_size))
		ret = -EINVAL;
	else if (len && memcmp(head, buf, len))
		ret = -EILSEQ;
	else if (len && linger && (sched_yield(), memcmp(head, buf, len)))
		ret = -EILSEQ;		/* changed while pinned */
	gs_obj_put(e, &obj);
	return ret;
}

static int check_value(struct gs_engine *e, uint32_t k, char *buf,
		       uint64_t want_size)
{
	return check_value_at(e, k, buf, want_size, false);
}

static struct gs_engine *open_engine(const struct gs_config *cfg)
{
	struct gs_engine *e = NULL;
	char err[256];

	if (gs_engine_open(&e, cfg, err, sizeof(err)) < 0) {
		CHECK(0, "engine: %s", err);
		return NULL;
	}
	return e;
}

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* ---- churn under readers ---- */

#define KEYS		RAM_HEAD	/* key k starts at k bytes: 0 .. ram_head */
#define FIXED(k)	(KEYS + 1 + (k))	/* the same sizes, never changed */
#define READERS		3

struct churn {
	struct gs_engine *e;
	bool stop;
	uint64_t reads, wrong, misses;
};

static void *reader(void *arg)
{
	struct churn *c = arg;
	char *buf = malloc(RAM_HEAD);
	uint64_t x = (uintptr_t)&buf | 1;

	while (!__atomic_load_n(&c->stop, __ATOMIC_RELAXED)) {
		int ret = check_value_at(c->e, rnd(&x) % FIXED(KEYS + 1), buf,
					 UINT64_MAX, true);

		if (ret == -ENOENT)
			__atomic_fetch_add(&c->misses, 1, __ATOMIC_RELAXED);
		else if (ret < 0)
			__atomic_fetch_add(&c->wrong, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&c->reads, 1, __ATOMIC_RELAXED);
	}
	free(buf);
	return NULL;
}

static void churn(void)
{
	struct gs_config cfg = config(64 << 10, 32 << 20, false);
	uint32_t ver[KEYS + 1] = { 0 };
	uint64_t size[KEYS + 1];
	struct churn c = { 0 };
	pthread_t th[READERS];
	struct gs_arena_stats as;
	struct gs_stats st;
	uint64_t x = 88172645463325252ull, end, ops = 0;
	char *buf = malloc(RAM_HEAD + 1);
	int bad = 0;

	c.e = open_engine(&cfg);
	if (!c.e)
		return;
	for (uint32_t k = 0; k <= KEYS; k++) {
		size[k] = k;
		CHECK(set_value(c.e, k, 0, k) == 0, "set %u", k);
		CHECK(set_value(c.e, FIXED(k), 0, k) == 0, "set fixed %u", k);
	}
	for (int i = 0; i < READERS; i++)
		pthread_create(&th[i], NULL, reader, &c);
	/* replace with other sizes, delete, put back: until compaction has
	 * emptied segments many times over and 2 s at least */
	end = mono_ms() + 2000;
	for (;;) {
		uint32_t k = rnd(&x) % (KEYS + 1), op = rnd(&x) % 8;

		gs_arena_stats(c.e, &as);
		if (mono_ms() > end && as.arena_compactions >= 50)
			break;
		if (mono_ms() > end + 20000)
			break;
		if (op == 0 && size[k] != UINT64_MAX) {
			char key[32];

			CHECK(gs_delete(c.e, key, key_of(key, k)) == 0, "del %u", k);
			size[k] = UINT64_MAX;
		} else {
			uint64_t n = op == 1 ? k : rnd(&x) % (RAM_HEAD + 1);

			CHECK(set_value(c.e, k, ++ver[k], n) == 0, "replace %u", k);
			size[k] = n;
		}
		ops++;
	}
	__atomic_store_n(&c.stop, true, __ATOMIC_RELAXED);
	for (int i = 0; i < READERS; i++)
		pthread_join(th[i], NULL);
	for (uint32_t k = 0; k <= KEYS; k++) {
		int ret = check_value(c.e, k, buf, size[k]);

		if (size[k] == UINT64_MAX ? ret != -ENOENT : ret != 0)
			bad++;
		/* moved by compaction, maybe many times, never rewritten */
		if (check_value(c.e, FIXED(k), buf, k) != 0)
			bad++;
	}
	gs_arena_stats(c.e, &as);
	gs_stats(c.e, &st);
	printf("churn: %" PRIu64 " ops, %" PRIu64 " reads (%" PRIu64 " misses), %" PRIu64 " wrong; %" PRIu64 " compactions moved %" PRIu64 " bytes, longest hold %" PRIu64 " us (cpu %" PRIu64 " us), %" PRIu64 " blocked laps\n",
	       ops, c.reads, c.misses, c.wrong, as.arena_compactions,
	       as.arena_bytes_moved, as.arena_compaction_max_us, as.arena_compaction_max_cpu_us,
	       as.arena_compaction_blocked);
	CHECK(c.wrong == 0, "%" PRIu64 " wrong reads", c.wrong);
	CHECK(bad == 0, "%d keys wrong at the end", bad);
	CHECK(as.arena_compactions >= 50 && as.arena_bytes_moved > 0,
	      "compaction ran: %" PRIu64, as.arena_compactions);
	CHECK(st.evictions == 0, "no eviction: %" PRIu64, st.evictions);
	CHECK(st.pins == 0, "pins left");
	gs_engine_close(&c.e);
	free(buf);
}

/* ---- fragmentation ---- */

/* The process's resident shared memory, kilobytes (RssShmem). */
static uint64_t rss_shmem_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	uint64_t kb = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "RssShmem: %" SCNu64, &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* Waits up to <ms> for <done>(<e>); returns whether it came. */
static bool wait_for(struct gs_engine *e, bool (*done)(struct gs_engine *),
		     unsigned ms)
{
	uint64_t end = mono_ms() + ms;

	while (!done(e)) {
		if (mono_ms() > end)
			return false;
		usleep(2000);
	}
	return true;
}

/* Dead bytes under a quarter of what the segments hold: the compactor
 * empties any sealed segment a quarter dead, and the two open ones hold
 * little dead. */
#define FRAG_BOUND_PERMILLE	250

static bool compacted(struct gs_engine *e)
{
	struct gs_arena_stats as;

	gs_arena_stats(e, &as);
	return as.arena_fragmentation_permille < FRAG_BOUND_PERMILLE;
}

#define FRAG_KEYS	120000

static void fragmentation(void)
{
	struct gs_config cfg = config(2 << 20, 64 << 20, false);
	struct gs_arena_stats full, after;
	struct gs_engine *e = open_engine(&cfg);
	uint64_t x = 0x2545F4914F6CDD1Dull, rss_full, rss_after;
	uint8_t *gone = calloc(FRAG_KEYS, 1);
	char buf[512], key[32];
	int bad = 0;

	if (!e)
		return;
	for (uint32_t k = 0; k < FRAG_KEYS; k++)
		CHECK(set_value(e, k, 1, 1 + k % 400) == 0, "set %u", k);
	gs_arena_stats(e, &full);
	rss_full = rss_shmem_kb();
	for (uint32_t n = 0; n < FRAG_KEYS * 3 / 4; ) {
		uint32_t k = rnd(&x) % FRAG_KEYS;

		if (gone[k])
			continue;
		gone[k] = 1;
		CHECK(gs_delete(e, key, key_of(key, k)) == 0, "del %u", k);
		n++;
	}
	CHECK(wait_for(e, compacted, 20000), "fragmentation stays high");
	gs_arena_stats(e, &after);
	rss_after = rss_shmem_kb();
	for (uint32_t k = 0; k < FRAG_KEYS; k++) {
		int ret = check_value(e, k, buf, 1 + k % 400);

		if (gone[k] ? ret != -ENOENT : ret != 0)
			bad++;
	}
	printf("fragmentation: %u values: %" PRIu64 " segments, %" PRIu64 " live bytes, RssShmem %" PRIu64 " KB; 75%% deleted: %" PRIu64 " segments, %" PRIu64 " live, %" PRIu64 " dead (%" PRIu64 " permille), %" PRIu64 " compactions, RssShmem %" PRIu64 " KB\n",
	       FRAG_KEYS, full.arena_segments, full.arena_bytes_live, rss_full,
	       after.arena_segments, after.arena_bytes_live,
	       after.arena_bytes_dead, after.arena_fragmentation_permille,
	       after.arena_compactions, rss_after);
	CHECK(bad == 0, "%d values wrong", bad);
	CHECK(after.arena_fragmentation_permille < FRAG_BOUND_PERMILLE,
	      "dead %" PRIu64 " permille", after.arena_fragmentation_permille);
	/* what lives fits in its segments but for the two open ones */
	CHECK(after.arena_segments <= after.arena_bytes_live / (2 << 20) + 3,
	      "%" PRIu64 " segments for %" PRIu64 " live bytes",
	      after.arena_segments, after.arena_bytes_live);
	CHECK(after.arena_segments_released > 0 &&
	      rss_after + (full.arena_segments - after.arena_segments) * 2048 / 2 <= rss_full,
	      "segments leave the RSS: %" PRIu64 " -> %" PRIu64 " KB",
	      rss_full, rss_after);
	gs_engine_close(&e);
	free(gone);
}

/* ---- a full arena ---- */

static uint64_t evictions(struct gs_engine *e)
{
	struct gs_stats st;

	gs_stats(e, &st);
	return st.evictions;
}

/* --no-evict: sets fail once the segments are full and nothing is dead;
 * after deletes, compaction makes room without evicting. */
static void full_no_evict(void)
{
	struct gs_config cfg = config(64 << 10, 256 << 10, true);
	struct gs_engine *e = open_engine(&cfg);
	char buf[1024], key[32];
	uint32_t n = 0, more = 0;
	int ret;

	if (!e)
		return;
	while ((ret = set_value(e, n, 1, 1000)) == 0)
		n++;
	CHECK(ret == -ENOMEM, "full: %d", ret);
	/* three segments of 64K (one kept for compaction), 1008-byte entries */
	CHECK(n == 3 * (65536 / 1008), "stored %u", n);
	for (uint32_t k = 0; k < n; k++)
		CHECK(check_value(e, k, buf, 1000) == 0, "value %u", k);
	for (uint32_t k = 0; k < n; k += 2)
		CHECK(gs_delete(e, key, key_of(key, k)) == 0, "del %u", k);
	while (set_value(e, n + more, 1, 1000) == 0)
		more++;
	/* pressure compacts a segment once an eighth of it is dead: each of
	 * the three may keep up to that much */
	CHECK(more >= n / 2 - 3 * (65536 / 8 / 1008) - 3,
	      "room after deletes: %u of %u", more, n / 2);
	for (uint32_t k = 1; k < n + more; k += k < n ? 2 : 1)
		CHECK(check_value(e, k, buf, 1000) == 0, "value %u", k);
	CHECK(evictions(e) == 0, "evicted with --no-evict");
	gs_engine_close(&e);
}

/* Without --no-evict the CLOCK makes room: every set succeeds, what stays
 * is byte-exact, the last one stays. */
static void full_evicts(void)
{
	struct gs_config cfg = config(64 << 10, 256 << 10, false);
	struct gs_engine *e = open_engine(&cfg);
	struct gs_arena_stats as;
	uint32_t present = 0, bad = 0;
	char buf[1024];

	if (!e)
		return;
	for (uint32_t k = 0; k < 2000; k++)
		CHECK(set_value(e, k, 1, 100 + k % 900) == 0, "set %u", k);
	for (uint32_t k = 0; k < 2000; k++) {
		int ret = check_value(e, k, buf, 100 + k % 900);

		present += ret == 0;
		bad += ret != 0 && ret != -ENOENT;
	}
	gs_arena_stats(e, &as);
	CHECK(bad == 0, "%u values wrong", bad);
	CHECK(evictions(e) + present == 2000, "evicted %" PRIu64 ", present %u",
	      evictions(e), present);
	CHECK(present > 100 && check_value(e, 1999, buf, 100 + 1999 % 900) == 0,
	      "present %u", present);
	CHECK(as.arena_segments <= 4, "%" PRIu64 " segments", as.arena_segments);
	gs_engine_close(&e);
}

/* ---- pins ---- */

static uint64_t blocked_laps(struct gs_engine *e)
{
	struct gs_arena_stats as;

	gs_arena_stats(e, &as);
	return as.arena_compaction_blocked;
}

static bool some_blocked(struct gs_engine *e)
{
	return blocked_laps(e) > 0;
}

static uint64_t head_off_of(struct gs_engine *e, uint32_t k)
{
	char key[32];
	struct gs_obj *obj;
	uint64_t off;

	pthread_mutex_lock(&e->lock);
	obj = engine_find(e, key, key_of(key, k));
	off = obj ? gs_obj_meta(obj)->head_off : UINT64_MAX;
	pthread_mutex_unlock(&e->lock);
	return off;
}

static uint64_t pinned_off;

static bool moved_away(struct gs_engine *e)
{
	return head_off_of(e, 5) != pinned_off;
}

/* A pinned object stays where it is, and so does its segment, while the
 * rest of the segment moves; unpinned, it moves and the segment goes. */
static void pins(void)
{
	struct gs_config cfg = config(64 << 10, 1 << 20, false);
	struct gs_engine *e = open_engine(&cfg);
	struct gs_arena_stats as;
	char buf[1024], key[32];
	struct gs_obj *obj;
	const char *head;
	uint32_t seg;

	if (!e)
		return;
	for (uint32_t k = 0; k < 100; k++)
		CHECK(set_value(e, k, 1, 1000) == 0, "set %u", k);
	CHECK(gs_lookup(e, key, key_of(key, 5), &obj) == 0, "pin");
	head = gs_obj_head(e, obj, NULL);
	pinned_off = gs_obj_meta(obj)->head_off;
	seg = pinned_off / cfg.block;
	for (uint32_t k = 0; k < 60; k++)
		if (k != 5)
			CHECK(gs_delete(e, key, key_of(key, k)) == 0, "del %u", k);
	CHECK(wait_for(e, some_blocked, 10000), "no lap passed the pin");
	value_of(buf, 5, 1, 1000);
	CHECK(gs_obj_meta(obj)->head_off == pinned_off && head_off_of(e, 5) == pinned_off,
	      "a pinned object moved");
	CHECK(!memcmp(head, buf, 1000), "pinned bytes changed");
	CHECK(e->region.blocks[seg].cls == REGION_ARENA &&
	      e->region.arena.blocks[seg].nlive == 1,
	      "its segment: the pinned object alone");
	gs_obj_put(e, &obj);
	CHECK(wait_for(e, moved_away, 10000), "unpinned, it stays");
	CHECK(check_value(e, 5, buf, 1000) == 0, "moved bytes");
	for (uint32_t k = 60; k < 100; k++)
		CHECK(check_value(e, k, buf, 1000) == 0, "value %u", k);
	gs_arena_stats(e, &as);
	CHECK(e->region.blocks[seg].cls != REGION_ARENA ||
	      e->region.arena.blocks[seg].nlive == 0 || seg == e->region.arena.dst ||
	      seg == e->region.arena.cur, "segment %u still held", seg);
	gs_engine_close(&e);
}

int main(void)
{
	log_level = LOG_WARN;
	churn();
	fragmentation();
	full_no_evict();
	full_evicts();
	pins();
	return check_result();
}
