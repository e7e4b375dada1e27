/*
 * Where a sample's bytes come from: the node's tier keeping it (RAM, SSD),
 * else what an earlier job kept on this node (keep.h), else the node keeping
 * its primary copy (a peer), else the PFS (pfs.c).
 * Staging, serving a task's request, the tier prefetchers and a peer's fill
 * all get their bytes here; the tiers themselves only store them. Counted
 * per source: tier fills (tier_filled), samples a stager fetched into a tier
 * itself (help_out) and PFS reads (pfs_read).
 */
#ifndef NOPFS_AGENT_SOURCE_H
#define NOPFS_AGENT_SOURCE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "catalog/catalog.h"
#include "common/status.h"
#include "job.h"
#include "keep.h"
#include "stats.h"
#include "tier/tier.h"

/*
 * Read @sample into @buffer from the node keeping its primary copy; false
 * when it cannot, and the PFS is read instead.
 */
typedef bool source_peer_read_fn(void *arg, nopfs_sample_id sample, void *buffer);

/* Requests at a time that can hurry another thread's fetch (source_want()). */
#define SOURCE_WANTED_MAX 64

struct source {
	const struct job *job;
	struct tier_set *tiers;
	struct agent_stats *stats;
	source_peer_read_fn *peer_read; /* NULL: no peers, the PFS only */
	struct keep *keep;              /* what earlier jobs kept here (keep.h), or NULL */
	void *peer_arg;
	/*
	 * --verify: per sample, (1 << 32) | its CRC32C once known (recorded at
	 * its first read here: from the PFS, or the first copy a peer gave);
	 * every later copy from a tier or a peer is checked against it and not
	 * served when it differs (the PFS is read instead). NULL: off.
	 */
	_Atomic uint64_t *sums;
	uint64_t sum_count;
	/* PFS reads in flight that a request or a peer waits for: reads for later yield */
	atomic_uint demand_reads;
	/* those of them not for a leading rank (source_copy()): a leading rank's yield */
	atomic_uint first_reads;
	/*
	 * Samples a request waits for while another thread fetches them (sample
	 * + 1; 0: a free entry): that fetch, made for later, is now one someone
	 * waits for and stops yielding to the others.
	 */
	_Atomic uint64_t wanted[SOURCE_WANTED_MAX];
};

/* Get samples of @job from @tiers and the PFS, counting in @stats (all borrowed). */
void source_init(struct source *source, const struct job *job, struct tier_set *tiers,
                 struct agent_stats *stats);

/*
 * Check every copy against the CRC32C recorded at the sample's first read
 * (@on), for the job's samples; called again when the job's dataset changes
 * (what was recorded is forgotten). NOPFS_ERR_NOMEM leaves it off.
 */
nopfs_status source_verify(struct source *source, bool on);

/*
 * Say that a request now waits for @sample, which another thread (a stager,
 * a prefetcher) fetches for later: that fetch stops yielding the PFS to the
 * reads others wait for. Returns what source_unwant() takes once the wait is
 * over; -1 when SOURCE_WANTED_MAX requests already said so (the fetch goes
 * on at its own pace).
 */
int source_want(struct source *source, nopfs_sample_id sample);
void source_unwant(struct source *source, int entry);

/* Free what source_verify() took. */
void source_fini(struct source *source);

/* Read what earlier jobs kept on this node (@keep) before any other node or the PFS. */
void source_use_keep(struct source *source, struct keep *keep);

/* Read what other nodes keep through @read (with @arg) before the PFS. */
void source_use_peer(struct source *source, source_peer_read_fn *read, void *arg);

/*
 * Copy @sample to the start of @fd (a new, empty file), or with @fd < 0 into
 * @buffer; @buffer has room for the sample either way. A sample a tier keeps
 * is fetched into it first if it is not there yet (waiting for the thread
 * fetching it until @deadline, NULL: no limit; CLOCK_MONOTONIC). *@from says
 * where the copy came from. NOPFS_ERR_TIMEOUT past the deadline; else the
 * PFS read's or the copy's error. Without a deadline the copy is made ahead
 * of its need (staging): a sample whose primary copy another node keeps is
 * not read from the PFS when that node cannot give it now (NOPFS_ERR_AGAIN:
 * the rank's request gets it later, by then from that node), so the PFS
 * never sees it twice. @leading (with a deadline): the request of a rank well
 * ahead of another rank of the node, whose PFS read lets that rank's go
 * first (a moment at most), so that ranks held back by the PFS move on
 * together.
 */
nopfs_status source_copy(struct source *source, nopfs_sample_id sample, int fd, void *buffer,
                         const struct timespec *deadline, bool leading, nopfs_wire_source *from);

/*
 * Make position @position of @tier present: return at once if it is; fetch
 * it into the tier if it is absent (a replica from the node keeping its
 * primary copy first, else the PFS; using @buffer, room for the sample);
 * wait for the thread fetching it otherwise, until @deadline, and fetch it
 * here if that thread left it absent. NOPFS_ERR_TIMEOUT past the deadline;
 * the fetch's error if it failed.
 */
nopfs_status source_fill_tier(struct source *source, struct tier *tier, uint64_t position,
                              void *buffer, const struct timespec *deadline);

/*
 * Fill @position of @tier from the node keeping its primary copy, when
 * absent. false when it is absent and could not be read there (it is left
 * absent, for a later try or source_fill_tier()); true when it is now
 * present or was not absent (present, failed, or being fetched).
 */
bool source_fill_tier_from_peer(struct source *source, struct tier *tier, uint64_t position,
                                void *buffer);

/*
 * A peer asks for @sample (@size bytes), whose primary copy this node keeps
 * but may not have fetched yet: fetch it into its tier (until @deadline) and
 * copy it into @buffer. NOPFS_ERR_NOT_FOUND when this node does not keep it.
 */
nopfs_status source_fill_for_peer(struct source *source, nopfs_sample_id sample, void *buffer,
                                  uint64_t size, const struct timespec *deadline);

#endif
