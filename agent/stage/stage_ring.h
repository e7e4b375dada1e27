/*
 * The agent's side of a rank's staging ring (lib/task/ring.h): a file in the stage
 * directory, mapped shared, whose data area is allocated in stream order like
 * a circular buffer. Its private bookkeeping (where each slot's bytes are)
 * never depends on what tasks write into the shared slots, only their states
 * are read back. All calls but stage_ring_data() run under the stage lock.
 */
#ifndef NOPFS_AGENT_STAGE_RING_H
#define NOPFS_AGENT_STAGE_RING_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "catalog/catalog.h"
#include "common/status.h"
#include "task/ring.h"

struct stage_ring_own {
	uint64_t offset, size, position;
	nopfs_sample_id sample;
	bool live;
};

struct stage_ring {
	char path[PATH_MAX];
	int fd;
	void *base;
	size_t bytes;
	uint32_t rank;
	uint32_t slot_count;
	uint32_t hint_count;
	uint64_t data_offset, data_bytes;
	struct stage_ring_own *own;  /* per slot */
	uint64_t head_seq, tail_seq; /* allocations in order; slot = seq % slot_count */
	uint64_t head_offset, tail_offset;
	bool wrapped;
};

/* Create the ring file of @rank in @directory with @slots slots and @data_bytes of data. */
nopfs_status stage_ring_create(struct stage_ring *ring, const char *directory, uint32_t rank,
                               uint32_t slots, uint64_t data_bytes);

/* Unmap and remove it (tasks keep their own mappings of what they hold). */
void stage_ring_destroy(struct stage_ring *ring);

/*
 * Reserve room for a sample of @size bytes at stream @position: a slot in
 * WRITING state and its offset in the data area. false when full.
 */
bool stage_ring_reserve(struct stage_ring *ring, nopfs_sample_id sample, uint64_t size,
                        uint64_t position, uint32_t *slot, uint64_t *offset);

/* Where the data at @offset is (for writing it without the lock). */
static inline void *stage_ring_data(struct stage_ring *ring, uint64_t offset)
{
	return (char *)ring->base + ring->data_offset + offset;
}

/* Publish a written slot: READY for tasks. */
void stage_ring_publish(struct stage_ring *ring, uint32_t slot, int64_t label, uint32_t source);

/* A stager gives up a slot it reserved (its position was abandoned, or the fill failed). */
void stage_ring_cancel(struct stage_ring *ring, uint32_t slot);

/* Give back a ready slot nobody took; false if a task holds it or it is being written. */
bool stage_ring_take_back(struct stage_ring *ring, uint32_t slot);

/*
 * A task released @slot holding @sample: true with *position when that is so
 * (the slot is free again), false for a release that does not match.
 */
bool stage_ring_released(struct stage_ring *ring, uint32_t slot, nopfs_sample_id sample,
                         uint64_t *position);

/*
 * Free one slot a task released without telling us (a lost RELEASE) or held
 * when it died, looking from slot *from on (start at 0; it moves on): true
 * with the stream position it was staged for.
 */
bool stage_ring_collect(struct stage_ring *ring, uint32_t *from, uint64_t *position);

/* Whether every slot is free (for tests and shutdown). */
bool stage_ring_is_empty(const struct stage_ring *ring);

#endif
