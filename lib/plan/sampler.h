/*
 * The access stream of torch.utils.data.DistributedSampler, bit-exact.
 *
 * For epoch e the permutation is torch.randperm(F, generator=g) with
 * g.manual_seed(seed + e): MT19937 seeded with the low 32 bits of seed + e
 * (torch 1.13 reinterprets a negative seed as its two's complement),
 * then the forward Fisher-Yates z = random() % (F - i), swap(p[i], p[i + z]).
 * Without drop_last the permutation is padded to a multiple of W by repeating
 * its head (position p >= F holds perm[p mod F]); with drop_last it is cut to
 * W * floor(F / W). Rank R takes positions R, R + W, R + 2W, ...
 * With shuffle=False the permutation is the identity; a script that never
 * calls set_epoch() reads every epoch in epoch 0's order (same_order).
 */
#ifndef NOPFS_SAMPLER_H
#define NOPFS_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"

struct nopfs_sampler {
	uint64_t count;      /* F: samples in the dataset, 1 .. 2^32 - 1 */
	uint32_t world_size; /* W: ranks of the training step, >= 1 */
	uint64_t seed;       /* seed bits; see seed_negative */
	bool seed_negative;  /* seed is a negative int64 (two's complement) */
	bool drop_last;      /* DistributedSampler(drop_last=...) */
	bool shuffle;        /* DistributedSampler(shuffle=...) */
	/*
	 * The script never calls set_epoch(): every epoch is in the order of
	 * the sampler's epoch 0 (seed + 0), whatever first_epoch says.
	 */
	bool same_order;
	/*
	 * A resumed job: the script's epoch that is epoch 0 here (its first
	 * set_epoch()); epoch e here is the script's first_epoch + e.
	 */
	uint32_t first_epoch;
	/*
	 * A resume within an epoch: each rank's first index in its stream of
	 * epoch 0 here (it skips the indices before it, as a restored
	 * StatefulDataLoader does); later epochs are whole. Below per_rank.
	 */
	uint64_t first_index;
};

/* Check the fields (count, world size); logs the culprit on error. */
nopfs_status nopfs_sampler_validate(const struct nopfs_sampler *sampler);

/*
 * Parse a seed as Python would accept it for torch.Generator.manual_seed:
 * a decimal integer in [-2^63, 2^64 - 1]. Sets seed and seed_negative.
 */
nopfs_status nopfs_sampler_parse_seed(const char *text, struct nopfs_sampler *sampler);

/*
 * Check that seed + epoch stays within torch's accepted range for every epoch
 * below @epochs (torch raises otherwise).
 */
nopfs_status nopfs_sampler_check_epochs(const struct nopfs_sampler *sampler, uint64_t epochs);

/*
 * The 32 bits that seed MT19937 in epoch @epoch (the script's first_epoch +
 * @epoch; its epoch 0 with same_order).
 */
uint32_t nopfs_sampler_epoch_seed(const struct nopfs_sampler *sampler, uint64_t epoch);

/* Samples each rank reads per epoch (DistributedSampler.num_samples). */
uint64_t nopfs_sampler_per_rank(const struct nopfs_sampler *sampler);

/* Positions per epoch over all ranks (DistributedSampler.total_size). */
uint64_t nopfs_sampler_total_size(const struct nopfs_sampler *sampler);

/*
 * Fill @perm (count entries) with the permutation of epoch @epoch. Sample
 * indices are 32-bit, which is why count must be below 2^32.
 */
void nopfs_sampler_permutation(const struct nopfs_sampler *sampler, uint64_t epoch, uint32_t *perm);

/*
 * The sample at stream position @position (< total_size) of a permutation:
 * perm[position mod count] (padding repeats the head).
 */
static inline uint32_t nopfs_sampler_at(const struct nopfs_sampler *sampler, const uint32_t *perm,
                                        uint64_t position)
{
	return perm[position < sampler->count ? position : position % sampler->count];
}

/* Whether every epoch is in one order (shuffle=False, or no set_epoch()). */
static inline bool nopfs_sampler_one_order(const struct nopfs_sampler *sampler)
{
	return !sampler->shuffle || sampler->same_order;
}

/*
 * The first stream position read in @epoch: first_index x W in epoch 0 (the
 * positions before it belong to the part of the epoch already done), else 0.
 */
static inline uint64_t nopfs_sampler_first_position(const struct nopfs_sampler *sampler,
                                                    uint64_t epoch)
{
	return epoch == 0 ? sampler->first_index * sampler->world_size : 0;
}

/*
 * Fill @out (per_rank entries) with rank @rank's indices in epoch @epoch,
 * given that epoch's permutation @perm.
 */
void nopfs_sampler_rank_stream(const struct nopfs_sampler *sampler, const uint32_t *perm,
                               uint32_t rank, uint32_t *out);

#endif
