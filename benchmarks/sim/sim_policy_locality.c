/*
 * Locality-aware loading (Yang and Cong, HiPC'19), as NoPFS section 6
 * simulates it. In the first epoch each worker keeps what it reads in its
 * tiers (fastest with room first), so the caches are disjoint. From the
 * second epoch on, the sampler's global batches are kept (the randomization
 * is unchanged) but their samples are dealt to the workers that hold them:
 * a worker first takes the samples it keeps, up to its share of the batch;
 * the rest fill the workers with room, lowest rank first. Those come from a
 * peer or, when nobody keeps them, from the PFS. As in the paper, batches
 * are reordered when the simulation starts.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/access.h"
#include "common/log.h"
#include "sim_engine.h"

static void keep_first_epoch(const struct sim_dataset *data, const struct nopfs_model *model,
                             struct sim_cache *cache)
{
	for (uint32_t r = 0; r < data->workload.nodes; r++) {
		for (uint64_t at = 0; at < data->per_rank; at++) {
			uint32_t k = data->streams[r][at];
			int tier;

			if (cache->holder[k] != NOPFS_NO_NODE)
				continue; /* a padding read of a sample kept already */
			tier = sim_cache_room(cache, model, r, model->tiers, data->sizes[k]);
			if (tier < 0)
				continue;
			sim_cache_keep(cache, r, (unsigned int)tier, k, data->sizes[k]);
			cache->holder[k] = r;
		}
	}
}

/* Deal each global batch of epochs >= 1 to the workers keeping its samples. */
static nopfs_status reorder(const struct sim_dataset *data, const struct sim_cache *cache,
                            struct sim_setup *setup)
{
	uint32_t nodes = data->workload.nodes, batch = data->workload.batch;
	uint64_t per_rank = data->per_rank;
	uint64_t *taken = calloc(nodes, sizeof(*taken));
	uint32_t *left = malloc((size_t)nodes * batch * sizeof(*left));
	nopfs_status status;

	if (!taken || !left) {
		nopfs_error("no memory to reorder batches for %u workers", nodes);
		status = NOPFS_ERR_NOMEM;
		goto out;
	}
	status = sim_streams_alloc(data, &setup->streams);
	if (status != NOPFS_OK)
		goto out;
	for (uint32_t n = 0; n < nodes; n++)
		memcpy(setup->streams[n], data->streams[n], per_rank * sizeof(uint32_t));
	for (uint64_t base = per_rank; base < data->length; base += per_rank) {
		for (uint64_t lo = 0; lo < per_rank; lo += batch) {
			uint64_t quota = per_rank - lo < batch ? per_rank - lo : batch, count = 0;
			uint32_t rank = 0;

			memset(taken, 0, nodes * sizeof(*taken));
			for (uint64_t l = lo; l < lo + quota; l++) {
				for (uint32_t r = 0; r < nodes; r++) {
					uint32_t k = data->streams[r][base + l];
					uint32_t n = cache->holder[k];

					if (n != NOPFS_NO_NODE && taken[n] < quota)
						setup->streams[n][base + lo + taken[n]++] = k;
					else
						left[count++] = k;
				}
			}
			for (uint64_t i = 0; i < count; i++) {
				while (taken[rank] == quota)
					rank++;
				setup->streams[rank][base + lo + taken[rank]++] = left[i];
			}
		}
	}
out:
	free(left);
	free(taken);
	return status;
}

nopfs_status sim_policy_locality(const struct sim_dataset *data, const struct nopfs_model *model,
                                 enum sim_policy policy, struct sim_setup *setup)
{
	struct sim_cache *cache;
	uint64_t kept, kept_bytes;
	nopfs_status status;

	(void)policy;
	setup->traits = (struct sim_traits){ .staging_threads = model->staging.threads,
		                             .staging_capacity = model->staging.capacity,
		                             .peers = true,
		                             .helpout_peer = true };
	status = sim_cache_create(data, model, true, &cache);
	if (status != NOPFS_OK)
		return status;
	setup->cache = cache;
	keep_first_epoch(data, model, cache);
	status = reorder(data, cache, setup);
	if (status != NOPFS_OK)
		return status;
	sim_cache_coverage(cache, data->sizes, &kept, &kept_bytes);
	snprintf(setup->note, sizeof(setup->note),
	         "caches hold %.1f%% of the dataset (kept as read in epoch 0); batches dealt by "
	         "locality",
	         100.0 * (double)kept_bytes / (double)data->bytes);
	return NOPFS_OK;
}
