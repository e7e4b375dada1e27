/* Monotonic time, deadlines and condition variables that use them. */
#ifndef NOPFS_AGENT_TIMING_H
#define NOPFS_AGENT_TIMING_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The CLOCK_MONOTONIC deadline @at (ns, as now_ns() counts) as a timespec. */
static inline struct timespec deadline_at_ns(uint64_t at)
{
	return (struct timespec){ .tv_sec = (time_t)(at / 1000000000u),
		                  .tv_nsec = (long)(at % 1000000000u) };
}

/* A CLOCK_MONOTONIC deadline @ms milliseconds from now. */
static inline struct timespec deadline_after_ms(uint64_t ms)
{
	return deadline_at_ns(now_ns() + ms * 1000000u);
}

/* A condition variable whose timed waits take CLOCK_MONOTONIC deadlines. */
static inline int cond_init_monotonic(pthread_cond_t *cond)
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
