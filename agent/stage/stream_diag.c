/* Recording and diagnosing stream mismatches. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "job.h"
#include "stream_diag.h"

/* Explanations tried, in order, when the requests do not follow the plan. */
struct hypothesis {
	const char *what;
	struct nopfs_sampler sampler;
};

void stream_diag_init(struct stream_diag *diag)
{
	pthread_mutex_init(&diag->lock, NULL);
	diag->total = 0;
	diag->recorded = 0;
	diag->synced = diag->synced_recorded = 0;
	diag->order_found = false;
}

void stream_diag_synced(struct stream_diag *diag, const struct stream_diag_sync *sync)
{
	pthread_mutex_lock(&diag->lock);
	diag->synced++;
	if (diag->synced_recorded < STREAM_DIAG_SYNCS)
		diag->sync[diag->synced_recorded++] = *sync;
	pthread_mutex_unlock(&diag->lock);
}

void stream_diag_order(struct stream_diag *diag, const struct stream_diag_order *order)
{
	pthread_mutex_lock(&diag->lock);
	diag->order_found = true;
	diag->order = *order;
	pthread_mutex_unlock(&diag->lock);
}

/* The ranks found elsewhere in their streams, as a JSON array. */
static json_t *synced_json(const struct stream_diag *diag)
{
	json_t *list = json_array();

	for (uint32_t i = 0; list && i < diag->synced_recorded; i++) {
		const struct stream_diag_sync *s = &diag->sync[i];

		json_array_append_new(list,
		                      json_pack("{s:I, s:I, s:I, s:I, s:f, s:I}", "rank",
		                                (json_int_t)s->rank, "epoch", (json_int_t)s->epoch,
		                                "index", (json_int_t)s->index, "after_requests",
		                                (json_int_t)s->misses, "seconds", s->seconds,
		                                "moved_positions", (json_int_t)s->positions));
	}
	return list;
}

void stream_diag_fini(struct stream_diag *diag)
{
	pthread_mutex_destroy(&diag->lock);
}

void stream_diag_record(struct stream_diag *diag, int32_t rank, nopfs_sample_id sample)
{
	pthread_mutex_lock(&diag->lock);
	diag->total++;
	if (diag->recorded < STREAM_DIAG_RECORDS) {
		diag->record[diag->recorded].rank = rank;
		diag->record[diag->recorded].sample = sample;
		diag->recorded++;
	}
	pthread_mutex_unlock(&diag->lock);
}

/*
 * How many recorded requests the stream of @sampler explains within a single
 * epoch (the best of the first few): the sample is at a position of the
 * requesting rank (or, rank unknown, of a local rank). Within one epoch a
 * wrong stream explains about 1/W of them, the right one all.
 */
static uint32_t explained(const struct stream_diag *diag, const struct job *job,
                          const struct nopfs_sampler *sampler, uint32_t *inverse, uint32_t *perm)
{
	uint32_t epochs = nopfs_sampler_one_order(sampler) ? 1 : job->epochs < 4 ? job->epochs : 4;
	uint32_t best = 0;
	uint64_t total = nopfs_sampler_total_size(sampler);

	for (uint32_t e = 0; e < epochs; e++) {
		uint32_t count = 0;

		nopfs_sampler_permutation(sampler, e, perm);
		for (uint64_t p = 0; p < sampler->count; p++)
			inverse[perm[p]] = (uint32_t)p;
		for (uint32_t i = 0; i < diag->recorded; i++) {
			bool hit = false;

			for (uint64_t p = inverse[diag->record[i].sample]; p < total && !hit;
			     p += sampler->count) {
				uint32_t rank = (uint32_t)(p % sampler->world_size);

				hit = diag->record[i].rank >= 0
				              ? rank == (uint32_t)diag->record[i].rank
				              : job_is_local_rank(job, rank);
			}
			count += hit;
		}
		if (count > best)
			best = count;
	}
	return best;
}

static json_t *diagnose(const struct stream_diag *diag, const struct job *job,
                        const struct nopfs_sampler *staged)
{
	struct hypothesis tried[3];
	unsigned int count = 0;
	uint32_t *perm = malloc(staged->count * sizeof(*perm));
	uint32_t *inverse = malloc(staged->count * sizeof(*inverse));
	char text[512];
	json_t *result = NULL;

	if (!perm || !inverse)
		goto out;
	if (staged->seed != 0 || staged->seed_negative) {
		tried[count] =
		        (struct hypothesis){ "DistributedSampler's default seed 0", *staged };
		tried[count].sampler.seed = 0;
		tried[count].sampler.seed_negative = false;
		count++;
	}
	if (staged->shuffle) {
		tried[count] = (struct hypothesis){ "shuffle=False", *staged };
		tried[count].sampler.shuffle = false;
		count++;
	}
	if (staged->count % staged->world_size != 0) {
		tried[count] = (struct hypothesis){ staged->drop_last ? "drop_last=False"
			                                              : "drop_last=True",
			                            *staged };
		tried[count].sampler.drop_last = !staged->drop_last;
		count++;
	}
	/* Requests that follow the given stream arrived outside the windows. */
	if (explained(diag, job, staged, inverse, perm) * 10 >= diag->recorded * 9) {
		result = json_string("the requests follow the given stream but came outside the "
		                     "staging windows (ranks restarted or skipped positions)");
		goto out;
	}
	for (unsigned int h = 0; h < count; h++) {
		uint32_t hits = explained(diag, job, &tried[h].sampler, inverse, perm);

		if (hits * 10 >= diag->recorded * 9) {
			snprintf(text, sizeof(text),
			         "%" PRIu32 " of %" PRIu32
			         " recorded requests follow DistributedSampler with %s, not the "
			         "stream the agent was given; pass the script's sampler settings",
			         hits, diag->recorded, tried[h].what);
			result = json_string(text);
			goto out;
		}
	}
	snprintf(text, sizeof(text),
	         "the requests follow none of the streams tried (the given seed, seed 0, "
	         "shuffle=False, drop_last toggled): the script may use another sampler; "
	         "samples were served correctly, without clairvoyance");
	result = json_string(text);
out:
	free(perm);
	free(inverse);
	return result;
}

json_t *stream_diag_json(struct stream_diag *diag, const struct job *job,
                         const struct nopfs_sampler *staged, uint64_t matched)
{
	json_t *object, *diagnosis;

	pthread_mutex_lock(&diag->lock);
	object = json_pack("{s:I, s:I, s:I, s:o}", "mismatched_requests", (json_int_t)diag->total,
	                   "matched_deliveries", (json_int_t)matched, "self_synced",
	                   (json_int_t)diag->synced, "self_sync", synced_json(diag));
	if (diag->order_found)
		json_object_set_new(object, "order_found",
		                    json_pack("{s:s, s:I, s:I, s:f}", "order", diag->order.what,
		                              "rank", (json_int_t)diag->order.rank,
		                              "after_requests", (json_int_t)diag->order.misses,
		                              "seconds", diag->order.seconds));
	if (diag->total > 0 && diag->total * 20 > matched) {
		diagnosis = diagnose(diag, job, staged);
		if (diagnosis)
			json_object_set_new(object, "diagnosis", diagnosis);
	}
	pthread_mutex_unlock(&diag->lock);
	return object;
}
