/* Access frequencies of the real sampler and Lemma 1 (NoPFS section 3.1). */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "plan/access.h"
#include "plan/layout.h"
#include "common/log.h"
#include "sim_frequency.h"

double sim_binomial_pmf(uint32_t n, double p, uint32_t k)
{
	double log_choose;

	if (k > n)
		return 0;
	if (p <= 0)
		return k == 0;
	if (p >= 1)
		return k == n;
	log_choose = lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0);
	return exp(log_choose + k * log(p) + (n - k) * log1p(-p));
}

/* Lemma 1's bounds for the inputs (section 3.1; errata A1-A2 applied). */
static void lemma_bounds(struct sim_frequency *f)
{
	double mu = (double)f->epochs / f->workers, n = f->workers;
	double low = floor((1 - f->delta) * mu);

	f->threshold = (uint32_t)floor((1 + f->delta) * mu) + 1;
	f->high = (uint32_t)ceil((1 + f->delta) * mu);
	f->high_bound = (uint32_t)ceil((n - 1 - f->delta) / (n - 1) * mu);
	f->low = low > 0 ? (uint32_t)low : 0;
	f->low_bound = (uint32_t)floor((n - 1 + f->delta) / (n - 1) * mu);
}

static void expectation(struct sim_frequency *f)
{
	double p = 1.0 / f->workers, tail = 0;

	for (uint32_t k = f->threshold; k <= f->epochs; k++)
		tail += sim_binomial_pmf(f->epochs, p, k);
	f->expected = (double)f->samples * tail;
	f->sigma = sqrt((double)f->samples * tail * (1 - tail));
}

/* One sample: the worker's histogram and both directions of Lemma 1. */
static void count_sample(struct sim_frequency *f, const struct nopfs_access_tally *tally)
{
	uint32_t total = 0, max = 0, min = UINT32_MAX, max_at = 0, min_at = 0;
	uint32_t mine = tally->count[f->worker];
	bool high_other_low = false, low_other_high = false;

	for (uint32_t w = 0; w < f->workers; w++) {
		uint32_t c = tally->count[w];

		total += c;
		if (c > max) {
			max = c;
			max_at = w;
		}
		if (c < min) {
			min = c;
			min_at = w;
		}
	}
	f->histogram[mine <= f->epochs ? mine : f->epochs + 1]++;
	if (mine >= f->threshold)
		f->observed++;
	if (total > f->epochs)
		f->padded_samples++;
	else if (total != f->epochs)
		f->total_mismatch++;
	/* Some worker reads it >= high times: another must read it <= bound. */
	if (max >= f->high) {
		f->high_samples++;
		for (uint32_t w = 0; w < f->workers; w++)
			if (w != max_at && tally->count[w] <= f->high_bound)
				high_other_low = true;
		f->high_violations += !high_other_low;
	}
	if (min <= f->low) {
		f->low_samples++;
		for (uint32_t w = 0; w < f->workers; w++)
			if (w != min_at && tally->count[w] >= f->low_bound)
				low_other_high = true;
		f->low_violations += !low_other_high;
	}
}

nopfs_status sim_frequency_run(struct sim_frequency *f, unsigned int threads)
{
	struct nopfs_sampler sampler = {
		.count = f->samples, .world_size = f->workers, .seed = f->seed, .shuffle = true
	};
	struct nopfs_access_table *table = NULL;
	struct nopfs_layout *layout = NULL;
	struct nopfs_access_tally tally;
	uint32_t *tasks;
	nopfs_status status;

	if (f->workers < 2 || f->worker >= f->workers || f->delta < 0 ||
	    f->delta > f->workers - 1) {
		nopfs_error(
		        "frequency: need N >= 2, worker < N and delta in [0, N - 1] (got N %" PRIu32
		        ", worker %" PRIu32 ", delta %g)",
		        f->workers, f->worker, f->delta);
		return NOPFS_ERR_RANGE;
	}
	tasks = malloc(f->workers * sizeof(*tasks));
	f->histogram = calloc(f->epochs + 2, sizeof(*f->histogram));
	if (!tasks || !f->histogram) {
		nopfs_error("no memory to count accesses");
		status = NOPFS_ERR_NOMEM;
		goto out;
	}
	for (uint32_t w = 0; w < f->workers; w++)
		tasks[w] = 1;
	status = nopfs_layout_create(f->workers, tasks, NOPFS_DISTRIBUTION_BLOCK, 0, &layout);
	if (status == NOPFS_OK)
		status = nopfs_access_table_build(&sampler, f->epochs, layout, threads, &table);
	if (status == NOPFS_OK)
		status = nopfs_access_tally_init(&tally, table);
	if (status != NOPFS_OK)
		goto out;
	lemma_bounds(f);
	expectation(f);
	for (uint64_t k = 0; k < f->samples; k++) {
		nopfs_access_tally_sample(&tally, table, k);
		count_sample(f, &tally);
	}
	nopfs_access_tally_fini(&tally);
out:
	nopfs_access_table_destroy(table);
	nopfs_layout_destroy(layout);
	free(tasks);
	if (status != NOPFS_OK)
		sim_frequency_fini(f);
	return status;
}

void sim_frequency_fini(struct sim_frequency *f)
{
	free(f->histogram);
	f->histogram = NULL;
}

void sim_frequency_print(const struct sim_frequency *f)
{
	double p = 1.0 / f->workers, mu = (double)f->epochs / f->workers;

	printf("Access frequency (section 3.1, Fig. 3): F=%" PRIu64 ", N=%" PRIu32 ", E=%" PRIu32
	       ", delta=%g, worker %" PRIu32 ", sampler seed %" PRIu64 "\n",
	       f->samples, f->workers, f->epochs, f->delta, f->worker, f->seed);
	printf("  mu = E/N = %.3f; (1+delta) mu = %.3f: counting samples read >= %" PRIu32
	       " times\n",
	       mu, (1 + f->delta) * mu, f->threshold);
	printf("  %-34s %12s %12s\n", "", "paper", "ours");
	printf("  %-34s %12s %12.1f\n", "expected F x P(X > (1+delta) mu)",
	       f->samples == 1281167 && f->workers == 16 && f->epochs == 90 ? "~31,635" : "-",
	       f->expected);
	printf("  %-34s %12s %12" PRIu64 "  (%+.2f sigma, sigma %.0f)\n",
	       "Monte-Carlo (real sampler)",
	       f->samples == 1281167 && f->workers == 16 && f->epochs == 90 ? "31,863" : "-",
	       f->observed, f->sigma > 0 ? ((double)f->observed - f->expected) / f->sigma : 0,
	       f->sigma);
	printf("  histogram of the worker's reads vs F x Binomial(E, 1/N):\n");
	for (uint32_t k = 0; k <= f->epochs; k++) {
		double want = (double)f->samples * sim_binomial_pmf(f->epochs, p, k);

		if (f->histogram[k] == 0 && want < 0.5)
			continue;
		printf("    %3" PRIu32 " reads: %9" PRIu64 "   expected %11.1f\n", k,
		       f->histogram[k], want);
	}
	printf("  Lemma 1 over all %" PRIu32 " workers (paper: holds, 0 violations):\n",
	       f->workers);
	printf("    some worker >= %" PRIu32 " reads => another <= %" PRIu32 ": %" PRIu64
	       " samples, %" PRIu64 " violations\n",
	       f->high, f->high_bound, f->high_samples, f->high_violations);
	printf("    some worker <= %" PRIu32 " reads => another >= %" PRIu32 ": %" PRIu64
	       " samples, %" PRIu64 " violations\n",
	       f->low, f->low_bound, f->low_samples, f->low_violations);
	printf("    samples read E times in total: all but %" PRIu64
	       " padded (DistributedSampler repeats the head) and %" PRIu64 " others\n",
	       f->padded_samples, f->total_mismatch);
}
