/* The paper's Fig. 8 scenarios, the Fig. 9 sweep and the checks. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "sim_commands.h"
#include "sim_output.h"
#include "sim_scenarios.h"
#include "common/clock.h"

#define FIG9_JOBS (1 + SIM_FIG9_STAGINGS + 2 * SIM_FIG9_RAMS * SIM_FIG9_SSDS)

struct paper {
	const struct sim_paper_options *o;
	struct sim_dataset *data[SIM_PAPER_SCENARIOS];
	struct sim_system system[SIM_PAPER_SCENARIOS];
	struct sim_job jobs[SIM_PAPER_SCENARIOS][SIM_POLICY_COUNT];
	struct sim_report reports[SIM_PAPER_SCENARIOS];
	unsigned int report_count;
	struct sim_dataset *fig9_data; /* owned unless it is scenario 3's */
	bool fig9_owned;
	struct sim_system fig9_system[FIG9_JOBS];
	struct sim_job fig9_jobs[FIG9_JOBS];
	unsigned int fig9_count;
	struct sim_fig9 fig9;
	struct sim_frequency freq;
};

nopfs_status sim_make_dir(const char *dir)
{
	if (mkdir(dir, 0777) == 0 || errno == EEXIST)
		return NOPFS_OK;
	nopfs_error("cannot create the output directory %s: %s", dir, strerror(errno));
	return NOPFS_ERR_IO;
}

static nopfs_status run_scenario(struct paper *p, int index)
{
	const struct sim_paper_scenario *s = &sim_paper_scenarios[index];
	struct sim_report *report = &p->reports[p->report_count];
	struct sim_workload workload;
	nopfs_status status;

	sim_paper_workload(s, p->o->scale, &workload);
	sim_paper_system(&p->system[index], 1, p->o->scale);
	status = sim_dataset_create(&workload, p->o->threads, &p->data[index]);
	if (status != NOPFS_OK)
		return status;
	for (int policy = 0; policy < SIM_POLICY_COUNT; policy++)
		p->jobs[index][policy] = (struct sim_job){ .data = p->data[index],
			                                   .system = &p->system[index],
			                                   .policy = policy };
	status = sim_run_batch(p->jobs[index], SIM_POLICY_COUNT, p->o->threads);
	*report = (struct sim_report){ .data = p->data[index],
		                       .system = &p->system[index],
		                       .jobs = p->jobs[index],
		                       .count = SIM_POLICY_COUNT,
		                       .paper = s };
	snprintf(report->label, sizeof(report->label), "%s", s->label);
	snprintf(report->title, sizeof(report->title), "Scenario %s: %s (%s)", s->label, s->dataset,
	         s->our_regime);
	p->report_count++;
	sim_report_print(report);
	return status;
}

static void fig9_job(struct paper *p, const struct sim_system *system, enum sim_policy policy)
{
	p->fig9_system[p->fig9_count] = *system;
	p->fig9_jobs[p->fig9_count] = (struct sim_job){ .data = p->fig9_data,
		                                        .system = &p->fig9_system[p->fig9_count],
		                                        .policy = policy };
	p->fig9_count++;
}

static nopfs_status run_fig9(struct paper *p)
{
	int index = sim_paper_find(SIM_FIG9_LABEL);
	double scale = p->o->scale;
	struct sim_system base, system;
	struct sim_workload workload;
	unsigned int at = 0;
	nopfs_status status;

	p->fig9_data = p->data[index];
	if (!p->fig9_data) {
		sim_paper_workload(&sim_paper_scenarios[index], scale, &workload);
		status = sim_dataset_create(&workload, p->o->threads, &p->fig9_data);
		if (status != NOPFS_OK)
			return status;
		p->fig9_owned = true;
	}
	sim_paper_system(&base, SIM_FIG9_SPEEDUP, scale);
	fig9_job(p, &base, SIM_PERFECT);
	for (unsigned int i = 0; i < SIM_FIG9_STAGINGS; i++) {
		system = base;
		system.model.tiers = 0;
		system.model.staging.capacity = (uint64_t)(sim_fig9_staging_gb[i] * SIM_GB);
		fig9_job(p, &system, SIM_NOPFS_PAPER);
	}
	for (int ours = 0; ours <= (p->o->fig9_ours ? 1 : 0); ours++) {
		for (unsigned int ram = 0; ram < SIM_FIG9_RAMS; ram++) {
			for (unsigned int ssd = 0; ssd < SIM_FIG9_SSDS; ssd++) {
				system = base;
				system.model.tier[0].capacity =
				        (uint64_t)(sim_fig9_ram_gb[ram] * SIM_GB * scale);
				system.model.tier[1].capacity =
				        (uint64_t)(sim_fig9_ssd_gb[ssd] * SIM_GB * scale);
				fig9_job(p, &system, ours ? SIM_NOPFS_OURS : SIM_NOPFS_PAPER);
			}
		}
	}
	status = sim_run_batch(p->fig9_jobs, p->fig9_count, p->o->threads);
	p->fig9 = (struct sim_fig9){ .data = p->fig9_data, .scale = scale };
	p->fig9.lower = &p->fig9_jobs[at++];
	for (unsigned int i = 0; i < SIM_FIG9_STAGINGS; i++)
		p->fig9.staging[i] = &p->fig9_jobs[at++];
	for (int ours = 0; ours <= (p->o->fig9_ours ? 1 : 0); ours++)
		for (unsigned int ram = 0; ram < SIM_FIG9_RAMS; ram++)
			for (unsigned int ssd = 0; ssd < SIM_FIG9_SSDS; ssd++)
				*(ours ? &p->fig9.ours[ram][ssd] : &p->fig9.grid[ram][ssd]) =
				        &p->fig9_jobs[at++];
	sim_fig9_print(&p->fig9);
	return status;
}

static nopfs_status run_frequency(struct paper *p)
{
	nopfs_status status;

	p->freq = (struct sim_frequency){
		.samples = 1281167, .workers = 16, .epochs = 90, .delta = 0.8, .worker = 0
	};
	status = sim_frequency_run(&p->freq, p->o->threads);
	if (status == NOPFS_OK) {
		sim_frequency_print(&p->freq);
		printf("\n");
	}
	return status;
}

static nopfs_status write_files(struct paper *p)
{
	char path[PATH_MAX];
	nopfs_status status = sim_make_dir(p->o->out);

	if (status == NOPFS_OK && p->report_count) {
		snprintf(path, sizeof(path), "%s/fig8.csv", p->o->out);
		status = sim_csv_write(path, p->reports, p->report_count);
		if (status == NOPFS_OK && p->o->plot)
			status = sim_plot_bars(p->o->out, "fig8",
			                       "Fig. 8 reproduced: time by source (our model)",
			                       p->reports, p->report_count);
	}
	if (status == NOPFS_OK && p->fig9.lower) {
		snprintf(path, sizeof(path), "%s/fig9.csv", p->o->out);
		status = sim_fig9_csv(path, &p->fig9);
		if (status == NOPFS_OK && p->o->plot)
			status = sim_plot_fig9(p->o->out, &p->fig9);
	}
	if (status == NOPFS_OK)
		printf("wrote CSV%s to %s/\n", p->o->plot ? ", gnuplot scripts and plots" : "",
		       p->o->out);
	return status;
}

static void paper_fini(struct paper *p)
{
	for (int i = 0; i < SIM_PAPER_SCENARIOS; i++) {
		for (int policy = 0; policy < SIM_POLICY_COUNT; policy++)
			sim_result_fini(&p->jobs[i][policy].result);
		sim_dataset_destroy(p->data[i]);
	}
	for (unsigned int i = 0; i < p->fig9_count; i++)
		sim_result_fini(&p->fig9_jobs[i].result);
	if (p->fig9_owned)
		sim_dataset_destroy(p->fig9_data);
	sim_frequency_fini(&p->freq);
	free(p);
}

nopfs_status sim_paper_run(const struct sim_paper_options *o)
{
	struct paper *p = calloc(1, sizeof(*p));
	nopfs_status status = NOPFS_OK;
	double started = nopfs_clock_seconds(), t;

	if (!p) {
		nopfs_error("no memory for the paper's runs");
		return NOPFS_ERR_NOMEM;
	}
	p->o = o;
	sim_paper_print_inputs(o->scale);
	if (o->fig8 || o->checks) {
		t = nopfs_clock_seconds();
		for (int i = 0; i < SIM_PAPER_SCENARIOS && status == NOPFS_OK; i++)
			if (o->scenarios & (1u << i))
				status = run_scenario(p, i);
		printf("[Fig. 8: %u scenarios simulated in %.1f s]\n\n", p->report_count,
		       nopfs_clock_seconds() - t);
	}
	if (status == NOPFS_OK && o->fig9) {
		t = nopfs_clock_seconds();
		status = run_fig9(p);
		printf("[Fig. 9: %u runs simulated in %.1f s]\n\n", p->fig9_count,
		       nopfs_clock_seconds() - t);
	}
	if (status == NOPFS_OK && (o->frequency || o->checks)) {
		t = nopfs_clock_seconds();
		status = run_frequency(p);
		printf("[access frequency: %.1f s]\n\n", nopfs_clock_seconds() - t);
	}
	if (status == NOPFS_OK && o->checks)
		sim_checks_print(p->reports, p->report_count, o->fig9 ? &p->fig9 : NULL, &p->freq);
	if (status == NOPFS_OK && o->out)
		status = write_files(p);
	printf("[total %.1f s]\n", nopfs_clock_seconds() - started);
	paper_fini(p);
	return status;
}
