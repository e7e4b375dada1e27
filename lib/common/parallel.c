/* Fork-join of independent jobs. */
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "parallel.h"

struct parallel_slot {
	void (*work)(void *job);
	void *job;
	pthread_t thread;
	bool started;
};

static void *parallel_trampoline(void *arg)
{
	struct parallel_slot *slot = arg;

	slot->work(slot->job);
	return NULL;
}

void nopfs_parallel_run(void (*work)(void *job), void *jobs, size_t job_size, unsigned int count)
{
	struct parallel_slot *slot = count > 1 ? calloc(count, sizeof(*slot)) : NULL;

	if (!slot) {
		/* One job, or no memory for bookkeeping: run them in turn. */
		for (unsigned int i = 0; i < count; i++)
			work((char *)jobs + i * job_size);
		return;
	}
	for (unsigned int i = 1; i < count; i++) {
		slot[i].work = work;
		slot[i].job = (char *)jobs + i * job_size;
		slot[i].started =
		        pthread_create(&slot[i].thread, NULL, parallel_trampoline, &slot[i]) == 0;
	}
	work(jobs);
	for (unsigned int i = 1; i < count; i++) {
		if (slot[i].started)
			pthread_join(slot[i].thread, NULL);
		else
			work(slot[i].job);
	}
	free(slot);
}
