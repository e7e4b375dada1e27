/*
 * How many operations to keep outstanding against a shared server (a PFS's
 * metadata server): as many as make it answer faster, no more. A delay-based
 * controller (as TCP Vegas and BBR pace a network path): it compares the
 * mean latency of each interval's operations with the lowest mean of the
 * recent intervals, which estimates how many of its operations wait in the
 * server's queue rather than being served. It adds a worker while that
 * queue is short (the server answers more with more asked at once, as a
 * latency-bound one does) and takes one away when it grows (the server is
 * saturated, and more workers would only delay everyone else's calls,
 * such as the ranks' own, without scanning faster). Once every window it
 * spends an interval at the fewest workers, whose latency keeps the base
 * fresh (as BBR's ProbeRTT does): without it, a saturated server's base
 * would creep up with the workers and let them grow without end.
 */
#ifndef NOPFS_COMMON_PACE_H
#define NOPFS_COMMON_PACE_H

#include <stdbool.h>
#include <stdint.h>

#define NOPFS_PACE_WINDOW 40 /* intervals the base latency is the lowest of */

struct nopfs_pace {
	unsigned int min, max;              /* bounds of the workers */
	unsigned int active;                /* workers now */
	unsigned int peak;                  /* the most at once so far */
	bool starting;                      /* doubling, until the first sign of a queue */
	uint64_t recent[NOPFS_PACE_WINDOW]; /* mean latencies (ns), newest at count % window */
	unsigned int count;                 /* intervals seen */
	unsigned int resume;                /* while probing at the fewest: the workers before */
};

/* Start with @min workers (at least 1), never more than @max. */
void nopfs_pace_init(struct nopfs_pace *pace, unsigned int min, unsigned int max);

/*
 * One interval's figures: @ops operations completed, @latency_ns their
 * latencies summed. Returns the workers for the next interval. An interval
 * of fewer operations than workers says too little and changes nothing.
 */
unsigned int nopfs_pace_update(struct nopfs_pace *pace, uint64_t ops, uint64_t latency_ns);

#endif
