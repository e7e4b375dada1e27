/*
 * nopfs-sim: access frequencies of the real sampler against the paper
 * (section 3.1), Lemma 1 on every worker, small scenarios with results
 * computed by hand, policy invariants, infeasibility and what-if config
 * errors.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "log_capture.h"
#include "sim.h"
#include "sim_commands.h"
#include "sim_config.h"
#include "sim_frequency.h"
#include "sim_output.h"
#include "sim_scenarios.h"

#define MB 1e6

static bool close_to(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (fabs(a) + fabs(b) + 1);
}

/* ------------------------------------------------------------------------
 * Section 3.1 with the real sampler.
 */

START_TEST(frequency_matches_paper)
{
	struct sim_frequency f = {
		.samples = 1281167, .workers = 16, .epochs = 90, .delta = 0.8, .worker = 0
	};
	uint64_t total = 0;

	ck_assert_int_eq(sim_frequency_run(&f, 2), NOPFS_OK);
	/* "each sample is read 6 times on average ... more than 10 times" */
	ck_assert_uint_eq(f.threshold, 11);
	/* The paper's estimate is ~31,635 (exactly 31,634.69). */
	ck_assert(fabs(f.expected - 31634.69) < 0.5);
	ck_assert(fabs(f.sigma - 175.7) < 1);
	/* Monte-Carlo within 3 sigma (the paper's Fig. 3 run: 31,863). */
	ck_assert_msg(fabs((double)f.observed - f.expected) <= 3 * f.sigma,
	              "observed %llu, expected %.1f +- %.1f", (unsigned long long)f.observed,
	              f.expected, 3 * f.sigma);
	for (uint32_t k = 0; k <= f.epochs + 1; k++)
		total += f.histogram[k];
	ck_assert_uint_eq(total, f.samples);
	/* The histogram follows F x Binomial(90, 1/16): count 5 ~ 222,595. */
	ck_assert(fabs((double)f.histogram[5] - 222595) < 5 * sqrt(222595.0));
	sim_frequency_fini(&f);
}
END_TEST

START_TEST(lemma1_holds_on_all_workers)
{
	struct sim_frequency f = { .samples = 1281167,
		                   .workers = 16,
		                   .epochs = 90,
		                   .delta = 0.8,
		                   .worker = 5,
		                   .seed = 2 };

	ck_assert_int_eq(sim_frequency_run(&f, 2), NOPFS_OK);
	ck_assert_uint_eq(f.high, 11);
	ck_assert_uint_eq(f.high_bound, 6);
	ck_assert_uint_eq(f.low_bound, 5);
	ck_assert_uint_gt(f.high_samples, 400000);
	ck_assert_uint_eq(f.high_violations, 0);
	ck_assert_uint_eq(f.low_violations, 0);
	/* 1,281,167 = 16 x 80,073 - 1: one padded read per epoch. */
	ck_assert_uint_le(f.padded_samples, 90);
	ck_assert_uint_eq(f.total_mismatch, 0);
	sim_frequency_fini(&f);
}
END_TEST

START_TEST(lemma1_small_cases)
{
	static const struct {
		uint32_t epochs;
		double delta;
	} cases[] = { { 90, 0.8 }, { 10, 0.8 }, { 10, 0.3 } };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sim_frequency f = { .samples = 20000,
			                   .workers = 4,
			                   .epochs = cases[i].epochs,
			                   .delta = cases[i].delta,
			                   .seed = 7 };

		ck_assert_int_eq(sim_frequency_run(&f, 1), NOPFS_OK);
		ck_assert_uint_eq(f.high_violations, 0);
		ck_assert_uint_eq(f.low_violations, 0);
		sim_frequency_fini(&f);
	}
}
END_TEST

/* ------------------------------------------------------------------------
 * Hand-computed scenarios. Samples of 1 MB; PFS t = 4 MB/s for any
 * number of readers (0.25 s alone); preprocessing 2 MB/s (0.5 s); compute
 * 1 MB/s (1 s). Staging and tier writes are not modeled (no write curve).
 */

static void tiny_system(struct sim_system *system, double compute, unsigned int threads,
                        double capacity)
{
	struct nopfs_model *m = &system->model;

	memset(system, 0, sizeof(*system));
	m->compute = compute * MB;
	m->preprocess = 2 * MB;
	m->network = 1000 * MB;
	nopfs_curve_set(&m->pfs, 1, 4 * MB);
	m->staging.threads = threads;
	m->staging.capacity = (uint64_t)(capacity * MB);
	nopfs_curve_set(&m->staging.read, threads, 1e6 * MB);
}

static struct sim_dataset *tiny_dataset(uint32_t nodes, uint64_t samples, uint32_t epochs)
{
	struct sim_workload w = { .name = "tiny",
		                  .nodes = nodes,
		                  .samples = samples,
		                  .mean = MB,
		                  .epochs = epochs,
		                  .batch = 2,
		                  .size_seed = 1 };
	struct sim_dataset *data;

	ck_assert_int_eq(sim_dataset_create(&w, 1, &data), NOPFS_OK);
	ck_assert_uint_eq(data->bytes, samples * (uint64_t)MB);
	return data;
}

static double total_of(const struct sim_dataset *data, const struct sim_system *system,
                       enum sim_policy policy, struct sim_result *out)
{
	struct sim_result r;
	double total;

	ck_assert_int_eq(sim_system_validate(system), NOPFS_OK);
	ck_assert_int_eq(sim_run(data, system, policy, 1, &r), NOPFS_OK);
	ck_assert(r.feasible);
	total = r.total;
	if (out)
		*out = r;
	else
		sim_result_fini(&r);
	return total;
}

START_TEST(one_worker_by_hand)
{
	struct sim_dataset *data = tiny_dataset(1, 10, 1);
	struct sim_system system;
	struct sim_result r;

	tiny_system(&system, 1, 1, 100);
	/* Perfect: 10 samples x 1 s. */
	ck_assert(close_to(total_of(data, &system, SIM_PERFECT, NULL), 10));
	/* Naive: 10 x (0.25 + 0.5 + 1). */
	ck_assert(close_to(total_of(data, &system, SIM_NAIVE, &r), 17.5));
	ck_assert(close_to(r.stall, 7.5));
	ck_assert(r.pfs_bytes == 10 * MB);
	sim_result_fini(&r);
	/* Staging buffer, compute-bound: the first sample at 0.75 s, then 10 x 1 s. */
	ck_assert(close_to(total_of(data, &system, SIM_STAGING_BUFFER, &r), 10.75));
	ck_assert(close_to(r.stall, 0.75));
	ck_assert(close_to(r.bucket[SIM_BUCKET_PFS], 10.75));
	sim_result_fini(&r);
	/* A buffer of one sample cannot fetch ahead: Naive again. */
	tiny_system(&system, 1, 1, 1);
	ck_assert(close_to(total_of(data, &system, SIM_STAGING_BUFFER, NULL), 17.5));
	/* I/O-bound (compute 8 MB/s = 0.125 s): 10 x 0.75 + 0.125. */
	tiny_system(&system, 8, 1, 100);
	ck_assert(close_to(total_of(data, &system, SIM_STAGING_BUFFER, NULL), 7.625));
	sim_dataset_destroy(data);
}
END_TEST

START_TEST(two_threads_share_the_pfs_by_hand)
{
	struct sim_dataset *data = tiny_dataset(1, 10, 1);
	struct sim_system system;

	/*
	 * Two threads, compute 0.125 s. Thread 0 reads alone (0.25 s), thread
	 * 1 starts with it and gets half (0.5 s); from then on their reads never
	 * overlap: completions 0.75, 1.0, 1.5, 1.75, ... 3.75, 4.0; the last
	 * sample is consumed at 4.0 and done at 4.125.
	 */
	tiny_system(&system, 8, 2, 100);
	ck_assert(close_to(total_of(data, &system, SIM_STAGING_BUFFER, NULL), 4.125));
	sim_dataset_destroy(data);
}
END_TEST

START_TEST(two_nodes_contend_by_hand)
{
	struct sim_dataset *data = tiny_dataset(2, 20, 1);
	struct sim_system system;
	struct sim_result r;

	/*
	 * Naive on two nodes. At 0 node 0 reads alone (gamma 1: 0.25 s) and
	 * node 1 joins (gamma 2: t(2)/2 = 2 MB/s, 0.5 s): node 1's first
	 * sample ends at 2.0, then its reads no longer overlap node 0's:
	 * 2.0 + 9 x 1.75.
	 */
	tiny_system(&system, 1, 1, 100);
	ck_assert(close_to(total_of(data, &system, SIM_NAIVE, &r), 17.75));
	ck_assert(r.pfs_bytes == 20 * MB);
	ck_assert_uint_eq(r.accessed_samples, 20);
	sim_result_fini(&r);
	sim_dataset_destroy(data);
}
END_TEST

START_TEST(cached_epochs_read_the_pfs_once)
{
	struct sim_dataset *data = tiny_dataset(1, 10, 3);
	struct sim_system system;
	struct sim_result r;

	tiny_system(&system, 1, 1, 100);
	system.model.tiers = 1;
	system.model.tier[0].capacity = (uint64_t)(100 * MB);
	system.model.tier[0].threads = 1;
	nopfs_curve_set(&system.model.tier[0].read, 1, 1e6 * MB);
	strcpy(system.tier_name[0], "ram");
	for (int p = SIM_NOPFS_PAPER; p <= SIM_NOPFS_OURS; p++) {
		double total = total_of(data, &system, p, &r);

		/* One node: each sample is fetched from the PFS exactly once. */
		ck_assert(r.pfs_bytes == 10 * MB);
		ck_assert(total >= 30 && total <= 30.75 + 1e-9);
		ck_assert_uint_eq(r.reads[SIM_BUCKET_TIER] + r.reads[SIM_BUCKET_PFS], 30);
		ck_assert_uint_ge(r.reads[SIM_BUCKET_TIER], 20);
		sim_result_fini(&r);
	}
	sim_dataset_destroy(data);
}
END_TEST

/* Give sample @k @mb MB, keeping the dataset's totals right. */
static void set_size(struct sim_dataset *data, uint32_t k, double mb)
{
	data->bytes -= data->sizes[k];
	data->sizes[k] = (uint64_t)(mb * MB);
	data->bytes += data->sizes[k];
	if (data->sizes[k] > data->max_size)
		data->max_size = data->sizes[k];
	if (data->sizes[k] < data->min_size)
		data->min_size = data->sizes[k];
}

START_TEST(perfect_balances_the_workers_by_hand)
{
	static const struct {
		double big, total; /* worker 0's two samples: big and 1 MB; worker 1's: 1 MB each */
	} cases[] = { { 2, 2.5 }, { 5, 5 } };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sim_dataset *data = tiny_dataset(2, 4, 1);
		struct sim_system system;
		struct sim_result r;

		set_size(data, data->streams[0][0], cases[i].big);
		tiny_system(&system, 1, 1, 100);
		/*
		 * The sampler's shards take 1 + big and 2 s. Any assignment of the
		 * four samples to the two workers takes at least half of 3 + big MB
		 * and at least the big sample's: 2.5 s (bytes / N binds), 5 s (the
		 * largest sample binds).
		 */
		ck_assert(close_to(total_of(data, &system, SIM_PERFECT, &r), cases[i].total));
		ck_assert(cases[i].total < 1 + cases[i].big);
		ck_assert(close_to(r.balanced, cases[i].total));
		ck_assert(close_to(r.compute, cases[i].total));
		ck_assert(close_to(r.bucket[SIM_BUCKET_IDEAL], cases[i].total));
		ck_assert(close_to(r.epoch_end[0], cases[i].total));
		ck_assert(r.computed_bytes == (uint64_t)((3 + cases[i].big) * MB));
		sim_result_fini(&r);
		/* StagingBuffer keeps the sampler's shards: at least 1 + big. */
		ck_assert(total_of(data, &system, SIM_STAGING_BUFFER, NULL) >= 1 + cases[i].big);
		sim_dataset_destroy(data);
	}
}
END_TEST

START_TEST(locality_aware_never_beats_perfect_by_hand)
{
	struct sim_workload w = { .name = "tiny",
		                  .nodes = 2,
		                  .samples = 4,
		                  .mean = MB,
		                  .epochs = 2,
		                  .batch = 2,
		                  .size_seed = 1,
		                  .seed = 3 };
	struct sim_dataset *data;
	struct sim_system system;
	struct sim_result r;
	uint32_t x, y;
	double perfect;

	/*
	 * Two workers, one global batch of 2 x 2 samples per epoch (B = 2).
	 * With seed 3 the sampler gives worker 0 samples 2, 1 in epoch 0 and
	 * 2, 3 in epoch 1 (worker 1: 3, 0, then 1, 0). Make 2 and 3 3 MB, the
	 * others 1 MB. Epoch 0: 4 MB per worker. Epoch 1: the sampler gives
	 * worker 0 6 MB and worker 1 2 MB, so keeping its shards takes 10 s;
	 * LocalityAware deals each worker the samples it kept in epoch 0 back,
	 * 8 s each. The bound is 16 MB / 2 workers = 8 s.
	 */
	ck_assert_int_eq(sim_dataset_create(&w, 1, &data), NOPFS_OK);
	x = data->streams[0][2];
	y = data->streams[0][3];
	ck_assert((x == data->streams[0][0] || x == data->streams[0][1]) !=
	          (y == data->streams[0][0] || y == data->streams[0][1]));
	set_size(data, x, 3);
	set_size(data, y, 3);
	tiny_system(&system, 1, 1, 100);
	/* fast reads: stalls of milliseconds */
	system.model.preprocess = 1000 * MB;
	nopfs_curve_set(&system.model.pfs, 1, 1000 * MB);
	system.model.tiers = 1;
	system.model.tier[0].capacity = (uint64_t)(100 * MB);
	system.model.tier[0].threads = 1;
	nopfs_curve_set(&system.model.tier[0].read, 1, 1000 * MB);
	strcpy(system.tier_name[0], "ram");
	perfect = total_of(data, &system, SIM_PERFECT, NULL);
	ck_assert(close_to(perfect, 8));
	ck_assert(total_of(data, &system, SIM_STAGING_BUFFER, NULL) >= 10);
	ck_assert(total_of(data, &system, SIM_LOCALITY_AWARE, &r) < 9);
	ck_assert(close_to(r.compute, 8));
	ck_assert(r.total >= perfect);
	ck_assert(r.computed_bytes == 16 * MB);
	ck_assert(close_to(r.balanced, perfect));
	sim_result_fini(&r);
	sim_dataset_destroy(data);
}
END_TEST

/* ------------------------------------------------------------------------
 * Policies on a scaled paper scenario.
 */

START_TEST(lbann_infeasible_beyond_aggregate_memory)
{
	struct sim_dataset *data = tiny_dataset(2, 1000, 1);
	struct sim_system system;
	struct sim_result r;

	tiny_system(&system, 1, 1, 100);
	system.model.tiers = 1;
	system.model.tier[0].capacity = (uint64_t)(400 * MB); /* 2 x 400 MB < 1 GB */
	system.model.tier[0].threads = 1;
	nopfs_curve_set(&system.model.tier[0].read, 1, 1000 * MB);
	for (int p = SIM_LBANN_DYNAMIC; p <= SIM_LBANN_PRELOAD; p++) {
		ck_assert_int_eq(sim_run(data, &system, p, 1, &r), NOPFS_OK);
		ck_assert(!r.feasible);
		ck_assert_ptr_nonnull(strstr(r.note, "infeasible"));
		sim_result_fini(&r);
	}
	system.model.tier[0].capacity = (uint64_t)(600 * MB);
	ck_assert_int_eq(sim_run(data, &system, SIM_LBANN_DYNAMIC, 1, &r), NOPFS_OK);
	ck_assert(r.feasible);
	ck_assert(r.pfs_bytes == 1000 * MB);
	sim_result_fini(&r);
	sim_dataset_destroy(data);
}
END_TEST

START_TEST(policy_invariants_on_scaled_scenarios)
{
	/* Scenario 3 at 1%: LocalityAware beats the sampler's slowest shard, not Perfect. */
	static const struct {
		const char *label;
		double scale;
		uint32_t epochs; /* 0: the scenario's */
	} cases[] = { { "2a", 0.004, 3 }, { "3", 0.004, 3 }, { "3", 0.01, 0 } };

	for (size_t s = 0; s < sizeof(cases) / sizeof(cases[0]); s++) {
		const struct sim_paper_scenario *sc =
		        &sim_paper_scenarios[sim_paper_find(cases[s].label)];
		struct sim_job jobs[SIM_POLICY_COUNT];
		struct sim_workload w;
		struct sim_system system;
		struct sim_dataset *data;
		struct sim_report report;
		const struct sim_result *perfect;
		double lower;

		sim_paper_workload(sc, cases[s].scale, &w);
		if (cases[s].epochs)
			w.epochs = cases[s].epochs;
		sim_paper_system(&system, 1, cases[s].scale);
		ck_assert_int_eq(sim_dataset_create(&w, 2, &data), NOPFS_OK);
		for (int p = 0; p < SIM_POLICY_COUNT; p++)
			jobs[p] = (struct sim_job){ .data = data, .system = &system, .policy = p };
		ck_assert_int_eq(sim_run_batch(jobs, SIM_POLICY_COUNT, 2), NOPFS_OK);
		perfect = &jobs[SIM_PERFECT].result;
		lower = perfect->total;
		report = (struct sim_report){ .jobs = jobs, .count = SIM_POLICY_COUNT };
		/* Perfect is the balanced bound, below the sampler's slowest shard. */
		ck_assert(lower == perfect->balanced);
		ck_assert(perfect->stall == 0);
		ck_assert(lower < jobs[SIM_STAGING_BUFFER].result.compute);
		for (int p = 0; p < SIM_POLICY_COUNT; p++) {
			const struct sim_result *r = &jobs[p].result;
			double split = 0;

			if (!r->feasible)
				continue;
			ck_assert(r->total >= (r->stage_in + r->compute) * (1 - 1e-12));
			ck_assert(r->compute >= r->balanced * (1 - 1e-12));
			/*
			 * Every policy that computes the sampler's batches, LocalityAware
			 * too (it deals them to other workers), is at or above Perfect.
			 */
			if (p != SIM_DEEPIO_OPTIMISTIC && p != SIM_PARALLEL_STAGING) {
				ck_assert_uint_eq(r->computed_bytes, perfect->computed_bytes);
				ck_assert(r->balanced == lower);
				ck_assert_msg(r->total >= lower * (1 - 1e-12),
				              "%s %.6f below Perfect %.6f", sim_policy_name(p),
				              r->total, lower);
			}
			/*
			 * Every policy is at or above its bound (DeepIO-opt, ParStaging:
			 * their own samples' balanced compute when lower than Perfect's).
			 */
			ck_assert(r->total >= sim_result_lower_bound(&report, r) * (1 - 1e-12));
			ck_assert(sim_result_lower_bound(&report, r) <= lower);
			for (int b = 0; b < SIM_BUCKETS; b++)
				split += r->bucket[b];
			ck_assert(close_to(split, r->total));
			ck_assert_uint_eq(r->consumed, (uint64_t)w.nodes * data->length);
		}
		/* Policies that never read the PFS while training. */
		ck_assert_uint_eq(jobs[SIM_DEEPIO_OPTIMISTIC].result.read_bytes[SIM_BUCKET_PFS], 0);
		ck_assert_uint_eq(jobs[SIM_PARALLEL_STAGING].result.read_bytes[SIM_BUCKET_PFS], 0);
		ck_assert_uint_eq(jobs[SIM_PARALLEL_STAGING].result.read_bytes[SIM_BUCKET_PEER], 0);
		/* Naive and the staging buffer read E x S; ours reads less than NoPFS. */
		ck_assert_uint_ge(jobs[SIM_NAIVE].result.pfs_bytes, w.epochs * data->bytes);
		ck_assert_uint_eq(jobs[SIM_NAIVE].result.pfs_bytes,
		                  jobs[SIM_STAGING_BUFFER].result.pfs_bytes);
		ck_assert_uint_lt(jobs[SIM_NOPFS_OURS].result.pfs_bytes,
		                  jobs[SIM_NOPFS_PAPER].result.pfs_bytes);
		ck_assert(jobs[SIM_NAIVE].result.total > 1.3 * lower);
		if (strcmp(cases[s].label, "3") == 0) {
			/* ImageNet-22k: LBANN cannot hold it, DeepIO-opt skips samples. */
			ck_assert(!jobs[SIM_LBANN_DYNAMIC].result.feasible);
			ck_assert(!jobs[SIM_LBANN_PRELOAD].result.feasible);
			ck_assert_uint_lt(jobs[SIM_DEEPIO_OPTIMISTIC].result.accessed_samples,
			                  w.samples / 2);
		}
		/* Runs are deterministic, whatever the threads. */
		{
			struct sim_result again;

			ck_assert_int_eq(sim_run(data, &system, SIM_NOPFS_OURS, 1, &again),
			                 NOPFS_OK);
			ck_assert(again.total == jobs[SIM_NOPFS_OURS].result.total);
			ck_assert_uint_eq(again.pfs_bytes, jobs[SIM_NOPFS_OURS].result.pfs_bytes);
			sim_result_fini(&again);
		}
		for (int p = 0; p < SIM_POLICY_COUNT; p++)
			sim_result_fini(&jobs[p].result);
		sim_dataset_destroy(data);
	}
}
END_TEST

/* ------------------------------------------------------------------------
 * What-if configurations.
 */

static const char good_config[] =
        "{\"name\": \"t\", \"nodes\": 2, \"compute_MBps\": 64, \"network_MBps\": 1000,"
        " \"pfs_MBps\": {\"1\": 300, \"4\": 1000},"
        " \"staging\": {\"capacity_GB\": 1, \"threads\": 4, \"read_MBps\": 10000},"
        " \"tiers\": [{\"name\": \"ssd\", \"capacity_GB\": 50, \"threads\": 2, \"read_MBps\": "
        "2000},"
        "             {\"name\": \"ram\", \"capacity_GB\": 8, \"threads\": 4, \"read_MBps\": "
        "40000}],"
        " \"dataset\": {\"samples\": 1000, \"mean_MB\": 0.1, \"stddev_MB\": 0.02},"
        " \"epochs\": 2, \"policies\": [\"nopfs\", \"staging-buffer\"]}";

START_TEST(config_parses_and_sorts_tiers)
{
	struct sim_config c;

	ck_assert_int_eq(sim_config_parse(good_config, "good.json", &c), NOPFS_OK);
	ck_assert_uint_eq(c.workload.nodes, 2);
	ck_assert_uint_eq(c.workload.samples, 1000);
	ck_assert(close_to(c.workload.mean, 100000));
	ck_assert_uint_eq(c.system.model.tiers, 2);
	ck_assert_str_eq(c.system.tier_name[0], "ram");
	ck_assert_uint_eq(c.system.model.tier[0].capacity, 8000000000ull);
	ck_assert_str_eq(c.system.tier_name[1], "ssd");
	/* The write rate defaults to the read rate. */
	ck_assert(close_to(nopfs_curve_eval(&c.system.model.tier[1].write, 2), 2000 * MB));
	ck_assert_uint_eq(c.policies, (1u << SIM_NOPFS_OURS) | (1u << SIM_STAGING_BUFFER) |
	                                      (1u << SIM_PERFECT));
}
END_TEST

/* Replace the first @from in good_config by @to and expect a message with @text. */
static void expect_error(const char *from, const char *to, const char *text)
{
	char config[2048];
	const char *at = strstr(good_config, from);
	struct sim_config c;

	ck_assert_ptr_nonnull(at);
	snprintf(config, sizeof(config), "%.*s%s%s", (int)(at - good_config), good_config, to,
	         at + strlen(from));
	log_capture_start();
	ck_assert_int_ne(sim_config_parse(config, "bad.json", &c), NOPFS_OK);
	ck_assert_msg(log_captured(text), "expected '%s' in: %s", text, log_capture_buffer);
	ck_assert(log_captured("bad.json"));
	nopfs_log_set_sink(NULL, NULL, NOPFS_LOG_INFO);
}

START_TEST(config_errors_name_the_key)
{
	expect_error("\"nodes\"", "\"nodez\"", "unknown key 'nodez'");
	expect_error("\"compute_MBps\": 64, ", "", "missing key 'compute_MBps'");
	expect_error("\"samples\": 1000, ", "", "dataset: missing key 'samples'");
	expect_error("\"capacity_GB\": 50", "\"capacity\": 50", "tiers[0]: unknown key 'capacity'");
	expect_error("\"threads\": 4, \"read_MBps\": 10000", "\"read_MBps\": 10000",
	             "staging: missing key 'threads'");
	expect_error("\"nodes\": 2", "\"nodes\": \"2\"", "'nodes' must be an integer");
	expect_error("\"epochs\": 2", "\"epochs\": 0", "'epochs' is 0");
	expect_error("\"nopfs\", \"staging", "\"nopfz\", \"staging",
	             "policies[0]: unknown policy 'nopfz'");
	expect_error("\"pfs_MBps\": {\"1\": 300", "\"pfs_MBps\": {\"x\": 300", "'pfs_MBps'");
	expect_error("\"epochs\": 2,", "\"epochs\": 2,,", "bad.json:1:");
}
END_TEST

/* ------------------------------------------------------------------------
 * The job-start metadata load.
 */

START_TEST(metadata_load_by_hand)
{
	/* 3,000 files in 30 classes: what strace shows of one torchvision rank. */
	struct sim_metadata_options o = { .files = 3000,
		                          .dirs = 30,
		                          .nodes = 3,
		                          .ranks_per_node = 2,
		                          .rate = 1000,
		                          .latency_ms = 1 };
	struct sim_metadata_load one, six, many;

	sim_metadata_model(&o, 1, &one);
	ck_assert(close_to(one.plain_rank_ops, 31 + 62 + 61));
	/* nopfs: catalog 31 x (open + fstat) + 62 getdents; metadata 31 + 62 + 3030 + 2 */
	ck_assert(close_to(one.nopfs_job_ops, 62 + 62 + 31 + 62 + 3030 + 2));
	/* its 3,030 stats (30 directories and 3,000 files, 16 at once) bound by the
	 * server's rate; the rest 2 ms each */
	ck_assert(close_to(one.nopfs_seconds, 219 * 0.002 + 3030 / 1000.0));
	/* early start: the listings only, 31 opens, 62 getdents, 2 root stats, 30 class stats */
	ck_assert(close_to(one.nopfs_early_seconds, 95 * 0.002 + 30 / 1000.0));
	ck_assert(close_to(one.nopfs_rank_ops, 0));
	/* One rank alone: each call waits for the last, 2 ms each. */
	ck_assert(close_to(one.plain_seconds, 154 * 0.002));
	sim_metadata_model(&o, 6, &six);
	sim_metadata_model(&o, 4096, &many);
	/* Plain grows with the ranks, nopfs does not. */
	ck_assert(close_to(six.plain_job_ops, 6 * 154));
	ck_assert(close_to(many.plain_job_ops, 4096 * 154));
	ck_assert(close_to(six.nopfs_job_ops, many.nopfs_job_ops));
	ck_assert(close_to(six.nopfs_seconds, many.nopfs_seconds));
	ck_assert(close_to(six.nopfs_early_seconds, many.nopfs_early_seconds));
	/* 4,096 ranks: the server's rate bounds them. */
	ck_assert(close_to(many.plain_seconds, 4096 * 154 / 1000.0));
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("sim");
	TCase *frequency = tcase_create("frequency");
	TCase *engine = tcase_create("engine");
	TCase *config = tcase_create("config");
	SRunner *runner;
	int failed;

	tcase_set_timeout(frequency, 300);
	tcase_set_timeout(engine, 300);
	tcase_add_test(frequency, frequency_matches_paper);
	tcase_add_test(frequency, lemma1_holds_on_all_workers);
	tcase_add_test(frequency, lemma1_small_cases);
	tcase_add_test(engine, one_worker_by_hand);
	tcase_add_test(engine, two_threads_share_the_pfs_by_hand);
	tcase_add_test(engine, two_nodes_contend_by_hand);
	tcase_add_test(engine, cached_epochs_read_the_pfs_once);
	tcase_add_test(engine, perfect_balances_the_workers_by_hand);
	tcase_add_test(engine, locality_aware_never_beats_perfect_by_hand);
	tcase_add_test(engine, lbann_infeasible_beyond_aggregate_memory);
	tcase_add_test(engine, policy_invariants_on_scaled_scenarios);
	tcase_add_test(config, config_parses_and_sorts_tiers);
	tcase_add_test(config, config_errors_name_the_key);
	tcase_add_test(engine, metadata_load_by_hand);
	suite_add_tcase(suite, frequency);
	suite_add_tcase(suite, engine);
	suite_add_tcase(suite, config);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
