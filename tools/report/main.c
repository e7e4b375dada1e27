/*
 * nopfs-report: merge the per-node reports of a job into its job report, or
 * print the summary of one.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "common/optable.h"
#include "report/report.h"
#include "common/units.h"

struct report_options {
	const char *merge_path; /* NULL: summary only */
	uint32_t expected_nodes;
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
	{ NOPFS_OPT_HELP("this text") },
	{ NOPFS_OPT_END },
};

static const struct nopfs_optable option_table = {
	.options = option_rows,
	.usage = "Usage: nopfs-report [--merge OUT] [--expect N] FILE...\n"
	         "\n"
	         "Merge the per-node reports of a nopfs job (nopfs-agent --report) into one\n"
	         "job report, or print the summary of one. The summary goes to stderr.\n"
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
static json_t *load_one(const struct report_options *o)
{
	json_t *report = load(o->files[0]);

	if (!report)
		return NULL;
	if (!is_job_report(report)) {
		json_decref(report);
		return merge_files(o); /* one node's report: merged alone */
	}
	if (nopfs_report_check_merged(report, o->files[0]) != NOPFS_OK) {
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
	merged = options.merge_path ? merge_files(&options) : load_one(&options);
	if (!merged)
		return 1;
	rc = 0;
	if (options.merge_path &&
	    nopfs_report_write(merged, options.merge_path, 0644, options.merge_path) != NOPFS_OK)
		rc = 1;
	if (nopfs_report_print_summary(merged, stderr) != NOPFS_OK)
		rc = 1;
	json_decref(merged);
	return rc;
}
