/*
 * nopfs-plan: print what each node of a job would cache where, and the
 * predicted share of reads served locally, by peers and by the PFS, for our
 * owner-first placement, NoPFS's independent greedy and the naive loader.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "common/log.h"
#include "common/optable.h"
#include "plan.h"
#include "common/units.h"
#include "common/clock.h"

/* The options with their own checks: each stores its value, or logs why not. */

static bool parse_dataset(const char *value, void *options)
{
	struct plan_options *o = options;

	o->catalog.root = value;
	o->catalog.format = NOPFS_INDEX_IMAGEFOLDER;
	o->has_dataset = true;
	return true;
}

static bool parse_list(const char *value, void *options)
{
	struct plan_options *o = options;

	o->catalog.list_path = value;
	o->catalog.format = NOPFS_INDEX_LIST;
	o->has_dataset = true;
	return true;
}

static bool parse_synthetic(const char *value, void *options)
{
	struct plan_options *o = options;

	o->synthetic = true;
	return nopfs_synthetic_parse(value, "--synthetic", &o->synthetic_spec) == NOPFS_OK;
}

static bool parse_nodes(const char *value, void *options)
{
	struct plan_options *o = options;
	uint64_t nodes;

	if (!nopfs_parse_uint_option("nodes", value, 1, UINT16_MAX - 1, &nodes))
		return false;
	o->nodes = (uint32_t)nodes;
	o->nodes_given = true;
	return true;
}

static bool parse_distribution(const char *value, void *options)
{
	struct plan_options *o = options;

	return nopfs_layout_parse_distribution(value, &o->distribution, &o->plane_size) == NOPFS_OK;
}

static bool parse_seed(const char *value, void *options)
{
	return nopfs_sampler_parse_seed(value, &((struct plan_options *)options)->sampler) ==
	       NOPFS_OK;
}

static bool parse_tier(const char *value, void *options)
{
	return nopfs_tierspec_parse(value, "--tier", false,
	                            &((struct plan_options *)options)->tiers) == NOPFS_OK;
}

static bool parse_print_stream(const char *value, void *options)
{
	struct plan_options *o = options;
	uint64_t rank;

	o->print_stream = true;
	if (strcmp(value, "all") == 0) {
		o->stream_all_ranks = true;
		return true;
	}
	if (!nopfs_parse_uint_option("print-stream", value, 0, UINT32_MAX - 1, &rank))
		return false;
	o->stream_rank = (uint32_t)rank;
	return true;
}

#define FIELD(field) NOPFS_OPTION_FIELD(struct plan_options, field)

static const struct nopfs_option option_rows[] = {
	{ NOPFS_OPT_TEXT("Dataset (one of):") },
	{ NOPFS_OPT_CALL("dataset", "DIR", "torchvision ImageFolder tree", parse_dataset) },
	{ NOPFS_OPT_CALL("list", "FILE",
	                 "list file, one sample per line [LABEL]; paths relative to --root",
	                 parse_list) },
	{ NOPFS_OPT_STRING("root", "DIR",
	                   "dataset root for --list (default: the list file's directory)",
	                   FIELD(catalog.root)) },
	{ NOPFS_OPT_CALL("synthetic", "F:MEAN[:SD]",
	                 "F samples, sizes ~ N(MEAN, SD^2), e.g. 1281167:110K:20K",
	                 parse_synthetic) },
	{ NOPFS_OPT_STRING("extensions", "LIST",
	                   "file extensions for --dataset (default: torchvision's images)",
	                   FIELD(catalog.extensions)) },
	{ NOPFS_OPT_STRING("cache-dir", "DIR", "reuse a validated catalog cache in DIR",
	                   FIELD(catalog.cache_dir)) },
	{ NOPFS_OPT_TEXT("") },
	{ NOPFS_OPT_TEXT("Job:") },
	{ NOPFS_OPT_CALL("nodes", "N", "nodes (default: 1, or the length of --tasks-per-node)",
	                 parse_nodes) },
	{ NOPFS_OPT_STRING("tasks-per-node", "LIST",
	                   "ranks per node: 4, or 2,2,1, or 2(x3),1 (default 1)",
	                   FIELD(tasks_text)) },
	{ NOPFS_OPT_CALL("distribution", "D", "block, cyclic or plane=N (default block)",
	                 parse_distribution) },
	{ NOPFS_OPT_UINT("epochs", "E", "epochs (default 1)", FIELD(epochs), 1, UINT16_MAX - 1) },
	{ NOPFS_OPT_CALL("seed", "S", "DistributedSampler seed (default 0)", parse_seed) },
	{ NOPFS_OPT_FLAG("drop-last", "DistributedSampler(drop_last=True)",
	                 FIELD(sampler.drop_last), true) },
	{ NOPFS_OPT_FLAG("no-shuffle", "DistributedSampler(shuffle=False)", FIELD(sampler.shuffle),
	                 false) },
	{ NOPFS_OPT_CALL("tier", "SPEC",
	                 "a tier of every node, fastest first: ram:SIZE, ram:N%,\n"
	                 "ssd:SIZE or ssd:DIR:SIZE (repeatable or comma-separated)",
	                 parse_tier) },
	{ NOPFS_OPT_UINT("threads", "T", "threads for planning (default: online CPUs)",
	                 FIELD(threads), 1, 1024) },
	{ NOPFS_OPT_TEXT("") },
	{ NOPFS_OPT_TEXT("Output:") },
	{ NOPFS_OPT_UINT("node", "N", "only node N's view (cheaper for large jobs)", FIELD(node), 0,
	                 UINT16_MAX - 2) },
	{ NOPFS_OPT_FLAG("no-compare", "skip NoPFS's greedy placement", FIELD(compare), false) },
	{ NOPFS_OPT_FLAG("json", "JSON instead of a table", FIELD(json), true) },
	{ NOPFS_OPT_FLAG("print-catalog", "print index, label, size and path of every sample",
	                 FIELD(print_catalog), true) },
	{ NOPFS_OPT_CALL("print-stream", "RANK|all",
	                 "print RANK's sample indices in --stream-epoch", parse_print_stream) },
	{ NOPFS_OPT_UINT("stream-epoch", "E", "epoch for --print-stream (default 0)",
	                 FIELD(stream_epoch), 0, UINT32_MAX) },
	{ NOPFS_OPT_HELP("this text") },
	{ NOPFS_OPT_END },
};

static const struct nopfs_optable option_table = {
	.options = option_rows,
	.usage = "Usage: nopfs-plan [DATASET] [JOB] [OUTPUT]\n\n",
	.column = 26,
};

/* Options that only make sense together, checked once all are read. */
static bool check_options(struct plan_options *o)
{
	if (o->has_dataset == o->synthetic) {
		nopfs_error("give exactly one of --dataset, --list and --synthetic");
		return false;
	}
	if (o->catalog.format == NOPFS_INDEX_LIST && !o->catalog.root) {
		static char root[4096];
		const char *slash = strrchr(o->catalog.list_path, '/');

		if (!slash)
			snprintf(root, sizeof(root), ".");
		else
			snprintf(root, sizeof(root), "%.*s",
			         (int)(slash == o->catalog.list_path
			                       ? 1
			                       : slash - o->catalog.list_path),
			         o->catalog.list_path);
		o->catalog.root = root;
	}
	return nopfs_sampler_check_epochs(&o->sampler, o->stream_epoch + 1) == NOPFS_OK &&
	       nopfs_sampler_check_epochs(&o->sampler, o->epochs) == NOPFS_OK;
}

static nopfs_status build_layout(struct plan_options *o, struct nopfs_layout **layout)
{
	uint32_t *counts = NULL, listed = 1;
	nopfs_status status;

	if (o->tasks_text) {
		status = nopfs_layout_parse_tasks(o->tasks_text, &counts, &listed);
		if (status != NOPFS_OK)
			return status;
	} else {
		counts = malloc(sizeof(*counts));
		if (!counts)
			return NOPFS_ERR_NOMEM;
		counts[0] = 1;
	}
	if (listed == 1 && o->nodes > 1) {
		uint32_t *all = malloc(o->nodes * sizeof(*all));

		if (!all) {
			free(counts);
			return NOPFS_ERR_NOMEM;
		}
		for (uint32_t n = 0; n < o->nodes; n++)
			all[n] = counts[0];
		free(counts);
		counts = all;
		listed = o->nodes;
	} else if (o->nodes_given && listed != o->nodes) {
		nopfs_error("--tasks-per-node '%s' lists %" PRIu32 " nodes, --nodes says %" PRIu32,
		            o->tasks_text, listed, o->nodes);
		free(counts);
		return NOPFS_ERR_INVALID;
	}
	o->nodes = listed;
	status = nopfs_layout_create(listed, counts, o->distribution, o->plane_size, layout);
	free(counts);
	return status;
}

/* Per-node capacities from --tier; ram:N% is a share of this machine's memory. */
static nopfs_status build_node_tiers(const struct plan_options *o, struct nopfs_node_tiers **out)
{
	struct nopfs_node_tiers tiers = { .count = o->tiers.count };
	struct nopfs_node_tiers *all = malloc(o->nodes * sizeof(*all));
	double memory = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);

	if (!all) {
		nopfs_error("no memory for the tiers of %" PRIu32 " nodes", o->nodes);
		return NOPFS_ERR_NOMEM;
	}
	for (unsigned int t = 0; t < o->tiers.count; t++) {
		const struct nopfs_tier_spec *spec = &o->tiers.tier[t];

		tiers.capacity[t] = spec->is_percent ? (uint64_t)(memory * spec->percent / 100)
		                                     : spec->capacity;
	}
	for (uint32_t n = 0; n < o->nodes; n++)
		all[n] = tiers;
	*out = all;
	return NOPFS_OK;
}

static nopfs_status load_catalog(const struct plan_options *o, struct nopfs_catalog **catalog)
{
	uint64_t *sizes;
	nopfs_status status;

	if (!o->synthetic)
		return nopfs_catalog_open(&o->catalog, catalog, NULL);
	sizes = malloc(o->synthetic_spec.count * sizeof(*sizes));
	if (!sizes) {
		nopfs_error("no memory for %" PRIu64 " synthetic sizes", o->synthetic_spec.count);
		return NOPFS_ERR_NOMEM;
	}
	nopfs_synthetic_sizes(&o->synthetic_spec, sizes);
	status = nopfs_catalog_from_sizes(sizes, o->synthetic_spec.count, catalog);
	free(sizes);
	return status;
}

static nopfs_status print_catalog(const struct nopfs_catalog *catalog)
{
	char path[4096];

	for (uint64_t i = 0; i < nopfs_catalog_count(catalog); i++) {
		if (nopfs_catalog_path(catalog, i, path, sizeof(path)) != NOPFS_OK)
			snprintf(path, sizeof(path), "-");
		printf("%" PRIu64 "\t%" PRId64 "\t%" PRIu64 "\t%s\n", i,
		       nopfs_catalog_label(catalog, i), nopfs_catalog_size(catalog, i), path);
	}
	return fflush(stdout) == 0 ? NOPFS_OK : NOPFS_ERR_IO;
}

static nopfs_status print_stream(const struct plan_options *o, const struct nopfs_sampler *sampler)
{
	uint64_t per_rank = nopfs_sampler_per_rank(sampler);
	uint32_t *perm = malloc(sampler->count * sizeof(*perm));
	uint32_t *stream = malloc((per_rank ? per_rank : 1) * sizeof(*stream));
	uint32_t first = o->stream_all_ranks ? 0 : o->stream_rank;
	uint32_t end = o->stream_all_ranks ? sampler->world_size : o->stream_rank + 1;

	if (!perm || !stream) {
		free(perm);
		free(stream);
		nopfs_error("no memory for the stream of %" PRIu64 " samples", sampler->count);
		return NOPFS_ERR_NOMEM;
	}
	if (o->stream_rank >= sampler->world_size) {
		nopfs_error("--print-stream %" PRIu32 ": the job has ranks 0 .. %" PRIu32,
		            o->stream_rank, sampler->world_size - 1);
		free(perm);
		free(stream);
		return NOPFS_ERR_RANGE;
	}
	nopfs_sampler_permutation(sampler, o->stream_epoch, perm);
	for (uint32_t rank = first; rank < end; rank++) {
		nopfs_sampler_rank_stream(sampler, perm, rank, stream);
		for (uint64_t i = 0; i < per_rank; i++)
			printf(i ? " %" PRIu32 : "%" PRIu32, stream[i]);
		putchar('\n');
	}
	free(perm);
	free(stream);
	return fflush(stdout) == 0 ? NOPFS_OK : NOPFS_ERR_IO;
}

static nopfs_status compute_and_print(const struct plan_options *o,
                                      const struct nopfs_catalog *catalog,
                                      const struct nopfs_layout *layout,
                                      const struct nopfs_node_tiers *node_tiers)
{
	struct nopfs_placement_input input = {
		.sampler = o->sampler,
		.epochs = o->epochs,
		.sizes = nopfs_catalog_sizes(catalog),
		.layout = layout,
		.tiers = node_tiers,
		.policy = NOPFS_POLICY_OWNER_FIRST,
		.threads = o->threads,
	};
	struct plan_result result = {
		.options = o, .catalog = catalog, .layout = layout, .node_tiers = node_tiers
	};
	double start;
	nopfs_status status;

	start = nopfs_clock_seconds();
	status = nopfs_placement_compute(&input, o->node, &result.ours);
	if (status != NOPFS_OK)
		return status;
	result.plan_seconds = nopfs_clock_seconds() - start;
	if (o->compare) {
		input.policy = NOPFS_POLICY_GREEDY;
		start = nopfs_clock_seconds();
		status = nopfs_placement_compute(&input, NOPFS_ALL_NODES, &result.greedy);
		result.greedy_seconds = nopfs_clock_seconds() - start;
	}
	if (status == NOPFS_OK)
		status = plan_print(&result);
	nopfs_placement_destroy(result.greedy);
	nopfs_placement_destroy(result.ours);
	return status;
}

static nopfs_status run(struct plan_options *o)
{
	struct nopfs_catalog *catalog = NULL;
	struct nopfs_layout *layout = NULL;
	struct nopfs_node_tiers *node_tiers = NULL;
	nopfs_status status;

	status = build_layout(o, &layout);
	if (status != NOPFS_OK)
		return status;
	if (o->node != NOPFS_ALL_NODES && o->node >= o->nodes) {
		nopfs_error("--node %" PRIu32 ": the job has nodes 0 .. %" PRIu32, o->node,
		            o->nodes - 1);
		status = NOPFS_ERR_RANGE;
		goto out_free_layout;
	}
	status = load_catalog(o, &catalog);
	if (status != NOPFS_OK)
		goto out_free_layout;
	o->sampler.count = nopfs_catalog_count(catalog);
	o->sampler.world_size = layout->world_size;
	status = nopfs_sampler_validate(&o->sampler);
	if (status != NOPFS_OK)
		goto out_free_catalog;
	if (o->print_catalog) {
		status = print_catalog(catalog);
		goto out_free_catalog;
	}
	if (o->print_stream) {
		status = print_stream(o, &o->sampler);
		goto out_free_catalog;
	}
	status = build_node_tiers(o, &node_tiers);
	if (status != NOPFS_OK)
		goto out_free_catalog;
	if (o->node == NOPFS_ALL_NODES &&
	    (double)o->nodes * (double)o->sampler.count > 4.0 * (1u << 30)) {
		nopfs_error("%" PRIu32 " nodes x %" PRIu64
		            " samples is too large to show every node: use --node N",
		            o->nodes, o->sampler.count);
		status = NOPFS_ERR_RANGE;
		goto out_free_tiers;
	}
	status = compute_and_print(o, catalog, layout, node_tiers);
out_free_tiers:
	free(node_tiers);
out_free_catalog:
	nopfs_catalog_destroy(catalog);
out_free_layout:
	nopfs_layout_destroy(layout);
	return status;
}

int main(int argc, char **argv)
{
	struct plan_options options = {
		.nodes = 1,
		.epochs = 1,
		.sampler = { .shuffle = true },
		.threads = (unsigned int)sysconf(_SC_NPROCESSORS_ONLN),
		.node = NOPFS_ALL_NODES,
		.compare = true,
	};
	nopfs_status status = nopfs_optable_parse(&option_table, argc, argv, &options, NULL);

	if (status == NOPFS_ERR_EMPTY)
		nopfs_optable_print_help(&option_table, stdout);
	if (status != NOPFS_OK)
		return status == NOPFS_ERR_EMPTY ? 0 : 2;
	if (!check_options(&options))
		return 2;
	return run(&options) == NOPFS_OK ? 0 : 1;
}
