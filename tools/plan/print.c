/* nopfs-plan output: a table for people, JSON for machines. */
#include "config.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>

#include "common/log.h"
#include "plan.h"
#include "common/units.h"

static const char *const source_name[] = { "local", "peer", "pfs" };

struct policy_figures {
	const char *name;
	struct nopfs_access_stats reads;
	struct nopfs_placement_summary summary;
};

static double share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0;
}

static uint64_t total_reads(const struct nopfs_access_stats *stats)
{
	return stats->reads[0] + stats->reads[1] + stats->reads[2];
}

static nopfs_status policy_figures(struct nopfs_placement *placement, const char *name,
                                   struct policy_figures *figures)
{
	figures->name = name;
	nopfs_placement_summary(placement, &figures->summary);
	return nopfs_placement_access_stats(placement, NOPFS_ALL_NODES, &figures->reads);
}

/* The naive loader reads everything from the PFS in every epoch. */
static void naive_figures(const struct policy_figures *ours, struct policy_figures *naive)
{
	*naive = (struct policy_figures){ .name = "naive" };
	naive->reads.reads[NOPFS_SOURCE_PFS] = total_reads(&ours->reads);
	naive->reads.bytes[NOPFS_SOURCE_PFS] = ours->summary.naive_pfs_bytes;
	naive->summary = ours->summary;
	naive->summary.pfs_bytes = ours->summary.naive_pfs_bytes;
	naive->summary.covered_samples = 0;
}

static json_t *figures_json(const struct policy_figures *f)
{
	uint64_t reads = total_reads(&f->reads);
	json_t *shares = json_object(), *object;

	for (int s = 0; s < 3; s++)
		json_object_set_new(shares, source_name[s],
		                    json_real(share(f->reads.reads[s], reads)));
	object = json_pack("{s:s, s:I, s:o, s:I, s:f, s:f, s:I, s:f}", "policy", f->name, "reads",
	                   (json_int_t)reads, "read_shares", shares, "pfs_bytes",
	                   (json_int_t)f->summary.pfs_bytes, "pfs_bytes_vs_dataset",
	                   share(f->summary.pfs_bytes, f->summary.dataset_bytes),
	                   "pfs_bytes_vs_naive",
	                   share(f->summary.pfs_bytes, f->summary.naive_pfs_bytes),
	                   "covered_samples", (json_int_t)f->summary.covered_samples, "coverage",
	                   share(f->summary.covered_samples, f->summary.samples));
	return object;
}

static json_t *node_json(const struct plan_result *r, uint32_t node)
{
	json_t *tiers = json_array();
	struct nopfs_access_stats stats;
	json_t *reads = json_object(), *bytes = json_object();

	for (unsigned int t = 0; t < r->options->tiers.count; t++) {
		struct nopfs_tier_usage usage;

		nopfs_placement_usage(r->ours, node, t, &usage);
		json_array_append_new(
		        tiers,
		        json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "kind",
		                  nopfs_tier_kind_name(r->options->tiers.tier[t].kind), "capacity",
		                  (json_int_t)r->node_tiers[node].capacity[t], "samples",
		                  (json_int_t)usage.samples, "bytes", (json_int_t)usage.bytes,
		                  "replica_samples", (json_int_t)usage.replica_samples,
		                  "replica_bytes", (json_int_t)usage.replica_bytes));
	}
	if (nopfs_placement_access_stats(r->ours, node, &stats) == NOPFS_OK) {
		for (int s = 0; s < 3; s++) {
			json_object_set_new(reads, source_name[s], json_integer(stats.reads[s]));
			json_object_set_new(bytes, source_name[s], json_integer(stats.bytes[s]));
		}
	}
	return json_pack("{s:I, s:I, s:o, s:o, s:o}", "node", (json_int_t)node, "ranks",
	                 (json_int_t)r->layout->tasks_on_node[node], "tiers", tiers, "reads", reads,
	                 "read_bytes", bytes);
}

static nopfs_status print_json(const struct plan_result *r, const struct policy_figures *figures,
                               unsigned int policies)
{
	const struct plan_options *o = r->options;
	json_t *nodes = json_array(), *policy_list = json_array(), *root;
	char seed[32];

	for (uint32_t n = 0; n < r->layout->nodes; n++)
		if (nopfs_placement_has_node(r->ours, n))
			json_array_append_new(nodes, node_json(r, n));
	for (unsigned int i = 0; i < policies; i++)
		json_array_append_new(policy_list, figures_json(&figures[i]));
	if (o->sampler.seed_negative)
		snprintf(seed, sizeof(seed), "%" PRId64, (int64_t)o->sampler.seed);
	else
		snprintf(seed, sizeof(seed), "%" PRIu64, o->sampler.seed);
	root = json_pack("{s:{s:I, s:I}, s:{s:I, s:I, s:I, s:s, s:b}, s:o, s:o, s:f}", "dataset",
	                 "samples", (json_int_t)figures[0].summary.samples, "bytes",
	                 (json_int_t)figures[0].summary.dataset_bytes, "job", "nodes",
	                 (json_int_t)r->layout->nodes, "ranks", (json_int_t)r->layout->world_size,
	                 "epochs", (json_int_t)o->epochs, "seed", seed, "drop_last",
	                 o->sampler.drop_last, "nodes", nodes, "policies", policy_list,
	                 "plan_seconds", r->plan_seconds);
	if (!root || json_dumpf(root, stdout, JSON_INDENT(2)) != 0) {
		json_decref(root);
		nopfs_error("cannot write the JSON plan to standard output");
		return NOPFS_ERR_IO;
	}
	putchar('\n');
	json_decref(root);
	return NOPFS_OK;
}

static void print_policy_row(const struct policy_figures *f)
{
	uint64_t reads = total_reads(&f->reads);
	char bytes[32];

	printf("%-14s %7.3f %7.3f %7.3f  %12s %8.3f %9.4f %9.4f\n", f->name,
	       share(f->reads.reads[0], reads), share(f->reads.reads[1], reads),
	       share(f->reads.reads[2], reads), nopfs_format_size(f->summary.pfs_bytes, bytes, 32),
	       share(f->summary.pfs_bytes, f->summary.dataset_bytes),
	       share(f->summary.pfs_bytes, f->summary.naive_pfs_bytes),
	       share(f->summary.covered_samples, f->summary.samples));
}

static void print_text(const struct plan_result *r, const struct policy_figures *figures,
                       unsigned int policies)
{
	const struct plan_options *o = r->options;
	const struct nopfs_placement_summary *s = &figures[0].summary;
	uint64_t aggregate = 0;
	char a[32], b[32], c[32];

	for (uint32_t n = 0; n < r->layout->nodes; n++)
		for (unsigned int t = 0; t < r->node_tiers[n].count; t++)
			aggregate += r->node_tiers[n].capacity[t];
	printf("dataset   %" PRIu64 " samples, %s (S)\n", s->samples,
	       nopfs_format_size(s->dataset_bytes, a, sizeof(a)));
	printf("job       %" PRIu32 " nodes, %" PRIu32 " ranks, %" PRIu32 " epochs, drop_last %s\n",
	       r->layout->nodes, r->layout->world_size, o->epochs,
	       o->sampler.drop_last ? "yes" : "no");
	printf("tiers     aggregate %s (%.2f x S)\n", nopfs_format_size(aggregate, a, sizeof(a)),
	       share(aggregate, s->dataset_bytes));
	printf("plan      computed in %.3f s\n\n", r->plan_seconds);

	printf("node  ranks  tier  %10s %12s %10s %12s %12s\n", "samples", "bytes", "replicas",
	       "replica-b", "capacity");
	for (uint32_t n = 0; n < r->layout->nodes; n++) {
		if (!nopfs_placement_has_node(r->ours, n))
			continue;
		for (unsigned int t = 0; t < r->node_tiers[n].count; t++) {
			struct nopfs_tier_usage u;

			nopfs_placement_usage(r->ours, n, t, &u);
			printf("%4" PRIu32 "  %5" PRIu32 "  %-4s  %10" PRIu64 " %12s %10" PRIu64
			       " %12s %12s\n",
			       n, r->layout->tasks_on_node[n],
			       nopfs_tier_kind_name(o->tiers.tier[t].kind), u.samples,
			       nopfs_format_size(u.bytes, a, sizeof(a)), u.replica_samples,
			       nopfs_format_size(u.replica_bytes, b, sizeof(b)),
			       nopfs_format_size(r->node_tiers[n].capacity[t], c, sizeof(c)));
		}
	}
	printf("\npredicted reads over %" PRIu32 " epochs (shares of all reads)\n", o->epochs);
	printf("%-14s %7s %7s %7s  %12s %8s %9s %9s\n", "policy", "local", "peer", "pfs",
	       "PFS bytes", "x S", "x naive", "coverage");
	for (unsigned int i = 0; i < policies; i++)
		print_policy_row(&figures[i]);
}

nopfs_status plan_print(const struct plan_result *r)
{
	struct policy_figures figures[3];
	unsigned int policies = 0;
	nopfs_status status;

	status = policy_figures(r->ours, "owner-first", &figures[policies++]);
	if (status != NOPFS_OK)
		return status;
	if (r->greedy) {
		status = policy_figures(r->greedy, "greedy", &figures[policies++]);
		if (status != NOPFS_OK)
			return status;
	}
	naive_figures(&figures[0], &figures[policies++]);
	if (r->options->json)
		return print_json(r, figures, policies);
	print_text(r, figures, policies);
	return NOPFS_OK;
}
