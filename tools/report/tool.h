/* nopfs-report's commands beside merging and printing: compare, plot, live. */
#ifndef NOPFS_REPORT_TOOL_H
#define NOPFS_REPORT_TOOL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/*
 * Print two job reports side by side on @out, with B / A ratios. @b NULL:
 * the same job read by a plain loader, computed from @a (every epoch reads
 * the whole dataset from the PFS; no stall figures). 0 done, 1 on an error.
 */
int report_compare(const json_t *a, const char *a_name, const json_t *b, const char *b_name,
                   FILE *out);

/*
 * Write DIR/epochs.png (bytes delivered per epoch by source) and
 * DIR/stalls.png (the distribution of request waits) from @report, with the
 * data and gnuplot scripts beside them. 0 done, 1 on an error (printed).
 */
int report_plot(const json_t *report, const char *name, const char *dir);

/*
 * One line of JSON on stdout: the status of this user's agent of job @job on
 * this node, from its socket; with @pieces cut into short lines for srun (see
 * live.c). 0 done, 1 when there is none (the line says why).
 */
int report_live_node(const char *job, bool pieces);

/*
 * The live view of job @job: its agents' status on every node of the job
 * (through @srun --overlap --jobid), every @interval seconds, or once; as a
 * JSON array of the nodes' lines with @as_json. 0 when every node's agent
 * answered, 1 otherwise (printed).
 */
int report_live(const char *job, bool once, unsigned int interval, const char *srun, bool as_json);

#endif
