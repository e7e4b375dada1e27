/*
 * The job as this agent sees it: the catalog, the sampler of the training
 * step, the task layout over the nodes, and the placement computed from them.
 * Built so that a node list from PMIx slots in: in standalone mode this node
 * is node 0 and the ranks it does not run live on one other, tier-less node.
 */
#ifndef NOPFS_AGENT_JOB_H
#define NOPFS_AGENT_JOB_H

#include <stdint.h>

#include "catalog/catalog.h"
#include "plan/layout.h"
#include "options.h"
#include "plan/placement.h"
#include "plan/sampler.h"
#include "stats.h"

struct job {
	struct nopfs_catalog *catalog;
	struct nopfs_sampler sampler; /* count and world size filled in */
	uint32_t epochs;
	uint64_t per_rank; /* samples per rank per epoch */
	uint64_t dataset_bytes;
	uint64_t max_sample_size;            /* the largest sample served, at most the limit */
	uint64_t size_limit;                 /* --max-sample-size: larger samples are not served */
	uint64_t too_large, too_large_bytes; /* samples over it, and their bytes */
	uint32_t node;                       /* this node */
	struct nopfs_layout *layout;
	struct nopfs_node_tiers *node_tiers; /* layout->nodes entries */
	struct nopfs_placement *placement;   /* scope: this node */
	uint32_t *local_ranks;               /* this node's ranks, sorted (owned) */
	uint32_t local_rank_count;
	double plan_seconds;
	bool catalog_from_cache;
};

/*
 * Lay out the training step's ranks over the nodes, this node being @node of
 * @nodes: standalone (@nodes 0), this node runs --ranks and the others live
 * on one other node; with PMIx, --step-tasks and --step-distribution give
 * the layout (it must list @nodes nodes) and our ranks follow from it.
 */
nopfs_status job_layout(struct job *job, const struct agent_options *options, uint32_t node,
                        uint32_t nodes);

/* Open (or build) the catalog with the options' cache. */
nopfs_status job_open_catalog(const struct agent_options *options, struct nopfs_catalog **catalog,
                              bool *from_cache);

/* The same, its stats from the dataset's metadata @meta just scanned. */
nopfs_status job_open_catalog_with(const struct agent_options *options,
                                   const struct nopfs_meta_view *meta,
                                   struct nopfs_catalog **catalog, bool *from_cache);

/*
 * Take over @catalog (the job owns it now) and fill the sampler. Samples
 * larger than --max-sample-size are not served.
 */
nopfs_status job_use_catalog(struct job *job, const struct agent_options *options,
                             struct nopfs_catalog *catalog);

/*
 * Compute the placement with every node's tier capacities @tiers (layout
 * nodes entries, fastest tier first) and what each holds from earlier jobs
 * (@held, placement.h; NULL: nothing). Logs this node's part.
 */
nopfs_status job_plan(struct job *job, const struct agent_options *options,
                      const struct nopfs_node_tiers *tiers, const uint8_t *const *held);

/* Whether the agent keeps and serves @sample (not larger than --max-sample-size). */
static inline bool job_serves(const struct job *job, nopfs_sample_id sample)
{
	return nopfs_catalog_size(job->catalog, sample) <= job->size_limit;
}

/* Whether @rank runs on this node. */
bool job_is_local_rank(const struct job *job, uint32_t rank);

/*
 * The global step (epoch * per_rank + position / world size) at which each
 * of @samples is first read by any rank: the order in which tiers are filled
 * so that a sample is there before anyone needs it. Replays epochs until all
 * are found; samples never read get UINT64_MAX.
 */
nopfs_status job_first_steps(const struct job *job, const nopfs_sample_id *samples, uint64_t count,
                             uint64_t *steps);

void job_fini(struct job *job);

#endif
