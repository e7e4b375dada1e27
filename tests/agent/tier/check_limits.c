/*
 * What bounds RAM tiers: the job's memory limit read from fake cgroup trees
 * (v2 and v1, limits on ancestors, "max", none, unreadable), and the free
 * room of a file system.
 */
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tier/limits.h"

static char root[] = "/tmp/check_limits.XXXXXX";
static char proc[PATH_MAX];

/* Write @text to @relative under the root, making its folders. */
static void put(const char *relative, const char *text)
{
	char path[PATH_MAX], *slash;
	FILE *file;

	snprintf(path, sizeof(path), "%s/%s", root, relative);
	for (slash = strchr(path + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0700);
		*slash = '/';
	}
	file = fopen(path, "w");
	ck_assert_ptr_nonnull(file);
	fputs(text, file);
	fclose(file);
}

static uint64_t limit(const char *cgroup_file, char *why, size_t size)
{
	char cgroups[PATH_MAX];

	snprintf(cgroups, sizeof(cgroups), "%s/sys", root);
	put("proc/self/cgroup", cgroup_file);
	return tier_memory_limit(proc, cgroups, 1ull << 40, why, size);
}

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(proc, sizeof(proc), "%s/proc/self/cgroup", root);
}

static void teardown(void)
{
	char command[PATH_MAX + 16];

	snprintf(command, sizeof(command), "rm -rf %s", root);
	ck_assert_int_eq(system(command), 0);
	strcpy(root + strlen(root) - 6, "XXXXXX");
}

START_TEST(v2_the_smallest_ancestor)
{
	char why[PATH_MAX + 32];

	put("sys/slurm/memory.max", "max\n");
	put("sys/slurm/job_7/memory.max", "34359738368\n");
	put("sys/slurm/job_7/step_0/memory.max", "68719476736\n");
	put("sys/slurm/job_7/step_0/task_1/memory.max", "max\n");
	ck_assert_uint_eq(limit("0::/slurm/job_7/step_0/task_1\n", why, sizeof(why)),
	                  34359738368ull);
	ck_assert_ptr_nonnull(strstr(why, "/slurm/job_7/memory.max"));
}
END_TEST

START_TEST(v1_memory_hierarchy)
{
	char why[PATH_MAX + 32];

	put("sys/memory/slurm/uid_1/job_9/memory.limit_in_bytes", "1073741824\n");
	ck_assert_uint_eq(limit("12:pids:/slurm/uid_1/job_9\n"
	                        "4:memory:/slurm/uid_1/job_9/step_batch\n"
	                        "1:name=systemd:/x\n",
	                        why, sizeof(why)),
	                  1073741824ull);
	ck_assert_ptr_nonnull(strstr(why, "memory.limit_in_bytes"));
}
END_TEST

START_TEST(no_limit_is_physical_memory)
{
	char why[PATH_MAX + 32];

	/* "max", a missing file, garbage, the root's own file: none is a limit */
	put("sys/memory.max", "4096\n");
	put("sys/a/memory.max", "max\n");
	put("sys/a/b/memory.max", "12 MB\n");
	ck_assert_uint_eq(limit("0::/a/b/c\n", why, sizeof(why)), 1ull << 40);
	ck_assert_str_eq(why, "physical memory");
	ck_assert_uint_eq(limit("garbage without colons\n", why, sizeof(why)), 1ull << 40);
	ck_assert_uint_eq(tier_memory_limit("/nonexistent/cgroup", "/sys/fs/cgroup", 5, NULL, 0),
	                  5);
}
END_TEST

START_TEST(free_bytes)
{
	ck_assert_uint_gt(tier_free_bytes(root), 0);
	ck_assert_uint_lt(tier_free_bytes(root), UINT64_MAX);
	ck_assert_uint_eq(tier_free_bytes("/nonexistent/dir"), UINT64_MAX);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("limits");
	TCase *tc = tcase_create("tier");
	SRunner *runner;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, v2_the_smallest_ancestor);
	tcase_add_test(tc, v1_memory_hierarchy);
	tcase_add_test(tc, no_limit_is_physical_memory);
	tcase_add_test(tc, free_bytes);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
