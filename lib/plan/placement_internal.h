/*
 * Placement internals shared by its files:
 *   placement.c            the entry: input, policy, queries on the result
 *   placement_candidates.c sort keys and the candidate lists of the policies
 *   placement_room.c       room on the tiers, keeping a sample there
 *   placement_owner.c      the owner-first, coverage-aware policy
 *   placement_greedy.c     NoPFS's greedy policy, for comparison
 */
#ifndef NOPFS_PLACEMENT_INTERNAL_H
#define NOPFS_PLACEMENT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "access.h"
#include "placement.h"

struct nopfs_placement {
	nopfs_policy policy;
	uint64_t samples;
	uint32_t nodes;
	uint32_t epochs;
	uint32_t scope;
	unsigned int threads;
	const uint64_t *sizes;          /* the caller's; outlives the placement */
	uint64_t max_size;              /* larger samples are never kept */
	const uint8_t *const *held;     /* the caller's (placement.h), or NULL */
	struct nopfs_node_tiers *tiers; /* nodes entries */
	struct nopfs_access_table *table;
	uint32_t *holder; /* primary node per sample or NOPFS_NO_NODE */
	uint8_t *holder_tier;
	uint8_t **local_tier;           /* per node in scope: tier + 1 per sample, 0 = not kept */
	uint64_t *free_room;            /* nodes x NOPFS_TIERS_MAX */
	struct nopfs_tier_usage *usage; /* nodes x NOPFS_TIERS_MAX */
	uint64_t *primary_offset;       /* computed on demand */
	uint32_t *primary_index;
	/* Owner-first only, freed once the policy has run. */
	uint32_t *owner;
	uint32_t *owner_reads;
	uint32_t *owner_first;
};

/* A (node, key) pair: node @node wants the sample in @key's low 32 bits. */
struct nopfs_candidate {
	uint64_t key;
	uint32_t node;
};

/* Order (reads desc, first epoch asc, sample asc) as one increasing integer. */
uint64_t nopfs_placement_key(uint32_t reads, uint32_t first_epoch, uint32_t sample);

static inline uint32_t nopfs_key_sample(uint64_t key)
{
	return (uint32_t)key;
}

/* The fastest tier of @node with room for @size bytes, or -1. */
int nopfs_placement_room(const struct nopfs_placement *p, uint32_t node, uint64_t size);

/* Keep @sample on @node in @tier (room must have been checked). */
void nopfs_placement_keep(struct nopfs_placement *p, uint32_t node, unsigned int tier,
                          uint64_t sample, bool primary);

/* Sort by (node, key); and plain keys. */
nopfs_status nopfs_candidates_sort(struct nopfs_candidate *candidates, uint64_t count);
void nopfs_keys_sort(uint64_t *keys, uint64_t count);

/*
 * Collect, in parallel over samples, a candidate for every (node, sample) with
 * a read for which @wanted(p, node, sample) holds; sorted by (node, key). On
 * success *out is malloc'd (caller frees) with *count entries.
 */
nopfs_status nopfs_candidates_collect(const struct nopfs_placement *p,
                                      bool (*wanted)(const struct nopfs_placement *p, uint32_t node,
                                                     uint64_t sample),
                                      struct nopfs_candidate **out, uint64_t *count);

/* The policies. */
nopfs_status nopfs_placement_run_owner_first(struct nopfs_placement *p);
nopfs_status nopfs_placement_run_greedy(struct nopfs_placement *p);

#endif
