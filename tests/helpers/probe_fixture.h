/*
 * Test helpers for the probe tests: a dataset of 200 files under a
 * temporary directory, tier lists and configurations, log capture, and
 * private mounts of small or O_DIRECT-refusing file systems.
 */
#ifndef NOPFS_TEST_PROBE_FIXTURE_H
#define NOPFS_TEST_PROBE_FIXTURE_H

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

#include "probe/probe.h"
#include "common/log.h"
#include "common/clock.h"

#define FILE_COUNT  200
#define MEAN_SIZE   (64 * 1024)
#define MAX_THREADS 4
#define POINTS      3 /* 1, 2, 4 */

static char base[256];
static char data_dir[512];
static char file_paths[FILE_COUNT][PATH_MAX];
static struct probe_file files[FILE_COUNT];

static char captured[1 << 16];

static inline void capture_sink(nopfs_log_level level, const char *message, void *arg)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	size_t used = strlen(captured);

	snprintf(captured + used, sizeof(captured) - used, "%s: %s\n", names[level], message);
}

/* Capture log messages as "LEVEL: MESSAGE" lines (drops earlier ones). */
static inline void capture_start(void)
{
	captured[0] = '\0';
	nopfs_log_set_sink(capture_sink, NULL, NOPFS_LOG_DEBUG);
}

/* Back to stderr, warnings and errors only. */
static inline void capture_stop(void)
{
	nopfs_log_set_sink(NULL, NULL, NOPFS_LOG_WARNING);
}

static inline bool logged(const char *text)
{
	return strstr(captured, text) != NULL;
}

/* Whether a message of @level contains @text. */
static inline bool logged_at(const char *level, const char *text)
{
	size_t length = strlen(level);

	for (const char *line = captured; *line; line = strchr(line, '\n') + 1) {
		const char *end = strchr(line, '\n');

		if (strncmp(line, level, length) == 0 && line[length] == ':') {
			const char *hit = strstr(line, text);

			if (hit && hit < end)
				return true;
		}
	}
	return false;
}

/* A path under the test directory (one of a few static buffers). */
static inline const char *at(const char *name)
{
	static char buffers[8][PATH_MAX];
	static int next;
	char *buffer = buffers[next++ % 8];

	snprintf(buffer, PATH_MAX, "%s/%s", base, name);
	return buffer;
}

static inline void make_dir(const char *path)
{
	ck_assert_msg(mkdir(path, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", path,
	              strerror(errno));
}

/* 200 files of distinct sizes around 64 KiB, so byte sums identify sets. */
static inline bool make_dataset(void)
{
	static char block[96 * 1024];

	for (size_t i = 0; i < sizeof(block); i++)
		block[i] = (char)(i * 131 + 7);
	snprintf(data_dir, sizeof(data_dir), "%s/data", base);
	if (mkdir(data_dir, 0755) != 0)
		return false;
	for (int i = 0; i < FILE_COUNT; i++) {
		size_t size = 32 * 1024 + (size_t)i * 320;
		FILE *f;

		snprintf(file_paths[i], PATH_MAX, "%s/f%03d", data_dir, i);
		f = fopen(file_paths[i], "w");
		if (!f)
			return false;
		if (fwrite(block, 1, size, f) != size) {
			fclose(f);
			return false;
		}
		if (fclose(f) != 0)
			return false;
		files[i].path = file_paths[i];
		files[i].size = size;
	}
	return true;
}

static inline int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static inline void tiers_for(struct nopfs_tier_list *tiers, const char *spec)
{
	memset(tiers, 0, sizeof(*tiers));
	ck_assert_int_eq(nopfs_tierspec_parse(spec, "test", true, tiers), NOPFS_OK);
}

/* RAM first, then an ssd tier in @ssd_dir (created). */
static inline void ram_and_ssd(struct nopfs_tier_list *tiers, const char *ssd_dir)
{
	char spec[PATH_MAX + 32];

	make_dir(ssd_dir);
	snprintf(spec, sizeof(spec), "ram:1G,ssd:%s:1G", ssd_dir);
	tiers_for(tiers, spec);
}

static inline struct probe_config config_for(const struct nopfs_tier_list *tiers, double budget)
{
	struct probe_config config = {
		.tiers = tiers,
		.files = files,
		.file_count = FILE_COUNT,
		.dataset_root = data_dir,
		.mean_sample_size = MEAN_SIZE,
		.budget_seconds = budget,
		.max_threads = MAX_THREADS,
		.max_age_seconds = 3600,
		.seed = 7,
	};

	return config;
}

static inline unsigned int entries(const char *dir)
{
	DIR *d = opendir(dir);
	unsigned int count = 0;
	struct dirent *e;

	ck_assert_msg(d != NULL, "opendir %s: %s", dir, strerror(errno));
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			count++;
	closedir(d);
	return count;
}

static inline void assert_curve(const struct nopfs_curve *curve, const char *what)
{
	static const double threads[POINTS] = { 1, 2, 4 };

	ck_assert_msg(curve->points == POINTS, "%s: %u points", what, curve->points);
	for (unsigned int i = 0; i < POINTS; i++) {
		ck_assert_msg(curve->x[i] == threads[i], "%s: x[%u] = %g", what, i, curve->x[i]);
		ck_assert_msg(curve->y[i] > 0, "%s: y[%u] = %g", what, i, curve->y[i]);
	}
}

static inline void assert_threads(unsigned int threads, const char *what)
{
	ck_assert_msg(threads >= 1 && threads <= MAX_THREADS, "%s threads %u", what, threads);
}

static inline bool same_curve(const struct nopfs_curve *a, const struct nopfs_curve *b)
{
	return a->points == b->points && memcmp(a->x, b->x, sizeof(a->x)) == 0 &&
	       memcmp(a->y, b->y, sizeof(a->y)) == 0;
}

static inline void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/*
 * Mount a file system of @type on @dir in a mount namespace of our own
 * (private, gone with the process); false when this is not allowed here.
 */
static inline bool mount_private(const char *dir, const char *type, const char *options)
{
	make_dir(dir);
	if (unshare(CLONE_NEWNS) != 0 ||
	    mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("none", dir, type, 0, options) != 0) {
		printf("skipped: cannot mount %s: %s\n", type, strerror(errno));
		return false;
	}
	return true;
}

static inline struct probe_config ssd_only(struct nopfs_tier_list *tiers, const char *dir)
{
	char spec[PATH_MAX + 32];
	struct probe_config config;

	snprintf(spec, sizeof(spec), "ssd:%s:1G", dir);
	tiers_for(tiers, spec);
	config = config_for(tiers, 0.2);
	config.file_count = 0;
	config.files = NULL;
	return config;
}

#endif
