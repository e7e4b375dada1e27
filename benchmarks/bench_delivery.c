/*
 * Local delivery of staged samples, measured in one run:
 *  - C API: nopfs_client_get + reading every byte + release, versus memcpy of
 *    the same bytes out of memory and reading them;
 *  - interposer: open + read + close of dataset paths (served from staged
 *    copies), versus open + read + close of plain files on tmpfs.
 * Run under LD_PRELOAD of libnopfs_preload.so with an agent serving ranks 0
 * and 1 of a two-rank job over --data (see bench_delivery.sh): rank 0 reads
 * through the C API (its samples staged into the rank's ring), rank 1 through
 * the interposer (staged files). Samples are consumed in each rank's stream
 * order; before each batch the benchmark waits (untimed) until the agent has
 * staged it, so what is timed is delivery, not the PFS. Each path is timed
 * in ROUNDS rounds of consecutive samples, the baseline right after the path
 * on the same sizes (in alternating order), and the ratio is the median of
 * the rounds' ratios with its spread; the interposer's first open (its set-up,
 * once per process) is not timed.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "task/nopfs.h"
#include "task/ring.h"
#include "task/runtime.h"
#include "plan/sampler.h"
#include "common/clock.h"

#define ROUNDS 9

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of @count ratios (sorted in place); *@low and *@high their extremes. */
static double median(double *values, int count, double *low, double *high)
{
	qsort(values, (size_t)count, sizeof(values[0]), compare_doubles);
	*low = values[0];
	*high = values[count - 1];
	return count % 2 ? values[count / 2] : (values[count / 2 - 1] + values[count / 2]) / 2;
}

/* Read every byte (what a consumer does); the sum keeps it from being optimized out. */
static uint64_t touch(const void *data, uint64_t size)
{
	const uint64_t *words = data;
	uint64_t sum = 0;

	for (uint64_t i = 0; i < size / 8; i++)
		sum += words[i];
	return sum;
}

/* Wait (untimed) until rank 1's next @count samples are staged as files, up to 30 s. */
static int wait_files(const struct nopfs_catalog *catalog, const char *stage_dir,
                      const uint32_t *stream, uint64_t count)
{
	char path[8192], relative[4096], name[300];
	double deadline = nopfs_clock_seconds() + 30;

	for (uint64_t i = 0; i < count; i++) {
		struct stat st;

		if (nopfs_catalog_path(catalog, stream[i], relative, sizeof(relative)) !=
		            NOPFS_OK ||
		    !nopfs_stage_name_for_path(1, relative, name, sizeof(name)))
			nopfs_stage_name_for_index(1, stream[i], name, sizeof(name));
		snprintf(path, sizeof(path), "%s/%s", stage_dir, name);
		while (stat(path, &st) != 0) {
			if (nopfs_clock_seconds() > deadline) {
				fprintf(stderr, "bench_delivery: %s not staged within 30 s\n",
				        path);
				return -1;
			}
			usleep(1000);
		}
	}
	return 0;
}

/* Wait (untimed) until rank 0's ring holds its next @count samples, up to 30 s. */
static int wait_ring(const char *stage_dir, const uint32_t *stream, uint64_t count)
{
	char path[4096];
	double deadline = nopfs_clock_seconds() + 30;
	struct stat st;
	void *ring;
	int fd;

	snprintf(path, sizeof(path), "%s/.ring0", stage_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0)
		return -1;
	ring = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (ring == MAP_FAILED)
		return -1;
	for (uint64_t i = 0; i < count; i++) {
		const struct nopfs_ring_header *header = ring;
		bool ready = false;

		while (!ready) {
			for (uint32_t s = 0; s < header->slots && !ready; s++) {
				struct nopfs_ring_slot *slot = &nopfs_ring_slots(ring)[s];

				ready = atomic_load(&slot->state) == NOPFS_RING_READY &&
				        slot->sample == stream[i];
			}
			if (!ready && nopfs_clock_seconds() > deadline) {
				fprintf(stderr,
				        "bench_delivery: sample %" PRIu32 " not in the ring\n",
				        stream[i]);
				munmap(ring, (size_t)st.st_size);
				return -1;
			}
			if (!ready)
				usleep(1000);
		}
	}
	munmap(ring, (size_t)st.st_size);
	return 0;
}

static int read_file(const char *path, void *buffer, uint64_t size, uint64_t *sum)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got;

	if (fd < 0)
		return -1;
	got = read(fd, buffer, size);
	close(fd);
	if (got != (ssize_t)size)
		return -1;
	*sum += touch(buffer, size);
	return 0;
}

/* Open, read and close dataset sample @k (through the interposer). */
static int read_dataset_file(const char *data, const struct nopfs_catalog *catalog,
                             nopfs_sample_id k, void *buffer, uint64_t *sum)
{
	char path[8192];
	size_t used = (size_t)snprintf(path, sizeof(path), "%s/", data);

	if (nopfs_catalog_path(catalog, k, path + used, sizeof(path) - used) != NOPFS_OK ||
	    read_file(path, buffer, nopfs_catalog_size(catalog, k), sum) != 0) {
		fprintf(stderr, "bench_delivery: reading %s failed\n", path);
		return -1;
	}
	return 0;
}

/* The name of plain file @i in @dir. */
static void plain_file(char *out, size_t size, const char *dir, uint64_t i)
{
	snprintf(out, size, "%s/%" PRIu64, dir, i);
}

/* A round's samples (@n of @samples), read one way or another. */
struct batch {
	const struct nopfs_catalog *catalog;
	const uint32_t *samples;
	uint64_t n;
	struct nopfs_client *client;
	const char *arena, *data, *plain_dir;
	void *buffer;
	uint64_t sum;
};

/* Each way of reading a round: 0, or -1 on failure. */
static int read_api(struct batch *batch)
{
	for (uint64_t i = 0; i < batch->n; i++) {
		struct nopfs_sample sample;

		if (nopfs_client_get(batch->client, batch->samples[i], &sample) != NOPFS_OK)
			return -1;
		batch->sum += touch(sample.data, sample.size);
		nopfs_client_release(batch->client, &sample);
	}
	return 0;
}

/* The baseline copies each sample's bytes from its own place in the arena. */
static int read_memory(struct batch *batch)
{
	for (uint64_t i = 0, at = 0; i < batch->n; i++) {
		uint64_t size = nopfs_catalog_size(batch->catalog, batch->samples[i]);

		memcpy(batch->buffer, batch->arena + at, size);
		batch->sum += touch(batch->buffer, size);
		at += size;
	}
	return 0;
}

static int read_interposed(struct batch *batch)
{
	for (uint64_t i = 0; i < batch->n; i++)
		if (read_dataset_file(batch->data, batch->catalog, batch->samples[i], batch->buffer,
		                      &batch->sum) != 0)
			return -1;
	return 0;
}

static int read_tmpfs(struct batch *batch)
{
	char copy[4096];

	for (uint64_t i = 0; i < batch->n; i++) {
		plain_file(copy, sizeof(copy), batch->plain_dir, i);
		if (read_file(copy, batch->buffer,
		              nopfs_catalog_size(batch->catalog, batch->samples[i]),
		              &batch->sum) != 0)
			return -1;
	}
	return 0;
}

/* Seconds @reader took, or -1 on failure. */
static double timed(int (*reader)(struct batch *), struct batch *batch)
{
	double start = nopfs_clock_seconds();

	return reader(batch) == 0 ? nopfs_clock_seconds() - start : -1;
}

/*
 * Round @r of @path against its @baseline, in alternating order: their
 * seconds in *@path_seconds and *@baseline_seconds; -1 on failure.
 */
static int time_round(int r, int (*path)(struct batch *), int (*baseline)(struct batch *),
                      struct batch *batch, double *path_seconds, double *baseline_seconds)
{
	if (r % 2 == 0) {
		*path_seconds = timed(path, batch);
		*baseline_seconds = timed(baseline, batch);
	} else {
		*baseline_seconds = timed(baseline, batch);
		*path_seconds = timed(path, batch);
	}
	return *path_seconds < 0 || *baseline_seconds < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	const char *data = argc > 1 ? argv[1] : NULL;
	const char *stage_dir = getenv("NOPFS_STAGE_DIR");
	const char *tmp_dir = argc > 2 ? argv[2] : "/dev/shm";
	uint32_t window = argc > 3 ? (uint32_t)atoi(argv[3]) : 256;
	struct nopfs_catalog_options options = { .format = NOPFS_INDEX_IMAGEFOLDER, .root = data };
	struct nopfs_catalog *catalog;
	struct nopfs_client *client;
	struct nopfs_sampler sampler = { .world_size = 2, .seed = 42, .shuffle = true };
	uint32_t *perm, *stream;
	uint64_t count, max = 0;
	struct batch batch;
	double api_time = 0, memcpy_time = 0, interposer_time = 0, tmpfs_time = 0;
	double api_ratios[ROUNDS], interposer_ratios[ROUNDS], ratio, low, high;
	char copy[4096], plain_dir[2048];
	void *buffer, *source;
	char *arena;

	if (!data || !stage_dir) {
		fprintf(stderr, "usage: NOPFS_STAGE_DIR=... %s DATASET [TMPDIR] [WINDOW]\n",
		        argv[0]);
		return 2;
	}
	if (nopfs_catalog_build(&options, &catalog) != NOPFS_OK)
		return 1;
	count = nopfs_catalog_count(catalog);
	sampler.count = count;
	for (uint64_t k = 0; k < count; k++)
		if (nopfs_catalog_size(catalog, k) > max)
			max = nopfs_catalog_size(catalog, k);
	perm = malloc(count * sizeof(*perm));
	stream = malloc(count * sizeof(*stream));
	buffer = malloc(max);
	source = malloc(max);
	arena = malloc(max * window);
	if (!perm || !stream || !buffer || !source || !arena ||
	    nopfs_client_connect(NULL, 0, &client) != NOPFS_OK) {
		fprintf(stderr, "bench_delivery: cannot set up (is the agent running?)\n");
		return 1;
	}
	memset(source, 7, max);
	/* the baseline's files in a directory of our own (@tmp_dir is everyone's) */
	snprintf(plain_dir, sizeof(plain_dir), "%s/nopfs-bench.XXXXXX", tmp_dir);
	if (!mkdtemp(plain_dir)) {
		fprintf(stderr, "bench_delivery: cannot make a directory in %s: %s\n", tmp_dir,
		        strerror(errno));
		return 1;
	}
	batch = (struct batch){ .catalog = catalog,
		                .client = client,
		                .arena = arena,
		                .data = data,
		                .plain_dir = plain_dir,
		                .buffer = buffer };

	/* Rank 0, epoch 0, through the API, against memcpy of the same sizes. */
	nopfs_sampler_permutation(&sampler, 0, perm);
	nopfs_sampler_rank_stream(&sampler, perm, 0, stream);
	count = nopfs_sampler_per_rank(&sampler);
	if (count < 1 + ROUNDS || count / ROUNDS + 1 > window) {
		fprintf(stderr,
		        "bench_delivery: %" PRIu64 " samples per rank do not make %d rounds "
		        "within the staging window of %" PRIu32 "\n",
		        count, ROUNDS, window);
		return 1;
	}
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t base = count * (uint64_t)r / ROUNDS;
		double api, copied;

		batch.samples = stream + base;
		batch.n = count * (uint64_t)(r + 1) / ROUNDS - base;
		if (wait_ring(stage_dir, batch.samples, batch.n) != 0)
			return 1;
		for (uint64_t i = 0, at = 0; i < batch.n; i++) {
			memset(arena + at, (int)i, nopfs_catalog_size(catalog, batch.samples[i]));
			at += nopfs_catalog_size(catalog, batch.samples[i]);
		}
		if (time_round(r, read_api, read_memory, &batch, &api, &copied) != 0)
			return 1;
		api_time += api;
		memcpy_time += copied;
		api_ratios[r] = copied / api;
	}

	/*
	 * Rank 1, epoch 0, through the interposer, against plain files on tmpfs.
	 * Its first sample is read untimed: the interposer sets itself up then.
	 */
	nopfs_sampler_rank_stream(&sampler, perm, 1, stream);
	if (wait_files(catalog, stage_dir, stream, 1) != 0 ||
	    read_dataset_file(data, catalog, stream[0], buffer, &batch.sum) != 0)
		return 1;
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t base = 1 + (count - 1) * (uint64_t)r / ROUNDS;
		double interposer, plain;

		batch.samples = stream + base;
		batch.n = 1 + (count - 1) * (uint64_t)(r + 1) / ROUNDS - base;
		if (wait_files(catalog, stage_dir, batch.samples, batch.n) != 0)
			return 1;
		/* The same sizes as plain tmpfs files (written untimed). */
		for (uint64_t i = 0; i < batch.n; i++) {
			int fd;

			plain_file(copy, sizeof(copy), plain_dir, i);
			fd = open(copy, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
			          0600);
			if (fd < 0 ||
			    write(fd, source, nopfs_catalog_size(catalog, batch.samples[i])) < 0)
				return 1;
			close(fd);
		}
		if (time_round(r, read_interposed, read_tmpfs, &batch, &interposer, &plain) != 0)
			return 1;
		interposer_time += interposer;
		tmpfs_time += plain;
		interposer_ratios[r] = plain / interposer;
	}
	for (uint64_t i = 0; i < count; i++) {
		plain_file(copy, sizeof(copy), plain_dir, i);
		unlink(copy);
	}
	rmdir(plain_dir);

	printf("delivery of %" PRIu64 " samples per path (mean %.1f KiB) in %d interleaved rounds, "
	       "checksum %" PRIx64 "; ratios: median of the rounds (lowest-highest)\n",
	       count,
	       (double)nopfs_catalog_total_bytes(catalog) / (double)nopfs_catalog_count(catalog) /
	               1024,
	       ROUNDS, batch.sum);
	ratio = median(api_ratios, ROUNDS, &low, &high);
	printf("  C API get+read+release   %8.2f us/sample   memcpy+read %8.2f us/sample   "
	       "ratio %.2f (%.2f-%.2f) (target >= 0.8)\n",
	       api_time / (double)count * 1e6, memcpy_time / (double)count * 1e6, ratio, low, high);
	ratio = median(interposer_ratios, ROUNDS, &low, &high);
	printf("  interposer open+read+close %6.2f us/sample   tmpfs       %8.2f us/sample   "
	       "ratio %.2f (%.2f-%.2f) (target >= 0.8)\n",
	       interposer_time / (double)(count - 1) * 1e6, tmpfs_time / (double)(count - 1) * 1e6,
	       ratio, low, high);
	nopfs_client_disconnect(client);
	nopfs_catalog_destroy(catalog);
	free(perm);
	free(stream);
	free(buffer);
	free(source);
	free(arena);
	return 0;
}
