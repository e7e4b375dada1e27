/* The NoPFS performance model: curves, fetch cases, source choice. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "log_capture.h"
#include "plan/model.h"

#define MB 1e6

static int close_to(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fmax(1, fabs(b));
}

START_TEST(curve_interpolates_and_clamps)
{
	struct nopfs_curve c = { 0 };

	ck_assert(close_to(nopfs_curve_eval(&c, 3), 0));
	ck_assert_int_eq(nopfs_curve_set(&c, 4, 1540), NOPFS_OK);
	ck_assert_int_eq(nopfs_curve_set(&c, 1, 330), NOPFS_OK);
	ck_assert_int_eq(nopfs_curve_set(&c, 2, 730), NOPFS_OK);
	ck_assert_int_eq(nopfs_curve_set(&c, 8, 2870), NOPFS_OK);
	ck_assert_uint_eq(c.points, 4);
	ck_assert(close_to(nopfs_curve_eval(&c, 1), 330));
	ck_assert(close_to(nopfs_curve_eval(&c, 3), (730 + 1540) / 2.0));
	ck_assert(close_to(nopfs_curve_eval(&c, 6), (1540 + 2870) / 2.0));
	ck_assert(close_to(nopfs_curve_eval(&c, 0.5), 330));     /* clamped below */
	ck_assert(close_to(nopfs_curve_eval(&c, 100), 2870));    /* clamped above */
	ck_assert_int_eq(nopfs_curve_set(&c, 2, 700), NOPFS_OK); /* overwrite */
	ck_assert_uint_eq(c.points, 4);
	ck_assert(close_to(nopfs_curve_eval(&c, 2), 700));
}
END_TEST

START_TEST(curve_rejects_bad_points)
{
	struct nopfs_curve c = { 0 };

	log_capture_start();
	ck_assert_int_eq(nopfs_curve_set(&c, 0, 1), NOPFS_ERR_INVALID);
	ck_assert_int_eq(nopfs_curve_set(&c, 1, -1), NOPFS_ERR_INVALID);
	ck_assert_int_eq(nopfs_curve_set(&c, NAN, 1), NOPFS_ERR_INVALID);
	for (int i = 1; i <= NOPFS_CURVE_POINTS; i++)
		ck_assert_int_eq(nopfs_curve_set(&c, i, i), NOPFS_OK);
	ck_assert_int_eq(nopfs_curve_set(&c, 100, 1), NOPFS_ERR_RANGE);
	ck_assert(log_captured("already has"));
	nopfs_log_set_sink(NULL, NULL, NOPFS_LOG_INFO);
}
END_TEST

START_TEST(curve_knee)
{
	struct nopfs_curve c = { 0 };

	nopfs_curve_set(&c, 1, 28000);
	nopfs_curve_set(&c, 2, 50450);
	nopfs_curve_set(&c, 4, 85800);
	nopfs_curve_set(&c, 8, 86000);
	ck_assert(close_to(nopfs_curve_knee(&c, 0.9), 4));
}
END_TEST

/* The paper's simulator setup (section 6.1), rates in bytes/s. */
static void lassen_model(struct nopfs_model *m)
{
	*m = (struct nopfs_model){ .network = 24000 * MB, .preprocess = 200 * MB, .tiers = 2 };
	nopfs_curve_set(&m->pfs, 1, 330 * MB);
	nopfs_curve_set(&m->pfs, 2, 730 * MB);
	nopfs_curve_set(&m->pfs, 4, 1540 * MB);
	nopfs_curve_set(&m->pfs, 8, 2870 * MB);
	m->staging.threads = 8;
	nopfs_curve_set(&m->staging.read, 8, 111000 * MB);
	nopfs_curve_set(&m->staging.write, 8, 111000 * MB);
	m->tier[0].threads = 4;
	nopfs_curve_set(&m->tier[0].read, 4, 85000 * MB);
	m->tier[1].threads = 2;
	nopfs_curve_set(&m->tier[1].read, 2, 4000 * MB);
}

START_TEST(fetch_cases)
{
	struct nopfs_model m;
	uint64_t s = 100000000; /* 100 MB */

	lassen_model(&m);
	/* PFS with 4 readers: t(4)/4 = 385 MB/s each. */
	ck_assert(close_to(nopfs_model_fetch_pfs(&m, s, 4), 100 / 385.0));
	/* Local RAM: 85 GB/s over 4 threads. */
	ck_assert(close_to(nopfs_model_fetch_local(&m, s, 0), 100 / (85000 / 4.0)));
	/* Peer SSD: min(b_c, 4 GB/s / 2). */
	ck_assert(close_to(nopfs_model_fetch_peer(&m, s, 1), 100 / 2000.0));
	/* Peer RAM is capped by the network only above b_c. */
	m.network = 1000 * MB;
	ck_assert(close_to(nopfs_model_fetch_peer(&m, s, 0), 100 / 1000.0));
	/* A per-client PFS cap. */
	m.pfs_client_limit = 100 * MB;
	ck_assert(close_to(nopfs_model_fetch_pfs(&m, s, 1), 1.0));
	/* Write: preprocessing at 200 MB/s dominates 111 GB/s / 8. */
	ck_assert(close_to(nopfs_model_write(&m, s), 0.5));
	ck_assert(isinf(nopfs_model_fetch_local(&m, s, 3)));
}
END_TEST

START_TEST(store_into_tier)
{
	struct nopfs_model m;
	uint64_t s = 100000000; /* 100 MB */

	lassen_model(&m);
	/* No write curve: writes are not modeled. */
	ck_assert(nopfs_model_store(&m, s, 0) == 0);
	/* SSD written at 2 GB/s by 2 threads: 1 GB/s each. */
	nopfs_curve_set(&m.tier[1].write, 2, 2000 * MB);
	ck_assert(close_to(nopfs_model_store(&m, s, 1), 0.1));
	ck_assert(isinf(nopfs_model_store(&m, s, 2)));
}
END_TEST

START_TEST(best_source_prefers_fastest_then_local)
{
	struct nopfs_model m;
	double seconds;

	lassen_model(&m);
	ck_assert_int_eq(nopfs_model_best_source(&m, 1000, -1, -1, 4, &seconds), NOPFS_SOURCE_PFS);
	ck_assert_int_eq(nopfs_model_best_source(&m, 1000, -1, 1, 4, &seconds), NOPFS_SOURCE_PEER);
	ck_assert_int_eq(nopfs_model_best_source(&m, 1000, 1, 0, 4, &seconds), NOPFS_SOURCE_PEER);
	ck_assert_int_eq(nopfs_model_best_source(&m, 1000, 0, 0, 4, &seconds), NOPFS_SOURCE_LOCAL);
	/* Equal rates: local wins the tie. */
	m.network = 2000 * MB;
	ck_assert_int_eq(nopfs_model_best_source(&m, 1000, 1, 1, 4, &seconds), NOPFS_SOURCE_LOCAL);
	ck_assert(close_to(seconds, 1000 / (2000 * MB)));
}
END_TEST

START_TEST(tiers_sort_by_speed)
{
	struct nopfs_model m = { .tiers = 3 };
	unsigned int order[3];

	m.tier[0].threads = 2;
	nopfs_curve_set(&m.tier[0].read, 2, 4000 * MB);
	m.tier[0].capacity = 900;
	m.tier[1].threads = 4;
	nopfs_curve_set(&m.tier[1].read, 4, 85000 * MB);
	m.tier[1].capacity = 120;
	m.tier[2].threads = 1;
	nopfs_curve_set(&m.tier[2].read, 1, 2000 * MB);
	m.tier[2].capacity = 50;
	nopfs_model_sort_tiers(&m, order);
	ck_assert_uint_eq(order[0], 1);
	ck_assert_uint_eq(order[1], 0);
	ck_assert_uint_eq(order[2], 2);
	ck_assert_uint_eq(m.tier[0].capacity, 120);
	ck_assert_uint_eq(m.tier[2].capacity, 50);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("model");
	TCase *tc = tcase_create("model");
	SRunner *runner;
	int failed;

	tcase_add_test(tc, curve_interpolates_and_clamps);
	tcase_add_test(tc, curve_rejects_bad_points);
	tcase_add_test(tc, curve_knee);
	tcase_add_test(tc, fetch_cases);
	tcase_add_test(tc, store_into_tier);
	tcase_add_test(tc, best_source_prefers_fastest_then_local);
	tcase_add_test(tc, tiers_sort_by_speed);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
