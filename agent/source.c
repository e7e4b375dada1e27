/* The sample-source ladder: the node's tiers, then a peer, then the PFS. */
#include <stdatomic.h>

#include <inttypes.h>
#include <stdlib.h>

#include "pfs.h"
#include "source.h"
#include "common/crc32c.h"
#include "common/fdio.h"
#include "common/log.h"

/* Where a copy came from, for messages (indexed by nopfs_wire_source). */
static const char *const from_names[] = { "staging", "the node's RAM tier", "the node's SSD tier",
	                                  "another node", "the PFS" };

/* Where a tier's sample was fetched from by the call that made it present. */
enum fetch { FETCH_NONE, FETCH_PFS, FETCH_PEER, FETCH_KEPT };

/*
 * Who waits for a fetch: a rank's request or a peer (now, with a deadline),
 * the request of a rank well ahead of another rank of the node (now, but
 * after theirs), a tier's prefetcher (later), a stager copying ahead of the
 * need (ahead).
 */
enum need { NEED_NOW, NEED_NOW_LEADING, NEED_LATER, NEED_AHEAD };

/* How long a read for later waits while reads someone waits for have the PFS. */
#define DEMAND_FIRST_MAX_MS 1000
/* How long a leading rank's read waits while the other ranks' reads have the PFS. */
#define LEAD_YIELD_MAX_MS 100
#define DEMAND_POLL_MS    2

/* Whether someone waits for a fetch of @need. */
static bool waited_for(enum need need)
{
	return need == NEED_NOW || need == NEED_NOW_LEADING;
}

void source_init(struct source *source, const struct job *job, struct tier_set *tiers,
                 struct agent_stats *stats)
{
	*source = (struct source){ .job = job, .tiers = tiers, .stats = stats };
}

void source_use_keep(struct source *source, struct keep *keep)
{
	source->keep = keep;
}

void source_use_peer(struct source *source, source_peer_read_fn *read, void *arg)
{
	source->peer_read = read;
	source->peer_arg = arg;
}

nopfs_status source_verify(struct source *source, bool on)
{
	uint64_t count = on ? source->job->sampler.count : 0;

	free(source->sums);
	source->sums = NULL;
	source->sum_count = 0;
	if (!on)
		return NOPFS_OK;
	source->sums = calloc(count, sizeof(*source->sums));
	if (!source->sums) {
		nopfs_error("no memory to record the checksums of %" PRIu64
		            " samples: copies are not verified",
		            count);
		return NOPFS_ERR_NOMEM;
	}
	source->sum_count = count;
	return NOPFS_OK;
}

void source_fini(struct source *source)
{
	free(source->sums);
	source->sums = NULL;
	source->sum_count = 0;
}

/* With --verify: remember the CRC32C of @sample's bytes read from the PFS (the reference). */
static void record_sum(struct source *source, nopfs_sample_id sample, const void *buffer)
{
	if (source->sums && sample < source->sum_count) {
		uint64_t size = nopfs_catalog_size(source->job->catalog, sample);

		atomic_store(&source->sums[sample], (1ull << 32) | nopfs_crc32c(buffer, size));
		agent_count(&source->stats->verify_recorded, size);
	}
}

/*
 * With --verify: whether the copy of @sample in @buffer, from @from, has the
 * bytes recorded at its first read (recorded now if none was). A copy that
 * differs is counted and must not be served.
 */
static bool check_sum(struct source *source, nopfs_sample_id sample, const void *buffer,
                      nopfs_wire_source from)
{
	uint64_t size, known;
	uint32_t sum;

	if (!source->sums || sample >= source->sum_count)
		return true;
	size = nopfs_catalog_size(source->job->catalog, sample);
	sum = nopfs_crc32c(buffer, size);
	known = atomic_load(&source->sums[sample]);
	if (!(known >> 32)) {
		uint64_t expected = 0;

		if (atomic_compare_exchange_strong(&source->sums[sample], &expected,
		                                   (1ull << 32) | sum)) {
			agent_count(&source->stats->verify_recorded, size);
			return true;
		}
		known = expected;
	}
	if ((uint32_t)known == sum) {
		agent_count(&source->stats->verified, size);
		return true;
	}
	if (atomic_fetch_add(&source->stats->verify_mismatched[from].count, 1) < 10) {
		char path[4096] = "";

		pfs_sample_path(source->job->catalog, sample, path, sizeof(path));
		nopfs_warning("sample '%s': the copy from %s has CRC32C %08" PRIx32
		              ", not the %08" PRIx32 " of its first read: not served, the PFS "
		              "is read again",
		              path, from_names[from], sum, (uint32_t)known);
	}
	atomic_fetch_add(&source->stats->verify_mismatched[from].bytes, size);
	return false;
}

/* pfs_read_sample(), the bytes recorded as the reference with --verify. */
static nopfs_status read_pfs(struct source *source, nopfs_sample_id sample, void *buffer)
{
	nopfs_status status = pfs_read_sample(source->job->catalog, sample, buffer, source->stats);

	if (status == NOPFS_OK)
		record_sum(source, sample, buffer);
	return status;
}

int source_want(struct source *source, nopfs_sample_id sample)
{
	for (int i = 0; i < SOURCE_WANTED_MAX; i++) {
		uint64_t free_entry = 0;

		if (atomic_compare_exchange_strong(&source->wanted[i], &free_entry,
		                                   (uint64_t)sample + 1))
			return i;
	}
	return -1;
}

void source_unwant(struct source *source, int entry)
{
	if (entry >= 0 && entry < SOURCE_WANTED_MAX)
		atomic_store(&source->wanted[entry], 0);
}

/* Whether a request waits for @sample (source_want()). */
static bool wanted(struct source *source, nopfs_sample_id sample)
{
	for (int i = 0; i < SOURCE_WANTED_MAX; i++)
		if (atomic_load(&source->wanted[i]) == (uint64_t)sample + 1)
			return true;
	return false;
}

/* Sleep while *@count > 0: at most @max_ms, and not once a request wants @sample. */
static void yield_to(struct source *source, atomic_uint *count, int max_ms, nopfs_sample_id sample)
{
	const struct timespec poll = { 0, DEMAND_POLL_MS * 1000000L };

	for (int waited = 0; atomic_load(count) > 0 && waited < max_ms && !wanted(source, sample);
	     waited += DEMAND_POLL_MS)
		nanosleep(&poll, NULL);
}

/*
 * read_pfs() for a fetch of @need. One someone waits for is counted while it
 * reads (and, unless it is a leading rank's, counted as first). A leading
 * rank's read first lets the other ranks' have the node's share of the PFS
 * (at most LEAD_YIELD_MAX_MS: ranks that read at the PFS's pace move on
 * together). One for later first lets all those go (at most
 * DEMAND_FIRST_MAX_MS: prefetch still moves on under steady demand), unless
 * a request has come to wait for it meanwhile.
 */
static nopfs_status read_pfs_for(struct source *source, nopfs_sample_id sample, void *buffer,
                                 enum need need)
{
	bool first = need != NEED_NOW_LEADING;
	nopfs_status status;

	if (!waited_for(need)) {
		yield_to(source, &source->demand_reads, DEMAND_FIRST_MAX_MS, sample);
		if (!wanted(source, sample))
			return read_pfs(source, sample, buffer);
	} else if (!first) {
		yield_to(source, &source->first_reads, LEAD_YIELD_MAX_MS, sample);
	}
	atomic_fetch_add(&source->demand_reads, 1);
	if (first)
		atomic_fetch_add(&source->first_reads, 1);
	status = read_pfs(source, sample, buffer);
	if (first)
		atomic_fetch_sub(&source->first_reads, 1);
	atomic_fetch_sub(&source->demand_reads, 1);
	return status;
}

/* Whether an earlier job kept @sample here, and its bytes are right (and, with --verify, known). */
static bool read_kept(struct source *source, nopfs_sample_id sample, void *buffer)
{
	return source->keep &&
	       keep_read(source->keep, sample, buffer,
	                 nopfs_catalog_size(source->job->catalog, sample)) &&
	       check_sum(source, sample, buffer, NOPFS_FROM_SSD);
}

/* Whether the node keeping @sample's primary copy gave its bytes (and, with --verify, right ones).
 */
static bool read_peer(struct source *source, nopfs_sample_id sample, void *buffer)
{
	return source->peer_read && source->peer_read(source->peer_arg, sample, buffer) &&
	       check_sum(source, sample, buffer, NOPFS_FROM_PEER);
}

/*
 * Store @buffer at claimed @position when @status is NOPFS_OK and publish
 * the outcome (@on_error when it failed).
 */
static nopfs_status store_claimed(struct source *source, struct tier *tier, uint64_t position,
                                  nopfs_status status, const void *buffer, enum tier_state on_error)
{
	if (status == NOPFS_OK)
		status = tier_store(tier, position, buffer);
	tier_publish(tier, position, status == NOPFS_OK ? TIER_PRESENT : on_error);
	if (status == NOPFS_OK) {
		agent_count(&source->stats->tier_filled[tier->index],
		            tier->offsets[position + 1] - tier->offsets[position]);
		if (source->keep)
			keep_note(source->keep, tier, position, buffer);
	}
	return status;
}

/*
 * Fetch claimed @position of @tier for @need; *fetched says from where. A
 * copy staged ahead of its need: a replica whose holder cannot give it now
 * is left absent (NOPFS_ERR_AGAIN) rather than read from the PFS a second time.
 */
static nopfs_status fetch_claimed(struct source *source, struct tier *tier, uint64_t position,
                                  void *buffer, enum need need, enum fetch *fetched)
{
	nopfs_sample_id sample = tier->samples[position];
	enum fetch from = FETCH_PFS;
	nopfs_status status;

	/* What an earlier job kept here first; a replica's primary copy is on another node. */
	if (read_kept(source, sample, buffer)) {
		status = NOPFS_OK;
		from = FETCH_KEPT;
	} else if (position >= tier->primary_count && read_peer(source, sample, buffer)) {
		status = NOPFS_OK;
		from = FETCH_PEER;
	} else if (need == NEED_AHEAD && position >= tier->primary_count && source->peer_read) {
		tier_publish(tier, position, TIER_ABSENT);
		return NOPFS_ERR_AGAIN;
	} else {
		status = read_pfs_for(source, sample, buffer, need);
	}
	status = store_claimed(source, tier, position, status, buffer, TIER_FAILED);
	if (status == NOPFS_OK)
		*fetched = from;
	return status;
}

/* source_fill_tier(); *fetched tells whether and where this call fetched it. */
static nopfs_status ensure(struct source *source, struct tier *tier, uint64_t position,
                           void *buffer, const struct timespec *deadline, enum need need,
                           enum fetch *fetched)
{
	enum tier_state state;
	int entry; /* source_want()'s, while a request waits for another thread's fetch */

	*fetched = FETCH_NONE;
	for (;;) {
		if (atomic_load(&tier->state[position]) == TIER_PRESENT)
			return NOPFS_OK;
		if (tier_claim(tier, position))
			return fetch_claimed(source, tier, position, buffer, need, fetched);
		entry = waited_for(need) ? source_want(source, tier->samples[position]) : -1;
		state = tier_wait(tier, position, deadline);
		source_unwant(source, entry);
		/* Absent again: a peer fill found nothing and left it; fetch it here. */
		if (state != TIER_ABSENT)
			break;
	}
	if (state == TIER_PRESENT)
		return NOPFS_OK;
	return state == TIER_IN_FLIGHT ? NOPFS_ERR_TIMEOUT : NOPFS_ERR_IO;
}

nopfs_status source_fill_tier(struct source *source, struct tier *tier, uint64_t position,
                              void *buffer, const struct timespec *deadline)
{
	enum fetch fetched;

	return ensure(source, tier, position, buffer, deadline, deadline ? NEED_NOW : NEED_LATER,
	              &fetched);
}

bool source_fill_tier_from_peer(struct source *source, struct tier *tier, uint64_t position,
                                void *buffer)
{
	if (!source->peer_read)
		return false;
	if (!tier_claim(tier, position))
		return true; /* present, failed, or someone else is fetching it */
	if (!read_peer(source, tier->samples[position], buffer)) {
		tier_publish(tier, position, TIER_ABSENT);
		return false;
	}
	return store_claimed(source, tier, position, NOPFS_OK, buffer, TIER_ABSENT) == NOPFS_OK;
}

/* Whether another node keeps @sample's primary copy and this node can ask it. */
static bool kept_elsewhere(const struct source *source, nopfs_sample_id sample)
{
	uint32_t node;

	return source->peer_read &&
	       nopfs_placement_locate(source->job->placement, sample, &node, NULL) &&
	       node != source->job->node;
}

/* Where a copy from @tier comes from, as the wire and the report say it. */
static nopfs_wire_source tier_source(const struct tier *tier)
{
	return tier->kind == NOPFS_TIER_RAM ? NOPFS_FROM_RAM : NOPFS_FROM_SSD;
}

/* The copy is in @buffer: write its @size bytes to @fd, if there is one. */
static nopfs_status deliver(int fd, const void *buffer, uint64_t size)
{
	return fd < 0 ? NOPFS_OK : nopfs_write_all(fd, buffer, size);
}

/* Copy present @position of @tier, which this call @fetched into @buffer or found there. */
static nopfs_status copy_from_tier(struct source *source, struct tier *tier, uint64_t position,
                                   enum fetch fetched, int fd, void *buffer,
                                   nopfs_wire_source *from)
{
	uint64_t size = tier->offsets[position + 1] - tier->offsets[position];

	if (fetched != FETCH_NONE) {
		/* Help-out: the buffer already holds the bytes. */
		agent_count(&source->stats->help_out, size);
		*from = fetched == FETCH_PEER   ? NOPFS_FROM_PEER
		        : fetched == FETCH_KEPT ? NOPFS_FROM_SSD
		                                : NOPFS_FROM_PFS;
		return deliver(fd, buffer, size);
	}
	*from = tier_source(tier);
	if (source->sums) { /* checked in @buffer before it goes anywhere */
		nopfs_status status = tier_read(tier, position, buffer);

		if (status != NOPFS_OK)
			return status;
		if (!check_sum(source, tier->samples[position], buffer, *from)) {
			status = read_pfs(source, tier->samples[position], buffer);
			if (status != NOPFS_OK)
				return status;
			*from = NOPFS_FROM_PFS;
			/* the right bytes back in the tier, for the copies to come */
			tier_store(tier, position, buffer);
		}
		return deliver(fd, buffer, size);
	}
	return fd < 0 ? tier_read(tier, position, buffer) : tier_copy_to_fd(tier, position, fd);
}

nopfs_status source_copy(struct source *source, nopfs_sample_id sample, int fd, void *buffer,
                         const struct timespec *deadline, bool leading, nopfs_wire_source *from)
{
	const struct job *job = source->job;
	uint64_t size = nopfs_catalog_size(job->catalog, sample);
	int t = nopfs_placement_tier_on(job->placement, job->node, sample);
	/* a request (maybe a leading rank's), or staging */
	enum need need = !deadline ? NEED_AHEAD : leading ? NEED_NOW_LEADING : NEED_NOW;
	nopfs_status status;

	if (!job_serves(job, sample))
		return NOPFS_ERR_UNSUPPORTED; /* larger than every buffer: the rank reads it */
	if (t >= 0) {
		struct tier *tier = &source->tiers->tier[t];
		int64_t position = tier_position(tier, sample);
		enum fetch fetched = FETCH_NONE;

		status = position < 0 ? NOPFS_ERR_INTERNAL
		                      : ensure(source, tier, (uint64_t)position, buffer, deadline,
		                               need, &fetched);
		if (status == NOPFS_OK)
			return copy_from_tier(source, tier, (uint64_t)position, fetched, fd, buffer,
			                      from);
		if (status == NOPFS_ERR_TIMEOUT || status == NOPFS_ERR_AGAIN)
			return status;
		/* The tier could not get it: try the PFS directly below. */
	} else if (read_kept(source, sample, buffer)) {
		*from = NOPFS_FROM_SSD;
		return deliver(fd, buffer, size);
	} else if (read_peer(source, sample, buffer)) {
		*from = NOPFS_FROM_PEER;
		return deliver(fd, buffer, size);
	} else if (need == NEED_AHEAD && kept_elsewhere(source, sample)) {
		return NOPFS_ERR_AGAIN; /* staged ahead: its holder gives it at the request */
	}
	status = read_pfs_for(source, sample, buffer, need);
	if (status != NOPFS_OK)
		return status;
	*from = NOPFS_FROM_PFS;
	return deliver(fd, buffer, size);
}

nopfs_status source_fill_for_peer(struct source *source, nopfs_sample_id sample, void *buffer,
                                  uint64_t size, const struct timespec *deadline)
{
	const struct job *job = source->job;
	nopfs_status status;

	if (sample >= job->sampler.count || nopfs_catalog_size(job->catalog, sample) != size)
		return NOPFS_ERR_NOT_FOUND;
	for (unsigned int t = 0; t < source->tiers->count; t++) {
		struct tier *tier = &source->tiers->tier[t];
		int64_t position = tier_position(tier, sample);

		if (position < 0 || (uint64_t)position >= tier->primary_count)
			continue;
		status = source_fill_tier(source, tier, (uint64_t)position, buffer, deadline);
		if (status == NOPFS_OK)
			status = tier_read(tier, (uint64_t)position, buffer);
		/* a bad copy is not passed on: the peer reads the PFS */
		if (status == NOPFS_OK && !check_sum(source, sample, buffer, tier_source(tier)))
			status = NOPFS_ERR_IO;
		return status;
	}
	return NOPFS_ERR_NOT_FOUND;
}
