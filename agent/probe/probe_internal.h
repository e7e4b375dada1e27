/*
 * Internals of the probe (probe.h), shared by its files:
 *   probe.c         probe_run(): configuration, time budget, fill_model
 *   probe_workers.c the clock, time boxes and the measuring threads
 *   probe_ram.c     RAM copy rate
 *   probe_ssd.c     SSD random write and read rates in a scratch file
 *   probe_pfs.c     PFS read rate on dataset files
 *   probe_json.c    the result as JSON and back
 *   probe_cache.c   the cache file
 *   probe_closer.c  closing the scratch files off the clock
 */
#ifndef NOPFS_AGENT_PROBE_INTERNAL_H
#define NOPFS_AGENT_PROBE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "probe.h"

#define PROBE_KNEE     0.9 /* a tier's threads reach this share of its best rate */
#define PROBE_IO_ALIGN 4096

/* What every measurement shares. */
struct probe_plan {
	unsigned int threads[NOPFS_CURVE_POINTS]; /* 1, 2, 4, ..., max_threads */
	unsigned int points;
	unsigned int max_threads;
	uint64_t io_size;
	uint32_t seed;
};

/*
 * A phase's time box: its measurements share what is left until @end, and
 * each gets at least @min_slice (after an overrun, a measurement of one
 * operation per thread would be noise).
 */
struct probe_phase {
	double end; /* monotonic seconds */
	double min_slice;
	unsigned int measurements; /* still to run */
};

/*
 * The first member of every measuring thread's job: set by
 * probe_workers_run(), updated by the thread.
 */
struct probe_worker {
	double deadline;
	uint64_t bytes; /* moved by this thread */
	int error;      /* errno of the failure that stopped it; 0 if none */
	atomic_bool *stop;
};

/*
 * Scratch files to close (probe_closer.c). Closing one frees its blocks,
 * which may take long (online discard, a busy journal), so probe_run() closes
 * them on a thread while the later phases measure.
 */
struct probe_closer {
	int fds[2 * NOPFS_TIERS_MAX]; /* owned, not yet handed to the thread */
	unsigned int count;
	pthread_t thread;
	struct probe_closing *closing; /* the thread's share; non-NULL while it runs */
};

/* Hand @fd (ignored when negative) to @closer; closed at once if it is full. */
void probe_closer_add(struct probe_closer *closer, int fd);

/* Close the descriptors handed so far on a thread (here if none can start). */
void probe_closer_start(struct probe_closer *closer);

/*
 * Close what was not handed to the thread, and wait for the thread until
 * @deadline (monotonic seconds). A thread still busy then is detached: it
 * finishes on its own (the files are unlinked already) and frees its share.
 */
void probe_closer_finish(struct probe_closer *closer, double deadline);

/* The deadline of @phase's next measurement: an equal share of what is left. */
double probe_phase_next(struct probe_phase *phase);

/*
 * Run @work on the first @threads of @jobs (@job_size bytes each, starting
 * with a struct probe_worker) until @deadline. *rate gets the bytes all moved
 * over the elapsed time. Returns the index of a job that failed (its
 * worker.error is set, nothing logged), or -1.
 */
int probe_workers_run(void (*work)(void *job), void *jobs, size_t job_size, unsigned int threads,
                      double deadline, double *rate);

/* Whether a thread should start another operation: no failure, time left. */
bool probe_worker_continues(struct probe_worker *worker);

/* Record @error (an errno value) and stop the other threads. */
void probe_worker_fail(struct probe_worker *worker, int error);

/* The measurements; each logs its errors. */
nopfs_status probe_ram_measure(const struct probe_plan *plan, struct probe_phase *phase,
                               struct nopfs_curve *copy);
nopfs_status probe_ssd_measure(const struct probe_plan *plan, struct probe_phase *phase,
                               struct probe_ssd *ssd, struct probe_closer *closer);
nopfs_status probe_pfs_measure(const struct probe_config *config, const struct probe_plan *plan,
                               struct probe_phase *phase, struct nopfs_curve *read,
                               uint64_t *bytes_read);

/*
 * Set the measured fields of *result (curves, threads, io_size, ssd tiers)
 * from @object as probe_to_json() wrote it, only on success; the other fields
 * are left as they are. Thread counts must be at most @max_threads. On
 * failure returns false with the reason in @why.
 */
bool probe_from_json(const json_t *object, unsigned int max_threads, struct probe_result *result,
                     char *why, size_t why_length);

/* The cache key of a run (a new object), NULL when out of memory. */
json_t *probe_cache_key(const struct probe_config *config, const char *host,
                        const struct probe_plan *plan);

/*
 * Load the cache matching @key from @dir into *result (only on success, with
 * from_cache set); false when there is none, it is too old (both quietly) or
 * it cannot be used (a warning).
 */
bool probe_cache_load(const char *dir, const json_t *key, double max_age,
                      const struct probe_plan *plan, struct probe_result *result);

/* Write @result as the cache for @key into @dir, atomically; only warns. */
void probe_cache_store(const char *dir, const json_t *key, const struct probe_result *result);

#endif
