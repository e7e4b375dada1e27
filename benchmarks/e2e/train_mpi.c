/*
 * train_mpi: the training emulation as a C/MPI program that knows nothing of
 * nopfs, to show that a job which is not Python benefits as well.
 *
 * Every rank reads its samples in the order of PyTorch's DistributedSampler
 * (shuffle=True, the seed, set_epoch(e)) over the torchvision ImageFolder
 * order of --data (files ending in .JPEG) or the order of an --index list
 * file, in batches of --batch-size. Per batch: open(2), read(2) to the end and
 * close(2) each sample's file by its full path (plain POSIX calls, so that
 * the LD_PRELOAD interposer serves them), then --compute seconds of sleep
 * (the forward and backward passes) with a non-blocking MPI_Iallreduce of a
 * float buffer of --allreduce bytes (the gradients; averaged as DDP does)
 * overlapping the backward pass, as DDP and Horovod overlap them.
 * --synthetic takes the same samples and sizes from memory instead (the
 * no-I/O bound). --out writes one CSV row per batch with wall-clock times;
 * each rank ends with one line on stderr. The CSV, the end line and its
 * checksum are those of benchmarks/e2e/train.py, the PyTorch emulation: for
 * the same rank, world size, seed and epochs both print the same samples,
 * bytes and checksum.
 *
 * Options are parsed in train_mpi_options.c. Rank 0 builds the catalog and
 * broadcasts it (the other ranks never scan the dataset). Every rank knows
 * of a bad option (exit status 2) or a dataset rank 0 cannot catalog (1), and
 * only rank 0 says why; a failure on one rank after that (a sample that
 * cannot be read) is logged by that rank, which aborts the job (MPI_Abort).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "common/log.h"
#include "plan/sampler.h"
#include "train_mpi.h"
#include "common/clock.h"

/* One rank's training state. */
struct trainer {
	const struct train_options *options;
	int rank;
	int world;
	struct nopfs_catalog *catalog;
	char *root;         /* the dataset root, no trailing slash */
	char *path;         /* the full path of the sample being read */
	size_t path_length; /* bytes at path */
	char *buffer;       /* where samples are read to */
	size_t capacity;    /* bytes at buffer */
	char *pattern;      /* the bytes of synthetic samples: 0, 1, .. 255, 0, .. */
	float *gradients;
	int gradient_count;
	uint32_t *permutation;
	uint32_t *stream;
	FILE *csv;
	FILE *trace;
	uint64_t bytes_read;
	uint64_t samples_read;
	uint64_t checksum; /* sum of sample_checksum() over the samples, mod 2^64 */
};

static int log_rank;
static bool log_rank_zero_only; /* while every rank reports the same error */

static void log_sink(nopfs_log_level level, const char *message, void *arg)
{
	static const char *const prefix[] = { "error: ", "warning: ", "", "debug: " };

	if (log_rank_zero_only && log_rank != 0)
		return;
	fprintf(stderr, PROGRAM ": rank %d: %s%s\n", log_rank, prefix[level], message);
}

/*
 * torchvision keeps only names ending in ".JPEG"; the catalog's extension
 * match ignores case, so refuse a sample that matches only that way rather
 * than read something torch would not.
 */
static nopfs_status check_jpeg_names(const struct nopfs_catalog *catalog)
{
	size_t suffix = strlen(JPEG_SUFFIX);
	char path[PATH_MAX];

	for (uint64_t i = 0; i < nopfs_catalog_count(catalog); i++) {
		size_t length;

		if (nopfs_catalog_path(catalog, i, path, sizeof(path)) != NOPFS_OK) {
			nopfs_error("sample %" PRIu64 ": path longer than %d bytes", i, PATH_MAX);
			return NOPFS_ERR_RANGE;
		}
		length = strlen(path);
		if (length < suffix || strcmp(path + length - suffix, JPEG_SUFFIX)) {
			nopfs_error("'%s/%s' does not end in " JPEG_SUFFIX
			            " (case matters to torchvision's is_valid_file): rename it",
			            nopfs_catalog_root(catalog), path);
			return NOPFS_ERR_UNSUPPORTED;
		}
	}
	return NOPFS_OK;
}

/* Rank 0: scan the dataset and check the sampler's fields. */
static nopfs_status build_catalog(struct trainer *t, const char *root, struct nopfs_catalog **out)
{
	const struct train_options *o = t->options;
	struct nopfs_catalog_options catalog_options = {
		.format = o->index ? NOPFS_INDEX_LIST : NOPFS_INDEX_IMAGEFOLDER,
		.root = root,
		.list_path = o->index,
		.extensions = JPEG_SUFFIX,
	};
	struct nopfs_sampler sampler = o->sampler;
	struct nopfs_catalog *catalog;
	nopfs_status status;

	status = nopfs_catalog_build(&catalog_options, &catalog);
	if (status)
		return status;
	if (!o->index)
		status = check_jpeg_names(catalog);
	if (!status) {
		sampler.count = nopfs_catalog_count(catalog);
		sampler.world_size = (uint32_t)t->world;
		status = nopfs_sampler_validate(&sampler);
	}
	if (!status)
		status = nopfs_sampler_check_epochs(&sampler, o->epochs);
	if (status) {
		nopfs_catalog_destroy(catalog);
		return status;
	}
	*out = catalog;
	return NOPFS_OK;
}

/* MPI_Bcast of @length bytes, in pieces an int can count. */
static void broadcast_bytes(void *buffer, uint64_t length)
{
	char *bytes = buffer;

	while (length) {
		int piece = length > INT_MAX ? INT_MAX : (int)length;

		MPI_Bcast(bytes, piece, MPI_BYTE, 0, MPI_COMM_WORLD);
		bytes += piece;
		length -= (uint64_t)piece;
	}
}

/*
 * Rank 0 builds the catalog and broadcasts it serialized. A length of 0 tells
 * the other ranks that it failed (rank 0 has said why): then *everyone is
 * set on every rank, and the job can end without an abort.
 */
static nopfs_status share_catalog(struct trainer *t, bool *everyone)
{
	void *buffer = NULL;
	size_t size = 0;
	uint64_t length = 0;
	nopfs_status status = NOPFS_OK;

	if (t->rank == 0) {
		status = build_catalog(t, t->root, &t->catalog);
		if (!status)
			status = nopfs_catalog_serialize(t->catalog, &buffer, &size);
		length = status ? 0 : size;
	}
	MPI_Bcast(&length, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	*everyone = !length;
	if (!length)
		return status ? status : NOPFS_ERR_INVALID;
	if (t->rank != 0) {
		buffer = malloc(length);
		if (!buffer) {
			nopfs_error("out of memory for the catalog (%" PRIu64 " bytes)", length);
			return NOPFS_ERR_NOMEM;
		}
	}
	broadcast_bytes(buffer, length);
	if (t->rank != 0)
		status = nopfs_catalog_deserialize(buffer, length, &t->catalog);
	free(buffer);
	return status;
}

static FILE *open_output(const char *option, const char *pattern, int rank)
{
	char *path = train_expand_rank(pattern, rank);
	FILE *file;

	if (!path) {
		nopfs_error("out of memory");
		return NULL;
	}
	file = fopen(path, "w");
	if (!file)
		nopfs_error("--%s: cannot create '%s': %m", option, path);
	free(path);
	return file;
}

/* Buffers, the sampler's arrays and the output files. */
static nopfs_status trainer_setup(struct trainer *t)
{
	const struct train_options *o = t->options;
	const uint64_t *sizes = nopfs_catalog_sizes(t->catalog);
	uint64_t count = nopfs_catalog_count(t->catalog), largest = 0;

	for (uint64_t i = 0; i < count; i++)
		largest = sizes[i] > largest ? sizes[i] : largest;
	t->capacity = (size_t)largest + 4096;
	t->path_length = strlen(t->root) + PATH_MAX + 2;
	t->gradient_count = (int)(o->allreduce_bytes / sizeof(float));
	t->buffer = malloc(t->capacity);
	t->path = malloc(t->path_length);
	t->pattern = o->synthetic ? malloc(t->capacity) : NULL;
	t->gradients = calloc((size_t)t->gradient_count + 1, sizeof(float));
	t->permutation = malloc(count * sizeof(*t->permutation));
	t->stream = malloc(count * sizeof(*t->stream));
	if (!t->buffer || !t->path || (o->synthetic && !t->pattern) || !t->gradients ||
	    !t->permutation || !t->stream) {
		nopfs_error("out of memory (samples up to %" PRIu64 " bytes, %" PRIu64 " samples)",
		            largest, count);
		return NOPFS_ERR_NOMEM;
	}
	if (t->pattern) {
		for (size_t i = 0; i < t->capacity; i++)
			t->pattern[i] = (char)(i & 0xff);
	}
	if (o->out) {
		t->csv = open_output("out", o->out, t->rank);
		if (!t->csv)
			return NOPFS_ERR_IO;
		fputs("rank,epoch,batch,samples,bytes,t_request,t_ready,t_done\n", t->csv);
	}
	if (o->trace) {
		t->trace = open_output("trace", o->trace, t->rank);
		if (!t->trace)
			return NOPFS_ERR_IO;
	}
	return NOPFS_OK;
}

/* Read the whole file of sample @index: open(2), read(2) to the end, close(2). */
static nopfs_status read_sample(struct trainer *t, uint32_t index, uint64_t *bytes)
{
	size_t used = (size_t)snprintf(t->path, t->path_length, "%s/", t->root);
	uint64_t total = 0;
	int fd;

	if (nopfs_catalog_path(t->catalog, index, t->path + used, t->path_length - used)) {
		nopfs_error("sample %" PRIu32 ": path too long", index);
		return NOPFS_ERR_RANGE;
	}
	fd = open(t->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		nopfs_error("cannot open '%s' (sample %" PRIu32 "): %m", t->path, index);
		return nopfs_status_from_errno(errno);
	}
	for (;;) {
		ssize_t n;

		if (total == t->capacity) {
			char *bigger = realloc(t->buffer, 2 * t->capacity);

			if (!bigger) {
				nopfs_error("out of memory reading '%s'", t->path);
				close(fd);
				return NOPFS_ERR_NOMEM;
			}
			t->buffer = bigger;
			t->capacity *= 2;
		}
		n = read(fd, t->buffer + total, t->capacity - total);
		if (n == 0)
			break;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			nopfs_error("cannot read '%s' (sample %" PRIu32 "): %m", t->path, index);
			close(fd);
			return NOPFS_ERR_IO;
		}
		total += (uint64_t)n;
	}
	close(fd);
	*bytes = total;
	return NOPFS_OK;
}

/*
 * The little-endian integers of a sample's first and last (up to) 8 bytes,
 * XORed: train.py's checksum, so that both programs print the same sums for
 * the same rank, world size, seed and epochs (plain, nopfs or synthetic).
 */
static uint64_t sample_checksum(const char *data, uint64_t size)
{
	size_t n = size < 8 ? (size_t)size : 8;
	uint64_t first = 0, last = 0;

	for (size_t i = n; i > 0; i--) {
		first = first << 8 | (unsigned char)data[i - 1];
		last = last << 8 | (unsigned char)data[size - n + i - 1];
	}
	return first ^ last;
}

/* The synthetic counterpart: the sample's size in bytes, copied from memory. */
static void copy_sample(struct trainer *t, uint32_t index, uint64_t *bytes)
{
	uint64_t size = nopfs_catalog_size(t->catalog, index);

	memcpy(t->buffer, t->pattern, (size_t)size);
	*bytes = size;
}

/* Sleep until @until (CLOCK_MONOTONIC). */
static void sleep_until(const struct timespec *until)
{
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, until, NULL) == EINTR)
		continue;
}

/* CLOCK_MONOTONIC @seconds from now. */
static struct timespec after(double seconds)
{
	struct timespec at;
	double whole;

	clock_gettime(CLOCK_MONOTONIC, &at);
	seconds += (double)at.tv_nsec / 1e9;
	whole = floor(seconds);
	at.tv_sec += (time_t)whole;
	at.tv_nsec = (long)((seconds - whole) * 1e9);
	return at;
}

/* Whether CLOCK_MONOTONIC has reached @until. */
static bool reached(const struct timespec *until)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > until->tv_sec ||
	       (now.tv_sec == until->tv_sec && now.tv_nsec >= until->tv_nsec);
}

/*
 * One step's compute and gradient exchange, as DDP and Horovod do it: the
 * forward pass (the first third of --compute), then the backward pass (the
 * rest) while the allreduce of the gradients (their sum over ranks, then the
 * average) is under way; the step ends when both are over. The allreduce is
 * non-blocking and advanced by MPI_Test every millisecond of the backward
 * pass, since an MPI library without a progress thread moves a collective
 * on only inside its calls.
 */
static void compute_and_exchange(struct trainer *t)
{
	double seconds = t->options->compute > 0 ? t->options->compute : 0;
	float scale = 1.0f / (float)t->world;
	struct timespec end, tick;
	MPI_Request request;
	int done = 0;

	end = after(seconds / 3);
	sleep_until(&end);
	if (!t->gradient_count) {
		end = after(seconds - seconds / 3);
		sleep_until(&end);
		return;
	}
	for (int i = 0; i < t->gradient_count; i++)
		t->gradients[i] = (float)(t->rank + 1) * 1e-3f;
	end = after(seconds - seconds / 3);
	MPI_Iallreduce(MPI_IN_PLACE, t->gradients, t->gradient_count, MPI_FLOAT, MPI_SUM,
	               MPI_COMM_WORLD, &request);
	while (!reached(&end)) {
		if (!done)
			MPI_Test(&request, &done, MPI_STATUS_IGNORE);
		tick = done ? end : after(1e-3);
		if (tick.tv_sec > end.tv_sec ||
		    (tick.tv_sec == end.tv_sec && tick.tv_nsec > end.tv_nsec))
			tick = end;
		sleep_until(&tick);
	}
	if (!done)
		MPI_Wait(&request, MPI_STATUS_IGNORE);
	for (int i = 0; i < t->gradient_count; i++)
		t->gradients[i] *= scale;
}

/* One batch of the stream: read, exchange, compute; one CSV row. */
static nopfs_status train_batch(struct trainer *t, uint64_t epoch, uint64_t batch,
                                const uint32_t *indices, uint64_t count)
{
	double t_request = nopfs_clock_wall_seconds(), t_ready, t_done;
	uint64_t batch_bytes = 0;

	for (uint64_t i = 0; i < count; i++) {
		uint64_t bytes = 0;

		if (t->options->synthetic) {
			copy_sample(t, indices[i], &bytes);
		} else {
			nopfs_status status = read_sample(t, indices[i], &bytes);

			if (status)
				return status;
		}
		batch_bytes += bytes;
		t->checksum += sample_checksum(t->buffer, bytes);
		if (t->trace)
			fprintf(t->trace, "%" PRIu64 " %" PRIu32 " %" PRIu64 "\n", epoch,
			        indices[i], bytes);
	}
	t_ready = nopfs_clock_wall_seconds();
	compute_and_exchange(t);
	t_done = nopfs_clock_wall_seconds();
	t->bytes_read += batch_bytes;
	t->samples_read += count;
	if (t->csv)
		fprintf(t->csv,
		        "%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.6f,%.6f,%.6f\n",
		        t->rank, epoch, batch, count, batch_bytes, t_request, t_ready, t_done);
	return NOPFS_OK;
}

static nopfs_status train(struct trainer *t)
{
	const struct train_options *o = t->options;
	struct nopfs_sampler sampler = o->sampler;
	uint64_t per_rank;

	sampler.count = nopfs_catalog_count(t->catalog);
	sampler.world_size = (uint32_t)t->world;
	per_rank = nopfs_sampler_per_rank(&sampler);
	for (uint64_t epoch = 0; epoch < o->epochs; epoch++) {
		nopfs_sampler_permutation(&sampler, epoch, t->permutation);
		nopfs_sampler_rank_stream(&sampler, t->permutation, (uint32_t)t->rank, t->stream);
		for (uint64_t first = 0, batch = 0; first < per_rank;
		     first += o->batch_size, batch++) {
			uint64_t count =
			        per_rank - first < o->batch_size ? per_rank - first : o->batch_size;
			nopfs_status status =
			        train_batch(t, epoch, batch, t->stream + first, count);

			if (status)
				return status;
		}
	}
	return NOPFS_OK;
}

/* Close the outputs; a write error (full disk) is an error of the run. */
static nopfs_status close_outputs(struct trainer *t)
{
	nopfs_status status = NOPFS_OK;

	if (t->csv && fclose(t->csv)) {
		nopfs_error("--out: cannot write the CSV of rank %d: %m", t->rank);
		status = NOPFS_ERR_IO;
	}
	if (t->trace && fclose(t->trace)) {
		nopfs_error("--trace: cannot write the trace of rank %d: %m", t->rank);
		status = NOPFS_ERR_IO;
	}
	t->csv = t->trace = NULL;
	return status;
}

static void trainer_fini(struct trainer *t)
{
	if (t->csv)
		fclose(t->csv);
	if (t->trace)
		fclose(t->trace);
	free(t->stream);
	free(t->permutation);
	free(t->gradients);
	free(t->pattern);
	free(t->path);
	free(t->buffer);
	free(t->root);
	nopfs_catalog_destroy(t->catalog);
}

/* A failure on one rank after setup: the others are in collectives; end the job. */
static void abort_job(struct trainer *t)
{
	trainer_fini(t);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
	struct train_options options = {
		.epochs = 1,
		.batch_size = 32,
		.allreduce_bytes = 1 << 20,
		.sampler = { .shuffle = true },
	};
	struct trainer t = { .options = &options };
	double started = nopfs_clock_wall_seconds(), start;
	bool everyone;
	int parsed;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &t.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &t.world);
	log_rank = t.rank;
	nopfs_log_set_sink(log_sink, NULL, NOPFS_LOG_INFO);

	/* Every rank parses the same options: one message, one exit status. */
	log_rank_zero_only = true;
	parsed = train_options_parse(argc, argv, t.world, &options);
	log_rank_zero_only = false;
	if (parsed == 1 && t.rank == 0)
		train_options_print_help(stdout);
	if (parsed) {
		MPI_Finalize();
		return parsed == 1 ? 0 : 2;
	}
	t.root = train_dataset_root(&options);
	if (!t.root) {
		nopfs_error("out of memory");
		abort_job(&t);
	}
	if (share_catalog(&t, &everyone)) {
		if (!everyone)
			abort_job(&t);
		trainer_fini(&t);
		MPI_Finalize();
		return 1;
	}
	if (trainer_setup(&t))
		abort_job(&t);

	MPI_Barrier(MPI_COMM_WORLD);
	start = nopfs_clock_wall_seconds();
	if (train(&t) || close_outputs(&t))
		abort_job(&t);
	/* train.py's end line */
	fprintf(stderr,
	        PROGRAM ": rank %d/%d: %" PRIu64 " epochs in %.3f s (setup %.3f s), %" PRIu64
	                " samples, %" PRIu64 " bytes (%s, checksum %016" PRIx64 ")\n",
	        t.rank, t.world, options.epochs, nopfs_clock_wall_seconds() - start,
	        start - started, t.samples_read, t.bytes_read,
	        options.synthetic ? "synthetic" : "files", t.checksum);
	trainer_fini(&t);
	MPI_Finalize();
	return 0;
}
