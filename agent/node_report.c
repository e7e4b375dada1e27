/* The per-node report: what was served from where, and what it saved. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "agent.h"
#include "common/atomic_file.h"
#include "common/log.h"
#include "common/private.h"
#include "peer/peer.h"
#include "task/runtime.h"
#include "probe/rdma.h"
#include "common/clock.h"

static const char *const source_names[AGENT_SOURCES] = { "staging", "ram", "ssd", "peer", "pfs" };
static const char *const phase_names[PHASES] = { "catalog", "probe", "plan",
	                                         "tiers",   "serve", "drain" };
static const char *const fallback_names[AGENT_FALLBACKS] = {
	"unknown_path", "read_error", "timeout", "stopping", "malformed", "too_large",
};

static json_t *counter_json(struct agent_counter *counter)
{
	return json_pack("{s:I, s:I}", "samples", (json_int_t)atomic_load(&counter->count), "bytes",
	                 (json_int_t)atomic_load(&counter->bytes));
}

static json_t *delivered_json(struct agent_stats *stats, enum agent_delivery how)
{
	json_t *object = json_object();

	for (int s = 0; s < AGENT_SOURCES; s++)
		json_object_set_new(object, source_names[s],
		                    counter_json(&stats->delivered[how][s]));
	return object;
}

static json_t *tiers_json(struct agent *agent)
{
	json_t *tiers = json_array();

	for (unsigned int t = 0; t < agent->tiers.count; t++) {
		const struct tier *tier = &agent->tiers.tier[t];
		uint64_t failed = 0;

		/* samples the PFS did not give: a tier that has them is as full as it gets */
		for (uint64_t p = 0; p < tier->count; p++)
			failed += atomic_load(&tier->state[p]) == TIER_FAILED;
		json_array_append_new(tiers,
		                      json_pack("{s:s, s:I, s:I, s:I, s:I, s:o, s:I}", "kind",
		                                nopfs_tier_kind_name(tier->kind), "capacity",
		                                (json_int_t)agent->node_tiers.capacity[t],
		                                "planned_samples", (json_int_t)tier->count,
		                                "planned_bytes", (json_int_t)tier->bytes, "threads",
		                                (json_int_t)tier->threads, "filled",
		                                counter_json(&agent->stats.tier_filled[t]),
		                                "failed_samples", (json_int_t)failed));
	}
	return tiers;
}

/* PFS traffic against the naive loader (E x S) and the ideal (S). */
static json_t *pfs_json(struct agent *agent)
{
	struct agent_stats *stats = &agent->stats;
	double dataset = (double)agent->job.dataset_bytes;
	double naive = dataset * agent->job.epochs;
	uint64_t bytes = atomic_load(&stats->pfs_read.bytes);
	uint64_t probe = atomic_load(&stats->probe_pfs_read.bytes);

	return json_pack(
	        "{s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:I}", "bytes", (json_int_t)bytes,
	        "reads", (json_int_t)atomic_load(&stats->pfs_read.count), "failed_samples",
	        (json_int_t)atomic_load(&stats->pfs_failed.count), "changed_samples",
	        (json_int_t)atomic_load(&stats->pfs_changed.count), "probe_bytes",
	        (json_int_t)probe, "vs_dataset", dataset > 0 ? (double)bytes / dataset : 0,
	        "vs_naive", naive > 0 ? (double)bytes / naive : 0, "naive_bytes_per_node_share",
	        naive * agent->job.local_rank_count / agent->job.sampler.world_size,
	        "dataset_bytes", (json_int_t)agent->job.dataset_bytes);
}

/* Per source: samples and bytes of @counters. */
static json_t *sources_json(struct agent_counter *counters)
{
	json_t *object = json_object();

	for (int s = 0; s < AGENT_SOURCES; s++)
		json_object_set_new(object, source_names[s], counter_json(&counters[s]));
	return object;
}

/*
 * Deliveries by epoch of the plan followed (up to the last epoch with one,
 * at least the job's epochs up to AGENT_EPOCH_SLOTS), by source.
 */
static json_t *per_epoch_json(struct agent *agent)
{
	struct agent_stats *stats = &agent->stats;
	uint64_t last =
	        agent->job.epochs < AGENT_EPOCH_SLOTS ? agent->job.epochs : AGENT_EPOCH_SLOTS;
	json_t *epochs = json_array();

	for (uint64_t e = last; e < AGENT_EPOCH_SLOTS; e++)
		for (int s = 0; s < AGENT_SOURCES; s++)
			if (atomic_load(&stats->epoch_delivered[e][s].count))
				last = e + 1;
	for (uint64_t e = 0; e < last; e++)
		json_array_append_new(epochs, sources_json(stats->epoch_delivered[e]));
	return epochs;
}

static json_t *stall_json(struct agent_stats *stats)
{
	uint64_t requests = atomic_load(&stats->requests);
	uint64_t stall = atomic_load(&stats->stall_ns);
	json_t *buckets = json_array();

	for (unsigned int b = 0; b < AGENT_STALL_BUCKETS; b++)
		json_array_append_new(
		        buckets, json_integer((json_int_t)atomic_load(&stats->stall_buckets[b])));
	return json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:o, s:I}", "requests",
	                 (json_int_t)requests, "seconds", (double)stall / 1e9, "max_seconds",
	                 (double)atomic_load(&stats->stall_max_ns) / 1e9, "mean_seconds",
	                 requests ? (double)stall / 1e9 / (double)requests : 0, "p50_seconds",
	                 agent_stall_percentile(stats->stall_buckets, 0.5), "p99_seconds",
	                 agent_stall_percentile(stats->stall_buckets, 0.99), "histogram_us_log2",
	                 buckets, "wait_notices", (json_int_t)atomic_load(&stats->wait_notices));
}

static json_t *stream_json(struct agent *agent)
{
	struct agent_stats *stats = &agent->stats;
	struct nopfs_sampler staged;
	json_t *stream;

	stage_order(&agent->stage, &staged);
	stream = stream_diag_json(&agent->stage.diag, &agent->job, &staged,
	                          atomic_load(&stats->stream_matched));

	json_object_set_new(stream, "skipped_positions",
	                    json_integer((json_int_t)atomic_load(&stats->stream_skipped)));
	json_object_set_new(stream, "resyncs",
	                    json_integer((json_int_t)atomic_load(&stats->stream_resyncs)));
	json_object_set_new(stream, "requests_after_last_epoch",
	                    json_integer((json_int_t)atomic_load(&stats->beyond_epochs)));
	return stream;
}

/* The data plane's figures, or null without peers. */
static json_t *peers_json(struct agent *agent)
{
	struct peer_stats s;

	if (!agent->peers)
		return json_null();
	peer_plane_stats(agent->peers, &s);
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
	                 "gets", (json_int_t)s.gets, "get_bytes", (json_int_t)s.get_bytes,
	                 "not_present", (json_int_t)s.not_present, "requests",
	                 (json_int_t)s.requests, "stream_requests", (json_int_t)s.stream_requests,
	                 "request_bytes", (json_int_t)s.request_bytes, "not_available",
	                 (json_int_t)s.not_available, "timeouts", (json_int_t)s.timeouts, "errors",
	                 (json_int_t)s.errors, "served", (json_int_t)s.served, "served_bytes",
	                 (json_int_t)s.served_bytes, "refused", (json_int_t)s.refused,
	                 "unauthenticated", (json_int_t)s.dropped);
}

/* One task process' counts file @name in the stage directory @dirfd, added to @per_rank. */
static void add_meta_counts(int dirfd, const char *name, json_t *per_rank, uint64_t *served,
                            uint64_t *passed, uint64_t *stale, uint64_t *absent)
{
	char line[160], key[16], tail;
	uint64_t s, p, c, a;
	const char *why;
	json_t *rank;
	ssize_t n;
	int r, fd;

	if (nopfs_private_file_openat(dirfd, name, O_NONBLOCK, -1, &fd, &why) != NOPFS_OK)
		return;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return;
	line[n] = '\0';
	if (sscanf(line, "nopfs-meta 2 %d %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 "%c", &r,
	           &s, &p, &c, &a, &tail) != 6 ||
	    tail != '\n' || r < -1 || s > INT64_MAX / 2 || p > INT64_MAX / 2 || c > p ||
	    a > p - c) {
		nopfs_warning("report: task counts '%s' are malformed: ignored", name);
		return;
	}
	snprintf(key, sizeof(key), "%d", r);
	rank = json_object_get(per_rank, key);
	if (!rank) {
		rank = json_pack("{s:I, s:I}", "served", (json_int_t)0, "passed", (json_int_t)0);
		json_object_set_new(per_rank, key, rank);
	}
	json_object_set_new(
	        rank, "served",
	        json_integer(json_integer_value(json_object_get(rank, "served")) + (json_int_t)s));
	json_object_set_new(
	        rank, "passed",
	        json_integer(json_integer_value(json_object_get(rank, "passed")) + (json_int_t)p));
	*served += s;
	*passed += p;
	*stale += c;
	*absent += a;
}

/*
 * The dataset's metadata: what the tasks were given (and why not, if not),
 * and the calls into the dataset they answered from it ("served") or passed
 * to the PFS ("passed"; of those, "passed_absent" with no metadata to look
 * in), per rank, from the counts their processes left in the stage
 * directory.
 */
static json_t *metadata_json(struct agent *agent)
{
	json_t *per_rank = json_object();
	uint64_t served = 0, passed = 0, stale = 0, absent = 0;
	struct dirent *entry;
	DIR *dir = opendir(agent->options.stage_dir);

	while (dir && (entry = readdir(dir)))
		if (!strncmp(entry->d_name, NOPFS_STAGE_META_COUNTS_PREFIX,
		             strlen(NOPFS_STAGE_META_COUNTS_PREFIX)))
			add_meta_counts(dirfd(dir), entry->d_name, per_rank, &served, &passed,
			                &stale, &absent);
	if (dir)
		closedir(dir);
	return json_pack("{s:b, s:s?, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "published",
	                 agent->meta_published, "not_served",
	                 agent->meta_why[0] ? agent->meta_why : NULL, "directories",
	                 (json_int_t)agent->meta_dirs, "entries", (json_int_t)agent->meta_entries,
	                 "unlisted", (json_int_t)agent->meta_unlisted, "changed_directories",
	                 (json_int_t)agent->meta_changed_count, "served", (json_int_t)served,
	                 "passed", (json_int_t)passed, "passed_changed", (json_int_t)stale,
	                 "passed_absent", (json_int_t)absent, "per_rank", per_rank);
}

/* The agent process's peak memory and CPU time so far. */
static json_t *process_json(void)
{
	struct rusage usage;

	if (getrusage(RUSAGE_SELF, &usage) != 0)
		return json_null();
	return json_pack("{s:I, s:f, s:f}", "max_rss_kib", (json_int_t)usage.ru_maxrss,
	                 "cpu_user_seconds",
	                 (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec / 1e6,
	                 "cpu_system_seconds",
	                 (double)usage.ru_stime.tv_sec + (double)usage.ru_stime.tv_usec / 1e6);
}

/*
 * --verify: copies checked against the CRC32C of their sample's first read,
 * sums recorded, and copies that differed (not served), by source.
 */
static json_t *verify_json(struct agent *agent)
{
	struct agent_stats *stats = &agent->stats;
	json_t *mismatched = json_object();
	uint64_t total = 0;

	for (int s = 1; s < AGENT_SOURCES; s++) {
		json_object_set_new(mismatched, source_names[s],
		                    counter_json(&stats->verify_mismatched[s]));
		total += atomic_load(&stats->verify_mismatched[s].count);
	}
	return json_pack("{s:b, s:o, s:o, s:I, s:o}", "on", agent->source.sums != NULL, "checked",
	                 counter_json(&stats->verified), "recorded",
	                 counter_json(&stats->verify_recorded), "mismatched_copies",
	                 (json_int_t)total, "mismatched", mismatched);
}

json_t *report_json(struct agent *agent)
{
	struct agent_stats *stats = &agent->stats;
	json_t *fallbacks = json_object(), *phases = json_object(), *report;
	char hostname[256] = "";

	gethostname(hostname, sizeof(hostname) - 1);
	for (int f = 0; f < AGENT_FALLBACKS; f++)
		json_object_set_new(fallbacks, fallback_names[f],
		                    json_integer((json_int_t)atomic_load(&stats->fallbacks[f])));
	for (int p = 0; p < PHASES; p++)
		json_object_set_new(phases, phase_names[p], json_real(agent->phase_seconds[p]));
	report = json_pack(
	        "{s:s, s:s, s:I, s:{s:s, s:I, s:I, s:I, s:I, s:I}, s:o, s:o, s:o, s:o, s:o, s:o, "
	        "s:o, s:{s:I, s:I}, s:o, s:o, s:o, s:{s:I, s:I, s:I}}",
	        "job_id", agent->options.job_id, "host", hostname, "node",
	        (json_int_t)agent->job.node, "job", "dataset", agent->options.dataset_root,
	        "samples", (json_int_t)agent->job.sampler.count, "epochs",
	        (json_int_t)agent->job.epochs, "world_size",
	        (json_int_t)agent->job.sampler.world_size, "local_ranks",
	        (json_int_t)agent->job.local_rank_count, "per_rank",
	        (json_int_t)agent->job.per_rank, "delivered_staged",
	        delivered_json(stats, AGENT_DELIVERY_STAGED), "delivered_on_request",
	        delivered_json(stats, AGENT_DELIVERY_REQUESTED), "pfs", pfs_json(agent), "stall",
	        stall_json(stats), "fallbacks", fallbacks, "stream", stream_json(agent), "tiers",
	        tiers_json(agent), "staging", "staged_samples",
	        (json_int_t)atomic_load(&stats->staged.count), "unused_samples",
	        (json_int_t)atomic_load(&stats->staged_unused.count), "help_out",
	        counter_json(&stats->help_out), "probe", probe_to_json(&agent->probe), "phases",
	        phases, "connections", "refused",
	        (json_int_t)atomic_load(&stats->refused_connections), "malformed_messages",
	        (json_int_t)atomic_load(&stats->malformed_messages), "watch_overflows",
	        (json_int_t)atomic_load(&stats->watch_overflows));
	if (report) {
		json_object_set_new(report, "final", json_boolean(agent->report_final));
		/* a resumed job: its "epochs" are those from this one on */
		json_object_set_new(json_object_get(report, "job"), "start_epoch",
		                    json_integer((json_int_t)agent->job.sampler.first_epoch));
		json_object_set_new(report, "verify", verify_json(agent));
		if (agent->options.keep_dir[0])
			json_object_set_new(report, "kept", keep_json(&agent->keep));
		if (agent->val.catalog)
			json_object_set_new(report, "val", val_json(&agent->val));
		json_object_set_new(report, "process", process_json());
		/* a resume within that epoch: each rank's first index in it */
		json_object_set_new(json_object_get(report, "job"), "start_sample",
		                    json_integer((json_int_t)agent->job.sampler.first_index));
		/* samples over --max-sample-size: neither kept nor served */
		json_object_set_new(json_object_get(report, "job"), "max_sample_size",
		                    json_integer((json_int_t)agent->job.size_limit));
		json_object_set_new(json_object_get(report, "job"), "too_large",
		                    json_pack("{s:I, s:I}", "samples",
		                              (json_int_t)agent->job.too_large, "bytes",
		                              (json_int_t)agent->job.too_large_bytes));
		json_object_set_new(report, "per_epoch", per_epoch_json(agent));
		json_object_set_new(report, "unattributed", sources_json(stats->unattributed));
		json_object_set_new(report, "metadata", metadata_json(agent));
		json_object_set_new(report, "peers", peers_json(agent));
		json_object_set_new(report, "rdma", rdma_devices_json());
		json_object_set_new(report, "plan", json_integer((json_int_t)agent->accepted));
		json_object_set_new(report, "plan_followed",
		                    json_integer((json_int_t)agent->followed));
		json_object_set_new(
		        report, "superseded",
		        json_pack("{s:I, s:I}", "requests",
		                  (json_int_t)atomic_load(&stats->superseded_requests),
		                  "newest_plan",
		                  (json_int_t)atomic_load(&stats->superseded_newest) - 1));
		json_object_set_new(report, "replans",
		                    agent->plans ? json_deep_copy(agent->plans) : json_array());
	}
	return report;
}

nopfs_status report_write(struct agent *agent)
{
	const char *path = agent->options.report_path;
	json_t *report = report_json(agent);
	char *text = report ? json_dumps(report, JSON_INDENT(2)) : NULL;
	nopfs_status status;

	json_decref(report);
	if (!text) {
		nopfs_error("report: cannot build the JSON");
		return NOPFS_ERR_NOMEM;
	}
	status = nopfs_atomic_write(path, 0600, text, strlen(text));
	free(text);
	if (status != NOPFS_OK) {
		nopfs_error("report: cannot write '%s': %m", path);
		return NOPFS_ERR_IO;
	}
	nopfs_info("report written to %s", path);
	return NOPFS_OK;
}
