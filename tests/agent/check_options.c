/*
 * The agent's options for another step (agent_options_step()): what a step
 * description may give, what it resets, and errors naming the culprit.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap.h"
#include "common/log.h"
#include "log_capture.h"
#include "options.h"

/* The options are parsed without PMIx: the standalone form (--ranks). */
bool bootstrap_available(void)
{
	return false;
}

static void parse_base(struct agent_options *options)
{
	char *argv[] = { "nopfs-agent", "--dataset",     "/data/a", "--seed",
		         "42",          "--epochs",      "3",       "--world-size",
		         "4",           "--ranks",       "0,1",     "--no-shuffle",
		         "--drop-last", "--tier",        "ram:1G",  "--job-id",
		         "j7",          "--runtime-dir", "/tmp/r7", NULL };

	ck_assert_int_eq(agent_options_parse(19, argv, options), NOPFS_OK);
}

/* agent_options_step() on @base with the lines of @text. */
static nopfs_status step(const struct agent_options *base, const char *text,
                         struct agent_options *next)
{
	char *copy = strdup(text);
	nopfs_status status = agent_options_step(base, copy, next);

	free(copy);
	return status;
}

START_TEST(step_replaces_the_step_options_only)
{
	struct agent_options base, next;

	parse_base(&base);
	ck_assert_int_eq(
	        step(&base, "--dataset\n/data/b\n--seed\n7\n--world-size\n2\n--ranks\n1\n", &next),
	        NOPFS_OK);
	ck_assert_str_eq(next.dataset_root, "/data/b");
	ck_assert_str_eq(next.catalog.root, next.dataset_root); /* its own strings */
	ck_assert_uint_eq(next.sampler.seed, 7);
	ck_assert_uint_eq(next.sampler.world_size, 2);
	ck_assert_uint_eq(next.local_rank_count, 1);
	ck_assert_uint_eq(next.local_ranks[0], 1);
	/* not given: the defaults, not the current step's */
	ck_assert_uint_eq(next.epochs, 1);
	ck_assert(next.sampler.shuffle);
	ck_assert(!next.sampler.same_order);
	ck_assert(!next.sampler.drop_last);
	/* the agent's own settings stay */
	ck_assert_str_eq(next.job_id, "j7");
	ck_assert_str_eq(next.runtime_dir, "/tmp/r7");
	ck_assert_str_eq(next.report_pattern, base.report_pattern);
	ck_assert_uint_eq(next.tiers.count, 1);
	{ /* a script that never calls set_epoch */
		struct agent_options same;

		ck_assert_int_eq(step(&base,
		                      "--dataset\n/data/b\n--world-size\n2\n--ranks\n1\n"
		                      "--no-set-epoch\n",
		                      &same),
		                 NOPFS_OK);
		ck_assert(same.sampler.same_order);
		agent_options_fini(&same);
	}
	/* moved into place, it points at its new home */
	agent_options_move(&base, &next);
	ck_assert_str_eq(base.catalog.root, "/data/b");
	ck_assert_ptr_eq(base.catalog.root, base.dataset_root);
	agent_options_fini(&next);
	agent_options_fini(&base);
}
END_TEST

/* A resumed job's step: epochs K .. E-1 of the script, planned from K. */
START_TEST(step_start_epoch)
{
	struct agent_options base, next;

	parse_base(&base);
	ck_assert_uint_eq(base.sampler.first_epoch, 0);
	ck_assert_int_eq(step(&base,
	                      "--dataset\n/data/b\n--epochs\n90\n--start-epoch\n60\n"
	                      "--world-size\n2\n--ranks\n1\n",
	                      &next),
	                 NOPFS_OK);
	ck_assert_uint_eq(next.epochs, 90);
	ck_assert_uint_eq(next.sampler.first_epoch, 60);
	ck_assert_uint_eq(next.sampler.first_index, 0);
	agent_options_fini(&next);
	/* a resume within epoch 60 */
	ck_assert_int_eq(step(&base,
	                      "--dataset\n/data/b\n--epochs\n90\n--start-epoch\n60\n"
	                      "--start-sample\n512\n--world-size\n2\n--ranks\n1\n",
	                      &next),
	                 NOPFS_OK);
	ck_assert_uint_eq(next.sampler.first_epoch, 60);
	ck_assert_uint_eq(next.sampler.first_index, 512);
	agent_options_fini(&next);
	/* not given in a later step: from the start again */
	ck_assert_int_eq(step(&base, "--dataset\n/data/b\n--world-size\n2\n--ranks\n1\n", &next),
	                 NOPFS_OK);
	ck_assert_uint_eq(next.sampler.first_epoch, 0);
	ck_assert_uint_eq(next.sampler.first_index, 0);
	agent_options_fini(&next);
	agent_options_fini(&base);
}
END_TEST

START_TEST(step_errors_name_the_culprit)
{
	static const struct {
		const char *text, *message;
	} cases[] = {
		{ "--dataset\n/d\n--tier\nram:2G\n--world-size\n1\n--ranks\n0\n",
		  "step description: '--tier' is not an option of a step" },
		{ "--dataset\n/d\n--job-id\nx\n--world-size\n1\n--ranks\n0\n",
		  "step description: '--job-id' is not an option of a step" },
		{ "--dataset\n/d\n--speed\n3\n", "step description: unknown or incomplete option "
		                                 "'--speed'" },
		{ "--dataset\n/d\n--world-size\n1\n--ranks\n0\nextra\n",
		  "step description: unexpected argument 'extra'" },
		{ "--seed\n1\n--world-size\n1\n--ranks\n0\n", "--dataset is required" },
		{ "--dataset\n/d\n--epochs\n0\n--world-size\n1\n--ranks\n0\n", "epochs" },
		{ "--dataset\n/d\n--world-size\n2\n--ranks\n5\n", "--ranks: rank 5" },
		{ "--dataset\n/d\n--epochs\n3\n--start-epoch\n3\n--world-size\n1\n--ranks\n0\n",
		  "--start-epoch 3 is not below --epochs 3" },
	};
	struct agent_options base, next;

	parse_base(&base);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		log_capture_start();
		ck_assert_int_ne(step(&base, cases[i].text, &next), NOPFS_OK);
		ck_assert_msg(log_captured(cases[i].message), "case %zu: '%s' not in '%s'", i,
		              cases[i].message, log_capture_buffer);
	}
	/* the current options are untouched */
	ck_assert_str_eq(base.dataset_root, "/data/a");
	ck_assert_uint_eq(base.local_rank_count, 2);
	agent_options_fini(&base);
}
END_TEST

/* --max-sample-size: 64 MiB unless given, a size of at least a byte, kept by later steps. */
START_TEST(max_sample_size)
{
	char *argv[] = { "nopfs-agent", "--dataset",         "/data/a", "--world-size",
		         "1",           "--ranks",           "0",       "--job-id",
		         "j8",          "--max-sample-size", "1.5G",    NULL };
	static const char *const bad[] = { "0", "lots", "-1" };
	struct agent_options options, next;

	parse_base(&options);
	ck_assert_uint_eq(options.max_sample_size, (uint64_t)64 << 20);
	agent_options_fini(&options);
	ck_assert_int_eq(agent_options_parse(11, argv, &options), NOPFS_OK);
	ck_assert_uint_eq(options.max_sample_size, (uint64_t)3 << 29);
	ck_assert_int_eq(step(&options, "--dataset\n/data/b\n--world-size\n1\n--ranks\n0\n", &next),
	                 NOPFS_OK);
	ck_assert_uint_eq(next.max_sample_size, (uint64_t)3 << 29);
	agent_options_fini(&next);
	agent_options_fini(&options);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		argv[10] = (char *)bad[i];
		log_capture_start();
		ck_assert_int_ne(agent_options_parse(11, argv, &options), NOPFS_OK);
		ck_assert_msg(log_captured("--max-sample-size"), "'%s': '%s'", bad[i],
		              log_capture_buffer);
		agent_options_fini(&options);
	}
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("agent_options");
	TCase *tc = tcase_create("step");
	SRunner *runner;
	int failed;

	tcase_add_test(tc, step_replaces_the_step_options_only);
	tcase_add_test(tc, step_errors_name_the_culprit);
	tcase_add_test(tc, step_start_epoch);
	tcase_add_test(tc, max_sample_size);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
