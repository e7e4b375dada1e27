/*
 * Access frequencies of the real sampler (NoPFS section 3.1, Fig. 3): how
 * often one worker reads each sample over E epochs, against the binomial
 * estimate F x P(X > (1 + delta) E / N), and Lemma 1 checked on every sample
 * and every worker.
 */
#ifndef NOPFS_SIM_FREQUENCY_H
#define NOPFS_SIM_FREQUENCY_H

#include <stdint.h>

#include "common/status.h"

struct sim_frequency {
	/* Inputs. */
	uint64_t samples; /* F */
	uint32_t workers; /* N */
	uint32_t epochs;  /* E */
	double delta;
	uint32_t worker; /* whose histogram */
	uint64_t seed;
	/* Results for the worker. */
	uint32_t threshold;  /* reads counted as "more than (1 + delta) mu" */
	double expected;     /* F x P(X >= threshold), X ~ Binomial(E, 1/N) */
	double sigma;        /* binomial standard deviation of the count */
	uint64_t observed;   /* samples the worker reads threshold or more times */
	uint64_t *histogram; /* epochs + 2 entries: samples by the worker's reads */
	/* Lemma 1, every worker. */
	uint32_t high, high_bound; /* some worker >= high => another <= high_bound */
	uint32_t low, low_bound;   /* some worker <= low => another >= low_bound */
	uint64_t high_samples, high_violations;
	uint64_t low_samples, low_violations;
	uint64_t padded_samples; /* samples read more than E times (padding) */
	uint64_t total_mismatch; /* samples whose reads over all workers != E (+ padding) */
};

/*
 * Replay the sampler (world size N, one worker per node) and count.
 * @threads (0 means 1) build the access table. On success the caller owns
 * freq->histogram (sim_frequency_fini()).
 */
nopfs_status sim_frequency_run(struct sim_frequency *freq, unsigned int threads);
void sim_frequency_fini(struct sim_frequency *freq);

/* The binomial probability P(X = k), X ~ Binomial(n, p). */
double sim_binomial_pmf(uint32_t n, double p, uint32_t k);

/* Print the comparison with the paper (31,635 expected, 31,863 in Fig. 3). */
void sim_frequency_print(const struct sim_frequency *freq);

#endif
