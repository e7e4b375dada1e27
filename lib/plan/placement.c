/*
 * The placement: checking the input, running the policy (owner-first,
 * coverage-aware in placement_owner.c, or NoPFS's greedy for comparison in
 * placement_greedy.c), and the queries on the result.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/parallel.h"
#include "placement.h"
#include "placement_internal.h"

#define NOT_KEPT 0 /* local_tier entries hold tier + 1 */

/* ------------------------------------------------------------------------
 * Allocation and teardown.
 */

void nopfs_placement_destroy(struct nopfs_placement *p)
{
	if (!p)
		return;
	if (p->local_tier)
		for (uint32_t n = 0; n < p->nodes; n++)
			free(p->local_tier[n]);
	free(p->local_tier);
	free(p->usage);
	free(p->free_room);
	free(p->tiers);
	free(p->primary_index);
	free(p->primary_offset);
	free(p->holder_tier);
	free(p->holder);
	free(p->owner_reads);
	free(p->owner_first);
	free(p->owner);
	nopfs_access_table_destroy(p->table);
	free(p);
}

static nopfs_status placement_alloc(const struct nopfs_placement_input *input, uint32_t scope,
                                    struct nopfs_placement **out)
{
	uint64_t samples = input->sampler.count;
	uint32_t nodes = input->layout->nodes;
	struct nopfs_placement *p = calloc(1, sizeof(*p));

	if (!p)
		goto out_nomem;
	p->policy = input->policy;
	p->samples = samples;
	p->nodes = nodes;
	p->epochs = input->epochs;
	p->scope = scope;
	p->sizes = input->sizes;
	p->max_size = input->max_size ? input->max_size : UINT64_MAX;
	p->held = input->held;
	p->threads = input->threads ? input->threads : 1;
	p->tiers = malloc(nodes * sizeof(*p->tiers));
	p->holder = malloc(samples * sizeof(*p->holder));
	p->holder_tier = malloc(samples);
	p->usage = calloc((size_t)nodes * NOPFS_TIERS_MAX, sizeof(*p->usage));
	p->free_room = calloc((size_t)nodes * NOPFS_TIERS_MAX, sizeof(*p->free_room));
	p->local_tier = calloc(nodes, sizeof(*p->local_tier));
	if (!p->tiers || !p->holder || !p->holder_tier || !p->usage || !p->free_room ||
	    !p->local_tier)
		goto out_free;
	memcpy(p->tiers, input->tiers, nodes * sizeof(*p->tiers));
	for (uint32_t n = 0; n < nodes; n++) {
		for (unsigned int t = 0; t < p->tiers[n].count; t++)
			p->free_room[(size_t)n * NOPFS_TIERS_MAX + t] = p->tiers[n].capacity[t];
		if (!nopfs_placement_has_node(p, n))
			continue;
		p->local_tier[n] = calloc(samples, 1);
		if (!p->local_tier[n])
			goto out_free;
	}
	for (uint64_t k = 0; k < samples; k++)
		p->holder[k] = NOPFS_NO_NODE;
	*out = p;
	return NOPFS_OK;

out_free:
	nopfs_placement_destroy(p);
out_nomem:
	nopfs_error("no memory for the placement of %" PRIu64 " samples on %" PRIu32 " nodes",
	            samples, nodes);
	return NOPFS_ERR_NOMEM;
}

/* ------------------------------------------------------------------------
 * Public queries.
 */

bool nopfs_placement_has_node(const struct nopfs_placement *p, uint32_t node)
{
	if (node >= p->nodes)
		return false;
	return p->scope == NOPFS_ALL_NODES || p->scope == node || p->policy == NOPFS_POLICY_GREEDY;
}

bool nopfs_placement_locate(const struct nopfs_placement *p, uint64_t sample, uint32_t *node,
                            unsigned int *tier)
{
	if (sample >= p->samples || p->holder[sample] == NOPFS_NO_NODE)
		return false;
	if (node)
		*node = p->holder[sample];
	if (tier)
		*tier = p->holder_tier[sample];
	return true;
}

int nopfs_placement_tier_on(const struct nopfs_placement *p, uint32_t node, uint64_t sample)
{
	if (sample >= p->samples || node >= p->nodes)
		return -1;
	if (p->local_tier[node])
		return (int)p->local_tier[node][sample] - 1;
	if (p->holder[sample] == node)
		return p->holder_tier[sample];
	return -1;
}

nopfs_status nopfs_placement_usage(const struct nopfs_placement *p, uint32_t node,
                                   unsigned int tier, struct nopfs_tier_usage *usage)
{
	if (node >= p->nodes || tier >= NOPFS_TIERS_MAX) {
		nopfs_error("no usage for node %" PRIu32 " tier %u: %" PRIu32 " nodes", node, tier,
		            p->nodes);
		return NOPFS_ERR_RANGE;
	}
	*usage = p->usage[(size_t)node * NOPFS_TIERS_MAX + tier];
	return NOPFS_OK;
}

/* One pass in sample order: running offsets per (node, tier). */
static bool compute_primary_places(struct nopfs_placement *p)
{
	uint64_t *running = calloc((size_t)p->nodes * NOPFS_TIERS_MAX, sizeof(*running));
	uint32_t *counted = calloc((size_t)p->nodes * NOPFS_TIERS_MAX, sizeof(*counted));

	p->primary_offset = malloc(p->samples * sizeof(*p->primary_offset));
	p->primary_index = malloc(p->samples * sizeof(*p->primary_index));
	if (!running || !counted || !p->primary_offset || !p->primary_index) {
		free(running);
		free(counted);
		free(p->primary_offset);
		free(p->primary_index);
		p->primary_offset = NULL;
		p->primary_index = NULL;
		nopfs_error("no memory for the primary places of %" PRIu64 " samples", p->samples);
		return false;
	}
	for (uint64_t k = 0; k < p->samples; k++) {
		size_t at;

		if (p->holder[k] == NOPFS_NO_NODE)
			continue;
		at = (size_t)p->holder[k] * NOPFS_TIERS_MAX + p->holder_tier[k];
		p->primary_offset[k] = running[at];
		p->primary_index[k] = counted[at]++;
		running[at] += p->sizes[k];
	}
	free(running);
	free(counted);
	return true;
}

bool nopfs_placement_primary_place(struct nopfs_placement *p, uint64_t sample, uint32_t *node,
                                   unsigned int *tier, uint64_t *offset, uint64_t *index)
{
	if (sample >= p->samples || p->holder[sample] == NOPFS_NO_NODE)
		return false;
	if (!p->primary_offset && !compute_primary_places(p))
		return false;
	*node = p->holder[sample];
	*tier = p->holder_tier[sample];
	*offset = p->primary_offset[sample];
	*index = p->primary_index[sample];
	return true;
}

const struct nopfs_access_table *nopfs_placement_accesses(const struct nopfs_placement *p)
{
	return p->table;
}

/* ------------------------------------------------------------------------
 * Predicted reads by source.
 */

struct stats_job {
	const struct nopfs_placement *p;
	uint32_t node; /* or NOPFS_ALL_NODES */
	uint64_t begin, end;
	struct nopfs_access_stats stats;
	uint64_t uncovered_reads, uncovered_bytes, naive_bytes;
	nopfs_status status;
};

static void stats_worker(void *arg)
{
	struct stats_job *job = arg;
	const struct nopfs_placement *p = job->p;
	struct nopfs_access_tally tally;

	job->status = nopfs_access_tally_init(&tally, p->table);
	if (job->status != NOPFS_OK)
		return;
	nopfs_access_tally_seek(&tally, p->table, job->begin);
	for (uint64_t k = job->begin; k < job->end; k++) {
		uint64_t size = p->sizes[k];
		unsigned int touched = nopfs_access_tally_sample(&tally, p->table, k);

		for (unsigned int i = 0; i < touched; i++) {
			uint32_t n = tally.touched[i];
			uint32_t reads = tally.count[n];
			nopfs_source source;

			job->naive_bytes += reads * size;
			if (p->holder[k] == NOPFS_NO_NODE) {
				job->uncovered_reads += reads;
				job->uncovered_bytes += reads * size;
			}
			if (job->node != NOPFS_ALL_NODES && n != job->node)
				continue;
			if (!nopfs_placement_has_node(p, n))
				continue;
			if (nopfs_placement_tier_on(p, n, k) >= 0)
				source = NOPFS_SOURCE_LOCAL;
			else if (p->holder[k] != NOPFS_NO_NODE)
				source = NOPFS_SOURCE_PEER;
			else
				source = NOPFS_SOURCE_PFS;
			job->stats.reads[source] += reads;
			job->stats.bytes[source] += reads * size;
		}
	}
	nopfs_access_tally_fini(&tally);
}

/* One pass over all reads: per-node stats and the job-wide totals. */
static nopfs_status run_stats(const struct nopfs_placement *p, uint32_t node,
                              struct stats_job *total)
{
	unsigned int threads = p->threads;
	struct stats_job *jobs = calloc(threads, sizeof(*jobs));
	nopfs_status status = NOPFS_OK;

	if (!jobs) {
		nopfs_error("no memory for placement statistics");
		return NOPFS_ERR_NOMEM;
	}
	for (unsigned int t = 0; t < threads; t++) {
		jobs[t].p = p;
		jobs[t].node = node;
		jobs[t].begin = p->samples * t / threads;
		jobs[t].end = p->samples * (t + 1) / threads;
	}
	nopfs_parallel_run(stats_worker, jobs, sizeof(*jobs), threads);
	memset(total, 0, sizeof(*total));
	for (unsigned int t = 0; t < threads; t++) {
		if (jobs[t].status != NOPFS_OK)
			status = jobs[t].status;
		for (int s = 0; s < 3; s++) {
			total->stats.reads[s] += jobs[t].stats.reads[s];
			total->stats.bytes[s] += jobs[t].stats.bytes[s];
		}
		total->uncovered_reads += jobs[t].uncovered_reads;
		total->uncovered_bytes += jobs[t].uncovered_bytes;
		total->naive_bytes += jobs[t].naive_bytes;
	}
	free(jobs);
	return status;
}

nopfs_status nopfs_placement_access_stats(const struct nopfs_placement *p, uint32_t node,
                                          struct nopfs_access_stats *stats)
{
	struct stats_job total;
	nopfs_status status;

	if (node != NOPFS_ALL_NODES && !nopfs_placement_has_node(p, node)) {
		nopfs_error("node %" PRIu32 " is outside the placement's scope", node);
		return NOPFS_ERR_RANGE;
	}
	status = run_stats(p, node, &total);
	if (status != NOPFS_OK)
		return status;
	*stats = total.stats;
	return NOPFS_OK;
}

void nopfs_placement_summary(const struct nopfs_placement *p,
                             struct nopfs_placement_summary *summary)
{
	struct stats_job total;

	memset(summary, 0, sizeof(*summary));
	summary->samples = p->samples;
	for (uint64_t k = 0; k < p->samples; k++) {
		summary->dataset_bytes += p->sizes[k];
		if (p->holder[k] != NOPFS_NO_NODE) {
			summary->covered_samples++;
			summary->covered_bytes += p->sizes[k];
		}
	}
	for (size_t i = 0; i < (size_t)p->nodes * NOPFS_TIERS_MAX; i++) {
		summary->copies += p->usage[i].samples;
		summary->copy_bytes += p->usage[i].bytes;
	}
	summary->replicas_complete =
	        p->scope == NOPFS_ALL_NODES || p->policy == NOPFS_POLICY_GREEDY;
	if (run_stats(p, NOPFS_ALL_NODES, &total) != NOPFS_OK)
		return; /* logged; the counts above stay valid */
	summary->naive_pfs_bytes = total.naive_bytes;
	summary->uncovered_reads = total.uncovered_reads;
	if (p->policy == NOPFS_POLICY_GREEDY)
		summary->pfs_bytes = summary->copy_bytes + total.uncovered_bytes;
	else
		summary->pfs_bytes = summary->covered_bytes + total.uncovered_bytes;
}

/* ------------------------------------------------------------------------
 * Entry point.
 */

static nopfs_status check_input(const struct nopfs_placement_input *input, uint32_t scope)
{
	const struct nopfs_layout *layout = input->layout;

	if (input->sampler.world_size != layout->world_size) {
		nopfs_error("sampler world size %" PRIu32 " differs from the layout's %" PRIu32,
		            input->sampler.world_size, layout->world_size);
		return NOPFS_ERR_INVALID;
	}
	if (input->epochs == 0 || input->epochs >= UINT16_MAX) {
		nopfs_error("%" PRIu32 " epochs: need 1 .. %d", input->epochs, UINT16_MAX - 1);
		return NOPFS_ERR_RANGE;
	}
	if (scope != NOPFS_ALL_NODES && scope >= layout->nodes) {
		nopfs_error("node %" PRIu32 " does not exist: the layout has %" PRIu32 " nodes",
		            scope, layout->nodes);
		return NOPFS_ERR_RANGE;
	}
	for (uint32_t n = 0; n < layout->nodes; n++) {
		if (input->tiers[n].count > NOPFS_TIERS_MAX) {
			nopfs_error("node %" PRIu32 " has %u tiers, at most %d are supported", n,
			            input->tiers[n].count, NOPFS_TIERS_MAX);
			return NOPFS_ERR_RANGE;
		}
	}
	return NOPFS_OK;
}

nopfs_status nopfs_placement_compute(const struct nopfs_placement_input *input, uint32_t scope,
                                     struct nopfs_placement **out)
{
	struct nopfs_placement *p;
	nopfs_status status;

	status = check_input(input, scope);
	if (status != NOPFS_OK)
		return status;
	status = placement_alloc(input, scope, &p);
	if (status != NOPFS_OK)
		return status;
	status = nopfs_access_table_build(&input->sampler, input->epochs, input->layout, p->threads,
	                                  &p->table);
	if (status != NOPFS_OK)
		goto out_destroy;
	if (input->policy == NOPFS_POLICY_GREEDY)
		status = nopfs_placement_run_greedy(p);
	else
		status = nopfs_placement_run_owner_first(p);
	if (status != NOPFS_OK)
		goto out_destroy;
	*out = p;
	return NOPFS_OK;

out_destroy:
	nopfs_placement_destroy(p);
	return status;
}
