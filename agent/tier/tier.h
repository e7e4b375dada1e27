/*
 * This node's tiers: a RAM tier is a file in the tmpfs stage directory mapped
 * shared (so peers can read it as one registered region); an SSD tier is a
 * file in a job-private directory on local storage. Samples sit at offsets
 * computed from the plan, packed: first the samples this node holds the
 * primary copy of, in sample order (every node can compute their offsets:
 * nopfs_placement_primary_place()), then its replicas. No allocator and no
 * metadata exchange is needed.
 *
 * Every kept sample has a state: absent, in flight (one thread is fetching
 * it), present, or failed. Exactly one thread fetches a sample (it claimed
 * it); others wait. Where the bytes come from is source.c's business: tiers
 * only store them.
 */
#ifndef NOPFS_AGENT_TIER_H
#define NOPFS_AGENT_TIER_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "catalog/catalog.h"
#include "common/status.h"
#include "plan/tierspec.h"

enum tier_state {
	TIER_ABSENT = 0,
	TIER_IN_FLIGHT = 1,
	TIER_PRESENT = 2,
	TIER_FAILED = 3,
};

struct tier {
	unsigned int index; /* in the plan, 0 = fastest */
	nopfs_tier_kind kind;
	char directory[PATH_MAX]; /* SSD: the job-private directory we made */
	char path[PATH_MAX];      /* the tier's file */
	bool borrowed;            /* the file is the kept cache's (keep.h): not unlinked here */
	int fd;
	uint8_t *base;            /* RAM: the mapping; SSD: NULL */
	uint64_t bytes;           /* planned bytes (file size) */
	uint64_t count;           /* kept samples */
	uint64_t primary_count;   /* the first ones: this node holds their primary copy */
	nopfs_sample_id *samples; /* primaries sorted, then replicas sorted */
	uint64_t *offsets;        /* count + 1 */
	_Atomic uint8_t *state;
	uint64_t *fill_order; /* positions, first-needed first */
	_Atomic uint64_t next_fill;
	unsigned int threads; /* prefetch threads */
	pthread_mutex_t lock; /* waiters for in-flight samples */
	pthread_cond_t changed;
};

struct tier_set {
	unsigned int count;
	struct tier tier[NOPFS_TIERS_MAX];
};

struct job;
struct keep;

/*
 * Create the tiers of this node for the plan in @job: files, mappings,
 * offsets, fill order. @stage_dir holds RAM tiers; SSD tiers go in
 * "SPEC_DIR/@name.nNODE" (@name: the job's private name, nopfs-JOB.TOKEN),
 * made 0700 on a node-local file system; with @keep (NULL: none) keeping,
 * its SSD tier's file is instead the kept cache's new data file (keep.h).
 * Errors name the directory (missing, not writable, shared, too little free
 * space for the plan).
 */
nopfs_status tier_set_create(struct tier_set *set, const struct job *job,
                             const struct nopfs_tier_list *specs, const char *stage_dir,
                             const char *name, uint32_t generation, const struct keep *keep);

/* Unmap, close and remove every tier file and the directories made for them. */
void tier_set_destroy(struct tier_set *set);

/* The same for one tier (made by tier_set_create() or tier_create_listed()). */
void tier_fini(struct tier *tier);

/*
 * A RAM tier outside the plan's tiers: the @count samples listed in
 * @samples (their sizes in @sizes, indexed by sample), packed in that order,
 * filled in that order, in the file "@stage_dir/.@name". Errors name it.
 */
nopfs_status tier_create_listed(struct tier *tier, const char *stage_dir, const char *name,
                                const nopfs_sample_id *samples, const uint64_t *sizes,
                                uint64_t count);

/*
 * Write the SSD tier directories of @set, one a line, to @path (the runtime
 * directory's "ssd-dirs"): the job epilog removes them if the agent cannot.
 * Nothing is written without SSD tiers; a failure is a warning.
 */
nopfs_status tier_set_list_directories(const struct tier_set *set, const char *path);

/*
 * Another plan (see replan.c). For another dataset, its tiers are created
 * beside the current ones (file names carry the @generation given to
 * tier_set_create()) and the current ones go. Peers may still read the
 * RAM tier of the old plan: tier_set_hide() marks all of its samples absent
 * for them; once their reads in flight are over, tier_set_retire() destroys
 * the set but keeps the address ranges peers know (reading as zeros, using
 * no memory) until tier_retired_free() at the end.
 */
struct tier_retired {
	void *base;
	uint64_t bytes;
	void *state;
	struct tier_retired *next;
};

/*
 * The same samples for another stream of @job (same catalog and placement):
 * the fill order from it, from the first; *@present and *@bytes count the
 * samples already there.
 */
nopfs_status tier_set_reorder(struct tier_set *set, const struct job *job, uint64_t *present,
                              uint64_t *bytes);
void tier_set_hide(struct tier_set *set);

/* Move @from (unused by any thread) into @to (destroyed or never created). */
void tier_set_move(struct tier_set *to, struct tier_set *from);
void tier_set_retire(struct tier_set *set, struct tier_retired **retired);
void tier_retired_free(struct tier_retired *retired);

/* The position of @sample in @tier, or -1 when the tier does not keep it. */
int64_t tier_position(const struct tier *tier, nopfs_sample_id sample);

/*
 * Claim position @position of @tier to fill it: true when it was absent and
 * is now in flight, this caller's to store (tier_store()) and publish
 * (tier_publish()); false when it is present, failed or another's.
 */
bool tier_claim(struct tier *tier, uint64_t position);

/*
 * Wait while @position is in flight, until @deadline (NULL: no limit;
 * CLOCK_MONOTONIC). Its state then: still TIER_IN_FLIGHT past the deadline.
 */
enum tier_state tier_wait(struct tier *tier, uint64_t position, const struct timespec *deadline);

/* Store the sample's bytes at @data into claimed @position. Logs errors. */
nopfs_status tier_store(struct tier *tier, uint64_t position, const void *data);

/* Set the state of claimed @position and wake its waiters. */
void tier_publish(struct tier *tier, uint64_t position, enum tier_state state);

/* Copy a present sample to the start of @fd (a new, empty file). */
nopfs_status tier_copy_to_fd(const struct tier *tier, uint64_t position, int fd);

/* Copy a present sample into @buffer. */
nopfs_status tier_read(const struct tier *tier, uint64_t position, void *buffer);

/* Where @offset of a present sample is in memory (a RAM tier); NULL for an SSD tier. */
const void *tier_view(const struct tier *tier, uint64_t position, uint64_t offset);

/* Copy @length bytes at @offset of a present sample into @buffer (within the sample). */
nopfs_status tier_read_range(const struct tier *tier, uint64_t position, uint64_t offset,
                             void *buffer, uint64_t length);

/* Wake every waiter (shutdown). */
void tier_wake_all(struct tier_set *set);

#endif
