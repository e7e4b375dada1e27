/* The agent: everything one node's daemon holds, and its phases. */
#ifndef NOPFS_AGENT_AGENT_H
#define NOPFS_AGENT_AGENT_H

#include <jansson.h>
#include <signal.h>

#include "catalog/meta.h"
#include "probe/probe.h"
#include "bootstrap.h"
#include "job.h"
#include "keep.h"
#include "val.h"
#include "lock.h"
#include "options.h"
#include "stage/prefetch.h"
#include "serve/server.h"
#include "source.h"
#include "stage/stage.h"
#include "stats.h"
#include "tier/tier.h"
#include "serve/watch.h"

enum agent_phase {
	PHASE_CATALOG,
	PHASE_PROBE,
	PHASE_PLAN,
	PHASE_TIERS,
	PHASE_SERVE, /* from ready to the stop signal */
	PHASE_DRAIN,
	PHASES,
};

/* The most the dataset's metadata may take (catalog/meta.h); beyond it, the PFS. */
#define AGENT_META_BUDGET ((size_t)1 << 30)
/*
 * The most threads stating the dataset's files after its listings, as many
 * as the listing scan uses per directory: on a real metadata server each
 * stat is a round trip, so fewer would make a large dataset's scan
 * latency-bound. They are paced (common/pace.h): on a saturated server,
 * a few run, which scan as fast and leave the ranks' calls a short queue.
 */
#define AGENT_META_STAT_THREADS 16
/* How often the agent that scanned the metadata looks for changed directories. */
#define AGENT_META_CHECK_MS 10000

struct agent {
	struct agent_options options;
	struct agent_lock lock; /* one agent per job and node */
	struct bootstrap bootstrap;
	struct job job;
	struct probe_result probe;
	struct nopfs_node_tiers node_tiers;
	struct tier_set tiers;
	struct source source;     /* where samples' bytes come from: tiers, peers, PFS */
	struct keep keep;         /* --keep-dir: what outlives the job on this node */
	struct val val;           /* --val-dataset: the validation set (val.h) */
	uint64_t val_room;        /* this node's room for its share of it */
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
	bool serving;      /* agent_serve_start() succeeded, agent_serve_stop() not called */
	bool report_final; /* the agent is done: the next report is its last */
	char shared_catalog[4096];     /* node 0: the catalog it shared, removed at exit */
	char shared_meta[4096];        /* node 0: the metadata it shared, removed at exit */
	char shared_val_catalog[4096]; /* node 0: the validation set's catalog it shared */
	void *meta;                    /* the dataset's metadata (catalog/meta.h), or NULL */
	size_t meta_length;
	struct nopfs_meta_view meta_view;                /* of meta, validated once when kept */
	uint32_t meta_dirs, meta_entries, meta_unlisted; /* for the report */
	char stage_meta[4096]; /* where the tasks find it, removed when serving stops */
	bool meta_published;   /* the tasks were given it */
	char meta_why[512];    /* why not, or not all of it: the first reason, for the report */
	bool meta_scanned;     /* this agent scanned it: it checks for changes */
	uint8_t *meta_changed; /* STAGE/meta-changed, mapped shared: a byte per directory */
	uint32_t meta_changed_dirs; /* its length */
	uint32_t meta_changed_count;
	uint64_t meta_checked_ms; /* CLOCK_MONOTONIC of the last check */

	/* Plans (replan.c): the agent's first is generation 0. */
	uint32_t generation;               /* of the plan followed */
	uint32_t accepted;                 /* the newest step generation served (>= generation) */
	uint32_t considered;               /* the newest one taken on or refused (>= accepted) */
	uint32_t followed;                 /* the step generation of the last plan change */
	_Atomic uint32_t *peer_generation; /* each node's, as it told us (with peers) */
	pthread_rwlock_t plan_lock;        /* held for writing while the plan changes */
	pthread_mutex_t events_lock;
	struct agent_event *events;   /* notices from peers, for the main thread */
	struct tier_retired *retired; /* RAM tiers of earlier plans */
	json_t *plans;                /* plans taken on or refused, for the report */
};

/* service.c: start and stop what serves the tasks (stagers, prefetchers, watch, server). */
nopfs_status agent_serve_start(struct agent *agent);
void agent_serve_stop(struct agent *agent);

/* service.c: publish "PID GENERATION" in the ready file. */
nopfs_status agent_publish_ready(struct agent *agent);

/* service.c: prefetch threads per tier from the probe. */
void agent_choose_threads(struct agent *agent);

/*
 * replan.c: a later step of the job described itself to this agent (a
 * step-GENERATION file in the runtime directory, looked for at every call)
 * or another agent sent a notice (queued by agent_notice(), notices.h).
 * Called by the main thread: take on the newest plan, apply peers' records.
 */
nopfs_status agent_replan_poll(struct agent *agent);
void agent_replan_fini(struct agent *agent);

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
