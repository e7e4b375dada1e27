/* The job report for people: a few lines, each prefixed "nopfs: ". */
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>

#include "report_internal.h"

/*
 * What a delivered sample's source means. A staged copy the task opened is
 * counted by where its bytes came from; "staging" counts requests answered
 * with a copy already staged, whose own origin the agent did not record.
 */
static const char *const source_labels[REPORT_SOURCES] = {
	"already staged when asked (origin not recorded)",
	"node RAM",
	"node SSD",
	"other nodes",
	"PFS",
};

/* The figures the summary prints, read from a merged report. */
struct summary {
	const char *job_id;
	uint64_t samples, dataset_bytes, epochs, nodes_expected, start_epoch, start_sample;
	const json_t *reported, *problems;
	uint64_t pfs_bytes, probe_bytes;
	double vs_dataset, vs_naive;
	uint64_t delivered[REPORT_SOURCES], delivered_total, delivered_staged;
	uint64_t stall_requests;
	double stall_seconds, stall_max_seconds;
	uint64_t replans;                                 /* 0 in reports before re-planning */
	uint64_t meta_served, meta_passed, meta_unlisted; /* 0 in reports before them */
	uint64_t meta_changed, meta_passed_changed, meta_passed_absent;
	const json_t *meta_per_rank; /* NULL: none */
	bool kept; /* the nodes' kept caches ("kept"; reports without them: false) */
	bool val;  /* a validation set ("val"; reports without one: false) */
	uint64_t val_bytes, val_requests, val_ram, val_pfs_bytes;
	double val_union;
	uint64_t kept_nodes, kept_read, kept_read_bytes, kept_stale, kept_kept, kept_kept_bytes;
};

static bool read_summary(const json_t *merged, const char *name, struct summary *s)
{
	struct report_keys keys = { .report = merged, .name = name, .who = "", .ok = true };
	char path[64];
	size_t i;
	json_t *problem;

	if (!json_is_object(merged)) {
		report_fail(name, "not a JSON object");
		return false;
	}
	report_string(&keys, "job_id", &s->job_id);
	report_uint(&keys, "samples", &s->samples);
	report_uint(&keys, "dataset_bytes", &s->dataset_bytes);
	report_uint(&keys, "epochs", &s->epochs);
	report_optional_uint(&keys, "start_epoch", &s->start_epoch);
	report_optional_uint(&keys, "start_sample", &s->start_sample);
	report_uint(&keys, "nodes_expected", &s->nodes_expected);
	report_array(&keys, "nodes_reported", &s->reported);
	report_uint(&keys, "pfs_bytes", &s->pfs_bytes);
	report_uint(&keys, "probe_bytes", &s->probe_bytes);
	report_real(&keys, "vs_dataset", &s->vs_dataset);
	report_real(&keys, "vs_naive", &s->vs_naive);
	for (int source = 0; source < REPORT_SOURCES; source++) {
		snprintf(path, sizeof(path), "delivered.%s.samples", report_source_names[source]);
		report_uint(&keys, path, &s->delivered[source]);
	}
	report_uint(&keys, "delivered_total.samples", &s->delivered_total);
	report_uint(&keys, "delivered_staged.samples", &s->delivered_staged);
	report_uint(&keys, "stall.requests", &s->stall_requests);
	report_real(&keys, "stall.seconds", &s->stall_seconds);
	report_real(&keys, "stall.max_seconds", &s->stall_max_seconds);
	report_array(&keys, "problems", &s->problems);
	s->replans = 0;
	if (json_object_get(merged, "replans"))
		report_uint(&keys, "replans", &s->replans);
	s->meta_served = s->meta_passed = s->meta_unlisted = 0;
	s->meta_changed = s->meta_passed_changed = s->meta_passed_absent = 0;
	s->meta_per_rank = NULL;
	if (json_object_get(merged, "metadata")) {
		report_uint(&keys, "metadata.served", &s->meta_served);
		report_uint(&keys, "metadata.passed", &s->meta_passed);
		report_uint(&keys, "metadata.unlisted", &s->meta_unlisted);
		report_optional_uint(&keys, "metadata.changed_directories", &s->meta_changed);
		report_optional_uint(&keys, "metadata.passed_changed", &s->meta_passed_changed);
		report_optional_uint(&keys, "metadata.passed_absent", &s->meta_passed_absent);
		report_object(&keys, "metadata.per_rank", &s->meta_per_rank);
	}
	s->kept = json_object_get(merged, "kept") != NULL;
	if (s->kept) {
		report_uint(&keys, "kept.nodes", &s->kept_nodes);
		report_uint(&keys, "kept.read.samples", &s->kept_read);
		report_uint(&keys, "kept.read.bytes", &s->kept_read_bytes);
		report_uint(&keys, "kept.stale.samples", &s->kept_stale);
		report_uint(&keys, "kept.kept.samples", &s->kept_kept);
		report_uint(&keys, "kept.kept.bytes", &s->kept_kept_bytes);
	}
	s->val = json_object_get(merged, "val") != NULL;
	if (s->val) {
		report_uint(&keys, "val.bytes", &s->val_bytes);
		report_uint(&keys, "val.requests", &s->val_requests);
		report_uint(&keys, "val.delivered.ram.samples", &s->val_ram);
		report_uint(&keys, "val.pfs_bytes.bytes", &s->val_pfs_bytes);
		report_real(&keys, "val.pfs_vs_union", &s->val_union);
	}
	if (!keys.ok)
		return false;
	json_array_foreach(s->problems, i, problem)
	{
		if (!json_is_string(problem)) {
			report_fail(name, "key 'problems.%zu' is not a string", i);
			return false;
		}
	}
	return true;
}

nopfs_status nopfs_report_check_merged(const json_t *merged, const char *name)
{
	struct summary summary;

	return read_summary(merged, name, &summary) ? NOPFS_OK : NOPFS_ERR_FORMAT;
}

/* @bytes in decimal units, e.g. "150.2 MB". */
static const char *format_bytes(uint64_t bytes, char *text, size_t size)
{
	static const char *const units[] = { "kB", "MB", "GB", "TB", "PB", "EB" };
	double value = (double)bytes;
	int unit = -1;

	if (bytes < 1000) {
		snprintf(text, size, "%" PRIu64 " B", bytes);
		return text;
	}
	while (value >= 1000 && unit < 5) {
		value /= 1000;
		unit++;
	}
	snprintf(text, size, "%.1f %s", value, units[unit]);
	return text;
}

static void print_delivered(const struct summary *s, FILE *out)
{
	static const int order[REPORT_SOURCES] = { 1, 2, 3, 4, 0 }; /* RAM first */
	double total = (double)s->delivered_total;

	fprintf(out, "nopfs: delivered %" PRIu64 " samples", s->delivered_total);
	if (s->delivered_total == 0) {
		fputc('\n', out);
		return;
	}
	fputc(':', out);
	for (int i = 0; i < REPORT_SOURCES; i++)
		fprintf(out, "%s %.1f%% %s", i ? "," : "",
		        100.0 * (double)s->delivered[order[i]] / total, source_labels[order[i]]);
	fputc('\n', out);
	fprintf(out,
	        "nopfs: of these, tasks opened %" PRIu64 " staged copies themselves and asked "
	        "the agent for %" PRIu64 "\n",
	        s->delivered_staged, s->delivered_total - s->delivered_staged);
}

/*
 * "metadata saved": the dataset metadata calls of the ranks (opendir, readdir,
 * stat, ...) answered from the catalog instead of the PFS, in all and per rank.
 */
static void print_metadata(const struct summary *s, FILE *out)
{
	uint64_t total = s->meta_served + s->meta_passed;
	const char *name;
	const json_t *rank;

	if (total == 0 && s->meta_unlisted == 0)
		return;
	fprintf(out,
	        "nopfs: metadata saved: %" PRIu64 " of %" PRIu64
	        " dataset metadata calls by the ranks answered from the catalog, %" PRIu64
	        " reached the PFS",
	        s->meta_served, total, s->meta_passed);
	if (s->meta_passed_absent)
		fprintf(out, ", %" PRIu64 " of them with no metadata from the agent",
		        s->meta_passed_absent);
	if (s->meta_unlisted)
		fprintf(out, " (%" PRIu64 " directories left out of the catalog)",
		        s->meta_unlisted);
	fputc('\n', out);
	if (!s->meta_per_rank || json_object_size(s->meta_per_rank) == 0)
		return;
	if (json_object_size(s->meta_per_rank) > 16) {
		json_int_t most = 0;

		json_object_foreach((json_t *)s->meta_per_rank, name,
		                    rank) if (json_integer_value(json_object_get(rank, "passed")) >
		                              most) most =
		        json_integer_value(json_object_get(rank, "passed"));
		fprintf(out,
		        "nopfs: metadata per rank: %zu ranks, at most %" JSON_INTEGER_FORMAT
		        " calls of one rank reached the PFS\n",
		        json_object_size(s->meta_per_rank), most);
		return;
	}
	/* In rank order: at most 16 keys, each looked at once a pass. */
	fprintf(out, "nopfs: metadata per rank (served/PFS):");
	for (long next = LONG_MIN, printed = 0; printed < (long)json_object_size(s->meta_per_rank);
	     printed++) {
		long smallest = LONG_MAX;
		const char *at = NULL;

		json_object_foreach((json_t *)s->meta_per_rank, name, rank)
		{
			long r = strtol(name, NULL, 10);

			if (r >= next && r < smallest) {
				smallest = r;
				at = name;
			}
		}
		if (!at)
			break;
		rank = json_object_get(s->meta_per_rank, at);
		fprintf(out, " %s:%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT, at,
		        json_integer_value(json_object_get(rank, "served")),
		        json_integer_value(json_object_get(rank, "passed")));
		next = smallest == LONG_MAX ? LONG_MAX : smallest + 1;
	}
	fputc('\n', out);
}

nopfs_status nopfs_report_print_summary(const json_t *merged, FILE *out)
{
	struct summary s;
	char size[32], more[32];
	size_t reported, i;
	json_t *problem;

	if (!read_summary(merged, NULL, &s))
		return NOPFS_ERR_FORMAT;
	reported = json_array_size(s.reported);
	fprintf(out, "nopfs: job %s on %" PRIu64 " node%s", s.job_id, s.nodes_expected,
	        s.nodes_expected == 1 ? "" : "s");
	if (reported != s.nodes_expected)
		fprintf(out, " (%zu reported)", reported);
	fprintf(out, ": %" PRIu64 " samples, %s, %" PRIu64 " epochs", s.samples,
	        format_bytes(s.dataset_bytes, size, sizeof(size)), s.epochs);
	if (s.start_sample) /* resumed within an epoch */
		fprintf(out,
		        " (the script's %" PRIu64 " from sample %" PRIu64 " per rank to %" PRIu64
		        ")",
		        s.start_epoch, s.start_sample, s.start_epoch + s.epochs - 1);
	else if (s.start_epoch) /* a resumed job */
		fprintf(out, " (the script's %" PRIu64 " to %" PRIu64 ")", s.start_epoch,
		        s.start_epoch + s.epochs - 1);
	fputc('\n', out);
	fprintf(out,
	        "nopfs: PFS read %s = %.2f x dataset (naive loader: %.2f x dataset, so %.2f x "
	        "naive); probe read %s more\n",
	        format_bytes(s.pfs_bytes, size, sizeof(size)), s.vs_dataset, (double)s.epochs,
	        s.vs_naive, format_bytes(s.probe_bytes, more, sizeof(more)));
	if (s.kept)
		fprintf(out,
		        "nopfs: kept caches (%" PRIu64 " node%s): %" PRIu64
		        " samples (%s = %.2f x dataset) read from what earlier jobs kept, "
		        "%" PRIu64 " kept ones stale (their files changed) read anew; %" PRIu64
		        " samples (%s) kept for the next job\n",
		        s.kept_nodes, s.kept_nodes == 1 ? "" : "s", s.kept_read,
		        format_bytes(s.kept_read_bytes, size, sizeof(size)),
		        s.dataset_bytes ? (double)s.kept_read_bytes / (double)s.dataset_bytes : 0.0,
		        s.kept_stale, s.kept_kept,
		        format_bytes(s.kept_kept_bytes, more, sizeof(more)));
	if (s.val)
		fprintf(out,
		        "nopfs: validation set (%s): %" PRIu64 " reads, %.1f%% from the nodes' "
		        "memory; PFS read for it %s = %.2f x its size; the job's PFS reads = %.2f "
		        "x (dataset + validation set)\n",
		        format_bytes(s.val_bytes, size, sizeof(size)), s.val_requests,
		        s.val_requests ? 100.0 * (double)s.val_ram / (double)s.val_requests : 0.0,
		        format_bytes(s.val_pfs_bytes, more, sizeof(more)),
		        s.val_bytes ? (double)s.val_pfs_bytes / (double)s.val_bytes : 0.0,
		        s.val_union);
	print_metadata(&s, out);
	if (s.replans)
		fprintf(out,
		        "nopfs: the agents planned for %" PRIu64 " later step%s with other options "
		        "(\"replans\" per node); the dataset and epochs above are the last "
		        "plan's\n",
		        s.replans, s.replans == 1 ? "" : "s");
	print_delivered(&s, out);
	fprintf(out, "nopfs: stalls: %" PRIu64 " requests waited %.2f s in all, %.1f ms at most\n",
	        s.stall_requests, s.stall_seconds, s.stall_max_seconds * 1e3);
	if (json_array_size(s.problems) == 0)
		fprintf(out, "nopfs: problems: none\n");
	json_array_foreach(s.problems, i, problem)
	        fprintf(out, "nopfs: problem: %s\n", json_string_value(problem));
	return ferror(out) ? NOPFS_ERR_IO : NOPFS_OK;
}

nopfs_status nopfs_report_one_line(const json_t *merged, char *line, size_t size)
{
	static const char *const short_labels[REPORT_SOURCES] = { "staged", "RAM", "SSD", "peers",
		                                                  "PFS" };
	static const int order[REPORT_SOURCES] = { 1, 2, 3, 4, 0 };
	double total;
	struct summary s;
	size_t used;

	if (!read_summary(merged, NULL, &s))
		return NOPFS_ERR_FORMAT;
	total = s.delivered_total ? (double)s.delivered_total : 1;
	used = (size_t)snprintf(line, size,
	                        "nopfs: %zu/%" PRIu64 " nodes; PFS %.2f x dataset (%.2f x naive); "
	                        "%" PRIu64 " samples delivered",
	                        json_array_size(s.reported), s.nodes_expected, s.vs_dataset,
	                        s.vs_naive, s.delivered_total);
	for (int i = 0; i < REPORT_SOURCES && used < size; i++)
		used += (size_t)snprintf(line + used, size - used, "%s %.0f%% %s", i ? "" : ":",
		                         100.0 * (double)s.delivered[order[i]] / total,
		                         short_labels[order[i]]);
	if (used < size)
		used += (size_t)snprintf(line + used, size - used, "; stalls %.2f s; %zu problem%s",
		                         s.stall_seconds, json_array_size(s.problems),
		                         json_array_size(s.problems) == 1 ? "" : "s");
	return used < size ? NOPFS_OK : NOPFS_ERR_RANGE;
}
