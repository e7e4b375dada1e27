/*
 * A catalog cache file as nopfs_catalog_open() finds it in its cache
 * directory. The harness makes a small dataset in a private directory and
 * its real cache file (the template); an input is a patch of that file:
 * offset (2 bytes, little-endian, modulo the template's length), new length
 * (2 bytes: the template's length plus or minus up to 32767), then bytes
 * written at the offset. Built for fuzzing the checksum is not compared, so
 * the patched fields are reached. Whatever the file says, the catalog
 * returned lists the dataset's files, each with its true size.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "common/log.h"
#include "fuzz.h"

static const char *const files[] = { "a/x.jpg", "a/y.png", "b/z.jpg" };
static const uint64_t sizes[] = { 11, 222, 3333 };
#define FILES (sizeof(files) / sizeof(files[0]))

static char top[PATH_MAX], root[PATH_MAX], cache_dir[PATH_MAX], cache_file[PATH_MAX];
static uint8_t *template_bytes, *scratch;
static size_t template_length;
static int root_fd = -1;

static void cleanup(void);

/* Whether what snprintf() wrote (@written) did not fit in @size. */
static bool overflows(int written, size_t size)
{
	return written < 0 || (size_t)written >= size;
}

static void quiet(nopfs_log_level level, const char *message, void *arg)
{
	(void)level;
	(void)message;
	(void)arg;
}

static void make_file(const char *relative, uint64_t size)
{
	int fd = openat(root_fd, relative, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)size) != 0)
		abort();
	close(fd);
}

static struct nopfs_catalog_options options(void)
{
	return (struct nopfs_catalog_options){ .format = NOPFS_INDEX_IMAGEFOLDER,
		                               .root = root,
		                               .cache_dir = cache_dir };
}

static void setup(void)
{
	struct nopfs_catalog_options opts;
	struct nopfs_catalog *catalog;
	const char *base = getenv("TMPDIR");
	char path[PATH_MAX];
	struct dirent *entry;
	struct stat st;
	DIR *dir;
	int fd;

	nopfs_log_set_sink(quiet, NULL, NOPFS_LOG_ERROR);
	if (overflows(snprintf(path, PATH_MAX / 2, "%s/nopfs-fuzz-cache.XXXXXX",
	                       base && *base ? base : "/tmp"),
	              PATH_MAX / 2) ||
	    !mkdtemp(path))
		abort();
	if (overflows(snprintf(top, sizeof(top), "%s", path), sizeof(top)) ||
	    overflows(snprintf(root, sizeof(root), "%s/data", path), sizeof(root)) ||
	    overflows(snprintf(cache_dir, sizeof(cache_dir), "%s/cache", path),
	              sizeof(cache_dir)) ||
	    mkdir(root, 0700) != 0)
		abort();
	root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0 || mkdirat(root_fd, "a", 0700) != 0 || mkdirat(root_fd, "b", 0700) != 0)
		abort();
	atexit(cleanup);
	for (size_t i = 0; i < FILES; i++)
		make_file(files[i], sizes[i]);
	/* the cache is not written for a tree changed in its last second (ctime) */
	nanosleep(&(struct timespec){ .tv_sec = 1, .tv_nsec = 200000000 }, NULL);
	opts = options();
	if (nopfs_catalog_open(&opts, &catalog, NULL) != NOPFS_OK)
		abort();
	nopfs_catalog_destroy(catalog);
	dir = opendir(cache_dir);
	while (dir && (entry = readdir(dir)))
		if (entry->d_name[0] != '.' &&
		    overflows(snprintf(cache_file, sizeof(cache_file), "%s/%s", cache_dir,
		                       entry->d_name),
		              sizeof(cache_file)))
			abort();
	if (dir)
		closedir(dir);
	fd = cache_file[0] ? open(cache_file, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0)
		abort(); /* the template: the dataset's own cache */
	template_length = (size_t)st.st_size;
	template_bytes = malloc(template_length);
	scratch = malloc(template_length + 32768);
	if (!template_bytes || !scratch ||
	    read(fd, template_bytes, template_length) != (ssize_t)template_length)
		abort();
	close(fd);
}

static void write_cache(const uint8_t *bytes, size_t length)
{
	int fd = open(cache_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0 || (length && write(fd, bytes, length) != (ssize_t)length))
		abort();
	close(fd);
}

/* Each sample the catalog lists is a file of the dataset, with its size. */
static void check(const struct nopfs_catalog *catalog)
{
	char path[PATH_MAX];
	struct stat st;

	if (nopfs_catalog_count(catalog) != FILES)
		abort();
	for (uint64_t i = 0; i < FILES; i++) {
		if (nopfs_catalog_path(catalog, i, path, sizeof(path)) != NOPFS_OK ||
		    fstatat(root_fd, path, &st, 0) != 0 || !S_ISREG(st.st_mode) ||
		    (uint64_t)st.st_size != nopfs_catalog_size(catalog, i))
			abort();
	}
}

static void cleanup(void)
{
	DIR *dir = opendir(cache_dir);
	struct dirent *entry;

	while (dir && (entry = readdir(dir)))
		if (entry->d_name[0] != '.')
			unlinkat(dirfd(dir), entry->d_name, 0);
	if (dir)
		closedir(dir);
	rmdir(cache_dir);
	for (size_t i = 0; i < FILES; i++)
		unlinkat(root_fd, files[i], 0);
	unlinkat(root_fd, "a", AT_REMOVEDIR);
	unlinkat(root_fd, "b", AT_REMOVEDIR);
	rmdir(root);
	rmdir(top);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nopfs_catalog_options opts;
	struct nopfs_catalog *catalog;
	size_t offset, length;
	int delta;

	if (!template_bytes)
		setup();
	if (size < 4)
		return 0;
	offset = (data[0] | (size_t)data[1] << 8) % template_length;
	delta = (int)(data[2] | data[3] << 8) - 32768;
	length = (long)template_length + delta < 0 ? 0 : (size_t)((long)template_length + delta);
	if (length > template_length + 32767)
		length = template_length + 32767;
	memset(scratch, 0, length);
	memcpy(scratch, template_bytes, length < template_length ? length : template_length);
	for (size_t i = 4; i < size && offset + i - 4 < length; i++)
		scratch[offset + i - 4] = data[i];
	write_cache(scratch, length);
	opts = options();
	if (nopfs_catalog_open(&opts, &catalog, NULL) != NOPFS_OK)
		abort(); /* the dataset is fine: a bad cache only costs a scan */
	check(catalog);
	nopfs_catalog_destroy(catalog);
	return 0;
}
