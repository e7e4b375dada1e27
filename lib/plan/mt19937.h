/*
 * MT19937, the 32-bit Mersenne Twister, exactly as torch's CPU generator
 * (at::mt19937) runs it: seeded with the low 32 bits of the 64-bit seed by
 * the standard init_genrand recurrence, standard tempering.
 */
#ifndef NOPFS_MT19937_H
#define NOPFS_MT19937_H

#include <stdint.h>

#define NOPFS_MT19937_STATE 624

struct nopfs_mt19937 {
	uint32_t state[NOPFS_MT19937_STATE];
	unsigned int next; /* index of the next state word to temper */
};

/* Seed @mt with @seed (only its low 32 bits matter, as in torch). */
void nopfs_mt19937_seed(struct nopfs_mt19937 *mt, uint32_t seed);

/* The next 32-bit output. */
uint32_t nopfs_mt19937_next(struct nopfs_mt19937 *mt);

#endif
