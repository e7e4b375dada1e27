/*
 * PFS read rate: threads read whole dataset files concurrently, 1 MiB at a
 * time, the way the agent will fetch samples (buffered reads, no tricks).
 *
 * The files are visited in a seeded affine permutation of their indices,
 * position i -> (a * i + b) mod F with a coprime to F: a shuffle that needs
 * no memory per file (F may be in the millions) and spreads the reads over
 * the dataset's directories. Each thread count reads its own slice of the
 * permutation (an equal share of the files, at least one file per thread), so
 * no file is read twice and the page cache cannot inflate a later count,
 * unless the dataset has fewer files than the slices need. A measurement ends
 * at its deadline, at the end of its slice or when it has read its share of
 * the byte limit (pfs_bytes_max), whichever comes first. A file
 * that cannot be read (an I/O error, gone since the scan) is skipped and
 * named once; a thread count that could read none of its files has no
 * figure, and the measurement fails only when no file could be read.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe_internal.h"
#include "common/fdio.h"
#include "common/log.h"
#include "plan/mt19937.h"

#define PFS_CHUNK (1u << 20)

struct pfs_order {
	const struct probe_file *files;
	uint64_t count;
	uint64_t multiplier; /* coprime to count */
	uint64_t offset;
	atomic_uint_fast64_t next; /* the next position to claim */
	uint64_t end;              /* of the current slice */
	atomic_uint_fast64_t read; /* bytes the current measurement has read */
	uint64_t limit;            /* the most it may read; 0: no limit */
};

/* Count @n bytes read; whether the measurement may read more. */
static bool order_count(struct pfs_order *order, uint64_t n)
{
	uint64_t before = atomic_fetch_add(&order->read, n);

	return !order->limit || before + n < order->limit;
}

struct pfs_job {
	struct probe_worker worker; /* first */
	struct pfs_order *order;
	char *buffer;    /* PFS_CHUNK bytes; owned */
	uint64_t failed; /* the first files[] index that could not be read */
	int failed_error;
	uint64_t skipped; /* files that could not be read */
};

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t r = a % b;

		a = b;
		b = r;
	}
	return a;
}

static uint64_t next64(struct nopfs_mt19937 *mt)
{
	uint64_t high = nopfs_mt19937_next(mt);

	return high << 32 | nopfs_mt19937_next(mt);
}

static void order_init(struct pfs_order *order, const struct probe_config *config)
{
	struct nopfs_mt19937 mt;

	order->files = config->files;
	order->count = config->file_count;
	order->multiplier = 1;
	order->offset = 0;
	if (order->count < 2)
		return;
	nopfs_mt19937_seed(&mt, config->seed);
	order->multiplier = 1 + next64(&mt) % (order->count - 1);
	while (gcd(order->multiplier, order->count) != 1)
		order->multiplier = order->multiplier % (order->count - 1) + 1;
	order->offset = next64(&mt) % order->count;
}

/* The files[] index read at @position. */
static uint64_t order_pick(const struct pfs_order *order, uint64_t position)
{
	unsigned __int128 i = position % order->count;

	return (uint64_t)((i * order->multiplier + order->offset) % order->count);
}

/*
 * Read @path to its end or until the deadline; false with errno on failure.
 * Only a regular file: a FIFO or device named like a sample is not waited on.
 */
static bool read_file(struct pfs_job *job, const char *path)
{
	struct stat st;
	int fd = nopfs_open_regular(path, &st);
	int err;

	if (fd < 0) {
		if (errno == 0 && S_ISDIR(st.st_mode))
			errno = EISDIR; /* else 0: not a regular file */
		return false;
	}
	for (;;) {
		ssize_t n = read(fd, job->buffer, PFS_CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto out_close_failed;
		job->worker.bytes += (uint64_t)n;
		if (n == 0 || !order_count(job->order, (uint64_t)n) ||
		    !probe_worker_continues(&job->worker))
			break;
	}
	close(fd);
	return true;

out_close_failed:
	err = errno;
	close(fd);
	errno = err;
	return false;
}

static void pfs_read(void *arg)
{
	struct pfs_job *job = arg;
	struct pfs_order *order = job->order;
	uint64_t position;

	/* looked at before each file: a stopping probe starts none (an open may be slow) */
	while (probe_worker_continues(&job->worker) && order_count(order, 0) &&
	       (position = atomic_fetch_add(&order->next, 1)) < order->end) {
		uint64_t index = order_pick(order, position);

		if (!read_file(job, order->files[index].path) && job->skipped++ == 0) {
			job->failed = index;
			job->failed_error = errno;
		}
	}
}

/* The positions measurement @point may read: its share, one per thread at least. */
static uint64_t slice_length(const struct probe_plan *plan, uint64_t count, unsigned int point)
{
	uint64_t share = count / plan->points;
	uint64_t need = plan->threads[point] < count ? plan->threads[point] : count;

	return share > need ? share : need;
}

static nopfs_status jobs_create(const struct probe_plan *plan, struct pfs_order *order,
                                struct pfs_job **out)
{
	struct pfs_job *jobs = calloc(plan->max_threads, sizeof(*jobs));

	if (!jobs)
		goto out_nomem;
	for (unsigned int i = 0; i < plan->max_threads; i++) {
		jobs[i].order = order;
		jobs[i].buffer = malloc(PFS_CHUNK);
		if (!jobs[i].buffer)
			goto out_free_jobs;
	}
	*out = jobs;
	return NOPFS_OK;

out_free_jobs:
	for (unsigned int i = 0; i < plan->max_threads; i++)
		free(jobs[i].buffer);
	free(jobs);
out_nomem:
	nopfs_error("PFS probe: out of memory");
	return NOPFS_ERR_NOMEM;
}

nopfs_status probe_pfs_measure(const struct probe_config *config, const struct probe_plan *plan,
                               struct probe_phase *phase, struct nopfs_curve *read,
                               uint64_t *bytes_read)
{
	struct nopfs_curve curve = { 0 };
	uint64_t start = 0, total = 0, skipped = 0;
	const char *skipped_path = NULL;
	int skipped_error = 0;
	const char *why;
	struct pfs_order order;
	struct pfs_job *jobs;
	nopfs_status status;

	order_init(&order, config);
	/* each thread count its share of the limit, one byte at least */
	order.limit = config->pfs_bytes_max ? config->pfs_bytes_max / plan->points + 1 : 0;
	status = jobs_create(plan, &order, &jobs);
	if (status)
		return status;
	for (unsigned int p = 0; p < plan->points; p++) {
		unsigned int threads = plan->threads[p];
		uint64_t point_bytes = 0, point_skipped = 0;
		double rate;

		atomic_store(&order.next, start);
		atomic_store(&order.read, 0);
		order.end = start + slice_length(plan, order.count, p);
		start = order.end;
		/* the workers skip files they cannot read: none fails */
		probe_workers_run(pfs_read, jobs, sizeof(*jobs), threads, probe_phase_next(phase),
		                  &rate);
		for (unsigned int t = 0; t < threads; t++) {
			point_bytes += jobs[t].worker.bytes;
			point_skipped += jobs[t].skipped;
			if (jobs[t].skipped && !skipped_path) {
				skipped_path = order.files[jobs[t].failed].path;
				skipped_error = jobs[t].failed_error;
			}
			jobs[t].skipped = 0;
		}
		total += point_bytes;
		skipped += point_skipped;
		if (point_bytes == 0 && point_skipped > 0)
			continue; /* its files all failed: no figure for this thread count */
		status = nopfs_curve_set(&curve, threads, rate);
		if (status)
			goto out_free_jobs;
	}
	why = skipped_error ? strerror(skipped_error) : "not a regular file";
	if (skipped && curve.points == 0) {
		nopfs_error("PFS probe: no dataset file could be read (%" PRIu64
		            " tried; the first: '%s': %s)",
		            skipped, skipped_path, why);
		status = skipped_error ? nopfs_status_from_errno(skipped_error) : NOPFS_ERR_INVALID;
		goto out_free_jobs;
	}
	if (skipped)
		nopfs_warning("PFS probe: %" PRIu64 " dataset files could not be read and were "
		              "skipped (the first: '%s': %s); ranks read them from the PFS as "
		              "without nopfs",
		              skipped, skipped_path, why);
	*read = curve;
	*bytes_read = total;

out_free_jobs:
	for (unsigned int i = 0; i < plan->max_threads; i++)
		free(jobs[i].buffer);
	free(jobs);
	return status;
}
