/* Whole-buffer writes and exact reads through pipes: short transfers, end of file. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fdio.h"

START_TEST(write_then_read_exactly)
{
	char out[] = "sixteen bytes!!", in[sizeof(out)];
	int fds[2];

	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(nopfs_write_all(fds[1], out, sizeof(out)), NOPFS_OK);
	ck_assert_int_eq(nopfs_read_exact(fds[0], in, sizeof(in)), NOPFS_OK);
	ck_assert_str_eq(in, out);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

START_TEST(early_end_of_file)
{
	char in[8];
	int fds[2];

	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(nopfs_write_all(fds[1], "abc", 3), NOPFS_OK);
	close(fds[1]);
	errno = 0;
	ck_assert_int_eq(nopfs_read_exact(fds[0], in, sizeof(in)), NOPFS_ERR_IO);
	ck_assert_int_eq(errno, EIO);
	close(fds[0]);
}
END_TEST

START_TEST(write_to_a_closed_descriptor)
{
	int fds[2];

	ck_assert_int_eq(pipe(fds), 0);
	close(fds[0]);
	close(fds[1]);
	ck_assert_int_eq(nopfs_write_all(fds[1], "x", 1), NOPFS_ERR_IO);
	ck_assert_int_eq(errno, EBADF);
	ck_assert_int_eq(nopfs_write_all(fds[1], "", 0), NOPFS_OK);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("fdio");
	TCase *tc = tcase_create("fdio");
	SRunner *runner;
	int failed;

	tcase_add_test(tc, write_then_read_exactly);
	tcase_add_test(tc, early_end_of_file);
	tcase_add_test(tc, write_to_a_closed_descriptor);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
