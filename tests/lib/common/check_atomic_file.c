/* Atomic file replacement: content, mode, no temporary left, failures. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/readall.h"

static char work[] = "/tmp/check_atomic_file.XXXXXX";
static char path[sizeof(work) + 16];

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(work));
	snprintf(path, sizeof(path), "%s/file", work);
}

/* Remove @path and the directory; fails if anything else was left there. */
static void teardown(void)
{
	unlink(path);
	ck_assert_int_eq(rmdir(work), 0);
	strcpy(work + strlen(work) - 6, "XXXXXX");
}

static char *contents(void)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	void *data = NULL;
	size_t length;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(nopfs_read_all(fd, 1 << 20, &data, &length), NOPFS_OK);
	close(fd);
	return data;
}

static mode_t mode_of(void)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return st.st_mode & 07777;
}

START_TEST(replaces_with_mode)
{
	char *text;

	ck_assert_int_eq(nopfs_atomic_write(path, 0640, "first", 5), NOPFS_OK);
	text = contents();
	ck_assert_str_eq(text, "first");
	free(text);
	ck_assert_uint_eq(mode_of(), 0640);
	ck_assert_int_eq(nopfs_atomic_write(path, 0604, "second\n", 7), NOPFS_OK);
	text = contents();
	ck_assert_str_eq(text, "second\n");
	free(text);
	ck_assert_uint_eq(mode_of(), 0604);
}
END_TEST

static int write_twice(int fd, void *arg)
{
	return dprintf(fd, "%s%s", (char *)arg, (char *)arg) < 0 ? -1 : 0;
}

static int refuse(int fd, void *arg)
{
	if (write(fd, "partial", 7) != 7)
		return -1;
	errno = ENOSPC;
	return -1;
}

START_TEST(writer_callback)
{
	char *text;

	ck_assert_int_eq(nopfs_atomic_write_with(path, 0600, write_twice, "ab"), NOPFS_OK);
	text = contents();
	ck_assert_str_eq(text, "abab");
	free(text);
}
END_TEST

START_TEST(failed_writer_keeps_the_old_file)
{
	char *text;

	ck_assert_int_eq(nopfs_atomic_write(path, 0600, "old", 3), NOPFS_OK);
	ck_assert_int_eq(nopfs_atomic_write_with(path, 0600, refuse, NULL), NOPFS_ERR_IO);
	ck_assert_int_eq(errno, ENOSPC);
	text = contents();
	ck_assert_str_eq(text, "old");
	free(text);
	/* teardown's rmdir fails if the temporary was left */
}
END_TEST

START_TEST(missing_directory)
{
	char missing[sizeof(path) + 16];

	snprintf(missing, sizeof(missing), "%s/no/file", work);
	ck_assert_int_eq(nopfs_atomic_write(missing, 0600, "x", 1), NOPFS_ERR_NOT_FOUND);
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

START_TEST(destination_is_a_directory)
{
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_ne(nopfs_atomic_write(path, 0600, "x", 1), NOPFS_OK);
	ck_assert_int_eq(errno, EISDIR);
	ck_assert_int_eq(rmdir(path), 0);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("atomic_file");
	TCase *tc = tcase_create("atomic_file");
	SRunner *runner;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, replaces_with_mode);
	tcase_add_test(tc, writer_callback);
	tcase_add_test(tc, failed_writer_keeps_the_old_file);
	tcase_add_test(tc, missing_directory);
	tcase_add_test(tc, destination_is_a_directory);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
