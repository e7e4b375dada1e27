/*
 * Placement invariants on many random jobs: no tier over capacity; full
 * coverage when aggregate room >= 1.02 x S; identical plans from independent
 * computations, scopes and thread counts; owners are the first
 * readers; and small hand-checked cases.
 */
#include <check.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log_capture.h"
#include "plan/mt19937.h"
#include "plan/placement.h"

struct job {
	struct nopfs_layout *layout;
	uint64_t *sizes;
	struct nopfs_node_tiers *tiers;
	struct nopfs_placement_input input;
	uint64_t dataset_bytes;
};

static uint32_t draw(struct nopfs_mt19937 *mt, uint32_t low, uint32_t high)
{
	return low + nopfs_mt19937_next(mt) % (high - low + 1);
}

/* A random job; aggregate capacity is @room_factor x S split over the nodes. */
static void job_random(struct job *job, uint32_t seed, double room_factor)
{
	struct nopfs_mt19937 mt;
	uint32_t nodes, tasks[8];
	uint64_t samples;

	nopfs_mt19937_seed(&mt, seed);
	nodes = draw(&mt, 1, 6);
	for (uint32_t n = 0; n < nodes; n++)
		tasks[n] = draw(&mt, n == 0 ? 1 : 0, 4);
	ck_assert_int_eq(nopfs_layout_create(nodes, tasks,
	                                     draw(&mt, 0, 1) ? NOPFS_DISTRIBUTION_CYCLIC
	                                                     : NOPFS_DISTRIBUTION_BLOCK,
	                                     0, &job->layout),
	                 NOPFS_OK);
	samples = draw(&mt, 200, 3000);
	job->sizes = malloc(samples * sizeof(*job->sizes));
	job->dataset_bytes = 0;
	for (uint64_t k = 0; k < samples; k++) {
		job->sizes[k] = draw(&mt, 1000, 3000);
		job->dataset_bytes += job->sizes[k];
	}
	job->tiers = calloc(nodes, sizeof(*job->tiers));
	for (uint32_t n = 0; n < nodes; n++) {
		uint64_t node_room = (uint64_t)(room_factor * (double)job->dataset_bytes / nodes);

		job->tiers[n].count = draw(&mt, 1, 3);
		for (unsigned int t = 0; t < job->tiers[n].count; t++)
			job->tiers[n].capacity[t] = node_room / job->tiers[n].count;
	}
	job->input = (struct nopfs_placement_input){
		.sampler = { .count = samples,
		             .world_size = job->layout->world_size,
		             .seed = nopfs_mt19937_next(&mt),
		             .shuffle = true,
		             .drop_last =
		                     draw(&mt, 0, 3) == 0 && samples >= job->layout->world_size },
		.epochs = draw(&mt, 1, 12),
		.sizes = job->sizes,
		.layout = job->layout,
		.tiers = job->tiers,
		.policy = NOPFS_POLICY_OWNER_FIRST,
		.threads = 1,
	};
}

static void job_free(struct job *job)
{
	nopfs_layout_destroy(job->layout);
	free(job->sizes);
	free(job->tiers);
}

static void assert_within_capacity(const struct job *job, const struct nopfs_placement *p)
{
	for (uint32_t n = 0; n < job->layout->nodes; n++) {
		for (unsigned int t = 0; t < NOPFS_TIERS_MAX; t++) {
			struct nopfs_tier_usage u;
			uint64_t capacity = t < job->tiers[n].count ? job->tiers[n].capacity[t] : 0;

			ck_assert_int_eq(nopfs_placement_usage(p, n, t, &u), NOPFS_OK);
			ck_assert_msg(u.bytes <= capacity, "node %u tier %u holds %lu > %lu", n, t,
			              (unsigned long)u.bytes, (unsigned long)capacity);
		}
	}
}

/* Recount by hand what each tier holds from tier_on(), and compare. */
static void assert_usage_matches(const struct job *job, const struct nopfs_placement *p)
{
	for (uint32_t n = 0; n < job->layout->nodes; n++) {
		uint64_t bytes[NOPFS_TIERS_MAX] = { 0 };

		for (uint64_t k = 0; k < job->input.sampler.count; k++) {
			int tier = nopfs_placement_tier_on(p, n, k);

			if (tier >= 0)
				bytes[tier] += job->sizes[k];
		}
		for (unsigned int t = 0; t < NOPFS_TIERS_MAX; t++) {
			struct nopfs_tier_usage u;

			nopfs_placement_usage(p, n, t, &u);
			ck_assert_uint_eq(u.bytes, bytes[t]);
		}
	}
}

START_TEST(random_jobs_respect_capacity)
{
	static const double factors[] = { 0.3, 1.0, 1.5, 3.0 };

	for (uint32_t seed = 1; seed <= 40; seed++) {
		struct job job;
		struct nopfs_placement *p;

		job_random(&job, seed, factors[seed % 4]);
		for (int policy = 0; policy < 2; policy++) {
			job.input.policy = policy;
			ck_assert_int_eq(nopfs_placement_compute(&job.input, NOPFS_ALL_NODES, &p),
			                 NOPFS_OK);
			assert_within_capacity(&job, p);
			assert_usage_matches(&job, p);
			nopfs_placement_destroy(p);
		}
		job_free(&job);
	}
}
END_TEST

START_TEST(full_coverage_when_room_suffices)
{
	for (uint32_t seed = 100; seed < 140; seed++) {
		struct job job;
		struct nopfs_placement *p;
		struct nopfs_placement_summary summary;

		job_random(&job, seed, 1.02);
		ck_assert_int_eq(nopfs_placement_compute(&job.input, NOPFS_ALL_NODES, &p),
		                 NOPFS_OK);
		nopfs_placement_summary(p, &summary);
		/* Samples nobody reads (drop_last) need no copy. */
		for (uint64_t k = 0; k < job.input.sampler.count; k++) {
			bool read = false;

			for (uint32_t e = 0; e < job.input.epochs && !read; e++)
				read = nopfs_access_node(nopfs_placement_accesses(p), k, e) !=
				       NOPFS_NO_NODE;
			ck_assert_msg(!read || nopfs_placement_locate(p, k, NULL, NULL),
			              "seed %u: sample %lu read but not kept", seed,
			              (unsigned long)k);
		}
		ck_assert_uint_eq(summary.uncovered_reads, 0);
		ck_assert_uint_le(summary.pfs_bytes, summary.dataset_bytes);
		nopfs_placement_destroy(p);
		job_free(&job);
	}
}
END_TEST

/*
 * With max_size, both policies keep no larger sample anywhere (as primary
 * or replica), and every other sample is kept when room suffices.
 */
START_TEST(samples_over_max_size_are_never_kept)
{
	for (uint32_t seed = 300; seed < 320; seed++) {
		struct job job;
		struct nopfs_placement *p;

		job_random(&job, seed, 3.0);
		job.input.max_size = 2000;
		for (int policy = 0; policy < 2; policy++) {
			job.input.policy = policy;
			ck_assert_int_eq(nopfs_placement_compute(&job.input, NOPFS_ALL_NODES, &p),
			                 NOPFS_OK);
			for (uint64_t k = 0; k < job.input.sampler.count; k++) {
				bool kept = nopfs_placement_locate(p, k, NULL, NULL);

				for (uint32_t n = 0; n < job.layout->nodes; n++)
					kept |= nopfs_placement_tier_on(p, n, k) >= 0;
				if (job.sizes[k] > 2000)
					ck_assert_msg(
					        !kept,
					        "seed %u policy %d: sample %lu of %lu bytes kept",
					        seed, policy, (unsigned long)k,
					        (unsigned long)job.sizes[k]);
				else if (policy == NOPFS_POLICY_OWNER_FIRST)
					ck_assert_msg(kept || nopfs_access_node(
					                              nopfs_placement_accesses(p),
					                              k, 0) == NOPFS_NO_NODE,
					              "seed %u: sample %lu not kept", seed,
					              (unsigned long)k);
			}
			assert_within_capacity(&job, p);
			nopfs_placement_destroy(p);
		}
		job_free(&job);
	}
}
END_TEST

/*
 * A resume within an epoch: in epoch 0 the positions before first_index x W
 * are not read (NO_NODE), every other entry is the whole sampler's; a
 * one-epoch job keeps no sample that only those positions read (padding at
 * the epoch's end reads a few of them again).
 */
START_TEST(resume_within_an_epoch_skips_the_read_head)
{
	for (uint32_t seed = 300; seed < 310; seed++) {
		struct job job;
		struct nopfs_sampler resumed;
		struct nopfs_access_table *whole, *part;
		struct nopfs_placement *p;
		uint32_t *perm;
		uint64_t head;

		job_random(&job, seed, 1.02);
		resumed = job.input.sampler;
		resumed.first_index = nopfs_sampler_per_rank(&resumed) / 2;
		head = resumed.first_index * resumed.world_size;
		ck_assert_uint_eq(nopfs_sampler_first_position(&resumed, 0), head);
		ck_assert_uint_eq(nopfs_sampler_first_position(&resumed, 1), 0);
		ck_assert_int_eq(nopfs_access_table_build(&job.input.sampler, job.input.epochs,
		                                          job.layout, 2, &whole),
		                 NOPFS_OK);
		ck_assert_int_eq(
		        nopfs_access_table_build(&resumed, job.input.epochs, job.layout, 3, &part),
		        NOPFS_OK);
		perm = malloc(resumed.count * sizeof(*perm));
		nopfs_sampler_permutation(&resumed, 0, perm);
		for (uint64_t pos = 0; pos < resumed.count; pos++) {
			uint32_t k = perm[pos], expect = nopfs_access_node(whole, k, 0);

			if (pos < head)
				expect = NOPFS_NO_NODE;
			ck_assert_uint_eq(nopfs_access_node(part, k, 0), expect);
			for (uint32_t e = 1; e < job.input.epochs; e++)
				ck_assert_uint_eq(nopfs_access_node(part, k, e),
				                  nopfs_access_node(whole, k, e));
		}
		ck_assert_uint_eq(part->extra_count, whole->extra_count);
		nopfs_access_table_destroy(whole);
		nopfs_access_table_destroy(part);

		job.input.sampler = resumed;
		job.input.epochs = 1;
		ck_assert_int_eq(nopfs_placement_compute(&job.input, NOPFS_ALL_NODES, &p),
		                 NOPFS_OK);
		/* padding re-reads the epoch's head at its end: those are still read */
		for (uint64_t pos = 0; pos < head && pos < resumed.count; pos++)
			ck_assert_msg(pos + resumed.count < nopfs_sampler_total_size(&resumed) ||
			                      !nopfs_placement_locate(p, perm[pos], NULL, NULL),
			              "seed %u: sample %u of the part already read is kept", seed,
			              perm[pos]);
		for (uint64_t pos = head;
		     pos < resumed.count && pos < nopfs_sampler_total_size(&resumed); pos++)
			ck_assert_msg(nopfs_placement_locate(p, perm[pos], NULL, NULL),
			              "seed %u: sample %u still to read is not kept", seed,
			              perm[pos]);
		nopfs_placement_destroy(p);
		free(perm);
		job_free(&job);
	}
}
END_TEST

START_TEST(identical_across_scopes_and_threads)
{
	for (uint32_t seed = 200; seed < 215; seed++) {
		struct job job;
		struct nopfs_placement *all, *other;

		job_random(&job, seed, seed % 2 ? 0.7 : 2.0);
		ck_assert_int_eq(nopfs_placement_compute(&job.input, NOPFS_ALL_NODES, &all),
		                 NOPFS_OK);
		for (unsigned int variant = 0; variant < 4; variant++) {
			uint32_t scope = variant % job.layout->nodes;

			job.input.threads = 1 + variant * 2; /* 1, 3, 5, 7 */
			ck_assert_int_eq(nopfs_placement_compute(&job.input, scope, &other),
			                 NOPFS_OK);
			for (uint64_t k = 0; k < job.input.sampler.count; k++) {
				uint32_t n1 = 0, n2 = 0;
				unsigned int t1 = 0, t2 = 0;

				ck_assert(nopfs_placement_locate(all, k, &n1, &t1) ==
				          nopfs_placement_locate(other, k, &n2, &t2));
				ck_assert_uint_eq(n1, n2);
				ck_assert_uint_eq(t1, t2);
				ck_assert_int_eq(nopfs_placement_tier_on(all, scope, k),
				                 nopfs_placement_tier_on(other, scope, k));
			}
			nopfs_placement_destroy(other);
		}
		nopfs_placement_destroy(all);
		job_free(&job);
	}
}
END_TEST

/* Samples whose primary copy is on a node that holds them in @held. */
static uint64_t owned_where_held(const struct nopfs_placement *p, uint8_t *const *held,
                                 uint64_t count)
{
	uint64_t found = 0;

	for (uint64_t k = 0; k < count; k++) {
		uint32_t node;

		if (nopfs_placement_locate(p, k, &node, NULL) &&
		    (held[node][k >> 3] >> (k & 7)) & 1)
			found++;
	}
	return found;
}

START_TEST(held_samples_stay_with_their_holders)
{
	unsigned int ran = 0;

	for (uint32_t seed = 300; seed < 310; seed++) {
		struct job job;
		struct nopfs_placement *first, *blind, *told;
		uint8_t *held[8];
		uint64_t count, before, after;

		uint32_t reading = 0;

		job_random(&job, seed, 1.2);
		for (uint32_t n = 0; n < job.layout->nodes; n++)
			reading += job.layout->tasks_on_node[n] > 0;
		if (reading < 2) { /* one node reads everything: no choice to make */
			job_free(&job);
			continue;
		}
		count = job.input.sampler.count;
		job.input.epochs = 4; /* a sample read by one node only leaves no choice */
		ck_assert_int_eq(nopfs_placement_compute(&job.input, NOPFS_ALL_NODES, &first),
		                 NOPFS_OK);
		/* what each node kept at the end of that job: its primary copies */
		for (uint32_t n = 0; n < job.layout->nodes; n++)
			held[n] = calloc(count / 8 + 1, 1);
		for (uint64_t k = 0; k < count; k++) {
			uint32_t n;

			if (nopfs_placement_locate(first, k, &n, NULL))
				held[n][k >> 3] |= (uint8_t)(1u << (k & 7));
		}
		/* the next job: another seed, so other readers */
		job.input.sampler.seed += 1000; /* seed + epoch: no epoch in common */
		ck_assert_int_eq(nopfs_placement_compute(&job.input, NOPFS_ALL_NODES, &blind),
		                 NOPFS_OK);
		job.input.held = (const uint8_t *const *)held;
		ck_assert_int_eq(nopfs_placement_compute(&job.input, NOPFS_ALL_NODES, &told),
		                 NOPFS_OK);
		before = owned_where_held(blind, held, count);
		after = owned_where_held(told, held, count);
		ran++;
		ck_assert_msg(after > before + count / 10 && after >= count * 9 / 10,
		              "seed %u: %" PRIu64 " of %" PRIu64
		              " samples owned where held, %" PRIu64 " without telling",
		              seed, after, count, before);
		/* the same plan whatever the threads */
		job.input.threads = 3;
		nopfs_placement_destroy(blind);
		ck_assert_int_eq(nopfs_placement_compute(&job.input, 0, &blind), NOPFS_OK);
		ck_assert_uint_eq(owned_where_held(blind, held, count), after);
		nopfs_placement_destroy(blind);
		nopfs_placement_destroy(told);
		nopfs_placement_destroy(first);
		for (uint32_t n = 0; n < job.layout->nodes; n++)
			free(held[n]);
		job_free(&job);
	}
	ck_assert_uint_ge(ran, 4);
}
END_TEST

START_TEST(owner_is_the_first_reader)
{
	for (uint32_t seed = 300; seed < 320; seed++) {
		struct job job;
		struct nopfs_placement *p;
		const struct nopfs_access_table *table;

		job_random(&job, seed, 1000.0); /* room for everything everywhere */
		job.input.sampler.drop_last = false;
		ck_assert_int_eq(nopfs_placement_compute(&job.input, NOPFS_ALL_NODES, &p),
		                 NOPFS_OK);
		table = nopfs_placement_accesses(p);
		for (uint64_t k = 0; k < job.input.sampler.count; k++) {
			uint32_t reads[8] = { 0 }, holder = 0;

			for (uint32_t e = 0; e < job.input.epochs; e++)
				reads[nopfs_access_node(table, k, e)]++;
			for (uint64_t x = 0; x < table->extra_count; x++)
				if (table->extras[x].sample == k)
					reads[table->extras[x].node]++;
			ck_assert(nopfs_placement_locate(p, k, &holder, NULL));
			/* the node reading it in the first epoch: its fetch is that read */
			ck_assert_uint_eq(holder, nopfs_access_node(table, k, 0));
			/* With room everywhere, every reader keeps a copy. */
			for (uint32_t n = 0; n < job.layout->nodes; n++)
				ck_assert(!reads[n] || nopfs_placement_tier_on(p, n, k) >= 0);
		}
		nopfs_placement_destroy(p);
		job_free(&job);
	}
}
END_TEST

/* Two nodes, one rank each, no shuffle: node 0 reads even, node 1 odd samples. */
static void job_two_nodes(struct job *job, uint64_t room0, uint64_t room1)
{
	static const uint32_t tasks[] = { 1, 1 };

	ck_assert_int_eq(nopfs_layout_create(2, tasks, NOPFS_DISTRIBUTION_BLOCK, 0, &job->layout),
	                 NOPFS_OK);
	job->sizes = malloc(4 * sizeof(*job->sizes));
	for (int k = 0; k < 4; k++)
		job->sizes[k] = 100;
	job->tiers = calloc(2, sizeof(*job->tiers));
	job->tiers[0] = (struct nopfs_node_tiers){ .count = 2, .capacity = { 100, room0 } };
	job->tiers[1] = (struct nopfs_node_tiers){ .count = 1, .capacity = { room1 } };
	job->input = (struct nopfs_placement_input){
		.sampler = { .count = 4, .world_size = 2, .shuffle = false },
		.epochs = 3,
		.sizes = job->sizes,
		.layout = job->layout,
		.tiers = job->tiers,
	};
}

START_TEST(hand_checked_small_job)
{
	struct job job;
	struct nopfs_placement *p;
	struct nopfs_access_stats stats;
	struct nopfs_placement_summary summary;
	uint32_t node;
	unsigned int tier;

	/* Node 0: 100 B fast + 100 B slow; node 1: 200 B. Everything fits. */
	job_two_nodes(&job, 100, 200);
	ck_assert_int_eq(nopfs_placement_compute(&job.input, NOPFS_ALL_NODES, &p), NOPFS_OK);
	ck_assert(nopfs_placement_locate(p, 0, &node, &tier));
	ck_assert_uint_eq(node, 0);
	ck_assert_uint_eq(tier, 0); /* sample 0 first: fastest tier */
	ck_assert(nopfs_placement_locate(p, 2, &node, &tier));
	ck_assert_uint_eq(node, 0);
	ck_assert_uint_eq(tier, 1);
	ck_assert(nopfs_placement_locate(p, 3, &node, &tier));
	ck_assert_uint_eq(node, 1);
	ck_assert_int_eq(nopfs_placement_access_stats(p, NOPFS_ALL_NODES, &stats), NOPFS_OK);
	ck_assert_uint_eq(stats.reads[NOPFS_SOURCE_LOCAL], 12);
	ck_assert_uint_eq(stats.reads[NOPFS_SOURCE_PEER] + stats.reads[NOPFS_SOURCE_PFS], 0);
	nopfs_placement_summary(p, &summary);
	ck_assert_uint_eq(summary.dataset_bytes, 400);
	ck_assert_uint_eq(summary.naive_pfs_bytes, 1200);
	ck_assert_uint_eq(summary.pfs_bytes, 400);
	nopfs_placement_destroy(p);
	job_free(&job);

	/* Node 1 has no room: its samples are covered by node 0 (peer reads). */
	job_two_nodes(&job, 300, 0);
	job.tiers[1].count = 0;
	ck_assert_int_eq(nopfs_placement_compute(&job.input, NOPFS_ALL_NODES, &p), NOPFS_OK);
	ck_assert(nopfs_placement_locate(p, 1, &node, NULL));
	ck_assert_uint_eq(node, 0);
	ck_assert_int_eq(nopfs_placement_access_stats(p, 1, &stats), NOPFS_OK);
	ck_assert_uint_eq(stats.reads[NOPFS_SOURCE_PEER], 6);
	nopfs_placement_destroy(p);
	job_free(&job);

	/* Room for 3 of 4 samples: one sample's 3 reads go to the PFS each time. */
	job_two_nodes(&job, 0, 200);
	job.tiers[0].count = 1;
	ck_assert_int_eq(nopfs_placement_compute(&job.input, NOPFS_ALL_NODES, &p), NOPFS_OK);
	nopfs_placement_summary(p, &summary);
	ck_assert_uint_eq(summary.covered_samples, 3);
	ck_assert_uint_eq(summary.uncovered_reads, 3);
	ck_assert_uint_eq(summary.pfs_bytes, 300 + 300);
	nopfs_placement_destroy(p);
	job_free(&job);
}
END_TEST

START_TEST(owner_first_beats_greedy_at_tight_room)
{
	static const uint32_t tasks[] = { 2, 2, 2, 2 };
	struct nopfs_layout *layout;
	struct nopfs_node_tiers tiers[4];
	uint64_t samples = 20000, *sizes = malloc(samples * sizeof(*sizes));
	struct nopfs_placement *ours, *greedy;
	struct nopfs_placement_summary a, b;

	ck_assert_int_eq(nopfs_layout_create(4, tasks, NOPFS_DISTRIBUTION_BLOCK, 0, &layout),
	                 NOPFS_OK);
	for (uint64_t k = 0; k < samples; k++)
		sizes[k] = 1000;
	for (int n = 0; n < 4; n++)
		tiers[n] =
		        (struct nopfs_node_tiers){ .count = 1, .capacity = { samples * 1000 / 4 } };
	struct nopfs_placement_input input = {
		.sampler = { .count = samples, .world_size = 8, .seed = 1, .shuffle = true },
		.epochs = 10,
		.sizes = sizes,
		.layout = layout,
		.tiers = tiers,
		.threads = 2,
	};
	ck_assert_int_eq(nopfs_placement_compute(&input, NOPFS_ALL_NODES, &ours), NOPFS_OK);
	input.policy = NOPFS_POLICY_GREEDY;
	ck_assert_int_eq(nopfs_placement_compute(&input, NOPFS_ALL_NODES, &greedy), NOPFS_OK);
	nopfs_placement_summary(ours, &a);
	nopfs_placement_summary(greedy, &b);
	/* Aggregate room = S: owner-first covers everything, greedy leaves holes. */
	ck_assert_uint_eq(a.covered_samples, samples);
	ck_assert_uint_eq(a.pfs_bytes, a.dataset_bytes);
	ck_assert_uint_lt(b.covered_samples, samples * 95 / 100);
	ck_assert_uint_gt(b.pfs_bytes, a.pfs_bytes);
	ck_assert_uint_eq(a.naive_pfs_bytes, 10 * a.dataset_bytes);
	nopfs_placement_destroy(ours);
	nopfs_placement_destroy(greedy);
	nopfs_layout_destroy(layout);
	free(sizes);
}
END_TEST

START_TEST(primary_places_are_computable_everywhere)
{
	for (uint32_t seed = 400; seed < 410; seed++) {
		struct job job;
		struct nopfs_placement *all, *one;
		uint64_t running[8][NOPFS_TIERS_MAX] = { { 0 } },
		         counted[8][NOPFS_TIERS_MAX] = { { 0 } };

		job_random(&job, seed, seed % 2 ? 0.8 : 2.5);
		ck_assert_int_eq(nopfs_placement_compute(&job.input, NOPFS_ALL_NODES, &all),
		                 NOPFS_OK);
		ck_assert_int_eq(
		        nopfs_placement_compute(&job.input, seed % job.layout->nodes, &one),
		        NOPFS_OK);
		for (uint64_t k = 0; k < job.input.sampler.count; k++) {
			uint32_t node, node2, holder;
			unsigned int tier, tier2, holder_tier;
			uint64_t offset, offset2, index, index2;
			bool kept = nopfs_placement_locate(all, k, &holder, &holder_tier);

			ck_assert(nopfs_placement_primary_place(all, k, &node, &tier, &offset,
			                                        &index) == kept);
			if (!kept)
				continue;
			/* Packed in sample order per (holder, tier), the same from any scope. */
			ck_assert_uint_eq(node, holder);
			ck_assert_uint_eq(tier, holder_tier);
			ck_assert_uint_eq(offset, running[node][tier]);
			ck_assert_uint_eq(index, counted[node][tier]);
			running[node][tier] += job.sizes[k];
			counted[node][tier]++;
			ck_assert(nopfs_placement_primary_place(one, k, &node2, &tier2, &offset2,
			                                        &index2));
			ck_assert_uint_eq(offset2, offset);
			ck_assert_uint_eq(index2, index);
		}
		nopfs_placement_destroy(one);
		nopfs_placement_destroy(all);
		job_free(&job);
	}
}
END_TEST

START_TEST(bad_inputs_are_rejected)
{
	struct job job;
	struct nopfs_placement *p;

	job_two_nodes(&job, 100, 100);
	log_capture_start();
	ck_assert_int_eq(nopfs_placement_compute(&job.input, 2, &p), NOPFS_ERR_RANGE);
	ck_assert(log_captured("node 2 does not exist"));
	job.input.epochs = 0;
	ck_assert_int_eq(nopfs_placement_compute(&job.input, 0, &p), NOPFS_ERR_RANGE);
	job.input.epochs = 1;
	job.input.sampler.world_size = 3;
	ck_assert_int_eq(nopfs_placement_compute(&job.input, 0, &p), NOPFS_ERR_INVALID);
	ck_assert(log_captured("world size 3 differs"));
	nopfs_log_set_sink(NULL, NULL, NOPFS_LOG_INFO);
	job_free(&job);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("placement");
	TCase *tc = tcase_create("placement");
	SRunner *runner;
	int failed;

	tcase_add_test(tc, random_jobs_respect_capacity);
	tcase_add_test(tc, full_coverage_when_room_suffices);
	tcase_add_test(tc, samples_over_max_size_are_never_kept);
	tcase_add_test(tc, resume_within_an_epoch_skips_the_read_head);
	tcase_add_test(tc, identical_across_scopes_and_threads);
	tcase_add_test(tc, owner_is_the_first_reader);
	tcase_add_test(tc, held_samples_stay_with_their_holders);
	tcase_add_test(tc, hand_checked_small_job);
	tcase_add_test(tc, owner_first_beats_greedy_at_tight_room);
	tcase_add_test(tc, primary_places_are_computable_everywhere);
	tcase_add_test(tc, bad_inputs_are_rejected);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
