/* What-if runs: a cluster and a dataset from JSON, every chosen policy. */
#include "config.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "sim_commands.h"
#include "sim_config.h"
#include "sim_output.h"
#include "common/clock.h"

/* Per-epoch times of every feasible run: what a user plans with. */
static void print_epochs(const struct sim_report *r)
{
	printf("  predicted time per epoch (s) and PFS traffic:\n");
	for (unsigned int i = 0; i < r->count; i++) {
		const struct sim_result *res = &r->jobs[i].result;
		double previous = res->stage_in;

		if (r->jobs[i].status != NOPFS_OK || !res->feasible)
			continue;
		printf("    %-14s", sim_policy_name(res->policy));
		if (res->stage_in > 0)
			printf(" stage-in %.1f |", res->stage_in);
		for (uint32_t e = 0; e < res->epochs; e++) {
			if (res->epochs > 6 && e == 3) {
				printf(" ...");
				e = res->epochs - 2;
				previous = res->epoch_end[e - 1];
			}
			printf(" %.1f", res->epoch_end[e] - previous);
			previous = res->epoch_end[e];
		}
		printf(" | PFS %.1f GB = %.2f S\n", res->pfs_bytes / SIM_GB,
		       (double)res->pfs_bytes / (double)r->data->bytes);
	}
	printf("\n");
}

static nopfs_status write_files(const struct sim_whatif_options *o, const struct sim_report *r)
{
	char path[PATH_MAX];
	nopfs_status status = sim_make_dir(o->out);

	if (status == NOPFS_OK) {
		snprintf(path, sizeof(path), "%s/whatif.csv", o->out);
		status = sim_csv_write(path, r, 1);
	}
	if (status == NOPFS_OK && o->plot)
		status = sim_plot_bars(o->out, "whatif", r->title, r, 1);
	if (status == NOPFS_OK)
		printf("wrote CSV%s to %s/\n", o->plot ? ", a gnuplot script and plots" : "",
		       o->out);
	return status;
}

nopfs_status sim_whatif_run(const struct sim_whatif_options *o)
{
	struct sim_config config;
	struct sim_dataset *data = NULL;
	struct sim_job jobs[SIM_POLICY_COUNT];
	struct sim_report report;
	unsigned int count = 0;
	nopfs_status status, run_status;
	double started = nopfs_clock_seconds();

	status = sim_config_load(o->config, &config);
	if (status != NOPFS_OK)
		return status;
	if (o->policies)
		config.policies = o->policies | (1u << SIM_PERFECT);
	status = sim_dataset_create(&config.workload, o->threads, &data);
	if (status != NOPFS_OK)
		return status;
	for (int policy = 0; policy < SIM_POLICY_COUNT; policy++)
		if (config.policies & (1u << policy))
			jobs[count++] = (struct sim_job){ .data = data,
				                          .system = &config.system,
				                          .policy = policy };
	run_status = sim_run_batch(jobs, count, o->threads);
	report = (struct sim_report){
		.data = data, .system = &config.system, .jobs = jobs, .count = count
	};
	snprintf(report.label, sizeof(report.label), "whatif");
	snprintf(report.title, sizeof(report.title), "%s", config.name);
	printf("What-if: %s (sizes truncated-normal, w = r unless given; see nopfs-sim list)\n",
	       o->config);
	sim_report_print(&report);
	print_epochs(&report);
	if (o->out)
		status = write_files(o, &report);
	printf("[simulated in %.1f s]\n", nopfs_clock_seconds() - started);
	for (unsigned int i = 0; i < count; i++)
		sim_result_fini(&jobs[i].result);
	sim_dataset_destroy(data);
	return run_status != NOPFS_OK ? run_status : status;
}
