/*
 * Opening what lies in a shared place: only a private directory of this
 * user's, only a regular file of this user's of the expected size; a
 * symbolic link is not followed and a FIFO never waited for. Private
 * directories made or refused, shared file systems named, job tokens.
 */
#include <check.h>
#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/private.h"
#include "common/token.h"

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

START_TEST(made_private_or_refused)
{
	char path[96];
	bool made;

	snprintf(path, sizeof(path), "%s/made", work);
	ck_assert_int_eq(nopfs_private_dir_make(path, &made), NOPFS_OK);
	ck_assert(made);
	ck_assert_int_eq(nopfs_private_dir_make(path, &made), NOPFS_OK); /* ours: taken as is */
	ck_assert(!made);
	ck_assert_int_eq(chmod(path, 0777), 0); /* planted open to all */
	ck_assert_int_eq(nopfs_private_dir_make(path, &made), NOPFS_ERR_PERMISSION);
	snprintf(path, sizeof(path), "%s/made-link", work);
	ck_assert_int_eq(symlink("made", path), 0);
	ck_assert_int_eq(nopfs_private_dir_make(path, &made), NOPFS_ERR_PERMISSION);
}
END_TEST

/* For another user (slurmstepd, the epilog): the uid given, not the process's. */
START_TEST(private_to_the_user_given)
{
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "%s/theirs", work);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	fd = nopfs_private_dir_open_for(path, geteuid());
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(nopfs_private_dir_open_for(path, geteuid() + 1), -1);
	ck_assert_int_eq(errno, EPERM);
	/* created for writing, never through a link, never a FIFO */
	fd = nopfs_private_file_open_for(AT_FDCWD, strcat(path, "/log"),
	                                 O_WRONLY | O_CREAT | O_APPEND, 0600, geteuid());
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ne(fcntl(fd, F_GETFL) & O_APPEND, 0);
	ck_assert_int_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	close(fd);
	ck_assert(nopfs_private_file_is(path, geteuid()));
	ck_assert(!nopfs_private_file_is(path, geteuid() + 1));
	snprintf(path, sizeof(path), "%s/theirs/link", work);
	ck_assert_int_eq(symlink("log", path), 0);
	ck_assert(!nopfs_private_file_is(path, geteuid()));
	ck_assert_int_eq(
	        nopfs_private_file_open_for(AT_FDCWD, path, O_WRONLY | O_CREAT, 0600, geteuid()),
	        -1);
	snprintf(path, sizeof(path), "%s/theirs/fifo", work);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(nopfs_private_file_open_for(AT_FDCWD, path, O_RDONLY, 0, geteuid()), -1);
	ck_assert_int_eq(errno, EPERM);
}
END_TEST

START_TEST(shared_file_systems_are_named)
{
	ck_assert_str_eq(nopfs_fs_shared_name(0x6969), "nfs");
	ck_assert_str_eq(nopfs_fs_shared_name(0x0bd00bd0), "lustre");
	ck_assert_str_eq(nopfs_fs_shared_name(0x47504653), "gpfs");
	ck_assert_ptr_null(nopfs_fs_shared_name(0xef53));     /* ext4 */
	ck_assert_ptr_null(nopfs_fs_shared_name(0x58465342)); /* xfs */
	ck_assert_ptr_null(nopfs_fs_shared_name(0x01021994)); /* tmpfs */
}
END_TEST

START_TEST(tokens_are_random_hex)
{
	char a[NOPFS_TOKEN_LENGTH + 1], b[NOPFS_TOKEN_LENGTH + 1];

	ck_assert_int_eq(nopfs_token_make(a), NOPFS_OK);
	ck_assert_int_eq(nopfs_token_make(b), NOPFS_OK);
	ck_assert(nopfs_token_is_valid(a));
	ck_assert_str_ne(a, b);
	ck_assert(!nopfs_token_is_valid("0123"));
	ck_assert(!nopfs_token_is_valid("0123456789abcdef0123456789abcdeX"));
	ck_assert(!nopfs_token_is_valid("../../../../../../../../../../etc"));
	ck_assert(!nopfs_token_is_valid(NULL));
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
	tcase_add_test(tc, made_private_or_refused);
	tcase_add_test(tc, private_to_the_user_given);
	tcase_add_test(tc, shared_file_systems_are_named);
	tcase_add_test(tc, tokens_are_random_hex);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
