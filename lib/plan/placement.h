/*
 * Placement: which node keeps each sample, in which tier, computed per node
 * over all epochs and identically on every node from the same small inputs.
 * Two policies: ours (owner-first) and NoPFS's greedy one, for comparison;
 * see docs/architecture.md (Placement).
 */
#ifndef NOPFS_PLACEMENT_H
#define NOPFS_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "access.h"
#include "layout.h"
#include "model.h"
#include "sampler.h"
#include "common/status.h"
#include "tierspec.h"

#define NOPFS_ALL_NODES UINT32_MAX

typedef enum nopfs_policy {
	NOPFS_POLICY_OWNER_FIRST = 0,
	NOPFS_POLICY_GREEDY = 1,
} nopfs_policy;

/* The tier capacities of one node in bytes, fastest tier first. */
struct nopfs_node_tiers {
	unsigned int count;
	uint64_t capacity[NOPFS_TIERS_MAX];
};

struct nopfs_placement_input {
	struct nopfs_sampler sampler; /* world_size must equal layout->world_size */
	uint32_t epochs;
	const uint64_t *sizes; /* sampler.count entries */
	uint64_t max_size;     /* larger samples are never kept (read from the PFS); 0: none */
	const struct nopfs_layout *layout;
	const struct nopfs_node_tiers *tiers; /* layout->nodes entries */
	nopfs_policy policy;
	unsigned int threads; /* 0 means 1; the plan does not depend on it */
	/*
	 * Owner-first: per node (layout->nodes entries), a bit per sample
	 * (sample k: bit k % 8 of byte k / 8) for what the node already holds
	 * from an earlier job, or NULL (the array too): a node holding a sample
	 * owns it (the first reader among them, else the first), so the
	 * PFS is not read again for it; its readers fill from that node.
	 */
	const uint8_t *const *held;
};

struct nopfs_placement;

/*
 * Compute the placement. @scope is the node whose own view (replicas, local
 * tiers, predicted shares) is wanted, or NOPFS_ALL_NODES for every node (the
 * planner; costs nodes x samples bytes). The greedy policy always computes
 * every node. On success *out owns a new placement (nopfs_placement_destroy()).
 */
nopfs_status nopfs_placement_compute(const struct nopfs_placement_input *input, uint32_t scope,
                                     struct nopfs_placement **out);

void nopfs_placement_destroy(struct nopfs_placement *placement);

/*
 * The primary copy of @sample: true with *node and *tier (may be NULL) set
 * when some node keeps it, false when it is read from the PFS. Under the
 * greedy policy the primary is the lowest-numbered node keeping a copy.
 */
bool nopfs_placement_locate(const struct nopfs_placement *placement, uint64_t sample,
                            uint32_t *node, unsigned int *tier);

/*
 * The tier in which @node keeps @sample (primary or replica), or -1. @node
 * must be in the scope the placement was computed for.
 */
int nopfs_placement_tier_on(const struct nopfs_placement *placement, uint32_t node,
                            uint64_t sample);

/* Whether @node is in the computed scope. */
bool nopfs_placement_has_node(const struct nopfs_placement *placement, uint32_t node);

/* Per node (in scope) and tier: samples and bytes kept, replicas among them. */
struct nopfs_tier_usage {
	uint64_t samples;
	uint64_t bytes;
	uint64_t replica_samples;
	uint64_t replica_bytes;
};
nopfs_status nopfs_placement_usage(const struct nopfs_placement *placement, uint32_t node,
                                   unsigned int tier, struct nopfs_tier_usage *usage);

/* Predicted reads of one node, or all, over the E epochs, by source. */
struct nopfs_access_stats {
	uint64_t reads[3]; /* indexed by nopfs_source: local, peer, PFS */
	uint64_t bytes[3];
};

/*
 * Predicted reads of @node (NOPFS_ALL_NODES: of all nodes in scope): local
 * when the node keeps the sample, peer when another node does, PFS otherwise.
 */
nopfs_status nopfs_placement_access_stats(const struct nopfs_placement *placement, uint32_t node,
                                          struct nopfs_access_stats *stats);

/* Whole-job figures. */
struct nopfs_placement_summary {
	uint64_t dataset_bytes;   /* S */
	uint64_t samples;         /* F */
	uint64_t covered_samples; /* kept by at least one node */
	uint64_t covered_bytes;
	uint64_t copies; /* primary + replica copies (greedy: all copies) */
	uint64_t copy_bytes;
	uint64_t naive_pfs_bytes; /* every read from the PFS: about E x S */
	uint64_t pfs_bytes;       /* predicted PFS bytes of this policy */
	uint64_t uncovered_reads; /* reads of samples nobody keeps */
	bool replicas_complete;   /* copies count every node's replicas */
};

/*
 * Fill @summary. Under owner-first, each kept sample is read from the PFS once
 * (by its primary holder; everyone else fills from a peer), and every read of
 * an uncovered sample goes to the PFS. Under greedy, each copy is read from
 * the PFS once, plus the uncovered reads.
 */
void nopfs_placement_summary(const struct nopfs_placement *placement,
                             struct nopfs_placement_summary *summary);

/*
 * Where the primary copy of @sample sits in its holder's tier, as every node
 * can compute it: a tier lays out its primary samples first, in sample order,
 * packed (then the holder's replicas, which only the holder knows). true
 * with *node, *tier, *offset (bytes into the tier) and *index (its rank among
 * the tier's primaries) when some node keeps @sample. The first call computes
 * the offsets of all samples (12 bytes per sample); not thread-safe until then.
 */
bool nopfs_placement_primary_place(struct nopfs_placement *placement, uint64_t sample,
                                   uint32_t *node, unsigned int *tier, uint64_t *offset,
                                   uint64_t *index);

/* The access table the placement was computed from (owned by the placement). */
const struct nopfs_access_table *nopfs_placement_accesses(const struct nopfs_placement *placement);

#endif
