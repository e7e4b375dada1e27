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

#define STREAM_DIAG_RECORDS 256

struct job;

struct stream_diag {
	pthread_mutex_t lock;
	uint64_t total;
	uint32_t recorded;
	struct {
		int32_t rank; /* -1: unknown */
		nopfs_sample_id sample;
	} record[STREAM_DIAG_RECORDS];
};

void stream_diag_init(struct stream_diag *diag);
void stream_diag_fini(struct stream_diag *diag);

/* Record a mismatched request. */
void stream_diag_record(struct stream_diag *diag, int32_t rank, nopfs_sample_id sample);

/*
 * The mismatch section of the report as a new JSON object: counts, the share
 * of deliveries that matched, and a diagnosis naming the stream the recorded
 * requests follow (seed 0, shuffle=False, drop_last toggled) or saying none
 * was found.
 */
json_t *stream_diag_json(struct stream_diag *diag, const struct job *job, uint64_t matched);

#endif
