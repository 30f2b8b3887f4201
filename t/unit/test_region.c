/*
 * The RAM region's slot allocator: heads take fixed --ram-head slots (eight
 * per 2M block), arena segments whole blocks charged to --sub-memory (to
 * --memory when that is 0), budgets are honoured, freed blocks return,
 * slots never overlap.  The
 * region's memfd is sealed: only the engine's own mapping writes it (huge
 * pages too when some are reserved).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine.h"
#include "check.h"
#include "log.h"
#include "region.h"


static struct gs_config config(uint64_t memory, uint64_t sub)
{
	struct gs_config cfg;

	gs_config_init(&cfg);
	cfg.memory = memory;
	cfg.sub_memory = sub;
	cfg.no_mlock = true;
	return cfg;
}

static void heads(void)
{
	struct gs_config cfg = config(8 << 20, 2 << 20);
	struct region r;
	char err[256];
	uint64_t off[40];
	const struct region_class *c;
	int n = 0;

	CHECK(region_open(&r, &cfg, err, sizeof(err)) == 0, "%s", err);
	c = &r.cls[REGION_HEAD];
	CHECK(c->slot == 256 << 10 && c->nslots == 8,
	      "head class: slot %llu x %u", (unsigned long long)c->slot,
	      c->nslots);
	while (n < 40 && region_alloc(&r, &off[n]) == 0)
		n++;
	CHECK(n == 32, "8M of 256K heads: got %d", n);
	for (int i = 0; i < n; i++) {
		CHECK(off[i] % (256 << 10) == 0, "alignment");
		for (int j = 0; j < i; j++)
			CHECK(off[i] != off[j], "overlap %d %d", i, j);
		memset((char *)r.base + off[i], i, 256 << 10);
	}
	for (int i = 0; i < n; i++)
		CHECK(((unsigned char *)r.base)[off[i] + 1000] == (unsigned char)i,
		      "slot %d overwritten", i);
	CHECK(r.head_blocks == 4 && r.used == 8 << 20, "blocks %u", r.head_blocks);
	for (int i = 0; i < n; i += 2)
		region_free(&r, off[i]);
	CHECK(r.used == 4 << 20, "used after frees");
	for (int i = 1; i < n; i += 2)
		region_free(&r, off[i]);
	CHECK(r.head_blocks == 0 && r.used == 0, "all blocks back: %u", r.head_blocks);
	region_close(&r);
}

static void segments(void)
{
	struct gs_config cfg = config(2 << 20, 4 << 20);
	struct region r;
	char err[256];
	uint32_t b[3];
	uint64_t off;
	char *p;

	CHECK(region_open(&r, &cfg, err, sizeof(err)) == 0, "%s", err);
	CHECK(region_arena_block_take(&r, &b[0]) == 0, "first segment");
	CHECK(r.small_blocks == 1 && r.head_blocks == 0, "charged to sub-memory");
	CHECK(b[0] >= r.head_blocks_max, "segment %u in the sub-memory blocks", b[0]);
	CHECK(region_is_arena(&r, (uint64_t)b[0] * r.block + 100), "is arena");
	CHECK(region_arena_block_take(&r, &b[1]) == 0 && b[1] != b[0], "second");
	CHECK(region_arena_block_take(&r, &b[2]) == -ENOMEM, "sub-memory is two blocks");
	/* the head budget is still there */
	CHECK(region_alloc(&r, &off) == 0 && !region_is_arena(&r, off), "head");
	CHECK(r.head_blocks == 1, "head block");
	p = (char *)r.base + (uint64_t)b[1] * r.block;
	memset(p, 0x33, r.block);
	region_arena_block_release(&r, b[1]);
	CHECK(r.drops == b[1] && r.small_blocks == 2, "to drop, still counted");
	CHECK(region_arena_block_take(&r, &b[2]) == -ENOMEM, "not taken before dropped");
	region_arena_block_drop(&r, b[1]);		/* RSS: test_arena */
	r.drops = UINT32_MAX;
	region_arena_block_dropped(&r, b[1]);
	CHECK(r.small_blocks == 1, "released");
	CHECK(region_arena_block_take(&r, &b[2]) == 0 && b[2] == b[1], "lowest block reused");
	region_close(&r);

	/* --sub-memory 0: segments are charged to --memory */
	cfg = config(4 << 20, 0);
	CHECK(region_open(&r, &cfg, err, sizeof(err)) == 0, "%s", err);
	CHECK(region_arena_block_take(&r, &b[0]) == 0, "no sub-memory");
	CHECK(r.head_blocks == 1 && r.small_blocks == 0, "charged to memory");
	CHECK(region_alloc(&r, &off) == 0, "a head block too");
	CHECK(region_arena_block_take(&r, &b[1]) == -ENOMEM, "memory full");
	region_arena_block_release(&r, b[0]);
	region_arena_block_drop(&r, b[0]);
	region_arena_block_dropped(&r, b[0]);
	CHECK(r.head_blocks == 1, "segment back");
	region_close(&r);
}

/* Nobody holding the region's fd can write it, map it writable or resize
 * it; the engine's mapping still writes. */
static void sealed(void)
{
	const int want = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL |
			 F_SEAL_FUTURE_WRITE;
	struct gs_config cfg = config(4 << 20, 0);
	struct region r;
	char err[256], path[64];
	void *p;
	int fd;

	CHECK(region_open(&r, &cfg, err, sizeof(err)) == 0, "%s", err);
	printf("region on %s pages\n", r.hugetlb ? "huge" : "normal");
	CHECK((fcntl(r.fd, F_GET_SEALS) & want) == want, "seals %#x",
	      fcntl(r.fd, F_GET_SEALS));
	memset(r.base, 0x5a, r.size);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", r.fd);
	fd = open(path, O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0, "reopen: %s", strerror(errno));
	p = mmap(NULL, r.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(p == MAP_FAILED && errno == EPERM, "writable mapping of a reopen");
	CHECK(pwrite(fd, "x", 1, 0) < 0, "write through a reopen");
	CHECK(ftruncate(fd, 0) < 0 && errno == EPERM, "shrink");
	CHECK(ftruncate(fd, r.size * 2) < 0 && errno == EPERM, "grow");
	p = mmap(NULL, r.size, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(p != MAP_FAILED && ((unsigned char *)p)[r.size - 1] == 0x5a,
	      "read-only mapping sees the engine's bytes");
	if (p != MAP_FAILED)
		munmap(p, r.size);
	close(fd);
	region_close(&r);
}

/* A field of /proc/self/status, kilobytes. */
static uint64_t status_kb(const char *field)
{
	char line[256];
	size_t n = strlen(field);
	uint64_t kb = 0;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':')
			kb = strtoull(line + n + 1, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

/* Blocks are locked and resident only once used: a region of 64M locks
 * nothing at open, one block per block a slot is taken from (lowest
 * first, so freed blocks are reused before new ones are touched). */
static void lazy(void)
{
	struct gs_config cfg = config(64 << 20, 0);
	struct region r;
	char err[256];
	uint64_t off[9], lck0 = status_kb("VmLck"), shm0 = status_kb("RssShmem");

	cfg.no_mlock = false;
	if (region_open(&r, &cfg, err, sizeof(err)) < 0) {
		printf("lazy: skip: %s\n", err);	/* no RLIMIT_MEMLOCK room */
		return;
	}
	CHECK(status_kb("VmLck") == lck0, "locked at open: %llu KB",
	      (unsigned long long)(status_kb("VmLck") - lck0));
	CHECK(status_kb("RssShmem") - shm0 < 1024, "resident at open: %llu KB",
	      (unsigned long long)(status_kb("RssShmem") - shm0));
	for (int i = 0; i < 9; i++)		/* eight per block, then one */
		CHECK(region_alloc(&r, &off[i]) == 0, "alloc %d", i);
	CHECK(status_kb("VmLck") - lck0 == 2 * 2048, "two blocks locked: %llu KB",
	      (unsigned long long)(status_kb("VmLck") - lck0));
	memset((char *)r.base + off[0], 1, 4096);
	CHECK(status_kb("RssShmem") - shm0 >= 4 &&
	      status_kb("RssShmem") - shm0 < 2 * 2048 + 1024,
	      "resident as touched: %llu KB",
	      (unsigned long long)(status_kb("RssShmem") - shm0));
	region_free(&r, off[8]);	/* the second block is free again */
	CHECK(region_alloc(&r, &off[8]) == 0 && off[8] / r.block == 1,
	      "the lowest free block is reused");
	CHECK(status_kb("VmLck") - lck0 == 2 * 2048, "still two locked: %llu KB",
	      (unsigned long long)(status_kb("VmLck") - lck0));
	region_close(&r);
	CHECK(status_kb("VmLck") == lck0, "unlocked at close");
}

int main(void)
{
	log_level = LOG_WARN;
	heads();
	segments();
	sealed();
	lazy();
	return check_result();
}
