/*
 * goblin-corpus: bench/small-http's fixed object corpus, described and
 * digested without a server.  The objects are exactly what goblin-bench
 * stores for the same --dist, --keys and --seed (its generators are linked
 * in): key gb:K, size size(seed, K), bytes value(seed, K, version 0).
 *
 * Prints one JSON object: the count, total bytes, the page-cache bytes
 * the objects take as files (each rounded up to 4 KiB pages), size
 * percentiles, a histogram by power-of-two class (count, bytes, pow2 slot
 * bytes, pages) and the digest: XXH3-128 over, for each key in order, its
 * index and size as little-endian 64-bit words, then its bytes.  Same
 * seed, same digest; the digest of the first N keys is a fixed value.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "../goblin-bench/goblin-bench-gen.h"

#define PAGE		4096u
#define CLASSES		21		/* 2^0 .. 2^20 (the 1 MiB cap) */
#define CHUNK		(64u << 10)

struct cls {
	uint64_t count, bytes, slot_bytes, pages;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: goblin-corpus [--dist fb_value|gpd|fixed] [--size N] --keys N\n"
"                     [--seed N]\n"
"Describes and digests the objects goblin-bench stores for these options\n"
"(gb:0 .. gb:N-1): one JSON object on stdout (count, bytes, page-cache\n"
"bytes as 4 KiB-rounded files, size percentiles, power-of-two classes, and\n"
"the XXH3-128 digest of (index, size, bytes) of every key in order).\n"
"Exit status: 0 ok, 2 bad usage.\n");
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

static int class_of(uint64_t size)
{
	int c = 0;

	while (c < CLASSES - 1 && (1ull << c) < size)
		c++;
	return c;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void digest_key(XXH3_state_t *st, uint64_t tag, uint64_t key,
		       uint64_t size, uint8_t *buf)
{
	uint64_t head[2] = { htole64(key), htole64(size) };
	uint64_t base = gb_value_base(tag, key, 0);

	XXH3_128bits_update(st, head, sizeof(head));
	for (uint64_t off = 0; off < size; off += CHUNK) {
		size_t n = size - off < CHUNK ? size - off : CHUNK;

		gb_value_fill(base, off, buf, n);
		XXH3_128bits_update(st, buf, n);
	}
}

static void print_json(const char *dist, uint64_t keys, uint64_t seed,
		       const uint64_t *sizes, const struct cls *cls,
		       XXH128_hash_t h)
{
	static const double pct[] = { 50, 90, 99, 99.9 };
	uint64_t bytes = 0, pages = 0;

	for (int c = 0; c < CLASSES; c++) {
		bytes += cls[c].bytes;
		pages += cls[c].pages;
	}
	printf("{\"dist\": \"%s\", \"keys\": %" PRIu64 ", \"seed\": %" PRIu64
	       ", \"bytes\": %" PRIu64 ", \"mean\": %.3f, \"file_page_bytes\": %"
	       PRIu64 ", \"digest\": \"xxh3-128:%016" PRIx64 "%016" PRIx64 "\"",
	       dist, keys, seed, bytes, keys ? (double)bytes / keys : 0,
	       pages * PAGE, h.high64, h.low64);
	printf(", \"min\": %" PRIu64 ", \"max\": %" PRIu64, keys ? sizes[0] : 0,
	       keys ? sizes[keys - 1] : 0);
	for (size_t i = 0; i < sizeof(pct) / sizeof(pct[0]); i++)
		printf(", \"p%g\": %" PRIu64, pct[i],
		       keys ? sizes[(uint64_t)((keys - 1) * pct[i] / 100)] : 0);
	printf(", \"classes\": [");
	for (int c = 0, first = 1; c < CLASSES; c++) {
		if (!cls[c].count)
			continue;
		printf("%s{\"up_to\": %llu, \"count\": %" PRIu64 ", \"bytes\": %"
		       PRIu64 ", \"slot_bytes\": %" PRIu64 ", \"pages\": %"
		       PRIu64 "}", first ? "" : ", ", 1ull << c, cls[c].count,
		       cls[c].bytes, cls[c].slot_bytes, cls[c].pages);
		first = 0;
	}
	printf("]}\n");
}

int main(int argc, char **argv)
{
	enum gb_dist dist = GB_DIST_FB_VALUE;
	uint64_t keys = 0, seed = 1, fixed = 256 << 10, tag;
	struct cls cls[CLASSES] = { 0 };
	struct gb_sizer z;
	XXH3_state_t *st;
	uint64_t *sizes;
	uint8_t *buf;
	int have_keys = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		}
		if (!v)
			goto bad;
		i++;
		if (!strcmp(a, "--keys") && !parse_u64(v, &keys) && keys)
			have_keys = 1;
		else if (!strcmp(a, "--seed") && !parse_u64(v, &seed))
			;
		else if (!strcmp(a, "--size") && !parse_u64(v, &fixed) && fixed)
			;
		else if (!strcmp(a, "--dist") && !strcmp(v, "fb_value"))
			dist = GB_DIST_FB_VALUE;
		else if (!strcmp(a, "--dist") && !strcmp(v, "gpd"))
			dist = GB_DIST_GPD;
		else if (!strcmp(a, "--dist") && !strcmp(v, "fixed"))
			dist = GB_DIST_FIXED;
		else
			goto bad;
	}
	if (!have_keys)
		goto bad;
	sizes = malloc(keys * sizeof(*sizes));
	buf = malloc(CHUNK);
	st = XXH3_createState();
	if (!sizes || !buf || !st) {
		fprintf(stderr, "goblin-corpus: out of memory for %" PRIu64
			" keys\n", keys);
		return 1;
	}
	gb_sizer_init(&z, dist, fixed, seed);
	tag = gb_value_tag(seed);
	XXH3_128bits_reset(st);
	for (uint64_t k = 0; k < keys; k++) {
		uint64_t size = gb_size_of(&z, k);
		struct cls *c = &cls[class_of(size)];

		sizes[k] = size;
		c->count++;
		c->bytes += size;
		c->slot_bytes += 1ull << class_of(size);
		c->pages += (size + PAGE - 1) / PAGE;
		digest_key(st, tag, k, size, buf);
	}
	qsort(sizes, keys, sizeof(*sizes), cmp_u64);
	print_json(gb_dist_name(dist), keys, seed, sizes, cls,
		   XXH3_128bits_digest(st));
	XXH3_freeState(st);
	free(buf);
	free(sizes);
	return 0;
bad:
	fprintf(stderr, "goblin-corpus: bad arguments (--keys N is needed)\n");
	usage(stderr);
	return 2;
}
