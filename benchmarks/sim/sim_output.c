/* Tables on stdout and CSV files. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "sim_output.h"

const struct sim_result *sim_report_result(const struct sim_report *report, enum sim_policy policy)
{
	for (unsigned int i = 0; i < report->count; i++)
		if (report->jobs[i].policy == policy && report->jobs[i].status == NOPFS_OK)
			return &report->jobs[i].result;
	return NULL;
}

double sim_report_lower_bound(const struct sim_report *report)
{
	const struct sim_result *perfect = sim_report_result(report, SIM_PERFECT);

	return perfect && perfect->feasible ? perfect->total : 0;
}

double sim_result_lower_bound(const struct sim_report *report, const struct sim_result *res)
{
	double perfect = sim_report_lower_bound(report);

	return perfect > 0 && perfect < res->balanced ? perfect : res->balanced;
}

const char *sim_regime(const struct sim_dataset *data, const struct sim_system *system)
{
	const struct nopfs_model *m = &system->model;
	double s = (double)data->bytes, d1 = m->tiers ? (double)m->tier[0].capacity : 0, d = 0;

	for (unsigned int t = 0; t < m->tiers; t++)
		d += (double)m->tier[t].capacity;
	if (s < d1)
		return "S < d1";
	if (s < d)
		return "d1 < S < D";
	if (s < d * data->workload.nodes)
		return "D < S < ND";
	return "ND < S";
}

void sim_time_unit(double seconds, const char **name, double *divisor)
{
	if (seconds < 600) {
		*name = "s";
		*divisor = 1;
	} else if (seconds < 3 * 3600) {
		*name = "min";
		*divisor = 60;
	} else {
		*name = "h";
		*divisor = 3600;
	}
}

/* Decimal units for byte counts around @bytes: "MB", "GB" or "TB". */
static void byte_unit(double bytes, const char **name, double *divisor)
{
	if (bytes < 2 * SIM_GB) {
		*name = "MB";
		*divisor = SIM_MB;
	} else if (bytes < 20e12) {
		*name = "GB";
		*divisor = SIM_GB;
	} else {
		*name = "TB";
		*divisor = 1e12;
	}
}

static void print_system(const struct sim_system *system, uint32_t nodes)
{
	const struct nopfs_model *m = &system->model;

	printf("  system: N=%" PRIu32 " c=%g MB/s beta=%g MB/s b_c=%g MB/s t(gamma)=", nodes,
	       m->compute / SIM_MB, m->preprocess / SIM_MB, m->network / SIM_MB);
	for (unsigned int i = 0; i < m->pfs.points; i++)
		printf("%s%g:%g", i ? "," : "", m->pfs.x[i], m->pfs.y[i] / SIM_MB);
	printf(" MB/s\n          staging %g GB/%u thr", m->staging.capacity / SIM_GB,
	       m->staging.threads);
	for (unsigned int t = 0; t < m->tiers; t++)
		printf("; %s %g GB/%u thr r=%g w=%g MB/s", system->tier_name[t],
		       m->tier[t].capacity / SIM_GB, m->tier[t].threads,
		       nopfs_curve_eval(&m->tier[t].read, m->tier[t].threads) / SIM_MB,
		       nopfs_curve_eval(&m->tier[t].write, m->tier[t].threads) / SIM_MB);
	printf("\n");
}

static void print_header(const struct sim_report *r)
{
	const struct sim_workload *w = &r->data->workload;
	const char *unit;
	double divisor;

	byte_unit((double)r->data->bytes, &unit, &divisor);
	printf("== %s ==\n", r->title);
	printf("  workload: F=%" PRIu64 " mean=%g MB sd=%g MB E=%" PRIu32 " B=%" PRIu32
	       " | S drawn %.1f %s (mu x F %.1f %s%s%s) | regime %s",
	       w->samples, w->mean / SIM_MB, w->stddev / SIM_MB, w->epochs, w->batch,
	       r->data->bytes / divisor, unit, w->mean * (double)w->samples / divisor, unit,
	       r->paper ? ", paper " : "", r->paper ? r->paper->paper_size : "",
	       sim_regime(r->data, r->system));
	if (r->paper)
		printf(" (paper: %s)", r->paper->paper_regime);
	printf("\n");
	print_system(r->system, w->nodes);
}

static void print_row(const struct sim_report *r, const struct sim_result *res, double divisor,
                      const int *buckets, unsigned int bucket_count)
{
	double lower = sim_result_lower_bound(r, res);
	const char *unit;
	double bytes;
	const struct sim_workload *w = &r->data->workload;
	double first = res->epochs ? res->epoch_end[0] - res->stage_in : 0;
	double last = res->epochs > 1
	                      ? res->epoch_end[res->epochs - 1] - res->epoch_end[res->epochs - 2]
	                      : first;

	printf("  %-14s %9.3f %6.3f %8.3f %8.3f %8.3f |", sim_policy_name(res->policy),
	       res->total / divisor, lower > 0 ? res->total / lower : 0, res->stall / divisor,
	       first / divisor, last / divisor);
	for (unsigned int i = 0; i < bucket_count; i++)
		printf(" %5.1f%%", res->total > 0 ? 100 * res->bucket[buckets[i]] / res->total : 0);
	byte_unit((double)r->data->bytes, &unit, &bytes);
	printf(" | %9.1f %6.2f %7.1f%%\n", res->pfs_bytes / bytes,
	       (double)res->pfs_bytes / (double)r->data->bytes,
	       100.0 * (double)res->accessed_samples / (double)w->samples);
}

void sim_report_print(const struct sim_report *r)
{
	const struct nopfs_model *m = &r->system->model;
	double lower = sim_report_lower_bound(r), divisor;
	int buckets[SIM_BUCKETS];
	unsigned int bucket_count = 0;
	const char *unit, *bytes_unit;
	double bytes;

	print_header(r);
	byte_unit((double)r->data->bytes, &bytes_unit, &bytes);
	sim_time_unit(lower > 0 ? lower : 1, &unit, &divisor);
	buckets[bucket_count++] = SIM_BUCKET_STAGE_IN;
	for (unsigned int t = 0; t < m->tiers; t++)
		buckets[bucket_count++] = SIM_BUCKET_TIER + (int)t;
	buckets[bucket_count++] = SIM_BUCKET_PEER;
	buckets[bucket_count++] = SIM_BUCKET_PFS;
	buckets[bucket_count++] = SIM_BUCKET_IDEAL;
	printf("  %-14s %9s %6s %8s %8s %8s |", "policy", "total", "xLB", "stall", "epoch1",
	       "epochE");
	for (unsigned int i = 0; i < bucket_count; i++)
		printf(" %6.6s", sim_bucket_name(r->system, buckets[i]));
	printf(" | PFS %5s %6s %8s\n", bytes_unit, "PFS/S", "accessed");
	printf("  %-14s %9s %6s %8s %8s %8s |", "", unit, "", unit, unit, unit);
	for (unsigned int i = 0; i < bucket_count; i++)
		printf(" %6s", "%time");
	printf(" |\n");
	for (unsigned int i = 0; i < r->count; i++) {
		const struct sim_job *job = &r->jobs[i];

		if (job->status != NOPFS_OK)
			printf("  %-14s failed: %s\n", sim_policy_name(job->policy),
			       nopfs_status_string(job->status));
		else if (!job->result.feasible)
			printf("  %-14s INFEASIBLE: %s\n", sim_policy_name(job->policy),
			       job->result.note);
		else
			print_row(r, &job->result, divisor, buckets, bucket_count);
	}
	printf("  notes:\n");
	for (unsigned int i = 0; i < r->count; i++)
		if (r->jobs[i].status == NOPFS_OK && r->jobs[i].result.feasible)
			printf("    %-14s %s (simulated in %.1f s)\n",
			       sim_policy_name(r->jobs[i].policy), r->jobs[i].result.note,
			       r->jobs[i].result.wall_seconds);
	printf("\n");
}

static double job_hours(const struct sim_job *job)
{
	if (!job || job->status != NOPFS_OK || !job->result.feasible)
		return -1;
	return job->result.total / 3600;
}

static double job_tb(const struct sim_job *job)
{
	if (!job || job->status != NOPFS_OK || !job->result.feasible)
		return -1;
	return job->result.pfs_bytes / 1e12;
}

void sim_fig9_print(const struct sim_fig9 *f)
{
	printf("== Fig. 9: ImageNet-22k, NoPFS, 5x compute and preprocessing (c=%g MB/s, "
	       "beta=%g MB/s), E=%" PRIu32 " ==\n",
	       64 * SIM_FIG9_SPEEDUP, 200 * SIM_FIG9_SPEEDUP, f->data->workload.epochs);
	printf("  lower bound (Perfect): %.3f h   (paper: 1.06 h)\n", job_hours(f->lower));
	printf("  staging buffer only:");
	for (unsigned int i = 0; i < SIM_FIG9_STAGINGS; i++)
		printf("  %g GB %.3f h", sim_fig9_staging_gb[i], job_hours(f->staging[i]));
	printf("   (paper: 1.64 h each)\n");
	printf("  5 GB staging + RAM x SSD, total hours (NoPFS%s):\n",
	       f->ours[0][0] ? " / nopfs (ours)" : "");
	printf("  %10s", "RAM \\ SSD");
	for (unsigned int s = 0; s < SIM_FIG9_SSDS; s++)
		printf(" %*g GB", f->ours[0][0] ? 14 : 8, sim_fig9_ssd_gb[s] * f->scale);
	printf("\n");
	for (unsigned int ram = 0; ram < SIM_FIG9_RAMS; ram++) {
		printf("  %7g GB", sim_fig9_ram_gb[ram] * f->scale);
		for (unsigned int s = 0; s < SIM_FIG9_SSDS; s++) {
			if (f->ours[ram][s])
				printf("  %7.3f/%7.3f", job_hours(f->grid[ram][s]),
				       job_hours(f->ours[ram][s]));
			else
				printf(" %11.3f", job_hours(f->grid[ram][s]));
		}
		printf("\n");
	}
	printf("  PFS reads, TB (NoPFS%s; staging only: %.1f TB):\n",
	       f->ours[0][0] ? " / nopfs (ours)" : "",
	       f->staging[0]->status == NOPFS_OK ? f->staging[0]->result.pfs_bytes / 1e12 : 0);
	for (unsigned int ram = 0; ram < SIM_FIG9_RAMS; ram++) {
		printf("  %7g GB", sim_fig9_ram_gb[ram] * f->scale);
		for (unsigned int s = 0; s < SIM_FIG9_SSDS; s++) {
			if (f->ours[ram][s])
				printf("  %7.2f/%7.2f", job_tb(f->grid[ram][s]),
				       job_tb(f->ours[ram][s]));
			else
				printf(" %11.2f", job_tb(f->grid[ram][s]));
		}
		printf("\n");
	}
	printf("\n");
}

static void csv_row(FILE *out, const struct sim_report *r, const struct sim_job *job)
{
	const struct sim_result *res = &job->result;
	const struct sim_workload *w = &r->data->workload;
	double lower = sim_result_lower_bound(r, res);

	fprintf(out, "%s,%s,%" PRIu32 ",%" PRIu64 ",%" PRIu32 ",%" PRIu64 ",%s,%s,%d", r->label,
	        w->name, w->nodes, w->samples, w->epochs, r->data->bytes,
	        sim_regime(r->data, r->system), sim_policy_key(job->policy),
	        job->status == NOPFS_OK && res->feasible);
	if (job->status != NOPFS_OK || !res->feasible) {
		fprintf(out, ",,,,,,,,,,,,,,,,,,,,\"%s\"\n",
		        job->status != NOPFS_OK ? nopfs_status_string(job->status) : res->note);
		return;
	}
	fprintf(out, ",%.6f,%.6f,%.6f,%.6f", res->total, lower > 0 ? res->total / lower : 0,
	        res->stall, res->stage_in);
	for (int t = 0; t < NOPFS_MODEL_TIERS; t++)
		fprintf(out, ",%.6f", res->bucket[SIM_BUCKET_TIER + t]);
	fprintf(out, ",%.6f,%.6f,%.6f", res->bucket[SIM_BUCKET_PEER], res->bucket[SIM_BUCKET_PFS],
	        res->bucket[SIM_BUCKET_IDEAL]);
	fprintf(out, ",%" PRIu64 ",%.6f,%" PRIu64 ",%.6f,%.6f", res->pfs_bytes,
	        (double)res->pfs_bytes / (double)r->data->bytes, res->peer_bytes,
	        (double)res->accessed_samples / (double)w->samples,
	        (double)res->accessed_bytes / (double)r->data->bytes);
	fprintf(out, ",%.6f,%.6f,%.3f,\"%s\"\n", res->epoch_end[0] - res->stage_in,
	        res->epochs > 1 ? res->epoch_end[res->epochs - 1] - res->epoch_end[res->epochs - 2]
	                        : res->epoch_end[0] - res->stage_in,
	        res->wall_seconds, res->note);
}

nopfs_status sim_csv_write(const char *path, const struct sim_report *reports, unsigned int count)
{
	FILE *out = fopen(path, "w");

	if (!out) {
		nopfs_error("cannot write %s: %s", path, strerror(errno));
		return NOPFS_ERR_IO;
	}
	fprintf(out, "scenario,dataset,nodes,samples,epochs,dataset_bytes,regime,policy,feasible,"
	             "total_s,x_lower_bound,stall_s,stage_in_s,tier1_s,tier2_s,tier3_s,tier4_s,"
	             "peer_s,pfs_s,ideal_s,pfs_bytes,pfs_over_S,peer_bytes,accessed_samples,"
	             "accessed_bytes,epoch1_s,last_epoch_s,wall_s,note\n");
	for (unsigned int i = 0; i < count; i++)
		for (unsigned int j = 0; j < reports[i].count; j++)
			csv_row(out, &reports[i], &reports[i].jobs[j]);
	if (fclose(out) != 0) {
		nopfs_error("cannot write %s: %s", path, strerror(errno));
		return NOPFS_ERR_IO;
	}
	return NOPFS_OK;
}

static void fig9_csv_row(FILE *out, const char *kind, double staging, double ram, double ssd,
                         const struct sim_job *job)
{
	if (!job)
		return;
	fprintf(out, "%s,%s,%g,%g,%g,", kind, sim_policy_key(job->policy), staging, ram, ssd);
	if (job->status != NOPFS_OK || !job->result.feasible)
		fprintf(out, ",,\n");
	else
		fprintf(out, "%.6f,%" PRIu64 ",%.6f\n", job->result.total, job->result.pfs_bytes,
		        job->result.stall);
}

nopfs_status sim_fig9_csv(const char *path, const struct sim_fig9 *f)
{
	FILE *out = fopen(path, "w");

	if (!out) {
		nopfs_error("cannot write %s: %s", path, strerror(errno));
		return NOPFS_ERR_IO;
	}
	fprintf(out, "kind,policy,staging_gb,ram_gb,ssd_gb,total_s,pfs_bytes,stall_s\n");
	fig9_csv_row(out, "lower-bound", 5, 0, 0, f->lower);
	for (unsigned int i = 0; i < SIM_FIG9_STAGINGS; i++)
		fig9_csv_row(out, "staging-only", sim_fig9_staging_gb[i], 0, 0, f->staging[i]);
	for (unsigned int ram = 0; ram < SIM_FIG9_RAMS; ram++) {
		for (unsigned int s = 0; s < SIM_FIG9_SSDS; s++) {
			fig9_csv_row(out, "tiers", 5, sim_fig9_ram_gb[ram] * f->scale,
			             sim_fig9_ssd_gb[s] * f->scale, f->grid[ram][s]);
			fig9_csv_row(out, "tiers", 5, sim_fig9_ram_gb[ram] * f->scale,
			             sim_fig9_ssd_gb[s] * f->scale, f->ours[ram][s]);
		}
	}
	if (fclose(out) != 0) {
		nopfs_error("cannot write %s: %s", path, strerror(errno));
		return NOPFS_ERR_IO;
	}
	return NOPFS_OK;
}
