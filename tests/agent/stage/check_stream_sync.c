/*
 * stream_sync_search(): a rank's requests off the plan, taken from some
 * place of its stream in the order a DataLoader with two workers asks for
 * them, are found there (epoch and index); requests from no single place
 * are not; a search can be stopped.
 */
#include <check.h>
#include <stdlib.h>

#include "plan/mt19937.h"
#include "stage/stream_sync.h"

/* Rank @rank's samples at indices @first.. of @epoch, two workers' batches of 4 interleaved. */
static void take(const struct nopfs_sampler *s, uint32_t epoch, uint32_t rank, uint64_t first,
                 nopfs_sample_id *out)
{
	static const unsigned int order[STREAM_SYNC_MISSES] = {
		0, 4, 1, 5, 2, 6, 3, 7, 8, 9, 10, 11
	};
	uint32_t *perm = malloc(s->count * sizeof(*perm));

	nopfs_sampler_permutation(s, epoch, perm);
	for (unsigned int i = 0; i < STREAM_SYNC_MISSES; i++)
		out[i] = nopfs_sampler_at(s, perm, rank + (first + order[i]) * s->world_size);
	free(perm);
}

START_TEST(found_where_the_rank_reads)
{
	struct nopfs_sampler s = { .count = 5000, .world_size = 4, .shuffle = true, .seed = 9 };
	nopfs_sample_id misses[STREAM_SYNC_MISSES];
	struct stream_sync_found found;

	for (uint32_t epoch = 0; epoch < 6; epoch++) {
		uint32_t rank = epoch % 4;
		uint64_t first = 37 * epoch;

		take(&s, epoch, rank, first, misses);
		ck_assert_int_eq(stream_sync_search(&s, 6, rank, misses, STREAM_SYNC_MISSES, 128,
		                                    NULL, &found),
		                 NOPFS_OK);
		ck_assert_uint_eq(found.epoch, epoch);
		ck_assert_uint_eq(found.first, first);
		ck_assert_uint_eq(found.index[1], first + 4);
		/* another rank's place: not this rank's */
		ck_assert_int_eq(stream_sync_search(&s, 6, (rank + 1) % 4, misses,
		                                    STREAM_SYNC_MISSES, 128, NULL, &found),
		                 NOPFS_ERR_NOT_FOUND);
	}
	/* a resumed job: the plan's epoch 0 is the script's 3 */
	s.first_epoch = 3;
	take(&s, 1, 2, 700, misses);
	ck_assert_int_eq(
	        stream_sync_search(&s, 4, 2, misses, STREAM_SYNC_MISSES, 128, NULL, &found),
	        NOPFS_OK);
	ck_assert_uint_eq(found.epoch, 1);
	ck_assert_uint_eq(found.first, 700);
}
END_TEST

START_TEST(no_single_place_no_move)
{
	struct nopfs_sampler s = { .count = 2000, .world_size = 1, .shuffle = true, .seed = 1 };
	nopfs_sample_id misses[STREAM_SYNC_MISSES], other[STREAM_SYNC_MISSES];
	struct stream_sync_found found;
	struct nopfs_mt19937 mt;

	/* samples drawn at random: in every epoch of the one rank, spread wide */
	nopfs_mt19937_seed(&mt, 5);
	for (unsigned int i = 0; i < STREAM_SYNC_MISSES; i++)
		misses[i] = nopfs_mt19937_next(&mt) % 2000;
	ck_assert_int_eq(
	        stream_sync_search(&s, 5, 0, misses, STREAM_SYNC_MISSES, 1000, NULL, &found),
	        NOPFS_ERR_NOT_FOUND);
	/* half from one place, half from another: too far apart */
	take(&s, 1, 0, 100, misses);
	take(&s, 1, 0, 900, other);
	for (unsigned int i = 0; i < STREAM_SYNC_MISSES / 2; i++)
		misses[i] = other[i];
	ck_assert_int_eq(
	        stream_sync_search(&s, 5, 0, misses, STREAM_SYNC_MISSES, 128, NULL, &found),
	        NOPFS_ERR_NOT_FOUND);
	/* one place, but wider than allowed */
	take(&s, 2, 0, 100, misses);
	ck_assert_int_eq(stream_sync_search(&s, 5, 0, misses, STREAM_SYNC_MISSES, 8, NULL, &found),
	                 NOPFS_ERR_NOT_FOUND);
	ck_assert_int_eq(stream_sync_search(&s, 5, 0, misses, STREAM_SYNC_MISSES, 16, NULL, &found),
	                 NOPFS_OK);
	/* one distinct sample tells nothing */
	for (unsigned int i = 0; i < STREAM_SYNC_MISSES; i++)
		misses[i] = 7;
	ck_assert_int_eq(
	        stream_sync_search(&s, 5, 0, misses, STREAM_SYNC_MISSES, 128, NULL, &found),
	        NOPFS_ERR_NOT_FOUND);
}
END_TEST

START_TEST(stopped_between_epochs)
{
	struct nopfs_sampler s = { .count = 1000, .world_size = 2, .shuffle = true };
	nopfs_sample_id misses[STREAM_SYNC_MISSES];
	struct stream_sync_found found;
	atomic_bool stop = true;

	take(&s, 0, 0, 0, misses);
	ck_assert_int_eq(
	        stream_sync_search(&s, 3, 0, misses, STREAM_SYNC_MISSES, 128, &stop, &found),
	        NOPFS_ERR_CANCELED);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("stream_sync");
	TCase *tc = tcase_create("stream_sync");
	SRunner *runner;
	int failed;

	tcase_add_test(tc, found_where_the_rank_reads);
	tcase_add_test(tc, no_single_place_no_move);
	tcase_add_test(tc, stopped_between_epochs);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? 1 : 0;
}
