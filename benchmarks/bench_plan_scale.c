/*
 * Plan-scale benchmark: wall time and peak memory of computing one node's
 * complete plan (access table, owners, fill, coverage, replicas) at
 * ImageNet-1k and ImageNet-22k scale, and the time to produce the first
 * epoch's streams of that node's own ranks (what prefetching needs first).
 *
 * Every case runs in a child process so its peak RSS (VmHWM) is its own.
 * Usage: bench_plan_scale [--quick] [--threads T]
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plan/layout.h"
#include "plan/placement.h"
#include "plan/sampler.h"
#include "plan/synthetic.h"
#include "common/clock.h"

struct scale_case {
	const char *name;
	uint64_t samples;
	uint32_t epochs, nodes, tasks_per_node;
	double target_seconds, target_gib;
};

/* The figures a child reports to the parent through a pipe. */
struct scale_result {
	double plan_seconds, stream_seconds;
	uint64_t peak_kib, covered, kept_on_node;
	int ok;
};

static uint64_t peak_rss_kib(void)
{
	char line[256];
	uint64_t kib = 0;
	FILE *status = fopen("/proc/self/status", "r");

	if (!status)
		return 0;
	while (fgets(line, sizeof(line), status))
		if (sscanf(line, "VmHWM: %" SCNu64, &kib) == 1)
			break;
	fclose(status);
	return kib;
}

/* Node 0's first-epoch streams, one per local rank. */
static double time_first_streams(const struct nopfs_sampler *sampler,
                                 const struct nopfs_layout *layout, uint32_t node)
{
	uint64_t per_rank = nopfs_sampler_per_rank(sampler);
	uint32_t *perm = malloc(sampler->count * sizeof(*perm));
	uint32_t *stream = malloc(per_rank * sizeof(*stream));
	double start = nopfs_clock_seconds(), seconds;

	if (!perm || !stream) {
		free(perm);
		free(stream);
		return -1;
	}
	nopfs_sampler_permutation(sampler, 0, perm);
	for (uint32_t r = 0; r < layout->world_size; r++)
		if (layout->node_of_rank[r] == node)
			nopfs_sampler_rank_stream(sampler, perm, r, stream);
	seconds = nopfs_clock_seconds() - start;
	free(stream);
	free(perm);
	return seconds;
}

static void run_case(const struct scale_case *c, unsigned int threads, struct scale_result *out)
{
	struct nopfs_synthetic spec = {
		.count = c->samples, .mean = 110 * 1024, .stddev = 20 * 1024, .seed = 1
	};
	uint64_t *sizes = malloc(c->samples * sizeof(*sizes)), total = 0;
	uint32_t *tasks = malloc(c->nodes * sizeof(*tasks));
	struct nopfs_node_tiers *tiers = malloc(c->nodes * sizeof(*tiers));
	struct nopfs_layout *layout = NULL;
	struct nopfs_placement *placement = NULL;
	double start;

	memset(out, 0, sizeof(*out));
	if (!sizes || !tasks || !tiers)
		goto out_free;
	nopfs_synthetic_sizes(&spec, sizes);
	for (uint64_t k = 0; k < c->samples; k++)
		total += sizes[k];
	for (uint32_t n = 0; n < c->nodes; n++) {
		tasks[n] = c->tasks_per_node;
		/* Aggregate room 1.5 x S: RAM S/(2N) and SSD S/N per node. */
		tiers[n] = (struct nopfs_node_tiers){
			.count = 2, .capacity = { total / c->nodes / 2, total / c->nodes }
		};
	}
	if (nopfs_layout_create(c->nodes, tasks, NOPFS_DISTRIBUTION_BLOCK, 0, &layout) != NOPFS_OK)
		goto out_free;

	struct nopfs_placement_input input = {
		.sampler = { .count = c->samples,
		             .world_size = layout->world_size,
		             .seed = 42,
		             .shuffle = true },
		.epochs = c->epochs,
		.sizes = sizes,
		.layout = layout,
		.tiers = tiers,
		.policy = NOPFS_POLICY_OWNER_FIRST,
		.threads = threads,
	};
	out->stream_seconds = time_first_streams(&input.sampler, layout, 0);
	start = nopfs_clock_seconds();
	if (nopfs_placement_compute(&input, 0, &placement) != NOPFS_OK)
		goto out_free;
	out->plan_seconds = nopfs_clock_seconds() - start;
	out->peak_kib = peak_rss_kib();
	for (uint64_t k = 0; k < c->samples; k++) {
		out->covered += nopfs_placement_locate(placement, k, NULL, NULL);
		out->kept_on_node += nopfs_placement_tier_on(placement, 0, k) >= 0;
	}
	out->ok = 1;
out_free:
	nopfs_placement_destroy(placement);
	nopfs_layout_destroy(layout);
	free(tiers);
	free(tasks);
	free(sizes);
}

/* Run @c in a child; its peak memory is then its own. */
static int run_in_child(const struct scale_case *c, unsigned int threads, struct scale_result *r)
{
	int fds[2], status;
	pid_t child;

	if (pipe(fds) != 0)
		return -1;
	child = fork();
	if (child < 0)
		return -1;
	if (child == 0) {
		close(fds[0]);
		run_case(c, threads, r);
		_exit(write(fds[1], r, sizeof(*r)) == (ssize_t)sizeof(*r) ? 0 : 1);
	}
	close(fds[1]);
	if (read(fds[0], r, sizeof(*r)) != (ssize_t)sizeof(*r))
		r->ok = 0;
	close(fds[0]);
	waitpid(child, &status, 0);
	return r->ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	static const struct scale_case cases[] = {
		{ "ImageNet-1k", 1281167, 90, 256, 4, 10, 1 },
		{ "ImageNet-22k", 14197103, 90, 1024, 4, 120, 4 },
	};
	unsigned int threads = 1, count = 2;
	int failures = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0)
			count = 1;
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = (unsigned int)atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--quick] [--threads T]\n", argv[0]);
			return 2;
		}
	}
	printf("plan scale: one node's complete plan (owner-first), synthetic sizes N(110K, 20K),\n"
	       "aggregate room 1.5 x S (RAM S/2N + SSD S/N per node), seed 42, %u thread(s)\n\n",
	       threads);
	printf("%-13s %9s %3s %11s %9s %7s %10s %7s %12s %9s %8s\n", "case", "samples", "E",
	       "nodes x T", "plan s", "target", "peak GiB", "target", "1st epoch s", "covered",
	       "verdict");
	for (unsigned int i = 0; i < count; i++) {
		const struct scale_case *c = &cases[i];
		struct scale_result r;
		char layout[32];
		int met;

		snprintf(layout, sizeof(layout), "%" PRIu32 " x %" PRIu32, c->nodes,
		         c->tasks_per_node);
		if (run_in_child(c, threads, &r) != 0) {
			printf("%-13s failed (out of memory?)\n", c->name);
			failures++;
			continue;
		}
		met = r.plan_seconds <= c->target_seconds &&
		      (double)r.peak_kib / (1 << 20) <= c->target_gib && r.stream_seconds <= 1.0;
		printf("%-13s %9" PRIu64 " %3" PRIu32
		       " %11s %9.2f %7.0f %10.2f %7.0f %12.3f %8.4f%% %8s\n",
		       c->name, c->samples, c->epochs, layout, r.plan_seconds, c->target_seconds,
		       (double)r.peak_kib / (1 << 20), c->target_gib, r.stream_seconds,
		       100.0 * (double)r.covered / (double)c->samples, met ? "met" : "MISSED");
	}
	return failures ? 1 : 0;
}
