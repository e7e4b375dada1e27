/*
 * Who reads what, when: for every sample and epoch, the node whose rank reads
 * it under the DistributedSampler stream. This is the input of placement.
 *
 * Each epoch reads every sample once through a position < F; the padding
 * positions F .. total_size-1 (no drop_last) read a few samples a second time
 * and are kept apart as "extras"; with drop_last the positions >= total_size
 * are not read at all. The table holds one node id per (sample, epoch): E x F
 * entries of 1 byte (fewer than 255 nodes) or 2 bytes (fewer than 65535).
 * It is built epoch-parallel; the result does not depend on the thread count.
 */
#ifndef NOPFS_ACCESS_H
#define NOPFS_ACCESS_H

#include <stdint.h>

#include "layout.h"
#include "sampler.h"
#include "common/status.h"

#define NOPFS_NO_NODE UINT32_MAX

/* A padding access: @sample is read a second time in @epoch by @node. */
struct nopfs_access_extra {
	uint32_t sample;
	uint32_t node;
	uint32_t epoch;
};

struct nopfs_access_table {
	uint64_t samples; /* F */
	uint32_t epochs;  /* E */
	uint32_t nodes;
	unsigned int width; /* bytes per entry: 1 or 2 */
	void *entries;      /* [sample][epoch] */
	uint64_t extra_count;
	struct nopfs_access_extra *extras; /* sorted by sample, then epoch */
};

/*
 * Replay @epochs epochs of @sampler (its world_size must equal the layout's)
 * over @layout with @threads threads (0 means 1). On success *out owns a new
 * table (nopfs_access_table_destroy()). NOPFS_ERR_NOMEM names the size.
 */
nopfs_status nopfs_access_table_build(const struct nopfs_sampler *sampler, uint32_t epochs,
                                      const struct nopfs_layout *layout, unsigned int threads,
                                      struct nopfs_access_table **out);

void nopfs_access_table_destroy(struct nopfs_access_table *table);

/* The node reading @sample at its regular position in @epoch, or NOPFS_NO_NODE. */
static inline uint32_t nopfs_access_node(const struct nopfs_access_table *table, uint64_t sample,
                                         uint32_t epoch)
{
	uint64_t at = sample * table->epochs + epoch;

	if (table->width == 1) {
		uint8_t node = ((const uint8_t *)table->entries)[at];

		return node == UINT8_MAX ? NOPFS_NO_NODE : node;
	} else {
		uint16_t node = ((const uint16_t *)table->entries)[at];

		return node == UINT16_MAX ? NOPFS_NO_NODE : node;
	}
}

/*
 * Per-sample read counts by node, gathered in one pass over a sample's reads:
 * after nopfs_access_tally_sample(), count[n] is how often node n reads the
 * sample over all epochs, first_epoch[n] its first epoch, and touched[] lists
 * the nodes that read it in order of their first read (epoch, regular read
 * before padding). Visit samples in increasing order, or seek first.
 */
struct nopfs_access_tally {
	uint32_t *count;       /* nodes entries */
	uint32_t *first_epoch; /* nodes entries, valid for touched nodes */
	uint32_t *touched;     /* nodes entries */
	unsigned int touched_count;
	uint64_t extra; /* next extra to look at */
};

/* Allocate for @table's nodes (logs on failure). */
nopfs_status nopfs_access_tally_init(struct nopfs_access_tally *tally,
                                     const struct nopfs_access_table *table);
void nopfs_access_tally_fini(struct nopfs_access_tally *tally);

/* Position the tally for @sample (a binary search among the extras). */
void nopfs_access_tally_seek(struct nopfs_access_tally *tally,
                             const struct nopfs_access_table *table, uint64_t sample);

/*
 * Clear the previous sample's counts and tally @sample, which must be the
 * sample after the previous one or the one sought. Returns touched_count.
 */
unsigned int nopfs_access_tally_sample(struct nopfs_access_tally *tally,
                                       const struct nopfs_access_table *table, uint64_t sample);

#endif
