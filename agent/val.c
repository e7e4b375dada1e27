/* The validation set: every node's share, this node's tier of it, its requests. */
#define _GNU_SOURCE 1
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pfs.h"
#include "stage/stage.h"
#include "val.h"
#include "common/clock.h"
#include "common/fdio.h"
#include "common/log.h"
#include "common/units.h"

/* How often the filling thread looks whether it is wanted yet. */
#define VAL_IDLE_MS 100

void val_init(struct val *val)
{
	memset(val, 0, sizeof(*val));
	val->tier.fd = -1;
}

/*
 * Mark in @seen (the set's count entries, cleared) the samples node @node's
 * ranks read in a pass; their count and bytes in *count, *bytes.
 */
static void node_share(const struct val *val, const struct nopfs_layout *layout, uint32_t node,
                       uint8_t *seen, uint64_t *count, uint64_t *bytes)
{
	uint64_t total = nopfs_sampler_total_size(&val->sampler), samples = val->sampler.count;
	const uint64_t *sizes = nopfs_catalog_sizes(val->catalog);

	*count = *bytes = 0;
	if (layout->tasks_on_node[node] == 0)
		return;
	for (uint64_t k = 0; val->all && k < samples; k++)
		seen[k] = 1;
	/* DistributedSampler(shuffle=False): rank r reads positions r, r + W, ... */
	for (uint64_t p = 0; !val->all && p < total; p++) {
		uint64_t k = p < samples ? p : p % samples;

		if (layout->node_of_rank[p % val->sampler.world_size] == node)
			seen[k] = 1;
	}
	for (uint64_t k = 0; k < samples; k++) {
		if (seen[k]) {
			(*count)++;
			*bytes += sizes[k];
		}
	}
}

nopfs_status val_use_catalog(struct val *val, struct nopfs_catalog *catalog, const char *root,
                             bool all, const struct nopfs_layout *layout, uint32_t node)
{
	uint8_t *seen;
	uint64_t count, bytes;

	val->catalog = catalog;
	snprintf(val->root, sizeof(val->root), "%s", root);
	val->all = all;
	val->sampler = (struct nopfs_sampler){ .count = nopfs_catalog_count(catalog),
		                               .world_size = layout->world_size };
	val->node_bytes = calloc(layout->nodes, sizeof(*val->node_bytes));
	seen = malloc(val->sampler.count);
	val->share = malloc(val->sampler.count * sizeof(*val->share));
	if (!val->node_bytes || !seen || !val->share) {
		free(seen);
		nopfs_error("no memory for the shares of the validation set's %" PRIu64 " samples",
		            val->sampler.count);
		return NOPFS_ERR_NOMEM;
	}
	for (uint32_t n = 0; n < layout->nodes; n++) {
		memset(seen, 0, val->sampler.count);
		node_share(val, layout, n, seen, &count, &bytes);
		val->node_bytes[n] = bytes;
		if (n != node)
			continue;
		for (uint64_t k = 0; k < val->sampler.count; k++)
			if (seen[k])
				val->share[val->share_count++] = (nopfs_sample_id)k;
		val->share_bytes = bytes;
	}
	free(seen);
	return NOPFS_OK;
}

void val_reserve(const struct val *val, struct nopfs_node_tiers *tiers, uint32_t nodes,
                 uint32_t node, bool ram_first, uint64_t *room)
{
	*room = 0;
	if (!val->catalog)
		return;
	if (!ram_first) {
		nopfs_warning("validation set: the first tier is not RAM: the set is read from "
		              "the PFS");
		return;
	}
	for (uint32_t n = 0; n < nodes; n++) {
		uint64_t take;

		if (tiers[n].count == 0)
			continue;
		take = val->node_bytes[n] < tiers[n].capacity[0] ? val->node_bytes[n]
		                                                 : tiers[n].capacity[0];
		tiers[n].capacity[0] -= take;
		if (n == node)
			*room = take;
	}
}

nopfs_status val_tier_create(struct val *val, const char *stage_dir, uint64_t room,
                             struct agent_stats *stats, uint64_t size_limit,
                             unsigned int serve_timeout_ms)
{
	const uint64_t *sizes = nopfs_catalog_sizes(val->catalog);
	uint64_t count = 0, bytes = 0;
	char held[32], share[32];
	nopfs_status status;

	val->stats = stats;
	val->size_limit = size_limit;
	val->serve_timeout_ms = serve_timeout_ms;
	/* the share in sample order, as much of it as the room holds */
	while (count < val->share_count && bytes + sizes[val->share[count]] <= room)
		bytes += sizes[val->share[count++]];
	status = tier_create_listed(&val->tier, stage_dir, "val-tier", val->share, sizes, count);
	if (status != NOPFS_OK)
		return status;
	val->tier_made = true;
	nopfs_info("validation set: this node keeps %" PRIu64 " of its ranks' %" PRIu64
	           " samples (%s of %s) in RAM",
	           count, val->share_count, nopfs_format_size(bytes, held, sizeof(held)),
	           nopfs_format_size(val->share_bytes, share, sizeof(share)));
	return NOPFS_OK;
}

/*
 * Make @position of the tier present: fetch it from the PFS into @buffer if
 * it is absent, else wait for the one fetching it until @deadline (NULL: no
 * limit). Its state afterwards.
 */
static enum tier_state fill(struct val *val, uint64_t position, void *buffer,
                            const struct timespec *deadline)
{
	struct tier *tier = &val->tier;

	for (;;) {
		enum tier_state state = atomic_load(&tier->state[position]);
		uint64_t size = tier->offsets[position + 1] - tier->offsets[position];

		if (state == TIER_PRESENT || state == TIER_FAILED)
			return state;
		if (tier_claim(tier, position)) {
			nopfs_status status = pfs_read_sample(val->catalog, tier->samples[position],
			                                      buffer, val->stats);

			if (status == NOPFS_OK)
				status = tier_store(tier, position, buffer);
			tier_publish(tier, position,
			             status == NOPFS_OK ? TIER_PRESENT : TIER_FAILED);
			agent_count(status == NOPFS_OK ? &val->filled : &val->failed, size);
			return status == NOPFS_OK ? TIER_PRESENT : TIER_FAILED;
		}
		state = tier_wait(tier, position, deadline);
		if (state == TIER_IN_FLIGHT)
			return state; /* past the deadline */
	}
}

static void *fill_main(void *arg)
{
	struct val *val = arg;
	void *buffer = malloc(val->size_limit ? val->size_limit : 1);

	while (buffer && !atomic_load(&val->stop)) {
		if (!atomic_load(&val->wanted)) {
			struct timespec pause = { 0, VAL_IDLE_MS * 1000000L };

			nanosleep(&pause, NULL);
			continue;
		}
		for (uint64_t p = 0; p < val->tier.count && !atomic_load(&val->stop); p++) {
			struct timespec deadline =
			        nopfs_clock_deadline_after_ms(val->serve_timeout_ms);

			if (val->tier.offsets[p + 1] - val->tier.offsets[p] <= val->size_limit)
				fill(val, p, buffer, &deadline);
		}
		break;
	}
	free(buffer);
	return NULL;
}

nopfs_status val_start(struct val *val)
{
	if (!val->tier_made || val->tier.count == 0)
		return NOPFS_OK;
	/* idle until the first pass over the set: epoch 0's training reads come first */
	if (pthread_create(&val->thread, NULL, fill_main, val) != 0) {
		nopfs_warning("validation set: no thread to fill its tier: it fills on request");
		return NOPFS_OK;
	}
	val->thread_started = true;
	return NOPFS_OK;
}

void val_stop(struct val *val)
{
	atomic_store(&val->stop, true);
	if (val->thread_started)
		pthread_join(val->thread, NULL);
	val->thread_started = false;
}

/* A sealed, read-only copy of the @size bytes at @data. */
static nopfs_status sealed_copy(const void *data, uint64_t size, int *fd)
{
	int copy = memfd_create("nopfs-val", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (copy < 0)
		return NOPFS_ERR_NOMEM;
	if (nopfs_write_all(copy, data, size) != NOPFS_OK || stage_seal_copy(copy) != NOPFS_OK) {
		close(copy);
		return NOPFS_ERR_IO;
	}
	*fd = copy;
	return NOPFS_OK;
}

nopfs_status val_serve(struct val *val, const char *path, void *buffer, uint64_t buffer_size,
                       int *fd, struct nopfs_wire_message *reply)
{
	struct timespec deadline;
	int64_t found, position = -1;
	uint64_t size;
	nopfs_status status;

	atomic_fetch_add(&val->requests, 1);
	found = val->catalog ? nopfs_catalog_find(val->catalog, path) : -1;
	if (found < 0)
		return NOPFS_ERR_NOT_FOUND;
	size = nopfs_catalog_size(val->catalog, (uint64_t)found);
	if (size > buffer_size || size > val->size_limit)
		return NOPFS_ERR_UNSUPPORTED;
	/* a pass has begun: fill the rest of the share now */
	atomic_store(&val->wanted, true);
	if (val->tier_made)
		position = tier_position(&val->tier, (nopfs_sample_id)found);
	deadline = nopfs_clock_deadline_after_ms(val->serve_timeout_ms);
	if (position >= 0 && fill(val, (uint64_t)position, buffer, &deadline) == TIER_PRESENT) {
		status = tier_read(&val->tier, (uint64_t)position, buffer);
		reply->u.sample.source = NOPFS_FROM_RAM;
	} else {
		status = pfs_read_sample(val->catalog, (nopfs_sample_id)found, buffer, val->stats);
		reply->u.sample.source = NOPFS_FROM_PFS;
	}
	if (status == NOPFS_OK)
		status = sealed_copy(buffer, size, fd);
	if (status != NOPFS_OK)
		return status;
	agent_count(reply->u.sample.source == NOPFS_FROM_RAM ? &val->delivered_ram
	                                                     : &val->delivered_pfs,
	            size);
	reply->u.sample.index = (uint64_t)found;
	reply->u.sample.size = size;
	reply->u.sample.label = nopfs_catalog_label(val->catalog, (uint64_t)found);
	return NOPFS_OK;
}

void val_fini(struct val *val)
{
	val_stop(val);
	if (val->tier_made)
		tier_fini(&val->tier);
	nopfs_catalog_destroy(val->catalog);
	free(val->node_bytes);
	free(val->share);
	val_init(val);
}

static json_t *counter_pair(const struct agent_counter *counter)
{
	return json_pack("{s:I, s:I}", "samples", (json_int_t)atomic_load(&counter->count), "bytes",
	                 (json_int_t)atomic_load(&counter->bytes));
}

json_t *val_json(const struct val *val)
{
	if (!val->catalog)
		return NULL;
	return json_pack(
	        "{s:s, s:s, s:I, s:I, s:{s:I, s:I}, s:{s:I, s:I}, s:I, s:{s:o, s:o}, "
	        "s:o, s:o}",
	        "dataset", val->root, "sampler", val->all ? "all" : "distributed", "samples",
	        (json_int_t)val->sampler.count, "bytes",
	        (json_int_t)nopfs_catalog_total_bytes(val->catalog), "share", "samples",
	        (json_int_t)val->share_count, "bytes", (json_int_t)val->share_bytes, "kept",
	        "samples", (json_int_t)val->tier.count, "bytes", (json_int_t)val->tier.bytes,
	        "requests", (json_int_t)atomic_load(&val->requests), "delivered", "ram",
	        counter_pair(&val->delivered_ram), "pfs", counter_pair(&val->delivered_pfs),
	        "filled", counter_pair(&val->filled), "failed", counter_pair(&val->failed));
}
