/*
 * nopfs-sim: the I/O policy simulator of the NoPFS paper (SC'21, section 6),
 * driven by the lib's performance model (model.h), placements (placement.h)
 * and torch-exact access streams (sampler.h).
 *
 * Units: bytes, bytes per second and seconds inside; the paper's MB and GB
 * are decimal (10^6, 10^9 bytes) and are converted at the edges.
 *
 * A workload (dataset and training job) becomes a dataset: the sample sizes
 * and every worker's access stream, shared read-only by the runs. A run is
 * one policy on one system (a struct nopfs_model) and yields a result.
 */
#ifndef NOPFS_SIM_H
#define NOPFS_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "plan/layout.h"
#include "plan/model.h"
#include "plan/sampler.h"
#include "common/status.h"

#define SIM_MB               1e6
#define SIM_GB               1e9
#define SIM_NAME_MAX         64
#define SIM_TITLE_MAX        128
#define SIM_THREADS_MAX      64 /* prefetch threads of one tier or staging buffer */
#define SIM_TIER_NAME_MAX    16
#define SIM_ALL_POLICIES     ((1u << SIM_POLICY_COUNT) - 1)
#define SIM_PRELOAD_SEED     0x5eed5eedu /* seeds the orders of policies that reorder */
#define SIM_DEFAULT_SIZESEED 1

enum sim_policy {
	SIM_PERFECT = 0,
	SIM_NAIVE,
	SIM_STAGING_BUFFER,
	SIM_DEEPIO_ORDERED,
	SIM_DEEPIO_OPTIMISTIC,
	SIM_PARALLEL_STAGING,
	SIM_LBANN_DYNAMIC,
	SIM_LBANN_PRELOAD,
	SIM_LOCALITY_AWARE,
	SIM_NOPFS_PAPER,
	SIM_NOPFS_OURS,
	SIM_POLICY_COUNT
};

/* Where the time of a consumed sample goes (the stacked bars of Fig. 8). */
enum sim_bucket {
	SIM_BUCKET_STAGE_IN = 0, /* a staging or preload phase before training */
	SIM_BUCKET_IDEAL,        /* Perfect: nothing is fetched */
	SIM_BUCKET_PEER,         /* another node's tier */
	SIM_BUCKET_PFS,
	SIM_BUCKET_TIER, /* + local tier index */
	SIM_BUCKETS = SIM_BUCKET_TIER + NOPFS_MODEL_TIERS
};

/* The training job and its dataset; sizes are normal draws (synthetic.h). */
struct sim_workload {
	char name[SIM_NAME_MAX];
	uint32_t nodes; /* N, one worker per node */
	uint64_t samples;
	double mean;   /* bytes */
	double stddev; /* bytes */
	uint32_t size_seed;
	uint64_t seed; /* DistributedSampler seed */
	bool drop_last;
	uint32_t epochs;
	uint32_t batch; /* per worker, used by LocalityAware's batch reordering */
};

/* The machine: the model (staging capacity in model.staging) and tier names. */
struct sim_system {
	struct nopfs_model model;
	char tier_name[NOPFS_MODEL_TIERS][SIM_TIER_NAME_MAX];
};

struct sim_dataset {
	struct sim_workload workload;
	struct nopfs_sampler sampler;
	struct nopfs_layout *layout;
	uint64_t *sizes;
	uint64_t bytes;     /* S as drawn */
	uint64_t min_size;  /* smallest sample */
	uint64_t max_size;  /* largest sample */
	uint64_t per_rank;  /* samples per worker and epoch */
	uint64_t length;    /* samples per worker over all epochs */
	uint32_t **streams; /* per node: the sampler's order, length entries */
};

struct sim_result {
	enum sim_policy policy;
	bool feasible;
	char note[256]; /* why infeasible, or what the policy changed */
	double total;   /* seconds until the slowest worker is done */
	double stage_in;
	double compute; /* max over workers of its samples' s / c (Perfect: its total) */
	/*
	 * The least time any assignment of the samples it computed to the
	 * workers can take: max(largest sample, bytes computed / N) / c. The
	 * workers do not wait for each other, so this bounds the whole run (a
	 * sum of per-iteration bounds would not). Perfect's total.
	 */
	double balanced;
	uint64_t computed_bytes;          /* by all workers, every epoch */
	double stall;                     /* the slowest worker's waiting */
	double bucket[SIM_BUCKETS];       /* its time by source; sums to total */
	double stall_bucket[SIM_BUCKETS]; /* its waiting by source */
	uint32_t epochs;
	double *epoch_end;           /* epochs entries: the last worker's end of each epoch */
	uint64_t reads[SIM_BUCKETS]; /* staging reads of all workers by source */
	uint64_t read_bytes[SIM_BUCKETS];
	uint64_t pfs_bytes;  /* every PFS read: staging, tier fills, stage-in */
	uint64_t peer_bytes; /* every read from another node */
	uint64_t fill_pfs_bytes;
	uint64_t consumed;         /* samples consumed by all workers */
	uint64_t accessed_samples; /* distinct samples ever consumed */
	uint64_t accessed_bytes;
	uint64_t events;
	double wall_seconds;
};

/* Policy names: display ("NoPFS") and key ("nopfs-paper"). */
const char *sim_policy_name(enum sim_policy policy);
const char *sim_policy_key(enum sim_policy policy);
/* Parse a key (or "all"); logs the accepted keys on error. */
nopfs_status sim_policy_parse(const char *text, uint32_t *mask);
/* The same without logging: false for an unknown key. */
bool sim_policy_lookup(const char *text, uint32_t *mask);
/* The accepted keys, comma-separated. */
const char *sim_policy_keys(void);
/* A one-line description of what the policy models, and how we model it. */
const char *sim_policy_summary(enum sim_policy policy);
const char *sim_policy_details(enum sim_policy policy);

/* Name of a bucket for tables and CSV ("pfs", "ram", ...). */
const char *sim_bucket_name(const struct sim_system *system, int bucket);

/*
 * Draw the sizes and replay the sampler for every worker and epoch.
 * @threads (0 means 1) replay epochs in parallel. On success *out owns a new
 * dataset (sim_dataset_destroy()).
 */
nopfs_status sim_dataset_create(const struct sim_workload *workload, unsigned int threads,
                                struct sim_dataset **out);
void sim_dataset_destroy(struct sim_dataset *data);

/* Check a system against a workload (thread counts, curves); logs the culprit. */
nopfs_status sim_system_validate(const struct sim_system *system);

/*
 * Simulate @policy on @system. @threads (0 means 1) are used by placement.
 * Infeasible configurations are results with feasible = false and a note.
 * On success the caller owns result->epoch_end (sim_result_fini()).
 */
nopfs_status sim_run(const struct sim_dataset *data, const struct sim_system *system,
                     enum sim_policy policy, unsigned int threads, struct sim_result *result);
void sim_result_fini(struct sim_result *result);

/* One run of a batch. */
struct sim_job {
	const struct sim_dataset *data;
	const struct sim_system *system;
	enum sim_policy policy;
	struct sim_result result;
	nopfs_status status;
};

/*
 * Run @count jobs, up to @threads at a time (0 means 1); each job's status and
 * result are filled in. Returns the first failure, after running them all.
 */
nopfs_status sim_run_batch(struct sim_job *jobs, unsigned int count, unsigned int threads);

#endif
