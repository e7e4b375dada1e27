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
 * delivered_staged (of which tasks opened a staged copy themselves), stall,
 * fallbacks, problems (strings) and per_node (the node reports by node).
 */
#ifndef NOPFS_REPORT_H
#define NOPFS_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define NOPFS_REPORT_NO_INPUT ((size_t)-1)

/* What went wrong, filled in by the functions below on failure. */
struct nopfs_report_error {
	size_t input;   /* index of the culprit among the inputs, or NOPFS_REPORT_NO_INPUT */
	char text[256]; /* names the node (when known) and the key */
};

/*
 * Whether @report is a per-node report with every key the merge needs, of
 * the right type. On false, @error says which key (and the node if known);
 * error->input is 0.
 */
bool nopfs_report_check_node(const json_t *report, struct nopfs_report_error *error);

/*
 * Merge the @count per-node reports @nodes into a new job report (the caller
 * owns it; json_decref). The job has @expected_nodes nodes (0: the highest
 * node index reported + 1); the nodes without a report are listed as missing
 * and named in problems. The merged report holds a reference to each node
 * report, the caller keeps its own. Returns NULL with @error filled in when a
 * report lacks a key, two reports claim the same node, a node index is not
 * below @expected_nodes, or there is no report at all.
 */
json_t *nopfs_report_merge(json_t *const *nodes, size_t count, uint32_t expected_nodes,
                           struct nopfs_report_error *error);

/* Whether @merged has every key the summary needs; on false, @error names it. */
bool nopfs_report_check_merged(const json_t *merged, struct nopfs_report_error *error);

/*
 * Print a few lines about @merged on @out, each prefixed "nopfs: ". Returns 0,
 * or -1 when @merged lacks a key (see nopfs_report_check_merged).
 */
int nopfs_report_print_summary(const json_t *merged, FILE *out);

/*
 * Write @report to @path atomically (a temporary file beside it, then
 * rename) with @mode. Returns 0, or -1 with errno set and @error saying what
 * failed on which path.
 */
int nopfs_report_write(const json_t *report, const char *path, mode_t mode,
                       struct nopfs_report_error *error);

#endif
