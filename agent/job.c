/* The catalog, the layout and the plan of the job. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "job.h"
#include "log.h"
#include "units.h"

static double seconds_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

nopfs_status job_load_catalog(struct job *job, const struct agent_options *options)
{
	struct timespec start;
	const uint64_t *sizes;
	bool from_cache = false;
	nopfs_status status;
	char bytes[32];

	clock_gettime(CLOCK_MONOTONIC, &start);
	status = nopfs_catalog_open(&options->catalog, &job->catalog, &from_cache);
	if (status != NOPFS_OK)
		return status;
	job->catalog_seconds = seconds_since(&start);
	job->catalog_from_cache = from_cache;
	job->sampler = options->sampler;
	job->sampler.count = nopfs_catalog_count(job->catalog);
	job->epochs = options->epochs;
	job->local_ranks = options->local_ranks;
	job->local_rank_count = options->local_rank_count;
	status = nopfs_sampler_validate(&job->sampler);
	if (status != NOPFS_OK)
		return status;
	job->per_rank = nopfs_sampler_per_rank(&job->sampler);
	job->dataset_bytes = nopfs_catalog_total_bytes(job->catalog);
	sizes = nopfs_catalog_sizes(job->catalog);
	for (uint64_t k = 0; k < job->sampler.count; k++)
		if (sizes[k] > job->max_sample_size)
			job->max_sample_size = sizes[k];
	nopfs_info("catalog: %" PRIu64 " samples, %s in %.3f s%s", job->sampler.count,
	           nopfs_format_size(job->dataset_bytes, bytes, sizeof(bytes)),
	           job->catalog_seconds, from_cache ? " (from cache)" : "");
	return NOPFS_OK;
}

bool job_is_local_rank(const struct job *job, uint32_t rank)
{
	return rank < job->layout->world_size && job->layout->node_of_rank[rank] == job->node;
}

/* Standalone: this node runs the given ranks; the rest run on node 1. */
static nopfs_status standalone_layout(struct job *job)
{
	uint32_t world = job->sampler.world_size;
	uint32_t *map = malloc(world * sizeof(*map));
	uint32_t nodes = job->local_rank_count == world ? 1 : 2;
	nopfs_status status;

	if (!map) {
		nopfs_error("no memory for the layout of %" PRIu32 " ranks", world);
		return NOPFS_ERR_NOMEM;
	}
	for (uint32_t r = 0; r < world; r++)
		map[r] = 1;
	for (uint32_t i = 0; i < job->local_rank_count; i++)
		map[job->local_ranks[i]] = 0;
	job->node = 0;
	status = nopfs_layout_from_map(nodes, world, map, &job->layout);
	free(map);
	return status;
}

nopfs_status job_plan(struct job *job, const struct agent_options *options,
                      const struct nopfs_node_tiers *tiers)
{
	struct nopfs_placement_input input;
	struct nopfs_tier_usage usage;
	struct timespec start;
	nopfs_status status;
	char used[32], capacity[32];

	status = standalone_layout(job);
	if (status != NOPFS_OK)
		return status;
	job->node_tiers = calloc(job->layout->nodes, sizeof(*job->node_tiers));
	if (!job->node_tiers) {
		nopfs_error("no memory for the tiers of %" PRIu32 " nodes", job->layout->nodes);
		return NOPFS_ERR_NOMEM;
	}
	job->node_tiers[job->node] = *tiers;
	input = (struct nopfs_placement_input){
		.sampler = job->sampler,
		.epochs = job->epochs,
		.sizes = nopfs_catalog_sizes(job->catalog),
		.layout = job->layout,
		.tiers = job->node_tiers,
		.policy = NOPFS_POLICY_OWNER_FIRST,
		.threads = 2,
	};
	clock_gettime(CLOCK_MONOTONIC, &start);
	status = nopfs_placement_compute(&input, job->node, &job->placement);
	if (status != NOPFS_OK)
		return status;
	job->plan_seconds = seconds_since(&start);
	for (unsigned int t = 0; t < tiers->count; t++) {
		nopfs_placement_usage(job->placement, job->node, t, &usage);
		nopfs_info("plan: tier %u (%s) keeps %" PRIu64 " samples, %s of %s", t,
		           nopfs_tier_kind_name(options->tiers.tier[t].kind), usage.samples,
		           nopfs_format_size(usage.bytes, used, sizeof(used)),
		           nopfs_format_size(tiers->capacity[t], capacity, sizeof(capacity)));
	}
	nopfs_info("plan: computed in %.3f s", job->plan_seconds);
	return NOPFS_OK;
}

nopfs_status job_first_steps(const struct job *job, const uint32_t *samples, uint64_t count,
                             uint64_t *steps)
{
	const struct nopfs_sampler *sampler = &job->sampler;
	uint64_t total = nopfs_sampler_total_size(sampler), left = count;
	uint64_t *first = malloc(sampler->count * sizeof(*first));
	uint32_t *perm = malloc(sampler->count * sizeof(*perm));

	if (!first || !perm) {
		free(first);
		free(perm);
		nopfs_error("no memory to order %" PRIu64 " samples", count);
		return NOPFS_ERR_NOMEM;
	}
	for (uint64_t k = 0; k < sampler->count; k++)
		first[k] = UINT64_MAX;
	for (uint64_t i = 0; i < count; i++)
		steps[i] = UINT64_MAX;
	for (uint32_t e = 0; e < job->epochs && left > 0; e++) {
		nopfs_sampler_permutation(sampler, e, perm);
		for (uint64_t p = 0; p < total; p++) {
			uint32_t k = nopfs_sampler_at(sampler, perm, p);

			if (first[k] == UINT64_MAX)
				first[k] = e * job->per_rank + p / sampler->world_size;
		}
		left = 0;
		for (uint64_t i = 0; i < count; i++) {
			steps[i] = first[samples[i]];
			left += steps[i] == UINT64_MAX;
		}
	}
	free(perm);
	free(first);
	return NOPFS_OK;
}

void job_fini(struct job *job)
{
	nopfs_placement_destroy(job->placement);
	free(job->node_tiers);
	nopfs_layout_destroy(job->layout);
	nopfs_catalog_destroy(job->catalog);
	memset(job, 0, sizeof(*job));
}
