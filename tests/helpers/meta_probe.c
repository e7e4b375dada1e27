/*
 * meta_probe: the C library's metadata calls on paths, printed one result a
 * line, for the interposer's test: run with and without LD_PRELOAD, the
 * outputs must be the same.
 *
 *   meta_probe LIST
 *
 * LIST holds paths separated by NUL bytes. For each path: stat, lstat,
 * stat64, lstat64, fstatat (following or not), statx, access and faccessat
 * (R_OK, X_OK, F_OK), realpath (given a buffer and not), readlink (into 3
 * bytes, then the whole), and for a directory
 * opendir + readdir (name, d_type, d_ino of each entry), readdir64,
 * readdir_r, telldir/seekdir/rewinddir (the same entries again), scandir
 * with alphasort, and fdopendir of an open descriptor. Every failure prints
 * its errno name.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void print_bytes(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x21 || c > 0x7e || c == '\\')
			printf("\\x%02x", c);
		else
			putchar(c);
	}
}

static void print_stat(const char *what, int rc, const struct stat *st)
{
	printf("  %s ", what);
	if (rc != 0) {
		printf("error %s\n", strerrorname_np(errno));
		return;
	}
	printf("dev=%lu ino=%lu mode=%o nlink=%lu uid=%u gid=%u rdev=%lu size=%ld blksize=%ld "
	       "blocks=%ld atime=%ld.%09ld mtime=%ld.%09ld ctime=%ld.%09ld\n",
	       (unsigned long)st->st_dev, (unsigned long)st->st_ino, st->st_mode,
	       (unsigned long)st->st_nlink, st->st_uid, st->st_gid, (unsigned long)st->st_rdev,
	       (long)st->st_size, (long)st->st_blksize, (long)st->st_blocks,
	       (long)st->st_atim.tv_sec, st->st_atim.tv_nsec, (long)st->st_mtim.tv_sec,
	       st->st_mtim.tv_nsec, (long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
}

static void print_stat64(const char *what, int rc, const struct stat64 *st)
{
	struct stat narrow = {
		.st_dev = st->st_dev,
		.st_ino = st->st_ino,
		.st_mode = st->st_mode,
		.st_nlink = st->st_nlink,
		.st_uid = st->st_uid,
		.st_gid = st->st_gid,
		.st_rdev = st->st_rdev,
		.st_size = st->st_size,
		.st_blksize = st->st_blksize,
		.st_blocks = st->st_blocks,
		.st_atim = st->st_atim,
		.st_mtim = st->st_mtim,
		.st_ctim = st->st_ctim,
	};

	print_stat(what, rc, &narrow);
}

static void print_statx(const char *what, int rc, const struct statx *s)
{
	printf("  %s ", what);
	if (rc != 0) {
		printf("error %s\n", strerrorname_np(errno));
		return;
	}
	printf("mask=%x dev=%u:%u ino=%llu mode=%o nlink=%u uid=%u gid=%u size=%llu blocks=%llu "
	       "attributes=%llx/%llx atime=%lld.%u mtime=%lld.%u ctime=%lld.%u",
	       s->stx_mask, s->stx_dev_major, s->stx_dev_minor, (unsigned long long)s->stx_ino,
	       s->stx_mode, s->stx_nlink, s->stx_uid, s->stx_gid, (unsigned long long)s->stx_size,
	       (unsigned long long)s->stx_blocks, (unsigned long long)s->stx_attributes,
	       (unsigned long long)s->stx_attributes_mask, (long long)s->stx_atime.tv_sec,
	       s->stx_atime.tv_nsec, (long long)s->stx_mtime.tv_sec, s->stx_mtime.tv_nsec,
	       (long long)s->stx_ctime.tv_sec, s->stx_ctime.tv_nsec);
	if (s->stx_mask & STATX_BTIME)
		printf(" btime=%lld.%u", (long long)s->stx_btime.tv_sec, s->stx_btime.tv_nsec);
	printf("\n");
}

static void print_rc(const char *what, int rc)
{
	printf("  %s %s\n", what, rc == 0 ? "ok" : strerrorname_np(errno));
}

static void print_entry(const char *what, const char *name, unsigned char type, unsigned long ino)
{
	printf("  %s ", what);
	print_bytes(name);
	printf(" type=%u ino=%lu\n", type, ino);
}

/* opendir, readdir; then telldir at the middle, rewinddir and seekdir. */
static void list(const char *path)
{
	struct dirent *entry;
	long middle = -1;
	char first_after[NAME_MAX + 1] = "";
	int count = 0, n = 0;
	DIR *dir = opendir(path);

	if (!dir) {
		printf("  opendir error %s\n", strerrorname_np(errno));
		return;
	}
	while ((entry = readdir(dir))) {
		print_entry("readdir", entry->d_name, entry->d_type, (unsigned long)entry->d_ino);
		count++;
	}
	rewinddir(dir);
	while (n < count / 2 && readdir(dir))
		n++;
	middle = telldir(dir);
	entry = readdir(dir);
	if (entry)
		snprintf(first_after, sizeof(first_after), "%s", entry->d_name);
	rewinddir(dir);
	seekdir(dir, middle);
	entry = readdir(dir);
	printf("  seekdir %s\n",
	       (entry ? strcmp(entry->d_name, first_after) == 0 : first_after[0] == '\0')
	               ? "same"
	               : "differs");
	closedir(dir);

	dir = opendir(path);
	if (dir) {
		struct dirent64 *e64;

		while ((e64 = readdir64(dir)))
			print_entry("readdir64", e64->d_name, e64->d_type,
			            (unsigned long)e64->d_ino);
		closedir(dir);
	}
	dir = opendir(path);
	if (dir) {
		struct dirent buffer, *result;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
		while (readdir_r(dir, &buffer, &result) == 0 && result)
			print_entry("readdir_r", result->d_name, result->d_type,
			            (unsigned long)result->d_ino);
#pragma GCC diagnostic pop
		closedir(dir);
	}
}

static void scan(const char *path)
{
	struct dirent **names;
	int n = scandir(path, &names, NULL, alphasort);

	if (n < 0) {
		printf("  scandir error %s\n", strerrorname_np(errno));
		return;
	}
	for (int i = 0; i < n; i++) {
		print_entry("scandir", names[i]->d_name, names[i]->d_type,
		            (unsigned long)names[i]->d_ino);
		free(names[i]);
	}
	free(names);
}

/* fdopendir of a descriptor, and fstatat of each entry relative to it. */
static void by_descriptor(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY);
	struct dirent *entry;
	struct stat st;
	DIR *dir;

	if (fd < 0) {
		printf("  open error %s\n", strerrorname_np(errno));
		return;
	}
	dir = fdopendir(fd);
	if (!dir) {
		printf("  fdopendir error %s\n", strerrorname_np(errno));
		close(fd);
		return;
	}
	while ((entry = readdir(dir))) {
		int rc = fstatat(dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW);

		print_entry("fdopendir", entry->d_name, entry->d_type, (unsigned long)entry->d_ino);
		print_stat("fstatat(dirfd)", rc, &st);
	}
	closedir(dir);
}

static void probe(const char *path)
{
	char resolved[PATH_MAX], *allocated;
	struct stat64 st64;
	struct statx stx;
	struct stat st;
	int rc;

	printf("path ");
	print_bytes(path);
	printf("\n");
	rc = stat(path, &st);
	print_stat("stat", rc, &st);
	print_stat("lstat", lstat(path, &st), &st);
	print_stat64("stat64", stat64(path, &st64), &st64);
	print_stat64("lstat64", lstat64(path, &st64), &st64);
	print_stat("fstatat", fstatat(AT_FDCWD, path, &st, 0), &st);
	print_stat("fstatat-nofollow", fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW), &st);
	print_statx("statx", statx(AT_FDCWD, path, 0, STATX_BASIC_STATS | STATX_BTIME, &stx), &stx);
	print_statx(
	        "statx-nofollow",
	        statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_BTIME, &stx),
	        &stx);
	print_rc("access-R", access(path, R_OK));
	print_rc("access-X", access(path, X_OK));
	print_rc("access-F", access(path, F_OK));
	print_rc("faccessat-R-eaccess", faccessat(AT_FDCWD, path, R_OK, AT_EACCESS));
	print_rc("faccessat-X-nofollow", faccessat(AT_FDCWD, path, X_OK, AT_SYMLINK_NOFOLLOW));
	printf("  realpath ");
	if (realpath(path, resolved))
		print_bytes(resolved);
	else
		printf("error %s", strerrorname_np(errno));
	printf("\n  realpath-malloc ");
	allocated = realpath(path, NULL);
	if (allocated)
		print_bytes(allocated);
	else
		printf("error %s", strerrorname_np(errno));
	free(allocated);
	printf("\n  readlink ");
	{
		ssize_t n = readlink(path, resolved, 3);

		if (n >= 0) {
			resolved[n] = '\0';
			print_bytes(resolved);
			n = readlink(path, resolved, sizeof(resolved) - 1);
			resolved[n > 0 ? n : 0] = '\0';
			printf(" ");
			print_bytes(resolved);
		} else {
			printf("error %s", strerrorname_np(errno));
		}
	}
	printf("\n");
	if (rc == 0 && S_ISDIR(st.st_mode)) {
		list(path);
		scan(path);
		by_descriptor(path);
	}
}

int main(int argc, char **argv)
{
	char *data = NULL;
	size_t length = 0, capacity = 0, n;
	FILE *file;

	if (argc != 2) {
		fprintf(stderr, "usage: meta_probe LIST\n");
		return 2;
	}
	file = fopen(argv[1], "rb");
	if (!file) {
		perror(argv[1]);
		return 2;
	}
	for (;;) {
		if (length + 4096 > capacity) {
			capacity = 2 * capacity + 4096;
			data = realloc(data, capacity + 1);
			if (!data)
				return 2;
		}
		n = fread(data + length, 1, 4096, file);
		if (n == 0)
			break;
		length += n;
	}
	fclose(file);
	data[length] = '\0';
	for (size_t offset = 0; offset < length; offset += strlen(data + offset) + 1)
		probe(data + offset);
	free(data);
	return 0;
}
