/*
 * Caches that outlive a job (--keep-dir): what this node's tiers held at the
 * end of a job stays on node-local storage, owned by the user, for the next
 * job of that user on the same dataset.
 *
 * --keep-dir is the user's private directory (CACHE_BASE/UID, made by the
 * plugin's job prolog). In it, one directory per dataset, named for the
 * dataset's key (nopfs_catalog_key(), 16 hexadecimal digits), holds:
 *
 *   manifest          what "data" holds: each sample's path, size, place in
 *                     the file, CRC32C, and the identity of its file when the
 *                     job began (inode, size, mtime, ctime)
 *   data              the bytes
 *   data.JOB.TOKEN    a running job's new data, "data" once committed
 *
 * The job holds an exclusive flock on the dataset's directory while it runs
 * (the epilog's limits leave a locked one alone; a second job of the user on
 * the same dataset and node keeps nothing). The new data file is the first
 * SSD tier's own file (its samples are written once), followed by a region
 * per other tier, into which their samples are written too.
 *
 * A kept sample is used only when its file still has the identity recorded
 * (taken from the dataset's metadata at the start of the job that read it, so
 * any later change shows) and its bytes still have their CRC32C; otherwise
 * the sample is read as if nothing were kept. Nothing here is ever a reason
 * for the job to fail: the agent then keeps nothing and says why.
 */
#ifndef NOPFS_AGENT_KEEP_H
#define NOPFS_AGENT_KEEP_H

#include <jansson.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "catalog/meta.h"
#include "common/status.h"
#include "plan/tierspec.h"
#include "stats.h"

struct job;
struct tier;
struct tier_set;

struct keep {
	_Atomic bool active;      /* the dataset's directory is ours and locked */
	char directory[PATH_MAX]; /* KEEP_DIR/KEY */
	char why[PATH_MAX + 256]; /* why not active, or why nothing was committed */
	int dir_fd;
	/* What earlier jobs left, for this one to read: */
	int old_fd;           /* "data", -1: none */
	uint64_t *old_offset; /* per sample: its place in "data", UINT64_MAX: not kept */
	uint32_t *old_crc;    /* per sample */
	uint64_t old_samples; /* usable */
	uint64_t old_bytes;
	uint64_t stale_samples; /* recorded, but their files changed (or are gone) */
	uint64_t stale_bytes;
	struct agent_counter read;       /* samples this job took from it */
	struct agent_counter mismatched; /* whose bytes no longer had their CRC32C */
	/* What this job keeps: */
	char data_name[160]; /* data.JOB.TOKEN */
	int data_fd;         /* -1: none */
	int ssd_tier;        /* the tier whose file data_fd is (from offset 0), or -1 */
	uint64_t region[NOPFS_TIERS_MAX]; /* each tier's offset in data (the SSD tier's: 0) */
	_Atomic uint64_t *noted[NOPFS_TIERS_MAX]; /* per position: (1 << 32) | CRC32C once kept */
	uint64_t noted_count[NOPFS_TIERS_MAX];
	struct agent_counter written; /* samples of other tiers written into data */
	uint64_t committed_samples, committed_bytes;
	bool committed;
};

/* Nothing kept, nothing open (so that keep_fini() is always safe). */
void keep_init(struct keep *keep);

/*
 * Take the dataset's directory in @keep_dir (the user's private directory)
 * for @job's dataset, and what earlier jobs left there, checked against
 * @job's catalog and the dataset's metadata @meta (NULL: nothing can be kept).
 * @name is the agent's private name (nopfs-JOB.TOKEN). Never fails the job:
 * a problem is logged, leaves @keep inactive and says why in keep->why.
 */
void keep_open(struct keep *keep, const char *keep_dir, const struct nopfs_catalog_options *dataset,
               const struct job *job, const struct nopfs_meta_view *meta, const char *name);

/*
 * What earlier jobs left here that this job can use: a bit per sample of the
 * job's @count (sample k: bit k % 8 of byte k / 8; malloc'd), for the
 * placement to leave them here (placement.h, held). NULL: none.
 */
uint8_t *keep_held(const struct keep *keep, uint64_t count);

/* Create the new data file (before the tiers). -1 when not keeping. */
int keep_data_fd(struct keep *keep, const struct nopfs_tier_list *specs);

/*
 * Lay out the other tiers' regions after the SSD tier's part of the data
 * file, now that @tiers exist. Keeping stops (with a warning) when there is
 * no room for them.
 */
void keep_layout(struct keep *keep, const struct tier_set *tiers);

/* Read @sample (@size bytes) from what earlier jobs kept: true with its right bytes in @buffer. */
bool keep_read(struct keep *keep, nopfs_sample_id sample, void *buffer, uint64_t size);

/* Position @position of @tier was just stored from @data: keep it too. */
void keep_note(struct keep *keep, const struct tier *tier, uint64_t position, const void *data);

/*
 * The job's end (nothing stores any more): write the manifest of what
 * @tiers hold, with the identities from @meta, and put it and the new data
 * in place of the old ones.
 */
void keep_commit(struct keep *keep, const struct job *job, const struct tier_set *tiers,
                 const struct nopfs_meta_view *meta);

/* The plan moved to another dataset: stop keeping, remove the new data. */
void keep_drop(struct keep *keep, const char *why);

/* Close and unlock; the new data goes unless committed. */
void keep_fini(struct keep *keep);

/* The report's "kept" object. */
json_t *keep_json(const struct keep *keep);

#endif
