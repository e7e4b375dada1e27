/* The (sample, epoch) -> node table, built epoch-parallel. */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "common/log.h"
#include "common/parallel.h"

/* How far ahead the scatter prefetches its random targets. */
#define SCATTER_AHEAD 16

struct build_job {
	const struct nopfs_sampler *sampler;
	const struct nopfs_layout *layout;
	struct nopfs_access_table *table;
	unsigned int first_epoch, stride; /* epochs first_epoch, +stride, ... */
	uint64_t extras_per_epoch;
	nopfs_status status;
};

static inline void store_node(struct nopfs_access_table *table, uint64_t at, uint32_t node)
{
	if (table->width == 1)
		((uint8_t *)table->entries)[at] = (uint8_t)node;
	else
		((uint16_t *)table->entries)[at] = (uint16_t)node;
}

static inline void prefetch_entry(const struct nopfs_access_table *table, uint64_t at)
{
	__builtin_prefetch((const char *)table->entries + at * table->width, 1, 0);
}

static void build_epoch(struct build_job *job, uint32_t *perm, uint32_t epoch)
{
	const struct nopfs_sampler *sampler = job->sampler;
	struct nopfs_access_table *table = job->table;
	const uint32_t *node_of_rank = job->layout->node_of_rank;
	uint64_t samples = sampler->count;
	uint64_t total = nopfs_sampler_total_size(sampler);
	uint64_t regular = total < samples ? total : samples;
	uint32_t world = sampler->world_size;
	uint32_t rank = 0;
	struct nopfs_access_extra *extra = table->extras + (uint64_t)epoch * job->extras_per_epoch;

	nopfs_sampler_permutation(sampler, epoch, perm);
	/* a multiple of W: rank 0's position, like position 0 */
	for (uint64_t p = nopfs_sampler_first_position(sampler, epoch); p < regular; p++) {
		if (p + SCATTER_AHEAD < regular)
			prefetch_entry(table,
			               (uint64_t)perm[p + SCATTER_AHEAD] * table->epochs + epoch);
		store_node(table, (uint64_t)perm[p] * table->epochs + epoch, node_of_rank[rank]);
		if (++rank == world)
			rank = 0;
	}
	/* padding is at each rank's last index, never before first_index */
	for (uint64_t p = samples; p < total; p++) {
		extra->sample = nopfs_sampler_at(sampler, perm, p);
		extra->node = node_of_rank[p % world];
		extra->epoch = epoch;
		extra++;
	}
}

static void build_worker(void *arg)
{
	struct build_job *job = arg;
	uint32_t *perm = malloc(job->sampler->count * sizeof(*perm));

	if (!perm) {
		job->status = NOPFS_ERR_NOMEM;
		return;
	}
	for (uint32_t e = job->first_epoch; e < job->table->epochs; e += job->stride)
		build_epoch(job, perm, e);
	free(perm);
	job->status = NOPFS_OK;
}

static int compare_extras(const void *a, const void *b)
{
	const struct nopfs_access_extra *x = a, *y = b;

	if (x->sample != y->sample)
		return x->sample < y->sample ? -1 : 1;
	if (x->epoch != y->epoch)
		return x->epoch < y->epoch ? -1 : 1;
	return (x->node > y->node) - (x->node < y->node);
}

nopfs_status nopfs_access_table_build(const struct nopfs_sampler *sampler, uint32_t epochs,
                                      const struct nopfs_layout *layout, unsigned int threads,
                                      struct nopfs_access_table **out)
{
	struct nopfs_access_table *table;
	uint64_t total, extras_per_epoch, bytes;
	nopfs_status status;

	status = nopfs_sampler_validate(sampler);
	if (status != NOPFS_OK)
		return status;
	if (sampler->world_size != layout->world_size) {
		nopfs_error("sampler world size %" PRIu32 " differs from the layout's %" PRIu32,
		            sampler->world_size, layout->world_size);
		return NOPFS_ERR_INVALID;
	}
	if (epochs == 0 || layout->nodes >= UINT16_MAX) {
		nopfs_error("%" PRIu32 " epochs on %" PRIu32
		            " nodes: need at least 1 epoch and fewer than 65535 nodes",
		            epochs, layout->nodes);
		return NOPFS_ERR_RANGE;
	}
	if (threads == 0)
		threads = 1;
	if (threads > epochs)
		threads = epochs;

	table = calloc(1, sizeof(*table));
	if (!table)
		goto out_nomem;
	table->samples = sampler->count;
	table->epochs = epochs;
	table->nodes = layout->nodes;
	table->width = layout->nodes < UINT8_MAX ? 1 : 2;
	bytes = table->samples * epochs * table->width;
	table->entries = malloc(bytes);
	if (!table->entries)
		goto out_free_table;
	/* drop_last leaves some samples unread in an epoch: "no node". */
	memset(table->entries, 0xff, bytes);

	total = nopfs_sampler_total_size(sampler);
	extras_per_epoch = total > sampler->count ? total - sampler->count : 0;
	table->extra_count = extras_per_epoch * epochs;
	table->extras =
	        malloc((table->extra_count ? table->extra_count : 1) * sizeof(*table->extras));
	if (!table->extras)
		goto out_free_entries;

	{
		struct build_job jobs[threads];

		for (unsigned int t = 0; t < threads; t++)
			jobs[t] = (struct build_job){ .sampler = sampler,
				                      .layout = layout,
				                      .table = table,
				                      .first_epoch = t,
				                      .stride = threads,
				                      .extras_per_epoch = extras_per_epoch,
				                      .status = NOPFS_OK };
		nopfs_parallel_run(build_worker, jobs, sizeof(jobs[0]), threads);
		for (unsigned int t = 0; t < threads; t++)
			if (jobs[t].status != NOPFS_OK)
				status = jobs[t].status;
	}
	if (status != NOPFS_OK)
		goto out_free_extras;
	qsort(table->extras, table->extra_count, sizeof(*table->extras), compare_extras);
	*out = table;
	return NOPFS_OK;

out_free_extras:
	free(table->extras);
out_free_entries:
	free(table->entries);
out_free_table:
	free(table);
out_nomem:
	nopfs_error("no memory for the access table of %" PRIu64 " samples x %" PRIu32
	            " epochs (%.2f GiB)",
	            sampler->count, epochs,
	            (double)sampler->count * epochs * (layout->nodes < UINT8_MAX ? 1 : 2) /
	                    (1 << 30));
	return NOPFS_ERR_NOMEM;
}

void nopfs_access_table_destroy(struct nopfs_access_table *table)
{
	if (!table)
		return;
	free(table->extras);
	free(table->entries);
	free(table);
}

nopfs_status nopfs_access_tally_init(struct nopfs_access_tally *tally,
                                     const struct nopfs_access_table *table)
{
	memset(tally, 0, sizeof(*tally));
	tally->count = calloc(table->nodes, sizeof(uint32_t));
	tally->first_epoch = calloc(table->nodes, sizeof(uint32_t));
	tally->touched = calloc(table->nodes, sizeof(uint32_t));
	if (!tally->count || !tally->first_epoch || !tally->touched) {
		nopfs_access_tally_fini(tally);
		nopfs_error("no memory to count reads on %" PRIu32 " nodes", table->nodes);
		return NOPFS_ERR_NOMEM;
	}
	return NOPFS_OK;
}

void nopfs_access_tally_fini(struct nopfs_access_tally *tally)
{
	free(tally->touched);
	free(tally->first_epoch);
	free(tally->count);
	memset(tally, 0, sizeof(*tally));
}

void nopfs_access_tally_seek(struct nopfs_access_tally *tally,
                             const struct nopfs_access_table *table, uint64_t sample)
{
	uint64_t low = 0, high = table->extra_count;

	while (low < high) {
		uint64_t middle = low + (high - low) / 2;

		if (table->extras[middle].sample < sample)
			low = middle + 1;
		else
			high = middle;
	}
	tally->extra = low;
}

static inline void tally_read(struct nopfs_access_tally *tally, uint32_t node, uint32_t epoch)
{
	if (tally->count[node]++ == 0) {
		tally->first_epoch[node] = epoch;
		tally->touched[tally->touched_count++] = node;
	}
}

unsigned int nopfs_access_tally_sample(struct nopfs_access_tally *tally,
                                       const struct nopfs_access_table *table, uint64_t sample)
{
	const struct nopfs_access_extra *extras = table->extras;
	uint64_t x = tally->extra;

	for (unsigned int i = 0; i < tally->touched_count; i++)
		tally->count[tally->touched[i]] = 0;
	tally->touched_count = 0;
	for (uint32_t e = 0; e < table->epochs; e++) {
		uint32_t node = nopfs_access_node(table, sample, e);

		if (node != NOPFS_NO_NODE)
			tally_read(tally, node, e);
		/* Padding reads of this epoch come after its regular reads. */
		for (; x < table->extra_count && extras[x].sample == sample && extras[x].epoch == e;
		     x++)
			tally_read(tally, extras[x].node, e);
	}
	tally->extra = x;
	return tally->touched_count;
}
