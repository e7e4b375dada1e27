/* Tier prefetch threads. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "prefetch.h"
#include "timing.h"

struct prefetch_worker {
	struct prefetch *prefetch;
	struct tier *tier;
	pthread_t thread;
	bool started;
};

static void *prefetch_main(void *arg)
{
	struct prefetch_worker *worker = arg;
	struct prefetch *prefetch = worker->prefetch;
	struct tier *tier = worker->tier;
	void *buffer = malloc(prefetch->buffer_size ? prefetch->buffer_size : 1);

	if (!buffer)
		nopfs_error("prefetch: no memory for a %" PRIu64 "-byte buffer",
		            prefetch->buffer_size);
	while (buffer && !atomic_load(&prefetch->stop)) {
		uint64_t i = atomic_fetch_add(&tier->next_fill, 1);

		if (i >= tier->count)
			break;
		/* Absent: fetch; present or in flight (a stager helped out): skip. */
		if (atomic_load(&tier->state[tier->fill_order[i]]) == TIER_ABSENT)
			tier_ensure(tier, tier->fill_order[i], prefetch->catalog, buffer,
			            prefetch->stats, NULL, NULL);
	}
	free(buffer);
	if (atomic_fetch_sub(&prefetch->running, 1) == 1)
		atomic_store(&prefetch->finished_ns, now_ns());
	return NULL;
}

nopfs_status prefetch_start(struct prefetch *prefetch, struct tier_set *tiers,
                            const struct nopfs_catalog *catalog, uint64_t buffer_size,
                            struct agent_stats *stats)
{
	unsigned int total = 0, at = 0;

	memset(prefetch, 0, sizeof(*prefetch));
	prefetch->tiers = tiers;
	prefetch->catalog = catalog;
	prefetch->stats = stats;
	prefetch->buffer_size = buffer_size;
	prefetch->started_ns = now_ns();
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
