/*
 * The simulation engine and what a policy hands it.
 *
 * Each worker consumes its stream in order (NoPFS section 4):
 *   t_f = max(avail(f), t_{f-1} + s_{f-1} / c)
 * where avail(f) is when one of its p_0 staging threads, taking samples in
 * stream order, has fetched sample f from the fastest source and written it
 * into the staging buffer (nopfs_model_best_source() and nopfs_model_write()).
 * A thread starts a sample only when the buffer has room for it; a sample
 * leaves the buffer when its compute is done. Tier prefetchers (p_j threads
 * per tier) fill the policy's lists concurrently, before training (stage-in)
 * or alongside it.
 *
 * Everything runs as one discrete-event simulation over all workers in time
 * order, so PFS contention is seen as it happens: gamma is the number of
 * nodes reading the PFS when a read is issued, and the node's share is
 * t(gamma) / gamma (nopfs_model_fetch_pfs()). A node's PFS reads, from all
 * its threads, queue and are served one after the other at that share, so a
 * node never reads faster than its share and never leaves it idle while
 * reads wait. A read keeps the share it was issued with.
 *
 * Workers do not wait for each other (no per-iteration barrier): the total
 * is the slowest worker's end. Perfect's total is not a simulated worker's
 * but the least any assignment of the samples to the workers can take,
 * max(largest sample, bytes / N) / c (sim_result.balanced).
 */
#ifndef NOPFS_SIM_ENGINE_H
#define NOPFS_SIM_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "sim.h"

/* Rules that differ between policies. */
struct sim_traits {
	bool perfect;                 /* nothing is fetched; the total is the balanced bound */
	unsigned int staging_threads; /* p_0 */
	uint64_t staging_capacity;    /* d_0 in bytes; 0: no prefetch at all (Naive) */
	bool peers;                   /* read copies on other nodes */
	bool peer_wait;               /* wait for a peer copy in flight when that is faster */
	bool helpout_peer;            /* help-out may read a peer (else the PFS, as NoPFS does) */
	bool fill_peer;               /* tier fills read a visible peer copy first */
	bool replicas_visible;        /* peers see every copy (else only the holder's) */
};

/* The earliest copy of a sample that peers can see. */
struct sim_copy {
	double time; /* complete at; INFINITY: none yet */
	uint32_t node;
	uint8_t tier;
};

/* Which node keeps which sample in which tier, and when each copy is ready. */
struct sim_cache {
	uint32_t nodes;
	uint64_t samples;
	unsigned int tiers;
	uint8_t *plan;         /* [node * samples + k]: tier + 1; 0: not kept */
	double *ready;         /* [node * samples + k]: copy complete at; INFINITY: not fetched */
	uint32_t *holder;      /* per sample: the node peers read, NOPFS_NO_NODE; NULL: any copy */
	struct sim_copy *copy; /* per sample */
	uint64_t *used;        /* [node * NOPFS_MODEL_TIERS + tier]: bytes planned */
};

/* A prefetcher's list: samples a node's tier fetches, in order. */
struct sim_fill {
	uint32_t node;
	unsigned int tier;
	bool stage_in; /* before training starts (else alongside it) */
	uint32_t *list;
	uint64_t count;
};

/* What a policy sets up for the engine (sim_setup_fini() frees it). */
struct sim_setup {
	struct sim_traits traits;
	uint32_t **streams;      /* per node, or NULL for the dataset's sampler order */
	struct sim_cache *cache; /* NULL: nothing is kept */
	struct sim_fill *fills;
	unsigned int fill_count;
	bool infeasible;
	char note[256];
};

/* ---- engine parts: the shared PFS (sim_pfs.c), staging buffers (sim_ring.c) ---- */

struct sim_pfs_read {
	double end;
	uint32_t node;
};

struct sim_pfs {
	const struct nopfs_model *model;
	double *busy;              /* per node: its queue of reads is busy until */
	uint32_t nodes_busy;       /* nodes whose queue is busy now */
	struct sim_pfs_read *heap; /* queued reads by end (stale entries too) */
	size_t count, room;
	uint64_t bytes; /* read so far */
	bool failed;    /* out of memory */
};

/* For @nodes nodes of up to @threads reading threads each; logs on failure. */
nopfs_status sim_pfs_init(struct sim_pfs *pfs, const struct nopfs_model *model, uint32_t nodes,
                          unsigned int threads);
void sim_pfs_fini(struct sim_pfs *pfs);

/* gamma for a read @node would issue at @now: nodes reading, itself included. */
double sim_pfs_gamma(struct sim_pfs *pfs, uint32_t node, double now);

/*
 * Issue a read of @size bytes by @node at @now (right after sim_pfs_gamma()
 * at @now): it starts at *begin, after the node's queued reads, and lasts
 * the returned seconds at the node's share t(@gamma) / @gamma.
 */
double sim_pfs_read(struct sim_pfs *pfs, uint32_t node, double now, uint64_t size, double gamma,
                    double *begin);

/* Samples in a staging buffer, oldest first: size and release time. */
struct sim_ring {
	uint64_t *size;
	double *release;
	uint64_t head, count, room; /* room is a power of two */
	uint64_t bytes;
};

/* Append a sample; false when out of memory. */
bool sim_ring_push(struct sim_ring *ring, uint64_t size, double release);

/*
 * The earliest time @size more bytes fit under @capacity: samples leave in
 * order, so drop the oldest until they fit (or the buffer is empty, for a
 * sample larger than the buffer); -INFINITY when they fit already.
 */
double sim_ring_make_room(struct sim_ring *ring, uint64_t size, uint64_t capacity);
void sim_ring_fini(struct sim_ring *ring);

/* Run the simulation described by @setup; fills @result (not its policy). */
nopfs_status sim_engine_run(const struct sim_dataset *data, const struct nopfs_model *model,
                            const struct sim_setup *setup, struct sim_result *result);

/* ---- helpers for the policies (sim_cache.c) ---- */

/* A cache for @data's nodes and samples; @holders: only holders are visible. */
nopfs_status sim_cache_create(const struct sim_dataset *data, const struct nopfs_model *model,
                              bool holders, struct sim_cache **out);
void sim_cache_destroy(struct sim_cache *cache);

/* Plan @sample on @node in @tier (capacity is the caller's business). */
void sim_cache_keep(struct sim_cache *cache, uint32_t node, unsigned int tier, uint64_t sample,
                    uint64_t size);

/* The fastest of @node's first @tiers tiers with room for @size bytes, or -1. */
int sim_cache_room(const struct sim_cache *cache, const struct nopfs_model *model, uint32_t node,
                   unsigned int tiers, uint64_t size);

/* Distinct samples (and their bytes) planned on at least one node. */
void sim_cache_coverage(const struct sim_cache *cache, const uint64_t *sizes, uint64_t *samples,
                        uint64_t *bytes);

/* The planned tier of @sample on @node, or -1. */
static inline int sim_cache_tier(const struct sim_cache *cache, uint32_t node, uint64_t sample)
{
	return (int)cache->plan[(uint64_t)node * cache->samples + sample] - 1;
}

/*
 * Fill lists (one per node and tier holding anything) of every planned copy,
 * each node's in the order they are needed: at its own first read, or, for
 * copies peers read (the holder's, when the cache has holders) and samples
 * it never reads, at the first read by anyone in @streams.
 */
nopfs_status sim_fill_by_need(const struct sim_dataset *data, const struct sim_cache *cache,
                              uint32_t *const *streams, struct sim_setup *setup);

/* Fill lists of every planned copy in sample id order, all stage-in. */
nopfs_status sim_fill_by_id(const struct sim_cache *cache, struct sim_setup *setup);

/* Free everything a setup owns and zero it. */
void sim_setup_fini(struct sim_setup *setup, const struct sim_dataset *data);

/* Streams: per node arrays of data->length samples (sim_streams_free()). */
nopfs_status sim_streams_alloc(const struct sim_dataset *data, uint32_t ***out);
void sim_streams_free(const struct sim_dataset *data, uint32_t **streams);

/*
 * An endless random order over a non-empty subset of samples: successive
 * permutations of @members (torch.randperm's generator, seed + round).
 */
struct sim_cycle {
	const uint32_t *members;
	uint64_t count;
	uint32_t *perm;
	uint64_t at;
	uint64_t round;
	uint64_t seed;
};
nopfs_status sim_cycle_init(struct sim_cycle *cycle, const uint32_t *members, uint64_t count,
                            uint64_t seed);
uint32_t sim_cycle_next(struct sim_cycle *cycle);
void sim_cycle_fini(struct sim_cycle *cycle);

/* ---- the policies ---- */

nopfs_status sim_policy_basic(const struct sim_dataset *data, const struct nopfs_model *model,
                              enum sim_policy policy, struct sim_setup *setup);
nopfs_status sim_policy_deepio(const struct sim_dataset *data, const struct nopfs_model *model,
                               enum sim_policy policy, struct sim_setup *setup);
nopfs_status sim_policy_sharding(const struct sim_dataset *data, const struct nopfs_model *model,
                                 enum sim_policy policy, struct sim_setup *setup);
nopfs_status sim_policy_lbann(const struct sim_dataset *data, const struct nopfs_model *model,
                              enum sim_policy policy, struct sim_setup *setup);
nopfs_status sim_policy_locality(const struct sim_dataset *data, const struct nopfs_model *model,
                                 enum sim_policy policy, struct sim_setup *setup);
nopfs_status sim_policy_nopfs(const struct sim_dataset *data, const struct nopfs_model *model,
                              enum sim_policy policy, unsigned int threads,
                              struct sim_setup *setup);

#endif
