/*
 * usage: goblin-engine-read --dir DIR --tier ssd|hdd --size SIZE --keys N
 *                           [--streams N] [--seconds S] [--io-buffers N]
 *
 * The read-ahead pipeline alone, without the network: libgoblin in-process
 * with one pool (a 4K RAM head, so nearly every byte comes from the tier),
 * N objects stored, then --streams concurrent gs_streams on one gs_io
 * reading random objects whole for --seconds.  Every chunk is checked
 * (the engine's checksums) and its first bytes compared with what was
 * written.  Prints one JSON line: MB/s, objects, checksum and I/O errors.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "engine-bench.h"
#include "goblin.h"
#include "log.h"
#include "size.h"

struct reader {
	struct gs_stream *s;
	uint64_t key, pos;
	bool busy;
};

static double now(void)
{
	return mono_ns() / 1e9;
}

/* The byte at <off> of object <k>: cheap, position-dependent. */
static unsigned char byte_at(uint64_t k, uint64_t off)
{
	return (unsigned char)(k * 131 + off / 4096 * 7 + off);
}

/* bench_fill_fn: the bytes of object *(uint64_t *)<arg>. */
static void fill_object(void *arg, unsigned char *p, uint64_t pos, size_t n)
{
	uint64_t k = *(const uint64_t *)arg;

	for (size_t i = 0; i < n; i++)
		p[i] = byte_at(k, pos + i);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: goblin-engine-read --dir DIR --tier ssd|hdd --size SIZE --keys N\n"
		"                          [--streams N] [--seconds S] [--io-buffers N]\n");
}

struct args {
	const char *dir, *tier;
	uint64_t size, keys, streams, seconds, bufs;
};

struct tally {
	uint64_t bytes, objects, mismatches;
};

/* Fills <a> from the command line: 0, 1 after --help, or 2 (usage shown). */
static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option longs[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "tier", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 's' },
		{ "keys", required_argument, NULL, 'k' },
		{ "streams", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 'S' },
		{ "io-buffers", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c;

	*a = (struct args){ .tier = "ssd", .size = 1 << 20, .keys = 256,
			    .streams = 4, .seconds = 5, .bufs = 4 };
	while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
		int bad = 0;

		switch (c) {
		case 'd': a->dir = optarg; break;
		case 't': a->tier = optarg; break;
		case 's': bad = size_parse(optarg, &a->size); break;
		case 'k': bad = size_parse(optarg, &a->keys); break;
		case 'n': bad = size_parse(optarg, &a->streams); break;
		case 'S': bad = size_parse(optarg, &a->seconds); break;
		case 'b': bad = size_parse(optarg, &a->bufs); break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return 2;
		}
		if (bad) {
			fprintf(stderr, "goblin-engine-read: bad value \"%s\"\n", optarg);
			return 2;
		}
	}
	if (!a->dir || (strcmp(a->tier, "ssd") && strcmp(a->tier, "hdd")) ||
	    !a->keys || !a->streams || a->streams > 64) {
		usage(stderr);
		return 2;
	}
	return 0;
}

static int open_engine(const struct args *a, struct gs_engine **e)
{
	struct gs_config cfg;
	char err[256];

	gs_config_init(&cfg);
	cfg.memory = 16 << 20;
	cfg.sub_memory = 0;
	cfg.ram_head = 4096;
	cfg.no_mlock = true;
	cfg.io_buffers = a->bufs;
	cfg.io_streams = a->streams;
	cfg.max_object = a->size;
	if (!strcmp(a->tier, "ssd")) {
		cfg.ssd_dir.v[cfg.ssd_dir.n++] = a->dir;
		cfg.ssd_size = a->keys * a->size * 9 / 8 + (64 << 20);
	} else {
		cfg.hdd_dir.v[cfg.hdd_dir.n++] = a->dir;
		cfg.hdd_size = a->keys * a->size * 9 / 8 + (64 << 20);
	}
	if (gs_engine_open(e, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "goblin-engine-read: %s\n", err);
		return -1;
	}
	return 0;
}

/* Opens a stream on a random object when <rd> is idle, then takes what
 * has landed.  Returns 0, or -1 on an error. */
static int read_step(struct gs_engine *e, struct gs_io *io,
		     const struct args *a, struct reader *rd, struct tally *t)
{
	const void *p;
	size_t n;
	int ret;

	if (!rd->busy) {
		struct gs_obj *obj;
		char key[32];

		rd->key = rand() % a->keys;
		bench_key(key, sizeof(key), rd->key);
		if (gs_lookup(e, key, strlen(key), &obj) < 0 ||
		    gs_stream_open(io, obj, 0, a->size, bench_on_wake, NULL,
				   &rd->s) < 0)
			return -1;
		gs_obj_put(e, &obj);
		rd->busy = true;
		rd->pos = 0;
	}
	while ((ret = gs_stream_peek(rd->s, &p, &n)) == 0 && n) {
		t->mismatches += *(const unsigned char *)p != byte_at(rd->key, rd->pos);
		gs_stream_consume(rd->s, n);
		rd->pos += n;
		t->bytes += n;
	}
	if (ret < 0 && ret != -EAGAIN) {
		fprintf(stderr, "goblin-engine-read: read error %d\n", ret);
		return -1;
	}
	if (ret == 0) {
		gs_stream_close(&rd->s);
		rd->busy = false;
		t->objects++;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct tally t = { 0 };
	struct gs_engine *e;
	struct gs_io *io;
	struct gs_stats st;
	struct reader *r;
	struct args a;
	double t0, t1;
	int ret = parse_args(argc, argv, &a);

	if (ret)
		return ret == 1 ? 0 : 2;
	log_level = LOG_WARN;
	if (open_engine(&a, &e) < 0)
		return 1;
	if (gs_io_create(e, &io) < 0)
		return 1;
	for (uint64_t k = 0; k < a.keys; k++)
		if (bench_store(io, k, a.size, fill_object, &k) < 0) {
			fprintf(stderr, "goblin-engine-read: storing k%llu failed\n",
				(unsigned long long)k);
			return 1;
		}
	r = calloc(a.streams, sizeof(*r));
	srand(1);
	t0 = now();
	t1 = t0 + a.seconds;
	while (now() < t1) {
		for (uint64_t i = 0; i < a.streams; i++)
			if (read_step(e, io, &a, &r[i], &t) < 0)
				return 1;
		gs_io_run(io, true);
	}
	t1 = now();
	for (uint64_t i = 0; i < a.streams; i++)
		gs_stream_close(&r[i].s);
	gs_stats(e, &st);
	printf("{\"tier\": \"%s\", \"size\": %llu, \"streams\": %llu, \"io_buffers\": %llu, "
	       "\"seconds\": %.3f, \"objects\": %llu, \"mb_per_s\": %.1f, "
	       "\"mismatches\": %llu, \"checksum_errors\": %llu, \"io_errors\": %llu}\n",
	       a.tier, (unsigned long long)a.size, (unsigned long long)a.streams,
	       (unsigned long long)a.bufs, t1 - t0, (unsigned long long)t.objects,
	       t.bytes / (t1 - t0) / 1e6, (unsigned long long)t.mismatches,
	       (unsigned long long)st.checksum_errors, (unsigned long long)st.io_errors);
	free(r);
	gs_io_destroy(&io);
	gs_engine_close(&e);
	return t.mismatches || st.checksum_errors || st.io_errors ? 1 : 0;
}
