/* The log: levels reach the sink, and a thread can hold its messages back. */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>

#include "log_capture.h"

START_TEST(messages_reach_the_sink)
{
	log_capture_start();
	nopfs_error("bad value '%s'", "x");
	nopfs_debug("detail %d", 7);
	ck_assert(log_captured("bad value 'x'\n"));
	ck_assert(log_captured("detail 7\n"));
}
END_TEST

START_TEST(held_messages_keep_the_first_error)
{
	log_capture_start();
	nopfs_log_hold();
	nopfs_info("not shown");
	nopfs_error("first %s", "error");
	nopfs_error("second error");
	ck_assert_str_eq(nopfs_log_release(), "first error");
	ck_assert_str_eq(log_capture_buffer, "");
	nopfs_error("after");
	ck_assert(log_captured("after\n"));
	nopfs_log_hold();
	ck_assert_str_eq(nopfs_log_release(), "");
}
END_TEST

static void *log_elsewhere(void *unused)
{
	nopfs_error("from another thread");
	return NULL;
}

START_TEST(a_hold_is_the_calling_thread_s)
{
	pthread_t thread;

	log_capture_start();
	nopfs_log_hold();
	ck_assert_int_eq(pthread_create(&thread, NULL, log_elsewhere, NULL), 0);
	ck_assert_int_eq(pthread_join(thread, NULL), 0);
	ck_assert_str_eq(nopfs_log_release(), "");
	ck_assert(log_captured("from another thread"));
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("log");
	TCase *tc = tcase_create("log");
	SRunner *runner;
	int failed;

	tcase_add_test(tc, messages_reach_the_sink);
	tcase_add_test(tc, held_messages_keep_the_first_error);
	tcase_add_test(tc, a_hold_is_the_calling_thread_s);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
