/* mkdir -p: missing parents, directories already there, a file in the way. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/dirs.h"

START_TEST(makes_missing_parents_and_keeps_existing_ones)
{
	char work[] = "/tmp/check_dirs.XXXXXX", path[96];
	struct stat st;

	ck_assert_ptr_nonnull(mkdtemp(work));
	snprintf(path, sizeof(path), "%s/a/b/c", work);
	ck_assert_int_eq(nopfs_dir_make(path, 0700), NOPFS_OK);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 0777, 0700);
	ck_assert_int_eq(nopfs_dir_make(path, 0700), NOPFS_OK);
	snprintf(path, sizeof(path), "%s/a/b/", work);
	ck_assert_int_eq(nopfs_dir_make(path, 0700), NOPFS_OK);

	/* a file in the way */
	snprintf(path, sizeof(path), "%s/file", work);
	close(open(path, O_CREAT | O_WRONLY, 0600));
	ck_assert_int_eq(nopfs_dir_make(path, 0700), NOPFS_ERR_NOT_FOUND);
	ck_assert_int_eq(errno, ENOTDIR);
	snprintf(path, sizeof(path), "%s/file/below", work);
	ck_assert_int_eq(nopfs_dir_make(path, 0700), NOPFS_ERR_NOT_FOUND);
	ck_assert_int_eq(errno, ENOTDIR);

	snprintf(path, sizeof(path), "rm -r %s", work);
	ck_assert_int_eq(system(path), 0);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("dirs");
	TCase *tc = tcase_create("dirs");
	SRunner *runner;
	int failed;

	tcase_add_test(tc, makes_missing_parents_and_keeps_existing_ones);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
