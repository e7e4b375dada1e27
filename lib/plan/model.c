/* The NoPFS performance model: piecewise-linear rates and fetch times. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "common/log.h"
#include "model.h"

nopfs_status nopfs_curve_set(struct nopfs_curve *curve, double x, double y)
{
	unsigned int i;

	if (!isfinite(x) || !isfinite(y) || x <= 0 || y < 0) {
		nopfs_error("curve point (%g, %g) is invalid: x must be > 0 and y >= 0", x, y);
		return NOPFS_ERR_INVALID;
	}
	for (i = 0; i < curve->points && curve->x[i] < x; i++)
		;
	if (i < curve->points && curve->x[i] == x) {
		curve->y[i] = y;
		return NOPFS_OK;
	}
	if (curve->points == NOPFS_CURVE_POINTS) {
		nopfs_error("curve already has %d points", NOPFS_CURVE_POINTS);
		return NOPFS_ERR_RANGE;
	}
	memmove(&curve->x[i + 1], &curve->x[i], (curve->points - i) * sizeof(curve->x[0]));
	memmove(&curve->y[i + 1], &curve->y[i], (curve->points - i) * sizeof(curve->y[0]));
	curve->x[i] = x;
	curve->y[i] = y;
	curve->points++;
	return NOPFS_OK;
}

double nopfs_curve_eval(const struct nopfs_curve *curve, double x)
{
	unsigned int i;

	if (curve->points == 0)
		return 0;
	if (x <= curve->x[0])
		return curve->y[0];
	if (x >= curve->x[curve->points - 1])
		return curve->y[curve->points - 1];
	for (i = 1; curve->x[i] < x; i++)
		;
	return curve->y[i - 1] + (curve->y[i] - curve->y[i - 1]) * (x - curve->x[i - 1]) /
	                                 (curve->x[i] - curve->x[i - 1]);
}

double nopfs_curve_knee(const struct nopfs_curve *curve, double fraction)
{
	double top = 0;

	for (unsigned int i = 0; i < curve->points; i++)
		if (curve->y[i] > top)
			top = curve->y[i];
	for (unsigned int i = 0; i < curve->points; i++)
		if (curve->y[i] >= fraction * top)
			return curve->x[i];
	return curve->points ? curve->x[curve->points - 1] : 1;
}

/* Seconds to move @size bytes at @rate; an absent or zero rate is infinitely slow. */
static double transfer_time(uint64_t size, double rate)
{
	if (rate <= 0)
		return INFINITY;
	return (double)size / rate;
}

/* Per-thread rate of a tier at its configured thread count. */
static double tier_thread_rate(const struct nopfs_tier_model *tier, const struct nopfs_curve *curve)
{
	double threads = tier->threads ? tier->threads : 1;

	return nopfs_curve_eval(curve, threads) / threads;
}

double nopfs_model_fetch_pfs(const struct nopfs_model *model, uint64_t size, double gamma)
{
	double readers = gamma >= 1 ? gamma : 1;
	double rate = nopfs_curve_eval(&model->pfs, readers) / readers;

	if (model->pfs_client_limit > 0 && model->pfs_client_limit < rate)
		rate = model->pfs_client_limit;
	return transfer_time(size, rate);
}

double nopfs_model_fetch_peer(const struct nopfs_model *model, uint64_t size, unsigned int tier)
{
	double rate;

	if (tier >= model->tiers)
		return INFINITY;
	rate = tier_thread_rate(&model->tier[tier], &model->tier[tier].read);
	if (model->network < rate)
		rate = model->network;
	return transfer_time(size, rate);
}

double nopfs_model_fetch_local(const struct nopfs_model *model, uint64_t size, unsigned int tier)
{
	if (tier >= model->tiers)
		return INFINITY;
	return transfer_time(size, tier_thread_rate(&model->tier[tier], &model->tier[tier].read));
}

double nopfs_model_write(const struct nopfs_model *model, uint64_t size)
{
	double store =
	        transfer_time(size, tier_thread_rate(&model->staging, &model->staging.write));
	double preprocess = model->preprocess > 0 ? (double)size / model->preprocess : 0;

	if (model->staging.write.points == 0)
		store = 0;
	return store > preprocess ? store : preprocess;
}

double nopfs_model_store(const struct nopfs_model *model, uint64_t size, unsigned int tier)
{
	if (tier >= model->tiers)
		return INFINITY;
	if (model->tier[tier].write.points == 0)
		return 0;
	return transfer_time(size, tier_thread_rate(&model->tier[tier], &model->tier[tier].write));
}

nopfs_source nopfs_model_best_source(const struct nopfs_model *model, uint64_t size, int local_tier,
                                     int peer_tier, double gamma, double *seconds)
{
	double best = nopfs_model_fetch_pfs(model, size, gamma);
	nopfs_source source = NOPFS_SOURCE_PFS;
	double t;

	if (peer_tier >= 0) {
		t = nopfs_model_fetch_peer(model, size, (unsigned int)peer_tier);
		if (t <= best) {
			best = t;
			source = NOPFS_SOURCE_PEER;
		}
	}
	if (local_tier >= 0) {
		t = nopfs_model_fetch_local(model, size, (unsigned int)local_tier);
		if (t <= best) {
			best = t;
			source = NOPFS_SOURCE_LOCAL;
		}
	}
	if (seconds)
		*seconds = best;
	return source;
}

void nopfs_model_sort_tiers(struct nopfs_model *model, unsigned int *order)
{
	unsigned int index[NOPFS_MODEL_TIERS];

	for (unsigned int i = 0; i < model->tiers; i++)
		index[i] = i;
	/* Insertion sort: a handful of tiers, and it is stable. */
	for (unsigned int i = 1; i < model->tiers; i++) {
		struct nopfs_tier_model moving = model->tier[i];
		double rate = tier_thread_rate(&moving, &moving.read);
		unsigned int moving_index = index[i];
		unsigned int j = i;

		while (j > 0 &&
		       tier_thread_rate(&model->tier[j - 1], &model->tier[j - 1].read) < rate) {
			model->tier[j] = model->tier[j - 1];
			index[j] = index[j - 1];
			j--;
		}
		model->tier[j] = moving;
		index[j] = moving_index;
	}
	if (order)
		memcpy(order, index, model->tiers * sizeof(index[0]));
}
