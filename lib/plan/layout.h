/*
 * Task layout: which node runs each rank of the training step.
 *
 * Placement is per node, so it needs the real layout: Slurm's block, cyclic
 * and plane distributions with uneven task counts per node, or any explicit
 * map learned from the tasks themselves.
 */
#ifndef NOPFS_LAYOUT_H
#define NOPFS_LAYOUT_H

#include <stdint.h>

#include "common/status.h"

typedef enum nopfs_distribution {
	NOPFS_DISTRIBUTION_BLOCK = 0,
	NOPFS_DISTRIBUTION_CYCLIC = 1,
	NOPFS_DISTRIBUTION_PLANE = 2,
} nopfs_distribution;

struct nopfs_layout {
	uint32_t world_size;     /* ranks */
	uint32_t nodes;          /* nodes, indexed 0 .. nodes - 1 */
	uint32_t *node_of_rank;  /* world_size entries */
	uint32_t *tasks_on_node; /* nodes entries */
};

/*
 * Lay out sum(tasks_per_node) ranks on @nodes nodes the way Slurm does:
 * block fills node 0 first; cyclic deals ranks round-robin over the nodes
 * that still have room; plane deals blocks of @plane_size ranks. A node may
 * have 0 tasks (its agent caches for the others). On success *out owns a new
 * layout (nopfs_layout_destroy()).
 */
nopfs_status nopfs_layout_create(uint32_t nodes, const uint32_t *tasks_per_node,
                                 nopfs_distribution distribution, uint32_t plane_size,
                                 struct nopfs_layout **out);

/* A layout from an explicit rank -> node map (copied); every entry < nodes. */
nopfs_status nopfs_layout_from_map(uint32_t nodes, uint32_t world_size,
                                   const uint32_t *node_of_rank, struct nopfs_layout **out);

void nopfs_layout_destroy(struct nopfs_layout *layout);

/*
 * Parse a task count list as Slurm prints it in SLURM_TASKS_PER_NODE and
 * SLURM_STEP_TASKS_PER_NODE ("2(x3),1"), or plain "2,2,1". On success
 * *counts is a malloc'd array of *nodes entries (caller frees).
 */
nopfs_status nopfs_layout_parse_tasks(const char *text, uint32_t **counts, uint32_t *nodes);

/*
 * Parse a distribution: "block", "cyclic", "plane=N", or Slurm's
 * SLURM_DISTRIBUTION forms whose node part is one of those ("cyclic:block",
 * "block:cyclic,Pack"). Only the node-level part matters for placement.
 */
nopfs_status nopfs_layout_parse_distribution(const char *text, nopfs_distribution *distribution,
                                             uint32_t *plane_size);

#endif
