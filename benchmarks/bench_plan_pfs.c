/*
 * Predicted PFS traffic of the placements, next to seeds-digest section 1.14:
 * N = 4 nodes (one rank each), E = 90, ImageNet-1k (F = 1,281,167, equal
 * 110 KB samples as in the digest's study, then N(110K, 20K) sizes), aggregate
 * room = S and = 2 S, for owner-first (ours), NoPFS's independent greedy, and
 * the naive loader.
 * Usage: bench_plan_pfs [--samples F] [--epochs E] [--threads T]
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/layout.h"
#include "plan/placement.h"
#include "plan/synthetic.h"

#define NODES 4

struct figures {
	double coverage, local, peer, pfs, pfs_vs_s, pfs_vs_naive;
};

static int measure(const struct nopfs_placement_input *input, struct figures *f)
{
	struct nopfs_placement *p;
	struct nopfs_placement_summary s;
	struct nopfs_access_stats a;
	double reads;

	if (nopfs_placement_compute(input, NOPFS_ALL_NODES, &p) != NOPFS_OK)
		return -1;
	nopfs_placement_summary(p, &s);
	if (nopfs_placement_access_stats(p, NOPFS_ALL_NODES, &a) != NOPFS_OK) {
		nopfs_placement_destroy(p);
		return -1;
	}
	reads = (double)(a.reads[0] + a.reads[1] + a.reads[2]);
	*f = (struct figures){
		.coverage = (double)s.covered_samples / (double)s.samples,
		.local = (double)a.reads[NOPFS_SOURCE_LOCAL] / reads,
		.peer = (double)a.reads[NOPFS_SOURCE_PEER] / reads,
		.pfs = (double)a.reads[NOPFS_SOURCE_PFS] / reads,
		.pfs_vs_s = (double)s.pfs_bytes / (double)s.dataset_bytes,
		.pfs_vs_naive = (double)s.pfs_bytes / (double)s.naive_pfs_bytes,
	};
	nopfs_placement_destroy(p);
	return 0;
}

static void print_row(const char *policy, const struct figures *f, const char *digest)
{
	printf("  %-12s %8.3f %7.3f %7.3f %7.3f %9.3f %9.4f   %s\n", policy, f->coverage, f->local,
	       f->peer, f->pfs, f->pfs_vs_s, f->pfs_vs_naive, digest);
}

int main(int argc, char **argv)
{
	uint64_t samples = 1281167;
	uint32_t epochs = 90;
	unsigned int threads = 2;
	static const uint32_t tasks[NODES] = { 1, 1, 1, 1 };
	struct nopfs_layout *layout;
	uint64_t *sizes;
	int failures = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--samples") == 0)
			samples = strtoull(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--epochs") == 0)
			epochs = (uint32_t)atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--threads") == 0)
			threads = (unsigned int)atoi(argv[i + 1]);
	}
	if (samples == 0 || epochs == 0 || threads == 0 ||
	    nopfs_layout_create(NODES, tasks, NOPFS_DISTRIBUTION_BLOCK, 0, &layout) != NOPFS_OK) {
		fprintf(stderr, "usage: %s [--samples F] [--epochs E] [--threads T]\n", argv[0]);
		return 2;
	}
	sizes = malloc(samples * sizeof(*sizes));
	if (!sizes)
		return 1;
	printf("predicted PFS traffic: N = %d nodes x 1 rank, E = %" PRIu32 ", F = %" PRIu64
	       ", seed 1\n",
	       NODES, epochs, samples);
	printf("digest 1.14 (N=4, E=90, equal sizes): greedy coverage 0.816-0.823 and PFS share "
	       "0.177-0.184 at room = S;\nowner-first coverage 0.999, PFS share 0.001; ample room: "
	       "NoPFS reads N(1-(1-1/N)^E) = %.2f x S\n",
	       NODES * (1 - pow(1 - 1.0 / NODES, epochs)));
	for (int variable = 0; variable < 2; variable++) {
		struct nopfs_synthetic spec = { .count = samples,
			                        .mean = 110 * 1024,
			                        .stddev = variable ? 20 * 1024 : 0,
			                        .seed = 7 };
		uint64_t total = 0;

		nopfs_synthetic_sizes(&spec, sizes);
		for (uint64_t k = 0; k < samples; k++)
			total += sizes[k];
		for (int factor = 1; factor <= 2; factor++) {
			struct nopfs_node_tiers tiers[NODES];
			struct figures ours, greedy, naive;
			struct nopfs_placement_input input = {
				.sampler = { .count = samples,
				             .world_size = NODES,
				             .seed = 1,
				             .shuffle = true },
				.epochs = epochs,
				.sizes = sizes,
				.layout = layout,
				.tiers = tiers,
				.threads = threads,
			};

			for (int n = 0; n < NODES; n++)
				tiers[n] = (struct nopfs_node_tiers){
					.count = 1, .capacity = { total * factor / NODES }
				};
			printf("\n%s sizes, aggregate room = %d x S (%.1f GiB per node)\n",
			       variable ? "N(110K, 20K)" : "equal 110K", factor,
			       (double)tiers[0].capacity[0] / (1 << 30));
			printf("  %-12s %8s %7s %7s %7s %9s %9s   %s\n", "policy", "coverage",
			       "local", "peer", "pfs", "PFS x S", "x naive", "digest 1.14");
			input.policy = NOPFS_POLICY_OWNER_FIRST;
			if (measure(&input, &ours) != 0) {
				failures++;
				continue;
			}
			input.policy = NOPFS_POLICY_GREEDY;
			if (measure(&input, &greedy) != 0) {
				failures++;
				continue;
			}
			naive = (struct figures){ .pfs = 1,
				                  .pfs_vs_s = ours.pfs_vs_s / ours.pfs_vs_naive,
				                  .pfs_vs_naive = 1 };
			print_row("owner-first", &ours,
			          factor == 1 ? "coverage 0.999, PFS share 0.001"
			                      : "coverage 1.000");
			print_row("greedy", &greedy,
			          factor == 1 ? "coverage 0.816, PFS share 0.184" : "");
			print_row("naive", &naive, "E x S");
		}
	}
	free(sizes);
	nopfs_layout_destroy(layout);
	return failures ? 1 : 0;
}
