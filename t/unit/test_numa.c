/*
 * NUMA node shares on the simulated topology (GOBLIN_TEST_NUMA): the
 * region order and --perverse, node ids checked against the topology,
 * population order, and the promotion round: hot foreign blocks swapped
 * into region zero with exact move counts and bytes, pinned blocks left
 * where they are, readers hammering the blocks being swapped always
 * reading exact bytes, and rounds beside a large index of small objects
 * while heads are replaced and deleted (the block -> owner table follows),
 * with how long each held the lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "check.h"
#include "engine_util.h"
#include "log.h"

#define HEAD	(256u << 10)
#define BLOCK	(2u << 20)
#define ARENA	(8u << 20)		/* 4 blocks, 32 keys per region */
#define NODES	4
#define PER_REGION ((int)(ARENA / HEAD))
#define KEYS	(NODES * PER_REGION)

static char *values[KEYS];

static struct gs_config config(int node, bool perverse)
{
	struct gs_config cfg;

	gs_config_init(&cfg);
	cfg.memory = ARENA;
	cfg.sub_memory = BLOCK;
	cfg.no_mlock = true;
	cfg.numa = node;
	cfg.perverse = perverse;
	cfg.no_numa_promotion = true;	/* rounds run by hand */
	return cfg;
}

static void order_is(const char *row, int node, bool perverse,
		     const int *want)
{
	struct gs_config cfg = config(node, perverse);
	struct numa_topo t;
	char err[256];

	setenv("GOBLIN_TEST_NUMA", row, 1);
	CHECK(numa_topo_setup(&t, &cfg, err, sizeof(err)) == 0, "%s", err);
	for (int i = 0; i < t.nnodes; i++)
		CHECK(t.order[i] == want[i], "%s node %d%s: region %d on %d, want %d",
		      row, node, perverse ? " perverse" : "", i, t.order[i],
		      want[i]);
}

static void refused(const char *row, int node, const char *text)
{
	struct gs_config cfg = config(node, false);
	struct numa_topo t;
	char err[256] = "";

	setenv("GOBLIN_TEST_NUMA", row, 1);
	CHECK(numa_topo_setup(&t, &cfg, err, sizeof(err)) == -EINVAL &&
	      strstr(err, text), "%s node %d: %s", row, node, err);
}

static void topology(void)
{
	order_is("10 20 30 20", 0, false, (int[]){ 0, 1, 2, 3 });
	order_is("10 20 30 20", 0, true, (int[]){ 2, 1, 0, 3 });
	order_is("10 20 30 20", 1, true, (int[]){ 3, 2, 1, 0 });
	order_is("10 21 31 21 31 21", 2, true, (int[]){ 4, 3, 2, 5, 0, 1 });
	order_is("10 20", 1, false, (int[]){ 1, 0 });
	refused("10 20 30 20", 4, "no such NUMA node (this machine has 4, simulated)");
	refused("10", 0, "want a distance row");
	refused("20 10", 0, "want a distance row");
	refused("10 20x", 0, "want a distance row");
	refused("10 9", 0, "want a distance row");
}

static uint32_t region_of(struct gs_engine *e, int i)
{
	struct gs_obj *obj;
	char key[32];
	uint32_t r;

	snprintf(key, sizeof(key), "k%03d", i);
	CHECK(gs_lookup(e, key, strlen(key), &obj) == 0, "%s missing", key);
	r = gs_obj_meta(obj)->head_off / BLOCK / (ARENA / BLOCK);
	gs_obj_put(e, &obj);
	return r;
}

/* Looks <i> up and compares its bytes: 0, or -1 on a mismatch. */
static int read_exact(struct gs_engine *e, int i)
{
	struct gs_obj *obj;
	const void *p;
	uint64_t len;
	char key[32];
	int ret = 0;

	snprintf(key, sizeof(key), "k%03d", i);
	if (gs_lookup(e, key, strlen(key), &obj) < 0)
		return -1;
	p = gs_obj_head(e, obj, &len);
	if (len != HEAD || memcmp(p, values[i], HEAD))
		ret = -1;
	gs_obj_put(e, &obj);
	return ret;
}

static void hit(struct gs_engine *e, int first, int n, int times)
{
	for (int t = 0; t < times; t++)
		for (int i = first; i < first + n; i++)
			CHECK(read_exact(e, i) == 0, "k%03d differs", i);
}

static int round_locked(struct gs_engine *e)
{
	int moved;

	pthread_mutex_lock(&e->lock);
	moved = numa_promote_round(e);
	pthread_mutex_unlock(&e->lock);
	return moved;
}

/* The engine of populated(), with <sub_memory> bytes for small objects. */
static struct gs_engine *populated_sub(uint64_t sub_memory)
{
	struct gs_config cfg = config(0, false);
	struct gs_engine *e;
	struct gs_io *io;
	char err[256];

	cfg.sub_memory = sub_memory;
	setenv("GOBLIN_TEST_NUMA", "10 20 30 20", 1);
	CHECK(gs_engine_open(&e, &cfg, err, sizeof(err)) == 0, "%s", err);
	CHECK(gs_io_create(e, &io) == 0, "io");
	for (int i = 0; i < KEYS; i++) {
		char key[32];

		snprintf(key, sizeof(key), "k%03d", i);
		CHECK(put_if(io, key, values[i], HEAD, 0, GS_IF_ANY, 0, NULL) == 0,
		      "store %s", key);
	}
	gs_io_destroy(&io);
	for (int i = 0; i < KEYS; i++)
		CHECK(region_of(e, i) == (uint32_t)(i / PER_REGION),
		      "k%03d in region %u: population order", i, region_of(e, i));
	return e;
}

static struct gs_engine *populated(void)
{
	return populated_sub(BLOCK);
}

static void promotion(void)
{
	struct gs_engine *e = populated();
	struct gs_numa_stats st;
	struct gs_obj *pin;
	const void *p;
	uint64_t len;

	/* two hot blocks of region 2; the first one has a pinned object */
	hit(e, 2 * PER_REGION, 16, 4);
	CHECK(gs_lookup(e, "k064", 4, &pin) == 0, "pin");
	p = gs_obj_head(e, pin, &len);
	CHECK(round_locked(e) == 1, "one block moved, the pinned one stays");
	CHECK(region_of(e, 64) == 2 && region_of(e, 72) == 0, "k064 stays, k072 moves");
	CHECK(gs_obj_head(e, pin, &len) == p && !memcmp(p, values[64], HEAD),
	      "pinned bytes in place and exact");
	gs_obj_put(e, &pin);
	hit(e, 2 * PER_REGION, 8, 4);
	CHECK(round_locked(e) == 1, "the unpinned block moves next round");
	CHECK(round_locked(e) == 0, "nothing more to move");
	for (int i = 64; i < 80; i++)
		CHECK(region_of(e, i) == 0, "k%03d local", i);
	gs_numa_stats(e, &st);
	CHECK(st.prom.promotions == 2 && st.prom.bytes == 4ull * BLOCK &&
	      st.prom.pinned == 1 && st.prom.rounds == 3 &&
	      st.prom.max_us <= st.prom.time_us,
	      "promotions %llu bytes %llu pinned %llu rounds %llu",
	      (unsigned long long)st.prom.promotions,
	      (unsigned long long)st.prom.bytes,
	      (unsigned long long)st.prom.pinned,
	      (unsigned long long)st.prom.rounds);
	for (int n = 0; n < NODES; n++)
		CHECK(st.bytes[n] == ARENA && st.blocks[n] == ARENA / BLOCK,
		      "node %d: %llu bytes", n, (unsigned long long)st.bytes[n]);
	for (int i = 0; i < KEYS; i++)
		CHECK(read_exact(e, i) == 0, "k%03d differs after promotion", i);
	gs_engine_close(&e);
}

struct hammer {
	struct gs_engine *e;
	volatile bool stop;
	unsigned seed;
	uint64_t reads, bad;
};

static void *reader(void *arg)
{
	struct hammer *h = arg;

	while (!h->stop) {
		int i = rand_r(&h->seed) % KEYS;

		if (read_exact(h->e, i) < 0)
			h->bad++;
		h->reads++;
	}
	return NULL;
}

static void hammered(void)
{
	struct gs_engine *e = populated();
	struct hammer h[3];
	pthread_t th[3];
	int moved = 0;

	for (int i = 0; i < 3; i++) {
		h[i] = (struct hammer){ .e = e, .seed = i + 1 };
		CHECK(pthread_create(&th[i], NULL, reader, &h[i]) == 0, "thread");
	}
	/* a hot block that wanders over the foreign regions, cooling
	 * rounds between: nearly every step swaps blocks the readers read */
	for (int r = 0; r < 60; r++) {
		int first = PER_REGION + (r * 8) % (KEYS - PER_REGION);

		hit(e, first, 8, 50);
		moved += round_locked(e);
		for (int cool = 0; cool < 8; cool++)	/* the last ones cool */
			moved += round_locked(e);
	}
	for (int i = 0; i < 3; i++)
		h[i].stop = true;
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 3; i++)
		CHECK(h[i].bad == 0 && h[i].reads > 0,
		      "reader %d: %llu of %llu reads differ", i,
		      (unsigned long long)h[i].bad, (unsigned long long)h[i].reads);
	CHECK(moved >= 40, "only %d blocks moved", moved);
	for (int i = 0; i < KEYS; i++)
		CHECK(read_exact(e, i) == 0, "k%03d differs at the end", i);
	printf("hammer: %d blocks moved, %llu reads\n", moved,
	       (unsigned long long)(h[0].reads + h[1].reads + h[2].reads));
	gs_engine_close(&e);
}

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Stores <n> small objects (arena entries beside the heads). */
static void small_objects(struct gs_engine *e, int n)
{
	struct gs_io *io;
	char key[32];

	CHECK(gs_io_create(e, &io) == 0, "io");
	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "s%07d", i);
		if (put_if(io, key, key, 8, 0, GS_IF_ANY, 0, NULL) != 0) {
			CHECK(0, "store %s", key);
			break;
		}
	}
	gs_io_destroy(&io);
}

#define LARGE_ROUNDS	20

/* Rounds beside GOBLIN_TEST_NUMA_OBJECTS (default 20,000) small objects:
 * each after lookups of the heads in foreign blocks, with one head
 * replaced and one deleted and stored again between rounds, so blocks
 * change owners as they move; every head reads exact after.  Prints the
 * time each round held the lock (median, longest) and the blocks moved. */
static void large_index(void)
{
	const char *env = getenv("GOBLIN_TEST_NUMA_OBJECTS");
	int n = env ? atoi(env) : 20000, moved = 0;
	struct gs_engine *e = populated_sub(64ull << 20);
	uint64_t ns[LARGE_ROUNDS];
	struct gs_io *io;
	char key[32];

	small_objects(e, n);
	CHECK(gs_io_create(e, &io) == 0, "io");
	for (int r = 0; r < LARGE_ROUNDS; r++) {
		int k = (r * 53 + 11) % KEYS, k2 = (k + 1 + r) % KEYS;
		char key2[32];
		uint64_t t0;

		for (int i = 0; i < KEYS; i++)
			if (region_of(e, i) != 0)
				hit(e, i, 1, 4);
		/* every slot is in use: a delete makes room for a
		 * replacement, whose old slot takes the deleted key back */
		snprintf(key, sizeof(key), "k%03d", k);
		snprintf(key2, sizeof(key2), "k%03d", k2);
		CHECK(gs_delete(e, key, strlen(key)) == 0, "delete %s", key);
		CHECK(put_if(io, key2, values[k2], HEAD, 0, GS_IF_ANY, 0,
			     NULL) == 0, "replace %s", key2);
		CHECK(put_if(io, key, values[k], HEAD, 0, GS_IF_ANY, 0,
			     NULL) == 0, "store %s again", key);
		t0 = mono_ns();
		moved += round_locked(e);
		ns[r] = mono_ns() - t0;
	}
	gs_io_destroy(&io);
	for (int i = 0; i < KEYS; i++)
		CHECK(read_exact(e, i) == 0, "k%03d differs after the rounds", i);
	CHECK(moved > 0, "no block moved");
	qsort(ns, LARGE_ROUNDS, sizeof(ns[0]), by_value);
	printf("large index: %d objects, a round held the lock %.3f ms (median), %.3f ms at most; %d blocks moved in %d rounds\n",
	       n + KEYS, ns[LARGE_ROUNDS / 2] / 1e6, ns[LARGE_ROUNDS - 1] / 1e6,
	       moved, LARGE_ROUNDS);
	gs_engine_close(&e);
}

int main(void)
{
	log_level = LOG_WARN;
	for (int i = 0; i < KEYS; i++) {
		values[i] = malloc(HEAD);
		CHECK(values[i], "malloc");
		fill(values[i], HEAD, i + 1);
	}
	topology();
	promotion();
	hammered();
	large_index();
	for (int i = 0; i < KEYS; i++)
		free(values[i]);
	return check_result();
}
