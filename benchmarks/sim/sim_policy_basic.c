/*
 * The policies without local caches (NoPFS section 6):
 *  Perfect        no stalls: every sample is in the staging buffer when the
 *                 worker wants it, and the workers' compute is balanced: the
 *                 bytes of all the sampler's global batches over N (at least
 *                 the largest sample), divided by c. The lower bound of
 *                 every policy that computes the sampler's batches, whichever
 *                 worker it deals each sample to (LocalityAware deals them
 *                 by locality); the sampler's own shards may take longer.
 *  Naive          loads from the PFS with no prefetching or caching: one
 *                 thread fetches, preprocesses, then the worker computes, one
 *                 sample after the other (staging capacity 0).
 *  StagingBuffer  p_0 threads fill the staging buffer in stream order from
 *                 the PFS and samples leave it once consumed: double
 *                 buffering or tf.data.
 */
#include "config.h"

#include <stdio.h>

#include "sim_engine.h"

/* The sampler's slowest shard over the balanced compute (>= 1). */
static double slowest_shard(const struct sim_dataset *data)
{
	uint64_t all = 0, most = 0;

	for (uint32_t n = 0; n < data->workload.nodes; n++) {
		uint64_t bytes = 0;

		for (uint64_t at = 0; at < data->length; at++)
			bytes += data->sizes[data->streams[n][at]];
		all += bytes;
		most = bytes > most ? bytes : most;
	}
	return all ? (double)most * data->workload.nodes / (double)all : 1;
}

nopfs_status sim_policy_basic(const struct sim_dataset *data, const struct nopfs_model *model,
                              enum sim_policy policy, struct sim_setup *setup)
{
	switch (policy) {
	case SIM_PERFECT:
		setup->traits = (struct sim_traits){ .perfect = true, .staging_threads = 1 };
		snprintf(setup->note, sizeof(setup->note),
		         "lower bound: compute only, the workers' bytes balanced (the sampler's "
		         "slowest shard: %.4f x)",
		         slowest_shard(data));
		break;
	case SIM_NAIVE:
		setup->traits = (struct sim_traits){ .staging_threads = 1, .staging_capacity = 0 };
		snprintf(setup->note, sizeof(setup->note),
		         "1 thread, no overlap: PFS read, preprocess, compute in turn");
		break;
	default:
		setup->traits = (struct sim_traits){ .staging_threads = model->staging.threads,
			                             .staging_capacity = model->staging.capacity };
		snprintf(setup->note, sizeof(setup->note),
		         "%u threads prefetch from the PFS in stream order",
		         model->staging.threads);
		break;
	}
	return NOPFS_OK;
}
