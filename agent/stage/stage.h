/*
 * Staging: for each local rank, the samples it will read next, in its exact
 * order, as complete files in the tmpfs stage directory (see runtime.h for
 * the names), produced ahead by stager threads from the best source
 * (source.c: RAM or SSD tier; a tier sample not fetched yet is fetched by the
 * stager itself: help-out), else a peer or the PFS. A window of positions per
 * rank is staged; a position is done when the rank opens its file (reported
 * by watch.c) or asks for it (server.c). A rank that moves on to the next
 * epoch abandons the rest of the current one (a DataLoader with drop_last
 * never reads its last partial batch); a rank that jumps far ahead is
 * resynchronized there. Requests for samples in no local rank's window are
 * served all the same and recorded as stream mismatches (diagnosed by
 * stream_diag.c).
 */
#ifndef NOPFS_AGENT_STAGE_H
#define NOPFS_AGENT_STAGE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "epochs.h"
#include "job.h"
#include "source.h"
#include "stats.h"
#include "stream_diag.h"

struct stage_rank;
struct stage_worker;
struct stage_removed;

struct stage {
	const struct job *job;
	struct source *source; /* where copies' bytes come from */
	struct agent_stats *stats;
	char directory[4096];
	int directory_fd;
	uint32_t window;
	uint64_t ring_size;
	unsigned int serve_timeout_ms;
	pthread_mutex_t lock;
	pthread_cond_t work;  /* stagers wait for room in a window */
	pthread_cond_t ready; /* requests wait for a slot being staged */
	/*
	 * The order staged: the job's sampler, or the order the ranks were
	 * found to read instead (the script never calls set_epoch, or does not
	 * shuffle); changed under the lock, orders counting the changes.
	 */
	struct nopfs_sampler sampler;
	uint32_t orders;
	uint32_t claims; /* positions claimed for staging so far */
	struct epoch_cache epochs;
	uint32_t rank_count;
	struct stage_rank *ranks;
	uint8_t *staged_claims; /* per sample: slots staged with its file */
	unsigned int worker_count;
	struct stage_worker *workers;
	atomic_bool stop;
	struct stream_diag diag;
	/* Copies removed unopened, whose open the watch may not have read yet. */
	struct stage_removed *removed;
	size_t removed_count, removed_capacity;
	uint64_t watch_mark;
	double started; /* CLOCK_MONOTONIC seconds at stage_init() */
};

/*
 * Set up the windows of the job's local ranks in @directory (which exists,
 * 0700) and publish the "index" file for the C API. No thread yet. @job,
 * @source and @stats are borrowed.
 */
nopfs_status stage_init(struct stage *stage, const struct job *job, struct source *source,
                        struct agent_stats *stats, const char *directory, uint32_t window,
                        unsigned int serve_timeout_ms);

/* Start @threads stager threads. */
nopfs_status stage_start(struct stage *stage, unsigned int threads);

/* Begin shutting down: stagers and waiting requests return promptly. */
void stage_shutdown(struct stage *stage);

/*
 * Stop the stagers, wake every waiter, join, and remove every staged copy
 * nobody opened (counted as staged_unused; call it after the watch stopped).
 * Then free everything.
 */
void stage_fini(struct stage *stage);

/* A task opened the staged file @name (from the watch). */
void stage_opened(struct stage *stage, const char *name);

/*
 * A task may open a staged copy just before the agent removes it (its rank
 * moved on); the watch reads that open later. The watch calls
 * stage_watch_begin() before it reads the opens queued so far and
 * stage_watch_settled() with its mark once it has read them all: a copy
 * removed before the mark whose open was not among them was never opened
 * (counted as staged_unused then).
 */
uint64_t stage_watch_begin(struct stage *stage);
void stage_watch_settled(struct stage *stage, uint64_t mark);

/*
 * Serve sample @sample to @rank (-1: unknown) on request: a read-only file
 * descriptor of a node-local copy in *fd (caller closes it after passing it
 * on) and its source. Waits for a copy being fetched or staged up to
 * @timeout_ms (0: the serve timeout; more for a task told to keep waiting).
 * @buffer has room for the largest sample. Errors: NOPFS_ERR_TIMEOUT,
 * NOPFS_ERR_IO (the sample cannot be read), NOPFS_ERR_RANGE (no such sample).
 */
nopfs_status stage_request(struct stage *stage, int32_t rank, nopfs_sample_id sample, void *buffer,
                           unsigned int timeout_ms, int *fd, nopfs_wire_source *source);

/*
 * Stage @rank's samples into an API ring from now on (created on first call)
 * and give the caller a new descriptor of its file, its slots and size.
 * NOPFS_ERR_RANGE when the rank is not local.
 */
nopfs_status stage_attach_ring(struct stage *stage, int32_t rank, int *fd, uint32_t *slots,
                               uint64_t *bytes);

/*
 * A task of @rank released ring slot @slot holding the sample at @index
 * (RELEASE, whose 64-bit index is checked here: a slot holds a sample id).
 */
void stage_ring_released_by(struct stage *stage, int32_t rank, uint32_t slot, uint64_t index);

/* A request of @rank (-1: unknown) waited @ns nanoseconds for its answer. */
void stage_count_stall(struct stage *stage, int32_t rank, uint64_t ns);

/*
 * Seal @copy (a memfd made with MFD_ALLOW_SEALING, its bytes written) so the
 * task it is passed to can neither change nor resize it, and rewind it.
 */
nopfs_status stage_seal_copy(int copy);

/*
 * Live per-rank progress as a new JSON array (caller owns it): each local
 * rank's epoch, position, copies staged ahead, and its requests' waits
 * (count, p50 and p99 as bucket upper bounds, see stats.h).
 */
json_t *stage_progress_json(struct stage *stage);

/* The order staged now (the job's, or the one the ranks were found to read). */
void stage_order(struct stage *stage, struct nopfs_sampler *sampler);

#endif
