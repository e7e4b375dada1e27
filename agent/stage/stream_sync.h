/*
 * Finding where a rank is when its requests follow none of the positions
 * the agent expects next: a resumed job whose user did not say so
 * (--start-epoch, --start-sample), a rank that restarted an epoch. The
 * rank's last few requests off the plan are looked up in each epoch of its
 * stream, one epoch's permutation in memory at a time; the epoch where they
 * all belong to the rank and lie closest together (a DataLoader reads a
 * stretch of consecutive indices, a few batches in flight) is where it is,
 * if it is clearly the closest.
 */
#ifndef NOPFS_AGENT_STREAM_SYNC_H
#define NOPFS_AGENT_STREAM_SYNC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "common/status.h"
#include "plan/sampler.h"

/* Requests off the plan that start a search (doubled after a failed one). */
#define STREAM_SYNC_MISSES     12
#define STREAM_SYNC_MISSES_MAX 768

struct stream_sync_found {
	uint32_t epoch;                     /* of the plan (the script's is first_epoch more) */
	uint64_t first;                     /* the lowest index of the requests in it */
	uint64_t index[STREAM_SYNC_MISSES]; /* each request's index in the rank's stream */
	uint64_t span, second_span; /* the closest epoch's, the next's (also when not found) */
};

/*
 * Where @count (<= STREAM_SYNC_MISSES) requests of rank @rank, in the order
 * they came, are in its streams of epochs 0 .. @epochs-1: the epoch where
 * every one is the rank's and their indices span the least, if that span is
 * at most @max_span and every other epoch's is at least four times it.
 * Returns NOPFS_OK with *found set, NOPFS_ERR_NOT_FOUND when no epoch fits
 * clearly, NOPFS_ERR_CANCELED when @stop was set (checked between epochs),
 * or NOPFS_ERR_NOMEM.
 */
nopfs_status stream_sync_search(const struct nopfs_sampler *sampler, uint32_t epochs, uint32_t rank,
                                const nopfs_sample_id *samples, unsigned int count,
                                uint64_t max_span, const atomic_bool *stop,
                                struct stream_sync_found *found);

#endif
