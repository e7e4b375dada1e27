/*
 * Tier prefetchers: threads that fill each tier from its sources (a replica
 * from its primary's node, else the PFS: source.c) in the order its samples
 * are first needed, concurrently with training (no prestaging).
 * A sample a stager needed first was fetched by it (help-out) and is skipped.
 */
#ifndef NOPFS_AGENT_PREFETCH_H
#define NOPFS_AGENT_PREFETCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "source.h"
#include "tier/tier.h"

struct prefetch_worker;

struct prefetch {
	struct source *source; /* its tiers are the ones filled */
	uint64_t buffer_size;
	atomic_bool stop;
	unsigned int count;
	struct prefetch_worker *workers;
	_Atomic unsigned int running;
	uint64_t started_ns;
	_Atomic uint64_t finished_ns; /* when the last prefetcher ran out of work */
};

/* Start tier->threads threads per tier of @source (borrowed). */
nopfs_status prefetch_start(struct prefetch *prefetch, struct source *source, uint64_t buffer_size);

/* Ask the threads to stop after their current sample and join them. */
void prefetch_stop(struct prefetch *prefetch);

#endif
