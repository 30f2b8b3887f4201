/* usage: test_rdma_engine
 * The RDMA endpoint over the real engine (storaged/rdma/rdma_engine.c) and the
 * emulated transport (libfabric tcp) on loopback, GETs byte-exact through
 * the protocol in one round and in many, a miss, and the staging buffers
 * reused by the next GET; no pin left.  Two stores:
 *   disk: RAM heads and pools under /var/tmp: 1 B and 256 KiB (RAM), 3 MiB
 *         and 9 MiB (head from the registered region, tail streamed from
 *         disk into the connection's staging buffers, more chunks than
 *         buffers);
 *   ram:  no pools (issue 21): 1 B (arena), --ram-head, --ram-head + 1 and
 *         5 MiB, whose tails are RAM chunks of the region: written from
 *         the registered region too, never from the disk.
 * Exit 0 when every check passes, 1 otherwise (each failure printed). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "goblin.h"
#include "check.h"
#include "engine_util.h"
#include "log.h"
#include "rdma_client.h"

#define NOBJ	4
#define RAM_HEAD	(256u << 10)

struct obj {
	const char *key;
	uint64_t size;
};

static const struct obj disk_objs[NOBJ] = {
	{ "one", 1 },
	{ "k256", 256u << 10 },
	{ "m3", (3u << 20) + 5 },
	{ "m9", (9u << 20) + 77 },
};

static const struct obj ram_objs[NOBJ] = {
	{ "one", 1 },
	{ "head", RAM_HEAD },
	{ "head1", RAM_HEAD + 1 },
	{ "m5", (5u << 20) + 3 },
};

static char tmpdir[] = "/var/tmp/goblin-test-rdma.XXXXXX";
static struct gs_engine *eng;
static const struct obj *objs;	/* the store's: disk_objs or ram_objs */
static char *vals[NOBJ];
static atomic_int state;	/* 0 starting, 1 serving, 2 stop, -1 failed */
static uint16_t port;
static int server_err;
static struct rdma_server_stats server_st;

/* The server's thread: its own gs_io, the objects stored, then the
 * server stepping until told to stop. */
static void *server_main(void *arg)
{
	struct rdma_server *srv = NULL;
	struct rdma_engine *es = NULL;
	struct gs_io *io = NULL;
	void *region[1];
	size_t len[1];
	int r = 0, k;

	(void)arg;
	r = gs_io_create(eng, &io);
	for (k = 0; !r && k < NOBJ; k++)
		r = put_if(io, objs[k].key, vals[k], objs[k].size, 100u + k,
			   GS_IF_ANY, 0, NULL);
	if (!r)
		r = rdma_engine_create(eng, io, &es);
	if (!r) {
		region[0] = rdma_engine_region(es, &len[0]);
		r = rdma_server_create(&rdma_fabric, "127.0.0.1", 0,
				       &port, &rdma_engine_ops, es,
				       region, len, 1, &srv);
	}
	if (r)
		fprintf(stderr, "server start: %s (object %d)\n", strerror(-r),
			k);
	atomic_store(&state, r ? -1 : 1);
	while (!r && atomic_load(&state) == 1) {
		r = rdma_server_step(srv);
		if (!r)
			r = rdma_server_wait(srv, 1000);
		if (r > 0)
			r = 0;
	}
	server_err = r;
	if (srv)
		rdma_server_stats(srv, &server_st);
	rdma_server_destroy(&srv);
	rdma_engine_destroy(&es);
	gs_io_destroy(&io);
	return NULL;
}

static void get_all(size_t window)
{
	struct rdma_client *c = NULL;
	char err[RDMA_MSG] = "";
	uint32_t flags = 0;
	size_t len = 0;
	char *out = malloc(objs[NOBJ - 1].size);
	int r, k;

	r = rdma_client_create(&rdma_fabric, "127.0.0.1", port, window,
			       err, sizeof(err), &c);
	CHECK(r == 0, "connect (window %zu): %d %s", window, r, err);
	for (k = 0; !r && k < 2 * NOBJ; k++) {
		int i = k % NOBJ;

		memset(out, 0, objs[i].size);
		r = rdma_client_get(c, objs[i].key, out, objs[NOBJ - 1].size,
				    &len, &flags, NULL, err, sizeof(err));
		CHECK(r == 1 && len == objs[i].size && flags == 100u + i,
		      "get %s (window %zu): %d %s, %zu bytes, flags %u",
		      objs[i].key, window, r, err, len, flags);
		CHECK(r != 1 || !memcmp(out, vals[i], objs[i].size),
		      "%s: bytes differ (window %zu)", objs[i].key, window);
		r = r == 1 ? 0 : r;
	}
	r = rdma_client_get(c, "absent", out, 1, &len, &flags, NULL, err,
			    sizeof(err));
	CHECK(r == 0, "miss: %d %s", r, err);
	rdma_client_destroy(&c);
	free(out);
}

/* Serves <objs> from <eng> and GETs each over three windows. */
static void serve_and_get(void)
{
	pthread_t th;

	atomic_store(&state, 0);
	server_err = 0;
	pthread_create(&th, NULL, server_main, NULL);
	while (atomic_load(&state) == 0)
		sched_yield();
	CHECK(atomic_load(&state) == 1, "server start");
	if (atomic_load(&state) == 1) {
		get_all(256u << 10);
		get_all(4u << 20);
		get_all(RDMA_BULK_MIN * 16);
	}
	atomic_store(&state, 2);
	pthread_join(th, NULL);
	CHECK(server_err == 0, "server: %d", server_err);
	/* every GET a hit but the misses, none failed */
	CHECK(server_st.hits == 3 * 2 * NOBJ && server_st.misses == 3 &&
	      server_st.errors == 0, "server: %llu hits, %llu misses, %llu errors",
	      (unsigned long long)server_st.hits,
	      (unsigned long long)server_st.misses,
	      (unsigned long long)server_st.errors);
}

/* Opens <eng> with <cfg>, stores <set> and GETs it (serve_and_get);
 * <st> gets the engine's counters after.  False when it did not open. */
static bool run_store(const char *name, const struct obj *set,
		      const struct gs_config *cfg, struct gs_stats *st)
{
	char err[256];

	objs = set;
	for (int k = 0; k < NOBJ; k++) {
		free(vals[k]);
		vals[k] = malloc(objs[k].size);
		if (!vals[k])
			abort();
		fill(vals[k], objs[k].size, 7u + (uint32_t)k);
	}
	if (gs_engine_open(&eng, cfg, err, sizeof(err)) < 0) {
		CHECK(0, "open the %s store: %s", name, err);
		return false;
	}
	serve_and_get();
	gs_stats(eng, st);
	CHECK(st->checksum_errors == 0 && st->io_errors == 0,
	      "%s: %llu checksum errors, %llu I/O errors", name,
	      (unsigned long long)st->checksum_errors,
	      (unsigned long long)st->io_errors);
	CHECK(st->pins == 0, "%s: pins left %llu", name,
	      (unsigned long long)st->pins);
	return true;
}

/* RAM heads and pools: the tails of m3 and m9 come from the disk. */
static void disk_store(void)
{
	char ssd[300], hdd[300];
	struct gs_config cfg;
	struct gs_stats st;

	store_config(&cfg, 32 << 20, 8 << 20, 64 << 20, 128 << 20);
	store_pool(&cfg, false, ssd, sizeof(ssd), "%s/ssd", tmpdir);
	store_pool(&cfg, true, hdd, sizeof(hdd), "%s/hdd", tmpdir);
	if (!run_store("disk", disk_objs, &cfg, &st))
		return;
	/* the large objects' tails came from the pools at the first GET, 8
	 * MiB of m9's at least, and later GETs took them from the RAM chunk
	 * cache (the region, registered memory too) */
	CHECK(st.disk_read_bytes >= (8u << 20) && st.chunk_hits > 0 &&
	      st.hdd_objects + st.ssd_objects >= 2,
	      "disk reads %llu bytes, %llu chunk hits, objects on disk %llu",
	      (unsigned long long)st.disk_read_bytes,
	      (unsigned long long)st.chunk_hits,
	      (unsigned long long)(st.hdd_objects + st.ssd_objects));
	printf("disk_read_bytes %llu, disk_reads %llu\n",
	       (unsigned long long)st.disk_read_bytes,
	       (unsigned long long)st.disk_reads);
	gs_engine_close(&eng);
}

/* No pools: the objects over --ram-head are RAM-only, their tails in RAM
 * chunks of the region, which the server must write from too. */
static void ram_store(void)
{
	struct gs_config cfg;
	struct gs_stats st;

	store_config(&cfg, 32 << 20, 8 << 20, 0, 0);
	cfg.ram_head = RAM_HEAD;
	if (!run_store("RAM-only", ram_objs, &cfg, &st))
		return;
	CHECK(st.curr_items == NOBJ && st.disk_reads == 0 &&
	      st.hdd_objects + st.ssd_objects == 0,
	      "RAM-only: %llu items, %llu disk reads, %llu objects on disk",
	      (unsigned long long)st.curr_items,
	      (unsigned long long)st.disk_reads,
	      (unsigned long long)(st.hdd_objects + st.ssd_objects));
	gs_engine_close(&eng);
}

int main(void)
{
	if (scratch_make(tmpdir) < 0)
		return 1;
	disk_store();
	ram_store();
	for (int k = 0; k < NOBJ; k++)
		free(vals[k]);
	if (scratch_remove(tmpdir) < 0)
		failures++;
	return check_result();
}
