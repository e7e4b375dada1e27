/*
 * gnuplot data and scripts: stacked bars of time by source (Fig. 8) and the
 * RAM x SSD sweep (Fig. 9), rendered to PNG and SVG when gnuplot is found.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "sim_output.h"

extern char **environ;

/* Columns of the bar data: stage-in, the tiers, peer, PFS, ideal. */
static const int bar_buckets[] = { SIM_BUCKET_STAGE_IN, SIM_BUCKET_TIER,     SIM_BUCKET_TIER + 1,
	                           SIM_BUCKET_TIER + 2, SIM_BUCKET_TIER + 3, SIM_BUCKET_PEER,
	                           SIM_BUCKET_PFS,      SIM_BUCKET_IDEAL };
#define BAR_COLUMNS (sizeof(bar_buckets) / sizeof(bar_buckets[0]))

static bool gnuplot_found(void)
{
	const char *path = getenv("PATH");
	char dir[PATH_MAX], candidate[PATH_MAX + 16];

	while (path && *path) {
		size_t length = strcspn(path, ":");

		if (length > 0 && length < sizeof(dir)) {
			memcpy(dir, path, length);
			dir[length] = '\0';
			snprintf(candidate, sizeof(candidate), "%s/gnuplot", dir);
			if (access(candidate, X_OK) == 0)
				return true;
		}
		path += length + (path[length] == ':');
	}
	return false;
}

/* Run gnuplot on @script inside @dir; a missing gnuplot is a note, not an error. */
static nopfs_status gnuplot_run(const char *dir, const char *script)
{
	char *argv[] = { "gnuplot", (char *)script, NULL };
	posix_spawn_file_actions_t actions;
	int status, rc;
	pid_t pid;

	if (!gnuplot_found()) {
		printf("note: gnuplot not found in PATH; %s/%s was written but not rendered\n", dir,
		       script);
		return NOPFS_OK;
	}
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_addchdir_np(&actions, dir);
	rc = posix_spawnp(&pid, "gnuplot", &actions, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	if (rc != 0) {
		nopfs_error("cannot start gnuplot for %s/%s: %s", dir, script, strerror(rc));
		return NOPFS_ERR_IO;
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		nopfs_error("gnuplot failed on %s/%s", dir, script);
		return NOPFS_ERR_IO;
	}
	return NOPFS_OK;
}

static FILE *open_in(const char *dir, const char *name, char *path, size_t length)
{
	FILE *file;

	snprintf(path, length, "%s/%s", dir, name);
	file = fopen(path, "w");
	if (!file)
		nopfs_error("cannot write %s: %s", path, strerror(errno));
	return file;
}

static nopfs_status close_file(FILE *file, const char *path)
{
	if (fclose(file) != 0) {
		nopfs_error("cannot write %s: %s", path, strerror(errno));
		return NOPFS_ERR_IO;
	}
	return NOPFS_OK;
}

/* Which bar columns have any time, and their titles. */
static void bar_columns(const struct sim_report *reports, unsigned int count, bool *used,
                        const char **titles)
{
	for (unsigned int c = 0; c < BAR_COLUMNS; c++) {
		used[c] = false;
		titles[c] = sim_bucket_name(reports[0].system, bar_buckets[c]);
		if (bar_buckets[c] >= SIM_BUCKET_TIER &&
		    bar_buckets[c] - SIM_BUCKET_TIER >= (int)reports[0].system->model.tiers)
			titles[c] = "tier";
		for (unsigned int i = 0; i < count; i++)
			for (unsigned int j = 0; j < reports[i].count; j++)
				if (reports[i].jobs[j].status == NOPFS_OK &&
				    reports[i].jobs[j].result.feasible &&
				    reports[i].jobs[j].result.bucket[bar_buckets[c]] > 0)
					used[c] = true;
	}
}

static void bar_data(FILE *out, const struct sim_report *r, double divisor)
{
	fprintf(out, "# %s\n", r->title);
	for (unsigned int j = 0; j < r->count; j++) {
		const struct sim_job *job = &r->jobs[j];
		bool ok = job->status == NOPFS_OK && job->result.feasible;

		fprintf(out, "\"%s%s\"", sim_policy_name(job->policy), ok ? "" : " (infeasible)");
		for (unsigned int c = 0; c < BAR_COLUMNS; c++)
			fprintf(out, " %.6g",
			        ok ? job->result.bucket[bar_buckets[c]] / divisor : 0);
		fprintf(out, "\n");
	}
	fprintf(out, "\n\n");
}

static void bar_script(FILE *gp, const char *terminal, const char *output, const char *base,
                       const char *title, const struct sim_report *reports, unsigned int count)
{
	unsigned int columns = count < 3 ? count : 3, rows = (count + columns - 1) / columns;
	bool used[BAR_COLUMNS];
	const char *titles[BAR_COLUMNS];

	bar_columns(reports, count, used, titles);
	fprintf(gp, "set terminal %s size %u,%u font ',10'\nset output '%s'\n", terminal,
	        560 * columns, 430 * rows, output);
	fprintf(gp, "set multiplot layout %u,%u title \"%s\"\n", rows, columns, title);
	fprintf(gp, "set style data histograms\nset style histogram rowstacked\n"
	            "set style fill solid 0.85 border -1\nset boxwidth 0.75\n"
	            "set xtics rotate by -50 scale 0 font ',8'\n"
	            "set key below horizontal font ',8' samplen 1\n"
	            "set yrange [0:*]\nset grid ytics\n");
	for (unsigned int i = 0; i < count; i++) {
		double lower = sim_report_lower_bound(&reports[i]), divisor;
		const char *unit;
		bool first = true;

		sim_time_unit(lower > 0 ? lower : 1, &unit, &divisor);
		fprintf(gp, "set title \"%s\" font ',10'\nset ylabel 'time [%s]'\n",
		        reports[i].title, unit);
		fprintf(gp, "plot ");
		for (unsigned int c = 0; c < BAR_COLUMNS; c++) {
			if (!used[c])
				continue;
			fprintf(gp, "%s'%s.dat' index %u using %u%s title '%s'", first ? "" : ", ",
			        base, i, c + 2, first ? ":xtic(1)" : "", titles[c]);
			first = false;
		}
		if (first)
			fprintf(gp, "'%s.dat' index %u using 2:xtic(1) title 'none'", base, i);
		fprintf(gp, "\n");
	}
	fprintf(gp, "unset multiplot\n");
}

nopfs_status sim_plot_bars(const char *dir, const char *base, const char *title,
                           const struct sim_report *reports, unsigned int count)
{
	char path[PATH_MAX], name[PATH_MAX], output[PATH_MAX];
	nopfs_status status;
	FILE *out;

	if (count == 0)
		return NOPFS_OK;
	snprintf(name, sizeof(name), "%s.dat", base);
	out = open_in(dir, name, path, sizeof(path));
	if (!out)
		return NOPFS_ERR_IO;
	for (unsigned int i = 0; i < count; i++) {
		double lower = sim_report_lower_bound(&reports[i]), divisor;
		const char *unit;

		sim_time_unit(lower > 0 ? lower : 1, &unit, &divisor);
		bar_data(out, &reports[i], divisor);
	}
	status = close_file(out, path);
	if (status != NOPFS_OK)
		return status;
	snprintf(name, sizeof(name), "%s.gp", base);
	out = open_in(dir, name, path, sizeof(path));
	if (!out)
		return NOPFS_ERR_IO;
	snprintf(output, sizeof(output), "%s.png", base);
	bar_script(out, "pngcairo", output, base, title, reports, count);
	snprintf(output, sizeof(output), "%s.svg", base);
	bar_script(out, "svg", output, base, title, reports, count);
	status = close_file(out, path);
	if (status != NOPFS_OK)
		return status;
	return gnuplot_run(dir, name);
}

static double hours(const struct sim_job *job)
{
	if (!job || job->status != NOPFS_OK || !job->result.feasible)
		return 0;
	return job->result.total / 3600;
}

static double pfs_tb(const struct sim_job *job)
{
	if (!job || job->status != NOPFS_OK || !job->result.feasible)
		return 0;
	return job->result.pfs_bytes / 1e12;
}

/* One panel: @column_base + s for SSD size s, NoPFS then ours. */
static void fig9_lines(FILE *gp, const struct sim_fig9 *f, unsigned int column_base)
{
	for (unsigned int s = 0; s < SIM_FIG9_SSDS; s++)
		fprintf(gp,
		        "%s'fig9.dat' using 1:%u with linespoints lw 2 lc %u title 'NoPFS, SSD %g "
		        "GB'",
		        s ? ", " : "", column_base + s, s + 1, sim_fig9_ssd_gb[s] * f->scale);
	if (f->ours[0][0])
		for (unsigned int s = 0; s < SIM_FIG9_SSDS; s++)
			fprintf(gp,
			        ", 'fig9.dat' using 1:%u with linespoints dt 2 lc %u title 'nopfs, "
			        "SSD "
			        "%g GB'",
			        column_base + SIM_FIG9_SSDS + s, s + 1,
			        sim_fig9_ssd_gb[s] * f->scale);
}

static void fig9_script(FILE *gp, const char *terminal, const char *output,
                        const struct sim_fig9 *f)
{
	fprintf(gp, "set terminal %s size 1300,560 font ',11'\nset output '%s'\n", terminal,
	        output);
	fprintf(gp,
	        "set multiplot layout 1,2 title \"Fig. 9: ImageNet-22k, 5x compute, E=%" PRIu32
	        " (our model)\"\n",
	        f->data->workload.epochs);
	fprintf(gp, "set xlabel 'RAM per node [GB]'\nset logscale x 2\nset grid\n"
	            "set key below horizontal font ',9' samplen 2 maxrows 4\nset yrange [0:*]\n"
	            "set bmargin 9\n");
	fprintf(gp, "set title 'runtime'\nset ylabel 'hours'\nplot ");
	fig9_lines(gp, f, 2);
	fprintf(gp, ", %.6f with lines lw 2 lc 'black' title 'lower bound', ", hours(f->lower));
	fprintf(gp, "%.6f with lines lw 2 dt 3 lc 'red' title 'staging only 5 GB', ",
	        hours(f->staging[SIM_FIG9_STAGINGS - 1]));
	fprintf(gp, "1.06 with lines dt 4 lc 'gray' title 'paper: lower bound 1.06 h', "
	            "1.64 with lines dt 5 lc 'orange' title 'paper: staging only 1.64 h'\n");
	fprintf(gp, "set title 'PFS reads'\nset ylabel 'TB'\nplot ");
	fig9_lines(gp, f, 2 + 2 * SIM_FIG9_SSDS);
	fprintf(gp, ", %.6f with lines lw 2 dt 3 lc 'red' title 'staging only (E x S)'\n",
	        pfs_tb(f->staging[SIM_FIG9_STAGINGS - 1]));
	fprintf(gp, "unset multiplot\n");
}

nopfs_status sim_plot_fig9(const char *dir, const struct sim_fig9 *f)
{
	char path[PATH_MAX];
	nopfs_status status;
	FILE *out = open_in(dir, "fig9.dat", path, sizeof(path));

	if (!out)
		return NOPFS_ERR_IO;
	fprintf(out,
	        "# ram_gb, hours by SSD size (NoPFS, ours), PFS TB by SSD size (NoPFS, ours)\n");
	for (unsigned int ram = 0; ram < SIM_FIG9_RAMS; ram++) {
		fprintf(out, "%g", sim_fig9_ram_gb[ram] * f->scale);
		for (unsigned int s = 0; s < SIM_FIG9_SSDS; s++)
			fprintf(out, " %.6f", hours(f->grid[ram][s]));
		for (unsigned int s = 0; s < SIM_FIG9_SSDS; s++)
			fprintf(out, " %.6f", hours(f->ours[ram][s]));
		for (unsigned int s = 0; s < SIM_FIG9_SSDS; s++)
			fprintf(out, " %.6f", pfs_tb(f->grid[ram][s]));
		for (unsigned int s = 0; s < SIM_FIG9_SSDS; s++)
			fprintf(out, " %.6f", pfs_tb(f->ours[ram][s]));
		fprintf(out, "\n");
	}
	status = close_file(out, path);
	if (status != NOPFS_OK)
		return status;
	out = open_in(dir, "fig9.gp", path, sizeof(path));
	if (!out)
		return NOPFS_ERR_IO;
	fig9_script(out, "pngcairo", "fig9.png", f);
	fig9_script(out, "svg", "fig9.svg", f);
	status = close_file(out, path);
	if (status != NOPFS_OK)
		return status;
	return gnuplot_run(dir, "fig9.gp");
}
