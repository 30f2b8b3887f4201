/*
 * The RAM region's slot allocator: heads take fixed --ram-head slots (eight
 * per 2M block), small objects power-of-two slots charged to --sub-memory,
 * budgets are honoured, freed blocks return, slots never overlap.  The
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
#include "options.h"


static struct gs_config config(uint64_t memory, uint64_t sub)
{
	struct gs_config cfg;

	options_config_defaults(&cfg);
	cfg.memory = memory;
	cfg.sub_memory = sub;
	cfg.mlock = false;
	return cfg;
}

static void heads(void)
{
	struct gs_config cfg = config(8 << 20, 2 << 20);
	struct region r;
	char err[256];
	uint64_t off[40];
	int cls, n = 0;

	CHECK(region_open(&r, &cfg, err, sizeof(err)) == 0, "%s", err);
	cls = region_class_for(&r, 256 << 10);
	CHECK(r.cls[cls].slot == 256 << 10 && r.cls[cls].nslots == 8,
	      "head class: slot %llu x %u", (unsigned long long)r.cls[cls].slot,
	      r.cls[cls].nslots);
	while (n < 40 && region_alloc(&r, cls, &off[n]) == 0)
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

static void small(void)
{
	struct gs_config cfg = config(2 << 20, 2 << 20);
	struct region r;
	char err[256];
	uint64_t off, first;
	int n = 0;

	CHECK(region_open(&r, &cfg, err, sizeof(err)) == 0, "%s", err);
	CHECK(r.cls[region_class_for(&r, 1)].slot == 64, "smallest slot");
	CHECK(r.cls[region_class_for(&r, 65)].slot == 128, "65 -> 128");
	CHECK(r.cls[region_class_for(&r, 100000)].slot == 128 << 10, "100000 -> 128K");
	CHECK(region_alloc(&r, region_class_for(&r, 100), &first) == 0, "small");
	CHECK(r.small_blocks == 1 && r.head_blocks == 0, "charged to sub-memory");
	/* sub-memory is one block: a second class can't get one */
	CHECK(region_alloc(&r, region_class_for(&r, 5000), &off) == -ENOMEM,
	      "second small class over budget");
	/* the head budget is still there */
	CHECK(region_alloc(&r, region_class_for(&r, 256 << 10), &off) == 0, "head");
	while (region_alloc(&r, region_class_for(&r, 100), &off) == 0)
		n++;
	CHECK(n == (2 << 20) / 128 - 1, "128-byte slots in a block: %d", n);
	region_close(&r);

	/* --sub-memory 0: small objects are charged to --memory */
	cfg = config(2 << 20, 0);
	CHECK(region_open(&r, &cfg, err, sizeof(err)) == 0, "%s", err);
	CHECK(region_alloc(&r, region_class_for(&r, 100), &off) == 0, "no sub-memory");
	CHECK(r.head_blocks == 1, "charged to memory");
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

int main(void)
{
	log_level = LOG_WARN;
	heads();
	small();
	sealed();
	return check_result();
}
