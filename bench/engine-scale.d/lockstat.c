/*
 * lockstat.h's counters: thread-local, so counting costs no sharing; two
 * clock reads per outermost hold.
 */
#include "lockstat.h"

/* lockstat.h is force-included here too: the real calls below */
#undef pthread_mutex_lock
#undef pthread_mutex_unlock
#undef pthread_cond_wait
#undef pthread_cond_timedwait

#include <string.h>

static __thread struct lockstat ls;
static __thread unsigned depth;
static __thread uint64_t held_since;

static uint64_t ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + t.tv_nsec;
}

static void held(void)
{
	ls.acquisitions++;
	if (depth++ == 0) {
		ls.holds++;
		held_since = ns();
	}
}

static void released(void)
{
	if (--depth == 0)
		ls.hold_ns += ns() - held_since;
}

int lockstat_lock(pthread_mutex_t *m)
{
	uint64_t t0, w;
	int ret;

	if (pthread_mutex_trylock(m) == 0) {
		held();
		return 0;
	}
	t0 = ns();
	ret = pthread_mutex_lock(m);
	w = ns() - t0;
	ls.wait_ns += w;
	if (w > ls.max_wait_ns)
		ls.max_wait_ns = w;
	if (ret == 0)
		held();
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
	held();
	return ret;
}

int lockstat_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
			    const struct timespec *at)
{
	int ret;

	released();
	ret = pthread_cond_timedwait(c, m, at);
	held();
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

double lockstat_clock_ns(void)
{
	uint64_t t0 = ns(), sink = 0;

	for (int i = 0; i < 1000000; i++)
		sink += ns();
	return (ns() - t0 - (sink & 0)) / 1e6;
}
