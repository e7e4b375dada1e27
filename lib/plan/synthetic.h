/*
 * Synthetic datasets: sample sizes drawn from a normal distribution with a
 * pinned generator (MT19937), so every node and every run draws the same.
 */
#ifndef NOPFS_SYNTHETIC_H
#define NOPFS_SYNTHETIC_H

#include <stdint.h>

#include "common/status.h"

struct nopfs_synthetic {
	uint64_t count;  /* samples */
	uint64_t mean;   /* bytes */
	uint64_t stddev; /* bytes; 0: every sample has the mean size */
	uint32_t seed;
};

/*
 * Fill @sizes (count entries) with draws from N(mean, stddev^2), Box-Muller
 * on MT19937. Draws below 1 byte are drawn again (a truncated normal), so the
 * realized mean exceeds @mean when stddev is large against it.
 */
void nopfs_synthetic_sizes(const struct nopfs_synthetic *spec, uint64_t *sizes);

/*
 * Parse "COUNT:MEAN[:STDDEV]" (MEAN and STDDEV as sizes, e.g. 1281167:110K:20K).
 * Logs a message naming @what on error.
 */
nopfs_status nopfs_synthetic_parse(const char *text, const char *what,
                                   struct nopfs_synthetic *spec);

#endif
