/* Running policies: names, checks, one run, and a batch of runs on threads. */
#include "config.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/log.h"
#include "common/parallel.h"
#include "sim_engine.h"
#include "common/clock.h"

static const struct {
	const char *name;
	const char *key;
	const char *summary;
	const char *details;
} policies[SIM_POLICY_COUNT] = {
	[SIM_PERFECT] = { "Perfect", "perfect", "no stalls, balanced compute: the lower bound",
	                  "every sample is in the staging buffer when wanted and the workers' "
	                  "compute is balanced: max(largest sample, bytes of all global batches "
	                  "/ N) / c, whichever worker computes each sample" },
	[SIM_NAIVE] = { "Naive", "naive", "PFS, no prefetching or caching",
	                "1 thread: PFS read, preprocess, compute, one sample after the other" },
	[SIM_STAGING_BUFFER] = { "StagingBuffer", "staging-buffer",
	                         "staging buffer filled from the PFS in stream order",
	                         "p_0 threads prefetch in stream order into d_0 bytes; samples "
	                         "leave "
	                         "once consumed (double buffering, tf.data)" },
	[SIM_DEEPIO_ORDERED] = { "DeepIO-ord", "deepio-ordered",
	                         "memory shards, sampler order, PFS for the rest",
	                         "sample k in node k mod N's memory (first tier) while it has "
	                         "room, "
	                         "loaded before training; sampler order; cached samples from "
	                         "memory "
	                         "(local or peer), the rest from the PFS" },
	[SIM_DEEPIO_OPTIMISTIC] = { "DeepIO-opt", "deepio-optimistic",
	                            "memory shards, uncached samples replaced",
	                            "as DeepIO-ord, but a sample nobody holds is replaced by the "
	                            "next "
	                            "one of a shuffle of the worker's own shard: never the PFS, "
	                            "not "
	                            "every sample" },
	[SIM_PARALLEL_STAGING] = { "ParStaging", "parallel-staging",
	                           "data sharding staged before training",
	                           "sample k staged on node k mod N (tiers fastest first) before "
	                           "training; each worker reads only its shard, reshuffled each "
	                           "round, per_rank samples per epoch" },
	[SIM_LBANN_DYNAMIC] = { "LBANN-dyn", "lbann-dynamic", "memory data store filled in epoch 0",
	                        "memory only (infeasible when S > N x d_1); epoch 0 reads the PFS "
	                        "and the reader keeps the sample; later epochs read the owner" },
	[SIM_LBANN_PRELOAD] = { "LBANN-pre", "lbann-preload",
	                        "memory data store preloaded before training",
	                        "memory only (infeasible when S > N x d_1); sample k preloaded on "
	                        "node "
	                        "k mod N before training" },
	[SIM_LOCALITY_AWARE] = { "LocalityAware", "locality-aware",
	                         "epoch-0 caches, batches dealt by locality",
	                         "each worker keeps what it reads in epoch 0 (tiers fastest "
	                         "first); "
	                         "later global batches are dealt to the workers holding their "
	                         "samples "
	                         "(rest: lowest rank with room), peers or the PFS for the others" },
	[SIM_NOPFS_PAPER] = { "NoPFS", "nopfs-paper",
	                      "NoPFS: greedy by frequency, tiers filled from the PFS",
	                      "lib greedy placement; tier prefetchers fetch every copy from the "
	                      "PFS in first-need order; every copy visible; help-out from the "
	                      "PFS" },
	[SIM_NOPFS_OURS] = { "nopfs", "nopfs",
	                     "ours: owner-first placement, tiers filled from peers",
	                     "lib owner-first placement; primaries fetched from the PFS in "
	                     "first-need order, replicas from the primary (waiting for it); peers "
	                     "see primaries only" },
};

const char *sim_policy_name(enum sim_policy policy)
{
	return policy < SIM_POLICY_COUNT ? policies[policy].name : "?";
}

const char *sim_policy_key(enum sim_policy policy)
{
	return policy < SIM_POLICY_COUNT ? policies[policy].key : "?";
}

const char *sim_policy_summary(enum sim_policy policy)
{
	return policy < SIM_POLICY_COUNT ? policies[policy].summary : "?";
}

const char *sim_policy_details(enum sim_policy policy)
{
	return policy < SIM_POLICY_COUNT ? policies[policy].details : "?";
}

bool sim_policy_lookup(const char *text, uint32_t *mask)
{
	if (strcasecmp(text, "all") == 0) {
		*mask = SIM_ALL_POLICIES;
		return true;
	}
	for (int p = 0; p < SIM_POLICY_COUNT; p++) {
		if (strcmp(text, policies[p].key) == 0) {
			*mask = 1u << p;
			return true;
		}
	}
	return false;
}

const char *sim_policy_keys(void)
{
	static char keys[512];

	if (keys[0] == '\0') {
		strcpy(keys, "all");
		for (int p = 0; p < SIM_POLICY_COUNT; p++) {
			strcat(keys, ", ");
			strcat(keys, policies[p].key);
		}
	}
	return keys;
}

nopfs_status sim_policy_parse(const char *text, uint32_t *mask)
{
	if (sim_policy_lookup(text, mask))
		return NOPFS_OK;
	nopfs_error("unknown policy '%s': expected one of %s", text, sim_policy_keys());
	return NOPFS_ERR_INVALID;
}

const char *sim_bucket_name(const struct sim_system *system, int bucket)
{
	switch (bucket) {
	case SIM_BUCKET_STAGE_IN:
		return "stage-in";
	case SIM_BUCKET_IDEAL:
		return "ideal";
	case SIM_BUCKET_PEER:
		return "peer";
	case SIM_BUCKET_PFS:
		return "pfs";
	default:
		return system->tier_name[bucket - SIM_BUCKET_TIER];
	}
}

static nopfs_status check_tier(const char *name, const struct nopfs_tier_model *tier)
{
	if (tier->threads == 0 || tier->threads > SIM_THREADS_MAX) {
		nopfs_error("%s: %u threads: need 1 .. %d", name, tier->threads, SIM_THREADS_MAX);
		return NOPFS_ERR_RANGE;
	}
	if (tier->read.points == 0 || nopfs_curve_eval(&tier->read, tier->threads) <= 0) {
		nopfs_error("%s: needs a read rate above 0", name);
		return NOPFS_ERR_INVALID;
	}
	return NOPFS_OK;
}

nopfs_status sim_system_validate(const struct sim_system *system)
{
	const struct nopfs_model *m = &system->model;
	nopfs_status status;

	if (!(m->compute > 0)) {
		nopfs_error("the compute throughput c must be above 0");
		return NOPFS_ERR_INVALID;
	}
	if (m->pfs.points == 0 || nopfs_curve_eval(&m->pfs, 1) <= 0) {
		nopfs_error("the PFS needs a read rate t(1) above 0");
		return NOPFS_ERR_INVALID;
	}
	if (m->tiers > NOPFS_MODEL_TIERS) {
		nopfs_error("%u tiers: at most %d", m->tiers, NOPFS_MODEL_TIERS);
		return NOPFS_ERR_RANGE;
	}
	status = check_tier("staging buffer", &m->staging);
	for (unsigned int t = 0; t < m->tiers && status == NOPFS_OK; t++)
		status = check_tier(system->tier_name[t], &m->tier[t]);
	return status;
}

static nopfs_status set_up(const struct sim_dataset *data, const struct nopfs_model *model,
                           enum sim_policy policy, unsigned int threads, struct sim_setup *setup)
{
	switch (policy) {
	case SIM_PERFECT:
	case SIM_NAIVE:
	case SIM_STAGING_BUFFER:
		return sim_policy_basic(data, model, policy, setup);
	case SIM_DEEPIO_ORDERED:
	case SIM_DEEPIO_OPTIMISTIC:
		return sim_policy_deepio(data, model, policy, setup);
	case SIM_PARALLEL_STAGING:
		return sim_policy_sharding(data, model, policy, setup);
	case SIM_LBANN_DYNAMIC:
	case SIM_LBANN_PRELOAD:
		return sim_policy_lbann(data, model, policy, setup);
	case SIM_LOCALITY_AWARE:
		return sim_policy_locality(data, model, policy, setup);
	case SIM_NOPFS_PAPER:
	case SIM_NOPFS_OURS:
		return sim_policy_nopfs(data, model, policy, threads, setup);
	default:
		nopfs_error("unknown policy %d", (int)policy);
		return NOPFS_ERR_INVALID;
	}
}

nopfs_status sim_run(const struct sim_dataset *data, const struct sim_system *system,
                     enum sim_policy policy, unsigned int threads, struct sim_result *result)
{
	struct sim_setup setup;
	double started = nopfs_clock_seconds();
	nopfs_status status;

	memset(&setup, 0, sizeof(setup));
	memset(result, 0, sizeof(*result));
	result->policy = policy;
	status = set_up(data, &system->model, policy, threads ? threads : 1, &setup);
	if (status != NOPFS_OK)
		goto out;
	snprintf(result->note, sizeof(result->note), "%s", setup.note);
	if (setup.infeasible)
		goto out;
	status = sim_engine_run(data, &system->model, &setup, result);
	result->feasible = status == NOPFS_OK;
out:
	sim_setup_fini(&setup, data);
	result->wall_seconds = nopfs_clock_seconds() - started;
	if (status != NOPFS_OK)
		sim_result_fini(result);
	return status;
}

void sim_result_fini(struct sim_result *result)
{
	free(result->epoch_end);
	result->epoch_end = NULL;
}

struct batch {
	struct sim_job *jobs;
	unsigned int count;
	unsigned int placement_threads;
	atomic_uint next;
};

static void batch_worker(void *arg)
{
	struct batch *batch = *(struct batch **)arg;
	unsigned int i;

	while ((i = atomic_fetch_add(&batch->next, 1)) < batch->count) {
		struct sim_job *job = &batch->jobs[i];

		job->status = sim_run(job->data, job->system, job->policy, batch->placement_threads,
		                      &job->result);
	}
}

nopfs_status sim_run_batch(struct sim_job *jobs, unsigned int count, unsigned int threads)
{
	struct batch batch = { .jobs = jobs, .count = count };
	struct batch **slots;
	unsigned int workers;

	if (threads == 0)
		threads = 1;
	workers = threads < count ? threads : count;
	if (workers == 0)
		return NOPFS_OK;
	/* Runs share the threads: placement uses what the runs leave. */
	batch.placement_threads = threads / workers ? threads / workers : 1;
	atomic_init(&batch.next, 0);
	slots = malloc(workers * sizeof(*slots));
	if (!slots) {
		nopfs_error("no memory to run %u simulations", count);
		return NOPFS_ERR_NOMEM;
	}
	for (unsigned int i = 0; i < workers; i++)
		slots[i] = &batch;
	nopfs_parallel_run(batch_worker, slots, sizeof(*slots), workers);
	free(slots);
	for (unsigned int i = 0; i < count; i++)
		if (jobs[i].status != NOPFS_OK)
			return jobs[i].status;
	return NOPFS_OK;
}
