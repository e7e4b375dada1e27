/* Per-rank staging windows, stager threads, consumption and requests. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"
#include "task/runtime.h"
#include "stage_internal.h"
#include "common/clock.h"

/* How often idle stagers collect ring slots released without a notification. */
#define COLLECT_INTERVAL_MS 20

/*
 * A slot of rank @r leaves the staged state: its file goes unless another
 * slot of the same rank (the next epoch) was staged with the same file.
 * True when the file's name went.
 */
static bool leave_staged(struct stage *stage, struct stage_rank *r, struct stage_slot *slot)
{
	nopfs_sample_id sample = slot->sample;

	if (slot->ring_slot) {
		/* In the API ring: give it back unless a task holds it (it will release it). */
		if (stage_ring_take_back(r->api_ring, slot->ring_slot - 1))
			r->api_ring_full = false;
		slot->ring_slot = 0;
		return false;
	}

	if (stage->staged_claims[sample] > 0)
		stage->staged_claims[sample]--;
	for (uint64_t s = 0; stage->staged_claims[sample] > 0 && s < stage->ring_size; s++) {
		const struct stage_slot *other = &r->ring[s];

		if (other != slot && other->sample == sample && other->state == SLOT_STAGED)
			return false;
	}
	stage_unlink_names(stage, r->rank, sample);
	return true;
}

/* ------------------------------------------------------------------------
 * Copies removed unopened, until the watch has read the opens queued before.
 */

struct stage_removed {
	uint32_t rank;
	nopfs_sample_id sample;
	uint64_t mark;
	uint8_t source;
};

static void count_unused(struct stage *stage, nopfs_sample_id sample)
{
	agent_count(&stage->stats->staged_unused, nopfs_catalog_size(stage->job->catalog, sample));
}

/* @slot of @r is staged but its rank moved on: its copy goes. */
static void remove_unopened(struct stage *stage, struct stage_rank *r, struct stage_slot *slot)
{
	struct stage_removed *removed;

	if (!leave_staged(stage, r, slot)) {
		count_unused(stage, slot->sample);
		return;
	}
	if (stage->removed_count == stage->removed_capacity) {
		size_t capacity = stage->removed_capacity ? 2 * stage->removed_capacity : 64;

		removed = realloc(stage->removed, capacity * sizeof(*removed));
		if (!removed) {
			count_unused(stage, slot->sample); /* an open of it will go uncounted */
			return;
		}
		stage->removed = removed;
		stage->removed_capacity = capacity;
	}
	stage->removed[stage->removed_count++] = (struct stage_removed){ .rank = r->rank,
		                                                         .sample = slot->sample,
		                                                         .mark = stage->watch_mark,
		                                                         .source = slot->source };
}

/* Take the removed copy of @sample staged for @rank; its source in *source. */
/*
 * Count a delivery from @source, by the epoch of the stream @position it
 * completed (-1: none known).
 */
static void count_delivered(struct stage *stage, enum agent_delivery how, unsigned int source,
                            uint64_t bytes, int64_t position)
{
	struct agent_stats *stats = stage->stats;

	agent_count(&stats->delivered[how][source], bytes);
	if (position < 0 || stage->job->per_rank == 0) {
		agent_count(&stats->unattributed[source], bytes);
	} else {
		uint64_t epoch = (uint64_t)position / stage->job->per_rank;

		agent_count(&stats->epoch_delivered[epoch < AGENT_EPOCH_SLOTS
		                                            ? epoch
		                                            : AGENT_EPOCH_SLOTS - 1][source],
		            bytes);
	}
}

static bool take_removed(struct stage *stage, uint32_t rank, nopfs_sample_id sample,
                         uint8_t *source)
{
	for (size_t i = 0; i < stage->removed_count; i++) {
		if (stage->removed[i].rank != rank || stage->removed[i].sample != sample)
			continue;
		*source = stage->removed[i].source;
		stage->removed[i] = stage->removed[--stage->removed_count];
		return true;
	}
	return false;
}

uint64_t stage_watch_begin(struct stage *stage)
{
	uint64_t mark;

	pthread_mutex_lock(&stage->lock);
	mark = stage->watch_mark++;
	pthread_mutex_unlock(&stage->lock);
	return mark;
}

void stage_watch_settled(struct stage *stage, uint64_t mark)
{
	pthread_mutex_lock(&stage->lock);
	for (size_t i = 0; i < stage->removed_count;) {
		if (stage->removed[i].mark > mark) {
			i++;
			continue;
		}
		count_unused(stage, stage->removed[i].sample);
		stage->removed[i] = stage->removed[--stage->removed_count];
	}
	pthread_mutex_unlock(&stage->lock);
}

/* ------------------------------------------------------------------------
 * Windows. Everything below runs with stage->lock held.
 */

static struct stage_slot *slot_of(struct stage *stage, struct stage_rank *r, uint64_t position)
{
	return &r->ring[position % stage->ring_size];
}

/*
 * The map of @epoch in the order staged; may drop and retake the lock to
 * compute it (again, if the order changed meanwhile).
 */
static const struct epoch_map *epoch_map(struct stage *stage, uint32_t epoch)
{
	for (;;) {
		const struct epoch_map *map = epoch_cache_find(&stage->epochs, epoch);
		struct nopfs_sampler sampler = stage->sampler;
		uint32_t orders = stage->orders, oldest = UINT32_MAX;
		struct epoch_map computed;

		if (map)
			return map;
		pthread_mutex_unlock(&stage->lock);
		if (epoch_map_compute(&sampler, epoch, &computed) != NOPFS_OK) {
			pthread_mutex_lock(&stage->lock);
			return NULL;
		}
		pthread_mutex_lock(&stage->lock);
		if (orders != stage->orders) {
			epoch_map_free(&computed);
			continue;
		}
		for (uint32_t i = 0; i < stage->rank_count; i++) {
			uint32_t e = (uint32_t)(stage->ranks[i].cursor / stage->job->per_rank);

			if (e < oldest)
				oldest = e;
		}
		return epoch_cache_install(&stage->epochs, &computed, oldest, oldest + 2);
	}
}

/* A slot that is no longer wanted: drop its file or let its stager drop it. */
static void abandon_slot(struct stage *stage, struct stage_rank *r, struct stage_slot *slot)
{
	if (slot->state == SLOT_STAGED)
		remove_unopened(stage, r, slot);
	if (slot->state == SLOT_STAGING)
		slot->state = SLOT_ABANDONED;
	else
		slot->state = SLOT_EMPTY;
	atomic_fetch_add(&stage->stats->stream_skipped, 1);
}

/* Move the cursor over done positions, and to @target if it is further. */
static void advance(struct stage *stage, struct stage_rank *r, uint64_t target)
{
	while (r->cursor < target) {
		struct stage_slot *slot = slot_of(stage, r, r->cursor);

		if (slot->position == r->cursor && slot->state != SLOT_DONE)
			abandon_slot(stage, r, slot);
		else if (slot->position != r->cursor || slot->state == SLOT_EMPTY)
			atomic_fetch_add(&stage->stats->stream_skipped, 1);
		if (slot->state == SLOT_DONE)
			slot->state = SLOT_EMPTY;
		r->cursor++;
	}
	/* Done, or done while still being staged (its stager drops the copy). */
	for (;;) {
		struct stage_slot *slot = slot_of(stage, r, r->cursor);

		if (r->cursor >= r->end || slot->position != r->cursor ||
		    (slot->state != SLOT_DONE && slot->state != SLOT_ABANDONED))
			break;
		if (slot->state == SLOT_DONE)
			slot->state = SLOT_EMPTY;
		r->cursor++;
	}
	if (r->next < r->cursor)
		r->next = r->cursor;
	/* Wake one stager, and only when there is something to stage. */
	if (r->next < r->end && r->next - r->cursor < stage->window && !r->api_ring_full)
		pthread_cond_signal(&stage->work);
}

/*
 * Mark position @position of rank @r done. A request (@requested: the rank is
 * known) may also move the rank on: reading a new epoch abandons the rest of
 * the previous one (a DataLoader with drop_last never reads its last batch),
 * and reading far ahead resynchronizes the window there. An open of a staged
 * file does not tell who opened it (another rank may have needed the same
 * sample), so it only marks its own position.
 */
static void complete(struct stage *stage, struct stage_rank *r, uint64_t position, bool requested)
{
	uint64_t per_rank = stage->job->per_rank;
	uint64_t epoch_start = position / per_rank * per_rank;
	struct stage_slot *slot;

	if (requested && epoch_start > r->cursor) {
		nopfs_debug("rank %" PRIu32 " read position %" PRIu64 " of the next epoch: "
		            "abandoning positions %" PRIu64 " .. %" PRIu64,
		            r->rank, position, r->cursor, epoch_start - 1);
		advance(stage, r, epoch_start);
	}
	/*
	 * Behind the cursor: the rank's window moved while this position was
	 * waited for (a stager found the rank elsewhere, or it moved on), or
	 * the new epoch's cursor went on over positions done, this one among
	 * them.
	 */
	if (position < r->cursor)
		return;
	if (position - r->cursor >= stage->ring_size) {
		struct stage_slot *stuck = slot_of(stage, r, r->cursor);

		if (!requested)
			return; /* beyond the ring: its own request will follow */
		nopfs_warning("rank %" PRIu32 " read position %" PRIu64 " while position %" PRIu64
		              " (sample %" PRIu32 ", state %d) was still pending: resynchronizing",
		              r->rank, position, r->cursor, stuck->sample, stuck->state);
		atomic_fetch_add(&stage->stats->stream_resyncs, 1);
		/* half a ring behind it: other workers' batches may still come */
		advance(stage, r, position - stage->ring_size / 2); /* > cursor: see above */
	}
	slot = slot_of(stage, r, position);
	if (slot->position == position && slot->state == SLOT_STAGING)
		slot->state = SLOT_ABANDONED; /* served another way meanwhile */
	else
		slot->state = SLOT_DONE;
	slot->position = position;
	r->last = position;
	atomic_fetch_add(&stage->stats->stream_matched, 1);
	advance(stage, r, 0);
}

/* A task released (or dropped, when it died) @r's ring copy at @position. */
static void complete_released(struct stage *stage, struct stage_rank *r, uint64_t position)
{
	struct stage_slot *slot = slot_of(stage, r, position);

	r->api_ring_full = false;
	if (slot->position != position || slot->state != SLOT_STAGED || !slot->ring_slot)
		return; /* the rank had moved on */
	r->reads++;     /* read from its ring, not asked for */
	count_delivered(stage, AGENT_DELIVERY_STAGED, slot->source,
	                nopfs_catalog_size(stage->job->catalog, slot->sample), (int64_t)position);
	slot->ring_slot = 0;
	complete(stage, r, position, true);
}

struct claim {
	struct stage_rank *rank;
	uint64_t position;
};

/*
 * Where @sample is in the current or next epoch of a local rank (@rank if
 * known) at or after its cursor: the first such position, or with @staged the
 * first whose copy is staged (an open of a staged file does not say which
 * rank opened it), in any epoch its staging has reached: a rank whose
 * cursor is held back (a position it has not opened, a request of its not
 * answered yet) opens copies up to a window past it, more than an epoch
 * away when its epochs are shorter than the window. May drop the lock.
 */
static bool find_claim(struct stage *stage, int32_t rank, nopfs_sample_id sample, bool staged,
                       struct claim *claim)
{
	const struct nopfs_sampler *sampler = &stage->sampler;
	uint64_t per_rank = stage->job->per_rank, total = nopfs_sampler_total_size(sampler);
	bool found = false;

	claim->position = UINT64_MAX;
	for (uint32_t i = 0; i < stage->rank_count; i++) {
		struct stage_rank *r = &stage->ranks[i];
		uint32_t epoch = (uint32_t)(r->cursor / per_rank);
		uint64_t last = epoch + 1; /* with @staged: the epoch of its last staged position */

		if (rank >= 0 && r->rank != (uint32_t)rank)
			continue;
		if (staged && r->next > 0 && (r->next - 1) / per_rank > last)
			last = (r->next - 1) / per_rank;
		for (uint32_t e = epoch; e <= last && e < stage->job->epochs; e++) {
			const struct epoch_map *map = epoch_map(stage, e);

			if (!map)
				continue;
			for (uint64_t p = map->inverse[sample]; p < total; p += sampler->count) {
				uint64_t position = e * per_rank + p / sampler->world_size;

				if (p % sampler->world_size != r->rank || position < r->cursor)
					continue;
				/*
				 * The next epoch only near its start: a rank reading an
				 * old sample again must not abandon its current epoch.
				 * (A staged copy is in the ring: its slot says so.)
				 */
				if (!staged && e > epoch &&
				    p / sampler->world_size >= stage->ring_size)
					continue;
				if (staged && (slot_of(stage, r, position)->position != position ||
				               slot_of(stage, r, position)->state != SLOT_STAGED))
					continue;
				if (position < claim->position) {
					claim->rank = r;
					claim->position = position;
					found = true;
				}
			}
			if (found)
				break;
		}
	}
	return found;
}

/* ------------------------------------------------------------------------
 * Stager threads.
 */

/* The rank with the least staged ahead and room in its window, or NULL. */
static struct stage_rank *pick_rank(struct stage *stage)
{
	struct stage_rank *best = NULL;

	for (uint32_t i = 0; i < stage->rank_count; i++) {
		struct stage_rank *r = &stage->ranks[i];

		if (r->next >= r->end || r->next - r->cursor >= stage->window || r->api_ring_full)
			continue;
		if (!best || r->next - r->cursor < best->next - best->cursor)
			best = r;
	}
	return best;
}

/* Complete the positions whose ring copies tasks released (or dropped by dying). */
static void collect_released(struct stage *stage, struct stage_rank *r)
{
	uint64_t position;
	uint32_t from = 0;

	while (r->api_ring && stage_ring_collect(r->api_ring, &from, &position))
		complete_released(stage, r, position);
}

/*
 * Room in @r's API ring for @sample at @position: the slot + 1 and *offset,
 * 0 for a sample staged as a file instead (empty, or bigger than the ring),
 * or -1 when the ring is full for now, after collecting what tasks released.
 */
static int64_t reserve_ring(struct stage *stage, struct stage_rank *r, nopfs_sample_id sample,
                            uint64_t position, uint64_t *offset)
{
	uint64_t size = nopfs_catalog_size(stage->job->catalog, sample);
	uint32_t slot;

	if (size == 0 || size > r->api_ring->data_bytes)
		return 0;
	/*
	 * One copy of a sample per ring at a time: a task takes whichever it
	 * finds, and must not take the next epoch's while this epoch's waits.
	 */
	for (uint64_t g = r->cursor; g < position; g++) {
		const struct stage_slot *earlier = slot_of(stage, r, g);

		if (earlier->position == g && earlier->sample == sample && earlier->ring_slot &&
		    (earlier->state == SLOT_STAGING || earlier->state == SLOT_STAGED))
			return -1;
	}
	if (stage_ring_reserve(r->api_ring, sample, size, position, &slot, offset))
		return (int64_t)slot + 1;
	collect_released(stage, r);
	if (stage_ring_reserve(r->api_ring, sample, size, position, &slot, offset))
		return (int64_t)slot + 1;
	return -1;
}

static struct stage_rank *local_rank(struct stage *stage, int32_t rank)
{
	for (uint32_t i = 0; rank >= 0 && i < stage->rank_count; i++)
		if (stage->ranks[i].rank == (uint32_t)rank)
			return &stage->ranks[i];
	return NULL;
}

/*
 * Self-synchronisation: a rank's requests off the plan (stage_request():
 * none of its positions from its cursor to the end of its ring holds the
 * sample) are kept; after miss_threshold of them a stager looks the last
 * ones up in every epoch of the rank's stream (stream_sync_search(),
 * without the lock) and, when one place clearly fits, moves the rank's
 * window there. A search that finds no clear place doubles the threshold.
 */

/* A request of @r that no position near its cursor explains. */
static void note_miss(struct stage *stage, struct stage_rank *r, nopfs_sample_id sample)
{
	if (r->miss_count < STREAM_SYNC_MISSES)
		r->misses[r->miss_count] = sample;
	else {
		memmove(r->misses, r->misses + 1, (STREAM_SYNC_MISSES - 1) * sizeof(*r->misses));
		r->misses[STREAM_SYNC_MISSES - 1] = sample;
	}
	r->miss_count++;
	r->off_plan++;
	if (r->miss_count >= r->miss_threshold && !r->syncing && !r->sync_due) {
		r->sync_due = true;
		pthread_cond_signal(&stage->work);
	}
}

/* Drop what @r's window staged, or is staging, from its cursor on. */
static void abandon_ahead(struct stage *stage, struct stage_rank *r)
{
	for (uint64_t g = r->cursor; g < r->next; g++) {
		struct stage_slot *slot = slot_of(stage, r, g);

		if (slot->position == g && slot->state != SLOT_DONE)
			abandon_slot(stage, r, slot);
	}
}

/* Move @r's window to @target, back or forth, dropping what it had staged. */
static void move_window(struct stage *stage, struct stage_rank *r, uint64_t target)
{
	if (target >= r->cursor) {
		advance(stage, r, target);
		return;
	}
	abandon_ahead(stage, r);
	/* positions done before are to be read again: forget them */
	for (uint64_t g = target; g < r->cursor && g - target < stage->ring_size; g++) {
		struct stage_slot *slot = slot_of(stage, r, g);

		if (slot->position == g && slot->state != SLOT_STAGING)
			*slot = (struct stage_slot){ .position = UINT64_MAX };
	}
	r->cursor = r->next = r->last = target;
	pthread_cond_signal(&stage->work);
}

/*
 * Where @r is in its stream by its reads (one a position), whatever its
 * window says: a window that followed another order than the rank's may
 * have been moved on by chance hits.
 */
static uint64_t read_position(const struct stage *stage, const struct stage_rank *r)
{
	uint64_t first = stage->sampler.first_index;

	return r->reads ? first + r->reads - 1 : first;
}

/*
 * Where the rank is in an order whose epochs are all alike, found at
 * @index: the position with that index nearest @reading, where its reads
 * put it (a rank that finished an epoch reads the next one from its start).
 */
static uint64_t nearest_position(const struct stage *stage, const struct stage_rank *r,
                                 uint64_t reading, uint64_t index)
{
	uint64_t per_rank = stage->job->per_rank, here = reading - reading % per_rank + index;

	if (here > reading && here - reading > per_rank / 2 && here >= per_rank)
		return here - per_rank;
	if (here < reading && reading - here > per_rank / 2 && here + per_rank < r->end)
		return here + per_rank;
	return here;
}

/*
 * Another order that the requests of a rank fit (@found, @sampler changed
 * to it) when the order staged fits them nowhere clearly (@planned: its
 * search): epoch 0's order (a script that never calls set_epoch, resumed at
 * a later epoch) or no shuffle, if it fits four times closer than any
 * epoch of the order staged. NULL if none does.
 */
static const char *other_order(struct stage *stage, const struct stage_rank *r,
                               struct nopfs_sampler *sampler, const nopfs_sample_id *misses,
                               unsigned int count, const struct stream_sync_found *planned,
                               struct stream_sync_found *found)
{
	struct {
		const char *what;
		bool same_order, shuffle;
	} tries[] = {
		{ "no set_epoch", true, true },
		{ "no shuffle", sampler->same_order, false },
	};

	if (nopfs_sampler_one_order(sampler))
		return NULL;
	for (size_t t = 0; t < sizeof(tries) / sizeof(tries[0]); t++) {
		struct nopfs_sampler other = *sampler;

		other.same_order = tries[t].same_order;
		other.shuffle = tries[t].shuffle;
		/* epoch 0's order was among those planned */
		if (other.shuffle && sampler->first_epoch == 0)
			continue;
		if (stream_sync_search(&other, 1, r->rank, misses, count, stage->ring_size / 2,
		                       &stage->stop, found) == NOPFS_OK &&
		    (planned->span == UINT64_MAX || planned->span / 4 > found->span)) {
			*sampler = other;
			return tries[t].what;
		}
	}
	return NULL;
}

/*
 * Stage from now on in the order @sampler, which @r was found to read,
 * @what it is: every local rank's window restages from its cursor (its
 * positions ahead were staged in the old order); epoch permutations of
 * the old order go.
 */
static void follow_order(struct stage *stage, const struct stage_rank *r,
                         const struct nopfs_sampler *sampler, const char *what)
{
	struct stream_diag_order event = {
		.rank = r->rank,
		.misses = r->off_plan,
		.seconds = nopfs_clock_seconds() - stage->started,
	};

	snprintf(event.what, sizeof(event.what), "%s", what);
	nopfs_info("rank %" PRIu32 " reads the samples in another order than planned (%s): "
	           "staging in that order from now on, for every rank of this node",
	           r->rank, what);
	stage->sampler = *sampler;
	stage->orders++;
	epoch_cache_fini(&stage->epochs);
	stage->epochs.sampler = &stage->sampler;
	for (uint32_t i = 0; i < stage->rank_count; i++) {
		struct stage_rank *q = &stage->ranks[i];

		abandon_ahead(stage, q);
		q->next = q->cursor;
		/* requests off the old order say nothing of the new one */
		q->miss_count = 0;
		q->sync_due = false;
	}
	stream_diag_order(&stage->diag, &event);
	pthread_cond_broadcast(&stage->work);
}

/* Look for the place of a rank with a search due; false if none was due. */
static bool sync_one(struct stage *stage)
{
	struct stage_rank *r = NULL;
	nopfs_sample_id misses[STREAM_SYNC_MISSES];
	struct stream_sync_found found, planned;
	struct nopfs_sampler sampler = stage->sampler;
	uint32_t orders = stage->orders;
	uint64_t reading, target;
	const char *order = NULL;
	unsigned int count;
	nopfs_status status;

	for (uint32_t i = 0; i < stage->rank_count && !r; i++)
		if (stage->ranks[i].sync_due)
			r = &stage->ranks[i];
	if (!r)
		return false;
	r->sync_due = false;
	r->syncing = true;
	reading = read_position(stage, r);
	count = r->miss_count < STREAM_SYNC_MISSES ? r->miss_count : STREAM_SYNC_MISSES;
	memcpy(misses, r->misses, count * sizeof(*misses));
	pthread_mutex_unlock(&stage->lock);
	status = stream_sync_search(
	        &sampler, nopfs_sampler_one_order(&sampler) ? 1 : stage->job->epochs, r->rank,
	        misses, count, stage->ring_size / 2, &stage->stop, &found);
	planned = found;
	if (status == NOPFS_OK && !nopfs_sampler_one_order(&sampler) && sampler.first_epoch == 0 &&
	    found.epoch == 0 && reading >= stage->job->per_rank) {
		/* back at epoch 0's order after its epoch 0: it never calls set_epoch */
		sampler.same_order = true;
		order = "no set_epoch";
	} else if (status == NOPFS_ERR_NOT_FOUND) {
		order = other_order(stage, r, &sampler, misses, count, &planned, &found);
		if (order)
			status = NOPFS_OK;
	}
	pthread_mutex_lock(&stage->lock);
	r->syncing = false;
	r->miss_count = 0;
	if (orders != stage->orders)
		return true; /* another rank's requests changed the order meanwhile: look again */
	if (status != NOPFS_OK) {
		/* not clear yet: wait for more of them before looking again */
		if (r->miss_threshold < STREAM_SYNC_MISSES_MAX)
			r->miss_threshold *= 2;
		nopfs_debug("rank %" PRIu32 ": its last %u requests off the plan fit no place of "
		            "its stream clearly (spans %" PRIu64 " and %" PRIu64
		            "); next look after %" PRIu32 " more",
		            r->rank, count, planned.span, planned.second_span, r->miss_threshold);
		return true;
	}
	if (order)
		follow_order(stage, r, &sampler, order);
	target = nopfs_sampler_one_order(&sampler)
	                 ? nearest_position(stage, r, read_position(stage, r), found.first)
	                 : found.epoch * stage->job->per_rank + found.first;
	{
		uint32_t epoch = (uint32_t)(target / stage->job->per_rank);
		struct stream_diag_sync event = {
			.rank = r->rank,
			.epoch = stage->sampler.first_epoch + epoch,
			.index = found.first,
			.misses = r->off_plan,
			.seconds = nopfs_clock_seconds() - stage->started,
			.positions = (int64_t)(target - r->cursor),
		};

		nopfs_info("rank %" PRIu32 " reads the script's epoch %" PRIu32
		           " from index %" PRIu64
		           " of its stream, not where it was planned (position %" PRIu64
		           "): following it there after %" PRIu64 " requests off the plan",
		           r->rank, event.epoch, found.first, r->cursor, r->off_plan);
		move_window(stage, r, target);
		/* the requests it was found by are served: their positions are done */
		for (unsigned int i = 0; i < count; i++) {
			uint64_t position = target - found.first + found.index[i];

			if (found.index[i] != UINT64_MAX && position >= r->cursor &&
			    position - r->cursor < stage->ring_size)
				complete(stage, r, position, false);
		}
		r->off_plan = 0;
		r->miss_threshold = STREAM_SYNC_MISSES;
		stream_diag_synced(&stage->diag, &event);
	}
	return true;
}

/* Claim the next position of a rank to stage: its slot, in STAGING state. */
static bool next_job(struct stage *stage, struct stage_rank **rank, struct stage_slot **out,
                     uint64_t *position, uint64_t *ring_offset)
{
	const struct nopfs_sampler *sampler = &stage->sampler;

	while (!atomic_load(&stage->stop)) {
		struct stage_rank *r;
		const struct epoch_map *map;
		struct stage_slot *slot;
		int64_t ring_slot;
		nopfs_sample_id sample;
		uint64_t g;

		if (sync_one(stage))
			continue;
		r = pick_rank(stage);

		if (!r) {
			struct timespec deadline =
			        nopfs_clock_deadline_after_ms(COLLECT_INTERVAL_MS);

			pthread_cond_timedwait(&stage->work, &stage->lock, &deadline);
			for (uint32_t i = 0; i < stage->rank_count; i++)
				collect_released(stage, &stage->ranks[i]);
			continue;
		}
		g = r->next;
		map = epoch_map(stage, (uint32_t)(g / stage->job->per_rank));
		if (!map)
			return false;
		if (r->next != g || pick_rank(stage) == NULL)
			continue; /* things moved while the map was computed */
		slot = slot_of(stage, r, g);
		if (slot->position == g && slot->state == SLOT_DONE) {
			r->next++;
			continue; /* served before it was staged */
		}
		sample = epoch_map_sample(
		        sampler, map, r->rank + (g % stage->job->per_rank) * sampler->world_size);
		if (!job_serves(stage->job, sample)) { /* the rank reads it from the PFS */
			r->next++;
			*slot = (struct stage_slot){ .position = g,
				                     .sample = sample,
				                     .state = SLOT_FAILED };
			continue;
		}
		ring_slot = r->api_ring ? reserve_ring(stage, r, sample, g, ring_offset) : 0;
		if (ring_slot < 0) {
			r->api_ring_full = true; /* until a task releases a slot */
			continue;
		}
		r->next++;
		*slot = (struct stage_slot){
			.position = g,
			.sample = sample,
			.state = SLOT_STAGING,
			.ring_slot = (uint32_t)ring_slot,
			.claim = ++stage->claims,
		};
		*rank = r;
		*out = slot;
		*position = g;
		return true;
	}
	return false;
}

/*
 * Stage @slot's sample into @r's API ring at @offset (reserved): written
 * without the lock, published READY with it. Called and returns locked.
 */
static void stage_ring_into(struct stage *stage, struct stage_rank *r, struct stage_slot *slot,
                            uint64_t position, uint64_t offset)
{
	nopfs_sample_id sample = slot->sample;
	uint32_t ring_slot = slot->ring_slot - 1, claim = slot->claim;
	struct stage_ring *ring = r->api_ring;
	nopfs_wire_source source = NOPFS_FROM_PFS;
	nopfs_status status;

	pthread_mutex_unlock(&stage->lock);
	status = stage_fill_memory(stage, sample, stage_ring_data(ring, offset), &source);
	pthread_mutex_lock(&stage->lock);
	if (status == NOPFS_OK && slot->claim == claim && slot->state == SLOT_STAGING) {
		stage_ring_publish(ring, ring_slot,
		                   nopfs_catalog_label(stage->job->catalog, sample), source);
		agent_count(&stage->stats->staged, nopfs_catalog_size(stage->job->catalog, sample));
		slot->state = SLOT_STAGED;
		slot->source = (uint8_t)source;
	} else {
		stage_ring_cancel(ring, ring_slot);
		r->api_ring_full = false;
		if (slot->claim == claim)
			slot->state = status == NOPFS_OK ? SLOT_EMPTY : SLOT_FAILED;
	}
	pthread_cond_broadcast(&stage->ready);
}

static void *stager_main(void *arg)
{
	struct stage_worker *worker = arg;
	struct stage *stage = worker->stage;
	struct stage_rank *r;
	struct stage_slot *slot;
	uint64_t position, ring_offset = 0;

	pthread_mutex_lock(&stage->lock);
	while (next_job(stage, &r, &slot, &position, &ring_offset)) {
		nopfs_sample_id sample = slot->sample;
		uint32_t claim = slot->claim;
		nopfs_wire_source source = NOPFS_FROM_PFS;
		char temporary[64];
		nopfs_status status;

		if (slot->ring_slot) {
			stage_ring_into(stage, r, slot, position, ring_offset);
			continue;
		}
		snprintf(temporary, sizeof(temporary), ".w%u.%" PRIu32, worker->id, sample);
		pthread_mutex_unlock(&stage->lock);
		status = stage_write_temporary(stage, worker, sample, temporary, &source);
		pthread_mutex_lock(&stage->lock);
		if (slot->claim == claim && slot->state == SLOT_STAGING) {
			if (status == NOPFS_OK)
				status = stage_publish(stage, r->rank, sample, temporary);
			if (status == NOPFS_OK && stage->staged_claims[sample] < UINT8_MAX)
				stage->staged_claims[sample]++;
			slot->state = status == NOPFS_OK ? SLOT_STAGED : SLOT_FAILED;
			slot->source = (uint8_t)source;
		} else {
			/* Abandoned, or its slot already reused: nobody wants this copy. */
			if (status == NOPFS_OK)
				unlinkat(stage->directory_fd, temporary, 0);
			if (slot->claim == claim)
				slot->state = SLOT_EMPTY;
		}
		pthread_cond_broadcast(&stage->ready);
	}
	pthread_mutex_unlock(&stage->lock);
	return NULL;
}

/* ------------------------------------------------------------------------
 * Consumption (a task opened a staged file) and requests.
 */

/* The sample and rank a staged name stands for; false for other names. */
static bool sample_of_name(struct stage *stage, const char *name, uint32_t *rank,
                           nopfs_sample_id *sample)
{
	char relative[4096];
	uint64_t index;
	int64_t found;

	switch (nopfs_stage_name_parse(name, rank, &index, relative, sizeof(relative))) {
	case 'i':
		found = index < stage->job->sampler.count ? (int64_t)index : -1;
		break;
	case 'p':
		found = nopfs_catalog_find(stage->job->catalog, relative);
		break;
	default:
		return false;
	}
	if (found < 0)
		return false;
	*sample = (nopfs_sample_id)found; /* below the sample count */
	return true;
}

void stage_opened(struct stage *stage, const char *name)
{
	struct stage_rank *reader;
	uint32_t rank = 0;
	nopfs_sample_id sample;
	struct claim claim;
	uint8_t source;

	if (!sample_of_name(stage, name, &rank, &sample) || rank > INT32_MAX)
		return;
	pthread_mutex_lock(&stage->lock);
	reader = local_rank(stage, (int32_t)rank);
	if (reader)
		reader->reads++;
	/*
	 * A copy removed since is the one opened (a copy staged again under the
	 * same name stays until its own open).
	 */
	if (take_removed(stage, rank, sample, &source)) {
		count_delivered(stage, AGENT_DELIVERY_STAGED, source,
		                nopfs_catalog_size(stage->job->catalog, sample), -1);
	} else if (find_claim(stage, (int32_t)rank, sample, true, &claim)) {
		struct stage_slot *slot = slot_of(stage, claim.rank, claim.position);

		count_delivered(stage, AGENT_DELIVERY_STAGED, slot->source,
		                nopfs_catalog_size(stage->job->catalog, sample),
		                (int64_t)claim.position);
		leave_staged(stage, claim.rank, slot);
		complete(stage, claim.rank, claim.position, false);
	}
	pthread_mutex_unlock(&stage->lock);
}

/*
 * Whether @r is more than a sixteenth of a window ahead of another local
 * rank that has not finished: its reads of the PFS let that rank's go first
 * (source_copy()). Where the PFS holds the ranks back, the one it serves
 * first would otherwise stay ahead, and an epoch takes what its slowest
 * rank takes. Call locked.
 */
static bool leads(const struct stage *stage, const struct stage_rank *r)
{
	for (uint32_t i = 0; i < stage->rank_count; i++) {
		const struct stage_rank *other = &stage->ranks[i];

		if (other != r && other->cursor < other->end &&
		    r->cursor > other->cursor + stage->window / 16)
			return true;
	}
	return false;
}

nopfs_status stage_request(struct stage *stage, int32_t rank, nopfs_sample_id sample, void *buffer,
                           unsigned int timeout_ms, int *fd, nopfs_wire_source *source)
{
	struct timespec deadline =
	        nopfs_clock_deadline_after_ms(timeout_ms ? timeout_ms : stage->serve_timeout_ms);
	struct stage_rank *asker; /* a local rank, or NULL */
	uint64_t size;
	struct claim claim;
	bool claimed, leading;

	if (sample >= stage->job->sampler.count)
		return NOPFS_ERR_RANGE;
	size = nopfs_catalog_size(stage->job->catalog, sample);
	pthread_mutex_lock(&stage->lock);
	asker = local_rank(stage, rank);
	if (asker)
		asker->reads++;
	/*
	 * A known rank's request never completes another rank's position. Its
	 * sample found beyond the rank's window, and far from where the rank
	 * last read, is no evidence that the rank is there (any sample is
	 * somewhere in each rank's stream, 1 in W of them in this rank's): such
	 * a request counts as off the plan, and a run of them has the rank's
	 * place looked for (sync_one()). Near where it last read, the rank
	 * went on past a position never asked for: complete() moves on.
	 */
	claimed = find_claim(stage, rank, sample, false, &claim);
	if (claimed && rank >= 0 && claim.position - claim.rank->cursor >= stage->ring_size &&
	    (claim.position > claim.rank->last
	             ? claim.position - claim.rank->last
	             : claim.rank->last - claim.position) >= stage->ring_size)
		claimed = false;
	if (claimed) {
		struct stage_slot *slot = slot_of(stage, claim.rank, claim.position);

		/* Being staged: wait for it rather than read it twice, and say so. */
		if (slot->position == claim.position && slot->state == SLOT_STAGING) {
			int entry = source_want(stage->source, sample);

			while (slot->position == claim.position && slot->state == SLOT_STAGING &&
			       !atomic_load(&stage->stop))
				if (pthread_cond_timedwait(&stage->ready, &stage->lock,
				                           &deadline) == ETIMEDOUT)
					break;
			source_unwant(stage->source, entry);
		}
		if (slot->position == claim.position && slot->state == SLOT_STAGED) {
			int staged = stage_open_staged(stage, claim.rank->rank, sample);

			if (staged >= 0) {
				*fd = staged;
				*source = NOPFS_FROM_STAGING;
				count_delivered(stage, AGENT_DELIVERY_REQUESTED, NOPFS_FROM_STAGING,
				                size, (int64_t)claim.position);
				leave_staged(stage, claim.rank, slot);
				complete(stage, claim.rank, claim.position, true);
				pthread_mutex_unlock(&stage->lock);
				return NOPFS_OK;
			}
			/* In the API ring but asked for: served below, the ring copy goes. */
			leave_staged(stage, claim.rank, slot);
		}
		complete(stage, claim.rank, claim.position, true);
	} else {
		bool finished = true;

		for (uint32_t i = 0; i < stage->rank_count; i++)
			finished &= stage->ranks[i].cursor >= stage->ranks[i].end;
		if (finished) {
			atomic_fetch_add(&stage->stats->beyond_epochs, 1);
		} else {
			stream_diag_record(&stage->diag, rank, sample);
			if (asker)
				note_miss(stage, asker, sample);
		}
		atomic_fetch_add(&stage->stats->stream_mismatched, !finished);
	}
	leading = asker && leads(stage, asker);
	pthread_mutex_unlock(&stage->lock);

	{
		nopfs_status status =
		        stage_serve_copy(stage, sample, buffer, &deadline, leading, fd, source);

		if (status == NOPFS_OK)
			count_delivered(stage, AGENT_DELIVERY_REQUESTED, *source, size,
			                claimed ? (int64_t)claim.position : -1);
		return status;
	}
}

/* ------------------------------------------------------------------------
 * The C API's rings.
 */

/*
 * Restage what @r has staged ahead as files, now that its samples go to a
 * ring: the files go (or their stagers drop them) and staging restarts at
 * the cursor.
 */
static void restage_window(struct stage *stage, struct stage_rank *r)
{
	for (uint64_t g = r->cursor; g < r->next; g++) {
		struct stage_slot *slot = slot_of(stage, r, g);

		if (slot->position != g)
			continue;
		if (slot->state == SLOT_STAGED) {
			remove_unopened(stage, r, slot);
			slot->state = SLOT_EMPTY;
		} else if (slot->state == SLOT_STAGING) {
			slot->state = SLOT_ABANDONED;
		} else if (slot->state == SLOT_FAILED) {
			slot->state = SLOT_EMPTY;
		}
	}
	r->next = r->cursor;
	while (r->next < r->end && slot_of(stage, r, r->next)->position == r->next &&
	       slot_of(stage, r, r->next)->state == SLOT_DONE)
		r->next++;
}

nopfs_status stage_attach_ring(struct stage *stage, int32_t rank, int *fd, uint32_t *slots,
                               uint64_t *bytes)
{
	const struct job *job = stage->job;
	struct stage_rank *r;
	nopfs_status status = NOPFS_OK;

	pthread_mutex_lock(&stage->lock);
	r = local_rank(stage, rank);
	if (!r) {
		pthread_mutex_unlock(&stage->lock);
		return NOPFS_ERR_RANGE;
	}
	if (!r->api_ring) {
		/* Room for a window of average samples twice over, and a few of the largest. */
		uint64_t mean = job->dataset_bytes / job->sampler.count + 1;
		uint64_t data = 2 * (uint64_t)stage->window * mean;

		if (data < 4 * job->max_sample_size)
			data = 4 * job->max_sample_size;
		r->api_ring = calloc(1, sizeof(*r->api_ring));
		status = r->api_ring ? stage_ring_create(r->api_ring, stage->directory, r->rank,
		                                         (uint32_t)stage->ring_size, data)
		                     : NOPFS_ERR_NOMEM;
		if (status != NOPFS_OK) {
			free(r->api_ring);
			r->api_ring = NULL;
		} else {
			restage_window(stage, r);
		}
	}
	if (status == NOPFS_OK) {
		*fd = dup(r->api_ring->fd);
		*slots = r->api_ring->slot_count;
		*bytes = r->api_ring->bytes;
		if (*fd < 0)
			status = NOPFS_ERR_IO;
	}
	pthread_cond_broadcast(&stage->work);
	pthread_mutex_unlock(&stage->lock);
	return status;
}

void stage_ring_released_by(struct stage *stage, int32_t rank, uint32_t slot, uint64_t index)
{
	struct stage_rank *r;
	uint64_t position;

	pthread_mutex_lock(&stage->lock);
	r = local_rank(stage, rank);
	if (r && r->api_ring) {
		/* An index past any sample id holds no slot. */
		if (index <= NOPFS_SAMPLE_ID_MAX &&
		    stage_ring_released(r->api_ring, slot, (nopfs_sample_id)index, &position))
			complete_released(stage, r, position);
		collect_released(stage, r);
		pthread_cond_broadcast(&stage->work);
	}
	pthread_mutex_unlock(&stage->lock);
}

/* ------------------------------------------------------------------------
 * Set-up, the API's index file, teardown.
 */

nopfs_status stage_init(struct stage *stage, const struct job *job, struct source *source,
                        struct agent_stats *stats, const char *directory, uint32_t window,
                        unsigned int serve_timeout_ms)
{
	memset(stage, 0, sizeof(*stage));
	stage->job = job;
	stage->source = source;
	stage->stats = stats;
	stage->window = window;
	stage->ring_size = 2 * (uint64_t)window;
	stage->serve_timeout_ms = serve_timeout_ms;
	stage->sampler = job->sampler;
	stage->epochs.sampler = &stage->sampler;
	snprintf(stage->directory, sizeof(stage->directory), "%s", directory);
	pthread_mutex_init(&stage->lock, NULL);
	nopfs_clock_cond_init(&stage->work);
	nopfs_clock_cond_init(&stage->ready);
	stream_diag_init(&stage->diag);
	stage->directory_fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (stage->directory_fd < 0) {
		nopfs_error("stage directory '%s': %m", directory);
		return nopfs_status_from_errno(errno);
	}
	stage->started = nopfs_clock_seconds();
	stage->rank_count = job->local_rank_count;
	stage->ranks = calloc(stage->rank_count, sizeof(*stage->ranks));
	stage->staged_claims = calloc(job->sampler.count, sizeof(*stage->staged_claims));
	if (!stage->ranks || !stage->staged_claims) {
		nopfs_error("no memory for %" PRIu32 " staging windows", stage->rank_count);
		return NOPFS_ERR_NOMEM;
	}
	for (uint32_t i = 0; i < stage->rank_count; i++) {
		struct stage_rank *r = &stage->ranks[i];

		r->rank = job->local_ranks[i];
		/* a resume within an epoch starts past the indices already read */
		r->cursor = r->next = r->last = job->sampler.first_index;
		r->miss_threshold = STREAM_SYNC_MISSES;
		r->end = (uint64_t)job->epochs * job->per_rank;
		r->ring = calloc(stage->ring_size, sizeof(*r->ring));
		if (!r->ring) {
			nopfs_error("no memory for the staging window of rank %" PRIu32, r->rank);
			return NOPFS_ERR_NOMEM;
		}
		for (uint64_t s = 0; s < stage->ring_size; s++)
			r->ring[s].position = UINT64_MAX;
	}
	return stage_publish_index(stage);
}

nopfs_status stage_start(struct stage *stage, unsigned int threads)
{
	stage->workers = calloc(threads, sizeof(*stage->workers));
	if (!stage->workers) {
		nopfs_error("no memory for %u stagers", threads);
		return NOPFS_ERR_NOMEM;
	}
	stage->worker_count = threads;
	for (unsigned int i = 0; i < threads; i++) {
		struct stage_worker *worker = &stage->workers[i];

		worker->stage = stage;
		worker->id = i;
		worker->buffer =
		        malloc(stage->job->max_sample_size ? stage->job->max_sample_size : 1);
		if (!worker->buffer) {
			nopfs_error("no memory for a %" PRIu64 "-byte staging buffer",
			            stage->job->max_sample_size);
			return NOPFS_ERR_NOMEM;
		}
		worker->started = pthread_create(&worker->thread, NULL, stager_main, worker) == 0;
		if (!worker->started) {
			nopfs_error("cannot start stager %u", i);
			return NOPFS_ERR_NOMEM;
		}
	}
	return NOPFS_OK;
}

void stage_shutdown(struct stage *stage)
{
	atomic_store(&stage->stop, true);
	pthread_mutex_lock(&stage->lock);
	pthread_cond_broadcast(&stage->work);
	pthread_cond_broadcast(&stage->ready);
	pthread_mutex_unlock(&stage->lock);
	tier_wake_all(stage->source->tiers);
}

void stage_fini(struct stage *stage)
{
	stage_shutdown(stage);
	for (unsigned int i = 0; i < stage->worker_count; i++) {
		if (stage->workers[i].started)
			pthread_join(stage->workers[i].thread, NULL);
		free(stage->workers[i].buffer);
	}
	free(stage->workers);
	for (uint32_t i = 0; i < stage->rank_count; i++) {
		for (uint64_t s = 0; stage->ranks[i].ring && s < stage->ring_size; s++) {
			struct stage_slot *slot = &stage->ranks[i].ring[s];

			if (slot->state != SLOT_STAGED)
				continue;
			leave_staged(stage, &stage->ranks[i], slot);
			count_unused(stage, slot->sample);
		}
		free(stage->ranks[i].ring);
		if (stage->ranks[i].api_ring) {
			stage_ring_destroy(stage->ranks[i].api_ring);
			free(stage->ranks[i].api_ring);
		}
	}
	stage_watch_settled(stage, UINT64_MAX);
	free(stage->removed);
	free(stage->ranks);
	free(stage->staged_claims);
	epoch_cache_fini(&stage->epochs);
	if (stage->directory_fd >= 0) {
		unlinkat(stage->directory_fd, NOPFS_STAGE_INDEX_NAME, 0);
		close(stage->directory_fd);
	}
	stream_diag_fini(&stage->diag);
	pthread_cond_destroy(&stage->ready);
	pthread_cond_destroy(&stage->work);
	pthread_mutex_destroy(&stage->lock);
	stage->directory_fd = -1;
}

void stage_count_stall(struct stage *stage, int32_t rank, uint64_t ns)
{
	pthread_mutex_lock(&stage->lock);
	for (uint32_t i = 0; rank >= 0 && i < stage->rank_count; i++)
		if (stage->ranks[i].rank == (uint32_t)rank)
			atomic_fetch_add_explicit(
			        &stage->ranks[i].stall_buckets[agent_stall_bucket(ns)], 1,
			        memory_order_relaxed);
	pthread_mutex_unlock(&stage->lock);
}

json_t *stage_progress_json(struct stage *stage)
{
	json_t *ranks = json_array();

	pthread_mutex_lock(&stage->lock);
	for (uint32_t i = 0; i < stage->rank_count; i++) {
		const struct stage_rank *r = &stage->ranks[i];
		uint64_t requests = 0;

		for (unsigned int b = 0; b < AGENT_STALL_BUCKETS; b++)
			requests +=
			        atomic_load_explicit(&r->stall_buckets[b], memory_order_relaxed);
		json_array_append_new(
		        ranks, json_pack("{s:I, s:I, s:I, s:I, s:I, s:f, s:f}", "rank",
		                         (json_int_t)r->rank, "epoch",
		                         (json_int_t)(r->cursor / stage->job->per_rank), "position",
		                         (json_int_t)(r->cursor % stage->job->per_rank),
		                         "staged_ahead", (json_int_t)(r->next - r->cursor),
		                         "requests", (json_int_t)requests, "stall_p50_seconds",
		                         agent_stall_percentile(r->stall_buckets, 0.5),
		                         "stall_p99_seconds",
		                         agent_stall_percentile(r->stall_buckets, 0.99)));
	}
	pthread_mutex_unlock(&stage->lock);
	return ranks;
}

void stage_order(struct stage *stage, struct nopfs_sampler *sampler)
{
	pthread_mutex_lock(&stage->lock);
	*sampler = stage->sampler;
	pthread_mutex_unlock(&stage->lock);
}
