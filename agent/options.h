/* The agent's configuration: its command line, parsed into a plain struct. */
#ifndef NOPFS_AGENT_OPTIONS_H
#define NOPFS_AGENT_OPTIONS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "plan/layout.h"
#include "plan/sampler.h"
#include "common/status.h"
#include "plan/tierspec.h"

enum agent_bootstrap {
	AGENT_BOOTSTRAP_AUTO = 0,
	AGENT_BOOTSTRAP_NONE,
	AGENT_BOOTSTRAP_PMIX,
};

struct agent_options {
	struct nopfs_catalog_options catalog;
	char dataset_root[PATH_MAX];
	char list_path[PATH_MAX];
	char extensions[1024];
	char catalog_cache[PATH_MAX];
	char val_dataset[PATH_MAX];   /* the validation set (val.h); empty: none */
	bool val_all;                 /* every rank reads all of it (--val-sampler all) */
	struct nopfs_sampler sampler; /* seed, drop_last, shuffle, world size */
	uint32_t epochs;
	uint32_t *local_ranks; /* this node's ranks, sorted */
	uint32_t local_rank_count;
	struct nopfs_tier_list tiers;
	char job_id[64];
	char private_name[128];     /* nopfs-JOB[.TOKEN]: runtime, stage and SSD directories */
	char runtime_dir[PATH_MAX]; /* socket, ready file; 0700 */
	char stage_dir[PATH_MAX];   /* tmpfs: staged copies and the RAM tier; 0700 */
	char report_path[PATH_MAX];
	char report_pattern[PATH_MAX];     /* --report before "%n" is expanded */
	char merged_report_path[PATH_MAX]; /* node 0: the job report (empty: none) */
	char summary_path[PATH_MAX];       /* node 0: its one-line summary (empty: none) */
	double merge_wait;                 /* seconds node 0 waits for the others' */
	bool drop_node_reports;            /* remove them once merged */
	char log_path[PATH_MAX];           /* empty: stderr */
	bool verbose;
	bool verify;                /* CRC32C of every copy against the sample's first read */
	double probe_budget;        /* seconds */
	char probe_cache[PATH_MAX]; /* empty: no cache */
	char keep_dir[PATH_MAX];    /* the user's kept caches on this node (keep.h); empty: none */
	enum agent_bootstrap bootstrap;
	char step_tasks[1024]; /* the training step's tasks per node */
	nopfs_distribution step_distribution;
	uint32_t step_plane_size;
	char share_dir[PATH_MAX]; /* on the PFS, for the catalog */
	int fence_timeout;        /* seconds */
	int scan_timeout;         /* seconds: node 0's scan, as the others wait for it */
	int hello_timeout;        /* seconds, the first fence */
	double probe_max_age;     /* seconds */
	uint32_t stage_window;    /* samples staged ahead per rank */
	unsigned int stage_threads;
	unsigned int serve_timeout_ms; /* how long a request may wait for its sample */
	unsigned int wait_timeout_ms;  /* the same, for a task that is sent WAITs meanwhile */
	unsigned int max_connections;  /* task connections served at a time; 0: the default */
	uint64_t max_sample_size;      /* larger samples are left to the ranks' own reads */
};

/* --max-sample-size's default: a buffer of this size per serving thread at most. */
#define AGENT_MAX_SAMPLE_SIZE_DEFAULT ((uint64_t)64 << 20)

/*
 * Parse the command line into @config (defaults for everything not given).
 * Errors name the option and what is accepted; --help prints the usage and
 * returns NOPFS_ERR_EMPTY so main() can exit 0.
 */
nopfs_status agent_options_parse(int argc, char **argv, struct agent_options *config);

/*
 * The options for another step: @current with the step's options (dataset,
 * index, extensions, seed, epochs, world size and ranks or step tasks and
 * distribution, shuffle, drop-last) replaced by those of @text (one argument
 * per line; modified), checked as on the command line. Any other option is
 * an error naming it. On success *@next is set (free with
 * agent_options_fini(), or agent_options_move() it into place).
 */
nopfs_status agent_options_step(const struct agent_options *current, char *text,
                                struct agent_options *next);

/* Replace @to by @from (which must not be used afterwards but may be finished). */
void agent_options_move(struct agent_options *to, struct agent_options *from);

/* Free what agent_options_parse() allocated. */
void agent_options_fini(struct agent_options *config);

#endif
