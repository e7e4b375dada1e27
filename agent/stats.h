/*
 * The agent's counters, updated lock-free from every thread and read by the
 * report. A sample is "delivered" to a task either from a staged copy the
 * task opened itself (fast path) or in answer to a request (slow path); each
 * copy came from a source: RAM or SSD tier, a peer, or the PFS.
 */
#ifndef NOPFS_AGENT_STATS_H
#define NOPFS_AGENT_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "task/wire.h"

#define AGENT_SOURCES     5    /* indexed by nopfs_wire_source */
#define AGENT_EPOCH_SLOTS 1024 /* epochs counted apart; later ones add to the last */
/* Request waits: bucket b counts waits below 2^b microseconds (and not below 2^(b-1)). */
#define AGENT_STALL_BUCKETS 32

enum agent_delivery {
	AGENT_DELIVERY_STAGED = 0,    /* the task opened a staged copy */
	AGENT_DELIVERY_REQUESTED = 1, /* the task asked; the agent answered */
	AGENT_DELIVERIES = 2,
};

enum agent_fallback {
	AGENT_FALLBACK_UNKNOWN_PATH = 0, /* not a sample of the dataset */
	AGENT_FALLBACK_READ_ERROR,       /* the sample could not be read */
	AGENT_FALLBACK_TIMEOUT,          /* not ready within the serve timeout */
	AGENT_FALLBACK_STOPPING,         /* the agent was shutting down */
	AGENT_FALLBACK_MALFORMED,        /* the request was malformed */
	AGENT_FALLBACK_TOO_LARGE,        /* larger than --max-sample-size */
	AGENT_FALLBACKS,
};

struct agent_counter {
	_Atomic uint64_t count;
	_Atomic uint64_t bytes;
};

struct agent_stats {
	struct agent_counter delivered[AGENT_DELIVERIES][AGENT_SOURCES];
	/* The same deliveries (both ways) by the epoch of the rank's stream position. */
	struct agent_counter epoch_delivered[AGENT_EPOCH_SLOTS][AGENT_SOURCES];
	struct agent_counter unattributed[AGENT_SOURCES]; /* no stream position known */
	struct agent_counter pfs_read;                    /* every byte read from the PFS */
	struct agent_counter pfs_failed;  /* samples the PFS did not give: open or read failed */
	struct agent_counter pfs_changed; /* samples whose file no longer has the catalog's size */
	struct agent_counter probe_pfs_read; /* of which by the probe */
	struct agent_counter tier_filled[8]; /* samples stored per local tier */
	struct agent_counter help_out;       /* tier samples fetched by a stager */
	struct agent_counter verified;       /* --verify: copies that had the recorded CRC32C */
	struct agent_counter
	        verify_recorded; /* --verify: CRC32Cs recorded (a sample's first read) */
	struct agent_counter verify_mismatched[AGENT_SOURCES]; /* copies that did not, by source */
	struct agent_counter staged;                           /* staged copies written */
	struct agent_counter staged_unused;                    /* removed without being opened */
	_Atomic uint64_t requests;
	_Atomic uint64_t stall_ns; /* request wait, summed */
	_Atomic uint64_t stall_max_ns;
	_Atomic uint64_t wait_notices; /* WAITs sent to tasks while their sample was fetched */
	_Atomic uint64_t stall_buckets[AGENT_STALL_BUCKETS];
	_Atomic uint64_t fallbacks[AGENT_FALLBACKS];
	_Atomic uint64_t stream_matched;    /* deliveries found in a rank's stream */
	_Atomic uint64_t stream_mismatched; /* requests in no local rank's window */
	_Atomic uint64_t stream_skipped;    /* positions abandoned (never read) */
	_Atomic uint64_t stream_resyncs;
	_Atomic uint64_t beyond_epochs; /* requests after the last planned epoch */
	/* requests of tasks whose step was planned before the plan followed now */
	_Atomic uint64_t superseded_requests;
	_Atomic uint64_t superseded_newest; /* the newest such step generation + 1 (0: none) */
	_Atomic uint64_t refused_connections;
	_Atomic uint64_t malformed_messages;
	_Atomic uint64_t watch_overflows;
};

static inline void agent_count(struct agent_counter *counter, uint64_t bytes)
{
	atomic_fetch_add_explicit(&counter->count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&counter->bytes, bytes, memory_order_relaxed);
}

/* The bucket of a wait of @ns nanoseconds: the bit length of its microseconds. */
static inline unsigned int agent_stall_bucket(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned int bucket = 0;

	while (us && bucket < AGENT_STALL_BUCKETS - 1) {
		us >>= 1;
		bucket++;
	}
	return bucket;
}

/*
 * The wait below which a share @p (0 < p <= 1) of the @n counted ones fall,
 * in seconds, as the upper bound of its bucket (2^b microseconds); 0 when
 * nothing was counted.
 */
static inline double agent_stall_percentile(const _Atomic uint64_t *buckets, double p)
{
	uint64_t total = 0, seen = 0;

	for (unsigned int b = 0; b < AGENT_STALL_BUCKETS; b++)
		total += atomic_load_explicit(&buckets[b], memory_order_relaxed);
	if (total == 0)
		return 0;
	for (unsigned int b = 0; b < AGENT_STALL_BUCKETS; b++) {
		seen += atomic_load_explicit(&buckets[b], memory_order_relaxed);
		if ((double)seen >= p * (double)total)
			return (double)(UINT64_C(1) << b) / 1e6;
	}
	return (double)(UINT64_C(1) << (AGENT_STALL_BUCKETS - 1)) / 1e6;
}

static inline void agent_max(_Atomic uint64_t *max, uint64_t value)
{
	uint64_t seen = atomic_load_explicit(max, memory_order_relaxed);

	while (value > seen &&
	       !atomic_compare_exchange_weak_explicit(max, &seen, value, memory_order_relaxed,
	                                              memory_order_relaxed))
		;
}

#endif
