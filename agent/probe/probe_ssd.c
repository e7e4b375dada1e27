/*
 * SSD random write and read rates at the sample size, in a scratch file of
 * the tier directory that is unlinked as soon as it is open: O_DIRECT where
 * the file system takes it, else buffered I/O pushed to the device and
 * dropped after each operation. See docs/architecture.md (Probe).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "probe_internal.h"
#include "common/log.h"
#include "common/units.h"

#define SSD_SCRATCH_MAX  (UINT64_C(256) << 20)
#define SSD_FREE_SHARE   10 /* use at most 1/10 of the free space */
#define SSD_SCRATCH_NAME "/.nopfs-probe-XXXXXX"

struct ssd_file {
	const char *dir;
	int fd;    /* the scratch file, buffered; owned */
	int io_fd; /* what the measurements use: fd, or an O_DIRECT one (owned) */
	bool direct;
	uint64_t io_size;
	uint64_t slots;
	_Atomic uint8_t *written; /* per slot: 1 once written; owned */
	uint64_t *readable;       /* the written slots, for the read pass; owned */
	uint64_t readable_count;
};

struct ssd_job {
	struct probe_worker worker; /* first */
	const struct ssd_file *file;
	unsigned int index;  /* of this thread in its pass */
	unsigned int stride; /* threads in the pass */
	void *buffer;        /* io_size bytes, aligned; owned */
	uint64_t random;
};

/* The scratch size in @dir: bounded by SSD_SCRATCH_MAX and the free space. */
static nopfs_status scratch_size(const char *dir, uint64_t io_size, uint64_t *size)
{
	uint64_t free_bytes, bound = SSD_SCRATCH_MAX / io_size * io_size;
	char have[32], want[32];
	struct statvfs st;

	if (statvfs(dir, &st) != 0) {
		nopfs_error("ssd tier directory '%s': %m", dir);
		return nopfs_status_from_errno(errno);
	}
	if (st.f_blocks == 0) {
		/* ramfs and some FUSE file systems report no sizes at all. */
		nopfs_debug("'%s' does not report its free space", dir);
		*size = bound ? bound : io_size;
		return NOPFS_OK;
	}
	free_bytes = (uint64_t)st.f_bavail * st.f_frsize;
	if (free_bytes / SSD_FREE_SHARE >= SSD_SCRATCH_MAX) {
		*size = bound ? bound : io_size;
		return NOPFS_OK;
	}
	bound = free_bytes / SSD_FREE_SHARE / io_size * io_size;
	nopfs_format_size(free_bytes, have, sizeof(have));
	if (bound == 0) {
		nopfs_error("ssd tier directory '%s' has only %s free: too little to probe "
		            "%" PRIu64 "-byte operations",
		            dir, have, io_size);
		return NOPFS_ERR_RANGE;
	}
	nopfs_warning("ssd tier directory '%s' has only %s free: probing in a %s scratch "
	              "file instead of %d MiB",
	              dir, have, nopfs_format_size(bound, want, sizeof(want)),
	              (int)(SSD_SCRATCH_MAX >> 20));
	*size = bound;
	return NOPFS_OK;
}

static bool write_slot(const struct ssd_file *file, const void *buffer, uint64_t slot)
{
	off_t offset = (off_t)(slot * file->io_size);
	ssize_t n;

	do
		n = pwrite(file->io_fd, buffer, file->io_size, offset);
	while (n < 0 && errno == EINTR);
	if (n >= 0 && (uint64_t)n != file->io_size)
		errno = ENOSPC;
	if (n < 0 || (uint64_t)n != file->io_size)
		return false;
	if (file->direct)
		return true;
	if (sync_file_range(file->io_fd, offset, (off_t)file->io_size,
	                    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
	                            SYNC_FILE_RANGE_WAIT_AFTER) != 0)
		return false;
	posix_fadvise(file->io_fd, offset, (off_t)file->io_size, POSIX_FADV_DONTNEED);
	return true;
}

static bool read_slot(const struct ssd_file *file, void *buffer, uint64_t slot)
{
	off_t offset = (off_t)(slot * file->io_size);
	ssize_t n;

	do
		n = pread(file->io_fd, buffer, file->io_size, offset);
	while (n < 0 && errno == EINTR);
	if (n >= 0 && (uint64_t)n != file->io_size)
		errno = EIO; /* the file is never shorter than a written slot */
	if (n < 0 || (uint64_t)n != file->io_size)
		return false;
	if (!file->direct)
		posix_fadvise(file->io_fd, offset, (off_t)file->io_size, POSIX_FADV_DONTNEED);
	return true;
}

/*
 * Random offsets: xorshift64*, seeded through splitmix64 so that nearby seeds
 * diverge (not for anything that must be secret).
 */
static uint64_t probe_random_next(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * UINT64_C(0x2545F4914F6CDD1D);
}

static uint64_t probe_random_seed(uint64_t seed, uint64_t stream)
{
	uint64_t z = seed + (stream + 1) * UINT64_C(0x9E3779B97F4A7C15);

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	z ^= z >> 31;
	return z ? z : 1;
}

/*
 * A random slot among this thread's (slot % stride == index): the threads of
 * a pass never write the same slot, unless there are fewer slots than threads.
 */
static uint64_t pick_slot(struct ssd_job *job, uint64_t slots)
{
	uint64_t owned = slots / job->stride;

	if (owned == 0)
		return job->index % slots;
	return job->index + job->stride * (probe_random_next(&job->random) % owned);
}

static void ssd_write(void *arg)
{
	struct ssd_job *job = arg;
	const struct ssd_file *file = job->file;

	do {
		uint64_t slot = pick_slot(job, file->slots);

		if (!write_slot(file, job->buffer, slot)) {
			probe_worker_fail(&job->worker, errno);
			return;
		}
		atomic_store_explicit(&file->written[slot], 1, memory_order_relaxed);
		job->worker.bytes += file->io_size;
	} while (probe_worker_continues(&job->worker));
}

static void ssd_read(void *arg)
{
	struct ssd_job *job = arg;
	const struct ssd_file *file = job->file;

	do {
		uint64_t pick = probe_random_next(&job->random) % file->readable_count;

		if (!read_slot(file, job->buffer, file->readable[pick])) {
			probe_worker_fail(&job->worker, errno);
			return;
		}
		job->worker.bytes += file->io_size;
	} while (probe_worker_continues(&job->worker));
}

/* Create, unlink and size the scratch file; O_DIRECT is tried later. */
static nopfs_status scratch_open(struct ssd_file *file, uint64_t size)
{
	size_t length = strlen(file->dir) + sizeof(SSD_SCRATCH_NAME);
	char *path = malloc(length);
	nopfs_status status = NOPFS_OK;

	if (!path) {
		nopfs_error("SSD probe in '%s': out of memory", file->dir);
		return NOPFS_ERR_NOMEM;
	}
	snprintf(path, length, "%s" SSD_SCRATCH_NAME, file->dir);
	file->fd = mkostemp(path, O_CLOEXEC);
	if (file->fd < 0) {
		nopfs_error("cannot create a scratch file in ssd tier directory '%s': %m",
		            file->dir);
		status = nopfs_status_from_errno(errno);
		goto out_free_path;
	}
	file->io_fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (file->io_fd < 0)
		nopfs_debug("O_DIRECT refused in '%s' (%m); using buffered I/O", file->dir);
	if (unlink(path) != 0) {
		nopfs_error("cannot remove scratch file '%s': %m", path);
		status = nopfs_status_from_errno(errno);
		goto out_free_path;
	}
	if (ftruncate(file->fd, (off_t)size) != 0) {
		nopfs_error("cannot size a scratch file in ssd tier directory '%s': %m", file->dir);
		status = nopfs_status_from_errno(errno);
	}
out_free_path:
	free(path);
	return status;
}

/* Settle the I/O mode with a first write (of slot 0) through O_DIRECT. */
static nopfs_status choose_mode(struct ssd_file *file, const void *buffer)
{
	if (file->io_fd >= 0) {
		file->direct = true;
		if (write_slot(file, buffer, 0)) {
			file->written[0] = 1;
			return NOPFS_OK;
		}
		if (errno != EINVAL) {
			nopfs_error("cannot write a scratch file in ssd tier directory '%s': %m",
			            file->dir);
			return nopfs_status_from_errno(errno);
		}
		nopfs_debug("O_DIRECT writes refused in '%s'; using buffered I/O", file->dir);
		close(file->io_fd);
	}
	file->direct = false;
	file->io_fd = file->fd;
	posix_fadvise(file->fd, 0, 0, POSIX_FADV_RANDOM);
	return NOPFS_OK;
}

static nopfs_status jobs_create(const struct probe_plan *plan, const struct ssd_file *file,
                                struct ssd_job **out)
{
	struct ssd_job *jobs = calloc(plan->max_threads, sizeof(*jobs));
	uint64_t random = probe_random_seed(plan->seed, UINT64_MAX);

	if (!jobs)
		goto out_nomem;
	for (unsigned int i = 0; i < plan->max_threads; i++) {
		uint64_t *words;

		jobs[i].file = file;
		jobs[i].random = probe_random_seed(plan->seed, i);
		if (posix_memalign(&jobs[i].buffer, PROBE_IO_ALIGN, file->io_size) != 0)
			goto out_free_jobs;
		words = jobs[i].buffer;
		for (uint64_t w = 0; w < file->io_size / sizeof(*words); w++)
			words[w] = probe_random_next(&random);
	}
	*out = jobs;
	return NOPFS_OK;

out_free_jobs:
	for (unsigned int i = 0; i < plan->max_threads; i++)
		free(jobs[i].buffer);
	free(jobs);
out_nomem:
	nopfs_error("SSD probe in '%s': out of memory", file->dir);
	return NOPFS_ERR_NOMEM;
}

/* The written slots, for the read pass. */
static nopfs_status list_written(struct ssd_file *file)
{
	file->readable = malloc(file->slots * sizeof(*file->readable));
	if (!file->readable) {
		nopfs_error("SSD probe in '%s': out of memory", file->dir);
		return NOPFS_ERR_NOMEM;
	}
	for (uint64_t slot = 0; slot < file->slots; slot++)
		if (file->written[slot])
			file->readable[file->readable_count++] = slot;
	return NOPFS_OK;
}

/* One pass (@work) over every thread count into @curve. */
static nopfs_status measure_pass(const struct probe_plan *plan, struct probe_phase *phase,
                                 const struct ssd_file *file, struct ssd_job *jobs,
                                 void (*work)(void *job), struct nopfs_curve *curve)
{
	for (unsigned int p = 0; p < plan->points; p++) {
		nopfs_status status;
		double rate;
		int failed;

		for (unsigned int i = 0; i < plan->threads[p]; i++) {
			jobs[i].index = i;
			jobs[i].stride = plan->threads[p];
		}
		failed = probe_workers_run(work, jobs, sizeof(*jobs), plan->threads[p],
		                           probe_phase_next(phase), &rate);
		if (failed >= 0) {
			errno = jobs[failed].worker.error;
			nopfs_error("cannot %s a scratch file in ssd tier directory '%s': %m",
			            work == ssd_write ? "write" : "read", file->dir);
			return nopfs_status_from_errno(errno);
		}
		status = nopfs_curve_set(curve, plan->threads[p], rate);
		if (status)
			return status;
	}
	return NOPFS_OK;
}

nopfs_status probe_ssd_measure(const struct probe_plan *plan, struct probe_phase *phase,
                               struct probe_ssd *ssd, struct probe_closer *closer)
{
	struct ssd_file file = { .dir = ssd->path, .fd = -1, .io_fd = -1 };
	struct nopfs_curve read = { 0 }, write = { 0 };
	struct ssd_job *jobs;
	nopfs_status status;
	uint64_t size = 0;

	file.io_size = plan->io_size;
	status = scratch_size(file.dir, file.io_size, &size);
	if (status)
		return status;
	file.slots = size / file.io_size;
	file.written = calloc(file.slots, sizeof(*file.written));
	if (!file.written) {
		nopfs_error("SSD probe in '%s': out of memory", file.dir);
		return NOPFS_ERR_NOMEM;
	}
	status = scratch_open(&file, size);
	if (status)
		goto out_close;
	status = jobs_create(plan, &file, &jobs);
	if (status)
		goto out_close;
	status = choose_mode(&file, jobs[0].buffer);
	if (status)
		goto out_free_jobs;
	status = measure_pass(plan, phase, &file, jobs, ssd_write, &write);
	if (status)
		goto out_free_jobs;
	status = list_written(&file);
	if (status)
		goto out_free_jobs;
	status = measure_pass(plan, phase, &file, jobs, ssd_read, &read);
	if (status)
		goto out_free_jobs;
	ssd->direct = file.direct;
	ssd->scratch_bytes = size;
	ssd->read = read;
	ssd->write = write;
	nopfs_debug("SSD probe in '%s': %s I/O, %" PRIu64 " of %" PRIu64 " slots written", file.dir,
	            file.direct ? "direct" : "buffered", file.readable_count, file.slots);

out_free_jobs:
	for (unsigned int i = 0; i < plan->max_threads; i++)
		free(jobs[i].buffer);
	free(jobs);
out_close:
	if (file.io_fd != file.fd)
		probe_closer_add(closer, file.io_fd);
	probe_closer_add(closer, file.fd);
	free(file.readable);
	free(file.written);
	return status;
}
