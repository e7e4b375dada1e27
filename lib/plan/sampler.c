/* torch DistributedSampler access streams, bit-exact. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "mt19937.h"
#include "sampler.h"

/* Swaps are done in blocks whose random targets are prefetched first. */
#define SHUFFLE_BLOCK 64

nopfs_status nopfs_sampler_validate(const struct nopfs_sampler *sampler)
{
	if (sampler->count == 0 || sampler->count > UINT32_MAX) {
		nopfs_error("dataset size %" PRIu64 " is outside 1..%" PRIu32, sampler->count,
		            UINT32_MAX);
		return NOPFS_ERR_RANGE;
	}
	if (sampler->world_size == 0) {
		nopfs_error("world size must be at least 1");
		return NOPFS_ERR_RANGE;
	}
	if (sampler->drop_last && sampler->count < sampler->world_size) {
		nopfs_error("drop_last with %" PRIu64 " samples and %" PRIu32
		            " ranks leaves every rank without samples",
		            sampler->count, sampler->world_size);
		return NOPFS_ERR_EMPTY;
	}
	if (sampler->first_index > 0 && sampler->first_index >= nopfs_sampler_per_rank(sampler)) {
		nopfs_error("start sample %" PRIu64 " is not below the %" PRIu64
		            " samples each of the %" PRIu32 " ranks reads per epoch of %" PRIu64
		            " samples",
		            sampler->first_index, nopfs_sampler_per_rank(sampler),
		            sampler->world_size, sampler->count);
		return NOPFS_ERR_RANGE;
	}
	return NOPFS_OK;
}

nopfs_status nopfs_sampler_parse_seed(const char *text, struct nopfs_sampler *sampler)
{
	const char *digits = text;
	bool negative = false;
	unsigned long long value;
	char *end;

	if (*digits == '-') {
		negative = true;
		digits++;
	} else if (*digits == '+') {
		digits++;
	}
	if (*digits < '0' || *digits > '9') {
		nopfs_error("seed '%s' is not a decimal integer", text);
		return NOPFS_ERR_INVALID;
	}
	errno = 0;
	value = strtoull(digits, &end, 10);
	if (*end != '\0') {
		nopfs_error("seed '%s' is not a decimal integer", text);
		return NOPFS_ERR_INVALID;
	}
	if (errno == ERANGE || (negative && value > (unsigned long long)INT64_MAX + 1)) {
		nopfs_error("seed '%s' is outside torch's range -2^63 .. 2^64-1", text);
		return NOPFS_ERR_RANGE;
	}
	if (negative && value != 0) {
		sampler->seed = (uint64_t)0 - (uint64_t)value; /* two's complement */
		sampler->seed_negative = true;
	} else {
		sampler->seed = value;
		sampler->seed_negative = false;
	}
	return NOPFS_OK;
}

nopfs_status nopfs_sampler_check_epochs(const struct nopfs_sampler *sampler, uint64_t epochs)
{
	uint64_t last = sampler->first_epoch + epochs - 1;

	if (epochs == 0)
		return NOPFS_OK;
	if (!sampler->seed_negative && sampler->seed > UINT64_MAX - last) {
		nopfs_error("seed %" PRIu64 " + epoch %" PRIu64
		            " exceeds 2^64-1, which torch.manual_seed rejects",
		            sampler->seed, last);
		return NOPFS_ERR_RANGE;
	}
	return NOPFS_OK;
}

uint32_t nopfs_sampler_epoch_seed(const struct nopfs_sampler *sampler, uint64_t epoch)
{
	/*
	 * torch reinterprets a negative seed as its 64-bit two's complement,
	 * so in both cases the low 32 bits of seed + epoch are the seed.
	 */
	if (sampler->same_order)
		return (uint32_t)sampler->seed;
	return (uint32_t)(sampler->seed + sampler->first_epoch + epoch);
}

uint64_t nopfs_sampler_per_rank(const struct nopfs_sampler *sampler)
{
	uint64_t count = sampler->count;
	uint64_t world = sampler->world_size;

	if (sampler->drop_last && count % world != 0)
		return (count - world + world - 1) / world; /* ceil((F - W) / W) */
	return (count + world - 1) / world;
}

uint64_t nopfs_sampler_total_size(const struct nopfs_sampler *sampler)
{
	return nopfs_sampler_per_rank(sampler) * sampler->world_size;
}

void nopfs_sampler_permutation(const struct nopfs_sampler *sampler, uint64_t epoch, uint32_t *perm)
{
	uint32_t n = (uint32_t)sampler->count;
	uint32_t target[SHUFFLE_BLOCK];
	struct nopfs_mt19937 mt;

	for (uint32_t i = 0; i < n; i++)
		perm[i] = i;
	if (!sampler->shuffle || n < 2)
		return;

	nopfs_mt19937_seed(&mt, nopfs_sampler_epoch_seed(sampler, epoch));
	for (uint32_t base = 0; base < n - 1; base += SHUFFLE_BLOCK) {
		uint32_t end = n - 1 - base < SHUFFLE_BLOCK ? n - 1 : base + SHUFFLE_BLOCK;

		/*
		 * The draws do not depend on the array, so a block of targets
		 * is drawn first and prefetched: the swaps then hit the cache.
		 */
		for (uint32_t i = base; i < end; i++) {
			target[i - base] = i + nopfs_mt19937_next(&mt) % (n - i);
			__builtin_prefetch(&perm[target[i - base]], 1, 0);
		}
		for (uint32_t i = base; i < end; i++) {
			uint32_t j = target[i - base];
			uint32_t saved = perm[i];

			perm[i] = perm[j];
			perm[j] = saved;
		}
	}
}

void nopfs_sampler_rank_stream(const struct nopfs_sampler *sampler, const uint32_t *perm,
                               uint32_t rank, uint32_t *out)
{
	uint64_t per_rank = nopfs_sampler_per_rank(sampler);

	for (uint64_t i = 0; i < per_rank; i++)
		out[i] = nopfs_sampler_at(sampler, perm, rank + i * sampler->world_size);
}
