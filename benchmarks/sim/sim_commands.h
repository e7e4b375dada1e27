/* The nopfs-sim commands: the paper's figures and checks, and what-if runs. */
#ifndef NOPFS_SIM_COMMANDS_H
#define NOPFS_SIM_COMMANDS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"

struct sim_paper_options {
	bool fig8;
	bool fig9;
	bool fig9_ours; /* also run ours on the Fig. 9 grid */
	bool frequency; /* section 3.1: Monte-Carlo and Lemma 1 */
	bool checks;
	uint32_t scenarios; /* bit per sim_paper_scenarios entry */
	double scale;       /* samples and capacities; 1 for the paper */
	unsigned int threads;
	const char *out; /* directory for CSV and plots, or NULL */
	bool plot;
};

/* Run, print and write what @options ask for. */
nopfs_status sim_paper_run(const struct sim_paper_options *options);

struct sim_whatif_options {
	const char *config;
	uint32_t policies; /* 0: the config's */
	unsigned int threads;
	const char *out; /* or NULL */
	bool plot;
};

/* Simulate a JSON-described cluster and dataset; print, write CSV and a plot. */
nopfs_status sim_whatif_run(const struct sim_whatif_options *options);

struct sim_metadata_options {
	uint64_t files, dirs;
	uint32_t nodes, ranks_per_node;
	double rate;       /* metadata operations/s of the one server; 0: unlimited */
	double latency_ms; /* of each operation */
};

struct sim_metadata_load {
	double plain_rank_ops, plain_job_ops; /* PyTorch ImageFolder, every rank scanning */
	double nopfs_rank_ops, nopfs_job_ops; /* nopfs: ranks none, node 0's agent one scan */
	double plain_seconds, nopfs_seconds;  /* until the scan(s) are done */
	double nopfs_early_seconds;           /* until the listings are (--nopfs-start=early) */
};

/* The metadata load and time of @ranks ranks starting a job (sim_metadata.c). */
void sim_metadata_model(const struct sim_metadata_options *options, uint64_t ranks,
                        struct sim_metadata_load *out);

/* Print the load for a few rank counts and --nodes x --ranks-per-node. */
nopfs_status sim_metadata_run(const struct sim_metadata_options *options);

/* Create @dir if it does not exist (one level); logs on failure. */
nopfs_status sim_make_dir(const char *dir);

#endif
