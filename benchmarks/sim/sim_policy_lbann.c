/*
 * The LBANN data store (Jacobs et al., CLUSTER'19), as NoPFS section 6
 * simulates it. It keeps samples in memory only (the first, fastest tier)
 * and fails when the dataset exceeds the aggregate memory, N x d_1.
 *  dynamic  the sampler's order; in the first epoch each worker reads its
 *           samples from the PFS and keeps them (it becomes their owner);
 *           later epochs read every sample from its owner's memory.
 *  preload  before training each node loads samples k mod N from the PFS
 *           (stage-in); every epoch then reads from memory.
 */
#include "config.h"

#include <stdio.h>

#include "plan/access.h"
#include "sim_engine.h"

/* Owners: the first reader in epoch 0 (stream position order). */
static void own_first_epoch(const struct sim_dataset *data, const struct nopfs_model *model,
                            struct sim_cache *cache)
{
	for (uint64_t at = 0; at < data->per_rank; at++) {
		for (uint32_t r = 0; r < data->workload.nodes; r++) {
			uint32_t k = data->streams[r][at];

			if (cache->holder[k] != NOPFS_NO_NODE)
				continue;
			cache->holder[k] = r;
			if (sim_cache_room(cache, model, r, 1, data->sizes[k]) == 0)
				sim_cache_keep(cache, r, 0, k, data->sizes[k]);
		}
	}
	/* A sample the owner had no room for is read from the PFS every time. */
	for (uint64_t k = 0; k < data->workload.samples; k++)
		if (cache->holder[k] != NOPFS_NO_NODE &&
		    sim_cache_tier(cache, cache->holder[k], k) < 0)
			cache->holder[k] = NOPFS_NO_NODE;
}

static void own_round_robin(const struct sim_dataset *data, const struct nopfs_model *model,
                            struct sim_cache *cache)
{
	for (uint64_t k = 0; k < data->workload.samples; k++) {
		uint32_t node = (uint32_t)(k % data->workload.nodes);

		if (sim_cache_room(cache, model, node, 1, data->sizes[k]) != 0)
			continue;
		sim_cache_keep(cache, node, 0, k, data->sizes[k]);
		cache->holder[k] = node;
	}
}

nopfs_status sim_policy_lbann(const struct sim_dataset *data, const struct nopfs_model *model,
                              enum sim_policy policy, struct sim_setup *setup)
{
	double memory = model->tiers ? (double)model->tier[0].capacity : 0;
	double aggregate = memory * data->workload.nodes;
	struct sim_cache *cache;
	uint64_t kept, kept_bytes;
	nopfs_status status;

	if ((double)data->bytes > aggregate) {
		setup->infeasible = true;
		snprintf(setup->note, sizeof(setup->note),
		         "infeasible: dataset %.1f GB > aggregate memory %.1f GB",
		         data->bytes / 1e9, aggregate / 1e9);
		return NOPFS_OK;
	}
	setup->traits = (struct sim_traits){ .staging_threads = model->staging.threads,
		                             .staging_capacity = model->staging.capacity,
		                             .peers = true,
		                             .helpout_peer = true };
	status = sim_cache_create(data, model, true, &cache);
	if (status != NOPFS_OK)
		return status;
	setup->cache = cache;
	if (policy == SIM_LBANN_DYNAMIC) {
		own_first_epoch(data, model, cache);
	} else {
		own_round_robin(data, model, cache);
		status = sim_fill_by_id(cache, setup);
		if (status != NOPFS_OK)
			return status;
	}
	sim_cache_coverage(cache, data->sizes, &kept, &kept_bytes);
	snprintf(setup->note, sizeof(setup->note), "memory holds %.1f%% of the dataset%s",
	         100.0 * (double)kept_bytes / (double)data->bytes,
	         policy == SIM_LBANN_DYNAMIC ? ", kept as read in epoch 0" : ", preloaded");
	return NOPFS_OK;
}
