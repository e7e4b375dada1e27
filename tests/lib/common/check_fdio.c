/*
 * Whole-buffer writes and exact reads through pipes (short transfers, end of
 * file) and at offsets of a file.
 */
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

START_TEST(positioned_writes_and_reads)
{
	char name[] = "/tmp/check_fdio.XXXXXX", in[8];
	int fd = mkstemp(name);

	ck_assert_int_ge(fd, 0);
	unlink(name);
	ck_assert_int_eq(nopfs_pwrite_all(fd, "later", 5, 100), NOPFS_OK);
	ck_assert_int_eq(nopfs_pwrite_all(fd, "first", 5, 0), NOPFS_OK);
	/* the file position never moved */
	ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 0);
	ck_assert_int_eq(nopfs_pread_exact(fd, in, 5, 100), NOPFS_OK);
	ck_assert_int_eq(memcmp(in, "later", 5), 0);
	ck_assert_int_eq(nopfs_pread_exact(fd, in, 5, 0), NOPFS_OK);
	ck_assert_int_eq(memcmp(in, "first", 5), 0);
	/* the hole between reads as zeros; past the end is an early end of file */
	ck_assert_int_eq(nopfs_pread_exact(fd, in, 2, 50), NOPFS_OK);
	ck_assert_int_eq(in[0] | in[1], 0);
	errno = 0;
	ck_assert_int_eq(nopfs_pread_exact(fd, in, 8, 101), NOPFS_ERR_IO);
	ck_assert_int_eq(errno, EIO);
	close(fd);
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
	tcase_add_test(tc, positioned_writes_and_reads);
	tcase_add_test(tc, write_to_a_closed_descriptor);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
