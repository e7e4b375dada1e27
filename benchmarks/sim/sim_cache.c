/*
 * What policies build for the engine: planned copies, prefetch lists in the
 * order they are needed, private streams and endless shuffles of a subset.
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/access.h"
#include "common/log.h"
#include "sim_engine.h"

static inline bool bit_get(const uint8_t *bits, uint64_t at)
{
	return bits[at / 8] & (1u << (at % 8));
}

static inline void bit_set(uint8_t *bits, uint64_t at)
{
	bits[at / 8] |= (uint8_t)(1u << (at % 8));
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* ------------------------------------------------------------------------
 * The cache: planned copies and their ready times.
 */

nopfs_status sim_cache_create(const struct sim_dataset *data, const struct nopfs_model *model,
                              bool holders, struct sim_cache **out)
{
	uint32_t nodes = data->workload.nodes;
	uint64_t samples = data->workload.samples, cells = (uint64_t)nodes * samples;
	struct sim_cache *cache = calloc(1, sizeof(*cache));

	if (!cache)
		goto out_nomem;
	cache->nodes = nodes;
	cache->samples = samples;
	cache->tiers = model->tiers;
	cache->plan = calloc(cells, 1);
	cache->ready = malloc(cells * sizeof(*cache->ready));
	cache->copy = malloc(samples * sizeof(*cache->copy));
	cache->used = calloc((size_t)nodes * NOPFS_MODEL_TIERS, sizeof(*cache->used));
	if (holders)
		cache->holder = malloc(samples * sizeof(*cache->holder));
	if (!cache->plan || !cache->ready || !cache->copy || !cache->used ||
	    (holders && !cache->holder))
		goto out_free;
	for (uint64_t i = 0; i < cells; i++)
		cache->ready[i] = INFINITY;
	for (uint64_t k = 0; k < samples; k++) {
		cache->copy[k] = (struct sim_copy){ .time = INFINITY, .node = NOPFS_NO_NODE };
		if (holders)
			cache->holder[k] = NOPFS_NO_NODE;
	}
	*out = cache;
	return NOPFS_OK;

out_free:
	sim_cache_destroy(cache);
out_nomem:
	nopfs_error("no memory for the copies of %" PRIu64 " samples on %" PRIu32
	            " nodes (%.2f GB)",
	            samples, nodes, (double)cells * (1 + sizeof(double)) / 1e9);
	return NOPFS_ERR_NOMEM;
}

void sim_cache_destroy(struct sim_cache *cache)
{
	if (!cache)
		return;
	free(cache->plan);
	free(cache->ready);
	free(cache->copy);
	free(cache->used);
	free(cache->holder);
	free(cache);
}

void sim_cache_keep(struct sim_cache *cache, uint32_t node, unsigned int tier, uint64_t sample,
                    uint64_t size)
{
	cache->plan[(uint64_t)node * cache->samples + sample] = (uint8_t)(tier + 1);
	cache->used[(size_t)node * NOPFS_MODEL_TIERS + tier] += size;
}

int sim_cache_room(const struct sim_cache *cache, const struct nopfs_model *model, uint32_t node,
                   unsigned int tiers, uint64_t size)
{
	const uint64_t *used = &cache->used[(size_t)node * NOPFS_MODEL_TIERS];

	for (unsigned int t = 0; t < tiers && t < model->tiers; t++)
		if (used[t] + size <= model->tier[t].capacity)
			return (int)t;
	return -1;
}

void sim_cache_coverage(const struct sim_cache *cache, const uint64_t *sizes, uint64_t *samples,
                        uint64_t *bytes)
{
	*samples = 0;
	*bytes = 0;
	for (uint64_t k = 0; k < cache->samples; k++) {
		for (uint32_t n = 0; n < cache->nodes; n++) {
			if (cache->plan[(uint64_t)n * cache->samples + k]) {
				(*samples)++;
				*bytes += sizes[k];
				break;
			}
		}
	}
}

/* ------------------------------------------------------------------------
 * Prefetch lists.
 */

static nopfs_status fills_alloc(const struct sim_cache *cache, struct sim_setup *setup,
                                bool stage_in)
{
	uint32_t nodes = cache->nodes;
	uint64_t *count = calloc((size_t)nodes * NOPFS_MODEL_TIERS, sizeof(*count));
	unsigned int lists = 0;

	if (!count)
		goto out_nomem;
	for (uint32_t n = 0; n < nodes; n++) {
		const uint8_t *plan = &cache->plan[(uint64_t)n * cache->samples];

		for (uint64_t k = 0; k < cache->samples; k++)
			if (plan[k])
				count[(size_t)n * NOPFS_MODEL_TIERS + plan[k] - 1]++;
	}
	for (size_t i = 0; i < (size_t)nodes * NOPFS_MODEL_TIERS; i++)
		lists += count[i] > 0;
	setup->fills = calloc(lists ? lists : 1, sizeof(*setup->fills));
	if (!setup->fills)
		goto out_free;
	for (uint32_t n = 0; n < nodes; n++) {
		for (unsigned int t = 0; t < NOPFS_MODEL_TIERS; t++) {
			uint64_t c = count[(size_t)n * NOPFS_MODEL_TIERS + t];
			struct sim_fill *fill = &setup->fills[setup->fill_count];

			if (!c)
				continue;
			*fill = (struct sim_fill){ .node = n, .tier = t, .stage_in = stage_in };
			fill->list = malloc(c * sizeof(*fill->list));
			if (!fill->list)
				goto out_free;
			setup->fill_count++;
		}
	}
	free(count);
	return NOPFS_OK;

out_free:
	free(count);
out_nomem:
	nopfs_error("no memory for the prefetch lists of %" PRIu32 " nodes", nodes);
	return NOPFS_ERR_NOMEM;
}

/* The list of @node's @tier among the fills (allocated by fills_alloc()). */
static struct sim_fill *fill_of(struct sim_setup *setup, uint32_t node, unsigned int tier)
{
	for (unsigned int i = 0; i < setup->fill_count; i++)
		if (setup->fills[i].node == node && setup->fills[i].tier == tier)
			return &setup->fills[i];
	return NULL;
}

nopfs_status sim_fill_by_id(const struct sim_cache *cache, struct sim_setup *setup)
{
	nopfs_status status = fills_alloc(cache, setup, true);

	if (status != NOPFS_OK)
		return status;
	for (unsigned int i = 0; i < setup->fill_count; i++) {
		struct sim_fill *fill = &setup->fills[i];
		const uint8_t *plan = &cache->plan[(uint64_t)fill->node * cache->samples];

		for (uint64_t k = 0; k < cache->samples; k++)
			if (plan[k] == fill->tier + 1)
				fill->list[fill->count++] = (uint32_t)k;
	}
	return NOPFS_OK;
}

/* Per sample, the stream index (epoch x per_rank + position) of its first read. */
static uint32_t *first_reads(const struct sim_dataset *data, uint32_t *const *streams)
{
	uint32_t *first = malloc(data->workload.samples * sizeof(*first));

	if (!first)
		return NULL;
	for (uint64_t k = 0; k < data->workload.samples; k++)
		first[k] = UINT32_MAX;
	for (uint64_t at = 0; at < data->length; at++) {
		for (uint32_t r = 0; r < data->workload.nodes; r++) {
			uint32_t k = streams[r][at];

			if (first[k] == UINT32_MAX)
				first[k] = (uint32_t)(at < UINT32_MAX ? at : UINT32_MAX - 1);
		}
	}
	return first;
}

struct need_state {
	const struct sim_dataset *data;
	const struct sim_cache *cache;
	uint32_t *const *streams;
	uint8_t *reads, *listed;
	uint32_t *first;  /* lazily: first read by anyone */
	uint64_t *others; /* kept for others, by (first read, sample) */
};

static void list_append(struct sim_setup *setup, uint32_t node, unsigned int tier, uint32_t k)
{
	struct sim_fill *fill = fill_of(setup, node, tier);

	fill->list[fill->count++] = k;
}

/*
 * One node's lists: its own reads in order, merged with what it keeps for
 * others (copies peers read: the holder's, or samples it never reads) at the
 * first read by anyone.
 */
static nopfs_status need_node(struct need_state *st, uint32_t node, struct sim_setup *setup)
{
	const struct sim_cache *cache = st->cache;
	const uint8_t *plan = &cache->plan[(uint64_t)node * cache->samples];
	const uint32_t *stream = st->streams[node];
	uint64_t bitmap = cache->samples / 8 + 1, others = 0, next = 0;

	memset(st->reads, 0, bitmap);
	memset(st->listed, 0, bitmap);
	for (uint64_t at = 0; at < st->data->length; at++)
		bit_set(st->reads, stream[at]);
	for (uint64_t k = 0; k < cache->samples; k++) {
		bool holds = cache->holder && cache->holder[k] == node;

		if (!plan[k] || (bit_get(st->reads, k) && !holds))
			continue;
		bit_set(st->listed, k);
		if (!st->first) {
			st->first = first_reads(st->data, st->streams);
			if (!st->first)
				return NOPFS_ERR_NOMEM;
		}
		st->others[others++] = ((uint64_t)st->first[k] << 32) | k;
	}
	qsort(st->others, others, sizeof(*st->others), compare_u64);
	for (uint64_t at = 0; at < st->data->length; at++) {
		uint32_t k = stream[at];

		for (; next < others && st->others[next] >> 32 <= at; next++)
			list_append(setup, node, plan[(uint32_t)st->others[next]] - 1,
			            (uint32_t)st->others[next]);
		if (!plan[k] || bit_get(st->listed, k))
			continue;
		bit_set(st->listed, k);
		list_append(setup, node, plan[k] - 1, k);
	}
	for (; next < others; next++)
		list_append(setup, node, plan[(uint32_t)st->others[next]] - 1,
		            (uint32_t)st->others[next]);
	return NOPFS_OK;
}

nopfs_status sim_fill_by_need(const struct sim_dataset *data, const struct sim_cache *cache,
                              uint32_t *const *streams, struct sim_setup *setup)
{
	struct need_state st = { .data = data, .cache = cache, .streams = streams };
	nopfs_status status;

	status = fills_alloc(cache, setup, false);
	if (status != NOPFS_OK)
		return status;
	st.reads = malloc(cache->samples / 8 + 1);
	st.listed = malloc(cache->samples / 8 + 1);
	st.others = malloc(cache->samples * sizeof(*st.others));
	if (!st.reads || !st.listed || !st.others) {
		status = NOPFS_ERR_NOMEM;
		goto out;
	}
	for (uint32_t n = 0; n < cache->nodes && status == NOPFS_OK; n++)
		status = need_node(&st, n, setup);
out:
	if (status != NOPFS_OK)
		nopfs_error("no memory to order the prefetch lists of %" PRIu64 " samples",
		            cache->samples);
	free(st.first);
	free(st.others);
	free(st.listed);
	free(st.reads);
	return status;
}

void sim_setup_fini(struct sim_setup *setup, const struct sim_dataset *data)
{
	if (setup->streams)
		sim_streams_free(data, setup->streams);
	sim_cache_destroy(setup->cache);
	for (unsigned int i = 0; i < setup->fill_count; i++)
		free(setup->fills[i].list);
	free(setup->fills);
	memset(setup, 0, sizeof(*setup));
}

/* ------------------------------------------------------------------------
 * Streams and endless shuffles.
 */

nopfs_status sim_streams_alloc(const struct sim_dataset *data, uint32_t ***out)
{
	uint32_t nodes = data->workload.nodes;
	uint32_t **streams = calloc(nodes, sizeof(*streams));

	if (!streams)
		goto out_nomem;
	for (uint32_t n = 0; n < nodes; n++) {
		streams[n] = malloc(data->length * sizeof(**streams));
		if (!streams[n]) {
			sim_streams_free(data, streams);
			goto out_nomem;
		}
	}
	*out = streams;
	return NOPFS_OK;

out_nomem:
	nopfs_error("no memory for %" PRIu32 " streams of %" PRIu64 " samples", nodes,
	            data->length);
	return NOPFS_ERR_NOMEM;
}

void sim_streams_free(const struct sim_dataset *data, uint32_t **streams)
{
	if (!streams)
		return;
	for (uint32_t n = 0; n < data->workload.nodes; n++)
		free(streams[n]);
	free(streams);
}

nopfs_status sim_cycle_init(struct sim_cycle *cycle, const uint32_t *members, uint64_t count,
                            uint64_t seed)
{
	*cycle =
	        (struct sim_cycle){ .members = members, .count = count, .at = count, .seed = seed };
	cycle->perm = malloc((count ? count : 1) * sizeof(*cycle->perm));
	if (!cycle->perm) {
		nopfs_error("no memory to shuffle %" PRIu64 " samples", count);
		return NOPFS_ERR_NOMEM;
	}
	return NOPFS_OK;
}

uint32_t sim_cycle_next(struct sim_cycle *cycle)
{
	if (cycle->at == cycle->count) {
		struct nopfs_sampler order = {
			.count = cycle->count, .world_size = 1, .seed = cycle->seed, .shuffle = true
		};

		nopfs_sampler_permutation(&order, cycle->round++, cycle->perm);
		cycle->at = 0;
	}
	return cycle->members[cycle->perm[cycle->at++]];
}

void sim_cycle_fini(struct sim_cycle *cycle)
{
	free(cycle->perm);
	cycle->perm = NULL;
}
