/* CRC32C by the SSE4.2 instruction or by table. */
#include "config.h"

#include <pthread.h>
#include <string.h>

#include "crc32c.h"

/* The reflected Castagnoli polynomial. */
#define POLY 0x82f63b78u

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
		table[i] = c;
	}
}

uint32_t nopfs_crc32c_table(const void *data, size_t size)
{
	const uint8_t *p = data;
	uint32_t crc = ~0u;

	pthread_once(&table_once, make_table);
	while (size--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(const void *data, size_t size)
{
	const uint8_t *p = data;
	uint64_t crc = ~0u;

	while (size >= 8) {
		uint64_t word;

		memcpy(&word, p, 8);
		crc = __builtin_ia32_crc32di(crc, word);
		p += 8;
		size -= 8;
	}
	while (size--)
		crc = __builtin_ia32_crc32qi((uint32_t)crc, *p++);
	return ~(uint32_t)crc;
}

uint32_t nopfs_crc32c(const void *data, size_t size)
{
	/* libgcc reads the CPU's features before main(): a load of a global here */
	return __builtin_cpu_supports("sse4.2") ? crc32c_sse42(data, size)
	                                        : nopfs_crc32c_table(data, size);
}
#else
uint32_t nopfs_crc32c(const void *data, size_t size)
{
	return nopfs_crc32c_table(data, size);
}
#endif
