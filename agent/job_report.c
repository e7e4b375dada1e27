/*
 * Node 0's job report: after its own report, wait a little for the other
 * nodes' (the --report pattern with their index, on a shared directory),
 * merge what came and write it to --merged-report. A node that does not
 * report in time is named in the job report's problems: it neither holds
 * node 0 past --merge-wait nor fails it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "common/atomic_file.h"
#include "common/log.h"
#include "common/private.h"
#include "peer/peer.h"
#include "report/report.h"
#include "common/clock.h"

#define POLL_NS          50000000ull /* 50 ms between looks for the others' reports */
#define REPORT_MAX_BYTES (64u << 20) /* a node report is tens of KB */

bool agent_node_path(const char *pattern, uint32_t node, char *path, size_t length)
{
	const char *at = strstr(pattern, "%n");

	if (!at)
		return snprintf(path, length, "%s", pattern) < (int)length;
	return snprintf(path, length, "%.*s%" PRIu32 "%s", (int)(at - pattern), pattern, node,
	                at + 2) < (int)length;
}

/*
 * Node @node's report at @path if it is there, complete and of our job;
 * NULL otherwise, with @why (@size bytes) saying why.
 */
static json_t *load_node_report(const char *path, uint32_t node, const char *job_id, char *why,
                                size_t size)
{
	/* the report directory may be anyone's: only a file of this user is believed */
	int fd = nopfs_private_file_open_for(AT_FDCWD, path, O_RDONLY, 0, geteuid());
	json_error_t parse;
	json_t *report;
	const char *id;
	nopfs_status status;

	if (fd < 0) {
		snprintf(why, size, "%s",
		         errno == EPERM ? "it is not a regular file of this user"
		                        : strerror(errno));
		return NULL;
	}
	report = nopfs_report_load_fd(fd, REPORT_MAX_BYTES, &parse);
	close(fd);
	if (!report) {
		snprintf(why, size, "%s", parse.text);
		return NULL;
	}
	/* a report not there yet is looked for again: its problem is said at the last look */
	nopfs_log_hold();
	status = nopfs_report_check_node(report, NULL);
	snprintf(why, size, "%s", nopfs_log_release());
	if (status != NOPFS_OK)
		goto out_report;
	id = json_string_value(json_object_get(report, "job_id"));
	if (strcmp(id, job_id) != 0) {
		snprintf(why, size, "it is a report of job '%s'", id);
		goto out_report;
	}
	if (json_integer_value(json_object_get(report, "node")) != (json_int_t)node) {
		snprintf(why, size, "it is the report of node %" JSON_INTEGER_FORMAT,
		         json_integer_value(json_object_get(report, "node")));
		goto out_report;
	}
	return report;

out_report:
	json_decref(report);
	return NULL;
}

#define LOST_WAIT_NS 1000000000u

/* Look once for each missing report of nodes 1 .. @nodes-1; how many are there. */
static uint32_t look_for_reports(const struct agent *agent, uint32_t nodes, json_t **reports,
                                 bool last_look)
{
	char path[PATH_MAX], why[256];
	uint32_t found = 1;

	for (uint32_t n = 1; n < nodes; n++) {
		if (reports[n]) {
			found++;
			continue;
		}
		if (!agent_node_path(agent->options.report_pattern, n, path, sizeof(path))) {
			snprintf(path, sizeof(path), "%s", agent->options.report_pattern);
			snprintf(why, sizeof(why), "the path is too long");
		} else {
			reports[n] =
			        load_node_report(path, n, agent->options.job_id, why, sizeof(why));
		}
		/* A report written on SIGUSR1 while the node still serves: wait for its last. */
		if (reports[n] && !last_look &&
		    json_is_false(json_object_get(reports[n], "final"))) {
			json_decref(reports[n]);
			reports[n] = NULL;
		}
		if (reports[n])
			found++;
		else if (last_look)
			nopfs_warning("job report: no report from node %" PRIu32 " at '%s': %s", n,
			              path, why);
	}
	return found;
}

/* Whether every node still without a report is one the data plane lost. */
static bool only_lost_missing(const struct agent *agent, uint32_t nodes, json_t **reports)
{
	if (!agent->peers)
		return false;
	for (uint32_t n = 1; n < nodes; n++)
		if (!reports[n] && !peer_plane_lost(agent->peers, n))
			return false;
	return true;
}

/*
 * Poll every 50 ms until every node reported or --merge-wait passed; nodes
 * whose agent the data plane lost (killed, their node gone) get a second
 * only: the job report must be written before the step's KillWait ends.
 */
static void wait_for_reports(const struct agent *agent, uint32_t nodes, json_t **reports)
{
	uint64_t start = nopfs_clock_now_ns(),
	         deadline = start + (uint64_t)(agent->options.merge_wait * 1e9);
	uint32_t found;

	if (nodes > 1 && !strstr(agent->options.report_pattern, "%n")) {
		nopfs_warning("job report: --report '%s' has no %%n: the other nodes' reports "
		              "cannot be told apart, merging node 0's alone",
		              agent->options.report_pattern);
		return;
	}
	for (;;) {
		uint64_t now = nopfs_clock_now_ns(), pause;

		found = look_for_reports(agent, nodes, reports, false);
		if (found == nodes || now >= deadline ||
		    (now >= start + LOST_WAIT_NS && only_lost_missing(agent, nodes, reports)))
			break;
		pause = deadline - now < POLL_NS ? deadline - now : POLL_NS;
		nanosleep(&(struct timespec){ .tv_sec = 0, .tv_nsec = (long)pause }, NULL);
	}
	if (found < nodes)
		look_for_reports(agent, nodes, reports, true);
}

/* Move the reports there are to the front of @reports; how many. */
static uint32_t compact(json_t **reports, uint32_t nodes)
{
	uint32_t count = 0;

	for (uint32_t n = 0; n < nodes; n++) {
		json_t *report = reports[n];

		reports[n] = NULL;
		if (report)
			reports[count++] = report;
	}
	return count;
}

/* Our own report as written, or (when that failed) as built now. */
static json_t *own_report(struct agent *agent)
{
	char why[256];
	json_t *report = load_node_report(agent->options.report_path, 0, agent->options.job_id, why,
	                                  sizeof(why));

	return report ? report : report_json(agent);
}

/* The node reports now in the job report go (--drop-node-reports). */
static void drop_node_reports(const struct agent *agent, uint32_t nodes, const bool *merged)
{
	char path[PATH_MAX];

	for (uint32_t n = 0; n < nodes; n++)
		if (merged[n] &&
		    agent_node_path(agent->options.report_pattern, n, path, sizeof(path)))
			unlink(path);
}

/* The job in one line, with a newline, to @path (0600, atomically). */
static nopfs_status write_summary(const json_t *merged, const char *path)
{
	char line[1024];
	size_t length;

	if (nopfs_report_one_line(merged, line, sizeof(line) - 1) != NOPFS_OK)
		return NOPFS_ERR_FORMAT;
	length = strlen(line);
	line[length++] = '\n';
	if (nopfs_atomic_write(path, 0600, line, length) != NOPFS_OK) {
		nopfs_error("--summary: cannot write '%s': %m", path);
		return NOPFS_ERR_IO;
	}
	return NOPFS_OK;
}

nopfs_status job_report_write(struct agent *agent)
{
	const char *path = agent->options.merged_report_path;
	uint32_t nodes = agent->bootstrap.active ? agent->bootstrap.nodes : 1, found = 0;
	nopfs_status status = NOPFS_ERR_NOMEM;
	json_t **reports, *merged = NULL;
	bool *merged_nodes = NULL;

	if (path[0] == '\0' || agent->job.node != 0)
		return NOPFS_OK;
	reports = calloc(nodes, sizeof(*reports));
	merged_nodes = calloc(nodes, sizeof(*merged_nodes));
	if (!reports || !merged_nodes || !(reports[0] = own_report(agent))) {
		nopfs_error("job report: out of memory");
		goto out_reports;
	}
	wait_for_reports(agent, nodes, reports);
	for (uint32_t n = 0; n < nodes; n++)
		merged_nodes[n] = reports[n] != NULL;
	found = compact(reports, nodes);
	if (nopfs_report_merge(reports, NULL, found, nodes, &merged) != NOPFS_OK) {
		status = NOPFS_ERR_FORMAT;
		goto out_reports;
	}
	status = NOPFS_OK;
	if (nopfs_report_write(merged, path, 0644, "--merged-report") != NOPFS_OK) {
		status = NOPFS_ERR_IO;
	} else {
		nopfs_info("job report of %" PRIu32 " of %" PRIu32 " nodes written to %s", found,
		           nodes, path);
		if (agent->options.drop_node_reports)
			drop_node_reports(agent, nodes, merged_nodes);
	}
	if (agent->options.summary_path[0] &&
	    write_summary(merged, agent->options.summary_path) != NOPFS_OK)
		status = NOPFS_ERR_IO;
	json_decref(merged);
out_reports:
	for (uint32_t n = 0; reports && n < nodes; n++)
		json_decref(reports[n]);
	free(reports);
	free(merged_nodes);
	return status;
}
