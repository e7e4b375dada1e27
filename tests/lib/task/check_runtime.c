/* Staged names, paths under the dataset root, the task's environment. */
#include <check.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "task/runtime.h"
#include "task/wire.h"

START_TEST(path_names_round_trip)
{
	static const char *const paths[] = {
		"a.jpg",
		"class/1.jpg",
		"100%/x%2F.png",
		"%",
		"/",
		"a//b/",
		"%25%2F",
		"é/ü.bin",
		"p",
		"i12",
		"index",
		".",
		"..",
		" spaces and\ttabs ",
	};
	char name[256];
	char back[PATH_MAX];
	uint64_t index = 77;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		uint32_t rank = 99;

		ck_assert(nopfs_stage_name_for_path(7, paths[i], name, sizeof(name)));
		ck_assert_int_eq(strncmp(name, "p7.", 3), 0);
		ck_assert_ptr_null(strchr(name, '/'));
		ck_assert_int_eq(nopfs_stage_name_parse(name, &rank, &index, back, sizeof(back)),
		                 'p');
		ck_assert_str_eq(back, paths[i]);
		ck_assert_uint_eq(rank, 7);
		ck_assert_uint_eq(index, 77); /* untouched */
	}
	ck_assert(nopfs_stage_name_for_path(0, "a/b%c", name, sizeof(name)));
	ck_assert_str_eq(name, "p0.a%2Fb%25c");
	ck_assert(nopfs_stage_name_for_path(4294967295u, "a", name, sizeof(name)));
	ck_assert_str_eq(name, "p4294967295.a");
	ck_assert(!nopfs_stage_name_for_path(0, "", name, sizeof(name)));
	ck_assert(!nopfs_stage_name_for_path(0, NULL, name, sizeof(name)));
}
END_TEST

START_TEST(path_names_longer_than_name_max)
{
	char path[600];
	char name[600];

	/* "p0." + 252 = 255: the longest name. */
	memset(path, 'x', 252);
	path[252] = '\0';
	ck_assert(nopfs_stage_name_for_path(0, path, name, sizeof(name)));
	ck_assert_uint_eq(strlen(name), 255);
	path[252] = 'x';
	path[253] = '\0';
	ck_assert(!nopfs_stage_name_for_path(0, path, name, sizeof(name)));
	/* A longer rank leaves less room for the path. */
	path[250] = '\0';
	ck_assert(nopfs_stage_name_for_path(10, path, name, sizeof(name)));
	ck_assert(!nopfs_stage_name_for_path(1000, path, name, sizeof(name)));
	/* Escapes count three: "p0." + 83 x 3 + 3 = 255; with 84 and 2 more, 257. */
	memset(path, '/', 83);
	strcpy(path + 83, "abc");
	ck_assert(nopfs_stage_name_for_path(0, path, name, sizeof(name)));
	memset(path, '%', 84);
	strcpy(path + 84, "ab");
	ck_assert(!nopfs_stage_name_for_path(0, path, name, sizeof(name)));
	memset(path, 'y', 300);
	path[300] = '\0';
	ck_assert(!nopfs_stage_name_for_path(0, path, name, sizeof(name)));
	/* A buffer too small, and the output left alone. */
	strcpy(name, "untouched");
	ck_assert(!nopfs_stage_name_for_path(0, "abcdef", name, 9));
	ck_assert_str_eq(name, "untouched");
	ck_assert(nopfs_stage_name_for_path(0, "abcdef", name, 10));
}
END_TEST

START_TEST(index_names)
{
	char name[48];
	uint64_t index = 5;
	uint32_t rank = 9;
	char path[16] = "untouched";

	nopfs_stage_name_for_index(0, 0, name, sizeof(name));
	ck_assert_str_eq(name, "i0.0");
	ck_assert_int_eq(nopfs_stage_name_parse(name, &rank, &index, path, sizeof(path)), 'i');
	ck_assert_uint_eq(index, 0);
	ck_assert_uint_eq(rank, 0);
	ck_assert_str_eq(path, "untouched");
	nopfs_stage_name_for_index(4294967295u, UINT64_MAX, name, sizeof(name));
	ck_assert_str_eq(name, "i4294967295.18446744073709551615");
	ck_assert_int_eq(nopfs_stage_name_parse(name, &rank, &index, NULL, 0), 'i');
	ck_assert_uint_eq(index, UINT64_MAX);
	ck_assert_uint_eq(rank, 4294967295u);
	nopfs_stage_name_for_index(3, 1281166, name, sizeof(name));
	ck_assert_int_eq(nopfs_stage_name_parse(name, &rank, &index, NULL, 0), 'i');
	ck_assert_uint_eq(index, 1281166);
	ck_assert_uint_eq(rank, 3);
}
END_TEST

START_TEST(foreign_names_are_not_parsed)
{
	static const char *const names[] = {
		"",
		"i",
		"i0",
		"i3",
		"i01.1",
		"i1.01",
		"i-1.1",
		"i1.-1",
		"i1.+1",
		"i1. 1",
		"i1.1x",
		"i1.18446744073709551616",
		"i4294967296.1",
		"index",
		"x1.12",
		".tmp-i3",
		"p",
		"p0",
		"p0.",
		"p.a",
		"p0.%",
		"p0.%2",
		"p0.%41",
		"p0.%2f",
		"p0.a%zz",
		"I3.1",
		"P3.a",
		"ix.1",
		"p1x.a",
	};
	uint64_t index = 5;
	uint32_t rank = 9;
	char path[PATH_MAX] = "untouched";

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		ck_assert_msg(nopfs_stage_name_parse(names[i], &rank, &index, path, sizeof(path)) ==
		                      0,
		              "'%s' parsed", names[i]);
		ck_assert_uint_eq(index, 5);
		ck_assert_uint_eq(rank, 9);
		ck_assert_str_eq(path, "untouched");
	}
	ck_assert_int_eq(nopfs_stage_name_parse(NULL, &rank, &index, path, sizeof(path)), 0);
	/* A path that does not fit the caller's buffer. */
	ck_assert_int_eq(nopfs_stage_name_parse("p0.abcdef", &rank, &index, path, 6), 0);
	ck_assert_int_eq(nopfs_stage_name_parse("p0.abcdef", &rank, &index, path, 7), 'p');
	ck_assert_str_eq(path, "abcdef");
}
END_TEST

struct under_case {
	const char *root;
	const char *path;
	const char *relative; /* NULL: not under */
};

START_TEST(paths_under_root)
{
	static const struct under_case cases[] = {
		{ "/data/train", "/data/train/cat/1.jpg", "cat/1.jpg" },
		{ "/data/train/", "/data/train/cat/1.jpg", "cat/1.jpg" },
		{ "/data/train//", "/data//train/./cat//1.jpg", "cat/1.jpg" },
		{ "/data/./train", "/data/train/x", "x" },
		{ "//data/train", "/data/train/x", "x" },
		{ "/data/train", "/data/train/../train/x", NULL },
		{ "/data/train", "/data/train/a/../b", NULL }, /* a may be a link */
		{ "/data/../data/train", "/data/../data/train/x", "x" },
		{ "/data/../data/train", "/data/../data/train/a/../x", NULL },
		{ "/data/train/", "/data/train/x/..y", "x/..y" },
		{ "/data/../data/train", "/data/train/x", "x" },
		{ "/", "/etc/passwd", "etc/passwd" },
		{ "/", "/../etc/passwd", NULL },
		{ "/data/train", "/data/train/a%/b", "a%/b" },
		{ "/data/train", "/data/training/x", NULL },
		{ "/data/train", "/data/trai", NULL },
		{ "/data/train", "/data/train", NULL },
		{ "/data/train", "/data/train/", NULL },
		{ "/data/train", "/data/train/.", NULL },
		{ "/data/train", "/data/train/a/", NULL },
		{ "/data/train", "/data/train/a/.", NULL },
		{ "/data/train", "/data/train/a/..", NULL },
		{ "/data/train", "/data/train/..", NULL },
		{ "/data/train", "/data/train/../x", NULL },
		{ "/data/train", "/data/train/a/../../x", NULL },
		{ "/data/train", "/data/train/../../data/train/x", NULL },
		{ "/data/train", "/other/x", NULL },
		{ "/data/train", "data/train/x", NULL },
		{ "data/train", "/data/train/x", NULL },
		{ "data", "data/x", "x" },
		{ "./data", "data/./x", "x" },
		{ "../data", "../data/x", "x" },
		{ "data", "../data/x", NULL },
		{ ".", "x", "x" },
		{ ".", "../x", NULL },
		{ ".", "a/../../x", NULL },
		{ "", "/x", NULL },
		{ "/data", "", NULL },
	};
	char relative[PATH_MAX];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool under;

		strcpy(relative, "untouched");
		under = nopfs_path_under_root(cases[i].root, cases[i].path, relative,
		                              sizeof(relative));
		ck_assert_msg(under == (cases[i].relative != NULL), "'%s' under '%s': %d",
		              cases[i].path, cases[i].root, under);
		ck_assert_str_eq(relative, cases[i].relative ? cases[i].relative : "untouched");
	}
	/* A relative path that does not fit. */
	ck_assert(!nopfs_path_under_root("/d", "/d/abcdef", relative, 6));
	ck_assert(nopfs_path_under_root("/d", "/d/abcdef", relative, 7));
	ck_assert(!nopfs_path_under_root(NULL, "/d/x", relative, sizeof(relative)));
	ck_assert(!nopfs_path_under_root("/d", NULL, relative, sizeof(relative)));
}
END_TEST

START_TEST(overlong_paths)
{
	char *path = malloc(3 * PATH_MAX);
	char relative[PATH_MAX];

	strcpy(path, "/d/");
	memset(path + 3, 'a', 2 * PATH_MAX);
	path[2 * PATH_MAX] = '\0';
	ck_assert(!nopfs_path_under_root("/d", path, relative, sizeof(relative)));
	/* Long in text, short once normalized. */
	path[3] = '\0';
	for (int i = 0; i < PATH_MAX / 2; i++)
		strcat(path, "./");
	strcat(path, "x");
	ck_assert(nopfs_path_under_root("/d", path, relative, sizeof(relative)));
	ck_assert_str_eq(relative, "x");
	free(path);
}
END_TEST

START_TEST(environment)
{
	unsetenv("NOPFS_RANK");
	unsetenv("RANK");
	unsetenv("SLURM_PROCID");
	ck_assert_int_eq(nopfs_env_rank(), -1);
	setenv("SLURM_PROCID", "7", 1);
	ck_assert_int_eq(nopfs_env_rank(), 7);
	setenv("RANK", "3", 1);
	ck_assert_int_eq(nopfs_env_rank(), 3);
	setenv("NOPFS_RANK", "12", 1);
	ck_assert_int_eq(nopfs_env_rank(), 12);
	setenv("NOPFS_RANK", "12x", 1);
	ck_assert_int_eq(nopfs_env_rank(), -1);
	setenv("NOPFS_RANK", "-2", 1);
	ck_assert_int_eq(nopfs_env_rank(), -1);
	setenv("NOPFS_RANK", "99999999999", 1);
	ck_assert_int_eq(nopfs_env_rank(), -1);
	unsetenv("NOPFS_RANK");
	unsetenv("RANK");
	unsetenv("SLURM_PROCID");

	/* the plan generation the step was served under, from the plugin */
	unsetenv("NOPFS_PLAN");
	ck_assert_uint_eq(nopfs_env_plan(), NOPFS_WIRE_NO_PLAN);
	setenv("NOPFS_PLAN", "0", 1);
	ck_assert_uint_eq(nopfs_env_plan(), 0);
	setenv("NOPFS_PLAN", "4294967294", 1);
	ck_assert_uint_eq(nopfs_env_plan(), 4294967294u);
	setenv("NOPFS_PLAN", "4294967295", 1);
	ck_assert_uint_eq(nopfs_env_plan(), NOPFS_WIRE_NO_PLAN);
	setenv("NOPFS_PLAN", "3 ", 1);
	ck_assert_uint_eq(nopfs_env_plan(), NOPFS_WIRE_NO_PLAN);
	setenv("NOPFS_PLAN", "-1", 1);
	ck_assert_uint_eq(nopfs_env_plan(), NOPFS_WIRE_NO_PLAN);
	unsetenv("NOPFS_PLAN");

	bool invalid = true;

	unsetenv("NOPFS_TIMEOUT_MS");
	ck_assert_int_eq(nopfs_env_timeout_ms(&invalid), NOPFS_DEFAULT_TIMEOUT_MS);
	ck_assert(!invalid);
	setenv("NOPFS_TIMEOUT_MS", "250", 1);
	ck_assert_int_eq(nopfs_env_timeout_ms(&invalid), 250);
	ck_assert(!invalid);
	setenv("NOPFS_TIMEOUT_MS", "0", 1);
	ck_assert_int_eq(nopfs_env_timeout_ms(&invalid), NOPFS_DEFAULT_TIMEOUT_MS);
	ck_assert(invalid);
	setenv("NOPFS_TIMEOUT_MS", "1s", 1);
	ck_assert_int_eq(nopfs_env_timeout_ms(NULL), NOPFS_DEFAULT_TIMEOUT_MS);
	unsetenv("NOPFS_TIMEOUT_MS");
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("runtime");
	TCase *tc = tcase_create("runtime");
	SRunner *runner;
	int failed;

	tcase_add_test(tc, path_names_round_trip);
	tcase_add_test(tc, path_names_longer_than_name_max);
	tcase_add_test(tc, index_names);
	tcase_add_test(tc, foreign_names_are_not_parsed);
	tcase_add_test(tc, paths_under_root);
	tcase_add_test(tc, overlong_paths);
	tcase_add_test(tc, environment);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
