/*
 * The job-start metadata load on the PFS's metadata server, plain PyTorch
 * against nopfs, extrapolated from the calls each makes (nopfs-sim
 * metadata). A torchvision ImageFolder rank lists the root and walks every
 * class directory: per directory one open and its getdents64 calls, per
 * class two stat-like calls, plus one for the root (31 opens, 62 getdents64
 * and 61 stats for 3,000 files in 30 classes, as strace shows); it stats no
 * sample. With nopfs the ranks make none: node 0's agent scans the dataset
 * once per job: the listings the interposer serves (per directory an open
 * and its getdents64; per entry that is not a regular file a statx,
 * SCAN_THREADS of a directory's at once; the root's lstat and stat), then
 * the files' stats (FILE_THREADS at once), then the catalog (per directory
 * an open, an fstat and its getdents64; its samples' stats come from the
 * metadata). Tasks started early (--nopfs-start=early) wait for the
 * listings only; by default they wait for all of it.
 *
 * Time: one metadata server answers @rate operations a second, each after
 * @latency. A client waits for each call before the next (the scan's stats:
 * for the one before the last SCAN_THREADS); all clients together cannot go
 * faster than the server.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>

#include "sim_commands.h"

#define SCAN_THREADS 16.0 /* lib/catalog/meta_scan.c's STAT_THREADS */
#define FILE_THREADS 16.0 /* agent/agent.h's AGENT_META_STAT_THREADS */

/* Seconds for @count calls, @at_once at a time, each @per_op, at most @rate a second. */
static double parallel_seconds(double count, double at_once, double per_op, double rate)
{
	double seconds = count * per_op / (at_once < 1 ? 1 : at_once);

	if (rate > 0 && count / rate > seconds)
		seconds = count / rate;
	return seconds;
}

/* getdents64 calls to list @entries names: 32 KiB buffers, ~48 bytes a name, one empty call. */
static double getdents_calls(double entries)
{
	return ceil(entries * 48.0 / 32768.0) + 1;
}

void sim_metadata_model(const struct sim_metadata_options *o, uint64_t ranks,
                        struct sim_metadata_load *out)
{
	double dirs = (double)o->dirs, files = (double)o->files;
	double per_dir = files / dirs;
	double listing = getdents_calls(dirs) + dirs * getdents_calls(per_dir);
	double per_op = o->latency_ms / 1000.0 + (o->rate > 0 ? 1.0 / o->rate : 0);

	out->plain_rank_ops = (dirs + 1) + listing + (2 * dirs + 1);
	out->plain_job_ops = out->plain_rank_ops * (double)ranks;
	out->nopfs_rank_ops = 0;
	double catalog = (dirs + 1) * 2 + listing;

	out->nopfs_job_ops = catalog                                        /* catalog */
	                     + ((dirs + 1) + listing) + (dirs + 2) + files; /* metadata */
	out->plain_seconds = out->plain_rank_ops * per_op;
	if (o->rate > 0 && out->plain_job_ops / o->rate > out->plain_seconds)
		out->plain_seconds = out->plain_job_ops / o->rate;
	/* the listings: the directories' stats, SCAN_THREADS of the root's at once */
	out->nopfs_early_seconds =
	        ((dirs + 1) + listing + 2) * per_op +
	        parallel_seconds(dirs, dirs < SCAN_THREADS ? dirs : SCAN_THREADS, per_op, o->rate);
	out->nopfs_seconds = out->nopfs_early_seconds +
	                     parallel_seconds(files, FILE_THREADS, per_op, o->rate) +
	                     catalog * per_op;
}

nopfs_status sim_metadata_run(const struct sim_metadata_options *o)
{
	static const uint64_t rank_counts[] = { 6, 64, 512, 4096 };
	uint64_t ranks = (uint64_t)o->nodes * o->ranks_per_node, crossover = 0;
	struct sim_metadata_load load;

	printf("Job-start metadata load: %llu files in %llu directories, one metadata server "
	       "(%g ops/s, %g ms each)\n",
	       (unsigned long long)o->files, (unsigned long long)o->dirs, o->rate, o->latency_ms);
	printf("  %8s %16s %16s %12s %12s %12s\n", "ranks", "plain ops", "nopfs ops", "plain s",
	       "nopfs s", "early s");
	for (size_t i = 0; i <= sizeof(rank_counts) / sizeof(rank_counts[0]); i++) {
		uint64_t r =
		        i < sizeof(rank_counts) / sizeof(rank_counts[0]) ? rank_counts[i] : ranks;

		sim_metadata_model(o, r, &load);
		printf("  %8llu %16.0f %16.0f %12.1f %12.1f %12.1f%s\n", (unsigned long long)r,
		       load.plain_job_ops, load.nopfs_job_ops, load.plain_seconds,
		       load.nopfs_seconds, load.nopfs_early_seconds,
		       i == sizeof(rank_counts) / sizeof(rank_counts[0])
		               ? "  (--nodes x --ranks-per-node)"
		               : "");
	}
	sim_metadata_model(o, 1, &load);
	crossover = (uint64_t)ceil(load.nopfs_job_ops / load.plain_rank_ops);
	printf("  per plain rank: %.0f operations; nopfs ranks: 0, the job: one scan of %.0f\n",
	       load.plain_rank_ops, load.nopfs_job_ops);
	printf("  nopfs sends fewer metadata operations from %llu ranks on\n",
	       (unsigned long long)crossover);
	printf("  seconds until the ranks have the dataset's listings: plain (every rank scans), "
	       "nopfs (node 0's whole scan: the default start), early (its listings: "
	       "--nopfs-start=early)\n");
	return NOPFS_OK;
}
