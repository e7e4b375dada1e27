/* A small cache of epoch permutations and their inverses. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "epochs.h"
#include "common/log.h"

nopfs_status epoch_map_compute(const struct nopfs_sampler *sampler, uint32_t epoch,
                               struct epoch_map *map)
{
	uint64_t count = sampler->count;

	map->epoch = epoch;
	map->perm = malloc(count * sizeof(*map->perm));
	map->inverse = malloc(count * sizeof(*map->inverse));
	if (!map->perm || !map->inverse) {
		epoch_map_free(map);
		nopfs_error("no memory for the permutation of epoch %" PRIu32, epoch);
		return NOPFS_ERR_NOMEM;
	}
	nopfs_sampler_permutation(sampler, epoch, map->perm);
	for (uint64_t p = 0; p < count; p++)
		map->inverse[map->perm[p]] = (uint32_t)p;
	return NOPFS_OK;
}

void epoch_map_free(struct epoch_map *map)
{
	free(map->perm);
	free(map->inverse);
	map->perm = map->inverse = NULL;
}

const struct epoch_map *epoch_cache_find(struct epoch_cache *cache, uint32_t epoch)
{
	for (int i = 0; i < EPOCH_SLOTS; i++) {
		if (cache->last_use[i] && cache->slot[i].epoch == epoch) {
			cache->last_use[i] = ++cache->clock;
			return &cache->slot[i];
		}
	}
	return NULL;
}

const struct epoch_map *epoch_cache_install(struct epoch_cache *cache, struct epoch_map *map,
                                            uint32_t keep_from, uint32_t keep_to)
{
	const struct epoch_map *cached = epoch_cache_find(cache, map->epoch);
	int victim = -1;

	if (cached) {
		epoch_map_free(map);
		return cached;
	}
	for (int pass = 0; pass < 2 && victim < 0; pass++) {
		for (int i = 0; i < EPOCH_SLOTS; i++) {
			bool kept = cache->last_use[i] && cache->slot[i].epoch >= keep_from &&
			            cache->slot[i].epoch <= keep_to;

			if (pass == 0 && kept)
				continue;
			if (victim < 0 || cache->last_use[i] < cache->last_use[victim])
				victim = i;
		}
	}
	if (cache->last_use[victim])
		epoch_map_free(&cache->slot[victim]);
	cache->slot[victim] = *map;
	cache->last_use[victim] = ++cache->clock;
	memset(map, 0, sizeof(*map));
	return &cache->slot[victim];
}

void epoch_cache_fini(struct epoch_cache *cache)
{
	for (int i = 0; i < EPOCH_SLOTS; i++)
		if (cache->last_use[i])
			epoch_map_free(&cache->slot[i]);
	memset(cache, 0, sizeof(*cache));
}
