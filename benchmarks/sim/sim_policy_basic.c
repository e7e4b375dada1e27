/*
 * The policies without local caches (NoPFS section 6):
 *  Perfect        no stalls: every sample is in the staging buffer when the
 *                 worker wants it; the lower bound.
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

nopfs_status sim_policy_basic(const struct sim_dataset *data, const struct nopfs_model *model,
                              enum sim_policy policy, struct sim_setup *setup)
{
	(void)data;
	switch (policy) {
	case SIM_PERFECT:
		setup->traits = (struct sim_traits){ .perfect = true, .staging_threads = 1 };
		snprintf(setup->note, sizeof(setup->note), "lower bound: compute only");
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
