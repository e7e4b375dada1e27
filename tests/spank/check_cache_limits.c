/*
 * The kept caches' limits (spank/cache_limits.c) on a CACHE_BASE of the
 * test's own: the user's directory is this process's uid ("0" as root),
 * last uses are set with utimensat. Caches not used for longer than the
 * maximum age go, then the least recently used down to the limit; one a job
 * holds (flock) never goes; links are removed as links, never followed; a
 * killed agent's new data goes for its job only. And the checks of the base
 * and of a user's directory that the prolog makes.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_limits.h"

#define KEY_A "00000000000000aa"
#define KEY_B "00000000000000bb"
#define KEY_C "00000000000000cc"
#define KEY_D "00000000000000dd"
#define DAY   86400

static char work[] = "/tmp/check_cache_limits.XXXXXX";
static char base[64], outside[64], user[16];
static int base_fd = -1;
static time_t now;

/* What the limits removed, in order. */
static struct cache_removal removals[16];
static unsigned int removal_count;

static void record(const struct cache_removal *removal, void *arg)
{
	ck_assert_ptr_eq(arg, &removal_count);
	ck_assert_uint_lt(removal_count, 16);
	removals[removal_count++] = *removal;
}

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(work));
	snprintf(base, sizeof(base), "%s/base", work);
	snprintf(outside, sizeof(outside), "%s/outside", work);
	snprintf(user, sizeof(user), "%u", geteuid());
	ck_assert_int_eq(mkdir(base, 0755), 0);
	ck_assert_int_eq(mkdir(outside, 0755), 0);
	base_fd = open(base, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(base_fd, 0);
	ck_assert_int_eq(mkdirat(base_fd, user, 0700), 0);
	now = time(NULL);
	removal_count = 0;
}

static void teardown(void)
{
	char command[96];

	close(base_fd);
	snprintf(command, sizeof(command), "rm -rf %s", work);
	ck_assert_int_eq(system(command), 0);
	snprintf(work, sizeof(work), "/tmp/check_cache_limits.XXXXXX");
}

/* @path relative to the user's directory, as a full path. */
static const char *at(const char *path)
{
	static char full[4][256];
	static int next;
	char *out = full[next++ % 4];

	snprintf(out, sizeof(full[0]), "%s/%s/%s", base, user, path);
	return out;
}

/* A file of @size bytes (written, so that they take blocks); what it takes. */
static uint64_t make_file(const char *path, size_t size)
{
	static char zeros[65536];
	struct stat st;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);

	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	for (size_t done = 0; done < size;) {
		size_t part = size - done < sizeof(zeros) ? size - done : sizeof(zeros);

		ck_assert_int_eq(write(fd, zeros, part), (ssize_t)part);
		done += part;
	}
	ck_assert_int_eq(fsync(fd), 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	close(fd);
	return (uint64_t)st.st_blocks * 512;
}

/* Set @path's mtime to @when (a link's own, not its target's). */
static void set_mtime(const char *path, time_t when)
{
	struct timespec times[2] = { { .tv_sec = when }, { .tv_sec = when } };

	ck_assert_int_eq(utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW), 0);
}

/*
 * Kept cache @key of the user, last used @idle seconds ago: "data" of @size
 * bytes and, when @committed, a manifest of that mtime (else the directory
 * has it). What it takes.
 */
static uint64_t make_cache(const char *key, size_t size, time_t idle, bool committed)
{
	char path[256];
	uint64_t bytes;

	ck_assert_int_eq(mkdir(at(key), 0700), 0);
	snprintf(path, sizeof(path), "%s/data", at(key));
	bytes = make_file(path, size);
	if (committed) {
		snprintf(path, sizeof(path), "%s/" CACHE_MANIFEST, at(key));
		bytes += make_file(path, 100);
		set_mtime(path, now - idle);
	} else {
		set_mtime(at(key), now - idle);
	}
	return bytes;
}

/* "UID/KEY", as the removals name a cache. */
static const char *named(const char *key)
{
	static char name[4][64];
	static int next;
	char *out = name[next++ % 4];

	snprintf(out, sizeof(name[0]), "%s/%s", user, key);
	return out;
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* Hold @key as a job's agent does; the descriptor. */
static int hold(const char *key)
{
	int fd = open(at(key), O_RDONLY | O_DIRECTORY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(flock(fd, LOCK_EX), 0);
	return fd;
}

static struct cache_usage enforce(uint64_t limit, uint64_t max_age)
{
	struct cache_usage usage;

	ck_assert_int_eq(
	        cache_limits_enforce(base_fd, limit, max_age, now, record, &removal_count, &usage),
	        0);
	return usage;
}

START_TEST(too_old_removed)
{
	uint64_t a = make_cache(KEY_A, 100000, 10 * DAY, true);
	uint64_t b = make_cache(KEY_B, 50000, 3600, true);
	uint64_t c = make_cache(KEY_C, 20000, 8 * DAY, false); /* never committed: its mtime */
	struct cache_usage usage = enforce(0, 7 * DAY);

	ck_assert(!exists(at(KEY_A)));
	ck_assert(exists(at(KEY_B)));
	ck_assert(!exists(at(KEY_C)));
	ck_assert_uint_eq(removal_count, 2);
	/* the least recently used first */
	ck_assert_str_eq(removals[0].path, named(KEY_A));
	ck_assert_str_eq(removals[1].path, named(KEY_C));
	ck_assert_int_eq(removals[0].reason, CACHE_TOO_OLD);
	ck_assert_uint_eq(removals[0].bytes, a);
	ck_assert_uint_eq(removals[0].idle, 10 * DAY);
	ck_assert_uint_eq(removals[0].total, a + b + c);
	ck_assert(removals[0].whole);
	ck_assert_uint_eq(removals[1].bytes, c);
	ck_assert_uint_eq(removals[1].idle, 8 * DAY);
	ck_assert_uint_eq(usage.caches, 1);
	ck_assert_uint_eq(usage.bytes, b);
	ck_assert_uint_eq(usage.removed, 2);
	/* a maximum age of an hour less a second: the last one goes too */
	enforce(0, 3600);
	ck_assert_uint_eq(removal_count, 2);
	enforce(0, 3600 - 1);
	ck_assert_uint_eq(removal_count, 3);
	ck_assert(!exists(at(KEY_B)));
}
END_TEST

START_TEST(least_recently_used_down_to_the_limit)
{
	uint64_t a = make_cache(KEY_A, 300000, 3 * DAY, true);
	uint64_t b = make_cache(KEY_B, 200000, 2 * DAY, true);
	uint64_t c = make_cache(KEY_C, 100000, 1 * DAY, true);
	uint64_t d = make_cache(KEY_D, 100000, 60, true);
	struct cache_usage usage;

	/* under the limit: nothing goes */
	usage = enforce(a + b + c + d, 0);
	ck_assert_uint_eq(removal_count, 0);
	ck_assert_uint_eq(usage.bytes, a + b + c + d);
	ck_assert_uint_eq(usage.caches, 4);
	/* one byte over: the least recently used goes, and that is enough */
	usage = enforce(b + c + d, 0);
	ck_assert_uint_eq(removal_count, 1);
	ck_assert_str_eq(removals[0].path, named(KEY_A));
	ck_assert_int_eq(removals[0].reason, CACHE_OVER_LIMIT);
	ck_assert_uint_eq(removals[0].total, a + b + c + d);
	ck_assert_uint_eq(removals[0].bytes, a);
	ck_assert_uint_eq(usage.bytes, b + c + d);
	ck_assert(exists(at(KEY_B)) && exists(at(KEY_C)) && exists(at(KEY_D)));
	/* down to the most recently used alone, oldest first */
	usage = enforce(d + 1, 0);
	ck_assert_uint_eq(removal_count, 3);
	ck_assert_str_eq(removals[1].path, named(KEY_B));
	ck_assert_str_eq(removals[2].path, named(KEY_C));
	ck_assert_uint_eq(removals[2].total, c + d);
	ck_assert(!exists(at(KEY_B)) && !exists(at(KEY_C)));
	ck_assert(exists(at(KEY_D)));
	ck_assert_uint_eq(usage.bytes, d);
	ck_assert_uint_eq(usage.caches, 1);
}
END_TEST

START_TEST(held_never_removed)
{
	uint64_t a = make_cache(KEY_A, 300000, 30 * DAY, true);
	uint64_t b = make_cache(KEY_B, 100000, 2 * DAY, true);
	int held = hold(KEY_A);
	struct cache_usage usage;

	/* the oldest, over every limit, but a job holds it: it stays and counts */
	usage = enforce(1, DAY);
	ck_assert(exists(at(KEY_A)));
	ck_assert(!exists(at(KEY_B)));
	ck_assert_uint_eq(removal_count, 1);
	ck_assert_str_eq(removals[0].path, named(KEY_B));
	ck_assert_int_eq(removals[0].reason, CACHE_TOO_OLD);
	ck_assert_uint_eq(usage.in_use, 1);
	ck_assert_uint_eq(usage.bytes, a);
	ck_assert_uint_eq(removals[0].bytes, b);
	ck_assert_uint_eq(usage.caches, 1);
	/* let go: now it goes */
	close(held);
	usage = enforce(1, DAY);
	ck_assert(!exists(at(KEY_A)));
	ck_assert_uint_eq(usage.bytes, 0);
}
END_TEST

START_TEST(links_not_followed)
{
	char victim[128], link[256], victim_dir[128], file[160];
	struct stat st;

	make_cache(KEY_A, 10000, 30 * DAY, true);
	snprintf(victim, sizeof(victim), "%s/victim", outside);
	make_file(victim, 300000);
	snprintf(victim_dir, sizeof(victim_dir), "%s/tree", outside);
	ck_assert_int_eq(mkdir(victim_dir, 0700), 0);
	snprintf(file, sizeof(file), "%s/precious", victim_dir);
	make_file(file, 1000);
	/* planted in the cache: a link to a file and one to a directory outside */
	snprintf(link, sizeof(link), "%s/data.link", at(KEY_A));
	ck_assert_int_eq(symlink(victim, link), 0);
	snprintf(link, sizeof(link), "%s/sub", at(KEY_A));
	ck_assert_int_eq(symlink(victim_dir, link), 0);
	/* and a link with a key's name in the user's directory, and a user's name in the base */
	ck_assert_int_eq(symlink(victim_dir, at(KEY_B)), 0);
	snprintf(link, sizeof(link), "%s/12345", base);
	ck_assert_int_eq(symlink(outside, link), 0);
	set_mtime(at(KEY_B), now - 30 * DAY);

	enforce(1, DAY);
	/* the cache went, its links as links */
	ck_assert(!exists(at(KEY_A)));
	ck_assert_uint_eq(removal_count, 1);
	ck_assert(removals[0].whole);
	/* the linked size is not the cache's */
	ck_assert_uint_lt(removals[0].bytes, 300000);
	/* nothing outside was touched */
	ck_assert_int_eq(stat(victim, &st), 0);
	ck_assert_int_eq(st.st_size, 300000);
	ck_assert(exists(file));
	ck_assert(exists(victim_dir));
	/* a key-named link is no cache: neither followed nor counted */
	ck_assert(exists(at(KEY_B)));
	ck_assert(exists(link));
}
END_TEST

START_TEST(only_the_users_entries)
{
	char path[256];
	struct cache_usage usage;

	if (geteuid() != 0)
		return; /* giving files away takes root */
	make_cache(KEY_A, 10000, 30 * DAY, true);
	/* a file of another user inside: it stays, and so does the directory */
	snprintf(path, sizeof(path), "%s/other", at(KEY_A));
	make_file(path, 1000);
	ck_assert_int_eq(chown(path, 12345, 12345), 0);
	/* a cache of another owner than its directory's name says: not one of theirs */
	make_cache(KEY_B, 10000, 30 * DAY, true);
	ck_assert_int_eq(chown(at(KEY_B), 12345, 12345), 0);
	/* a user's directory of the wrong owner: not looked into */
	snprintf(path, sizeof(path), "%s/12345", base);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/12345/" KEY_C, base);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_eq(chown(path, 12345, 12345), 0);

	usage = enforce(1, DAY);
	ck_assert_uint_eq(removal_count, 1);
	ck_assert(!removals[0].whole);
	snprintf(path, sizeof(path), "%s/other", at(KEY_A));
	ck_assert(exists(path));
	snprintf(path, sizeof(path), "%s/data", at(KEY_A));
	ck_assert(!exists(path));
	ck_assert(exists(at(KEY_B)));
	snprintf(path, sizeof(path), "%s/12345/" KEY_C, base);
	ck_assert(exists(path));
	ck_assert_uint_eq(usage.caches, 1); /* KEY_A's remains */
}
END_TEST

START_TEST(orphans_of_the_ending_job)
{
	static const char *const gone[] = { "data.42.0123abcd", "data.42.ffff0000" };
	static const char *const kept[] = { "data",    "data.43.0123abcd", "data.420.0123abcd",
		                            "data.42", "data.42.",         "manifest.42.x" };
	char path[256];
	int held;

	make_cache(KEY_A, 1000, 60, true);
	make_cache(KEY_B, 1000, 60, true);
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", at(KEY_A), gone[i]);
		make_file(path, 5000);
	}
	for (size_t i = 1; i < sizeof(kept) / sizeof(kept[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", at(KEY_A), kept[i]);
		make_file(path, 5000);
	}
	/* in a cache another job of the user holds now: left */
	snprintf(path, sizeof(path), "%s/data.42.77777777", at(KEY_B));
	make_file(path, 5000);
	held = hold(KEY_B);

	ck_assert_uint_eq(cache_orphans_remove(base_fd, geteuid(), 42, record, &removal_count), 2);
	ck_assert_uint_eq(removal_count, 2);
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
		bool reported = false;

		snprintf(path, sizeof(path), "%s/%s", at(KEY_A), gone[i]);
		ck_assert_msg(!exists(path), "%s stays", path);
		snprintf(path, sizeof(path), "%s/" KEY_A "/%s", user, gone[i]);
		for (unsigned int r = 0; r < removal_count; r++)
			reported = reported || strcmp(removals[r].path, path) == 0;
		ck_assert_msg(reported, "%s not reported", path);
	}
	ck_assert_int_eq(removals[0].reason, CACHE_ORPHAN);
	ck_assert_uint_gt(removals[0].bytes, 0);
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", at(KEY_A), kept[i]);
		ck_assert_msg(exists(path), "%s went", path);
	}
	snprintf(path, sizeof(path), "%s/data.42.77777777", at(KEY_B));
	ck_assert(exists(path));
	/* once its job is gone, the next epilog of job 42 takes it */
	close(held);
	ck_assert_uint_eq(cache_orphans_remove(base_fd, geteuid(), 42, record, &removal_count), 1);
	ck_assert(!exists(path));
	/* another user's directory is not looked into for this one */
	ck_assert_uint_eq(cache_orphans_remove(base_fd, geteuid() + 1, 43, NULL, NULL), 0);
	snprintf(path, sizeof(path), "%s/data.43.0123abcd", at(KEY_A));
	ck_assert(exists(path));
}
END_TEST

START_TEST(base_checked)
{
	char why[256], path[128];
	int fd;

	if (geteuid() != 0)
		return; /* the base must be root's */
	fd = cache_base_open(base, why, sizeof(why));
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(chmod(base, 0775), 0);
	ck_assert_int_eq(cache_base_open(base, why, sizeof(why)), -1);
	ck_assert_msg(strstr(why, "may be written by others than root (mode 0775)"), "%s", why);
	ck_assert_int_eq(chmod(base, 01777), 0);
	ck_assert_int_eq(cache_base_open(base, why, sizeof(why)), -1);
	ck_assert_int_eq(chmod(base, 0755), 0);
	ck_assert_int_eq(chown(base, 12345, 0), 0);
	ck_assert_int_eq(cache_base_open(base, why, sizeof(why)), -1);
	ck_assert_msg(strstr(why, "belongs to uid 12345, not to root"), "%s", why);
	ck_assert_int_eq(chown(base, 0, 0), 0);
	snprintf(path, sizeof(path), "%s/link", work);
	ck_assert_int_eq(symlink(base, path), 0);
	ck_assert_int_eq(cache_base_open(path, why, sizeof(why)), -1);
	ck_assert_msg(strstr(why, "symbolic link"), "%s", why);
	snprintf(path, sizeof(path), "%s/file", work);
	make_file(path, 10);
	ck_assert_int_eq(cache_base_open(path, why, sizeof(why)), -1);
	ck_assert_msg(strstr(why, "is not a directory"), "%s", why);
	snprintf(path, sizeof(path), "%s/missing", work);
	ck_assert_int_eq(cache_base_open(path, why, sizeof(why)), -1);
	ck_assert_msg(strstr(why, "No such file"), "%s", why);
}
END_TEST

START_TEST(user_directory_made_or_refused)
{
	char why[256], path[128];
	struct stat st;
	mode_t mask;

	if (geteuid() != 0)
		return;     /* giving directories away takes root */
	mask = umask(0777); /* the mode is set whatever slurmd's umask */
	ck_assert_int_eq(cache_user_dir_make(base_fd, 12345, 23456, why, sizeof(why)), 1);
	umask(mask);
	snprintf(path, sizeof(path), "%s/12345", base);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_uint_eq(st.st_uid, 12345);
	ck_assert_uint_eq(st.st_gid, 23456);
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	/* there and right: nothing to do */
	ck_assert_int_eq(cache_user_dir_make(base_fd, 12345, 23456, why, sizeof(why)), 0);
	/* there and wrong: refused, and left as it is */
	ck_assert_int_eq(chmod(path, 0755), 0);
	ck_assert_int_eq(cache_user_dir_make(base_fd, 12345, 23456, why, sizeof(why)), -1);
	ck_assert_msg(strstr(why, "has mode 0755, not 0700"), "%s", why);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0755);
	ck_assert_int_eq(chown(path, 0, 0), 0);
	ck_assert_int_eq(chmod(path, 0700), 0);
	ck_assert_int_eq(cache_user_dir_make(base_fd, 12345, 23456, why, sizeof(why)), -1);
	ck_assert_msg(strstr(why, "belongs to uid 0, not to uid 12345"), "%s", why);
	snprintf(path, sizeof(path), "%s/777", base);
	ck_assert_int_eq(symlink(outside, path), 0);
	ck_assert_int_eq(cache_user_dir_make(base_fd, 777, 777, why, sizeof(why)), -1);
	ck_assert_msg(strstr(why, "symbolic link"), "%s", why);
	ck_assert_int_eq(lstat(outside, &st), 0);
	ck_assert_uint_eq(st.st_uid, 0); /* the link's target was not given away */
	snprintf(path, sizeof(path), "%s/778", base);
	make_file(path, 10);
	ck_assert_int_eq(cache_user_dir_make(base_fd, 778, 778, why, sizeof(why)), -1);
	ck_assert_msg(strstr(why, "is not a directory"), "%s", why);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("cache_limits");
	TCase *tc = tcase_create("cache_limits");
	SRunner *runner;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, too_old_removed);
	tcase_add_test(tc, least_recently_used_down_to_the_limit);
	tcase_add_test(tc, held_never_removed);
	tcase_add_test(tc, links_not_followed);
	tcase_add_test(tc, only_the_users_entries);
	tcase_add_test(tc, orphans_of_the_ending_job);
	tcase_add_test(tc, base_checked);
	tcase_add_test(tc, user_directory_made_or_refused);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? 0 : 1;
}
