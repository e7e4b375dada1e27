/*
 * What --verify costs per copy: CRC32C (the instruction, and the table the
 * code falls back to) against memcpy of the same bytes, for an ImageNet-like
 * sample (110 KB) and a CosmoFlow-like one (16 MB). Each figure is the
 * median of 7 runs of about 0.2 s with the lowest and highest; the ratio
 * "verify / copy" is the added time of a check against one copy's time,
 * both measured in the same run.
 * Usage: bench_verify [--runs N]
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/crc32c.h"

#define RUNS_MAX 31

static volatile uint32_t sink;

enum way { COPY, CRC, CRC_TABLE };

/* GB/s of one run: @way over @size bytes, repeated for about 0.2 s. */
static double rate(enum way way, const uint8_t *source, uint8_t *destination, size_t size)
{
	uint64_t bytes = 0, start = nopfs_clock_now_ns(), elapsed;

	do {
		for (int i = 0; i < 8; i++) {
			if (way == COPY)
				memcpy(destination, source, size);
			else if (way == CRC)
				sink ^= nopfs_crc32c(source, size);
			else
				sink ^= nopfs_crc32c_table(source, size);
			bytes += size;
		}
		elapsed = nopfs_clock_now_ns() - start;
	} while (elapsed < 200000000u);
	return (double)bytes / (double)elapsed;
}

static int compare(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 110 * 1000, 16 * 1000 * 1000 };
	static const char *const names[] = { "memcpy", "crc32c", "crc32c table" };
	int runs = 7;

	if (argc == 3 && strcmp(argv[1], "--runs") == 0)
		runs = atoi(argv[2]);
	if (runs < 1 || runs > RUNS_MAX) {
		fprintf(stderr, "bench_verify: --runs N, N from 1 to %d\n", RUNS_MAX);
		return 2;
	}
	printf("%-12s %-13s %8s %8s %8s  (GB/s, median of %d, low, high)\n", "sample", "way",
	       "median", "low", "high", runs);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint8_t *source = malloc(sizes[s]), *destination = malloc(sizes[s]);
		double median[3];

		if (!source || !destination) {
			fprintf(stderr, "bench_verify: no memory for %zu bytes\n", sizes[s]);
			return 1;
		}
		for (size_t i = 0; i < sizes[s]; i++)
			source[i] = (uint8_t)(i * 2654435761u >> 13);
		memset(destination, 0, sizes[s]);
		for (int w = COPY; w <= CRC_TABLE; w++) {
			double r[RUNS_MAX];

			for (int k = 0; k < runs; k++)
				r[k] = rate((enum way)w, source, destination, sizes[s]);
			qsort(r, (size_t)runs, sizeof(r[0]), compare);
			median[w] = r[runs / 2];
			printf("%-12s %-13s %8.2f %8.2f %8.2f\n", s == 0 ? "110 KB" : "16 MB",
			       names[w], median[w], r[0], r[runs - 1]);
		}
		printf("%-12s verify / copy: %.2f (the check adds that much of a copy's time)\n",
		       s == 0 ? "110 KB" : "16 MB", median[COPY] / median[CRC]);
		free(source);
		free(destination);
	}
	return 0;
}
