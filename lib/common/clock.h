/*
 * Clocks: CLOCK_MONOTONIC for durations, deadlines and timeouts (it never
 * jumps), CLOCK_REALTIME only where a wall-clock time is wanted (timestamps,
 * or an API that takes one). Header-only, so every library can use it.
 */
#ifndef NOPFS_CLOCK_H
#define NOPFS_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#define NOPFS_NS_PER_S 1000000000u

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t nopfs_clock_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * NOPFS_NS_PER_S + (uint64_t)t.tv_nsec;
}

/* CLOCK_MONOTONIC in milliseconds. */
static inline int64_t nopfs_clock_now_ms(void)
{
	return (int64_t)(nopfs_clock_now_ns() / 1000000u);
}

/* CLOCK_MONOTONIC in seconds, for durations and rates. */
static inline double nopfs_clock_seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* CLOCK_REALTIME (wall clock) in nanoseconds since the Epoch. */
static inline int64_t nopfs_clock_wall_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * NOPFS_NS_PER_S + t.tv_nsec;
}

/* CLOCK_REALTIME (wall clock) in seconds since the Epoch. */
static inline double nopfs_clock_wall_seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The CLOCK_MONOTONIC deadline @at (ns, as nopfs_clock_now_ns() counts) as a timespec. */
static inline struct timespec nopfs_clock_deadline_at_ns(uint64_t at)
{
	return (struct timespec){ .tv_sec = (time_t)(at / NOPFS_NS_PER_S),
		                  .tv_nsec = (long)(at % NOPFS_NS_PER_S) };
}

/* A CLOCK_MONOTONIC deadline @ms milliseconds from now. */
static inline struct timespec nopfs_clock_deadline_after_ms(uint64_t ms)
{
	return nopfs_clock_deadline_at_ns(nopfs_clock_now_ns() + ms * 1000000u);
}

/*
 * A CLOCK_REALTIME deadline @seconds from now (none: now), for the calls that
 * take one (pthread_timedjoin_np(), a default condition variable).
 */
static inline struct timespec nopfs_clock_wall_deadline_after(double seconds)
{
	struct timespec at;
	long nanoseconds;

	clock_gettime(CLOCK_REALTIME, &at);
	if (!(seconds > 0))
		return at;
	at.tv_sec += (time_t)seconds;
	nanoseconds = at.tv_nsec + (long)((seconds - (double)(time_t)seconds) * 1e9);
	at.tv_sec += nanoseconds / (long)NOPFS_NS_PER_S;
	at.tv_nsec = nanoseconds % (long)NOPFS_NS_PER_S;
	return at;
}

/* A condition variable whose timed waits take CLOCK_MONOTONIC deadlines. */
static inline int nopfs_clock_cond_init(pthread_cond_t *cond)
{
	pthread_condattr_t attr;
	int rc;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	rc = pthread_cond_init(cond, &attr);
	pthread_condattr_destroy(&attr);
	return rc;
}

#endif
