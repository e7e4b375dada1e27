/*
 * The paper's simulator setup (NoPFS section 6.1, Fig. 8) and environment
 * sweep (section 6.2, Fig. 9), with the inputs the paper does not state
 * chosen here and printed with every result.
 */
#ifndef NOPFS_SIM_SCENARIOS_H
#define NOPFS_SIM_SCENARIOS_H

#include <stdint.h>

#include "sim.h"

/* One Fig. 8 scenario as the paper states it, plus our chosen epochs. */
struct sim_paper_scenario {
	const char *label;   /* "1", "2a", ... */
	const char *dataset; /* "MNIST" */
	uint32_t nodes;
	uint64_t samples;
	double mean_mb;
	double stddev_mb;
	uint32_t batch;
	uint32_t epochs; /* ours: the paper does not say */
	const char *paper_size;
	const char *paper_regime;
	const char *our_regime;
};

#define SIM_PAPER_SCENARIOS 6

extern const struct sim_paper_scenario sim_paper_scenarios[SIM_PAPER_SCENARIOS];

/* The Fig. 9 sweep: RAM and SSD sizes (GB), staging-only buffer sizes (GB). */
#define SIM_FIG9_RAMS     5
#define SIM_FIG9_SSDS     4
#define SIM_FIG9_STAGINGS 4
extern const double sim_fig9_ram_gb[SIM_FIG9_RAMS];
extern const double sim_fig9_ssd_gb[SIM_FIG9_SSDS];
extern const double sim_fig9_staging_gb[SIM_FIG9_STAGINGS];
#define SIM_FIG9_LABEL   "3" /* the scenario Fig. 9 varies */
#define SIM_FIG9_SPEEDUP 5.0 /* compute and preprocessing */

/*
 * The section 6.1 system: c = 64 MB/s x @speedup, beta = 200 MB/s x
 * @speedup, b_c = 24,000 MB/s, t(1, 2, 4, 8) = 330, 730, 1540, 2870 MB/s;
 * staging 5 GB / 8 threads / 111 GB/s, RAM 120 GB / 4 / 85 GB/s, SSD 900 GB /
 * 2 / 4 GB/s. Write rates (unstated) equal read rates. RAM and SSD
 * capacities are multiplied by @scale (1 for the paper).
 */
void sim_paper_system(struct sim_system *system, double speedup, double scale);

/* The workload of scenario @s, its sample count multiplied by @scale. */
void sim_paper_workload(const struct sim_paper_scenario *s, double scale,
                        struct sim_workload *workload);

/* The index of the scenario labelled @label, or -1. */
int sim_paper_find(const char *label);

/* Print the chosen inputs (epochs, write rates, size draws, contention...). */
void sim_paper_print_inputs(double scale);

#endif
