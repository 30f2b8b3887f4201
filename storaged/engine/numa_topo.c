/*
 * The NUMA topology behind the node shares (numa_topo.h): which nodes
 * exist, how far each is, the order shares take them in, and where the
 * kernel really put each block.
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "hook_points.h"
#include "numa_topo.h"

static int real_nodes(void)
{
	return numa_available() < 0 ? 0 : numa_max_node() + 1;
}

int numa_topo_cpu_node(int node)
{
	return GS_HOOK_NUMA_CPU_NODE(node);
}

/* Share order (numa_topo.h): <perverse> swaps the home share with the
 * farthest node's share (the first of the farthest in that order). */
void numa_topo_order(struct numa_topo *t, int n, int local,
		     const int *dist_from_local, bool perverse)
{
	int far = 0;

	t->nnodes = n;
	t->local = local;
	for (int i = 0; i < t->nnodes; i++) {
		t->order[i] = (t->local + i) % t->nnodes;
		if (dist_from_local[t->order[i]] >
		    dist_from_local[t->order[far]])
			far = i;
	}
	if (perverse) {
		t->order[far] = t->order[0];
		t->order[0] = (t->local + far) % t->nnodes;
	}
}

int numa_topo_check_node(const struct gs_config *cfg, int n, bool simulated,
			 char *err, size_t errlen)
{
	if (cfg->numa < n)
		return 0;
	snprintf(err, errlen, "`numa` %lld: no such NUMA node (this machine has %d%s)",
		 (long long)cfg->numa, n, simulated ? ", simulated" : "");
	return -EINVAL;
}

int numa_topo_setup(struct numa_topo *t, const struct gs_config *cfg,
		    char *err, size_t errlen)
{
	int dist[GS_NUMA_MAX_NODES] = { 0 };
	int n, ret;

	memset(t, 0, sizeof(*t));
	if (cfg->numa < 0) {
		if (cfg->perverse) {
			snprintf(err, errlen, "`perverse` needs `numa`");
			return -EINVAL;
		}
		return 0;
	}
	ret = GS_HOOK_NUMA_TOPO(t, cfg, err, errlen);
	if (ret)
		return ret < 0 ? ret : 0;
	n = real_nodes();
	if (n > GS_NUMA_MAX_NODES) {
		snprintf(err, errlen, "`numa`: %d NUMA nodes, at most %d supported",
			 n, GS_NUMA_MAX_NODES);
		return -EINVAL;
	}
	ret = numa_topo_check_node(cfg, n, false, err, errlen);
	if (ret < 0)
		return ret;
	for (int j = 0; j < n; j++)
		dist[j] = numa_distance(cfg->numa, j);
	numa_topo_order(t, n, cfg->numa, dist, cfg->perverse);
	for (int i = 0; i < n; i++)
		t->real[i] = t->order[i];
	return 0;
}

/* Counts the blocks in use of <r> whose first page is not on the real node
 * of their share (pages never touched are not counted). */
static uint64_t misplaced(const struct region *r)
{
	const struct numa_topo *t = &r->numa;
	uint32_t nused = 0;
	uint64_t bad = 0;
	void **pages;
	int *status;
	uint32_t *idx;

	pages = calloc(r->nblocks, sizeof(*pages));
	status = calloc(r->nblocks, sizeof(*status));
	idx = calloc(r->nblocks, sizeof(*idx));
	if (!pages || !status || !idx)
		goto out;
	for (uint32_t b = 0; b < r->nblocks; b++) {
		if (r->blocks[b].cls < 0)
			continue;
		pages[nused] = (char *)r->base + (uint64_t)b * r->block;
		idx[nused++] = b;
	}
	if (nused && move_pages(0, nused, pages, NULL, status, 0) == 0) {
		for (uint32_t k = 0; k < nused; k++) {
			int want = t->real[idx[k] / t->share_blocks < (uint32_t)t->nnodes ?
					   idx[k] / t->share_blocks : 0];

			if (want >= 0 && status[k] >= 0 && status[k] != want)
				bad++;
		}
	}
out:
	free(pages);
	free(status);
	free(idx);
	return bad;
}

void gs_numa_stats(struct gs_engine *e, struct gs_numa_stats *st)
{
	struct region *r = &e->region;
	const struct numa_topo *t = &r->numa;

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&e->lock);
	if (!t->nnodes)
		goto out;
	st->nodes = t->nnodes;
	st->region0_node = t->order[0];
	for (uint32_t b = 0; b < r->nblocks; b++) {
		const struct region_block *blk = &r->blocks[b];
		int node = numa_topo_node(t, b / t->share_blocks);

		if (blk->cls < 0)
			continue;
		st->blocks[node]++;
		st->bytes[node] += (uint64_t)(r->cls[blk->cls].nslots - blk->nfree) *
				   r->cls[blk->cls].slot;
	}
	for (int i = 0; i < t->nnodes; i++)
		st->hits[t->order[i]] = t->hits[i];
	st->misplaced_blocks = misplaced(r);
	st->prom = t->prom;
out:
	pthread_mutex_unlock(&e->lock);
}
