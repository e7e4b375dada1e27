/* Sampler: MT19937, DistributedSampler arithmetic, and torch's stored streams. */
#include <check.h>
#include <string.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "log_capture.h"
#include "plan/mt19937.h"
#include "plan/sampler.h"

START_TEST(mt19937_reference_outputs)
{
	struct nopfs_mt19937 mt;
	uint32_t value = 0;

	/* The published check values of MT19937 with the default seed 5489. */
	nopfs_mt19937_seed(&mt, 5489);
	ck_assert_uint_eq(nopfs_mt19937_next(&mt), 3499211612U);
	for (int i = 2; i <= 10000; i++)
		value = nopfs_mt19937_next(&mt);
	ck_assert_uint_eq(value, 4123659995U);
}
END_TEST

START_TEST(per_rank_and_total_size)
{
	struct nopfs_sampler s = { .count = 10, .world_size = 3, .shuffle = true };

	ck_assert_uint_eq(nopfs_sampler_per_rank(&s), 4);
	ck_assert_uint_eq(nopfs_sampler_total_size(&s), 12);
	s.drop_last = true;
	ck_assert_uint_eq(nopfs_sampler_per_rank(&s), 3);
	ck_assert_uint_eq(nopfs_sampler_total_size(&s), 9);
	s.count = 9;
	ck_assert_uint_eq(nopfs_sampler_per_rank(&s), 3);
	s.drop_last = false;
	s.count = 2;
	s.world_size = 5;
	ck_assert_uint_eq(nopfs_sampler_per_rank(&s), 1);
}
END_TEST

/* A resumed job: epoch e of a sampler starting at K is the script's epoch K + e. */
START_TEST(first_epoch_shifts_the_epochs)
{
	struct nopfs_sampler whole = {
		.count = 1000, .world_size = 3, .shuffle = true, .seed = 42
	};
	struct nopfs_sampler resumed = whole;
	uint32_t a[1000], b[1000];

	resumed.first_epoch = 7;
	for (uint64_t e = 0; e < 3; e++) {
		nopfs_sampler_permutation(&whole, 7 + e, a);
		nopfs_sampler_permutation(&resumed, e, b);
		ck_assert_mem_eq(a, b, sizeof(a));
		ck_assert_uint_eq(nopfs_sampler_epoch_seed(&resumed, e), 42 + 7 + e);
	}
	nopfs_sampler_permutation(&whole, 0, a);
	ck_assert_int_ne(memcmp(a, b, sizeof(a)), 0);
	/* the last epoch counts from the script's first: seed + K + epochs - 1 */
	resumed.seed = UINT64_MAX - 9;
	ck_assert_int_eq(nopfs_sampler_check_epochs(&resumed, 3), NOPFS_OK);
	ck_assert_int_eq(nopfs_sampler_check_epochs(&resumed, 4), NOPFS_ERR_RANGE);
}
END_TEST

/* Without set_epoch every epoch is epoch 0's order, resumed or not. */
START_TEST(same_order_repeats_epoch_zero)
{
	struct nopfs_sampler whole = {
		.count = 1000, .world_size = 3, .shuffle = true, .seed = 42
	};
	struct nopfs_sampler same = whole;
	uint32_t a[1000], b[1000];

	same.same_order = true;
	same.first_epoch = 5;
	nopfs_sampler_permutation(&whole, 0, a);
	for (uint64_t e = 0; e < 3; e++) {
		nopfs_sampler_permutation(&same, e, b);
		ck_assert_mem_eq(a, b, sizeof(a));
		ck_assert_uint_eq(nopfs_sampler_epoch_seed(&same, e), 42);
	}
	nopfs_sampler_permutation(&whole, 1, b);
	ck_assert_int_ne(memcmp(a, b, sizeof(a)), 0);
}
END_TEST

START_TEST(padding_repeats_the_head)
{
	struct nopfs_sampler s = { .count = 5, .world_size = 4, .shuffle = false };
	uint32_t perm[5], stream[2];

	nopfs_sampler_permutation(&s, 0, perm);
	/* Identity padded to 8: 0 1 2 3 4 0 1 2; rank 1 takes 1 and 0. */
	nopfs_sampler_rank_stream(&s, perm, 1, stream);
	ck_assert_uint_eq(stream[0], 1);
	ck_assert_uint_eq(stream[1], 0);
	s.count = 2;
	s.world_size = 5;
	nopfs_sampler_permutation(&s, 0, perm);
	/* 0 1 0 1 0: rank 4 reads sample 0 again. */
	nopfs_sampler_rank_stream(&s, perm, 4, stream);
	ck_assert_uint_eq(stream[0], 0);
}
END_TEST

START_TEST(seed_parsing)
{
	struct nopfs_sampler s = { 0 };

	ck_assert_int_eq(nopfs_sampler_parse_seed("18446744073709551615", &s), NOPFS_OK);
	ck_assert(!s.seed_negative);
	ck_assert_uint_eq(s.seed, UINT64_MAX);
	ck_assert_int_eq(nopfs_sampler_parse_seed("-9223372036854775808", &s), NOPFS_OK);
	ck_assert(s.seed_negative);
	ck_assert_uint_eq(s.seed, (uint64_t)1 << 63);
	ck_assert_int_eq(nopfs_sampler_parse_seed("-0", &s), NOPFS_OK);
	ck_assert(!s.seed_negative);

	log_capture_start();
	ck_assert_int_eq(nopfs_sampler_parse_seed("18446744073709551616", &s), NOPFS_ERR_RANGE);
	ck_assert(log_captured("18446744073709551616"));
	ck_assert_int_eq(nopfs_sampler_parse_seed("-9223372036854775809", &s), NOPFS_ERR_RANGE);
	ck_assert_int_eq(nopfs_sampler_parse_seed("12abc", &s), NOPFS_ERR_INVALID);
	ck_assert(log_captured("'12abc' is not a decimal integer"));
	ck_assert_int_eq(nopfs_sampler_parse_seed("", &s), NOPFS_ERR_INVALID);
	ck_assert_int_eq(nopfs_sampler_parse_seed(" 1", &s), NOPFS_ERR_INVALID);
	nopfs_log_set_sink(NULL, NULL, NOPFS_LOG_INFO);
}
END_TEST

START_TEST(epoch_range_is_checked)
{
	struct nopfs_sampler s = { .count = 10, .world_size = 1 };

	nopfs_sampler_parse_seed("18446744073709551614", &s);
	ck_assert_int_eq(nopfs_sampler_check_epochs(&s, 2), NOPFS_OK);
	log_capture_start();
	ck_assert_int_eq(nopfs_sampler_check_epochs(&s, 3), NOPFS_ERR_RANGE);
	ck_assert(log_captured("exceeds 2^64-1"));
	nopfs_log_set_sink(NULL, NULL, NOPFS_LOG_INFO);
}
END_TEST

START_TEST(invalid_samplers_are_rejected)
{
	struct nopfs_sampler s = { .count = 0, .world_size = 1 };

	log_capture_start();
	ck_assert_int_eq(nopfs_sampler_validate(&s), NOPFS_ERR_RANGE);
	s.count = 3;
	s.world_size = 0;
	ck_assert_int_eq(nopfs_sampler_validate(&s), NOPFS_ERR_RANGE);
	s.world_size = 4;
	s.drop_last = true;
	ck_assert_int_eq(nopfs_sampler_validate(&s), NOPFS_ERR_EMPTY);
	ck_assert(log_captured("drop_last"));
	/* a resume within an epoch starts before each rank's last index */
	s = (struct nopfs_sampler){ .count = 10, .world_size = 3, .first_index = 3 };
	ck_assert_int_eq(nopfs_sampler_validate(&s), NOPFS_OK); /* 4 per rank: 0..3 */
	s.first_index = 4;
	ck_assert_int_eq(nopfs_sampler_validate(&s), NOPFS_ERR_RANGE);
	ck_assert(log_captured("start sample 4 is not below the 4 samples each of the 3 ranks"));
	nopfs_log_set_sink(NULL, NULL, NOPFS_LOG_INFO);
}
END_TEST

/* The same hash sampler_torch.py stores. */
static uint64_t stream_hash(const struct nopfs_sampler *s, uint64_t epoch, uint32_t *first)
{
	uint64_t per_rank = nopfs_sampler_per_rank(s), power = 1, hash = 0;
	uint32_t *perm = malloc(s->count * sizeof(*perm));
	uint32_t *stream = malloc(per_rank * sizeof(*stream));

	ck_assert_ptr_nonnull(perm);
	ck_assert_ptr_nonnull(stream);
	nopfs_sampler_permutation(s, epoch, perm);
	for (uint32_t rank = 0; rank < s->world_size; rank++) {
		nopfs_sampler_rank_stream(s, perm, rank, stream);
		if (rank == 0)
			*first = stream[0];
		for (uint64_t i = 0; i < per_rank; i++) {
			power *= 1099511628211ULL;
			hash += ((uint64_t)stream[i] + 1) * power;
		}
	}
	free(stream);
	free(perm);
	return hash;
}

START_TEST(torch_stored_vectors)
{
	char path[4096], line[512];
	const char *top = getenv("top_srcdir");
	unsigned int checked = 0;
	FILE *vectors;

	snprintf(path, sizeof(path), "%s/tests/data/sampler_vectors.txt", top ? top : ".");
	vectors = fopen(path, "r");
	ck_assert_msg(vectors != NULL, "cannot open %s", path);
	while (fgets(line, sizeof(line), vectors)) {
		struct nopfs_sampler s = { .shuffle = true };
		char seed[32];
		uint64_t count, epoch, per_rank, hash;
		unsigned int world, drop_last, first_torch;
		uint32_t first = UINT32_MAX;

		if (line[0] == '#')
			continue;
		ck_assert_int_eq(sscanf(line,
		                        "%" SCNu64 " %u %31s %" SCNu64 " %u %" SCNu64 " %" SCNu64
		                        " %u",
		                        &count, &world, seed, &epoch, &drop_last, &per_rank, &hash,
		                        &first_torch),
		                 8);
		s.count = count;
		s.world_size = world;
		s.drop_last = drop_last;
		ck_assert_int_eq(nopfs_sampler_parse_seed(seed, &s), NOPFS_OK);
		ck_assert_uint_eq(nopfs_sampler_per_rank(&s), per_rank);
		ck_assert_msg(stream_hash(&s, epoch, &first) == hash && first == first_torch,
		              "stream differs from torch's for: %s", line);
		checked++;
	}
	fclose(vectors);
	ck_assert_uint_gt(checked, 1000);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("sampler");
	TCase *basics = tcase_create("basics");
	TCase *torch = tcase_create("torch");
	SRunner *runner;
	int failed;

	tcase_add_test(basics, mt19937_reference_outputs);
	tcase_add_test(basics, per_rank_and_total_size);
	tcase_add_test(basics, padding_repeats_the_head);
	tcase_add_test(basics, first_epoch_shifts_the_epochs);
	tcase_add_test(basics, same_order_repeats_epoch_zero);
	tcase_add_test(basics, seed_parsing);
	tcase_add_test(basics, epoch_range_is_checked);
	tcase_add_test(basics, invalid_samplers_are_rejected);
	tcase_add_test(torch, torch_stored_vectors);
	tcase_set_timeout(torch, 300);
	suite_add_tcase(suite, basics);
	suite_add_tcase(suite, torch);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
