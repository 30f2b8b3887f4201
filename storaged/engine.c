/*
 * The engine: index (chained hash), object layout across tiers, CLOCK
 * eviction of whole objects, and the synchronous object calls of goblin.h.
 */
#include <errno.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "engine.h"
#include "log.h"

#define MONTH_SECONDS (60 * 60 * 24 * 30)

void gs_config_defaults(struct gs_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->memory = 256ull << 20;
	cfg->sub_memory = 64ull << 20;
	cfg->block = 2ull << 20;
	cfg->ram_head = 256ull << 10;
	cfg->ssd_prefix = 1ull << 20;
	cfg->ssd_size = 1ull << 30;
	cfg->hdd_size = 4ull << 30;
	cfg->stripe_unit = 1ull << 20;
	cfg->io_buffers = 4;
	cfg->io_streams = 8;
	cfg->mlock = true;
	cfg->max_object = 64ull << 20;
	cfg->admission_bytes = 64ull << 20;
	cfg->numa_node = -1;
	cfg->hash_power = 16;
}

int64_t gs_exptime(int64_t t)
{
	if (t == 0)
		return 0;
	if (t < 0)
		return 1;		/* long past: expired on arrival */
	if (t <= MONTH_SECONDS)
		return time(NULL) + t;
	return t;
}

static bool obj_dead(const struct gs_engine *e, const struct gs_obj *obj,
		     time_t now)
{
	if (obj->meta.exptime && obj->meta.exptime <= now)
		return true;
	return e->flush_at && e->flush_at <= now && obj->meta.mtime <= e->flush_at;
}

/* ---- layout ---- */

static enum gs_tier tier_at(const struct gs_engine *e, uint64_t off)
{
	const struct gs_config *c = &e->cfg;

	if (e->has_pool[GS_TIER_SSD] && e->has_pool[GS_TIER_HDD])
		return off < c->ram_head + c->ssd_prefix ? GS_TIER_SSD : GS_TIER_HDD;
	if (e->has_pool[GS_TIER_SSD])
		return GS_TIER_SSD;
	if (e->has_pool[GS_TIER_HDD])
		return GS_TIER_HDD;
	return GS_TIER_RAM;
}

static uint64_t tier_chunk(const struct gs_engine *e, enum gs_tier t)
{
	if (t == GS_TIER_SSD)
		return GS_SSD_CHUNK;
	if (t == GS_TIER_HDD)
		return GS_HDD_CHUNK;
	return e->cfg.ram_head;
}

/* Where the tier holding <off> ends (exclusive). */
static uint64_t tier_end(const struct gs_engine *e, uint64_t off, uint64_t size)
{
	const struct gs_config *c = &e->cfg;

	if (e->has_pool[GS_TIER_SSD] && e->has_pool[GS_TIER_HDD] &&
	    off < c->ram_head + c->ssd_prefix && c->ram_head + c->ssd_prefix < size)
		return c->ram_head + c->ssd_prefix;
	return size;
}

/* Fills <chunks> (when not NULL) for an object of <size>; returns count. */
static uint32_t layout(const struct gs_engine *e, uint64_t size,
		       struct chunk *chunks)
{
	uint64_t off = size < e->cfg.ram_head ? size : e->cfg.ram_head;
	uint32_t n = 0;

	while (off < size) {
		enum gs_tier t = tier_at(e, off);
		uint64_t end = tier_end(e, off, size);
		uint64_t len = tier_chunk(e, t);

		if (len > end - off)
			len = end - off;
		if (chunks)
			chunks[n] = (struct chunk){ .len = len, .tier = t };
		n++;
		off += len;
	}
	return n;
}

uint64_t engine_chunk_start(const struct gs_obj *obj, uint32_t i)
{
	uint64_t off = obj->meta.head_len;

	for (uint32_t k = 0; k < i; k++)
		off += obj->chunks[k].len;
	return off;
}

/* ---- records ---- */

static uint64_t rec_bytes(const struct gs_obj *obj)
{
	return sizeof(*obj) + obj->klen + obj->nchunks * sizeof(struct chunk);
}

static void rec_free(struct gs_engine *e, struct gs_obj *obj)
{
	if (obj->head)
		region_free(&e->region, obj->meta.head_off);
	for (uint32_t i = 0; i < obj->nchunks; i++) {
		struct chunk *c = &obj->chunks[i];

		if (c->addr == UINT64_MAX)
			continue;
		if (c->tier == GS_TIER_RAM)
			region_free(&e->region, c->addr);
		else
			pool_free(&e->pools[c->tier], c->addr, c->len);
	}
	free(obj);
}

void engine_unref(struct gs_engine *e, struct gs_obj *obj)
{
	if (--obj->refs == 0)
		rec_free(e, obj);
}

static uint64_t hash_key(const void *key, size_t klen)
{
	return XXH3_64bits(key, klen);
}

static struct gs_obj **bucket_of(struct gs_engine *e, const void *key,
				 size_t klen)
{
	return &e->buckets[hash_key(key, klen) & (e->nbuckets - 1)];
}

static struct gs_obj **find_slot(struct gs_engine *e, const void *key,
				 size_t klen)
{
	struct gs_obj **link = bucket_of(e, key, klen);

	for (; *link; link = &(*link)->hnext)
		if ((*link)->klen == klen && !memcmp((*link)->key, key, klen))
			return link;
	return link;
}

static void tier_gauges(struct gs_engine *e, const struct gs_obj *obj, int sign)
{
	static const size_t bytes_at[GS_TIERS] = {
		offsetof(struct gs_stats, ram_head_bytes),
		offsetof(struct gs_stats, ssd_bytes),
		offsetof(struct gs_stats, hdd_bytes),
	};
	static const size_t objects_at[GS_TIERS] = {
		offsetof(struct gs_stats, ram_head_objects),
		offsetof(struct gs_stats, ssd_objects),
		offsetof(struct gs_stats, hdd_objects),
	};

	for (int t = 0; t < GS_TIERS; t++) {
		uint64_t *b = (uint64_t *)((char *)&e->st + bytes_at[t]);
		uint64_t *o = (uint64_t *)((char *)&e->st + objects_at[t]);

		if (!obj->meta.tier_bytes[t])
			continue;
		__atomic_fetch_add(b, sign * obj->meta.tier_bytes[t], __ATOMIC_RELAXED);
		__atomic_fetch_add(o, (uint64_t)(int64_t)sign, __ATOMIC_RELAXED);
	}
	__atomic_fetch_add(&e->st.curr_items, (uint64_t)(int64_t)sign, __ATOMIC_RELAXED);
	__atomic_fetch_add(&e->st.bytes, sign * obj->meta.size, __ATOMIC_RELAXED);
	__atomic_fetch_add(&e->st.index_bytes, sign * rec_bytes(obj), __ATOMIC_RELAXED);
}

static void unlink_obj(struct gs_engine *e, struct gs_obj *obj)
{
	struct gs_obj **link = find_slot(e, obj->key, obj->klen);
	struct gs_obj *last;

	*link = obj->hnext;
	last = e->clock[--e->clock_len];
	e->clock[obj->clock_pos] = last;
	last->clock_pos = obj->clock_pos;
	obj->linked = false;
	tier_gauges(e, obj, -1);
	engine_unref(e, obj);
}

void engine_drop(struct gs_engine *e, struct gs_obj *obj)
{
	pthread_mutex_lock(&e->lock);
	if (obj->linked)
		unlink_obj(e, obj);
	pthread_mutex_unlock(&e->lock);
}

/* Evicts one object, CLOCK order; with <only_expired>, dead ones only.
 * Returns false when nothing could go. */
static bool evict_one(struct gs_engine *e, bool only_expired)
{
	time_t now = time(NULL);

	for (uint32_t step = 0; e->clock_len && step < 2 * e->clock_len + 2; step++) {
		struct gs_obj *obj;

		if (e->clock_hand >= e->clock_len)
			e->clock_hand = 0;
		obj = e->clock[e->clock_hand++];
		if (obj->refs > 1)
			continue;		/* pinned */
		if (obj_dead(e, obj, now)) {
			STAT_ADD(e, expired_unfetched, 1);
			unlink_obj(e, obj);
			return true;
		}
		if (only_expired)
			continue;
		if (obj->referenced) {
			obj->referenced = false;
			continue;
		}
		STAT_ADD(e, evictions, 1);
		unlink_obj(e, obj);
		return true;
	}
	return false;
}

static int alloc_ram(struct gs_engine *e, uint64_t len, uint64_t *off)
{
	int cls = region_class_for(&e->region, len);

	while (region_alloc(&e->region, cls, off) < 0)
		if (!evict_one(e, e->cfg.no_evict))
			return -ENOMEM;
	return 0;
}

static int alloc_disk(struct gs_engine *e, enum gs_tier t, uint64_t len,
		      uint64_t *addr)
{
	while (pool_alloc(&e->pools[t], len, addr) < 0)
		if (!evict_one(e, e->cfg.no_evict))
			return -ENOMEM;
	return 0;
}

int engine_new_record(struct gs_engine *e, const void *key, size_t klen,
		      uint64_t size, struct gs_obj **objp)
{
	uint32_t n = layout(e, size, NULL);
	struct gs_obj *obj;

	if (size > e->cfg.max_object)
		return -E2BIG;
	obj = calloc(1, sizeof(*obj) + round_up(klen, 8) + n * sizeof(struct chunk));
	if (!obj)
		return -ENOMEM;
	obj->chunks = (struct chunk *)(obj->key + round_up(klen, 8));
	memcpy(obj->key, key, klen);
	obj->klen = klen;
	obj->refs = 1;
	obj->nchunks = layout(e, size, obj->chunks);
	obj->meta.size = size;
	obj->meta.head_len = size < e->cfg.ram_head ? size : e->cfg.ram_head;
	obj->meta.tier_bytes[GS_TIER_RAM] = obj->meta.head_len;
	for (uint32_t i = 0; i < n; i++) {
		obj->chunks[i].addr = UINT64_MAX;
		obj->meta.tier_bytes[obj->chunks[i].tier] += obj->chunks[i].len;
	}
	*objp = obj;
	return 0;
}

int engine_reserve_part(struct gs_engine *e, struct gs_obj *obj, int64_t i)
{
	struct chunk *c;
	uint64_t addr;
	int ret;

	if (i < 0) {
		if (obj->head || !obj->meta.head_len)
			return 0;
		ret = alloc_ram(e, obj->meta.head_len, &obj->meta.head_off);
		if (ret == 0)
			obj->head = (char *)e->region.base + obj->meta.head_off;
		return ret;
	}
	c = &obj->chunks[i];
	if (c->addr != UINT64_MAX)
		return 0;
	if (c->tier == GS_TIER_RAM)	/* whole head slot: --memory */
		ret = alloc_ram(e, e->cfg.ram_head, &addr);
	else
		ret = alloc_disk(e, c->tier, c->len, &addr);
	if (ret == 0)
		c->addr = addr;
	return ret;
}

int engine_reserve(struct gs_engine *e, const void *key, size_t klen,
		   uint64_t size, struct gs_obj **objp)
{
	struct gs_obj *obj;
	int ret = engine_new_record(e, key, klen, size, &obj);

	if (ret < 0)
		return ret;
	for (int64_t i = -1; ret == 0 && i < (int64_t)obj->nchunks; i++)
		ret = engine_reserve_part(e, obj, i);
	if (ret < 0) {
		rec_free(e, obj);
		return ret;
	}
	*objp = obj;
	return 0;
}

static void grow_index(struct gs_engine *e)
{
	uint64_t n = e->nbuckets * 2;
	struct gs_obj **nb = calloc(n, sizeof(*nb));

	if (!nb)
		return;			/* keep the longer chains */
	for (uint64_t i = 0; i < e->nbuckets; i++) {
		struct gs_obj *obj = e->buckets[i], *next;

		for (; obj; obj = next) {
			uint64_t h = hash_key(obj->key, obj->klen) & (n - 1);

			next = obj->hnext;
			obj->hnext = nb[h];
			nb[h] = obj;
		}
	}
	free(e->buckets);
	e->buckets = nb;
	e->nbuckets = n;
}

/* The live object for <key>, reaping a dead one; NULL when none. */
static struct gs_obj *find_live(struct gs_engine *e, const void *key,
				size_t klen, bool count)
{
	struct gs_obj *obj = *find_slot(e, key, klen);

	if (obj && obj_dead(e, obj, time(NULL))) {
		if (count)
			STAT_ADD(e, get_expired, 1);
		unlink_obj(e, obj);
		obj = NULL;
	}
	return obj;
}

int engine_link(struct gs_engine *e, struct gs_obj *obj, enum gs_mode mode,
		uint64_t cas, bool *replaced)
{
	struct gs_obj *old = find_live(e, obj->key, obj->klen, false);

	if (replaced)
		*replaced = old != NULL;

	if (mode == GS_ADD && old)
		return -EEXIST;
	if ((mode == GS_REPLACE || mode == GS_CAS) && !old)
		return -ENOENT;
	if (mode == GS_CAS && old->meta.cas != cas)
		return -EEXIST;
	/* room in the CLOCK first: failing after the unlink would lose <old> */
	if (!old && e->clock_len == e->clock_cap) {
		uint32_t cap = e->clock_cap ? 2 * e->clock_cap : 1024;
		struct gs_obj **c = realloc(e->clock, cap * sizeof(*c));

		if (!c)
			return -ENOMEM;
		e->clock = c;
		e->clock_cap = cap;
	}
	if (old)
		unlink_obj(e, old);
	if (e->st.curr_items + 1 > e->nbuckets + e->nbuckets / 2)
		grow_index(e);
	{
		struct gs_obj **link = bucket_of(e, obj->key, obj->klen);

		obj->hnext = *link;
		*link = obj;
	}
	obj->clock_pos = e->clock_len;
	e->clock[e->clock_len++] = obj;
	obj->linked = true;
	obj->referenced = false;
	obj->refs++;
	obj->meta.cas = ++e->next_cas;
	obj->meta.mtime = time(NULL);
	tier_gauges(e, obj, +1);
	STAT_ADD(e, total_items, 1);
	return 0;
}

/* ---- public object calls ---- */

int gs_lookup(struct gs_engine *e, const void *key, size_t klen,
	      struct gs_obj **objp)
{
	struct gs_obj *obj;

	pthread_mutex_lock(&e->lock);
	obj = find_live(e, key, klen, true);
	if (obj) {
		obj->refs++;
		obj->referenced = true;
		STAT_ADD(e, pins, 1);
	}
	pthread_mutex_unlock(&e->lock);
	if (!obj) {
		STAT_ADD(e, get_misses, 1);
		return -ENOENT;
	}
	STAT_ADD(e, get_hits, 1);
	*objp = obj;
	return 0;
}

const struct gs_meta *gs_obj_meta(const struct gs_obj *obj)
{
	return &obj->meta;
}

void gs_obj_put(struct gs_engine *e, struct gs_obj **objp)
{
	if (!*objp)
		return;
	pthread_mutex_lock(&e->lock);
	STAT_SUB(e, pins, 1);
	engine_unref(e, *objp);
	pthread_mutex_unlock(&e->lock);
	*objp = NULL;
}

static int delete_if(struct gs_engine *e, const void *key, size_t klen,
		     bool check, uint64_t cas)
{
	struct gs_obj *obj;
	int ret = -ENOENT;

	pthread_mutex_lock(&e->lock);
	obj = find_live(e, key, klen, false);
	if (obj && check && obj->meta.cas != cas) {
		ret = -EEXIST;
	} else if (obj) {
		unlink_obj(e, obj);
		ret = 0;
	}
	pthread_mutex_unlock(&e->lock);
	return ret;
}

int gs_delete(struct gs_engine *e, const void *key, size_t klen)
{
	return delete_if(e, key, klen, false, 0);
}

int gs_delete_cas(struct gs_engine *e, const void *key, size_t klen,
		  uint64_t cas)
{
	return delete_if(e, key, klen, true, cas);
}

int gs_touch(struct gs_engine *e, const void *key, size_t klen,
	     int64_t exptime, struct gs_meta *meta)
{
	struct gs_obj *obj;

	pthread_mutex_lock(&e->lock);
	obj = find_live(e, key, klen, false);
	if (obj) {
		obj->meta.exptime = exptime;
		obj->referenced = true;
		if (meta)
			*meta = obj->meta;
	}
	pthread_mutex_unlock(&e->lock);
	return obj ? 0 : -ENOENT;
}

static int parse_counter(const char *p, uint64_t len, uint64_t *v)
{
	uint64_t i = 0, n = 0;

	if (len == 0 || len > 20)
		return -EINVAL;
	for (; i < len && p[i] >= '0' && p[i] <= '9'; i++) {
		if (n > (UINT64_MAX - (p[i] - '0')) / 10)
			return -EINVAL;
		n = n * 10 + (p[i] - '0');
	}
	if (i == 0)
		return -EINVAL;
	for (; i < len; i++)
		if (p[i] != ' ')
			return -EINVAL;
	*v = n;
	return 0;
}

int gs_incr(struct gs_engine *e, const void *key, size_t klen, bool decr,
	    uint64_t delta, uint64_t *result)
{
	struct gs_obj *obj, *nobj;
	char buf[24];
	uint64_t v;
	int ret, len;

	pthread_mutex_lock(&e->lock);
	obj = find_live(e, key, klen, false);
	ret = -ENOENT;
	if (!obj)
		goto out;
	ret = -EINVAL;
	if (obj->nchunks ||
	    parse_counter(obj->head, obj->meta.size, &v) < 0)
		goto out;
	if (decr)
		v = delta > v ? 0 : v - delta;
	else
		v += delta;		/* wraps at 2^64, as memcached does */
	len = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	obj->refs++;			/* CLOCK must not free it under us */
	ret = engine_reserve(e, key, klen, len, &nobj);
	if (ret == 0) {
		memcpy(nobj->head, buf, len);
		nobj->meta.flags = obj->meta.flags;
		nobj->meta.exptime = obj->meta.exptime;
		ret = engine_link(e, nobj, GS_SET, 0, NULL);
		engine_unref(e, nobj);
	}
	engine_unref(e, obj);
	if (ret == 0)
		*result = v;
out:
	pthread_mutex_unlock(&e->lock);
	return ret;
}

void gs_flush(struct gs_engine *e, int64_t when)
{
	pthread_mutex_lock(&e->lock);
	if (when <= 0 || when <= time(NULL)) {
		while (e->clock_len)
			unlink_obj(e, e->clock[e->clock_len - 1]);
		e->flush_at = 0;
	} else {
		e->flush_at = when;
	}
	pthread_mutex_unlock(&e->lock);
}

void gs_stats(struct gs_engine *e, struct gs_stats *st)
{
	pthread_mutex_lock(&e->lock);
#define GS_STAT_COPY(name, desc) \
	st->name = __atomic_load_n(&e->st.name, __ATOMIC_RELAXED);
	GS_STATS(GS_STAT_COPY)
#undef GS_STAT_COPY
	st->ram_region_bytes = e->region.size;
	st->ram_used_bytes = e->region.used;
	st->ssd_pool_bytes = e->pools[GS_TIER_SSD].size;
	st->ssd_used_bytes = e->pools[GS_TIER_SSD].used;
	st->hdd_pool_bytes = e->pools[GS_TIER_HDD].size;
	st->hdd_used_bytes = e->pools[GS_TIER_HDD].used;
	pthread_mutex_unlock(&e->lock);
}

/* ---- open / close ---- */

static int check_config(const struct gs_config *c, char *err, size_t errlen)
{
	if (c->block < 4096 || (c->block & (c->block - 1))) {
		snprintf(err, errlen, "--block must be a power of two of at least 4K");
		return -EINVAL;
	}
	if (c->ram_head < 4096 || c->ram_head % 4096 || c->ram_head > c->block) {
		snprintf(err, errlen, "--ram-head must be a multiple of 4K between 4K and --block");
		return -EINVAL;
	}
	if (c->ssd_prefix % 4096) {
		snprintf(err, errlen, "--ssd-prefix must be a multiple of 4K");
		return -EINVAL;
	}
	if (c->memory < c->block) {
		snprintf(err, errlen, "--memory must hold at least one --block");
		return -EINVAL;
	}
	if (c->io_buffers < 1 || c->io_buffers > 64) {
		snprintf(err, errlen, "--io-buffers must be between 1 and 64");
		return -EINVAL;
	}
	if (c->stripe_unit < 4096 || c->stripe_unit % 4096) {
		snprintf(err, errlen, "--stripe-unit must be a multiple of 4K");
		return -EINVAL;
	}
	if ((c->n_ssd_dirs > 1 || c->n_hdd_dirs > 1) &&
	    c->stripe_unit < GS_MIN_STRIPE) {
		snprintf(err, errlen, "--stripe-unit must be at least 64K with more than one dir in a tier (a chunk may span at most %u stripes)",
			 GS_MAX_SEGS);
		return -EINVAL;
	}
	if (c->numa_node >= 0 &&
	    (numa_available() < 0 || c->numa_node > numa_max_node())) {
		snprintf(err, errlen, "--numa %d: no such NUMA node (this machine has %d)",
			 c->numa_node, numa_available() < 0 ? 0 : numa_max_node() + 1);
		return -EINVAL;
	}
	return 0;
}

/* Bytes of one max_object that land on tier <t>. */
static uint64_t max_on_tier(const struct gs_engine *e, enum gs_tier t)
{
	uint64_t size = e->cfg.max_object, sum = 0;
	uint32_t n = layout(e, size, NULL);
	struct chunk *c = calloc(n ? n : 1, sizeof(*c));

	if (!c)
		return 0;
	layout(e, size, c);
	for (uint32_t i = 0; i < n; i++)
		if (c[i].tier == t)
			sum += round_up(c[i].len, 4096);
	free(c);
	return sum;
}

int gs_engine_open(struct gs_engine **ep, const struct gs_config *cfg,
		   char *err, size_t errlen)
{
	struct gs_engine *e;
	int ret;

	ret = check_config(cfg, err, errlen);
	if (ret < 0)
		return ret;
	e = calloc(1, sizeof(*e));
	if (!e) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	e->cfg = *cfg;
	pthread_mutex_init(&e->lock, NULL);
	pthread_mutex_init(&e->io_lock, NULL);
	e->has_pool[GS_TIER_SSD] = cfg->n_ssd_dirs > 0;
	e->has_pool[GS_TIER_HDD] = cfg->n_hdd_dirs > 0;
	e->nbuckets = 1ull << (cfg->hash_power ? cfg->hash_power : 16);
	e->buckets = calloc(e->nbuckets, sizeof(*e->buckets));
	if (!e->buckets) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory for the index");
		goto out_free;
	}
	ret = region_open(&e->region, cfg, err, errlen);
	if (ret < 0)
		goto out_free;
	if (e->has_pool[GS_TIER_SSD]) {
		ret = pool_open(&e->pools[GS_TIER_SSD], GS_TIER_SSD, cfg->ssd_dirs,
				cfg->n_ssd_dirs, cfg->ssd_size, cfg->stripe_unit,
				max_on_tier(e, GS_TIER_SSD), err, errlen);
		if (ret < 0)
			goto out_region;
	}
	if (e->has_pool[GS_TIER_HDD]) {
		ret = pool_open(&e->pools[GS_TIER_HDD], GS_TIER_HDD, cfg->hdd_dirs,
				cfg->n_hdd_dirs, cfg->hdd_size, cfg->stripe_unit,
				max_on_tier(e, GS_TIER_HDD), err, errlen);
		if (ret < 0)
			goto out_ssd;
	}
	for (int t = GS_TIER_SSD; t < GS_TIERS; t++)
		for (unsigned i = 0; e->has_pool[t] && i < e->pools[t].ndirs; i++) {
			e->pools[t].dirs[i].fixed = e->nfiles;
			e->files[e->nfiles++] = e->pools[t].dirs[i].fd;
		}
	*ep = e;
	return 0;

out_ssd:
	if (e->has_pool[GS_TIER_SSD])
		pool_close(&e->pools[GS_TIER_SSD]);
out_region:
	region_close(&e->region);
out_free:
	free(e->buckets);
	free(e);
	return ret;
}

void gs_engine_close(struct gs_engine **ep)
{
	struct gs_engine *e = *ep;

	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	while (e->clock_len)
		unlink_obj(e, e->clock[e->clock_len - 1]);
	pthread_mutex_unlock(&e->lock);
	for (int t = GS_TIER_SSD; t < GS_TIERS; t++)
		if (e->has_pool[t])
			pool_close(&e->pools[t]);
	region_close(&e->region);
	free(e->clock);
	free(e->buckets);
	pthread_mutex_destroy(&e->lock);
	pthread_mutex_destroy(&e->io_lock);
	free(e);
	*ep = NULL;
}

const struct gs_config *gs_engine_config(const struct gs_engine *e)
{
	return &e->cfg;
}

int gs_engine_region_fd(const struct gs_engine *e)
{
	return e->region.fd;
}

uint64_t gs_engine_region_size(const struct gs_engine *e)
{
	return e->region.size;
}

const void *gs_obj_head(const struct gs_obj *obj)
{
	return obj->head;
}
