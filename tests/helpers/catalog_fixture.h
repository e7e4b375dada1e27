/*
 * Test helpers for the catalog tests: dataset trees under a temporary
 * directory, log capture, and running a check as an unprivileged user (the
 * tests may run as root, whom permissions do not stop).
 */
#ifndef NOPFS_TEST_CATALOG_FIXTURE_H
#define NOPFS_TEST_CATALOG_FIXTURE_H

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "common/log.h"

#define FIXTURE_NOBODY 65534

static char fixture_base[PATH_MAX];
static char fixture_log[1 << 16];

static void fixture_sink(nopfs_log_level level, const char *message, void *arg)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	size_t used = strlen(fixture_log);

	snprintf(fixture_log + used, sizeof(fixture_log) - used, "%s: %s\n", names[level], message);
}

/* Forget the messages captured so far. */
static inline void log_reset(void)
{
	fixture_log[0] = '\0';
}

/* Whether a captured message contains @text. */
static inline bool logged(const char *text)
{
	return strstr(fixture_log, text) != NULL;
}

/* An absolute path under the test directory (a static buffer per call slot). */
static inline const char *at(const char *format, ...)
{
	static char buffers[8][PATH_MAX];
	static int next;
	char *buffer = buffers[next++ % 8];
	size_t length;
	va_list args;

	length = (size_t)snprintf(buffer, PATH_MAX, "%s/", fixture_base);
	va_start(args, format);
	vsnprintf(buffer + length, PATH_MAX - length, format, args);
	va_end(args);
	return buffer;
}

/* mkdir -p @path (absolute). */
static inline void make_dirs(const char *path)
{
	char copy[PATH_MAX], *slash;

	snprintf(copy, sizeof(copy), "%s", path);
	for (slash = strchr(copy + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		ck_assert_msg(mkdir(copy, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", copy,
		              strerror(errno));
		*slash = '/';
	}
	ck_assert_msg(mkdir(copy, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", copy,
	              strerror(errno));
}

/* Create (or rewrite) @path with @size bytes of @fill, creating its parents. */
static inline void make_file_filled(const char *path, size_t size, char fill)
{
	char parent[PATH_MAX], *slash, buffer[4096];
	size_t done = 0;
	int fd;

	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	*slash = '\0';
	make_dirs(parent);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_msg(fd >= 0, "create %s: %s", path, strerror(errno));
	memset(buffer, fill, sizeof(buffer));
	while (done < size) {
		size_t n = size - done < sizeof(buffer) ? size - done : sizeof(buffer);

		ck_assert(write(fd, buffer, n) == (ssize_t)n);
		done += n;
	}
	ck_assert_int_eq(close(fd), 0);
}

static inline void make_file(const char *path, size_t size)
{
	make_file_filled(path, size, 'x');
}

/* Write @text to @path. */
static inline void write_text(const char *path, const char *text)
{
	FILE *file = fopen(path, "w");

	ck_assert_msg(file != NULL, "create %s: %s", path, strerror(errno));
	ck_assert_int_eq(fputs(text, file) >= 0, 1);
	ck_assert_int_eq(fclose(file), 0);
}

static inline void make_link(const char *target, const char *path)
{
	ck_assert_msg(symlink(target, path) == 0, "symlink %s: %s", path, strerror(errno));
}

static int fixture_remove(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(path) == 0 ? 0 : -1;
}

static int fixture_unlock(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	if (type == FTW_D || type == FTW_DNR)
		chmod(path, 0755);
	return 0;
}

/* Create the test directory, traversable by the unprivileged user; capture logs. */
static inline void fixture_setup(void)
{
	snprintf(fixture_base, sizeof(fixture_base), "/tmp/nopfs-check-catalog-XXXXXX");
	ck_assert(mkdtemp(fixture_base) != NULL);
	ck_assert_int_eq(chmod(fixture_base, 0755), 0);
	log_reset();
	nopfs_log_set_sink(fixture_sink, NULL, NOPFS_LOG_DEBUG);
}

static inline void fixture_teardown(void)
{
	nftw(fixture_base, fixture_unlock, 16, FTW_PHYS);
	nftw(fixture_base, fixture_remove, 16, FTW_DEPTH | FTW_PHYS);
	nopfs_log_set_sink(NULL, NULL, NOPFS_LOG_INFO);
}

/*
 * Run @check in a child as an unprivileged user when we are root, so that
 * permissions apply; returns the child's exit status (0: passed).
 */
static inline int run_unprivileged(int (*check)(void))
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		if (geteuid() == 0 && (setgid(FIXTURE_NOBODY) != 0 || setuid(FIXTURE_NOBODY) != 0))
			_exit(90);
		_exit(check());
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

/* Build (no cache) an imagefolder catalog of @root with @extensions. */
static inline nopfs_status build_folder(const char *root, const char *extensions,
                                        struct nopfs_catalog **out)
{
	struct nopfs_catalog_options options = {
		.format = NOPFS_INDEX_IMAGEFOLDER,
		.root = root,
		.extensions = extensions,
	};

	return nopfs_catalog_build(&options, out);
}

static inline nopfs_status build_list(const char *root, const char *list,
                                      struct nopfs_catalog **out)
{
	struct nopfs_catalog_options options = {
		.format = NOPFS_INDEX_LIST,
		.root = root,
		.list_path = list,
	};

	return nopfs_catalog_build(&options, out);
}

/* The relative path of sample @index (a static buffer). */
static inline const char *path_of(const struct nopfs_catalog *catalog, uint64_t index)
{
	static char buffer[PATH_MAX];

	ck_assert_int_eq(nopfs_catalog_path(catalog, index, buffer, sizeof(buffer)), NOPFS_OK);
	return buffer;
}

/* Assert that two catalogs hold the same samples, classes and labels. */
static inline void assert_same_catalog(const struct nopfs_catalog *a, const struct nopfs_catalog *b)
{
	char path[PATH_MAX];
	uint64_t i;
	uint32_t c;

	ck_assert_uint_eq(nopfs_catalog_count(a), nopfs_catalog_count(b));
	ck_assert_uint_eq(nopfs_catalog_total_bytes(a), nopfs_catalog_total_bytes(b));
	ck_assert_uint_eq(nopfs_catalog_class_count(a), nopfs_catalog_class_count(b));
	for (c = 0; c < nopfs_catalog_class_count(a); c++)
		ck_assert_str_eq(nopfs_catalog_class_name(a, c), nopfs_catalog_class_name(b, c));
	for (i = 0; i < nopfs_catalog_count(a); i++) {
		ck_assert_uint_eq(nopfs_catalog_size(a, i), nopfs_catalog_size(b, i));
		ck_assert_int_eq(nopfs_catalog_label(a, i), nopfs_catalog_label(b, i));
		snprintf(path, sizeof(path), "%s", path_of(a, i));
		ck_assert_str_eq(path, path_of(b, i));
		ck_assert_int_eq(nopfs_catalog_find(b, path), (int64_t)i);
	}
}

#endif
