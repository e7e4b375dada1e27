/*
 * The agent's service to its node's tasks: the prefetch threads per tier,
 * starting and stopping what serves them (stagers, prefetchers, watch,
 * server), and the ready file that says which plan is served.
 */
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "agent.h"
#include "team.h"
#include "common/atomic_file.h"
#include "common/log.h"

/* Prefetch threads per tier: what the PFS and the tier's writes can use. */
void agent_choose_threads(struct agent *agent)
{
	struct nopfs_model model = { .tiers = agent->options.tiers.count };

	if (agent->options.probe_budget <= 0)
		return;
	probe_fill_model(&agent->probe, &agent->options.tiers, &model);
	for (unsigned int t = 0; t < agent->tiers.count; t++) {
		unsigned int threads = agent->probe.pfs_threads ? agent->probe.pfs_threads : 1;

		if (model.tier[t].threads && model.tier[t].threads < threads)
			threads = model.tier[t].threads;
		agent->tiers.tier[t].threads = threads;
	}
}

static json_t *live_stats(void *arg)
{
	struct agent *agent = arg;
	json_t *report = report_json(agent);

	if (report)
		json_object_set_new(report, "ranks", stage_progress_json(&agent->stage));
	return report;
}

nopfs_status agent_publish_ready(struct agent *agent)
{
	char line[64];
	int length =
	        snprintf(line, sizeof(line), "%ld %" PRIu32 "\n", (long)getpid(), agent->accepted);

	if (nopfs_atomic_write(agent->ready_path, 0644, line, (size_t)length) != NOPFS_OK) {
		nopfs_error("cannot publish '%s': %m", agent->ready_path);
		return NOPFS_ERR_IO;
	}
	return NOPFS_OK;
}

nopfs_status agent_serve_start(struct agent *agent)
{
	const struct agent_options *options = &agent->options;
	nopfs_status status;

	status = stage_init(&agent->stage, &agent->job, &agent->source, &agent->stats,
	                    options->stage_dir, options->stage_window, options->serve_timeout_ms);
	if (status != NOPFS_OK)
		goto out_stage;
	if (agent->peers)
		source_use_peer(&agent->source, team_read_from_peer, agent);
	status = watch_start(&agent->watch, &agent->stage, options->stage_dir);
	if (status != NOPFS_OK)
		goto out_stage;
	status = stage_start(&agent->stage, options->stage_threads);
	if (status == NOPFS_OK)
		status = prefetch_start(&agent->prefetch, &agent->source,
		                        agent->job.max_sample_size);
	if (status != NOPFS_OK)
		goto out_watch;
	status = server_start(&agent->server, agent->socket_path, &agent->stage, &agent->stats,
	                      live_stats, agent, options->max_connections, agent->followed);
	if (status != NOPFS_OK)
		goto out_prefetch;
	agent->server.val = agent->val.catalog ? &agent->val : NULL;
	agent->server.wait_timeout_ms = options->wait_timeout_ms;
	agent->serving = true;
	return NOPFS_OK;

out_prefetch:
	prefetch_stop(&agent->prefetch);
out_watch:
	watch_stop(&agent->watch);
out_stage:
	stage_fini(&agent->stage);
	return status;
}

void agent_serve_stop(struct agent *agent)
{
	if (!agent->serving)
		return;
	stage_shutdown(&agent->stage);
	server_stop(&agent->server);
	prefetch_stop(&agent->prefetch);
	watch_stop(&agent->watch);
	stage_fini(&agent->stage);
	agent->serving = false;
}
