/* A staging buffer's contents: sizes and release times, oldest first. */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include "sim_engine.h"

bool sim_ring_push(struct sim_ring *ring, uint64_t size, double release)
{
	uint64_t at;

	if (ring->count == ring->room) {
		uint64_t room = ring->room ? ring->room * 2 : 1024;
		uint64_t *sizes = malloc(room * sizeof(*sizes));
		double *releases = malloc(room * sizeof(*releases));

		if (!sizes || !releases) {
			free(sizes);
			free(releases);
			return false;
		}
		for (uint64_t i = 0; i < ring->count; i++) {
			sizes[i] = ring->size[(ring->head + i) & (ring->room - 1)];
			releases[i] = ring->release[(ring->head + i) & (ring->room - 1)];
		}
		free(ring->size);
		free(ring->release);
		ring->size = sizes;
		ring->release = releases;
		ring->room = room;
		ring->head = 0;
	}
	at = (ring->head + ring->count) & (ring->room - 1);
	ring->size[at] = size;
	ring->release[at] = release;
	ring->count++;
	ring->bytes += size;
	return true;
}

double sim_ring_make_room(struct sim_ring *ring, uint64_t size, uint64_t capacity)
{
	double when = -INFINITY;

	while (ring->count && ring->bytes + size > capacity) {
		when = ring->release[ring->head];
		ring->bytes -= ring->size[ring->head];
		ring->head = (ring->head + 1) & (ring->room - 1);
		ring->count--;
	}
	return when;
}

void sim_ring_fini(struct sim_ring *ring)
{
	free(ring->size);
	free(ring->release);
	ring->size = NULL;
	ring->release = NULL;
}
