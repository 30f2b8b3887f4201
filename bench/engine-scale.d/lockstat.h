/*
 * Lock instrumentation for bench/engine-scale only: force-included
 * (-include) into a private build of the engine's sources, it routes every
 * pthread mutex acquisition of the engine through lockstat.c, which counts,
 * per thread, the acquisitions, the time spent holding at least one mutex
 * (outermost hold only) and the longest wait for one.  The product build
 * never sees it.
 */
#ifndef GOBLIN_BENCH_LOCKSTAT_H
#define GOBLIN_BENCH_LOCKSTAT_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

struct lockstat {
	uint64_t acquisitions;
	uint64_t holds;			/* outermost acquisitions */
	uint64_t hold_ns;		/* holding one mutex or more */
	uint64_t wait_ns;		/* waiting to acquire */
	uint64_t max_wait_ns;
};

int lockstat_lock(pthread_mutex_t *m);
int lockstat_unlock(pthread_mutex_t *m);
int lockstat_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
int lockstat_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
			    const struct timespec *at);
/* The calling thread's counters since its last lockstat_reset(). */
void lockstat_get(struct lockstat *out);
void lockstat_reset(void);
/* Holds over LOCKSTAT_LONG_NS, by where the mutex was taken (a return
 * address), any thread: the longest and how many. */
#define LOCKSTAT_LONG_NS	100000
#define LOCKSTAT_SITES		32
struct lockstat_site {
	void *where;
	uint64_t max_ns, n;
};
/* Copies the sites seen since lockstat_sites_reset(), longest first;
 * how many. */
unsigned lockstat_sites(struct lockstat_site *out);
void lockstat_sites_reset(void);
/* What one clock read costs, ns: each hold's time includes one. */
double lockstat_clock_ns(void);

#define pthread_mutex_lock(m)		lockstat_lock(m)
#define pthread_mutex_unlock(m)		lockstat_unlock(m)
#define pthread_cond_wait(c, m)		lockstat_cond_wait(c, m)
#define pthread_cond_timedwait(c, m, t)	lockstat_cond_timedwait(c, m, t)

#endif
