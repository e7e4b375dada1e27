/*
 * The staging ring of one rank for the C API: a file in the stage directory
 * that the agent and the rank's processes map shared. The agent publishes
 * samples in slots; processes take, read in place and release them. Slot
 * states and memory ordering: docs/task-contract.md.
 */
#ifndef NOPFS_RING_H
#define NOPFS_RING_H

#include <stdatomic.h>
#include <stdint.h>

#define NOPFS_RING_MAGIC   0x4752504eu /* "NPRG" */
#define NOPFS_RING_VERSION 1

enum nopfs_ring_state {
	NOPFS_RING_FREE = 0,
	NOPFS_RING_WRITING = 1,
	NOPFS_RING_READY = 2,
	NOPFS_RING_TAKEN = 3,
	NOPFS_RING_RELEASED = 4,
};

struct nopfs_ring_header {
	uint32_t magic;
	uint32_t version;
	uint32_t rank;
	uint32_t slots;       /* slot entries after the header */
	uint64_t data_offset; /* from the start of the file, page-aligned */
	uint64_t data_bytes;
	uint32_t hints; /* hint entries after the slots, a power of two */
	uint32_t reserved;
};

struct nopfs_ring_slot {
	_Atomic uint32_t state;
	uint32_t source;       /* nopfs_wire_source of the copy */
	_Atomic int32_t taker; /* pid of the process that took it */
	uint32_t reserved;
	uint64_t sample;
	uint64_t offset; /* into the data area */
	uint64_t size;
	int64_t label;
};

/* The slot table right after the header. */
static inline struct nopfs_ring_slot *nopfs_ring_slots(void *ring)
{
	return (struct nopfs_ring_slot *)((char *)ring + sizeof(struct nopfs_ring_header));
}

/*
 * After the slots, the hints: hint[h(sample)] is the slot + 1 where the agent
 * last published that sample (or one sharing its hash). Only a hint: a task
 * checks the slot itself and scans the slots when the hint is stale.
 */
static inline _Atomic uint32_t *nopfs_ring_hints(void *ring, uint32_t slots)
{
	return (_Atomic uint32_t *)((char *)nopfs_ring_slots(ring) +
	                            (uint64_t)slots * sizeof(struct nopfs_ring_slot));
}

static inline uint32_t nopfs_ring_hint_of(uint64_t sample, uint32_t hints)
{
	return (uint32_t)((sample * 0x9e3779b97f4a7c15ULL) >> 32) & (hints - 1);
}

/* Bytes of header, slot table and hints, before page alignment. */
static inline uint64_t nopfs_ring_table_bytes(uint32_t slots, uint32_t hints)
{
	return sizeof(struct nopfs_ring_header) + (uint64_t)slots * sizeof(struct nopfs_ring_slot) +
	       (uint64_t)hints * sizeof(uint32_t);
}

#endif
