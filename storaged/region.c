/*
 * The RAM region: one memfd (hugetlb-backed when huge pages are reserved)
 * carved into --block blocks.  A block serves one slot class at a time:
 * full heads take --ram-head slots, smaller objects take power-of-two
 * slots from 64 bytes up.  Head blocks are charged to --memory, small ones
 * to --sub-memory (to --memory when that is 0).  All calls expect the engine lock.
 * The memfd is sealed (seal_region): only the engine's mapping writes it.
 */
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine.h"
#include "log.h"

#define MIN_SLOT 64u
#define HUGE_PAGE (2u << 20)
#define REGION_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | \
		      F_SEAL_SEAL)

/*
 * Seals the region once the engine's own writable mapping exists: nobody
 * holding the fd (nginx workers get an O_RDONLY reopen of it) can map it
 * writable again, write it, punch holes in it or resize it.  Kernels
 * before 5.1 lack F_SEAL_FUTURE_WRITE: then only resizing is sealed.
 */
static int seal_region(struct region *r)
{
	if (fcntl(r->fd, F_ADD_SEALS, REGION_SEALS) == 0)
		return 0;
	if (errno != EINVAL)
		return -errno;
	log_warn("RAM region: this kernel cannot seal it against writes (F_SEAL_FUTURE_WRITE, Linux 5.1): only its size is sealed");
	if (fcntl(r->fd, F_ADD_SEALS, REGION_SEALS & ~F_SEAL_FUTURE_WRITE) < 0)
		return -errno;
	return 0;
}

static int map_region(struct region *r, bool hugetlb)
{
	unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING |
			 (hugetlb ? MFD_HUGETLB : 0);
	int err;

	r->fd = memfd_create("goblin-heads", flags);
	if (r->fd < 0)
		return -errno;
	if (ftruncate(r->fd, r->size) < 0)
		goto out_close;
	r->base = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       r->fd, 0);
	if (r->base == MAP_FAILED)
		goto out_close;
	err = seal_region(r);
	if (err)
		goto out_unmap;
	r->hugetlb = hugetlb;
	return 0;

out_unmap:
	munmap(r->base, r->size);
	errno = -err;
out_close:
	err = -errno;
	close(r->fd);
	r->fd = -1;
	r->base = NULL;
	return err;
}

static void setup_classes(struct region *r, uint64_t ram_head)
{
	uint64_t slot;

	r->nclasses = 0;
	for (slot = MIN_SLOT; slot < ram_head && r->nclasses < REGION_CLASSES - 1;
	     slot *= 2) {
		r->cls[r->nclasses++] = (struct region_class){
			.slot = slot, .small = true };
	}
	r->cls[r->nclasses++] = (struct region_class){ .slot = ram_head };
	for (int i = 0; i < r->nclasses; i++) {
		r->cls[i].nslots = r->block / r->cls[i].slot;
		r->cls[i].partial = UINT32_MAX;
	}
}

/*
 * With --numa, binds each region's arena, and the small blocks after them,
 * to its real node (numa_topo.h); else the whole region to numa_node, if
 * any.
 */
static void bind_region(struct region *r, const struct gs_config *cfg)
{
	const struct numa_topo *t = &r->numa;
	uint64_t arena = (uint64_t)t->arena_blocks * r->block;

	if (!t->nnodes) {
		if (cfg->numa_node >= 0)
			numa_tonode_memory(r->base, r->size, cfg->numa_node);
		return;
	}
	for (int i = 0; i < t->nnodes; i++)
		if (t->real[i] >= 0)
			numa_tonode_memory((char *)r->base + i * arena, arena,
					   t->real[i]);
	if (r->small_blocks_max && t->real[0] >= 0)
		numa_tonode_memory((char *)r->base + t->nnodes * arena,
				   (uint64_t)r->small_blocks_max * r->block,
				   t->real[0]);
	log_info("NUMA: %d %snodes, region zero on node %d (serving node %d): %d arenas of %llu bytes",
		 t->nnodes, t->simulated ? "simulated " : "", t->order[0],
		 t->local, t->nnodes, (unsigned long long)arena);
}

int region_open(struct region *r, const struct gs_config *cfg,
		char *err, size_t errlen)
{
	int ret;

	memset(r, 0, sizeof(*r));
	ret = numa_topo_setup(&r->numa, cfg, err, errlen);
	if (ret < 0)
		return ret;
	r->block = cfg->block;
	r->head_blocks_max = cfg->memory / cfg->block;
	if (r->numa.nnodes) {
		if (r->head_blocks_max == 0) {
			snprintf(err, errlen, "`memory` must hold at least one `block` per NUMA node");
			return -EINVAL;
		}
		r->numa.arena_blocks = r->head_blocks_max;
		r->head_blocks_max *= r->numa.nnodes;
	}
	r->small_blocks_max = cfg->sub_memory / cfg->block;
	r->nblocks = r->head_blocks_max + r->small_blocks_max;
	r->size = (uint64_t)r->nblocks * r->block;
	if (r->nblocks == 0) {
		snprintf(err, errlen, "`memory` must hold at least one `block`");
		return -EINVAL;
	}
	setup_classes(r, cfg->ram_head);

	ret = -EINVAL;
	if (r->block % HUGE_PAGE == 0)
		ret = map_region(r, true);
	if (ret < 0) {
		if (r->block % HUGE_PAGE == 0)
			log_info("huge pages unavailable for the RAM region (%s; reserve them in /proc/sys/vm/nr_hugepages): using normal pages with MADV_HUGEPAGE",
				 strerror(-ret));
		ret = map_region(r, false);
		if (ret < 0) {
			snprintf(err, errlen, "RAM region of %llu bytes: %s",
				 (unsigned long long)r->size, strerror(-ret));
			return ret;
		}
		madvise(r->base, r->size, MADV_HUGEPAGE);
	}
	bind_region(r, cfg);
	if (cfg->mlock && mlock(r->base, r->size) < 0) {
		ret = -errno;
		snprintf(err, errlen, "mlock of the %llu-byte RAM region: %s (raise RLIMIT_MEMLOCK or do not lock it: `mlock`)",
			 (unsigned long long)r->size, strerror(errno));
		goto out_unmap;
	}
	r->blocks = calloc(r->nblocks, sizeof(*r->blocks));
	if (!r->blocks) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory for block table");
		goto out_unmap;
	}
	for (uint32_t i = 0; i < r->nblocks; i++)
		r->blocks[i].cls = -1;
	log_info("RAM region: %llu bytes in %u blocks of %llu (%s pages%s)",
		 (unsigned long long)r->size, r->nblocks,
		 (unsigned long long)r->block, r->hugetlb ? "huge" : "normal",
		 cfg->mlock ? ", locked" : "");
	return 0;

out_unmap:
	munmap(r->base, r->size);
	close(r->fd);
	r->fd = -1;
	return ret;
}

void region_close(struct region *r)
{
	free(r->numa.swap_buf);
	r->numa.swap_buf = NULL;
	if (!r->blocks)
		return;
	for (uint32_t i = 0; i < r->nblocks; i++)
		free(r->blocks[i].freemap);
	free(r->blocks);
	r->blocks = NULL;
	munmap(r->base, r->size);
	close(r->fd);
	r->fd = -1;
}

int region_class_for(const struct region *r, uint64_t len)
{
	for (int i = 0; i < r->nclasses; i++)
		if (len <= r->cls[i].slot)
			return i;
	return -1;
}

static void partial_push(struct region *r, uint32_t b)
{
	struct region_block *blk = &r->blocks[b];
	struct region_class *c = &r->cls[blk->cls];

	blk->next_partial = c->partial;
	blk->on_partial = true;
	c->partial = b;
}

static void partial_remove(struct region *r, uint32_t b)
{
	struct region_block *blk = &r->blocks[b];
	uint32_t *link = &r->cls[blk->cls].partial;

	while (*link != b)
		link = &r->blocks[*link].next_partial;
	*link = blk->next_partial;
	blk->on_partial = false;
}

/* A free block, the first from the hint on: UINT32_MAX when none. */
static uint32_t any_block(const struct region *r)
{
	for (uint32_t b = 0; b < r->nblocks; b++)
		if (r->blocks[(r->free_block + b) % r->nblocks].cls < 0)
			return (r->free_block + b) % r->nblocks;
	return UINT32_MAX;
}

/* With --numa: the lowest free block of the arenas (population order:
 * region zero first), or of the small blocks after them when <small>;
 * UINT32_MAX when none. */
static uint32_t numa_block(const struct region *r, bool small)
{
	uint32_t b = small ? r->head_blocks_max : 0;
	uint32_t end = small ? r->nblocks : r->head_blocks_max;

	for (; b < end; b++)
		if (r->blocks[b].cls < 0)
			return b;
	return UINT32_MAX;
}

static int block_take(struct region *r, int cls)
{
	struct region_class *c = &r->cls[cls];
	bool small = c->small && r->small_blocks_max > 0;
	uint32_t *count = small ? &r->small_blocks : &r->head_blocks;
	uint32_t max = small ? r->small_blocks_max : r->head_blocks_max;
	struct region_block *blk;
	size_t words = (c->nslots + 63) / 64;
	uint32_t b;

	if (*count >= max)
		return -ENOMEM;
	if (r->numa.nnodes)
		b = numa_block(r, small);
	else
		b = any_block(r);
	if (b == UINT32_MAX)
		return -ENOMEM;
	blk = &r->blocks[b];
	blk->freemap = calloc(words, sizeof(uint64_t));
	if (!blk->freemap)
		return -ENOMEM;
	for (uint32_t s = 0; s < c->nslots; s++)
		blk->freemap[s / 64] |= 1ull << (s % 64);
	blk->cls = cls;
	blk->hits = 0;
	blk->small = small;
	blk->nfree = c->nslots;
	(*count)++;
	r->free_block = (b + 1) % r->nblocks;
	partial_push(r, b);
	return 0;
}

int region_alloc(struct region *r, int cls, uint64_t *off)
{
	struct region_class *c = &r->cls[cls];
	struct region_block *blk;
	uint32_t b;

	if (c->partial == UINT32_MAX && block_take(r, cls) < 0)
		return -ENOMEM;
	b = c->partial;
	blk = &r->blocks[b];
	for (size_t w = 0; ; w++) {
		if (!blk->freemap[w])
			continue;
		uint32_t s = w * 64 + __builtin_ctzll(blk->freemap[w]);

		blk->freemap[w] &= ~(1ull << (s % 64));
		if (--blk->nfree == 0)
			partial_remove(r, b);
		*off = (uint64_t)b * r->block + (uint64_t)s * c->slot;
		r->used += c->slot;
		return 0;
	}
}

void region_free(struct region *r, uint64_t off)
{
	uint32_t b = off / r->block;
	struct region_block *blk = &r->blocks[b];
	struct region_class *c = &r->cls[blk->cls];
	uint32_t s = (off % r->block) / c->slot;

	blk->freemap[s / 64] |= 1ull << (s % 64);
	blk->nfree++;
	r->used -= c->slot;
	if (blk->nfree == c->nslots) {
		if (blk->on_partial)
			partial_remove(r, b);
		if (blk->small)
			r->small_blocks--;
		else
			r->head_blocks--;
		free(blk->freemap);
		blk->freemap = NULL;
		blk->cls = -1;
		return;
	}
	if (!blk->on_partial)
		partial_push(r, b);
}

bool region_shares_heads(const struct region *r, int cls)
{
	return !(r->cls[cls].small && r->small_blocks_max > 0);
}

uint64_t region_slot_size(const struct region *r, uint64_t off)
{
	return r->cls[r->blocks[off / r->block].cls].slot;
}

void region_hit(struct region *r, uint64_t off)
{
	struct numa_topo *t = &r->numa;
	uint32_t i;

	if (!t->nnodes)
		return;
	i = off / r->block / t->arena_blocks;
	if (i >= (uint32_t)t->nnodes)
		i = 0;			/* a small block: on region zero's node */
	t->hits[i]++;
	if (r->blocks[off / r->block].hits < UINT32_MAX - NUMA_HIT_WEIGHT)
		r->blocks[off / r->block].hits += NUMA_HIT_WEIGHT;
}

uint64_t region_swap_blocks(struct region *r, uint32_t a, uint32_t b)
{
	struct region_block *ba = &r->blocks[a], *bb = &r->blocks[b], tmp;
	char *pa = (char *)r->base + (uint64_t)a * r->block;
	char *pb = (char *)r->base + (uint64_t)b * r->block;
	bool free_b = bb->cls < 0;

	if (ba->on_partial)
		partial_remove(r, a);
	if (bb->on_partial)
		partial_remove(r, b);
	if (free_b) {
		memcpy(pb, pa, r->block);
	} else {
		memcpy(r->numa.swap_buf, pb, r->block);
		memcpy(pb, pa, r->block);
		memcpy(pa, r->numa.swap_buf, r->block);
	}
	tmp = *ba;
	*ba = *bb;
	*bb = tmp;
	if (ba->cls >= 0 && ba->nfree)
		partial_push(r, a);
	if (bb->cls >= 0 && bb->nfree)
		partial_push(r, b);
	return free_b ? r->block : 2 * r->block;
}
