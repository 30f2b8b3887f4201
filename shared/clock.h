/*
 * The monotonic clock, the one way the tree reads it: nanoseconds, and
 * microseconds and milliseconds cut from them (exactly what tv_sec and
 * tv_nsec give, truncated), and deadlines for timed waits.  clock_ns()
 * reads any clock the same way (a thread's CPU time:
 * CLOCK_THREAD_CPUTIME_ID).  No lock; any thread.
 */
#ifndef GOBLIN_CLOCK_H
#define GOBLIN_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Clock <id> in nanoseconds. */
static inline uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in nanoseconds, microseconds, milliseconds. */
static inline uint64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t mono_us(void)
{
	return mono_ns() / 1000;
}

static inline uint64_t mono_ms(void)
{
	return mono_ns() / 1000000;
}

/* CLOCK_MONOTONIC <ns> nanoseconds from now, as pthread_cond_timedwait()
 * takes it for a condition variable on that clock
 * (pthread_condattr_setclock). */
static inline struct timespec mono_deadline(uint64_t ns)
{
	uint64_t t = mono_ns() + ns;

	return (struct timespec){ .tv_sec = t / 1000000000ull,
				  .tv_nsec = t % 1000000000ull };
}

#endif /* GOBLIN_CLOCK_H */
