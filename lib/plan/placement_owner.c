/*
 * Owner-first, coverage-aware placement (see placement.h for the rules):
 * owners, owners fill their tiers, coverage of what did not fit, replicas.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/parallel.h"
#include "placement_internal.h"

/* ------------------------------------------------------------------------
 * 1. Owners: the node reading a sample first, so that the first epoch's
 *    reads are the owners' own fetches from the PFS and no rank waits on
 *    another node for them; a node that already holds the sample first
 *    (placement.h, held): the first reader among them, else the first of
 *    them.
 */

/* Whether @node holds @sample from an earlier job. */
static bool holds(const struct nopfs_placement *p, uint32_t node, uint64_t sample)
{
	return p->held && p->held[node] && (p->held[node][sample >> 3] >> (sample & 7)) & 1;
}

struct owner_job {
	struct nopfs_placement *p;
	uint64_t begin, end;
	nopfs_status status;
};

static void owner_worker(void *arg)
{
	struct owner_job *job = arg;
	struct nopfs_placement *p = job->p;
	struct nopfs_access_tally tally;

	job->status = nopfs_access_tally_init(&tally, p->table);
	if (job->status != NOPFS_OK)
		return;
	nopfs_access_tally_seek(&tally, p->table, job->begin);
	for (uint64_t k = job->begin; k < job->end; k++) {
		unsigned int touched = nopfs_access_tally_sample(&tally, p->table, k);
		uint32_t owner = NOPFS_NO_NODE, reads = 0;
		bool held = false;

		/* touched[] is in first-read order: the first reader, or the first that holds it.
		 */
		for (unsigned int i = 0; i < touched; i++) {
			uint32_t n = tally.touched[i];
			bool has = holds(p, n, k);

			if (owner == NOPFS_NO_NODE || (has && !held)) {
				reads = tally.count[n];
				owner = n;
				held = has;
			}
		}
		/*
		 * Kept by a node that does not read it: owned there all the
		 * same (last in its fill order), its readers fill from it.
		 */
		for (uint32_t n = 0; p->held && !held && n < p->nodes; n++) {
			if (holds(p, n, k)) {
				owner = n;
				reads = 0;
				held = true;
			}
		}
		p->owner[k] = owner;
		p->owner_reads[k] = reads;
		p->owner_first[k] = owner == NOPFS_NO_NODE ? 0
		                    : reads == 0           ? p->epochs
		                                           : tally.first_epoch[owner];
	}
	nopfs_access_tally_fini(&tally);
}

static nopfs_status find_owners(struct nopfs_placement *p)
{
	unsigned int threads = p->threads;
	struct owner_job *jobs = calloc(threads, sizeof(*jobs));
	nopfs_status status = NOPFS_OK;

	p->owner = malloc(p->samples * sizeof(*p->owner));
	p->owner_reads = malloc(p->samples * sizeof(*p->owner_reads));
	p->owner_first = malloc(p->samples * sizeof(*p->owner_first));
	if (!jobs || !p->owner || !p->owner_reads || !p->owner_first) {
		free(jobs);
		nopfs_error("no memory for the owners of %" PRIu64 " samples", p->samples);
		return NOPFS_ERR_NOMEM;
	}
	for (unsigned int t = 0; t < threads; t++) {
		jobs[t].p = p;
		jobs[t].begin = p->samples * t / threads;
		jobs[t].end = p->samples * (t + 1) / threads;
	}
	nopfs_parallel_run(owner_worker, jobs, sizeof(*jobs), threads);
	for (unsigned int t = 0; t < threads; t++)
		if (jobs[t].status != NOPFS_OK)
			status = jobs[t].status;
	free(jobs);
	return status;
}

static uint64_t owner_key(const struct nopfs_placement *p, uint64_t sample)
{
	return nopfs_placement_key(p->owner_reads[sample], p->owner_first[sample],
	                           (uint32_t)sample);
}

/* ------------------------------------------------------------------------
 * 2. Owners keep their samples, most read first, fastest tier with room.
 */

struct fill_job {
	struct nopfs_placement *p;
	uint64_t *keys;         /* all samples bucketed by owner */
	const uint64_t *bucket; /* nodes + 1 offsets into keys */
	uint64_t *left;         /* per node: keys that did not fit, compacted to the bucket front */
	uint32_t first_node, end_node;
};

static void fill_worker(void *arg)
{
	struct fill_job *job = arg;
	struct nopfs_placement *p = job->p;

	for (uint32_t n = job->first_node; n < job->end_node; n++) {
		uint64_t *keys = job->keys + job->bucket[n];
		uint64_t count = job->bucket[n + 1] - job->bucket[n], left = 0;

		nopfs_keys_sort(keys, count);
		for (uint64_t i = 0; i < count; i++) {
			uint32_t sample = nopfs_key_sample(keys[i]);
			int tier = nopfs_placement_room(p, n, p->sizes[sample]);

			if (tier >= 0)
				nopfs_placement_keep(p, n, (unsigned int)tier, sample, true);
			else
				keys[left++] = keys[i];
		}
		job->left[n] = left;
	}
}

/*
 * Bucket the owned samples by owner, fill every owner (in parallel: owners
 * are disjoint), and return the samples that did not fit, sorted by key.
 */
static nopfs_status fill_owners(struct nopfs_placement *p, uint64_t **uncovered,
                                uint64_t *uncovered_count)
{
	uint64_t *bucket = calloc((size_t)p->nodes + 1, sizeof(*bucket));
	uint64_t *left = calloc(p->nodes, sizeof(*left));
	uint64_t *keys = malloc(p->samples * sizeof(*keys));
	unsigned int threads = p->threads < p->nodes ? p->threads : p->nodes;
	struct fill_job *jobs = calloc(threads, sizeof(*jobs));
	uint64_t at = 0;

	if (!bucket || !left || !keys || !jobs) {
		free(jobs);
		free(keys);
		free(left);
		free(bucket);
		nopfs_error("no memory to fill the tiers of %" PRIu32 " nodes", p->nodes);
		return NOPFS_ERR_NOMEM;
	}
	for (uint64_t k = 0; k < p->samples; k++)
		if (p->owner[k] != NOPFS_NO_NODE)
			bucket[p->owner[k] + 1]++;
	for (uint32_t n = 0; n < p->nodes; n++)
		bucket[n + 1] += bucket[n];
	{
		uint64_t *next = left; /* borrowed as fill cursors */

		memcpy(next, bucket, p->nodes * sizeof(*next));
		for (uint64_t k = 0; k < p->samples; k++)
			if (p->owner[k] != NOPFS_NO_NODE)
				keys[next[p->owner[k]]++] = owner_key(p, k);
	}
	for (unsigned int t = 0; t < threads; t++)
		jobs[t] = (struct fill_job){
			.p = p,
			.keys = keys,
			.bucket = bucket,
			.left = left,
			.first_node = (uint32_t)((uint64_t)p->nodes * t / threads),
			.end_node = (uint32_t)((uint64_t)p->nodes * (t + 1) / threads)
		};
	nopfs_parallel_run(fill_worker, jobs, sizeof(*jobs), threads);
	for (uint32_t n = 0; n < p->nodes; n++) {
		memmove(keys + at, keys + bucket[n], left[n] * sizeof(*keys));
		at += left[n];
	}
	nopfs_keys_sort(keys, at);
	free(jobs);
	free(left);
	free(bucket);
	*uncovered = keys;
	*uncovered_count = at;
	return NOPFS_OK;
}

/* ------------------------------------------------------------------------
 * 3. Coverage: samples whose owner was full go to readers with room, then
 *    to any node with room. A max-tree over the nodes' largest free room
 *    finds "the first node at or after the cursor with room for s" fast.
 */

struct room_tree {
	uint32_t leaves; /* power of two >= nodes */
	uint64_t *max;   /* 2 * leaves; leaf i at leaves + i */
};

static uint64_t node_largest_room(const struct nopfs_placement *p, uint32_t node)
{
	uint64_t largest = 0;

	for (unsigned int t = 0; t < p->tiers[node].count; t++) {
		uint64_t room = p->free_room[(size_t)node * NOPFS_TIERS_MAX + t];

		if (room > largest)
			largest = room;
	}
	return largest;
}

static void room_tree_update(struct room_tree *tree, const struct nopfs_placement *p, uint32_t node)
{
	uint32_t i = tree->leaves + node;

	tree->max[i] = node_largest_room(p, node);
	for (i /= 2; i >= 1; i /= 2)
		tree->max[i] = tree->max[2 * i] > tree->max[2 * i + 1] ? tree->max[2 * i]
		                                                       : tree->max[2 * i + 1];
}

static nopfs_status room_tree_init(struct room_tree *tree, const struct nopfs_placement *p)
{
	tree->leaves = 1;
	while (tree->leaves < p->nodes)
		tree->leaves *= 2;
	tree->max = calloc(2 * (size_t)tree->leaves, sizeof(*tree->max));
	if (!tree->max) {
		nopfs_error("no memory for the room tree of %" PRIu32 " nodes", p->nodes);
		return NOPFS_ERR_NOMEM;
	}
	for (uint32_t n = 0; n < p->nodes; n++)
		room_tree_update(tree, p, n);
	return NOPFS_OK;
}

/* The first node in [from, nodes) whose largest room is >= @size, or NOPFS_NO_NODE. */
static uint32_t room_tree_find(const struct room_tree *tree, uint32_t from, uint64_t size,
                               uint32_t i, uint32_t low, uint32_t high)
{
	uint32_t middle, found;

	if (high <= from || tree->max[i] < size)
		return NOPFS_NO_NODE;
	if (high - low == 1)
		return low;
	middle = low + (high - low) / 2;
	found = room_tree_find(tree, from, size, 2 * i, low, middle);
	if (found != NOPFS_NO_NODE)
		return found;
	return room_tree_find(tree, from, size, 2 * i + 1, middle, high);
}

/* The reader of @sample with room, most reads first, ties to the first reader. */
static uint32_t best_reader_with_room(const struct nopfs_placement *p,
                                      const struct nopfs_access_tally *tally, uint64_t size)
{
	uint32_t best = NOPFS_NO_NODE, best_reads = 0;

	for (unsigned int i = 0; i < tally->touched_count; i++) {
		uint32_t n = tally->touched[i];

		if (tally->count[n] > best_reads && nopfs_placement_room(p, n, size) >= 0) {
			best = n;
			best_reads = tally->count[n];
		}
	}
	return best;
}

static nopfs_status cover(struct nopfs_placement *p, const uint64_t *uncovered, uint64_t count)
{
	struct nopfs_access_tally tally;
	struct room_tree tree;
	uint32_t cursor = 0;
	nopfs_status status;

	status = room_tree_init(&tree, p);
	if (status != NOPFS_OK)
		return status;
	status = nopfs_access_tally_init(&tally, p->table);
	if (status != NOPFS_OK)
		goto out_free_tree;
	for (uint64_t i = 0; i < count && tree.max[1] > 0; i++) {
		uint32_t sample = nopfs_key_sample(uncovered[i]);
		uint64_t size = p->sizes[sample];
		uint32_t node;

		if (size > tree.max[1] || size > p->max_size)
			continue; /* no node has room for it, or it is never kept */
		nopfs_access_tally_seek(&tally, p->table, sample);
		nopfs_access_tally_sample(&tally, p->table, sample);
		node = best_reader_with_room(p, &tally, size);
		if (node == NOPFS_NO_NODE) {
			node = room_tree_find(&tree, cursor, size, 1, 0, tree.leaves);
			if (node == NOPFS_NO_NODE)
				node = room_tree_find(&tree, 0, size, 1, 0, tree.leaves);
			cursor = node + 1 < p->nodes ? node + 1 : 0;
		}
		nopfs_placement_keep(p, node, (unsigned int)nopfs_placement_room(p, node, size),
		                     sample, true);
		room_tree_update(&tree, p, node);
	}
	nopfs_access_tally_fini(&tally);
out_free_tree:
	free(tree.max);
	return status;
}

/* ------------------------------------------------------------------------
 * 4. Replicas: room left on a node in scope takes what it reads most.
 */

static bool replica_wanted(const struct nopfs_placement *p, uint32_t node, uint64_t sample)
{
	return p->local_tier[node] && p->local_tier[node][sample] == 0 &&
	       node_largest_room(p, node) >= p->sizes[sample];
}

static nopfs_status add_replicas(struct nopfs_placement *p)
{
	struct nopfs_candidate *candidates;
	uint64_t count;
	bool any_room = false;
	nopfs_status status;

	for (uint32_t n = 0; n < p->nodes; n++)
		if (p->local_tier[n] && node_largest_room(p, n) > 0)
			any_room = true;
	if (!any_room)
		return NOPFS_OK;
	status = nopfs_candidates_collect(p, replica_wanted, &candidates, &count);
	if (status != NOPFS_OK)
		return status;
	for (uint64_t i = 0; i < count; i++) {
		uint32_t sample = nopfs_key_sample(candidates[i].key);
		uint32_t node = candidates[i].node;
		int tier = nopfs_placement_room(p, node, p->sizes[sample]);

		if (tier >= 0)
			nopfs_placement_keep(p, node, (unsigned int)tier, sample, false);
	}
	free(candidates);
	return NOPFS_OK;
}

nopfs_status nopfs_placement_run_owner_first(struct nopfs_placement *p)
{
	uint64_t *uncovered = NULL, uncovered_count = 0;
	nopfs_status status;

	status = find_owners(p);
	if (status != NOPFS_OK)
		return status;
	status = fill_owners(p, &uncovered, &uncovered_count);
	free(p->owner);
	p->owner = NULL;
	if (status != NOPFS_OK)
		return status;
	status = cover(p, uncovered, uncovered_count);
	free(uncovered);
	free(p->owner_reads);
	free(p->owner_first);
	p->owner_reads = p->owner_first = NULL;
	if (status != NOPFS_OK)
		return status;
	return add_replicas(p);
}
