/* RAM and SSD tiers: packed sample files with per-sample states. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "job.h"
#include "keep.h"
#include "common/atomic_file.h"
#include "common/fdio.h"
#include "common/log.h"
#include "common/private.h"
#include "tier.h"
#include "common/clock.h"
#include "common/units.h"

static nopfs_status check_room(const char *directory, uint64_t bytes, const char *what)
{
	struct statvfs fs;
	char need[32], have[32];

	if (statvfs(directory, &fs) != 0) {
		nopfs_error("%s directory '%s': %m", what, directory);
		return nopfs_status_from_errno(errno);
	}
	if ((uint64_t)fs.f_bavail * fs.f_frsize < bytes) {
		nopfs_error(
		        "%s directory '%s' has %s free, the plan needs %s", what, directory,
		        nopfs_format_size((uint64_t)fs.f_bavail * fs.f_frsize, have, sizeof(have)),
		        nopfs_format_size(bytes, need, sizeof(need)));
		return NOPFS_ERR_RANGE;
	}
	return NOPFS_OK;
}

struct fill_key {
	uint64_t step;
	uint64_t position;
};

static int compare_fill_keys(const void *a, const void *b)
{
	const struct fill_key *x = a, *y = b;

	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	return (x->position > y->position) - (x->position < y->position);
}

/* The fill order of @tier's samples: first needed (by any rank of @job) first. */
static nopfs_status tier_order(struct tier *tier, const struct job *job)
{
	uint64_t *steps = malloc((tier->count + 1) * sizeof(*steps));
	struct fill_key *keys = malloc((tier->count + 1) * sizeof(*keys));
	nopfs_status status = NOPFS_ERR_NOMEM;

	if (!steps || !keys) {
		nopfs_error("no memory to order tier %u of %" PRIu64 " samples", tier->index,
		            tier->count);
		goto out;
	}
	status = job_first_steps(job, tier->samples, tier->count, steps);
	if (status != NOPFS_OK)
		goto out;
	for (uint64_t i = 0; i < tier->count; i++)
		keys[i] = (struct fill_key){ .step = steps[i], .position = i };
	qsort(keys, tier->count, sizeof(*keys), compare_fill_keys);
	for (uint64_t i = 0; i < tier->count; i++)
		tier->fill_order[i] = keys[i].position;
	atomic_store(&tier->next_fill, 0);
out:
	free(keys);
	free(steps);
	return status;
}

/* An empty tier of @kind at @index in its plan, nothing allocated or open yet. */
static void tier_begin(struct tier *tier, unsigned int index, nopfs_tier_kind kind)
{
	tier->index = index;
	tier->kind = kind;
	tier->fd = -1;
	tier->threads = 1;
	pthread_mutex_init(&tier->lock, NULL);
	nopfs_clock_cond_init(&tier->changed);
}

/* The per-sample arrays of @tier's count samples (@what names it in the error). */
static nopfs_status tier_arrays(struct tier *tier, const char *what)
{
	tier->samples = malloc((tier->count + 1) * sizeof(*tier->samples));
	tier->offsets = malloc((tier->count + 1) * sizeof(*tier->offsets));
	tier->state = calloc(tier->count + 1, sizeof(*tier->state));
	tier->fill_order = malloc((tier->count + 1) * sizeof(*tier->fill_order));
	if (!tier->samples || !tier->offsets || !tier->state || !tier->fill_order) {
		nopfs_error("no memory to index %s of %" PRIu64 " samples", what, tier->count);
		return NOPFS_ERR_NOMEM;
	}
	return NOPFS_OK;
}

/* The kept samples of this tier, their packed offsets, and the fill order. */
static nopfs_status tier_index(struct tier *tier, const struct job *job)
{
	char what[32];
	const uint64_t *sizes = nopfs_catalog_sizes(job->catalog);
	uint64_t at = 0;

	for (uint64_t k = 0; k < job->sampler.count; k++)
		tier->count +=
		        nopfs_placement_tier_on(job->placement, job->node, k) == (int)tier->index;
	snprintf(what, sizeof(what), "tier %u", tier->index);
	if (tier_arrays(tier, what) != NOPFS_OK)
		return NOPFS_ERR_NOMEM;
	/*
	 * Primaries first, in sample order, so that every node can compute
	 * where a primary sits (nopfs_placement_primary_place()); then this
	 * node's replicas, also in sample order.
	 */
	for (int replicas = 0; replicas < 2; replicas++) {
		for (uint64_t k = 0; k < job->sampler.count; k++) {
			uint32_t holder = NOPFS_NO_NODE;

			if (nopfs_placement_tier_on(job->placement, job->node, k) !=
			    (int)tier->index)
				continue;
			nopfs_placement_locate(job->placement, k, &holder, NULL);
			if ((holder == job->node) == (bool)replicas)
				continue;
			tier->samples[at] = (nopfs_sample_id)k;
			tier->offsets[at] = tier->bytes;
			tier->bytes += sizes[k];
			at++;
		}
		if (!replicas)
			tier->primary_count = at;
	}
	tier->offsets[at] = tier->bytes;
	return tier_order(tier, job);
}

/*
 * A tier's file @path in a directory of ours, created exclusively and never
 * through a link; one left there by an earlier agent of the job is replaced.
 */
static int create_tier_file(const char *path)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

		if (fd >= 0 || errno != EEXIST || unlink(path) != 0)
			return fd;
	}
	errno = EEXIST;
	return -1;
}

/*
 * The SSD tier's directory: @name.nNODE in @base (unguessable with the job's
 * token, one per node even where nodes share @base), private to us, on a
 * node-local file system.
 */
static nopfs_status ssd_directory(struct tier *tier, const char *base, const char *name,
                                  uint32_t node)
{
	const char *shared;
	nopfs_status status;
	struct statfs fs;
	bool made;

	if (statfs(base, &fs) != 0) {
		nopfs_error("ssd tier directory '%s': %m", base);
		return nopfs_status_from_errno(errno);
	}
	shared = nopfs_fs_shared_name((unsigned long)fs.f_type);
	if (shared) {
		nopfs_error("ssd tier directory '%s' is on a shared file system (%s): give a "
		            "node-local one",
		            base, shared);
		return NOPFS_ERR_UNSUPPORTED;
	}
	if ((size_t)snprintf(tier->directory, sizeof(tier->directory), "%s/%s.n%" PRIu32, base,
	                     name, node) >= sizeof(tier->directory)) {
		nopfs_error("ssd tier directory '%s' is too long", base);
		tier->directory[0] = '\0';
		return NOPFS_ERR_RANGE;
	}
	status = nopfs_private_dir_make(tier->directory, &made);
	if (status != NOPFS_OK) {
		nopfs_error(status == NOPFS_ERR_PERMISSION
		                    ? "ssd tier: '%s' exists and is not a private directory of ours"
		                    : "ssd tier: cannot create '%s': %m",
		            tier->directory);
		tier->directory[0] = '\0';
	}
	return status;
}

/* Create the file of a tier: RAM in the stage directory, SSD in a directory of ours. */
static nopfs_status tier_open_file(struct tier *tier, const struct nopfs_tier_spec *spec,
                                   const char *stage_dir, const char *name, uint32_t node,
                                   uint32_t generation, const struct keep *keep)
{
	const char *what = nopfs_tier_kind_name(tier->kind);
	char suffix[16] = "";
	nopfs_status status;

	/* another plan's file may still be there while its samples are adopted */
	if (generation)
		snprintf(suffix, sizeof(suffix), ".%u", generation);

	if (tier->kind == NOPFS_TIER_RAM) {
		/* a listed tier (tier_create_listed()) comes with its path */
		if (!tier->path[0] &&
		    (size_t)snprintf(tier->path, sizeof(tier->path), "%s/.tier-%u%s", stage_dir,
		                     tier->index, suffix) >= sizeof(tier->path)) {
			nopfs_error("stage directory '%s' is too long", stage_dir);
			return NOPFS_ERR_RANGE;
		}
		status = check_room(stage_dir, tier->bytes, "ram tier (stage)");
	} else if (keep && keep->data_fd >= 0 && keep->ssd_tier == (int)tier->index) {
		/* the kept cache's new data file, which this tier begins */
		if ((size_t)snprintf(tier->path, sizeof(tier->path), "%s/%s", keep->directory,
		                     keep->data_name) >= sizeof(tier->path))
			return NOPFS_ERR_RANGE;
		tier->borrowed = true;
		status = check_room(keep->directory, tier->bytes, "kept ssd tier");
		if (status != NOPFS_OK)
			return status;
		tier->fd = fcntl(keep->data_fd, F_DUPFD_CLOEXEC, 0);
		if (tier->fd < 0) {
			nopfs_error("ssd tier: cannot use '%s': %m", tier->path);
			return nopfs_status_from_errno(errno);
		}
	} else {
		char directory[PATH_MAX];

		status = ssd_directory(tier, spec->path, name, node);
		if (status != NOPFS_OK)
			return status;
		memcpy(directory, tier->directory, sizeof(directory));
		if ((size_t)snprintf(tier->path, sizeof(tier->path), "%s/tier-%u%s", directory,
		                     tier->index, suffix) >= sizeof(tier->path))
			return NOPFS_ERR_RANGE;
		status = check_room(spec->path, tier->bytes, "ssd tier");
	}
	if (status != NOPFS_OK)
		return status;
	if (tier->fd < 0)
		tier->fd = create_tier_file(tier->path);
	if (tier->fd < 0) {
		status = nopfs_status_from_errno(errno);
		nopfs_error("%s tier: cannot create '%s': %m", what, tier->path);
		tier->path[0] = '\0'; /* not ours: never unlinked */
		return status;
	}
	if (ftruncate(tier->fd, (off_t)tier->bytes) != 0) {
		status = nopfs_status_from_errno(errno);
		nopfs_error("%s tier: cannot size '%s' to %" PRIu64 " bytes: %m", what, tier->path,
		            tier->bytes);
		return status;
	}
	/*
	 * The tier's room is ours from the start. A RAM tier is a tmpfs file
	 * written through a mapping: pages taken by someone else before ours
	 * are written would be SIGBUS, not an error. An SSD tier is reserved
	 * where the file system can (not an error where it cannot), so that a
	 * file system filled by others later cannot make its writes fail.
	 */
	if (tier->bytes > 0 && fallocate(tier->fd, 0, 0, (off_t)tier->bytes) != 0 &&
	    (tier->kind == NOPFS_TIER_RAM || errno != EOPNOTSUPP)) {
		char size[32];

		status = nopfs_status_from_errno(errno);
		nopfs_error("%s tier: cannot reserve %s for '%s': %m", what,
		            nopfs_format_size(tier->bytes, size, sizeof(size)), tier->path);
		return status;
	}
	if (tier->kind == NOPFS_TIER_RAM && tier->bytes > 0) {
		tier->base =
		        mmap(NULL, tier->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, tier->fd, 0);
		if (tier->base == MAP_FAILED) {
			tier->base = NULL;
			nopfs_error("ram tier: cannot map '%s': %m", tier->path);
			return NOPFS_ERR_NOMEM;
		}
	}
	return NOPFS_OK;
}

nopfs_status tier_set_create(struct tier_set *set, const struct job *job,
                             const struct nopfs_tier_list *specs, const char *stage_dir,
                             const char *name, uint32_t generation, const struct keep *keep)
{
	nopfs_status status = NOPFS_OK;

	memset(set, 0, sizeof(*set));
	for (unsigned int t = 0; t < specs->count; t++) {
		struct tier *tier = &set->tier[t];

		tier_begin(tier, t, specs->tier[t].kind);
		set->count++;
		status = tier_index(tier, job);
		if (status == NOPFS_OK)
			status = tier_open_file(tier, &specs->tier[t], stage_dir, name, job->node,
			                        generation, keep);
		if (status != NOPFS_OK)
			break;
	}
	if (status != NOPFS_OK)
		tier_set_destroy(set);
	return status;
}

/*
 * Keep the address range of a RAM tier's mapping and its state array, which
 * peers may still read, but not the memory: the range reads as zeros
 * (absent) from now on. false if the range could not be replaced.
 */
static bool retire_ram(struct tier *tier, struct tier_retired **retired)
{
	struct tier_retired *kept = malloc(sizeof(*kept));

	if (!kept)
		return false;
	if (mmap(tier->base, tier->bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
	         0) == MAP_FAILED) {
		nopfs_warning("ram tier '%s': cannot release its memory: %m", tier->path);
		free(kept);
		return false;
	}
	*kept = (struct tier_retired){ .base = tier->base,
		                       .bytes = tier->bytes,
		                       .state = (void *)tier->state,
		                       .next = *retired };
	*retired = kept;
	tier->base = NULL;
	tier->state = NULL;
	return true;
}

void tier_set_hide(struct tier_set *set)
{
	for (unsigned int t = 0; t < set->count; t++)
		for (uint64_t i = 0; set->tier[t].base && i < set->tier[t].count; i++)
			atomic_store(&set->tier[t].state[i], TIER_ABSENT);
}

void tier_set_retire(struct tier_set *set, struct tier_retired **retired)
{
	for (unsigned int t = 0; t < set->count; t++)
		if (set->tier[t].base && !retire_ram(&set->tier[t], retired))
			set->tier[t].state = NULL; /* leaked rather than reused under a peer */
	tier_set_destroy(set);
}

void tier_retired_free(struct tier_retired *retired)
{
	while (retired) {
		struct tier_retired *next = retired->next;

		munmap(retired->base, retired->bytes);
		free(retired->state);
		free(retired);
		retired = next;
	}
}

nopfs_status tier_set_list_directories(const struct tier_set *set, const char *path)
{
	char text[NOPFS_TIERS_MAX * (PATH_MAX + 1)];
	size_t length = 0;

	for (unsigned int t = 0; t < set->count; t++)
		if (set->tier[t].directory[0])
			length += (size_t)snprintf(text + length, sizeof(text) - length, "%s\n",
			                           set->tier[t].directory);
	if (length == 0)
		return NOPFS_OK;
	if (nopfs_atomic_write(path, 0600, text, length) != NOPFS_OK) {
		nopfs_warning("cannot list the ssd tier directories in '%s' for the job epilog: %m",
		              path);
		return NOPFS_ERR_IO;
	}
	return NOPFS_OK;
}

void tier_fini(struct tier *tier)
{
	if (tier->base)
		munmap(tier->base, tier->bytes);
	if (tier->fd >= 0)
		close(tier->fd);
	if (tier->path[0] && !tier->borrowed)
		unlink(tier->path);
	if (tier->directory[0])
		rmdir(tier->directory);
	free(tier->samples);
	free(tier->offsets);
	free((void *)tier->state);
	free(tier->fill_order);
	pthread_cond_destroy(&tier->changed);
	pthread_mutex_destroy(&tier->lock);
	memset(tier, 0, sizeof(*tier));
	tier->fd = -1;
}

void tier_set_destroy(struct tier_set *set)
{
	for (unsigned int t = 0; t < set->count; t++)
		tier_fini(&set->tier[t]);
	memset(set, 0, sizeof(*set));
}

nopfs_status tier_create_listed(struct tier *tier, const char *stage_dir, const char *name,
                                const nopfs_sample_id *samples, const uint64_t *sizes,
                                uint64_t count)
{
	struct nopfs_tier_spec spec = { .kind = NOPFS_TIER_RAM };
	nopfs_status status;

	memset(tier, 0, sizeof(*tier));
	tier_begin(tier, 0, NOPFS_TIER_RAM);
	tier->count = tier->primary_count = count;
	if (tier_arrays(tier, name) != NOPFS_OK) {
		tier_fini(tier);
		return NOPFS_ERR_NOMEM;
	}
	for (uint64_t i = 0; i < count; i++) {
		tier->samples[i] = samples[i];
		tier->offsets[i] = tier->bytes;
		tier->bytes += sizes[samples[i]];
		tier->fill_order[i] = i;
	}
	tier->offsets[count] = tier->bytes;
	if ((size_t)snprintf(tier->path, sizeof(tier->path), "%s/.%s", stage_dir, name) >=
	    sizeof(tier->path)) {
		nopfs_error("stage directory '%s' is too long", stage_dir);
		tier->path[0] = '\0';
		tier_fini(tier);
		return NOPFS_ERR_RANGE;
	}
	status = tier_open_file(tier, &spec, stage_dir, name, 0, 0, NULL);
	if (status != NOPFS_OK)
		tier_fini(tier);
	return status;
}

/* Binary search of @sample among positions [low, high) (sorted there). */
static int64_t search(const struct tier *tier, nopfs_sample_id sample, uint64_t low, uint64_t high)
{
	uint64_t end = high;

	while (low < high) {
		uint64_t middle = low + (high - low) / 2;

		if (tier->samples[middle] < sample)
			low = middle + 1;
		else
			high = middle;
	}
	return low < end && tier->samples[low] == sample ? (int64_t)low : -1;
}

int64_t tier_position(const struct tier *tier, nopfs_sample_id sample)
{
	int64_t position = search(tier, sample, 0, tier->primary_count);

	return position >= 0 ? position : search(tier, sample, tier->primary_count, tier->count);
}

nopfs_status tier_store(struct tier *tier, uint64_t position, const void *data)
{
	uint64_t offset = tier->offsets[position];
	uint64_t size = tier->offsets[position + 1] - offset;

	if (tier->base) {
		memcpy(tier->base + offset, data, size);
		return NOPFS_OK;
	}
	if (nopfs_pwrite_all(tier->fd, data, size, offset) != NOPFS_OK) {
		nopfs_status status = nopfs_status_from_errno(errno);

		nopfs_error("ssd tier '%s': writing %" PRIu64 " bytes at %" PRIu64 ": %m",
		            tier->path, size, offset);
		return status;
	}
	return NOPFS_OK;
}

nopfs_status tier_read(const struct tier *tier, uint64_t position, void *buffer)
{
	return tier_read_range(tier, position, 0, buffer,
	                       tier->offsets[position + 1] - tier->offsets[position]);
}

const void *tier_view(const struct tier *tier, uint64_t position, uint64_t offset)
{
	return tier->base ? tier->base + tier->offsets[position] + offset : NULL;
}

nopfs_status tier_read_range(const struct tier *tier, uint64_t position, uint64_t at, void *buffer,
                             uint64_t size)
{
	uint64_t offset = tier->offsets[position] + at;

	if (tier->base) {
		memcpy(buffer, tier->base + offset, size);
		return NOPFS_OK;
	}
	if (nopfs_pread_exact(tier->fd, buffer, size, offset) != NOPFS_OK) {
		nopfs_error("ssd tier '%s': reading %" PRIu64 " bytes at %" PRIu64 ": %m",
		            tier->path, size, offset);
		return NOPFS_ERR_IO;
	}
	return NOPFS_OK;
}

nopfs_status tier_copy_to_fd(const struct tier *tier, uint64_t position, int fd)
{
	off_t offset = (off_t)tier->offsets[position];
	uint64_t size = tier->offsets[position + 1] - tier->offsets[position], done = 0;

	if (tier->base)
		return nopfs_write_all(fd, tier->base + offset, size);
	while (done < size) {
		ssize_t sent = sendfile(fd, tier->fd, &offset, size - done);

		if (sent < 0 && errno == EINTR)
			continue;
		if (sent <= 0) {
			nopfs_error("ssd tier '%s': copying %" PRIu64 " bytes out: %m", tier->path,
			            size);
			return NOPFS_ERR_IO;
		}
		done += (uint64_t)sent;
	}
	return NOPFS_OK;
}

bool tier_claim(struct tier *tier, uint64_t position)
{
	uint8_t expected = TIER_ABSENT;

	return atomic_compare_exchange_strong(&tier->state[position], &expected, TIER_IN_FLIGHT);
}

enum tier_state tier_wait(struct tier *tier, uint64_t position, const struct timespec *deadline)
{
	uint8_t state;

	pthread_mutex_lock(&tier->lock);
	while (atomic_load(&tier->state[position]) == TIER_IN_FLIGHT) {
		int rc = deadline ? pthread_cond_timedwait(&tier->changed, &tier->lock, deadline)
		                  : pthread_cond_wait(&tier->changed, &tier->lock);

		if (rc == ETIMEDOUT)
			break;
	}
	state = atomic_load(&tier->state[position]);
	pthread_mutex_unlock(&tier->lock);
	return (enum tier_state)state;
}

void tier_publish(struct tier *tier, uint64_t position, enum tier_state state)
{
	pthread_mutex_lock(&tier->lock);
	atomic_store(&tier->state[position], (uint8_t)state);
	pthread_cond_broadcast(&tier->changed);
	pthread_mutex_unlock(&tier->lock);
}

void tier_wake_all(struct tier_set *set)
{
	for (unsigned int t = 0; t < set->count; t++) {
		pthread_mutex_lock(&set->tier[t].lock);
		pthread_cond_broadcast(&set->tier[t].changed);
		pthread_mutex_unlock(&set->tier[t].lock);
	}
}

nopfs_status tier_set_reorder(struct tier_set *set, const struct job *job, uint64_t *present,
                              uint64_t *bytes)
{
	*present = *bytes = 0;
	for (unsigned int t = 0; t < set->count; t++) {
		struct tier *tier = &set->tier[t];
		nopfs_status status = tier_order(tier, job);

		if (status != NOPFS_OK)
			return status;
		for (uint64_t i = 0; i < tier->count; i++)
			if (atomic_load(&tier->state[i]) == TIER_PRESENT) {
				(*present)++;
				*bytes += tier->offsets[i + 1] - tier->offsets[i];
			}
	}
	return NOPFS_OK;
}

void tier_set_move(struct tier_set *to, struct tier_set *from)
{
	memcpy(to, from, sizeof(*to));
	for (unsigned int t = 0; t < to->count; t++) {
		pthread_cond_destroy(&from->tier[t].changed);
		pthread_mutex_destroy(&from->tier[t].lock);
		pthread_mutex_init(&to->tier[t].lock, NULL);
		nopfs_clock_cond_init(&to->tier[t].changed);
	}
	memset(from, 0, sizeof(*from));
}
