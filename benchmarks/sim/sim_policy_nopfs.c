/*
 * NoPFS (SC'21 section 5) and ours, both from the lib's placement code.
 *
 *  NoPFS   NOPFS_POLICY_GREEDY: each node keeps the samples it reads most,
 *          fastest tier first. Its tier prefetchers fetch every planned copy
 *          from the PFS in the order the node first needs it; every node
 *          knows every copy (NoPFS allgathers the plans) and reads the
 *          fastest source that has it; a staging thread that finds a sample
 *          planned here but not fetched yet fetches it from the PFS and
 *          keeps it (NoPFS's fetch_and_cache).
 *  nopfs   NOPFS_POLICY_OWNER_FIRST: owners, coverage, then replicas. Peers
 *          see the primary copies only (replicas are private). Tier fills
 *          read the primary copy when one exists or is on its way (waiting
 *          for it), and replicas whose primary is not there yet are tried
 *          again at the end of the list; staging threads may also wait for
 *          a peer copy in flight when that beats the PFS.
 * Fill order: a node's own samples at its first read of them, samples it
 * keeps for others at the first read by anyone.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "plan/placement.h"
#include "sim_engine.h"

static nopfs_status plan(const struct sim_dataset *data, const struct nopfs_model *model,
                         nopfs_policy policy, unsigned int threads, struct sim_cache *cache)
{
	uint32_t nodes = data->workload.nodes;
	struct nopfs_node_tiers *tiers = calloc(nodes, sizeof(*tiers));
	struct nopfs_placement_input input = {
		.sampler = data->sampler,
		.epochs = data->workload.epochs,
		.sizes = data->sizes,
		.layout = data->layout,
		.tiers = tiers,
		.policy = policy,
		.threads = threads,
	};
	struct nopfs_placement *placement;
	nopfs_status status;

	if (!tiers) {
		nopfs_error("no memory for the tiers of %" PRIu32 " nodes", nodes);
		return NOPFS_ERR_NOMEM;
	}
	for (uint32_t n = 0; n < nodes; n++) {
		tiers[n].count = model->tiers;
		for (unsigned int t = 0; t < model->tiers; t++)
			tiers[n].capacity[t] = model->tier[t].capacity;
	}
	status = nopfs_placement_compute(&input, NOPFS_ALL_NODES, &placement);
	free(tiers);
	if (status != NOPFS_OK)
		return status;
	for (uint32_t n = 0; n < nodes; n++) {
		for (uint64_t k = 0; k < data->workload.samples; k++) {
			int tier = nopfs_placement_tier_on(placement, n, k);

			if (tier >= 0)
				sim_cache_keep(cache, n, (unsigned int)tier, k, data->sizes[k]);
		}
	}
	if (cache->holder) {
		for (uint64_t k = 0; k < data->workload.samples; k++) {
			uint32_t node;

			if (nopfs_placement_locate(placement, k, &node, NULL))
				cache->holder[k] = node;
		}
	}
	nopfs_placement_destroy(placement);
	return NOPFS_OK;
}

static void describe(const struct sim_dataset *data, const struct sim_cache *cache,
                     struct sim_setup *setup)
{
	uint64_t kept, kept_bytes, copy_bytes = 0;

	sim_cache_coverage(cache, data->sizes, &kept, &kept_bytes);
	for (size_t i = 0; i < (size_t)cache->nodes * NOPFS_MODEL_TIERS; i++)
		copy_bytes += cache->used[i];
	snprintf(setup->note, sizeof(setup->note),
	         "caches cover %.1f%% of the dataset; copies %.2f x S",
	         100.0 * (double)kept_bytes / (double)data->bytes,
	         (double)copy_bytes / (double)data->bytes);
}

nopfs_status sim_policy_nopfs(const struct sim_dataset *data, const struct nopfs_model *model,
                              enum sim_policy policy, unsigned int threads, struct sim_setup *setup)
{
	bool ours = policy == SIM_NOPFS_OURS;
	struct sim_cache *cache;
	nopfs_status status;

	setup->traits = (struct sim_traits){ .staging_threads = model->staging.threads,
		                             .staging_capacity = model->staging.capacity,
		                             .peers = true,
		                             .peer_wait = ours,
		                             .helpout_peer = ours,
		                             .fill_peer = ours,
		                             .replicas_visible = !ours };
	if (model->tiers == 0) {
		snprintf(setup->note, sizeof(setup->note), "no local tier: staging buffer only");
		return NOPFS_OK;
	}
	status = sim_cache_create(data, model, ours, &cache);
	if (status != NOPFS_OK)
		return status;
	setup->cache = cache;
	status = plan(data, model, ours ? NOPFS_POLICY_OWNER_FIRST : NOPFS_POLICY_GREEDY, threads,
	              cache);
	if (status != NOPFS_OK)
		return status;
	status = sim_fill_by_need(data, cache, data->streams, setup);
	if (status != NOPFS_OK)
		return status;
	describe(data, cache, setup);
	return NOPFS_OK;
}
