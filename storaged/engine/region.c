/*
 * The RAM region: one memfd (hugetlb-backed when huge pages are reserved)
 * carved into --block blocks: [0, head_blocks_max) for --memory, then
 * [head_blocks_max, nblocks) for --sub-memory.  A head block holds
 * --ram-head slots; an arena block (arena.c) holds the objects
 * smaller than --ram-head, packed.  A block is locked (mlock, as its pages
 * are touched) when first taken, so a block never used is neither locked
 * nor resident; head blocks stay locked once used, lowest first (reused
 * before new ones are touched).  Arena blocks come out of the --sub-memory
 * blocks (out of --memory's when that is 0) and are unlocked and dropped
 * from the mapping when given back, so the arena's resident memory tracks
 * its use.
 * The memfd is sealed (seal_region): only the engine's mapping writes it,
 * and so nobody can punch holes in it either (F_SEAL_FUTURE_WRITE makes
 * fallocate(PUNCH_HOLE) fail with EPERM): a given-back arena block leaves the
 * process's mapping (RSS) but its pages stay in the memfd until reused,
 * and arena blocks are taken lowest block first so reuse comes before growth.
 * Before anything is locked, region_check_limits() refuses a region larger
 * than the machine, the memory cgroup or what the process may lock.
 * All calls expect the engine lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arena.h"
#include "engine.h"
#include "log.h"
#include "region.h"

#define HUGE_PAGE (2u << 20)
#define MIB (1ull << 20)
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

/* ---- what the region may take: MemTotal, the memory cgroup, RLIMIT_MEMLOCK ---- */

/* A bound on the region and where it comes from. */
struct mem_bound {
	uint64_t bytes;			/* UINT64_MAX: none found */
	char src[PATH_MAX + 64];
};

static void bound_lower(struct mem_bound *b, uint64_t bytes, const char *src)
{
	if (bytes >= b->bytes)
		return;
	b->bytes = bytes;
	snprintf(b->src, sizeof(b->src), "%s", src);
}

/* A number of bytes, or "max" (none), alone in the file at <path>. */
static int read_limit(const char *path, uint64_t *v)
{
	char buf[64];
	FILE *f = fopen(path, "re");
	int ret = -EINVAL;

	if (!f)
		return -errno;
	if (fgets(buf, sizeof(buf), f)) {
		char *end;

		if (!strncmp(buf, "max", 3)) {
			*v = UINT64_MAX;
			ret = 0;
		} else {
			errno = 0;
			*v = strtoull(buf, &end, 10);
			if (!errno && end != buf)
				ret = 0;
		}
	}
	fclose(f);
	return ret;
}

static void memtotal_bound(struct mem_bound *b)
{
	unsigned long long kb;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
			bound_lower(b, kb << 10, "MemTotal, /proc/meminfo");
	fclose(f);
}

/* Whether the comma-separated <list> holds <word>. */
static bool list_has(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; p; p = strchr(p, ',')) {
		p += *p == ',';
		if (!strncmp(p, word, n) && (p[n] == ',' || !p[n]))
			return true;
	}
	return false;
}

/* This process's path in the cgroup v1 hierarchy of the memory controller
 * (<v2> false) or in the v2 tree, from /proc/self/cgroup. */
static int cgroup_path(bool v2, char *path, size_t len)
{
	char line[4096];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int ret = -ENOENT;

	if (!f)
		return -ENOENT;
	while (ret && fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':');
		char *p = ctl ? strchr(ctl + 1, ':') : NULL;

		if (!p)
			continue;
		*ctl++ = '\0';
		*p++ = '\0';
		p[strcspn(p, "\n")] = '\0';
		if (v2 ? !strcmp(line, "0") && !*ctl : list_has(ctl, "memory")) {
			snprintf(path, len, "%s", p);
			ret = 0;
		}
	}
	fclose(f);
	return ret;
}

/*
 * Where this process's cgroup is mounted: <point>, the mount of that
 * hierarchy (v1 with the memory controller, or cgroup2), and <dir>, its
 * own directory under it.  0 or -ENOENT.
 */
static int cgroup_dir(bool v2, char *point, char *dir, size_t len)
{
	char line[4096], path[PATH_MAX], root[PATH_MAX], fstype[64], opts[1024];
	FILE *f;
	int ret = -ENOENT;

	if (cgroup_path(v2, path, sizeof(path)))
		return -ENOENT;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -ENOENT;
	while (ret && fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - ");
		size_t rl;

		if (!sep || sscanf(line, "%*s %*s %*s %4095s %4095s", root,
				   point) != 2 ||
		    sscanf(sep + 3, "%63s %*s %1023s", fstype, opts) != 2)
			continue;
		if (v2 ? strcmp(fstype, "cgroup2") :
			 strcmp(fstype, "cgroup") || !list_has(opts, "memory"))
			continue;
		rl = strcmp(root, "/") ? strlen(root) : 0;
		if (strncmp(path, root, rl))
			continue;
		if ((size_t)snprintf(dir, len, "%s%s", point, path + rl) < len)
			ret = 0;
	}
	fclose(f);
	return ret;
}

/* The lowest <file> (memory.limit_in_bytes, memory.max) of the process's
 * cgroup and those above it up to the mount: a parent's limit binds its
 * children. */
static void cgroup_bound(struct mem_bound *b, bool v2, const char *file)
{
	char point[PATH_MAX], dir[PATH_MAX], path[PATH_MAX + 32];
	uint64_t v = UINT64_MAX;
	size_t top;

	if (cgroup_dir(v2, point, dir, sizeof(dir)))
		return;
	top = strlen(point);
	for (;;) {
		char *slash;

		snprintf(path, sizeof(path), "%s/%s", dir, file);
		if (read_limit(path, &v) == 0)
			bound_lower(b, v, path);
		slash = strrchr(dir, '/');
		if (strlen(dir) <= top || !slash || slash < dir + top)
			break;
		*slash = '\0';
	}
}

/* Whether CAP_IPC_LOCK is in the effective set: mlock then ignores
 * RLIMIT_MEMLOCK. */
static bool can_lock_any(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, data) < 0)
		return false;
	return data[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &
	       CAP_TO_MASK(CAP_IPC_LOCK);
}

static const char *mib_str(uint64_t v, char *buf, size_t len)
{
	if (v % MIB)
		snprintf(buf, len, "%.1f MiB", (double)v / MIB);
	else
		snprintf(buf, len, "%llu MiB", (unsigned long long)(v / MIB));
	return buf;
}

/*
 * Refuses (-EINVAL, the reason in <err>) a region of r->size bytes larger
 * than MemTotal, than the memory cgroup's limit (v1 memory.limit_in_bytes,
 * v2 memory.max, up the tree; not for hugetlb pages, which the memory
 * controller does not charge) or, when it is to be locked without
 * CAP_IPC_LOCK, than RLIMIT_MEMLOCK: locking more than the machine has
 * lets the OOM killer pick a process.  The first bound passed is named.
 */
static int region_check_limits(const struct region *r,
			       const struct gs_config *cfg, char *err,
			       size_t errlen)
{
	struct mem_bound b = { .bytes = UINT64_MAX };
	char what[160], need[32], have[32];
	struct rlimit rl;
	const char *why = NULL;

	if (r->numa.nnodes)
		snprintf(have, sizeof(have), " per NUMA node x %d", r->numa.nnodes);
	else
		have[0] = '\0';
	snprintf(what, sizeof(what), "the RAM region (`memory`%s + `sub_memory`: %s)",
		 have, mib_str(r->size, need, sizeof(need)));
	memtotal_bound(&b);
	if (r->size > b.bytes) {
		why = "is larger than the machine's memory";
		goto out_refuse;
	}
	if (!r->hugetlb) {
		cgroup_bound(&b, false, "memory.limit_in_bytes");
		cgroup_bound(&b, true, "memory.max");
		if (r->size > b.bytes) {
			why = "is larger than its memory cgroup allows";
			goto out_refuse;
		}
	}
	if (cfg->no_mlock || can_lock_any() ||
	    getrlimit(RLIMIT_MEMLOCK, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
	    r->size <= rl.rlim_cur)
		return 0;
	snprintf(err, errlen, "%s is more than this process may lock (%s, RLIMIT_MEMLOCK without CAP_IPC_LOCK): raise LimitMEMLOCK (systemd) or ulimit -l, or pass `no_mlock`",
		 what, mib_str(rl.rlim_cur, have, sizeof(have)));
	return -EINVAL;

out_refuse:
	snprintf(err, errlen, "%s %s (%s, %s)", what, why,
		 mib_str(b.bytes, have, sizeof(have)), b.src);
	return -EINVAL;
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

static void setup_classes(struct region *r, uint64_t head_slot)
{
	r->cls[REGION_HEAD] = (struct region_class){
		.slot = head_slot, .nslots = r->block / head_slot,
		.partial = UINT32_MAX };
	r->cls[REGION_ARENA] = (struct region_class){
		.slot = 1, .nslots = r->block, .partial = UINT32_MAX };
}

/*
 * With --numa, binds each node share to its real node (numa_topo.h), and
 * the small blocks after them to the home share's; else the whole region
 * to cfg->numa's node, if any.
 */
static void bind_region(struct region *r, const struct gs_config *cfg)
{
	const struct numa_topo *t = &r->numa;
	uint64_t share = (uint64_t)t->share_blocks * r->block;

	if (!t->nnodes) {
		if (cfg->numa >= 0)
			numa_tonode_memory(r->base, r->size, cfg->numa);
		return;
	}
	for (int i = 0; i < t->nnodes; i++)
		if (t->real[i] >= 0)
			numa_tonode_memory((char *)r->base + i * share, share,
					   t->real[i]);
	if (r->small_blocks_max && t->real[0] >= 0)
		numa_tonode_memory((char *)r->base + t->nnodes * share,
				   (uint64_t)r->small_blocks_max * r->block,
				   t->real[0]);
	log_info("NUMA: %d %snodes, region zero on node %d (serving node %d): %d arenas of %llu bytes",
		 t->nnodes, t->simulated ? "simulated " : "", t->order[0],
		 t->local, t->nnodes, (unsigned long long)share);
}

int region_open(struct region *r, const struct gs_config *cfg,
		char *err, size_t errlen)
{
	int ret;

	memset(r, 0, sizeof(*r));
	ret = numa_topo_setup(&r->numa, cfg, err, errlen);
	if (ret < 0)
		return ret;
	if (cfg->block > (1u << 31)) {	/* arena offsets are 32-bit */
		snprintf(err, errlen, "`block` must be at most 2G");
		return -EINVAL;
	}
	r->block = cfg->block;
	r->head_blocks_max = cfg->memory / cfg->block;
	if (r->numa.nnodes) {
		if (r->head_blocks_max == 0) {
			snprintf(err, errlen, "`memory` must hold at least one `block` per NUMA node");
			return -EINVAL;
		}
		r->numa.share_blocks = r->head_blocks_max;
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
	ret = region_check_limits(r, cfg, err, errlen);
	if (ret < 0)
		goto out_unmap;
	bind_region(r, cfg);
	r->mlock = !cfg->no_mlock;
	r->blocks = calloc(r->nblocks, sizeof(*r->blocks));
	if (!r->blocks) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory for block table");
		goto out_unmap;
	}
	for (uint32_t i = 0; i < r->nblocks; i++)
		r->blocks[i].cls = -1;
	r->arena.blocks = calloc(r->nblocks, sizeof(*r->arena.blocks));
	if (!r->arena.blocks) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory for the arena's segment table");
		goto out_blocks;
	}
	r->arena.cur = r->arena.dst = r->arena.victim = UINT32_MAX;
	memset(r->arena.skip, 0xff, sizeof(r->arena.skip));
	r->drops = UINT32_MAX;
	log_info("RAM region: %llu bytes in %u blocks of %llu (%s pages%s)",
		 (unsigned long long)r->size, r->nblocks,
		 (unsigned long long)r->block, r->hugetlb ? "huge" : "normal",
		 !cfg->no_mlock ? ", blocks locked as used" : "");
	return 0;

out_blocks:
	free(r->blocks);
	r->blocks = NULL;
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
	arena_stop(r);
	free(r->arena.blocks);
	r->arena.blocks = NULL;
	for (uint32_t i = 0; i < r->nblocks; i++) {
		free(r->blocks[i].freemap);
		free(r->blocks[i].owner);
	}
	free(r->blocks);
	r->blocks = NULL;
	munmap(r->base, r->size);
	close(r->fd);
	r->fd = -1;
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

/* The lowest free block of [<from>, <to>): UINT32_MAX when none.  Lowest
 * first: with --numa, the home share fills first; arena blocks reuse
 * pages the memfd already holds before touching new ones. */
static uint32_t low_block(const struct region *r, uint32_t from, uint32_t to)
{
	for (uint32_t b = from; b < to; b++)
		if (r->blocks[b].cls < 0 && !r->blocks[b].dropping)
			return b;
	return UINT32_MAX;
}

/* Locks block <b> once, page by page as they are touched (no 2M of page
 * faults under the engine lock): a block never used is neither locked nor
 * resident. */
static void block_lock(struct region *r, uint32_t b)
{
	struct region_block *blk = &r->blocks[b];
	char *p = (char *)r->base + (uint64_t)b * r->block;

	if (!r->mlock || blk->locked)
		return;
	if (mlock2(p, r->block, MLOCK_ONFAULT) == 0 ||
	    (errno == EINVAL && mlock(p, r->block) == 0))
		blk->locked = true;
	else
		log_warn("RAM block %u: mlock: %s (it stays unlocked)", b,
			 strerror(errno));
}

static int block_take(struct region *r)
{
	const struct region_class *c = &r->cls[REGION_HEAD];
	struct region_block *blk;
	size_t words = (c->nslots + 63) / 64;
	uint32_t b;

	if (r->head_blocks >= r->head_blocks_max)
		return -ENOMEM;
	b = low_block(r, 0, r->head_blocks_max);
	if (b == UINT32_MAX)
		return -ENOMEM;
	blk = &r->blocks[b];
	blk->freemap = calloc(words, sizeof(uint64_t));
	if (!blk->freemap)
		return -ENOMEM;
	if (r->numa.nnodes >= 2 &&
	    !(blk->owner = calloc(c->nslots, sizeof(*blk->owner)))) {
		free(blk->freemap);
		blk->freemap = NULL;
		return -ENOMEM;
	}
	blk->owned = 0;
	for (uint32_t s = 0; s < c->nslots; s++)
		blk->freemap[s / 64] |= 1ull << (s % 64);
	blk->cls = REGION_HEAD;
	block_lock(r, b);
	blk->hits = 0;
	blk->small = false;
	blk->nfree = c->nslots;
	r->head_blocks++;
	partial_push(r, b);
	return 0;
}

int region_alloc(struct region *r, uint64_t *off)
{
	struct region_class *c = &r->cls[REGION_HEAD];
	struct region_block *blk;
	uint32_t b;

	if (c->partial == UINT32_MAX && block_take(r) < 0)
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
	struct region_class *c = &r->cls[REGION_HEAD];
	uint32_t s = (off % r->block) / c->slot;

	region_owner_set(r, off, NULL);
	blk->freemap[s / 64] |= 1ull << (s % 64);
	blk->nfree++;
	r->used -= c->slot;
	if (blk->nfree == c->nslots) {
		if (blk->on_partial)
			partial_remove(r, b);
		r->head_blocks--;
		free(blk->freemap);
		blk->freemap = NULL;
		free(blk->owner);
		blk->owner = NULL;
		blk->cls = -1;
		return;
	}
	if (!blk->on_partial)
		partial_push(r, b);
}

int region_arena_block_take(struct region *r, uint32_t *bp)
{
	bool small = !region_arena_shares_heads(r);
	uint32_t *count = small ? &r->small_blocks : &r->head_blocks;
	uint32_t max = small ? r->small_blocks_max : r->head_blocks_max;
	struct region_block *blk;
	uint32_t b;

	if (*count >= max)
		return -ENOMEM;
	b = small ? low_block(r, r->head_blocks_max, r->nblocks) :
		    low_block(r, 0, r->head_blocks_max);
	if (b == UINT32_MAX)
		return -ENOMEM;
	blk = &r->blocks[b];
	blk->cls = REGION_ARENA;
	blk->hits = 0;
	blk->small = small;
	blk->nfree = r->block;
	block_lock(r, b);
	(*count)++;
	*bp = b;
	return 0;
}

void region_arena_block_release(struct region *r, uint32_t b)
{
	struct region_block *blk = &r->blocks[b];

	blk->cls = -1;
	blk->dropping = true;
	blk->next_partial = r->drops;
	r->drops = b;
}

void region_arena_block_drop(struct region *r, uint32_t b)
{
	struct region_block *blk = &r->blocks[b];
	char *p = (char *)r->base + (uint64_t)b * r->block;

	if (!blk->small)
		return;			/* in --memory: stays locked */
	if (blk->locked)
		munlock(p, r->block);
	/* the sealed memfd keeps the pages (see the top) */
	madvise(p, r->block, MADV_DONTNEED);
}

void region_arena_block_dropped(struct region *r, uint32_t b)
{
	struct region_block *blk = &r->blocks[b];

	if (blk->small) {
		r->small_blocks--;
		blk->locked = false;
	} else {
		r->head_blocks--;
	}
	blk->dropping = false;
}

void region_owner_set(struct region *r, uint64_t off, struct gs_obj *obj)
{
	struct region_block *blk = &r->blocks[off / r->block];
	uint32_t s;

	if (!blk->owner || blk->cls != REGION_HEAD)
		return;
	s = (off % r->block) / r->cls[REGION_HEAD].slot;
	blk->owned += (obj != NULL) - (blk->owner[s] != NULL);
	blk->owner[s] = obj;
}

void region_hit(struct region *r, uint64_t off)
{
	struct numa_topo *t = &r->numa;
	uint32_t i;

	if (!t->nnodes)
		return;
	i = off / r->block / t->share_blocks;
	if (i >= (uint32_t)t->nnodes)
		i = 0;			/* a small block: on the home node */
	t->hits[i]++;
	if (r->blocks[off / r->block].hits < UINT32_MAX - NUMA_HIT_WEIGHT)
		r->blocks[off / r->block].hits += NUMA_HIT_WEIGHT;
}

uint64_t region_swap_blocks(struct region *r, uint32_t a, uint32_t b)
{
	struct region_block *ba = &r->blocks[a], *bb = &r->blocks[b], tmp;
	char *pa = (char *)r->base + (uint64_t)a * r->block;
	char *pb = (char *)r->base + (uint64_t)b * r->block;
	bool free_b = bb->cls < 0, la = ba->locked, lb = bb->locked;

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
	ba->locked = la;		/* locking is the memory's, not the bytes' */
	bb->locked = lb;
	block_lock(r, b);
	if (ba->cls >= 0 && ba->nfree)
		partial_push(r, a);
	if (bb->cls >= 0 && bb->nfree)
		partial_push(r, b);
	return free_b ? r->block : 2 * r->block;
}
