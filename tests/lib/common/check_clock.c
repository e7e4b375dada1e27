/* Clocks: units agree, deadlines land where asked, monotonic condition variables. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "common/clock.h"

START_TEST(units_agree)
{
	uint64_t ns = nopfs_clock_now_ns();
	int64_t ms = nopfs_clock_now_ms();
	double seconds = nopfs_clock_seconds();

	ck_assert_int_ge(ms, (int64_t)(ns / 1000000u));
	ck_assert_double_ge(seconds, (double)ms / 1e3 - 0.001);
	ck_assert_double_lt(seconds - (double)ns / 1e9, 1.0);
	ck_assert_int_gt(nopfs_clock_wall_ns(), INT64_C(1500000000) * 1000000000);
	ck_assert_double_lt(nopfs_clock_wall_seconds() - (double)nopfs_clock_wall_ns() / 1e9, 1.0);
}
END_TEST

START_TEST(monotonic_deadlines)
{
	struct timespec at = nopfs_clock_deadline_at_ns(UINT64_C(3500000001));
	uint64_t before = nopfs_clock_now_ns(), after;

	ck_assert_int_eq(at.tv_sec, 3);
	ck_assert_int_eq(at.tv_nsec, 500000001);
	at = nopfs_clock_deadline_after_ms(1500);
	after = nopfs_clock_now_ns();
	ck_assert_uint_ge((uint64_t)at.tv_sec * NOPFS_NS_PER_S + (uint64_t)at.tv_nsec,
	                  before + UINT64_C(1500000000));
	ck_assert_uint_le((uint64_t)at.tv_sec * NOPFS_NS_PER_S + (uint64_t)at.tv_nsec,
	                  after + UINT64_C(1500000000));
}
END_TEST

START_TEST(wall_deadlines)
{
	int64_t before = nopfs_clock_wall_ns();
	struct timespec at = nopfs_clock_wall_deadline_after(2.25);
	int64_t at_ns = (int64_t)at.tv_sec * NOPFS_NS_PER_S + at.tv_nsec;

	ck_assert_int_lt(at.tv_nsec, NOPFS_NS_PER_S);
	ck_assert_int_ge(at_ns, before + INT64_C(2250000000) - 1);
	ck_assert_int_lt(at_ns, before + INT64_C(2350000000));
	at = nopfs_clock_wall_deadline_after(-1);
	at_ns = (int64_t)at.tv_sec * NOPFS_NS_PER_S + at.tv_nsec;
	ck_assert_int_ge(at_ns, before);
	ck_assert_int_lt(at_ns, before + INT64_C(100000000));
}
END_TEST

START_TEST(condition_waits_on_the_monotonic_clock)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cond;
	struct timespec at;
	uint64_t start;

	ck_assert_int_eq(nopfs_clock_cond_init(&cond), 0);
	start = nopfs_clock_now_ns();
	at = nopfs_clock_deadline_after_ms(50);
	pthread_mutex_lock(&lock);
	while (pthread_cond_timedwait(&cond, &lock, &at) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&lock);
	/* a realtime condition variable would have returned at once (1970) */
	ck_assert_uint_ge(nopfs_clock_now_ns() - start, UINT64_C(50000000));
	pthread_cond_destroy(&cond);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("clock");
	TCase *tc = tcase_create("clock");
	SRunner *runner;
	int failed;

	tcase_add_test(tc, units_agree);
	tcase_add_test(tc, monotonic_deadlines);
	tcase_add_test(tc, wall_deadlines);
	tcase_add_test(tc, condition_waits_on_the_monotonic_clock);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
