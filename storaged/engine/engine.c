/*
 * The engine's life: configuration checks, open and close, and stats.  The
 * index lives in index.c, the object layout and its space in layout.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "attr.h"
#include "engine.h"
#include "epoch.h"
#include "index.h"
#include "journal.h"
#include "layout.h"
#include "measure.h"
#include "pool.h"
#include "region.h"

/* The engine's own invariants; worded with gs_config field names. */
static int check_config(const struct gs_config *c, char *err, size_t errlen)
{
	if (c->block < 4096 || (c->block & (c->block - 1))) {
		snprintf(err, errlen, "`block` must be a power of two of at least 4K");
		return -EINVAL;
	}
	if (c->ram_head < 4096 || c->ram_head % 4096 || c->ram_head > c->block) {
		snprintf(err, errlen, "`ram_head` must be a multiple of 4K between 4K and `block`");
		return -EINVAL;
	}
	if (c->ssd_prefix % 4096) {
		snprintf(err, errlen, "`ssd_prefix` must be a multiple of 4K");
		return -EINVAL;
	}
	if (c->memory < c->block) {
		snprintf(err, errlen, "`memory` must hold at least one `block`");
		return -EINVAL;
	}
	if (c->io_buffers < 1 || c->io_buffers > GS_IO_BUFFERS_MAX) {
		snprintf(err, errlen, "`io_buffers` must be between 1 and %d",
			 GS_IO_BUFFERS_MAX);
		return -EINVAL;
	}
	if (c->stripe_unit < 4096 || c->stripe_unit % 4096) {
		snprintf(err, errlen, "`stripe_unit` must be a multiple of 4K");
		return -EINVAL;
	}
	if ((c->ssd_dir.n > 1 || c->hdd_dir.n > 1) &&
	    c->stripe_unit < GS_MIN_STRIPE) {
		snprintf(err, errlen, "`stripe_unit` must be at least 64K with more than one dir in a tier (a chunk may span at most %u stripes)",
			 GS_MAX_PIECES);
		return -EINVAL;
	}
	return 0;
}

/*
 * The store's identity: what the markers of its pools hold (the journal's
 * dir first: the SSD pool's, then the HDD pool's), else a new random one,
 * written into every marker that lacks it before anything is stored.
 * --fresh wipes the markers' (pool_open), and a store without pools gets
 * a new one at each start: a store that forgot its objects is a new store.
 */
static int engine_identity(struct gs_engine *e, char *err, size_t errlen)
{
	uint64_t id = 0;
	int ret;

	for (int t = GS_TIER_SSD; t < GS_TIERS && !id; t++)
		for (unsigned i = 0; e->has_pool[t] && i < e->pools[t].ndirs &&
		     !id; i++)
			id = e->pools[t].dirs[i].id;
	while (!id) {
		if (getrandom(&id, sizeof(id), 0) != sizeof(id)) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "cannot draw the store's identity: getrandom: %s",
				 strerror(errno));
			return -errno;
		}
	}
	for (int t = GS_TIER_SSD; t < GS_TIERS; t++) {
		if (!e->has_pool[t])
			continue;
		ret = pool_keep_id(&e->pools[t], id, err, errlen);
		if (ret < 0)
			return ret;
	}
	e->store_id = id;
	return 0;
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
	list_init(&e->io_list);
	list_init(&e->fills);
	e->heads_epoch = 1;		/* a seen_epoch of 0: never missed */
	e->has_pool[GS_TIER_SSD] = cfg->ssd_dir.n > 0;
	e->has_pool[GS_TIER_HDD] = cfg->hdd_dir.n > 0;
	e->nbuckets = 1ull << (cfg->hash_power ? cfg->hash_power : 16);
	e->buckets = calloc(e->nbuckets, sizeof(*e->buckets));
	if (!e->buckets || epoch_init(e) < 0) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory for the index");
		goto out_free;
	}
	ret = region_open(&e->region, cfg, err, errlen);
	if (ret < 0)
		goto out_free;
	if (e->has_pool[GS_TIER_SSD]) {
		ret = pool_open(&e->pools[GS_TIER_SSD], GS_TIER_SSD, cfg->ssd_dir.v,
				cfg->ssd_dir.n, cfg->ssd_size, cfg->stripe_unit,
				engine_max_on_tier(e, GS_TIER_SSD), cfg->fresh,
				err, errlen);
		if (ret < 0)
			goto out_region;
	}
	if (e->has_pool[GS_TIER_HDD]) {
		ret = pool_open(&e->pools[GS_TIER_HDD], GS_TIER_HDD, cfg->hdd_dir.v,
				cfg->hdd_dir.n, cfg->hdd_size, cfg->stripe_unit,
				engine_max_on_tier(e, GS_TIER_HDD), cfg->fresh,
				err, errlen);
		if (ret < 0)
			goto out_ssd;
	}
	ret = engine_identity(e, err, errlen);
	if (ret < 0)
		goto out_hdd;
	for (int t = GS_TIER_SSD; t < GS_TIERS; t++)
		for (unsigned i = 0; e->has_pool[t] && i < e->pools[t].ndirs; i++) {
			e->pools[t].dirs[i].fixed = e->nfiles;
			e->files[e->nfiles++] = e->pools[t].dirs[i].fd;
		}
	ret = journal_open(e, err, errlen);
	if (ret < 0)
		goto out_hdd;
	ret = journal_recover(e, err, errlen);
	if (ret < 0)
		goto out_journal;
	ret = numa_promotion_start(e, err, errlen);
	if (ret < 0)
		goto out_journal;
	*ep = e;
	return 0;

out_journal:
	pthread_mutex_lock(&e->lock);
	engine_unlink_all(e);
	pthread_mutex_unlock(&e->lock);
	journal_close(e);
out_hdd:
	if (e->has_pool[GS_TIER_HDD])
		pool_close(&e->pools[GS_TIER_HDD]);
out_ssd:
	if (e->has_pool[GS_TIER_SSD])
		pool_close(&e->pools[GS_TIER_SSD]);
out_region:
	region_close(&e->region);
out_free:
	attr_table_free(e);
	epoch_fini(e);
	free(e->buckets);
	free(e);
	return ret;
}

void gs_engine_close(struct gs_engine **ep)
{
	struct gs_engine *e = *ep;

	if (!e)
		return;
	numa_promotion_stop(e);
	journal_close(e);		/* a checkpoint of what the pools hold */
	pthread_mutex_lock(&e->lock);
	engine_unlink_all(e);
	pthread_mutex_unlock(&e->lock);
	free(e->heads);
	attr_table_free(e);
	for (int t = GS_TIER_SSD; t < GS_TIERS; t++)
		if (e->has_pool[t])
			pool_close(&e->pools[t]);
	region_close(&e->region);
	free(e->clock);
	free(e->ramchunks);
	free(e->old_buckets);
	free(e->buckets);
	epoch_fini(e);
	pthread_mutex_destroy(&e->lock);
	pthread_mutex_destroy(&e->io_lock);
	free(e);
	*ep = NULL;
}

const struct gs_config *gs_engine_config(const struct gs_engine *e)
{
	return &e->cfg;
}

uint64_t gs_engine_identity(const struct gs_engine *e)
{
	return e->store_id;
}

int gs_engine_region_fd(const struct gs_engine *e)
{
	return e->region.fd;
}

uint64_t gs_engine_region_size(const struct gs_engine *e)
{
	return e->region.size;
}

const void *gs_engine_region_base(const struct gs_engine *e)
{
	return e->region.base;
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
	st->index_table_bytes = engine_index_table_bytes(e);
	st->index_attr_bytes = attr_bytes(e);
	st->index_bytes = st->index_record_bytes + st->index_table_bytes +
			  st->index_attr_bytes;
	measure_stats(e, st);
	pthread_mutex_unlock(&e->lock);
}
