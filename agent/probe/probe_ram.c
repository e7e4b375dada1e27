/*
 * RAM copy rate: memcpy from a source pool into a destination pool, each of
 * 128 MiB (less when free memory or the memory limit is short), far larger
 * than any cache. With t threads each copies its own 1/t of the pools, 1 MiB
 * at a time, round and round, so every thread count works on the whole
 * pools. The pools are touched (in parallel) before the clock starts: page
 * faults are not measured, and set-up costs the same whatever the thread
 * cap. A short time box gets smaller pools, so that faulting them in leaves
 * time to measure.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe_internal.h"
#include "common/log.h"
#include "common/parallel.h"
#include "common/clock.h"
#include "tier/limits.h"

#define RAM_POOL_MAX  (UINT64_C(128) << 20) /* source and destination each */
#define RAM_POOL_MIN  (UINT64_C(8) << 20)
#define RAM_FREE_PART 8 /* both pools together take at most a quarter of free memory */
#define RAM_CHUNK_MAX ((size_t)1 << 20)
#define RAM_POOL_RATE 5e8 /* pool bytes per second of time box, at most */

struct ram_job {
	struct probe_worker worker; /* first */
	char *source;               /* this thread's regions of the pools */
	char *destination;
	size_t length; /* of each region, a multiple of chunk */
	size_t chunk;
	size_t offset; /* of the next copy */
};

struct touch_job {
	char *start;
	size_t length;
	int value;
};

/*
 * The length of each pool for a @seconds time box, a multiple of
 * RAM_CHUNK_MAX: also within an eighth of the process's memory limit (a
 * job's cgroup), or the probe alone could be killed for memory.
 */
static size_t pool_length(double seconds)
{
	long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint64_t length = RAM_POOL_MAX;
	uint64_t limit =
	        tier_memory_limit("/proc/self/cgroup", "/sys/fs/cgroup", UINT64_MAX, NULL, 0);

	if (seconds * RAM_POOL_RATE < (double)length)
		length = seconds > 0 ? (uint64_t)(seconds * RAM_POOL_RATE) : 0;

	if (pages > 0 && page > 0 && (uint64_t)pages / RAM_FREE_PART * (uint64_t)page < length)
		length = (uint64_t)pages / RAM_FREE_PART * (uint64_t)page;
	if (limit / RAM_FREE_PART < length)
		length = limit / RAM_FREE_PART;
	length = length / RAM_CHUNK_MAX * RAM_CHUNK_MAX;
	return length < RAM_POOL_MIN ? RAM_POOL_MIN : (size_t)length;
}

static void touch(void *arg)
{
	struct touch_job *job = arg;

	memset(job->start, job->value, job->length);
}

/* Fault in both pools on up to one thread per CPU (at most @max_threads). */
static nopfs_status pools_touch(char *source, char *destination, size_t length,
                                unsigned int max_threads)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int threads =
	        cpus > 0 && (unsigned long)cpus < max_threads ? (unsigned int)cpus : max_threads;
	size_t share = length / threads / PROBE_IO_ALIGN * PROBE_IO_ALIGN;
	struct touch_job *jobs = calloc(2 * (size_t)threads, sizeof(*jobs));

	if (!jobs) {
		nopfs_error("RAM probe: out of memory");
		return NOPFS_ERR_NOMEM;
	}
	for (unsigned int i = 0; i < threads; i++) {
		size_t start = i * share;
		size_t part = i + 1 < threads ? share : length - start;

		jobs[2 * i] = (struct touch_job){ source + start, part, 0x5a };
		jobs[2 * i + 1] = (struct touch_job){ destination + start, part, 0 };
	}
	nopfs_parallel_run(touch, jobs, sizeof(*jobs), 2 * threads);
	free(jobs);
	return NOPFS_OK;
}

static void ram_copy(void *arg)
{
	struct ram_job *job = arg;

	do {
		memcpy(job->destination + job->offset, job->source + job->offset, job->chunk);
		job->offset = (job->offset + job->chunk) % job->length;
		job->worker.bytes += job->chunk;
	} while (probe_worker_continues(&job->worker));
}

/* Give each of @threads jobs its region of the pools. */
static void jobs_split(struct ram_job *jobs, unsigned int threads, char *source, char *destination,
                       size_t length)
{
	size_t region = length / threads / PROBE_IO_ALIGN * PROBE_IO_ALIGN;
	size_t chunk = region < RAM_CHUNK_MAX ? region : RAM_CHUNK_MAX;

	for (unsigned int i = 0; i < threads; i++) {
		jobs[i].source = source + i * region;
		jobs[i].destination = destination + i * region;
		jobs[i].chunk = chunk;
		jobs[i].length = region / chunk * chunk;
		jobs[i].offset = 0;
	}
}

nopfs_status probe_ram_measure(const struct probe_plan *plan, struct probe_phase *phase,
                               struct nopfs_curve *copy)
{
	size_t length = pool_length(phase->end - nopfs_clock_seconds());
	struct nopfs_curve curve = { 0 };
	char *source, *destination;
	struct ram_job *jobs;
	nopfs_status status;
	double rate;

	source = malloc(length);
	destination = malloc(length);
	jobs = calloc(plan->max_threads, sizeof(*jobs));
	if (!source || !destination || !jobs) {
		nopfs_error("RAM probe: out of memory for 2 pools of %zu MiB", length >> 20);
		status = NOPFS_ERR_NOMEM;
		goto out_free;
	}
	status = pools_touch(source, destination, length, plan->max_threads);
	if (status)
		goto out_free;
	for (unsigned int p = 0; p < plan->points; p++) {
		jobs_split(jobs, plan->threads[p], source, destination, length);
		probe_workers_run(ram_copy, jobs, sizeof(*jobs), plan->threads[p],
		                  probe_phase_next(phase), &rate);
		status = nopfs_curve_set(&curve, plan->threads[p], rate);
		if (status)
			goto out_free;
	}
	*copy = curve;

out_free:
	free(jobs);
	free(destination);
	free(source);
	return status;
}
