/*
 * DeepIO (Zhu et al., MASCOTS'18), as NoPFS section 6 simulates it: the
 * dataset is spread over the nodes' memory (the first, fastest tier),
 * assigned without regard to access frequency: sample k goes to node
 * k mod N while that node's memory has room. Shards are loaded from the PFS
 * before training (stage-in, p_1 threads per node, all nodes at once).
 *  ordered     the sampler's order; a sample in some node's memory comes
 *              from there (local or over the network), any other from the
 *              PFS.
 *  optimistic  never waits for the PFS: a sample in nobody's memory is
 *              replaced by the next one of a shuffle of the worker's own
 *              shard, so the access order changes and the samples nobody
 *              holds are never read.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "plan/access.h"
#include "common/log.h"
#include "sim_engine.h"

static nopfs_status shard_memory(const struct sim_dataset *data, const struct nopfs_model *model,
                                 struct sim_setup *setup)
{
	struct sim_cache *cache;
	nopfs_status status;

	status = sim_cache_create(data, model, true, &cache);
	if (status != NOPFS_OK)
		return status;
	setup->cache = cache;
	for (uint64_t k = 0; k < data->workload.samples; k++) {
		uint32_t node = (uint32_t)(k % data->workload.nodes);

		if (sim_cache_room(cache, model, node, 1, data->sizes[k]) < 0)
			continue;
		sim_cache_keep(cache, node, 0, k, data->sizes[k]);
		cache->holder[k] = node;
	}
	return sim_fill_by_id(cache, setup);
}

/* Optimistic order: uncached samples replaced from the worker's own shard. */
static nopfs_status optimistic_streams(const struct sim_dataset *data, struct sim_setup *setup)
{
	const struct sim_cache *cache = setup->cache;
	uint32_t nodes = data->workload.nodes;
	uint32_t *members = malloc(data->workload.samples * sizeof(*members));
	nopfs_status status;

	if (!members) {
		nopfs_error("no memory for DeepIO's shards");
		return NOPFS_ERR_NOMEM;
	}
	status = sim_streams_alloc(data, &setup->streams);
	for (uint32_t n = 0; n < nodes && status == NOPFS_OK; n++) {
		struct sim_cycle cycle;
		uint64_t count = 0;

		for (uint64_t k = 0; k < data->workload.samples; k++)
			if (cache->holder[k] == n)
				members[count++] = (uint32_t)k;
		if (count == 0) {
			setup->infeasible = true;
			snprintf(setup->note, sizeof(setup->note),
			         "node %" PRIu32 " has no memory shard to read from", n);
			break;
		}
		status = sim_cycle_init(&cycle, members, count,
		                        data->workload.seed + 1000003ull * (n + 1));
		if (status != NOPFS_OK)
			break;
		for (uint64_t at = 0; at < data->length; at++) {
			uint32_t k = data->streams[n][at];

			setup->streams[n][at] =
			        cache->holder[k] != NOPFS_NO_NODE ? k : sim_cycle_next(&cycle);
		}
		sim_cycle_fini(&cycle);
	}
	free(members);
	return status;
}

nopfs_status sim_policy_deepio(const struct sim_dataset *data, const struct nopfs_model *model,
                               enum sim_policy policy, struct sim_setup *setup)
{
	uint64_t kept, kept_bytes;
	nopfs_status status;

	if (model->tiers == 0 || model->tier[0].capacity == 0) {
		setup->infeasible = true;
		snprintf(setup->note, sizeof(setup->note), "needs a memory tier");
		return NOPFS_OK;
	}
	setup->traits = (struct sim_traits){ .staging_threads = model->staging.threads,
		                             .staging_capacity = model->staging.capacity,
		                             .peers = true,
		                             .helpout_peer = true };
	status = shard_memory(data, model, setup);
	if (status == NOPFS_OK && policy == SIM_DEEPIO_OPTIMISTIC)
		status = optimistic_streams(data, setup);
	if (status != NOPFS_OK || setup->infeasible)
		return status;
	sim_cache_coverage(setup->cache, data->sizes, &kept, &kept_bytes);
	snprintf(setup->note, sizeof(setup->note),
	         "memory holds %.1f%% of the dataset (loaded before training)%s",
	         100.0 * (double)kept_bytes / (double)data->bytes,
	         policy == SIM_DEEPIO_OPTIMISTIC ? "; uncached samples replaced" : "");
	return NOPFS_OK;
}
