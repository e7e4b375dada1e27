/*
 * What nopfs-sim prints and writes: a table per scenario, CSV for machines,
 * gnuplot scripts and pictures like the paper's Fig. 8 and Fig. 9, and the
 * checks against the paper.
 */
#ifndef NOPFS_SIM_OUTPUT_H
#define NOPFS_SIM_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "sim.h"
#include "sim_frequency.h"
#include "sim_scenarios.h"

/* One scenario's runs (jobs in policy order; not owned). */
struct sim_report {
	char label[16];
	char title[SIM_TITLE_MAX + 32];
	const struct sim_dataset *data;
	const struct sim_system *system;
	struct sim_job *jobs;
	unsigned int count;
	const struct sim_paper_scenario *paper; /* NULL for a what-if */
};

/* The Fig. 9 sweep: ImageNet-22k at 5x compute, NoPFS (and optionally ours). */
struct sim_fig9 {
	const struct sim_dataset *data;
	double scale;
	struct sim_job *lower; /* Perfect */
	struct sim_job *staging[SIM_FIG9_STAGINGS];
	struct sim_job *grid[SIM_FIG9_RAMS][SIM_FIG9_SSDS];
	struct sim_job *ours[SIM_FIG9_RAMS][SIM_FIG9_SSDS]; /* NULL unless asked */
};

/* A report's result for @policy, or NULL when it did not run or failed. */
const struct sim_result *sim_report_result(const struct sim_report *report, enum sim_policy policy);

/*
 * Perfect's total, or 0: the balanced compute of the sampler's global
 * batches, a lower bound of every policy that computes them, whichever
 * worker it deals each sample to.
 */
double sim_report_lower_bound(const struct sim_report *report);

/*
 * The lower bound of @res's total: Perfect's, or the balanced compute of
 * the samples @res computed (res->balanced) when lower. They are the same
 * for every policy that computes the sampler's batches; a policy that
 * computes other samples (DeepIO-opt, ParStaging) may compute fewer bytes.
 */
double sim_result_lower_bound(const struct sim_report *report, const struct sim_result *res);

/* The regime by the numbers: "S < d1", "d1 < S < D", "D < S < ND", "ND < S". */
const char *sim_regime(const struct sim_dataset *data, const struct sim_system *system);

/* Print a scenario's header and table on stdout. */
void sim_report_print(const struct sim_report *report);

/* Print the Fig. 9 table. */
void sim_fig9_print(const struct sim_fig9 *fig9);

/* Write one CSV row per run of @reports (with a header) to @path. */
nopfs_status sim_csv_write(const char *path, const struct sim_report *reports, unsigned int count);

/* Write the Fig. 9 sweep as CSV. */
nopfs_status sim_fig9_csv(const char *path, const struct sim_fig9 *fig9);

/*
 * Write @base.dat and @base.gp into @dir and render @base.png and @base.svg
 * with gnuplot: stacked bars of time by source, one panel per report. When
 * gnuplot is missing the script is kept and a note printed.
 */
nopfs_status sim_plot_bars(const char *dir, const char *base, const char *title,
                           const struct sim_report *reports, unsigned int count);

/* The same for Fig. 9: runtime against RAM, one line per SSD size. */
nopfs_status sim_plot_fig9(const char *dir, const struct sim_fig9 *fig9);

/*
 * Print the checks against the paper with the paper's figure next to ours.
 * Any argument may be missing (NULL / 0): its checks say "not run".
 */
void sim_checks_print(const struct sim_report *reports, unsigned int count,
                      const struct sim_fig9 *fig9, const struct sim_frequency *freq);

/* Choose a time unit for totals around @seconds: its name and divisor. */
void sim_time_unit(double seconds, const char **name, double *divisor);

#endif
