/* Staging rings for the C API: allocation, publication, release, reclaim. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"
#include "stage_ring.h"

#define PAGE 4096u

nopfs_status stage_ring_create(struct stage_ring *ring, const char *directory, uint32_t rank,
                               uint32_t slots, uint64_t data_bytes)
{
	struct nopfs_ring_header *header;
	nopfs_status status;

	memset(ring, 0, sizeof(*ring));
	ring->fd = -1;
	ring->rank = rank;
	ring->slot_count = slots;
	ring->hint_count = 1;
	while (ring->hint_count < 8 * slots)
		ring->hint_count *= 2;
	ring->data_offset =
	        (nopfs_ring_table_bytes(slots, ring->hint_count) + PAGE - 1) / PAGE * PAGE;
	ring->data_bytes = (data_bytes + PAGE - 1) / PAGE * PAGE;
	ring->bytes = ring->data_offset + ring->data_bytes;
	if ((size_t)snprintf(ring->path, sizeof(ring->path), "%s/.ring%" PRIu32, directory, rank) >=
	    sizeof(ring->path)) {
		nopfs_error("stage directory '%s' is too long", directory);
		return NOPFS_ERR_RANGE;
	}
	ring->own = calloc(slots, sizeof(*ring->own));
	ring->fd = open(ring->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	/* reserved: a ring written through its mapping must not meet a full /dev/shm (SIGBUS) */
	if (!ring->own || ring->fd < 0 || ftruncate(ring->fd, (off_t)ring->bytes) != 0 ||
	    fallocate(ring->fd, 0, 0, (off_t)ring->bytes) != 0) {
		status = ring->own ? nopfs_status_from_errno(errno) : NOPFS_ERR_NOMEM;
		nopfs_error("cannot create the staging ring '%s' of %zu bytes: %m", ring->path,
		            ring->bytes);
		goto out_destroy;
	}
	ring->base = mmap(NULL, ring->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, ring->fd, 0);
	if (ring->base == MAP_FAILED) {
		ring->base = NULL;
		status = NOPFS_ERR_NOMEM;
		nopfs_error("cannot map the staging ring '%s': %m", ring->path);
		goto out_destroy;
	}
	header = ring->base;
	*header = (struct nopfs_ring_header){ .magic = NOPFS_RING_MAGIC,
		                              .version = NOPFS_RING_VERSION,
		                              .rank = rank,
		                              .slots = slots,
		                              .data_offset = ring->data_offset,
		                              .data_bytes = ring->data_bytes,
		                              .hints = ring->hint_count };
	return NOPFS_OK;

out_destroy:
	stage_ring_destroy(ring);
	return status;
}

void stage_ring_destroy(struct stage_ring *ring)
{
	if (ring->base)
		munmap(ring->base, ring->bytes);
	if (ring->fd >= 0) {
		close(ring->fd);
		unlink(ring->path);
	}
	free(ring->own);
	memset(ring, 0, sizeof(*ring));
	ring->fd = -1;
}

static struct nopfs_ring_slot *shared_slot(struct stage_ring *ring, uint32_t slot)
{
	return &nopfs_ring_slots(ring->base)[slot];
}

/* Free @slot's bytes; the oldest live allocation moves on past freed ones. */
static void free_slot(struct stage_ring *ring, uint32_t slot)
{
	ring->own[slot].live = false;
	atomic_store_explicit(&shared_slot(ring, slot)->state, NOPFS_RING_FREE,
	                      memory_order_release);
	while (ring->tail_seq < ring->head_seq &&
	       !ring->own[ring->tail_seq % ring->slot_count].live)
		ring->tail_seq++;
	if (ring->tail_seq == ring->head_seq) {
		ring->head_offset = ring->tail_offset = 0;
		ring->wrapped = false;
		return;
	}
	ring->tail_offset = ring->own[ring->tail_seq % ring->slot_count].offset;
	ring->wrapped = ring->tail_offset >= ring->head_offset;
}

/* Whether process @pid is gone (or a zombie: its mappings are gone too). */
static bool process_is_gone(pid_t pid)
{
	char path[64], state = 0;
	FILE *stat_file;

	if (pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	stat_file = fopen(path, "re");
	if (!stat_file)
		return kill(pid, 0) != 0 && errno == ESRCH;
	if (fscanf(stat_file, "%*d (%*[^)]) %c", &state) != 1)
		state = 0;
	fclose(stat_file);
	return state == 'Z' || state == 'X';
}

bool stage_ring_collect(struct stage_ring *ring, uint32_t *from, uint64_t *position)
{
	for (uint32_t s = *from; s < ring->slot_count; s++) {
		struct nopfs_ring_slot *shared = shared_slot(ring, s);
		uint32_t state = atomic_load_explicit(&shared->state, memory_order_acquire);

		if (!ring->own[s].live)
			continue;
		if (state == NOPFS_RING_RELEASED ||
		    (state == NOPFS_RING_TAKEN &&
		     process_is_gone(atomic_load_explicit(&shared->taker, memory_order_relaxed)))) {
			*position = ring->own[s].position;
			free_slot(ring, s);
			*from = s + 1;
			return true;
		}
	}
	*from = ring->slot_count;
	return false;
}

/* Where @size bytes fit now, or false. */
static bool find_room(struct stage_ring *ring, uint64_t size, uint64_t *offset)
{
	if (ring->tail_seq == ring->head_seq) {
		*offset = 0;
		return size <= ring->data_bytes;
	}
	if (!ring->wrapped) {
		if (ring->head_offset + size <= ring->data_bytes) {
			*offset = ring->head_offset;
			return true;
		}
		*offset = 0;
		return size <= ring->tail_offset;
	}
	*offset = ring->head_offset;
	return ring->head_offset + size <= ring->tail_offset;
}

bool stage_ring_reserve(struct stage_ring *ring, nopfs_sample_id sample, uint64_t size,
                        uint64_t position, uint32_t *slot, uint64_t *offset)
{
	struct nopfs_ring_slot *shared;
	uint64_t at;
	uint32_t s;

	if (size == 0 || size > ring->data_bytes)
		return false;
	if (ring->head_seq - ring->tail_seq == ring->slot_count || !find_room(ring, size, &at))
		return false;
	s = (uint32_t)(ring->head_seq % ring->slot_count);
	if (at < ring->head_offset)
		ring->wrapped = true;
	ring->own[s] = (struct stage_ring_own){
		.offset = at, .size = size, .position = position, .sample = sample, .live = true
	};
	ring->head_seq++;
	ring->head_offset = at + size;
	if (ring->head_seq - ring->tail_seq == 1)
		ring->tail_offset = at;
	shared = shared_slot(ring, s);
	atomic_store_explicit(&shared->state, NOPFS_RING_WRITING, memory_order_relaxed);
	*slot = s;
	*offset = at;
	return true;
}

void stage_ring_publish(struct stage_ring *ring, uint32_t slot, int64_t label, uint32_t source)
{
	struct nopfs_ring_slot *shared = shared_slot(ring, slot);

	shared->sample = ring->own[slot].sample;
	shared->offset = ring->own[slot].offset;
	shared->size = ring->own[slot].size;
	shared->label = label;
	shared->source = source;
	atomic_store_explicit(&shared->taker, 0, memory_order_relaxed);
	atomic_store_explicit(&shared->state, NOPFS_RING_READY, memory_order_release);
	atomic_store_explicit(
	        &nopfs_ring_hints(
	                ring->base,
	                ring->slot_count)[nopfs_ring_hint_of(shared->sample, ring->hint_count)],
	        slot + 1, memory_order_relaxed);
}

bool stage_ring_take_back(struct stage_ring *ring, uint32_t slot)
{
	struct nopfs_ring_slot *shared = shared_slot(ring, slot);
	uint32_t state = atomic_load_explicit(&shared->state, memory_order_acquire);

	if (!ring->own[slot].live)
		return true;
	if (state == NOPFS_RING_READY &&
	    !atomic_compare_exchange_strong(&shared->state, &state, NOPFS_RING_FREE))
		return false; /* taken just now */
	if (state == NOPFS_RING_TAKEN || state == NOPFS_RING_WRITING)
		return false; /* a task reads it, or its stager writes it: they end it */
	free_slot(ring, slot);
	return true;
}

void stage_ring_cancel(struct stage_ring *ring, uint32_t slot)
{
	if (ring->own[slot].live)
		free_slot(ring, slot);
}

bool stage_ring_released(struct stage_ring *ring, uint32_t slot, nopfs_sample_id sample,
                         uint64_t *position)
{
	if (slot >= ring->slot_count || !ring->own[slot].live || ring->own[slot].sample != sample ||
	    atomic_load_explicit(&shared_slot(ring, slot)->state, memory_order_acquire) !=
	            NOPFS_RING_RELEASED)
		return false;
	*position = ring->own[slot].position;
	free_slot(ring, slot);
	return true;
}

bool stage_ring_is_empty(const struct stage_ring *ring)
{
	return ring->tail_seq == ring->head_seq;
}
