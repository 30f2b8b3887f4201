/*
 * The test hooks (hooks.h): crash points, the head-admission switch and a
 * simulated NUMA topology, read from GOBLIN_TEST_* variables.  Linked only
 * into the hooked test build, beside the engine objects compiled with
 * -include t/hooks/hooks.h.
 */
#include <errno.h>
#include <numa.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hooks.h"
#include "numa_topo.h"

#define NUMA_ENV "GOBLIN_TEST_NUMA"

void hooks_crash_point(const char *point)
{
	static long left = -1;		/* -1: not read yet, 0: off */
	const char *spec;
	size_t len;

	if (__atomic_load_n(&left, __ATOMIC_RELAXED) == 0)
		return;
	spec = getenv("GOBLIN_TEST_CRASH");
	len = strlen(point);
	if (!spec || strncmp(spec, point, len) ||
	    (spec[len] != '\0' && spec[len] != ':'))
		return;
	if (__atomic_load_n(&left, __ATOMIC_RELAXED) < 0) {
		long n = spec[len] == ':' ? strtol(spec + len + 1, NULL, 10) : 1;
		long unset = -1;

		__atomic_compare_exchange_n(&left, &unset, n > 0 ? n : 1, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
	if (__atomic_sub_fetch(&left, 1, __ATOMIC_RELAXED) == 0)
		kill(getpid(), SIGKILL);
}

/* Whether the environment's <name> is <want>, read once into <*cache>
 * (-1: not read yet). */
static bool env_is(const char *name, const char *want, int *cache)
{
	int v = __atomic_load_n(cache, __ATOMIC_RELAXED);

	if (v < 0) {
		const char *spec = getenv(name);

		v = spec && !strcmp(spec, want);
		__atomic_store_n(cache, v, __ATOMIC_RELAXED);
	}
	return v;
}

bool hooks_head_admit_any(void)
{
	static int any = -1;

	return env_is("GOBLIN_TEST_HEAD_ADMIT", "any", &any);
}

bool hooks_chunks_off(void)
{
	static int off = -1;

	return env_is("GOBLIN_TEST_CHUNKS", "off", &off);
}

/* Parses the distance row <spec> into <row>: the count of nodes, or
 * -EINVAL unless it has 2 to GS_NUMA_MAX_NODES distances, the first 10 (a
 * node to itself) and the others above it. */
static int parse_row(const char *spec, int *row)
{
	int n = 0;

	while (*spec) {
		char *end;
		long d;

		if (*spec == ' ') {
			spec++;
			continue;
		}
		if (n == GS_NUMA_MAX_NODES)
			return -EINVAL;
		errno = 0;
		d = strtol(spec, &end, 10);
		if (end == spec || errno || d < 10 || d > 255 ||
		    (*end && *end != ' ') || (n == 0) != (d == 10))
			return -EINVAL;
		row[n++] = d;
		spec = end;
	}
	return n >= 2 ? n : -EINVAL;
}

int hooks_numa_cpu_node(int node)
{
	int n = numa_available() < 0 ? 0 : numa_max_node() + 1;

	if (!getenv(NUMA_ENV))
		return node;
	return n ? node % n : -1;
}

int hooks_numa_topo(struct numa_topo *t, const struct gs_config *cfg,
		    char *err, size_t errlen)
{
	const char *spec = getenv(NUMA_ENV);
	int row[GS_NUMA_MAX_NODES], dist[GS_NUMA_MAX_NODES] = { 0 };
	int n, ret;

	if (!spec)
		return 0;
	n = parse_row(spec, row);
	if (n < 0) {
		snprintf(err, errlen, "%s=\"%s\": want a distance row of 2 to %d nodes, 10 first, the others above 10 (e.g. \"10 20 30 20\")",
			 NUMA_ENV, spec, GS_NUMA_MAX_NODES);
		return -EINVAL;
	}
	ret = numa_topo_check_node(cfg, n, true, err, errlen);
	if (ret < 0)
		return ret;
	for (int j = 0; j < n; j++)
		dist[j] = row[(j - cfg->numa + n) % n];
	numa_topo_order(t, n, cfg->numa, dist, cfg->perverse);
	t->simulated = true;
	for (int i = 0; i < n; i++)
		t->real[i] = hooks_numa_cpu_node(t->local);
	return 1;
}

void hooks_compact_move(void)
{
	/* read at each call: a test changes it between engines */
	const char *spec = getenv("GOBLIN_TEST_COMPACT_DELAY_US");
	long us = spec ? strtol(spec, NULL, 10) : 0;

	if (us > 0)
		usleep(us);
}
