/* Pacing the operations outstanding against a shared server. */
#include "config.h"

#include <string.h>

#include "pace.h"

/*
 * The controller's thresholds, in operations estimated waiting in the
 * server's queue: grow below QUEUE_LOW, shrink above QUEUE_HIGH (a band,
 * so that it settles rather than swings).
 */
#define QUEUE_LOW  1.0
#define QUEUE_HIGH 3.0

void nopfs_pace_init(struct nopfs_pace *pace, unsigned int min, unsigned int max)
{
	memset(pace, 0, sizeof(*pace));
	pace->min = min ? min : 1;
	pace->max = max > pace->min ? max : pace->min;
	pace->active = pace->min;
	pace->peak = pace->active;
	pace->starting = true;
}

/* The lowest mean latency of the last NOPFS_PACE_WINDOW intervals. */
static uint64_t base_latency(const struct nopfs_pace *pace)
{
	unsigned int n = pace->count < NOPFS_PACE_WINDOW ? pace->count : NOPFS_PACE_WINDOW;
	uint64_t base = UINT64_MAX;

	for (unsigned int i = 0; i < n; i++)
		if (pace->recent[i] < base)
			base = pace->recent[i];
	return base;
}

unsigned int nopfs_pace_update(struct nopfs_pace *pace, uint64_t ops, uint64_t latency_ns)
{
	uint64_t mean, base;
	double queued;

	if (ops == 0 || ops < pace->active)
		return pace->active;
	mean = latency_ns / ops;
	if (mean == 0)
		mean = 1;
	pace->recent[pace->count % NOPFS_PACE_WINDOW] = mean;
	pace->count++;
	if (pace->resume) {
		/* the probe's interval: its latency is the base's, nothing else changes */
		pace->active = pace->resume;
		pace->resume = 0;
		return pace->active;
	}
	base = base_latency(pace);
	/* of the active workers, the share of time spent waiting beyond the base */
	queued = (double)pace->active * (1.0 - (double)base / (double)mean);
	if (queued < QUEUE_LOW) {
		unsigned int grown = pace->starting ? pace->active * 2 : pace->active + 1;

		pace->active = grown < pace->max ? grown : pace->max;
	} else {
		pace->starting = false;
		if (queued > QUEUE_HIGH) {
			/* as many fewer as are queued beyond the band, at least one */
			unsigned int fewer = (unsigned int)(queued - QUEUE_HIGH) + 1;

			pace->active =
			        pace->active > pace->min + fewer ? pace->active - fewer : pace->min;
		}
	}
	if (pace->active > pace->peak)
		pace->peak = pace->active;
	if (pace->count % NOPFS_PACE_WINDOW == 0 && pace->active > pace->min) {
		pace->resume = pace->active;
		pace->active = pace->min;
	}
	return pace->active;
}
