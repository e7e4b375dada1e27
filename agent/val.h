/*
 * The validation set (--val-dataset): a second dataset the script reads after
 * every training epoch, DistributedSampler(shuffle=False) over the training
 * world (each rank its share, the same every pass) or, with --val-sampler
 * all, every rank the whole set. Either way a node reads the same samples
 * in every pass, so the placement keeps them where they are read: each node
 * its ranks' share, in RAM, taken from its first tier's room before the
 * training samples are placed (every node computes every node's share from
 * the validation catalog, node 0's, and the layout). The share is filled
 * from the PFS once, from the first request for it on (the training tiers'
 * fills of epoch 0 come first), and served from memory to requests
 * (OPEN_VAL) from then on.
 * Its reads are counted apart ("val" in the report).
 */
#ifndef NOPFS_AGENT_VAL_H
#define NOPFS_AGENT_VAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "plan/layout.h"
#include "plan/placement.h"
#include "plan/sampler.h"
#include "stats.h"
#include "task/wire.h"
#include "tier/tier.h"

struct val {
	struct nopfs_catalog *catalog; /* NULL: no validation set */
	char root[4096];
	bool all;                     /* every rank reads the whole set */
	struct nopfs_sampler sampler; /* shuffle=False over it, the training world */
	uint64_t *node_bytes;         /* per layout node: its ranks' share */
	nopfs_sample_id *share;       /* this node's share, in sample order */
	uint64_t share_count, share_bytes;
	struct tier tier; /* RAM: the part of the share its room holds */
	bool tier_made;
	struct agent_stats *stats; /* the agent's: PFS reads count there too */
	uint64_t size_limit;       /* larger samples are not served */
	unsigned int serve_timeout_ms;
	/* filling the share: a thread, from the first request on */
	pthread_t thread;
	bool thread_started;
	_Atomic bool wanted, stop;
	/* for the report */
	_Atomic uint64_t requests;
	struct agent_counter delivered_ram, delivered_pfs, filled, failed;
};

/* Nothing yet (val_fini() is always safe). */
void val_init(struct val *val);

/*
 * Take @catalog (the validation set at @root, owned from now on) for a job
 * of @world_size ranks laid out as @layout, with @all as its sampler; work
 * out every node's share (val->node_bytes) and this @node's (val->share).
 */
nopfs_status val_use_catalog(struct val *val, struct nopfs_catalog *catalog, const char *root,
                             bool all, const struct nopfs_layout *layout, uint32_t node);

/*
 * Take each node's share from its first tier's room in @tiers (layout nodes
 * entries, modified) before the training placement, when that tier is RAM
 * (@ram_first: every node's tiers are of the same kinds); this node's room
 * for it in *@room (0 without a RAM tier: the set is read from the PFS).
 */
void val_reserve(const struct val *val, struct nopfs_node_tiers *tiers, uint32_t nodes,
                 uint32_t node, bool ram_first, uint64_t *room);

/* Create this node's tier in @stage_dir for the part of its share @room holds. */
nopfs_status val_tier_create(struct val *val, const char *stage_dir, uint64_t room,
                             struct agent_stats *stats, uint64_t size_limit,
                             unsigned int serve_timeout_ms);

/* Start and stop the thread that fills the tier (from the first request on). */
nopfs_status val_start(struct val *val);
void val_stop(struct val *val);

/*
 * A request for @path (relative to the validation set's root): a sealed
 * read-only copy in *fd, with the sample's index, size and label, and where
 * it came from; @buffer has room for job's largest sample (@buffer_size).
 * NOPFS_ERR_NOT_FOUND: not a sample of the set; NOPFS_ERR_UNSUPPORTED:
 * larger than the buffer (the rank reads it itself).
 */
nopfs_status val_serve(struct val *val, const char *path, void *buffer, uint64_t buffer_size,
                       int *fd, struct nopfs_wire_message *sample);

void val_fini(struct val *val);

/* The report's "val" object (NULL without a validation set). */
json_t *val_json(const struct val *val);

#endif
