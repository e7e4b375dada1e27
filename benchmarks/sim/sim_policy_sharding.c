/*
 * ParallelStaging: data sharding (e.g. Kurth et al.), as NoPFS section 6
 * simulates it. Before training each node copies its shard (sample k to
 * node k mod N) from the PFS into its tiers, fastest first, with the tiers'
 * prefetch threads; what does not fit anywhere is dropped. Each worker then
 * reads only its own shard, in a fresh shuffle each round (torch.randperm's
 * generator, seed + 1000003 (node + 1) + round), as many samples per epoch
 * as the sampler would give it: the access order changes, and a dataset
 * larger than the aggregate storage is not read in full.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "plan/access.h"
#include "common/log.h"
#include "sim_engine.h"

static nopfs_status shard_streams(const struct sim_dataset *data, struct sim_setup *setup)
{
	const struct sim_cache *cache = setup->cache;
	uint32_t *members = malloc(data->workload.samples * sizeof(*members));
	nopfs_status status;

	if (!members) {
		nopfs_error("no memory for the shards");
		return NOPFS_ERR_NOMEM;
	}
	status = sim_streams_alloc(data, &setup->streams);
	for (uint32_t n = 0; n < data->workload.nodes && status == NOPFS_OK; n++) {
		struct sim_cycle cycle;
		uint64_t count = 0;

		for (uint64_t k = n; k < data->workload.samples; k += data->workload.nodes)
			if (cache->holder[k] == n)
				members[count++] = (uint32_t)k;
		if (count == 0) {
			setup->infeasible = true;
			snprintf(setup->note, sizeof(setup->note),
			         "node %" PRIu32 " has no room for any sample of its shard", n);
			break;
		}
		status = sim_cycle_init(&cycle, members, count,
		                        data->workload.seed + 1000003ull * (n + 1));
		if (status != NOPFS_OK)
			break;
		for (uint64_t at = 0; at < data->length; at++)
			setup->streams[n][at] = sim_cycle_next(&cycle);
		sim_cycle_fini(&cycle);
	}
	free(members);
	return status;
}

nopfs_status sim_policy_sharding(const struct sim_dataset *data, const struct nopfs_model *model,
                                 enum sim_policy policy, struct sim_setup *setup)
{
	struct sim_cache *cache;
	uint64_t kept, kept_bytes;
	nopfs_status status;

	(void)policy;
	if (model->tiers == 0) {
		setup->infeasible = true;
		snprintf(setup->note, sizeof(setup->note), "needs a local tier");
		return NOPFS_OK;
	}
	setup->traits = (struct sim_traits){ .staging_threads = model->staging.threads,
		                             .staging_capacity = model->staging.capacity };
	status = sim_cache_create(data, model, true, &cache);
	if (status != NOPFS_OK)
		return status;
	setup->cache = cache;
	for (uint64_t k = 0; k < data->workload.samples; k++) {
		uint32_t node = (uint32_t)(k % data->workload.nodes);
		int tier = sim_cache_room(cache, model, node, model->tiers, data->sizes[k]);

		if (tier < 0)
			continue;
		sim_cache_keep(cache, node, (unsigned int)tier, k, data->sizes[k]);
		cache->holder[k] = node;
	}
	status = sim_fill_by_id(cache, setup);
	if (status == NOPFS_OK)
		status = shard_streams(data, setup);
	if (status != NOPFS_OK || setup->infeasible)
		return status;
	sim_cache_coverage(cache, data->sizes, &kept, &kept_bytes);
	snprintf(setup->note, sizeof(setup->note),
	         "shards hold %.1f%% of the dataset (staged before training); local reads only",
	         100.0 * (double)kept_bytes / (double)data->bytes);
	return NOPFS_OK;
}
