/* The catalog, the layout and the plan of the job. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "job.h"
#include "common/log.h"
#include "common/units.h"
#include "common/clock.h"

nopfs_status job_open_catalog(const struct agent_options *options, struct nopfs_catalog **catalog,
                              bool *from_cache)
{
	return nopfs_catalog_open(&options->catalog, catalog, from_cache);
}

nopfs_status job_open_catalog_with(const struct agent_options *options,
                                   const struct nopfs_meta_view *meta,
                                   struct nopfs_catalog **catalog, bool *from_cache)
{
	struct nopfs_catalog_options with = options->catalog;

	with.meta = meta;
	return nopfs_catalog_open(&with, catalog, from_cache);
}

nopfs_status job_use_catalog(struct job *job, const struct agent_options *options,
                             struct nopfs_catalog *catalog)
{
	const uint64_t *sizes;
	nopfs_status status;
	char bytes[32];

	job->catalog = catalog;
	job->sampler = options->sampler;
	job->sampler.world_size = job->layout->world_size;
	job->sampler.count = nopfs_catalog_count(catalog);
	job->epochs = options->epochs - options->sampler.first_epoch; /* those planned */
	status = nopfs_sampler_validate(&job->sampler);
	if (status != NOPFS_OK)
		return status;
	job->per_rank = nopfs_sampler_per_rank(&job->sampler);
	job->dataset_bytes = nopfs_catalog_total_bytes(catalog);
	sizes = nopfs_catalog_sizes(catalog);
	job->size_limit = options->max_sample_size;
	job->max_sample_size = 0;
	job->too_large = job->too_large_bytes = 0;
	for (uint64_t k = 0; k < job->sampler.count; k++) {
		if (sizes[k] > job->size_limit) {
			job->too_large++;
			job->too_large_bytes += sizes[k];
		} else if (sizes[k] > job->max_sample_size) {
			job->max_sample_size = sizes[k];
		}
	}
	nopfs_info("catalog: %" PRIu64 " samples, %s", job->sampler.count,
	           nopfs_format_size(job->dataset_bytes, bytes, sizeof(bytes)));
	if (job->too_large) {
		char limit[32];

		nopfs_warning("catalog: %" PRIu64 " samples (%s) are larger than --max-sample-size "
		              "%s: not kept, the ranks read them from the PFS themselves",
		              job->too_large,
		              nopfs_format_size(job->too_large_bytes, bytes, sizeof(bytes)),
		              nopfs_format_size(job->size_limit, limit, sizeof(limit)));
	}
	return NOPFS_OK;
}

bool job_is_local_rank(const struct job *job, uint32_t rank)
{
	return rank < job->layout->world_size && job->layout->node_of_rank[rank] == job->node;
}

/* Standalone: this node runs the given ranks; the rest run on node 1. */
static nopfs_status standalone_layout(struct job *job, const struct agent_options *options)
{
	uint32_t world = options->sampler.world_size;
	uint32_t *map = malloc(world * sizeof(*map));
	uint32_t nodes = options->local_rank_count == world ? 1 : 2;
	nopfs_status status;

	if (!map) {
		nopfs_error("no memory for the layout of %" PRIu32 " ranks", world);
		return NOPFS_ERR_NOMEM;
	}
	for (uint32_t r = 0; r < world; r++)
		map[r] = 1;
	for (uint32_t i = 0; i < options->local_rank_count; i++)
		map[options->local_ranks[i]] = 0;
	job->node = 0;
	status = nopfs_layout_from_map(nodes, world, map, &job->layout);
	free(map);
	return status;
}

/* The step's layout from --step-tasks over @nodes nodes. */
static nopfs_status step_layout(struct job *job, const struct agent_options *options, uint32_t node,
                                uint32_t nodes)
{
	uint32_t *counts, listed;
	nopfs_status status;

	status = nopfs_layout_parse_tasks(options->step_tasks, &counts, &listed);
	if (status != NOPFS_OK)
		return status;
	if (listed != nodes) {
		nopfs_error(
		        "--step-tasks '%s' lists %" PRIu32 " nodes, but the agent step has %" PRIu32
		        " tasks: run one agent per node (srun -N N -n N --ntasks-per-node=1; "
		        "inside a batch job, inherited SLURM_NTASKS overrides --ntasks-per-node)",
		        options->step_tasks, listed, nodes);
		free(counts);
		return NOPFS_ERR_INVALID;
	}
	status = nopfs_layout_create(nodes, counts, options->step_distribution,
	                             options->step_plane_size, &job->layout);
	free(counts);
	if (status != NOPFS_OK)
		return status;
	if (options->sampler.world_size && options->sampler.world_size != job->layout->world_size) {
		nopfs_error("--world-size %" PRIu32 " differs from the %" PRIu32
		            " tasks of --step-tasks '%s'",
		            options->sampler.world_size, job->layout->world_size,
		            options->step_tasks);
		return NOPFS_ERR_INVALID;
	}
	job->node = node;
	return NOPFS_OK;
}

nopfs_status job_layout(struct job *job, const struct agent_options *options, uint32_t node,
                        uint32_t nodes)
{
	nopfs_status status =
	        nodes ? step_layout(job, options, node, nodes) : standalone_layout(job, options);
	uint32_t count = 0;

	if (status != NOPFS_OK)
		return status;
	job->local_ranks =
	        malloc((job->layout->tasks_on_node[job->node] + 1) * sizeof(*job->local_ranks));
	if (!job->local_ranks) {
		nopfs_error("no memory for this node's ranks");
		return NOPFS_ERR_NOMEM;
	}
	for (uint32_t r = 0; r < job->layout->world_size; r++)
		if (job->layout->node_of_rank[r] == job->node)
			job->local_ranks[count++] = r;
	job->local_rank_count = count;
	return NOPFS_OK;
}

nopfs_status job_plan(struct job *job, const struct agent_options *options,
                      const struct nopfs_node_tiers *tiers, const uint8_t *const *held)
{
	struct nopfs_placement_input input;
	struct nopfs_tier_usage usage;
	double start;
	nopfs_status status;
	char used[32], capacity[32];

	job->node_tiers = calloc(job->layout->nodes, sizeof(*job->node_tiers));
	if (!job->node_tiers) {
		nopfs_error("no memory for the tiers of %" PRIu32 " nodes", job->layout->nodes);
		return NOPFS_ERR_NOMEM;
	}
	memcpy(job->node_tiers, tiers, job->layout->nodes * sizeof(*tiers));
	input = (struct nopfs_placement_input){
		.sampler = job->sampler,
		.epochs = job->epochs,
		.sizes = nopfs_catalog_sizes(job->catalog),
		.max_size = job->size_limit,
		.layout = job->layout,
		.tiers = job->node_tiers,
		.policy = NOPFS_POLICY_OWNER_FIRST,
		.threads = 2,
		.held = held,
	};
	start = nopfs_clock_seconds();
	status = nopfs_placement_compute(&input, job->node, &job->placement);
	if (status != NOPFS_OK)
		return status;
	job->plan_seconds = nopfs_clock_seconds() - start;
	for (unsigned int t = 0; t < tiers[job->node].count; t++) {
		nopfs_placement_usage(job->placement, job->node, t, &usage);
		nopfs_info("plan: tier %u (%s) keeps %" PRIu64 " samples, %s of %s", t,
		           nopfs_tier_kind_name(options->tiers.tier[t].kind), usage.samples,
		           nopfs_format_size(usage.bytes, used, sizeof(used)),
		           nopfs_format_size(tiers[job->node].capacity[t], capacity,
		                             sizeof(capacity)));
	}
	nopfs_info("plan: node %" PRIu32 " of %" PRIu32 ", computed in %.3f s", job->node,
	           job->layout->nodes, job->plan_seconds);
	return NOPFS_OK;
}

nopfs_status job_first_steps(const struct job *job, const nopfs_sample_id *samples, uint64_t count,
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
		for (uint64_t p = nopfs_sampler_first_position(sampler, e); p < total; p++) {
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
	free(job->local_ranks);
	free(job->node_tiers);
	nopfs_layout_destroy(job->layout);
	nopfs_catalog_destroy(job->catalog);
	memset(job, 0, sizeof(*job));
}
