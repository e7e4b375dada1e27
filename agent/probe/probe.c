/* The probe: its configuration, the time budget of its phases, the cache, the model. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe_internal.h"
#include "common/clock.h"
#include "common/log.h"

#define PROBE_IO_MAX    (UINT64_C(16) << 20)
#define PROBE_RESERVE   0.05 /* of the budget, kept for cleaning up and caching */
#define PROBE_MIN_SLICE 0.2  /* of a fair share: what a measurement gets at least */
#define RAM_SHARES      1
#define SSD_SHARES      2
#define PFS_SHARES      2

/* Start a phase of @measurements worth @weight of the @shares left until @end. */
static void phase_begin(struct probe_phase *phase, double end, unsigned int weight,
                        unsigned int *shares, unsigned int measurements)
{
	double now = nopfs_clock_seconds();
	double left = end > now ? end - now : 0;

	phase->end = now + left * weight / *shares;
	phase->measurements = measurements;
	*shares -= weight;
}

/* Debug: how a phase kept to its time box (seconds since @start). */
static void phase_done(const char *name, const struct probe_phase *phase, double start)
{
	nopfs_debug("probe: %s done at %.3f s, its time box ended at %.3f s", name,
	            nopfs_clock_seconds() - start, phase->end - start);
}

static nopfs_status check_config(const struct probe_config *config)
{
	if (!config->tiers) {
		nopfs_error("probe: no tier list given");
		return NOPFS_ERR_INVALID;
	}
	if (config->tiers->count > NOPFS_TIERS_MAX) {
		nopfs_error("probe: %u tiers; accepted: at most %d", config->tiers->count,
		            NOPFS_TIERS_MAX);
		return NOPFS_ERR_INVALID;
	}
	if (!config->files && config->file_count) {
		nopfs_error("probe: file_count %llu without a file list",
		            (unsigned long long)config->file_count);
		return NOPFS_ERR_INVALID;
	}
	if (config->mean_sample_size == 0) {
		nopfs_error("probe: mean_sample_size 0; accepted: > 0 bytes");
		return NOPFS_ERR_INVALID;
	}
	if (!isfinite(config->budget_seconds) || config->budget_seconds <= 0) {
		nopfs_error("probe: budget_seconds %g; accepted: > 0", config->budget_seconds);
		return NOPFS_ERR_INVALID;
	}
	if (config->max_threads < 1 || config->max_threads > PROBE_THREADS_MAX) {
		nopfs_error("probe: max_threads %u; accepted: 1 to %d", config->max_threads,
		            PROBE_THREADS_MAX);
		return NOPFS_ERR_INVALID;
	}
	if (config->cache_dir && isnan(config->max_age_seconds)) {
		nopfs_error("probe: max_age_seconds is not a number");
		return NOPFS_ERR_INVALID;
	}
	return NOPFS_OK;
}

static void plan_init(const struct probe_config *config, struct probe_plan *plan)
{
	uint64_t io =
	        config->mean_sample_size < PROBE_IO_MAX ? config->mean_sample_size : PROBE_IO_MAX;

	memset(plan, 0, sizeof(*plan));
	for (unsigned int t = 1; t < config->max_threads; t *= 2)
		plan->threads[plan->points++] = t;
	plan->threads[plan->points++] = config->max_threads;
	plan->max_threads = config->max_threads;
	plan->io_size = (io + PROBE_IO_ALIGN - 1) / PROBE_IO_ALIGN * PROBE_IO_ALIGN;
	plan->seed = config->seed;
}

/* Every ssd directory must exist before any time is spent. */
static nopfs_status check_ssd_dirs(const struct nopfs_tier_list *tiers)
{
	struct stat st;

	for (unsigned int i = 0; i < tiers->count; i++) {
		const char *dir = tiers->tier[i].path;

		if (tiers->tier[i].kind != NOPFS_TIER_SSD)
			continue;
		if (stat(dir, &st) != 0) {
			nopfs_error("ssd tier directory '%s': %m", dir);
			return nopfs_status_from_errno(errno);
		}
		if (!S_ISDIR(st.st_mode)) {
			nopfs_error("ssd tier directory '%s' is not a directory", dir);
			return NOPFS_ERR_NOT_FOUND;
		}
	}
	return NOPFS_OK;
}

/* The fields every result has, measured or cached: host and ssd paths. */
static nopfs_status result_init(const struct nopfs_tier_list *tiers, struct probe_result *result)
{
	memset(result, 0, sizeof(*result));
	if (gethostname(result->host, sizeof(result->host) - 1) != 0) {
		nopfs_error("probe: cannot get the host name: %m");
		return nopfs_status_from_errno(errno);
	}
	for (unsigned int i = 0; i < tiers->count; i++) {
		if (tiers->tier[i].kind != NOPFS_TIER_SSD)
			continue;
		memcpy(result->ssd[result->ssd_count].path, tiers->tier[i].path,
		       sizeof(result->ssd[0].path));
		result->ssd_count++;
	}
	return NOPFS_OK;
}

/* The knee of @curve as a thread count in 1..@max; 0 for an empty curve. */
static unsigned int knee(const struct nopfs_curve *curve, unsigned int max)
{
	double x = nopfs_curve_knee(curve, PROBE_KNEE);

	if (curve->points == 0)
		return 0;
	if (x < 1)
		return 1;
	return x > max ? max : (unsigned int)x;
}

static nopfs_status measure(const struct probe_config *config, const struct probe_plan *plan,
                            struct probe_result *result)
{
	double start = nopfs_clock_seconds();
	double end = start + config->budget_seconds * (1 - PROBE_RESERVE);
	unsigned int shares = RAM_SHARES + SSD_SHARES * result->ssd_count;
	struct probe_closer closer = { .closing = NULL };
	nopfs_status status = NOPFS_OK;
	struct probe_phase phase;

	if (config->file_count)
		shares += PFS_SHARES;
	/*
	 * A share holds one measurement per thread count, as the phases do.
	 * SSDs go first: their scratch files are closed while RAM and the PFS
	 * are measured.
	 */
	phase.min_slice = PROBE_MIN_SLICE * (end - start) / (shares * plan->points);
	for (unsigned int k = 0; k < result->ssd_count; k++) {
		struct probe_ssd *ssd = &result->ssd[k];

		phase_begin(&phase, end, SSD_SHARES, &shares, 2 * plan->points);
		status = probe_ssd_measure(plan, &phase, ssd, &closer);
		if (status)
			goto out_close;
		phase_done(ssd->path, &phase, start);
		ssd->threads = knee(&ssd->read, plan->max_threads);
	}
	probe_closer_start(&closer);
	phase_begin(&phase, end, RAM_SHARES, &shares, plan->points);
	status = probe_ram_measure(plan, &phase, &result->ram_copy);
	if (status)
		goto out_close;
	phase_done("RAM", &phase, start);
	result->ram_threads = knee(&result->ram_copy, plan->max_threads);
	if (config->file_count) {
		phase_begin(&phase, end, PFS_SHARES, &shares, plan->points);
		status = probe_pfs_measure(config, plan, &phase, &result->pfs_read,
		                           &result->pfs_bytes_read);
		if (status)
			goto out_close;
		phase_done("PFS", &phase, start);
		result->pfs_threads = knee(&result->pfs_read, plan->max_threads);
	}
	result->io_size = plan->io_size;

out_close:
	probe_closer_finish(&closer, start + config->budget_seconds);
	if (status)
		return status;
	result->seconds = nopfs_clock_seconds() - start;
	nopfs_info("probe took %.2f s (budget %.2f s)", result->seconds, config->budget_seconds);
	return NOPFS_OK;
}

nopfs_status probe_run(const struct probe_config *config, struct probe_result *result)
{
	struct probe_result fresh;
	struct probe_plan plan;
	json_t *key = NULL;
	nopfs_status status;

	status = check_config(config);
	if (status)
		return status;
	status = check_ssd_dirs(config->tiers);
	if (status)
		return status;
	plan_init(config, &plan);
	status = result_init(config->tiers, &fresh);
	if (status)
		return status;
	if (config->cache_dir) {
		key = probe_cache_key(config, fresh.host, &plan);
		if (!key)
			nopfs_warning("cannot make a probe cache key (out of memory, or a "
			              "path that is not UTF-8); not caching");
		else if (probe_cache_load(config->cache_dir, key, config->max_age_seconds, &plan,
		                          &fresh))
			goto out_done;
	}
	status = measure(config, &plan, &fresh);
	if (status)
		goto out_put_key;
	if (key)
		probe_cache_store(config->cache_dir, key, &fresh);
out_done:
	*result = fresh;
out_put_key:
	json_decref(key);
	return status;
}

static double curve_max(const struct nopfs_curve *curve)
{
	double best = 0;

	for (unsigned int i = 0; i < curve->points; i++)
		if (curve->y[i] > best)
			best = curve->y[i];
	return best;
}

void probe_fill_model(const struct probe_result *result, const struct nopfs_tier_list *tiers,
                      struct nopfs_model *model)
{
	unsigned int count = tiers->count < NOPFS_MODEL_TIERS ? tiers->count : NOPFS_MODEL_TIERS;
	unsigned int ssd = 0;

	for (unsigned int i = 0; i < count; i++) {
		struct nopfs_tier_model *tier = &model->tier[i];

		if (tiers->tier[i].kind == NOPFS_TIER_RAM) {
			tier->read = result->ram_copy;
			tier->write = result->ram_copy;
			tier->threads = result->ram_threads;
		} else if (ssd < result->ssd_count) {
			tier->read = result->ssd[ssd].read;
			tier->write = result->ssd[ssd].write;
			tier->threads = result->ssd[ssd].threads;
			ssd++;
		}
	}
	model->tiers = count;
	model->staging.read = result->ram_copy;
	model->staging.write = result->ram_copy;
	model->staging.threads = result->ram_threads;
	if (result->pfs_read.points) {
		model->pfs = result->pfs_read;
		model->pfs_client_limit = curve_max(&result->pfs_read);
	}
}
