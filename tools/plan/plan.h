/* nopfs-plan: options and output, shared by main.c and print.c. */
#ifndef NOPFS_PLAN_H
#define NOPFS_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "plan/layout.h"
#include "plan/placement.h"
#include "plan/sampler.h"
#include "plan/synthetic.h"
#include "plan/tierspec.h"

struct plan_options {
	struct nopfs_catalog_options catalog;
	bool has_dataset;
	bool synthetic;
	struct nopfs_synthetic synthetic_spec;
	uint32_t nodes;
	bool nodes_given;
	const char *tasks_text;
	nopfs_distribution distribution;
	uint32_t plane_size;
	uint32_t epochs;
	struct nopfs_sampler sampler;
	struct nopfs_tier_list tiers;
	unsigned int threads;
	uint32_t node; /* NOPFS_ALL_NODES or one node */
	bool json;
	bool compare;
	bool print_catalog;
	bool print_stream;
	bool stream_all_ranks;
	uint32_t stream_rank;
	uint64_t stream_epoch;
};

/* What plan_print needs: the inputs and up to two computed placements. */
struct plan_result {
	const struct plan_options *options;
	const struct nopfs_catalog *catalog;
	const struct nopfs_layout *layout;
	const struct nopfs_node_tiers *node_tiers;
	struct nopfs_placement *ours;
	struct nopfs_placement *greedy; /* NULL without --compare */
	double plan_seconds;
	double greedy_seconds;
};

/* Print the plan as text or JSON on stdout. */
nopfs_status plan_print(const struct plan_result *result);

#endif
