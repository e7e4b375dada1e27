/* The C API's use of a rank's staging ring. */
#include "config.h"

#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_ring.h"
#include "common/log.h"
#include "ring.h"

/* Releases per RELEASE notification. */
#define CLIENT_RING_NOTIFY_EVERY 16

/* Whether the mapped ring's header describes a ring we can use safely. */
static bool ring_is_valid(const void *base, size_t bytes, int32_t rank)
{
	const struct nopfs_ring_header *header = base;

	return bytes >= sizeof(*header) && header->magic == NOPFS_RING_MAGIC &&
	       header->version == NOPFS_RING_VERSION && header->rank == (uint32_t)rank &&
	       header->slots > 0 && header->hints > 0 &&
	       (header->hints & (header->hints - 1)) == 0 &&
	       nopfs_ring_table_bytes(header->slots, header->hints) <= header->data_offset &&
	       header->data_offset <= bytes && header->data_bytes <= bytes - header->data_offset;
}

void client_ring_attach(struct client_ring *ring, struct nopfs_channel *channel)
{
	struct nopfs_wire_message request = { .type = NOPFS_WIRE_RING };
	struct nopfs_wire_message reply;
	const char *why;
	struct stat st;
	void *base;
	int fd = -1;

	memset(ring, 0, sizeof(*ring));
	if (channel->rank < 0 || !(channel->agent_flags & NOPFS_WIRE_FLAG_RING))
		return;
	request.u.ring.rank = channel->rank;
	if (nopfs_channel_call(channel, &request, NOPFS_WIRE_RING_FD, &reply, &fd, &why) !=
	            NOPFS_OK ||
	    reply.type != NOPFS_WIRE_RING_FD || fd < 0) {
		if (fd >= 0)
			close(fd);
		return; /* an older or busy agent: samples come the other ways */
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != reply.u.ring_fd.bytes) {
		close(fd);
		return;
	}
	/* Populated now: no page faults later, on the path that must beat a memcpy. */
	base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
	            0);
	close(fd);
	if (base == MAP_FAILED)
		return;
	if (!ring_is_valid(base, (size_t)st.st_size, channel->rank)) {
		nopfs_warning("the agent's staging ring for rank %" PRId32
		              " is malformed: not used",
		              channel->rank);
		munmap(base, (size_t)st.st_size);
		return;
	}
	ring->base = base;
	ring->bytes = (size_t)st.st_size;
	ring->slots = ((const struct nopfs_ring_header *)base)->slots;
	ring->hints = ((const struct nopfs_ring_header *)base)->hints;
	ring->pid = getpid();
}

/* Take slot @s if it holds @index ready: fill *sample. */
static bool take_slot(struct client_ring *ring, uint32_t s, nopfs_sample_id index,
                      struct nopfs_sample *sample)
{
	const struct nopfs_ring_header *header = ring->base;
	struct nopfs_ring_slot *slot = &nopfs_ring_slots(ring->base)[s];
	uint32_t ready = NOPFS_RING_READY;

	if (atomic_load_explicit(&slot->state, memory_order_acquire) != NOPFS_RING_READY ||
	    slot->sample != index)
		return false;
	if (!atomic_compare_exchange_strong_explicit(&slot->state, &ready, NOPFS_RING_TAKEN,
	                                             memory_order_acquire, memory_order_relaxed))
		return false; /* another process took it first */
	atomic_store_explicit(&slot->taker, (int32_t)getpid(), memory_order_relaxed);
	if (slot->sample != index || slot->offset > header->data_bytes ||
	    slot->size > header->data_bytes - slot->offset) {
		/* Not the agent's writing: give it back, read it elsewhere. */
		atomic_store_explicit(&slot->state, NOPFS_RING_RELEASED, memory_order_release);
		return false;
	}
	memset(sample, 0, sizeof(*sample));
	sample->data =
	        slot->size ? (const char *)ring->base + header->data_offset + slot->offset : NULL;
	sample->size = slot->size;
	sample->label = slot->label;
	sample->index = index;
	sample->source = NOPFS_FROM_STAGING;
	sample->ring_slot = s + 1;
	ring->outstanding++;
	return true;
}

bool client_ring_take(struct client_ring *ring, nopfs_sample_id index, struct nopfs_sample *sample)
{
	uint32_t hint;

	if (!ring->base || ring->pid != getpid())
		return false;
	hint = atomic_load_explicit(
	        &nopfs_ring_hints(ring->base, ring->slots)[nopfs_ring_hint_of(index, ring->hints)],
	        memory_order_relaxed);
	if (hint > 0 && hint <= ring->slots && take_slot(ring, hint - 1, index, sample))
		return true;
	for (uint32_t s = 0; s < ring->slots; s++)
		if (take_slot(ring, s, index, sample))
			return true;
	return false;
}

void client_ring_release(struct client_ring *ring, struct nopfs_channel *channel,
                         struct nopfs_sample *sample)
{
	struct nopfs_wire_message release = { .type = NOPFS_WIRE_RELEASE };
	uint32_t slot = sample->ring_slot - 1;

	if (!ring->base || slot >= ring->slots)
		return;
	atomic_store_explicit(&nopfs_ring_slots(ring->base)[slot].state, NOPFS_RING_RELEASED,
	                      memory_order_release);
	ring->outstanding--;
	/* One notification per batch: the agent then collects every released slot. */
	if (++ring->unnotified < CLIENT_RING_NOTIFY_EVERY)
		return;
	ring->unnotified = 0;
	release.u.release.rank = channel->rank;
	release.u.release.slot = slot;
	release.u.release.index = sample->index;
	/* A lost notification only delays the reuse: the agent also scans states. */
	nopfs_channel_notify(channel, &release);
}

void client_ring_detach(struct client_ring *ring)
{
	if (ring->base && ring->outstanding == 0)
		munmap(ring->base, ring->bytes);
	memset(ring, 0, sizeof(*ring));
}
