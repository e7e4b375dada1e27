/*
 * The agent's probe: what this node's tiers and its view of the PFS
 * can do, measured at start within a time budget, so the performance model
 * (lib/model.h) runs on measured numbers, not on a table someone copied.
 *
 * Measured:
 *  - RAM: copy rate (bytes/s, each byte counted once) vs threads, memcpy
 *    between two pools of up to 128 MiB, far larger than a cache, which the
 *    threads of a measurement share out;
 *  - SSD (each ssd tier directory): random write then random read throughput
 *    vs threads at the dataset's mean sample size (rounded up to 4 KiB, see
 *    io_size), in a scratch file inside the tier directory that is unlinked
 *    as soon as it is open (nothing is left behind, whatever happens). The
 *    file takes at most 256 MiB and a tenth of the free space (less is used,
 *    with a warning, on a fuller disk). O_DIRECT is used where the file
 *    system accepts it; elsewhere (tmpfs on older kernels, ramfs) buffered
 *    I/O whose writes are flushed and whose pages are dropped after each
 *    operation (ssd[k].direct says which);
 *  - PFS: read throughput vs threads, reading whole real dataset files picked
 *    by a seeded permutation, whose bytes are counted in pfs_bytes_read. Each
 *    thread count reads its own slice of the permutation, so no file is read
 *    twice (a page-cache hit) unless the dataset has fewer files than the
 *    measurements need.
 * Thread counts are 1, 2, 4, ... and max_threads itself. Rates are aggregate
 * bytes/s as nopfs_curve points (x = threads). The thread count per tier is
 * the curve's knee (smallest count reaching 90% of the best), capped by
 * max_threads; for an SSD, the knee of its read curve (a tier is written
 * once and read every epoch).
 *
 * Time: the budget is split in shares, 1 for RAM, 2 for each SSD tier (write
 * and read) and 2 for the PFS, each share equally among its thread counts; 5%
 * is kept for cleaning up. Set-up time comes out of the phase that needs it,
 * and a phase that overruns shortens the ones after it (but a measurement
 * gets at least a fifth of its fair share). A measurement stops at its
 * deadline: every thread finishes the operation in flight (at most 1 MiB for
 * RAM and the PFS, one io_size for an SSD); its rate is the bytes moved over
 * the time taken. A PFS measurement also stops when its slice is read.
 * The SSD tiers go first, RAM next, the PFS last: closing a scratch file
 * frees its blocks, which can be slow (online discard, a busy journal), so
 * that happens on a thread while RAM and the PFS are measured. probe_run()
 * waits for the thread until the budget is spent; if it is still busy then,
 * it finishes on its own.
 *
 * Results are cached in cache_dir (created 0700) as JSON in a file named by a
 * hash of the key: host name, ssd tier directories (as given), dataset root,
 * io_size and max_threads (the two shape what is measured). A cache younger
 * than max_age_seconds whose key matches is used instead of measuring
 * (result.from_cache); an unreadable, corrupt or mismatched one is reported
 * with a warning and measured anew, and a cache that cannot be written only
 * warns.
 */
#ifndef NOPFS_AGENT_PROBE_H
#define NOPFS_AGENT_PROBE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "plan/model.h"
#include "common/status.h"
#include "plan/tierspec.h"

#define PROBE_THREADS_MAX 1024 /* accepted max_threads */

/* One dataset file the PFS probe may read. */
struct probe_file {
	const char *path; /* absolute */
	uint64_t size;
};

struct probe_config {
	const struct nopfs_tier_list *tiers; /* ssd tiers are measured in their directories */
	const struct probe_file *files;      /* PFS candidates; may be NULL (no PFS test) */
	uint64_t file_count;
	const char *dataset_root;  /* part of the cache key; NULL counts as "" */
	uint64_t mean_sample_size; /* bytes; > 0 */
	double budget_seconds;     /* all measurements together; > 0 */
	unsigned int max_threads;  /* 1 .. PROBE_THREADS_MAX */
	const char *cache_dir;     /* NULL: do not cache */
	double max_age_seconds;    /* cache validity */
	uint32_t seed;             /* which PFS files are read */
};

/* One measured ssd tier. */
struct probe_ssd {
	char path[NOPFS_TIER_PATH_MAX]; /* the tier directory */
	bool direct;                    /* O_DIRECT; false: buffered, flushed and dropped */
	uint64_t scratch_bytes;         /* size of the scratch file used */
	struct nopfs_curve read, write;
	unsigned int threads;
};

struct probe_result {
	struct nopfs_curve ram_copy;
	unsigned int ram_threads;
	uint64_t io_size;       /* SSD operation: mean sample size, 4 KiB up, <= 16 MiB */
	unsigned int ssd_count; /* measured ssd tiers, in tier-list order */
	struct probe_ssd ssd[NOPFS_TIERS_MAX];
	struct nopfs_curve pfs_read; /* empty when there were no files */
	unsigned int pfs_threads;    /* 0 when the PFS was not measured */
	uint64_t pfs_bytes_read;     /* dataset bytes read by the PFS test (0 from cache) */
	double seconds;              /* time spent measuring (0 from cache) */
	bool from_cache;
	char host[256];
};

/*
 * Measure (or load from the cache) into *result (set only on success).
 * Errors name the directory or file at fault; an unusable cache only logs a
 * warning and is measured anew. A PFS file that cannot be read is an error.
 * The ssd directories are checked before anything is measured.
 */
nopfs_status probe_run(const struct probe_config *config, struct probe_result *result);

/*
 * The result as a new JSON object for the report (caller owns it; NULL when
 * out of memory or when the host name or a path is not UTF-8):
 *   { "host", "from_cache", "seconds", "pfs_bytes_read", "io_size",
 *     "ram": { "threads", "copy": CURVE },
 *     "ssd": [ { "path", "io_mode": "direct"|"buffered", "scratch_bytes",
 *                "threads", "read": CURVE, "write": CURVE } ],
 *     "pfs": { "threads", "read": CURVE } }
 * where CURVE is [ { "threads", "bytes_per_second" } ] in thread order.
 */
json_t *probe_to_json(const struct probe_result *result);

/*
 * Fill the rate curves and thread counts of @model from @result: tier i of
 * @tiers (fastest first as given) is RAM (the copy curve as both read and
 * write rate) or the matching SSD, and model->tiers becomes the tier count.
 * The staging buffer (class 0, memory) gets the RAM copy curve too.
 * Capacities are left as they are.
 *
 * The PFS: the model's t(gamma) is a rate vs concurrent reader nodes, which
 * one node alone cannot measure. Until the agents measure it together, the
 * node's own curve stands in: model->pfs gets the measured curve (x =
 * threads of this node) and model->pfs_client_limit (b_fs) its best rate,
 * the most this node's client was seen to read. Both are left as they are
 * when the PFS was not measured.
 */
void probe_fill_model(const struct probe_result *result, const struct nopfs_tier_list *tiers,
                      struct nopfs_model *model);

#endif
