/*
 * NoPFS's independent greedy placement (SC'21 section 5.1 and its code): each
 * node keeps the samples it reads most, fastest tier first; a sample that
 * does not fit closes the tier and goes to the next one. For comparison only.
 */
#include "config.h"

#include <stdlib.h>

#include "placement_internal.h"

static bool greedy_wants(const struct nopfs_placement *p, uint32_t node, uint64_t sample)
{
	return p->tiers[node].count > 0;
}

nopfs_status nopfs_placement_run_greedy(struct nopfs_placement *p)
{
	struct nopfs_candidate *candidates;
	uint64_t count, i = 0;
	nopfs_status status;

	status = nopfs_candidates_collect(p, greedy_wants, &candidates, &count);
	if (status != NOPFS_OK)
		return status;
	while (i < count) {
		uint32_t node = candidates[i].node;
		unsigned int tier = 0;

		for (; i < count && candidates[i].node == node; i++) {
			uint32_t sample = nopfs_key_sample(candidates[i].key);
			uint64_t room;

			if (tier == p->tiers[node].count || p->sizes[sample] > p->max_size)
				continue; /* this node is full, or the sample is never kept */
			room = p->free_room[(size_t)node * NOPFS_TIERS_MAX + tier];
			while (room < p->sizes[sample] && ++tier < p->tiers[node].count)
				room = p->free_room[(size_t)node * NOPFS_TIERS_MAX + tier];
			if (tier < p->tiers[node].count)
				nopfs_placement_keep(p, node, tier, sample, true);
		}
	}
	free(candidates);
	return NOPFS_OK;
}
