/*
 * The NoPFS performance model (SC'21, section 4).
 *
 * Rates are in bytes per second, sizes in bytes, times in seconds. Measured
 * parameters are piecewise-linear curves in a thread or reader count: between
 * two measured points the rate is interpolated linearly, outside them it is
 * clamped to the nearest end (what NoPFS's "linear regression" does).
 *
 * Fetch cases, the fastest applicable one is used:
 *   PFS, with gamma readers:      s / min(t(gamma) / gamma, b_fs)
 *   a peer's tier j:              s / min(b_c, r_j(p_j) / p_j)
 *   the local tier j:             s / (r_j(p_j) / p_j)
 * and the write into the staging buffer (independent of the source):
 *   write(s) = max(s / beta, s / (w_0(p_0) / p_0))
 */
#ifndef NOPFS_MODEL_H
#define NOPFS_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"

#define NOPFS_CURVE_POINTS 16
#define NOPFS_MODEL_TIERS  4

/* A rate measured at a few thread (or reader) counts. */
struct nopfs_curve {
	unsigned int points;
	double x[NOPFS_CURVE_POINTS]; /* increasing */
	double y[NOPFS_CURVE_POINTS];
};

/*
 * Add the point (@x, @y), keeping x sorted; an existing x is overwritten.
 * NOPFS_ERR_RANGE when the curve is full, NOPFS_ERR_INVALID for x <= 0 or
 * y < 0 or a non-finite value.
 */
nopfs_status nopfs_curve_set(struct nopfs_curve *curve, double x, double y);

/* The interpolated, clamped value at @x; 0 for an empty curve. */
double nopfs_curve_eval(const struct nopfs_curve *curve, double x);

/* The smallest x whose value reaches @fraction of the curve's maximum. */
double nopfs_curve_knee(const struct nopfs_curve *curve, double fraction);

struct nopfs_tier_model {
	uint64_t capacity;        /* d_j, bytes */
	unsigned int threads;     /* p_j, prefetch threads */
	struct nopfs_curve read;  /* r_j(p), aggregate */
	struct nopfs_curve write; /* w_j(p), aggregate */
};

struct nopfs_model {
	struct nopfs_curve pfs;          /* t(gamma): aggregate PFS read rate, gamma readers */
	double pfs_client_limit;         /* b_fs: one reader's PFS cap; 0 = none */
	double network;                  /* b_c: inter-node rate; 0 = no peers */
	double preprocess;               /* beta; 0 = no preprocessing term */
	double compute;                  /* c: consumption rate of a worker; 0 = unknown */
	struct nopfs_tier_model staging; /* class 0 */
	unsigned int tiers;              /* classes 1..J-1, fastest first */
	struct nopfs_tier_model tier[NOPFS_MODEL_TIERS];
};

typedef enum nopfs_source {
	NOPFS_SOURCE_LOCAL = 0,
	NOPFS_SOURCE_PEER = 1,
	NOPFS_SOURCE_PFS = 2,
} nopfs_source;

/* Seconds to fetch @size bytes from the PFS while @gamma readers share it. */
double nopfs_model_fetch_pfs(const struct nopfs_model *model, uint64_t size, double gamma);

/* Seconds to fetch @size bytes from a peer's tier @tier (index into tier[]). */
double nopfs_model_fetch_peer(const struct nopfs_model *model, uint64_t size, unsigned int tier);

/* Seconds to fetch @size bytes from the local tier @tier. */
double nopfs_model_fetch_local(const struct nopfs_model *model, uint64_t size, unsigned int tier);

/* Seconds to preprocess and write @size bytes into the staging buffer. */
double nopfs_model_write(const struct nopfs_model *model, uint64_t size);

/*
 * Seconds to store @size bytes into the local tier @tier (index into tier[])
 * at its per-thread write rate w_j(p_j) / p_j: what a prefetcher pays to keep
 * a sample it fetched. 0 when the tier has no write curve (writes are not
 * modeled, as in nopfs_model_write()), INFINITY for a tier that does not exist.
 */
double nopfs_model_store(const struct nopfs_model *model, uint64_t size, unsigned int tier);

/*
 * The fastest source for a sample of @size bytes: @local_tier and @peer_tier
 * are the tiers holding it locally and on a peer, or -1 when absent. Ties
 * prefer local, then peer, then the PFS. *seconds (may be NULL) gets the time.
 */
nopfs_source nopfs_model_best_source(const struct nopfs_model *model, uint64_t size, int local_tier,
                                     int peer_tier, double gamma, double *seconds);

/*
 * Sort the tiers fastest first by their per-thread read rate at their thread
 * count (stable: equal rates keep their order). @order receives the original
 * indices; may be NULL.
 */
void nopfs_model_sort_tiers(struct nopfs_model *model, unsigned int *order);

#endif
