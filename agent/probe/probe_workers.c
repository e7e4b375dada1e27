/*
 * The measuring threads and the time they keep to: the clock, a phase's next
 * deadline, running a measurement's threads until it, and stopping them all
 * when one fails.
 */
#include "common/cancel.h"
#include "config.h"

#include <errno.h>

#include "probe_internal.h"
#include "common/clock.h"
#include "common/parallel.h"

double probe_phase_next(struct probe_phase *phase)
{
	double now = nopfs_clock_seconds();
	double left = phase->end > now ? phase->end - now : 0;
	unsigned int share = phase->measurements ? phase->measurements : 1;
	double slice = left / share;

	if (phase->measurements)
		phase->measurements--;
	return now + (slice > phase->min_slice ? slice : phase->min_slice);
}

bool probe_worker_continues(struct probe_worker *worker)
{
	return !atomic_load_explicit(worker->stop, memory_order_relaxed) &&
	       !nopfs_stop_requested() && nopfs_clock_seconds() < worker->deadline;
}

void probe_worker_fail(struct probe_worker *worker, int error)
{
	worker->error = error ? error : EIO;
	atomic_store(worker->stop, true);
}

int probe_workers_run(void (*work)(void *job), void *jobs, size_t job_size, unsigned int threads,
                      double deadline, double *rate)
{
	atomic_bool stop = false;
	uint64_t bytes = 0;
	double start, elapsed;
	int failed = -1;

	for (unsigned int i = 0; i < threads; i++) {
		struct probe_worker *worker = (void *)((char *)jobs + i * job_size);

		worker->deadline = deadline;
		worker->bytes = 0;
		worker->error = 0;
		worker->stop = &stop;
	}
	start = nopfs_clock_seconds();
	nopfs_parallel_run(work, jobs, job_size, threads);
	elapsed = nopfs_clock_seconds() - start;
	for (unsigned int i = 0; i < threads; i++) {
		struct probe_worker *worker = (void *)((char *)jobs + i * job_size);

		bytes += worker->bytes;
		if (worker->error && failed < 0)
			failed = (int)i;
		worker->stop = NULL;
	}
	*rate = elapsed > 0 ? (double)bytes / elapsed : 0;
	return failed;
}
