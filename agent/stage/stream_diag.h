/*
 * Stream mismatches: requests for samples that no local rank's predicted
 * stream holds near where that rank is. A few are normal (a rank restarted an
 * epoch); many mean the script does not read what the agent was told (another
 * seed, no shuffling, another sampler). The agent keeps serving correctly;
 * this records the first mismatches and, for the report, tests which stream
 * they do follow.
 */
#ifndef NOPFS_AGENT_STREAM_DIAG_H
#define NOPFS_AGENT_STREAM_DIAG_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "plan/sampler.h"

#define STREAM_DIAG_RECORDS 256
#define STREAM_DIAG_SYNCS   32

struct job;

struct stream_diag {
	pthread_mutex_t lock;
	uint64_t total;
	uint32_t recorded;
	struct {
		int32_t rank; /* -1: unknown */
		nopfs_sample_id sample;
	} record[STREAM_DIAG_RECORDS];
	/* ranks found elsewhere in their streams (stream_sync_search()) */
	uint32_t synced, synced_recorded;
	struct stream_diag_sync {
		uint32_t rank;
		uint32_t epoch;    /* the script's */
		uint64_t index;    /* in the rank's stream of that epoch */
		uint64_t misses;   /* the rank's requests off the plan before */
		double seconds;    /* after the agent began staging */
		int64_t positions; /* the window moved by (negative: back) */
	} sync[STREAM_DIAG_SYNCS];
	/* the order the ranks were found to read instead of the one planned */
	bool order_found;
	struct stream_diag_order {
		char what[32];   /* "no set_epoch", "no shuffle" */
		uint32_t rank;   /* whose requests showed it */
		uint64_t misses; /* its requests off the plan before */
		double seconds;  /* after the agent began staging */
	} order;
};

void stream_diag_init(struct stream_diag *diag);
void stream_diag_fini(struct stream_diag *diag);

/* Record a mismatched request. */
void stream_diag_record(struct stream_diag *diag, int32_t rank, nopfs_sample_id sample);

/* Record that a rank was found elsewhere in its stream and followed there. */
void stream_diag_synced(struct stream_diag *diag, const struct stream_diag_sync *sync);

/* Record that the ranks read another order than planned, which is staged from now on. */
void stream_diag_order(struct stream_diag *diag, const struct stream_diag_order *order);

/*
 * The mismatch section of the report as a new JSON object: counts, the share
 * of deliveries that matched, the order found instead of the planned one,
 * and a diagnosis naming the stream the recorded requests follow (seed 0,
 * shuffle=False, drop_last toggled, against @staged: the order staged last)
 * or saying none was found.
 */
json_t *stream_diag_json(struct stream_diag *diag, const struct job *job,
                         const struct nopfs_sampler *staged, uint64_t matched);

#endif
