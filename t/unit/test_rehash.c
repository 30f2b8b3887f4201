/*
 * The index grows incrementally (index.c): a model check of sets, deletes
 * and lookups against a plain array, from 16 buckets over nine growths.
 * Every step looks up the key it changed and a few others; at every start
 * and end of a growth, and every 512 steps, every key of the model is
 * looked up and the tables' shape checked: each record is in the one
 * chain its hash names (the old table's at or past rehash_pos, else the
 * new table's), the chains hold every linked record once, and
 * index_table_bytes counts both tables.  Then a restart in the middle of
 * a growth: the journal's replay rebuilds the same objects.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "check.h"
#include "engine_util.h"
#include "index.h"

#define KEYS	8000
#define STEPS	60000

static char tmpdir[] = "/var/tmp/goblin-test-rehash.XXXXXX";
static char pooldir[300];

/* What each key should hold: nothing, or <size> bytes from val[first]. */
static struct {
	bool live;
	uint8_t first;
	uint32_t size;
} model[KEYS];
static char val[512];
static uint64_t rnd = 0x9e3779b97f4a7c15ull;
static unsigned growths;

static uint64_t next_rand(void)
{
	rnd ^= rnd << 13;
	rnd ^= rnd >> 7;
	rnd ^= rnd << 17;
	return rnd;
}

static void key_of(int k, char *key, size_t len)
{
	snprintf(key, len, "rh:%d", k);
}

/* Key <k> looks up as the model says. */
static void check_key(struct gs_engine *e, int k)
{
	struct gs_obj *obj;
	const unsigned char *h;
	uint64_t len;
	char key[16];
	int r;

	key_of(k, key, sizeof(key));
	r = gs_lookup(e, key, strlen(key), &obj);
	if (!model[k].live) {
		CHECK(r == -ENOENT, "%s: found, want none", key);
		if (r == 0)
			gs_obj_put(e, &obj);
		return;
	}
	CHECK(r == 0, "%s: %d, want found", key, r);
	if (r < 0)
		return;
	h = gs_obj_head(e, obj, &len);
	CHECK(gs_obj_meta(obj)->size == model[k].size && h &&
	      h[0] == (unsigned char)val[model[k].first],
	      "%s: size %llu, want %u", key,
	      (unsigned long long)gs_obj_meta(obj)->size, model[k].size);
	gs_obj_put(e, &obj);
}

/* The records of chain <b> of a table of <n> buckets (the old one when
 * <old>) are where the lookup looks for them; their number. */
static uint64_t check_chain(struct gs_engine *e, struct gs_obj *o,
			    uint64_t b, uint64_t n, bool old)
{
	uint64_t count = 0;

	for (; o; o = o->hnext, count++) {
		uint64_t h = XXH3_64bits(o->key, o->klen);

		CHECK((h & (n - 1)) == b, "%.*s in bucket %llu of %llu",
		      o->klen, o->key, (unsigned long long)b,
		      (unsigned long long)n);
		if (e->old_buckets)
			CHECK(old == ((h & (e->nbuckets / 2 - 1)) >= e->rehash_pos),
			      "%.*s in the %s table, moved to %llu", o->klen,
			      o->key, old ? "old" : "new",
			      (unsigned long long)e->rehash_pos);
	}
	return count;
}

/* The tables' shape, and every key against the model. */
static void check_all(struct gs_engine *e)
{
	uint64_t n = 0, buckets;
	struct gs_stats st;

	pthread_mutex_lock(&e->lock);
	for (uint64_t b = 0; b < e->nbuckets; b++)
		n += check_chain(e, e->buckets[b], b, e->nbuckets, false);
	for (uint64_t b = 0; e->old_buckets && b < e->nbuckets / 2; b++) {
		CHECK(b >= e->rehash_pos || !e->old_buckets[b],
		      "old bucket %llu moved, not empty", (unsigned long long)b);
		n += check_chain(e, e->old_buckets[b], b, e->nbuckets / 2, true);
	}
	CHECK(n == e->clock_len, "chains hold %llu of %u records",
	      (unsigned long long)n, e->clock_len);
	buckets = e->nbuckets + (e->old_buckets ? e->nbuckets / 2 : 0);
	pthread_mutex_unlock(&e->lock);
	gs_stats(e, &st);
	CHECK(st.index_table_bytes == engine_index_table_bytes(e) &&
	      st.index_table_bytes >= buckets * sizeof(void *),
	      "index_table_bytes %llu for %llu buckets",
	      (unsigned long long)st.index_table_bytes,
	      (unsigned long long)buckets);
	for (int k = 0; k < KEYS; k++)
		check_key(e, k);
}

/* One step on key <k>: a set (<set>), else a delete, as the model. */
static void step(struct gs_engine *e, struct gs_io *io, int k, bool set)
{
	char key[16];
	int r;

	key_of(k, key, sizeof(key));
	if (set) {
		uint8_t first = next_rand() % 256;
		uint32_t size = 1 + next_rand() % 200;

		r = put_if(io, key, val + first, size, 0, GS_IF_ANY, 0, NULL);
		CHECK(r == 0, "set %s: %d", key, r);
		model[k].live = r == 0;
		model[k].first = first;
		model[k].size = size;
		return;
	}
	r = gs_delete(e, key, strlen(key));
	CHECK(r == (model[k].live ? 0 : -ENOENT), "delete %s: %d", key, r);
	model[k].live = false;
}

/* <steps> random steps over the first <keys> keys, <set_pct>% of them
 * sets; returns early in the middle of a growth to <stop_at> buckets or
 * more (0: never). */
static void run_steps(struct gs_engine *e, struct gs_io *io, int steps,
		      int keys, int set_pct, uint64_t stop_at)
{
	bool growing = false;

	for (int i = 0; i < steps; i++) {
		int k = next_rand() % keys;
		bool was = growing;

		step(e, io, k, (int)(next_rand() % 100) < set_pct);
		check_key(e, k);
		for (int j = 0; j < 4; j++)
			check_key(e, next_rand() % KEYS);
		pthread_mutex_lock(&e->lock);
		growing = e->old_buckets != NULL;
		pthread_mutex_unlock(&e->lock);
		growths += growing && !was;
		if (growing != was || i % 512 == 0)
			check_all(e);
		if (growing && stop_at && e->nbuckets >= stop_at &&
		    e->rehash_pos > 0)
			return;
	}
}

static struct gs_engine *open_engine(bool fresh)
{
	struct gs_engine *e;

	snprintf(pooldir, sizeof(pooldir), "%s/ssd", tmpdir);
	e = open_small_index(pooldir, fresh, 0);
	CHECK(e != NULL, "open");
	return e;
}

int main(void)
{
	struct gs_engine *e;
	struct gs_io *io;

	if (scratch_make(tmpdir) < 0)
		return 1;
	fill(val, sizeof(val), 7);
	e = open_engine(true);
	if (!e || gs_io_create(e, &io) < 0)
		return 1;
	/* growing with sets and deletes mixed, then shrinking, then
	 * growing again: 16 buckets grow to 8192 */
	run_steps(e, io, STEPS / 2, KEYS, 75, 0);
	run_steps(e, io, STEPS / 4, KEYS, 20, 0);
	run_steps(e, io, STEPS / 4, KEYS, 90, 0);
	CHECK(growths >= 8 && e->nbuckets >= 8192, "%u growths to %llu buckets",
	      growths, (unsigned long long)e->nbuckets);
	check_all(e);
	gs_io_destroy(&io);
	gs_engine_close(&e);

	/* a restart in the middle of a growth: the replay rebuilds it */
	memset(model, 0, sizeof(model));
	e = open_engine(true);
	if (!e || gs_io_create(e, &io) < 0)
		return 1;
	run_steps(e, io, STEPS, 3000, 80, 2048);
	CHECK(e->old_buckets != NULL, "never grew");
	gs_io_destroy(&io);
	gs_engine_close(&e);
	e = open_engine(false);
	if (e) {
		check_all(e);
		gs_engine_close(&e);
	}
	if (scratch_remove(tmpdir) < 0)
		failures++;
	return check_result();
}
