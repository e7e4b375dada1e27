/* The agent: everything one node's daemon holds, and its phases. */
#ifndef NOPFS_AGENT_AGENT_H
#define NOPFS_AGENT_AGENT_H

#include <jansson.h>
#include <signal.h>

#include "bench.h"
#include "bootstrap.h"
#include "job.h"
#include "options.h"
#include "prefetch.h"
#include "server.h"
#include "stage.h"
#include "stats.h"
#include "tier.h"
#include "watch.h"

enum agent_phase {
	PHASE_CATALOG,
	PHASE_BENCHMARK,
	PHASE_PLAN,
	PHASE_TIERS,
	PHASE_SERVE, /* from ready to the stop signal */
	PHASE_DRAIN,
	PHASES,
};

struct agent {
	struct agent_options options;
	struct bootstrap bootstrap;
	struct job job;
	struct bench_result bench;
	struct nopfs_node_tiers node_tiers;
	struct tier_set tiers;
	struct peer_plane *peers; /* the other nodes' agents (NULL: none) */
	struct prefetch prefetch;
	struct stage stage;
	struct watch watch;
	struct server server;
	struct agent_stats stats;
	double phase_seconds[PHASES];
	uint64_t started_ns;
	char socket_path[4096];
	char ready_path[4096];
	bool made_runtime_dir, made_stage_dir;
	bool report_final;         /* the agent is done: the next report is its last */
	char shared_catalog[4096]; /* node 0: the catalog it shared, removed at exit */
};

/* The report (also the live STATS answer) as a new JSON object. */
json_t *report_json(struct agent *agent);

/* Write the report to options.report_path atomically. */
nopfs_status report_write(struct agent *agent);

/*
 * On node 0 with --merged-report: wait up to --merge-wait seconds for the
 * other nodes' reports, merge them with ours and write the job report. A
 * node that does not report is named in it, never an error here; fails only
 * when the job report cannot be built or written.
 */
nopfs_status job_report_write(struct agent *agent);

/*
 * A per-node path: @pattern with "%n" replaced by @node, into @path
 * (@length bytes, truncated if need be); false if it did not fit.
 */
bool agent_node_path(const char *pattern, uint32_t node, char *path, size_t length);

#endif
