/*
 * What the policies choose from: sort keys (reads desc, first epoch asc,
 * sample asc, in one integer) and, per node, the samples it reads as
 * candidates sorted by key.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/parallel.h"
#include "placement_internal.h"

uint64_t nopfs_placement_key(uint32_t reads, uint32_t first_epoch, uint32_t sample)
{
	uint64_t clamped_reads = reads < UINT16_MAX ? reads : UINT16_MAX;

	return ((uint64_t)(UINT16_MAX - clamped_reads) << 48) | ((uint64_t)first_epoch << 32) |
	       sample;
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int compare_candidates(const void *a, const void *b)
{
	const struct nopfs_candidate *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return (x->key > y->key) - (x->key < y->key);
}

nopfs_status nopfs_candidates_sort(struct nopfs_candidate *candidates, uint64_t count)
{
	qsort(candidates, count, sizeof(*candidates), compare_candidates);
	return NOPFS_OK;
}

void nopfs_keys_sort(uint64_t *keys, uint64_t count)
{
	qsort(keys, count, sizeof(*keys), compare_u64);
}

struct collect_job {
	const struct nopfs_placement *p;
	bool (*wanted)(const struct nopfs_placement *p, uint32_t node, uint64_t sample);
	uint64_t begin, end;
	struct nopfs_candidate *found;
	uint64_t count, room;
	nopfs_status status;
};

static bool collect_push(struct collect_job *job, uint32_t node, uint64_t key)
{
	if (job->count == job->room) {
		uint64_t room = job->room ? job->room * 2 : 4096;
		struct nopfs_candidate *grown = realloc(job->found, room * sizeof(*grown));

		if (!grown)
			return false;
		job->found = grown;
		job->room = room;
	}
	job->found[job->count++] = (struct nopfs_candidate){ .key = key, .node = node };
	return true;
}

static void collect_worker(void *arg)
{
	struct collect_job *job = arg;
	const struct nopfs_placement *p = job->p;
	struct nopfs_access_tally tally;

	job->status = nopfs_access_tally_init(&tally, p->table);
	if (job->status != NOPFS_OK)
		return;
	nopfs_access_tally_seek(&tally, p->table, job->begin);
	for (uint64_t k = job->begin; k < job->end && job->status == NOPFS_OK; k++) {
		unsigned int touched = nopfs_access_tally_sample(&tally, p->table, k);

		for (unsigned int i = 0; i < touched; i++) {
			uint32_t n = tally.touched[i];

			if (!job->wanted(p, n, k))
				continue;
			if (!collect_push(job, n,
			                  nopfs_placement_key(tally.count[n], tally.first_epoch[n],
			                                      (uint32_t)k))) {
				job->status = NOPFS_ERR_NOMEM;
				break;
			}
		}
	}
	nopfs_access_tally_fini(&tally);
}

nopfs_status nopfs_candidates_collect(const struct nopfs_placement *p,
                                      bool (*wanted)(const struct nopfs_placement *p, uint32_t node,
                                                     uint64_t sample),
                                      struct nopfs_candidate **out, uint64_t *count)
{
	unsigned int threads = p->threads;
	struct collect_job *jobs = calloc(threads, sizeof(*jobs));
	struct nopfs_candidate *all = NULL;
	nopfs_status status = NOPFS_OK;
	uint64_t total = 0;

	if (!jobs)
		goto out_nomem;
	for (unsigned int t = 0; t < threads; t++) {
		jobs[t].p = p;
		jobs[t].wanted = wanted;
		jobs[t].begin = p->samples * t / threads;
		jobs[t].end = p->samples * (t + 1) / threads;
	}
	nopfs_parallel_run(collect_worker, jobs, sizeof(*jobs), threads);
	for (unsigned int t = 0; t < threads; t++) {
		if (jobs[t].status != NOPFS_OK)
			status = jobs[t].status;
		total += jobs[t].count;
	}
	if (status == NOPFS_OK) {
		all = malloc((total ? total : 1) * sizeof(*all));
		if (!all)
			status = NOPFS_ERR_NOMEM;
	}
	for (uint64_t t = 0, at = 0; t < threads; t++) {
		if (all && jobs[t].count)
			memcpy(all + at, jobs[t].found, jobs[t].count * sizeof(*all));
		at += jobs[t].count;
		free(jobs[t].found);
	}
	free(jobs);
	if (status != NOPFS_OK)
		goto out_nomem;
	nopfs_candidates_sort(all, total);
	*out = all;
	*count = total;
	return NOPFS_OK;

out_nomem:
	free(all);
	nopfs_error("no memory for the placement candidates of %" PRIu64 " samples", p->samples);
	return NOPFS_ERR_NOMEM;
}
