/*
 * The agent's probe: what this node's RAM, SSD tiers and view of the PFS
 * can do, measured at start within a time budget (or taken from a cache),
 * so the performance model runs on measured numbers. What is measured and
 * how: docs/architecture.md (Probe).
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
	uint64_t pfs_bytes_max; /* the most the PFS test reads, over all its points; 0: no limit */
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
 * warning and is measured anew. A PFS file that cannot be read is skipped
 * (a warning names the first); the PFS measurement fails when none can be.
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
