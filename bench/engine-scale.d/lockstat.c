/*
 * lockstat.h's counters: thread-local, so counting costs no sharing; two
 * clock reads per outermost hold, and a shared table only for the holds
 * over LOCKSTAT_LONG_NS.
 */
#include "lockstat.h"

#include <stdlib.h>
#include <string.h>

/* lockstat.h is force-included here too: the real calls below */
#undef pthread_mutex_lock
#undef pthread_mutex_unlock
#undef pthread_cond_wait
#undef pthread_cond_timedwait

static __thread struct lockstat ls;
static __thread unsigned depth;
static __thread uint64_t held_since;
static __thread void *held_where;
static struct lockstat_site sites[LOCKSTAT_SITES];
static pthread_mutex_t sites_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + t.tv_nsec;
}

static void held(void *where)
{
	ls.acquisitions++;
	if (depth++ == 0) {
		ls.holds++;
		held_where = where;
		held_since = ns();
	}
}

static void long_hold(void *where, uint64_t d)
{
	unsigned i;

	pthread_mutex_lock(&sites_lock);
	for (i = 0; i < LOCKSTAT_SITES && sites[i].where &&
	     sites[i].where != where; i++)
		;
	if (i < LOCKSTAT_SITES) {
		sites[i].where = where;
		sites[i].n++;
		if (d > sites[i].max_ns)
			sites[i].max_ns = d;
	}
	pthread_mutex_unlock(&sites_lock);
}

static void released(void)
{
	uint64_t d;

	if (--depth)
		return;
	d = ns() - held_since;
	ls.hold_ns += d;
	if (d > LOCKSTAT_LONG_NS)
		long_hold(held_where, d);
}

int lockstat_lock(pthread_mutex_t *m)
{
	uint64_t t0, w;
	int ret;

	if (pthread_mutex_trylock(m) == 0) {
		held(__builtin_return_address(0));
		return 0;
	}
	t0 = ns();
	ret = pthread_mutex_lock(m);
	w = ns() - t0;
	ls.wait_ns += w;
	if (w > ls.max_wait_ns)
		ls.max_wait_ns = w;
	if (ret == 0)
		held(__builtin_return_address(0));
	return ret;
}

int lockstat_unlock(pthread_mutex_t *m)
{
	released();
	return pthread_mutex_unlock(m);
}

int lockstat_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	int ret;

	released();
	ret = pthread_cond_wait(c, m);
	held(__builtin_return_address(0));
	return ret;
}

int lockstat_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
			    const struct timespec *at)
{
	int ret;

	released();
	ret = pthread_cond_timedwait(c, m, at);
	held(__builtin_return_address(0));
	return ret;
}

void lockstat_get(struct lockstat *out)
{
	*out = ls;
}

void lockstat_reset(void)
{
	memset(&ls, 0, sizeof(ls));
}

static int by_max(const void *a, const void *b)
{
	const struct lockstat_site *x = a, *y = b;

	return x->max_ns < y->max_ns ? 1 : x->max_ns > y->max_ns ? -1 : 0;
}

unsigned lockstat_sites(struct lockstat_site *out)
{
	unsigned n = 0;

	pthread_mutex_lock(&sites_lock);
	for (; n < LOCKSTAT_SITES && sites[n].where; n++)
		out[n] = sites[n];
	pthread_mutex_unlock(&sites_lock);
	qsort(out, n, sizeof(*out), by_max);
	return n;
}

void lockstat_sites_reset(void)
{
	pthread_mutex_lock(&sites_lock);
	memset(sites, 0, sizeof(sites));
	pthread_mutex_unlock(&sites_lock);
}

double lockstat_clock_ns(void)
{
	uint64_t t0 = ns(), sink = 0;

	for (int i = 0; i < 1000000; i++)
		sink += ns();
	return (ns() - t0 - (sink & 0)) / 1e6;
}
