/*
 * Opening what lies in a shared place: only a private directory of this
 * user's, only a regular file of this user's of the expected size; a
 * symbolic link is not followed and a FIFO never waited for.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/private.h"

static char work[] = "/tmp/check_private.XXXXXX";

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(work));
}

static void teardown(void)
{
	char command[64];

	snprintf(command, sizeof(command), "rm -rf %s", work);
	ck_assert_int_eq(system(command), 0);
	snprintf(work, sizeof(work), "/tmp/check_private.XXXXXX");
}

static nopfs_status open_dir(const char *path)
{
	const char *why;
	nopfs_status status;
	int fd = -1;

	status = nopfs_private_dir_open(path, &fd, NULL, &why);
	if (status == NOPFS_OK)
		close(fd);
	return status;
}

START_TEST(only_a_private_directory_of_ours)
{
	char path[96];

	snprintf(path, sizeof(path), "%s/dir", work);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_eq(open_dir(path), NOPFS_OK);
	ck_assert_int_eq(chmod(path, 0750), 0);
	ck_assert_int_eq(open_dir(path), NOPFS_ERR_PERMISSION);
	ck_assert_int_eq(chmod(path, 0701), 0);
	ck_assert_int_eq(open_dir(path), NOPFS_ERR_PERMISSION);
	ck_assert_int_eq(chmod(path, 0700), 0);
	if (geteuid() == 0) {
		ck_assert_int_eq(chown(path, 65534, 65534), 0);
		ck_assert_int_eq(open_dir(path), NOPFS_ERR_PERMISSION);
	}
	snprintf(path, sizeof(path), "%s/link", work);
	ck_assert_int_eq(symlink("dir", path), 0);
	ck_assert_int_eq(open_dir(path), NOPFS_ERR_PERMISSION);
	snprintf(path, sizeof(path), "%s/missing", work);
	ck_assert_int_eq(open_dir(path), NOPFS_ERR_NOT_FOUND);
}
END_TEST

/* Open @name in @work with @size expected. */
static nopfs_status open_file(const char *name, int64_t size)
{
	const char *why;
	nopfs_status status;
	int dir = open(work, O_RDONLY | O_DIRECTORY);
	int fd = -1;

	ck_assert_int_ge(dir, 0);
	status = nopfs_private_file_openat(dir, name, 0, size, &fd, &why);
	if (status == NOPFS_OK) {
		ck_assert_int_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
		ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
		close(fd);
	}
	close(dir);
	return status;
}

START_TEST(only_a_regular_file_of_ours)
{
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "%s/file", work);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	ck_assert_int_eq(write(fd, "12345", 5), 5);
	close(fd);
	ck_assert_int_eq(open_file("file", 5), NOPFS_OK);
	ck_assert_int_eq(open_file("file", -1), NOPFS_OK);
	ck_assert_int_eq(open_file("file", 4), NOPFS_ERR_PERMISSION);
	ck_assert_int_eq(symlink("file", strcat(path, "-link")), 0);
	ck_assert_int_eq(open_file("file-link", 5), NOPFS_ERR_PERMISSION);
	snprintf(path, sizeof(path), "%s/fifo", work);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(open_file("fifo", -1), NOPFS_ERR_PERMISSION); /* without blocking */
	ck_assert_int_eq(open_file("dir", -1), NOPFS_ERR_NOT_FOUND);
	if (geteuid() == 0) {
		snprintf(path, sizeof(path), "%s/file", work);
		ck_assert_int_eq(chown(path, 65534, 65534), 0);
		ck_assert_int_eq(open_file("file", 5), NOPFS_ERR_PERMISSION);
	}
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("private");
	TCase *tc = tcase_create("private");
	SRunner *runner;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, only_a_private_directory_of_ours);
	tcase_add_test(tc, only_a_regular_file_of_ours);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
