/* Tier prefetch threads. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "prefetch.h"
#include "common/clock.h"

struct prefetch_worker {
	struct prefetch *prefetch;
	struct tier *tier;
	pthread_t thread;
	bool started;
};

/* How often, and how long, replicas whose holder lacks them are tried again. */
#define RETRY_MS     50
#define RETRY_ROUNDS 100

/*
 * Try the replicas in @deferred again until their holders have them, the
 * rounds run out or the agent stops; what is left is fetched from the PFS.
 */
static void fill_deferred(struct prefetch *prefetch, struct tier *tier, uint64_t *deferred,
                          uint64_t count, void *buffer)
{
	const struct timespec pause = { 0, RETRY_MS * 1000000L };

	for (int round = 0; count > 0 && round < RETRY_ROUNDS; round++) {
		uint64_t left = 0;

		if (atomic_load(&prefetch->stop))
			return;
		nanosleep(&pause, NULL);
		for (uint64_t d = 0; d < count && !atomic_load(&prefetch->stop); d++)
			if (!source_fill_tier_from_peer(prefetch->source, tier, deferred[d],
			                                buffer))
				deferred[left++] = deferred[d];
		count = left;
	}
	for (uint64_t d = 0; d < count && !atomic_load(&prefetch->stop); d++)
		source_fill_tier(prefetch->source, tier, deferred[d], buffer, NULL);
}

/*
 * Fill the tier in its fill order (primaries first). A replica is read from
 * the node keeping its primary copy; one that node does not have yet is
 * deferred, so that the PFS is read for it only if the holder never gets it.
 */
static void *prefetch_main(void *arg)
{
	struct prefetch_worker *worker = arg;
	struct prefetch *prefetch = worker->prefetch;
	struct tier *tier = worker->tier;
	void *buffer = malloc(prefetch->buffer_size ? prefetch->buffer_size : 1);
	uint64_t replicas = tier->count - tier->primary_count, deferred_count = 0;
	uint64_t *deferred = prefetch->source->peer_read && replicas
	                             ? malloc(replicas * sizeof(*deferred))
	                             : NULL;

	if (!buffer)
		nopfs_error("prefetch: no memory for a %" PRIu64 "-byte buffer",
		            prefetch->buffer_size);
	while (buffer && !atomic_load(&prefetch->stop)) {
		uint64_t i = atomic_fetch_add(&tier->next_fill, 1), position;

		if (i >= tier->count)
			break;
		position = tier->fill_order[i];
		/* Absent: fetch; present or in flight (a stager helped out): skip. */
		if (atomic_load(&tier->state[position]) != TIER_ABSENT)
			continue;
		if (deferred && position >= tier->primary_count &&
		    !source_fill_tier_from_peer(prefetch->source, tier, position, buffer))
			deferred[deferred_count++] = position;
		else
			source_fill_tier(prefetch->source, tier, position, buffer, NULL);
	}
	if (buffer)
		fill_deferred(prefetch, tier, deferred, deferred_count, buffer);
	free(deferred);
	free(buffer);
	if (atomic_fetch_sub(&prefetch->running, 1) == 1)
		atomic_store(&prefetch->finished_ns, nopfs_clock_now_ns());
	return NULL;
}

nopfs_status prefetch_start(struct prefetch *prefetch, struct source *source, uint64_t buffer_size)
{
	struct tier_set *tiers = source->tiers;
	unsigned int total = 0, at = 0;

	memset(prefetch, 0, sizeof(*prefetch));
	prefetch->source = source;
	prefetch->buffer_size = buffer_size;
	prefetch->started_ns = nopfs_clock_now_ns();
	for (unsigned int t = 0; t < tiers->count; t++)
		total += tiers->tier[t].count ? tiers->tier[t].threads : 0;
	if (total == 0) {
		atomic_store(&prefetch->finished_ns, prefetch->started_ns);
		return NOPFS_OK;
	}
	prefetch->workers = calloc(total, sizeof(*prefetch->workers));
	if (!prefetch->workers) {
		nopfs_error("prefetch: no memory for %u threads", total);
		return NOPFS_ERR_NOMEM;
	}
	atomic_store(&prefetch->running, total);
	for (unsigned int t = 0; t < tiers->count; t++) {
		for (unsigned int i = 0; tiers->tier[t].count && i < tiers->tier[t].threads; i++) {
			struct prefetch_worker *worker = &prefetch->workers[at++];

			worker->prefetch = prefetch;
			worker->tier = &tiers->tier[t];
			worker->started =
			        pthread_create(&worker->thread, NULL, prefetch_main, worker) == 0;
			if (!worker->started) {
				nopfs_error("prefetch: cannot start a thread for tier %u", t);
				atomic_fetch_sub(&prefetch->running, 1);
			}
		}
	}
	prefetch->count = at;
	return NOPFS_OK;
}

void prefetch_stop(struct prefetch *prefetch)
{
	atomic_store(&prefetch->stop, true);
	for (unsigned int i = 0; i < prefetch->count; i++)
		if (prefetch->workers[i].started)
			pthread_join(prefetch->workers[i].thread, NULL);
	free(prefetch->workers);
	prefetch->workers = NULL;
	prefetch->count = 0;
}
