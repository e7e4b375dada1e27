/*
 * Permutations of a few epochs and their inverses: which position of an
 * epoch's stream holds a sample, hence which rank reads it and when.
 */
#ifndef NOPFS_AGENT_EPOCHS_H
#define NOPFS_AGENT_EPOCHS_H

#include <stdint.h>

#include "catalog/catalog.h"
#include "common/status.h"
#include "plan/sampler.h"

#define EPOCH_SLOTS 4

struct epoch_map {
	uint32_t epoch;
	uint32_t *perm;    /* count entries */
	uint32_t *inverse; /* inverse[perm[p]] = p, p < count */
};

struct epoch_cache {
	const struct nopfs_sampler *sampler;
	struct epoch_map slot[EPOCH_SLOTS];
	uint64_t last_use[EPOCH_SLOTS]; /* 0 = empty */
	uint64_t clock;
};

/* Compute the map of @epoch into @map (allocates; no locks needed). */
nopfs_status epoch_map_compute(const struct nopfs_sampler *sampler, uint32_t epoch,
                               struct epoch_map *map);

void epoch_map_free(struct epoch_map *map);

/* The cached map of @epoch or NULL. Valid until the next install. */
const struct epoch_map *epoch_cache_find(struct epoch_cache *cache, uint32_t epoch);

/*
 * Install @map (the cache takes it over), evicting the least recently used
 * slot whose epoch is not in [@keep_from, @keep_to] when it can, else the
 * least recently used. If the epoch is already cached, @map is freed.
 */
const struct epoch_map *epoch_cache_install(struct epoch_cache *cache, struct epoch_map *map,
                                            uint32_t keep_from, uint32_t keep_to);

void epoch_cache_fini(struct epoch_cache *cache);

/* The sample at stream position @position (< total size) of @map's epoch. */
static inline nopfs_sample_id epoch_map_sample(const struct nopfs_sampler *sampler,
                                               const struct epoch_map *map, uint64_t position)
{
	return nopfs_sampler_at(sampler, map->perm, position);
}

#endif
