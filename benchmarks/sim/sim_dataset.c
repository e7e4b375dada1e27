/*
 * A workload made concrete: sample sizes drawn with the lib's pinned normal
 * (synthetic.h: draws below 1 byte are drawn again, a truncated normal) and
 * every worker's DistributedSampler stream for every epoch (sampler.h).
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/parallel.h"
#include "sim_engine.h"
#include "plan/synthetic.h"

struct replay_job {
	struct sim_dataset *data;
	uint32_t first_epoch, stride;
	nopfs_status status;
};

static void replay_worker(void *arg)
{
	struct replay_job *job = arg;
	struct sim_dataset *data = job->data;
	uint32_t *perm = malloc(data->workload.samples * sizeof(*perm));

	if (!perm) {
		job->status = NOPFS_ERR_NOMEM;
		return;
	}
	for (uint32_t e = job->first_epoch; e < data->workload.epochs; e += job->stride) {
		nopfs_sampler_permutation(&data->sampler, e, perm);
		for (uint32_t r = 0; r < data->workload.nodes; r++)
			nopfs_sampler_rank_stream(&data->sampler, perm, r,
			                          data->streams[r] + (uint64_t)e * data->per_rank);
	}
	free(perm);
	job->status = NOPFS_OK;
}

static nopfs_status replay(struct sim_dataset *data, unsigned int threads)
{
	uint32_t epochs = data->workload.epochs;
	struct replay_job *jobs;
	nopfs_status status = NOPFS_OK;

	if (threads == 0)
		threads = 1;
	if (threads > epochs)
		threads = epochs;
	jobs = calloc(threads, sizeof(*jobs));
	if (!jobs)
		goto out_nomem;
	for (unsigned int t = 0; t < threads; t++)
		jobs[t] = (struct replay_job){ .data = data, .first_epoch = t, .stride = threads };
	nopfs_parallel_run(replay_worker, jobs, sizeof(*jobs), threads);
	for (unsigned int t = 0; t < threads; t++)
		if (jobs[t].status != NOPFS_OK)
			status = jobs[t].status;
	free(jobs);
	if (status == NOPFS_OK)
		return NOPFS_OK;
out_nomem:
	nopfs_error("no memory to replay the sampler over %" PRIu64 " samples",
	            data->workload.samples);
	return NOPFS_ERR_NOMEM;
}

static nopfs_status workload_validate(const struct sim_workload *w)
{
	if (w->nodes == 0 || w->nodes >= UINT16_MAX) {
		nopfs_error("%s: %" PRIu32 " nodes: need 1 .. %d", w->name, w->nodes,
		            UINT16_MAX - 1);
		return NOPFS_ERR_RANGE;
	}
	if (w->samples == 0 || w->samples >= UINT32_MAX) {
		nopfs_error("%s: %" PRIu64 " samples: need 1 .. %" PRIu32, w->name, w->samples,
		            UINT32_MAX - 1);
		return NOPFS_ERR_RANGE;
	}
	if (w->epochs == 0 || w->epochs >= UINT16_MAX) {
		nopfs_error("%s: %" PRIu32 " epochs: need 1 .. %d", w->name, w->epochs,
		            UINT16_MAX - 1);
		return NOPFS_ERR_RANGE;
	}
	if (!(w->mean >= 1) || !(w->stddev >= 0) || w->mean > 1e15 || w->stddev > 1e15) {
		nopfs_error("%s: sample size mean %g and standard deviation %g bytes: need mean "
		            ">= 1 byte and stddev >= 0",
		            w->name, w->mean, w->stddev);
		return NOPFS_ERR_RANGE;
	}
	if (w->batch == 0) {
		nopfs_error("%s: the batch size must be at least 1", w->name);
		return NOPFS_ERR_RANGE;
	}
	return NOPFS_OK;
}

static nopfs_status draw_sizes(struct sim_dataset *data)
{
	const struct sim_workload *w = &data->workload;
	struct nopfs_synthetic spec = { .count = w->samples,
		                        .mean = (uint64_t)llround(w->mean),
		                        .stddev = (uint64_t)llround(w->stddev),
		                        .seed = w->size_seed };

	data->sizes = malloc(w->samples * sizeof(*data->sizes));
	if (!data->sizes) {
		nopfs_error("no memory for the sizes of %" PRIu64 " samples", w->samples);
		return NOPFS_ERR_NOMEM;
	}
	nopfs_synthetic_sizes(&spec, data->sizes);
	data->min_size = UINT64_MAX;
	for (uint64_t k = 0; k < w->samples; k++) {
		data->bytes += data->sizes[k];
		if (data->sizes[k] < data->min_size)
			data->min_size = data->sizes[k];
		if (data->sizes[k] > data->max_size)
			data->max_size = data->sizes[k];
	}
	return NOPFS_OK;
}

nopfs_status sim_dataset_create(const struct sim_workload *workload, unsigned int threads,
                                struct sim_dataset **out)
{
	struct sim_dataset *data;
	uint32_t *tasks = NULL;
	nopfs_status status;

	status = workload_validate(workload);
	if (status != NOPFS_OK)
		return status;
	data = calloc(1, sizeof(*data));
	tasks = malloc(workload->nodes * sizeof(*tasks));
	if (!data || !tasks) {
		nopfs_error("no memory for the workload %s", workload->name);
		status = NOPFS_ERR_NOMEM;
		goto out_free;
	}
	data->workload = *workload;
	data->sampler = (struct nopfs_sampler){ .count = workload->samples,
		                                .world_size = workload->nodes,
		                                .seed = workload->seed,
		                                .drop_last = workload->drop_last,
		                                .shuffle = true };
	status = nopfs_sampler_validate(&data->sampler);
	if (status != NOPFS_OK)
		goto out_free;
	for (uint32_t n = 0; n < workload->nodes; n++)
		tasks[n] = 1;
	status = nopfs_layout_create(workload->nodes, tasks, NOPFS_DISTRIBUTION_BLOCK, 0,
	                             &data->layout);
	if (status != NOPFS_OK)
		goto out_free;
	status = draw_sizes(data);
	if (status != NOPFS_OK)
		goto out_free;
	data->per_rank = nopfs_sampler_per_rank(&data->sampler);
	data->length = data->per_rank * workload->epochs;
	status = sim_streams_alloc(data, &data->streams);
	if (status != NOPFS_OK)
		goto out_free;
	status = replay(data, threads);
	if (status != NOPFS_OK)
		goto out_free;
	free(tasks);
	*out = data;
	return NOPFS_OK;

out_free:
	free(tasks);
	sim_dataset_destroy(data);
	return status;
}

void sim_dataset_destroy(struct sim_dataset *data)
{
	if (!data)
		return;
	sim_streams_free(data, data->streams);
	nopfs_layout_destroy(data->layout);
	free(data->sizes);
	free(data);
}
