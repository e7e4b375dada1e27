/*
 * The C API's side of a rank's staging ring (ring.h): ask the agent for it
 * at connect, take samples from it without a system call, release them.
 */
#ifndef NOPFS_CLIENT_RING_H
#define NOPFS_CLIENT_RING_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "catalog/catalog.h"
#include "channel.h"
#include "nopfs.h"

struct client_ring {
	void *base; /* the mapping, or NULL: no ring */
	size_t bytes;
	uint32_t slots;
	uint32_t hints;
	pid_t pid;            /* the process that mapped it (a forked child must not use it) */
	uint64_t outstanding; /* views not yet released */
	uint32_t unnotified;  /* releases not yet told to the agent */
};

/* Ask the agent for @channel's rank's ring and map it; no ring on any failure. */
void client_ring_attach(struct client_ring *ring, struct nopfs_channel *channel);

/* Take sample @index if the ring holds it ready: true with *sample filled. */
bool client_ring_take(struct client_ring *ring, nopfs_sample_id index, struct nopfs_sample *sample);

/* Release a view taken from the ring and tell the agent. */
void client_ring_release(struct client_ring *ring, struct nopfs_channel *channel,
                         struct nopfs_sample *sample);

/* Unmap the ring, unless views taken from it are still held (they stay valid). */
void client_ring_detach(struct client_ring *ring);

#endif
