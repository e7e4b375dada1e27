/*
 * Room on the nodes' tiers: the fastest tier with room for a sample, and the
 * bookkeeping of keeping a sample there.
 */
#include "config.h"

#include <stddef.h>

#include "placement_internal.h"

/* The fastest tier of @node with room for @size bytes, or -1 (always for a sample too large). */
int nopfs_placement_room(const struct nopfs_placement *p, uint32_t node, uint64_t size)
{
	const uint64_t *room = &p->free_room[(size_t)node * NOPFS_TIERS_MAX];

	if (size > p->max_size)
		return -1;
	for (unsigned int t = 0; t < p->tiers[node].count; t++)
		if (room[t] >= size)
			return (int)t;
	return -1;
}

void nopfs_placement_keep(struct nopfs_placement *p, uint32_t node, unsigned int tier,
                          uint64_t sample, bool primary)
{
	uint64_t size = p->sizes[sample];
	struct nopfs_tier_usage *usage = &p->usage[(size_t)node * NOPFS_TIERS_MAX + tier];

	p->free_room[(size_t)node * NOPFS_TIERS_MAX + tier] -= size;
	usage->samples++;
	usage->bytes += size;
	if (primary) {
		if (p->holder[sample] == NOPFS_NO_NODE || node < p->holder[sample]) {
			p->holder[sample] = node;
			p->holder_tier[sample] = (uint8_t)tier;
		}
	} else {
		usage->replica_samples++;
		usage->replica_bytes += size;
	}
	if (p->local_tier[node])
		p->local_tier[node][sample] = (uint8_t)(tier + 1);
}
