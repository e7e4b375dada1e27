/* MT19937 (Matsumoto & Nishimura 1998), torch-compatible seeding. */
#include "config.h"

#include "mt19937.h"

#define MT_M        397
#define MT_MATRIX_A 0x9908b0dfU
#define MT_UPPER    0x80000000U
#define MT_LOWER    0x7fffffffU

void nopfs_mt19937_seed(struct nopfs_mt19937 *mt, uint32_t seed)
{
	mt->state[0] = seed;
	for (unsigned int i = 1; i < NOPFS_MT19937_STATE; i++) {
		uint32_t prev = mt->state[i - 1];

		mt->state[i] = 1812433253U * (prev ^ (prev >> 30)) + i;
	}
	mt->next = NOPFS_MT19937_STATE;
}

static inline uint32_t twist(uint32_t upper, uint32_t lower, uint32_t far)
{
	uint32_t y = (upper & MT_UPPER) | (lower & MT_LOWER);

	return far ^ (y >> 1) ^ ((y & 1U) ? MT_MATRIX_A : 0U);
}

static void regenerate(struct nopfs_mt19937 *mt)
{
	uint32_t *s = mt->state;
	unsigned int i;

	for (i = 0; i < NOPFS_MT19937_STATE - MT_M; i++)
		s[i] = twist(s[i], s[i + 1], s[i + MT_M]);
	for (; i < NOPFS_MT19937_STATE - 1; i++)
		s[i] = twist(s[i], s[i + 1], s[i + MT_M - NOPFS_MT19937_STATE]);
	s[i] = twist(s[i], s[0], s[MT_M - 1]);
	mt->next = 0;
}

uint32_t nopfs_mt19937_next(struct nopfs_mt19937 *mt)
{
	uint32_t y;

	if (mt->next >= NOPFS_MT19937_STATE)
		regenerate(mt);
	y = mt->state[mt->next++];
	y ^= y >> 11;
	y ^= (y << 7) & 0x9d2c5680U;
	y ^= (y << 15) & 0xefc60000U;
	y ^= y >> 18;
	return y;
}
