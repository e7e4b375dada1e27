/*
 * nopfs-report: merge the per-node reports of a job into its job report,
 * print the summary of one, compare two, plot one, or show a running job's
 * agents live.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/optable.h"
#include "report/report.h"
#include "common/units.h"
#include "tool.h"

struct report_options {
	const char *merge_path; /* NULL: summary only */
	uint32_t expected_nodes;
	bool compare;
	const char *plot_dir;
	const char *live_job, *live_node_job;
	bool once, json, lines;
	uint32_t interval;
	const char *srun;
	char **files;
	int file_count;
};

#define FIELD(field) NOPFS_OPTION_FIELD(struct report_options, field)

static const struct nopfs_option option_rows[] = {
	{ NOPFS_OPT_STRING("merge", "OUT",
	                   "merge the node reports FILE... into the job report OUT\n"
	                   "(written atomically, mode 0644) and print its summary",
	                   FIELD(merge_path)) },
	{ NOPFS_OPT_UINT("expect", "N",
	                 "the job ran on N nodes (default: the highest node index\n"
	                 "reported + 1); nodes without a report are listed as missing",
	                 FIELD(expected_nodes), 1, 1u << 20) },
	{ NOPFS_OPT_FLAG("compare",
	                 "print the two job reports A B side by side, with B / A\n"
	                 "ratios; B may be the word 'naive': the same job read by a\n"
	                 "plain loader (the dataset from the PFS every epoch),\n"
	                 "computed from A",
	                 FIELD(compare), true) },
	{ NOPFS_OPT_STRING("plot", "DIR",
	                   "plot the job report FILE with gnuplot: DIR/epochs.png (bytes\n"
	                   "delivered per epoch by source) and DIR/stalls.png (how long\n"
	                   "requests waited), with their data and plot.gp",
	                   FIELD(plot_dir)) },
	{ NOPFS_OPT_STRING("live", "JOBID",
	                   "show the agents of your running Slurm job JOBID: prefetch\n"
	                   "progress per tier, samples by source, stalls per rank;\n"
	                   "refreshed every --interval seconds (runs --live-node on\n"
	                   "every node of the job with srun --overlap --jobid)",
	                   FIELD(live_job)) },
	{ NOPFS_OPT_FLAG("once",
	                 "with --live: one look, then exit (status 0 when every\n"
	                 "node's agent answered)",
	                 FIELD(once), true) },
	{ NOPFS_OPT_FLAG("json", "with --live: print the nodes' statuses as one JSON array",
	                 FIELD(json), true) },
	{ NOPFS_OPT_UINT("interval", "SEC", "with --live: seconds between looks (default 1)",
	                 FIELD(interval), 1, 3600) },
	{ NOPFS_OPT_STRING("srun", "PATH", "with --live: the srun to use (default: srun in PATH)",
	                   FIELD(srun)) },
	{ NOPFS_OPT_STRING("live-node", "JOB",
	                   "print one JSON line: the status of your agent of job JOB on\n"
	                   "this node, asked on its socket",
	                   FIELD(live_node_job)) },
	{ NOPFS_OPT_FLAG("lines",
	                 "with --live-node: the JSON cut into lines of at most 400\n"
	                 "bytes, 'nopfs-live HOST SEQ COUNT TEXT' (how --live reads it\n"
	                 "through srun, which may cut long lines)",
	                 FIELD(lines), true) },
	{ NOPFS_OPT_HELP("this text") },
	{ NOPFS_OPT_END },
};

static const struct nopfs_optable option_table = {
	.options = option_rows,
	.usage = "Usage: nopfs-report [--merge OUT] [--expect N] FILE...\n"
	         "       nopfs-report --compare A.json B.json|naive\n"
	         "       nopfs-report --plot DIR FILE\n"
	         "       nopfs-report --live JOBID [--once] [--json] [--interval SEC]\n"
	         "       nopfs-report --live-node JOB\n"
	         "\n"
	         "Merge the per-node reports of a nopfs job (nopfs-agent --report) into one\n"
	         "job report, or print the summary of one (on stderr); compare two job\n"
	         "reports, plot one, or watch a running job's agents.\n"
	         "\n",
	.epilogue =
	        "\n"
	        "Without --merge, FILE is one job report (or one node's report, merged alone).\n"
	        "Exit status: 0 done, 1 on any error.\n",
	.column = 16,
};

/* 0 to go on, 1 on an error, -1 after --help. */
static int parse_options(int argc, char **argv, struct report_options *o)
{
	int operands;
	nopfs_status status = nopfs_optable_parse(&option_table, argc, argv, o, &operands);

	if (status == NOPFS_ERR_EMPTY)
		nopfs_optable_print_help(&option_table, stdout);
	if (status != NOPFS_OK)
		return status == NOPFS_ERR_EMPTY ? -1 : 1;
	o->files = argv + operands;
	o->file_count = argc - operands;
	if (!!o->merge_path + o->compare + !!o->plot_dir + !!o->live_job + !!o->live_node_job > 1) {
		fprintf(stderr, "nopfs-report: --merge, --compare, --plot, --live and --live-node "
		                "go alone; see --help\n");
		return 1;
	}
	if (o->lines && !o->live_node_job) {
		fprintf(stderr, "nopfs-report: --lines goes with --live-node\n");
		return 1;
	}
	if ((o->once || o->json || o->interval || o->srun) && !o->live_job) {
		fprintf(stderr,
		        "nopfs-report: --once, --json, --interval and --srun go with --live\n");
		return 1;
	}
	if ((o->live_job || o->live_node_job) && o->file_count > 0) {
		fprintf(stderr, "nopfs-report: --live and --live-node take no report file\n");
		return 1;
	}
	if (o->live_job || o->live_node_job)
		return 0;
	if (o->compare && o->file_count != 2) {
		fprintf(stderr,
		        "nopfs-report: --compare takes two reports, A and B (or 'naive')\n");
		return 1;
	}
	if (o->compare)
		return 0;
	if (o->plot_dir && o->file_count != 1) {
		fprintf(stderr, "nopfs-report: --plot DIR takes one job report\n");
		return 1;
	}
	if (o->file_count == 0) {
		fprintf(stderr, "nopfs-report: no report given; see --help\n");
		return 1;
	}
	if (!o->merge_path && o->file_count > 1) {
		fprintf(stderr, "nopfs-report: %d reports given: merge them with --merge OUT\n",
		        o->file_count);
		return 1;
	}
	return 0;
}

static json_t *load(const char *path)
{
	json_error_t error;
	json_t *report = json_load_file(path, 0, &error);

	if (!report && error.line > 0)
		fprintf(stderr, "nopfs-report: %s: line %d column %d: %s\n", path, error.line,
		        error.column, error.text);
	else if (!report)
		fprintf(stderr, "nopfs-report: %s: %s\n", path, error.text);
	return report;
}

static bool is_job_report(const json_t *report)
{
	return json_is_object(report) && json_object_get(report, "per_node");
}

/* The libraries' messages, as the tool's own: "nopfs-report: ..." on stderr. */
static void tool_sink(nopfs_log_level level, const char *message, void *arg)
{
	fprintf(stderr, "nopfs-report: %s\n", message);
}

/* Load, check and merge the node reports; NULL after printing why. */
static json_t *merge_files(const struct report_options *o)
{
	json_t **nodes = calloc((size_t)o->file_count, sizeof(*nodes)), *merged = NULL;
	int loaded = 0;

	if (!nodes) {
		fprintf(stderr, "nopfs-report: out of memory\n");
		return NULL;
	}
	for (; loaded < o->file_count; loaded++) {
		nodes[loaded] = load(o->files[loaded]);
		if (!nodes[loaded])
			goto out_nodes;
		if (is_job_report(nodes[loaded])) {
			fprintf(stderr, "nopfs-report: %s: a job report, not a node report\n",
			        o->files[loaded]);
			loaded++;
			goto out_nodes;
		}
	}
	nopfs_report_merge(nodes, (const char *const *)o->files, (size_t)loaded, o->expected_nodes,
	                   &merged);
out_nodes:
	for (int i = 0; i < loaded; i++)
		json_decref(nodes[i]);
	free(nodes);
	return merged;
}

/* One file, no --merge: a job report, or a node report merged alone. */
static json_t *load_one(const struct report_options *o, int which)
{
	json_t *report = load(o->files[which]);

	if (!report)
		return NULL;
	if (!is_job_report(report)) {
		struct report_options alone = *o;

		json_decref(report);
		alone.files = o->files + which;
		alone.file_count = 1;
		return merge_files(&alone); /* one node's report: merged alone */
	}
	if (nopfs_report_check_merged(report, o->files[which]) != NOPFS_OK) {
		json_decref(report);
		return NULL;
	}
	return report;
}

int main(int argc, char **argv)
{
	struct report_options options = { 0 };
	json_t *merged;
	int rc;

	nopfs_log_set_sink(tool_sink, NULL, NOPFS_LOG_ERROR);
	rc = parse_options(argc, argv, &options);
	if (rc != 0)
		return rc < 0 ? 0 : 1;
	if (options.live_node_job)
		return report_live_node(options.live_node_job, options.lines);
	if (options.live_job)
		return report_live(options.live_job, options.once,
		                   options.interval ? options.interval : 1,
		                   options.srun ? options.srun : "srun", options.json);
	if (options.compare) {
		json_t *a = load_one(&options, 0), *b = NULL;
		bool naive = strcmp(options.files[1], "naive") == 0;

		if (a && !naive)
			b = load_one(&options, 1);
		rc = a && (naive || b)
		             ? report_compare(a, options.files[0], b, options.files[1], stdout)
		             : 1;
		json_decref(a);
		json_decref(b);
		return rc;
	}
	merged = options.merge_path ? merge_files(&options) : load_one(&options, 0);
	if (!merged)
		return 1;
	if (options.plot_dir) {
		rc = report_plot(merged, options.files[0], options.plot_dir);
		json_decref(merged);
		return rc;
	}
	rc = 0;
	if (options.merge_path &&
	    nopfs_report_write(merged, options.merge_path, 0644, options.merge_path) != NOPFS_OK)
		rc = 1;
	if (nopfs_report_print_summary(merged, stderr) != NOPFS_OK)
		rc = 1;
	json_decref(merged);
	return rc;
}
