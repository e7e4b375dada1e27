/*
 * The job report: the per-node reports of a job's agents merged into one
 * (what the job read from the PFS against its dataset, what the nodes
 * delivered from where, stalls, fallbacks and the problems worth a look),
 * and its summary for people. Used by nopfs-report and by node 0's agent.
 *
 * A merged report is a JSON object with the keys job_id, dataset,
 * dataset_bytes, samples, epochs, world_size, nodes_expected,
 * nodes_reported, nodes_missing, pfs_bytes (read by the job, without the
 * probe), probe_bytes, vs_dataset (pfs_bytes / dataset_bytes),
 * vs_naive (pfs_bytes / (epochs x dataset_bytes)), delivered (per source:
 * samples and bytes, both delivery ways), delivered_total,
 * delivered_staged (of which tasks opened a staged copy themselves), stall
 * (with histogram_us_log2, p50_seconds and p99_seconds when the nodes
 * report them), per_epoch (deliveries per epoch and source, when reported),
 * fallbacks, problems (strings) and per_node (the node reports by node).
 */
#ifndef NOPFS_REPORT_H
#define NOPFS_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/status.h"

/*
 * Every function below logs what is wrong once, where it finds it (common/
 * log.h), naming the key, the node when known, and the culprit: @name, what
 * the caller calls the report (its file), prefixed "NAME: " (NULL: none).
 */

/*
 * Whether @report is a per-node report with every key the merge needs, of
 * the right type: NOPFS_OK or NOPFS_ERR_FORMAT.
 */
nopfs_status nopfs_report_check_node(const json_t *report, const char *name);

/*
 * Merge the @count per-node reports @nodes (called @names[i] in messages;
 * @names may be NULL) into a new job report in *@merged (the caller owns it;
 * json_decref). The job has @expected_nodes nodes (0: the highest node index
 * reported + 1); the nodes without a report are listed as missing and named
 * in problems. The merged report holds a reference to each node report, the
 * caller keeps its own. Fails when a report lacks a key (NOPFS_ERR_FORMAT),
 * two reports claim the same node (NOPFS_ERR_DUPLICATE), a node index is not
 * below @expected_nodes (NOPFS_ERR_RANGE), or there is no report at all
 * (NOPFS_ERR_EMPTY).
 */
nopfs_status nopfs_report_merge(json_t *const *nodes, const char *const *names, size_t count,
                                uint32_t expected_nodes, json_t **merged);

/*
 * The wait below which a share @share (0 < share <= 1) of the requests
 * counted in @histogram fall (a job report's stall.histogram_us_log2: bucket
 * b counts waits below 2^b microseconds), as the upper bound of its bucket,
 * in seconds; 0 when it counts none.
 */
double nopfs_report_stall_percentile(const json_t *histogram, double share);

/* Whether @merged has every key the summary needs: NOPFS_OK or NOPFS_ERR_FORMAT. */
nopfs_status nopfs_report_check_merged(const json_t *merged, const char *name);

/*
 * Print a few lines about @merged on @out, each prefixed "nopfs: ". Fails when
 * @merged lacks a key (see nopfs_report_check_merged), or NOPFS_ERR_IO when
 * @out fails (not logged: the caller knows what @out is).
 */
nopfs_status nopfs_report_print_summary(const json_t *merged, FILE *out);

/*
 * The job in one line (no newline) into @line of @size bytes, for where
 * admins look (the job's AdminComment), without commas or quotes: "nopfs:
 * R/N nodes; PFS X x dataset (Y x naive); D samples delivered: a% RAM b% SSD
 * c% peers d% PFS e% staged; stalls S s; P problems". NOPFS_ERR_FORMAT like
 * the summary;
 * NOPFS_ERR_RANGE when it does not fit.
 */
nopfs_status nopfs_report_one_line(const json_t *merged, char *line, size_t size);

/*
 * Write @report to @path atomically (see common/atomic_file.h) with @mode.
 * Failures are logged as "WHAT: cannot create 'PATH': why" (@what: how the
 * caller's user names the output; NULL: none).
 */
nopfs_status nopfs_report_write(const json_t *report, const char *path, mode_t mode,
                                const char *what);

/*
 * The JSON file open on @fd, read whole (at most @max bytes) and parsed;
 * NULL with @error's text saying why (a read error, "too large", or the
 * parser's). Does not close @fd.
 */
json_t *nopfs_report_load_fd(int fd, size_t max, json_error_t *error);

#endif
