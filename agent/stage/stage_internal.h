/* Staging internals shared by stage.c (windows) and stage_copy.c (copies). */
#ifndef NOPFS_AGENT_STAGE_INTERNAL_H
#define NOPFS_AGENT_STAGE_INTERNAL_H

#include <stdint.h>

#include "stage.h"
#include "stage_ring.h"
#include "stream_sync.h"

enum slot_state {
	SLOT_EMPTY = 0,
	SLOT_STAGING,  /* a stager is writing it */
	SLOT_STAGED,   /* its file is in the directory */
	SLOT_FAILED,   /* could not be staged: the rank will ask */
	SLOT_DONE,     /* opened or served */
	SLOT_ABANDONED /* being staged when the rank moved on */
};

struct stage_slot {
	uint64_t position; /* global position (epoch * per_rank + index) */
	nopfs_sample_id sample;
	uint8_t state;
	uint8_t source;
	uint32_t ring_slot; /* slot + 1 in the rank's API ring; 0: a file */
	uint32_t claim;     /* which claim of the stage's it is (next_job()) */
};

struct stage_rank {
	uint32_t rank;
	uint64_t cursor; /* first position not done */
	uint64_t next;   /* next position to stage */
	uint64_t last;   /* the position it read last */
	uint64_t end;    /* epochs * per_rank */
	uint64_t reads;  /* its requests and opens of its copies: where it is, whatever the plan */
	struct stage_slot *ring;
	struct stage_ring *api_ring; /* set once a C API process of the rank asks */
	bool api_ring_full;
	/* its last requests off the plan, oldest first, for stream_sync_search() */
	nopfs_sample_id misses[STREAM_SYNC_MISSES];
	uint32_t miss_count;     /* since the last search */
	uint64_t off_plan;       /* requests off the plan since the last move */
	uint32_t miss_threshold; /* misses that start a search */
	bool sync_due, syncing;
	_Atomic uint64_t stall_buckets[AGENT_STALL_BUCKETS]; /* its requests' waits */
};

struct stage_worker {
	struct stage *stage;
	unsigned int id;
	pthread_t thread;
	bool started;
	void *buffer;
};

/* Remove the name of @sample's copy staged for @rank. */
void stage_unlink_names(struct stage *stage, uint32_t rank, nopfs_sample_id sample);

/* Write @sample under the temporary name @temporary (no lock needed). */
nopfs_status stage_write_temporary(struct stage *stage, struct stage_worker *worker,
                                   nopfs_sample_id sample, const char *temporary,
                                   nopfs_wire_source *from);

/* Fill @dest (room for the sample) with @sample from the best source. */
nopfs_status stage_fill_memory(struct stage *stage, nopfs_sample_id sample, void *dest,
                               nopfs_wire_source *from);

/* Give a written copy its name for @rank (lock held). */
nopfs_status stage_publish(struct stage *stage, uint32_t rank, nopfs_sample_id sample,
                           const char *temporary);

/* Open @rank's staged copy of @sample without it counting as the rank's open. */
int stage_open_staged(struct stage *stage, uint32_t rank, nopfs_sample_id sample);

/* An anonymous, sealed, read-only copy of @sample for a request (@leading: source_copy()). */
nopfs_status stage_serve_copy(struct stage *stage, nopfs_sample_id sample, void *buffer,
                              const struct timespec *deadline, bool leading, int *fd,
                              nopfs_wire_source *from);

/* Publish the "index" file for the C API. */
nopfs_status stage_publish_index(struct stage *stage);

#endif
