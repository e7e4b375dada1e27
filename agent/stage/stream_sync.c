/* Finding a rank's place in its streams from its requests off the plan. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "stream_sync.h"

/* How far apart the indices of @count requests lie in @epoch; UINT64_MAX: not all the rank's. */
static uint64_t epoch_span(const struct nopfs_sampler *sampler, const uint32_t *perm,
                           const uint8_t *mark, uint32_t rank, unsigned int count, uint64_t *index)
{
	uint64_t total = nopfs_sampler_total_size(sampler), low = UINT64_MAX, high = 0;
	unsigned int placed = 0;

	for (unsigned int i = 0; i < count; i++)
		index[i] = UINT64_MAX;
	/* a request's sample is the rank's at position p if p = rank mod W */
	for (uint64_t p = rank; p < total; p += sampler->world_size) {
		nopfs_sample_id sample = nopfs_sampler_at(sampler, perm, p);
		uint8_t m = mark[sample];

		if (m && index[m - 1] == UINT64_MAX) {
			index[m - 1] = p / sampler->world_size;
			placed++;
		}
	}
	if (placed < count)
		return UINT64_MAX;
	for (unsigned int i = 0; i < count; i++) {
		low = index[i] < low ? index[i] : low;
		high = index[i] > high ? index[i] : high;
	}
	return high - low;
}

nopfs_status stream_sync_search(const struct nopfs_sampler *sampler, uint32_t epochs, uint32_t rank,
                                const nopfs_sample_id *samples, unsigned int count,
                                uint64_t max_span, const atomic_bool *stop,
                                struct stream_sync_found *found)
{
	uint64_t best = UINT64_MAX, second = UINT64_MAX, index[STREAM_SYNC_MISSES];
	unsigned int distinct = 0;
	uint32_t *perm = malloc(sampler->count * sizeof(*perm));
	uint8_t *mark = calloc(sampler->count, 1);
	nopfs_status status = NOPFS_OK;

	found->span = found->second_span = UINT64_MAX;
	if (!perm || !mark) {
		status = NOPFS_ERR_NOMEM;
		goto out;
	}
	/* A sample asked for twice counts once: the rank holds it once per epoch. */
	for (unsigned int i = 0; i < count && i < STREAM_SYNC_MISSES; i++) {
		if (samples[i] >= sampler->count || mark[samples[i]])
			continue;
		mark[samples[i]] = (uint8_t)(++distinct);
	}
	if (distinct < 2) {
		status = NOPFS_ERR_NOT_FOUND;
		goto out;
	}
	for (uint32_t e = 0; e < epochs; e++) {
		uint64_t span;

		if (stop && atomic_load(stop)) {
			status = NOPFS_ERR_CANCELED;
			goto out;
		}
		nopfs_sampler_permutation(sampler, e, perm);
		span = epoch_span(sampler, perm, mark, rank, distinct, index);
		if (span < best) {
			second = best;
			best = span;
			found->epoch = e;
			found->first = UINT64_MAX;
			for (unsigned int i = 0; i < STREAM_SYNC_MISSES; i++)
				found->index[i] = UINT64_MAX;
			/* each request's index, in the order given (repeats share theirs) */
			for (unsigned int i = 0; i < count && i < STREAM_SYNC_MISSES; i++) {
				if (samples[i] >= sampler->count)
					continue;
				found->index[i] = index[mark[samples[i]] - 1];
				if (found->index[i] < found->first)
					found->first = found->index[i];
			}
		} else if (span < second) {
			second = span;
		}
	}
	found->span = best;
	found->second_span = second;
	/* clearly the closest: every other epoch spreads them four times wider */
	if (best > max_span || (second != UINT64_MAX && second < 4 * (best + 1)))
		status = NOPFS_ERR_NOT_FOUND;
out:
	free(perm);
	free(mark);
	return status;
}
