/*
 * preload_probe: opens and reads files the ways programs do, for the
 * interposer's test (check_preload.sh runs it under LD_PRELOAD).
 *
 *   preload_probe MODE FILE...
 *
 * For each FILE prints "MODE FIRST-LINE size=N sum=X": the first line tells
 * which copy was read (the test gives each copy its own), and the probe
 * checks that fstat, lseek(SEEK_END), read and mmap agree on every
 * descriptor (exit 1 if not). MODE is one of: open open64 openat openat64
 * open_2 open64_2 openat_2 openat64_2 fopen fopen64 fopen_e freopen
 * relative rdwr create null (NULL paths first) threads fork_reuse (the
 * program reuses the number of the interposer's socket, then forks: the
 * child must keep the program's file).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The fortified entry points, called by name. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

#define MAX_SIZE (1 << 20)

struct result {
	char first_line[512];
	size_t size;
	unsigned long long sum;
};

static int fail(const char *what, const char *path)
{
	fprintf(stderr, "preload_probe: %s: %s: %s\n", path, what, strerror(errno));
	return -1;
}

static void summarize(const char *data, size_t size, struct result *result)
{
	size_t n = 0;

	while (n < size && n < sizeof(result->first_line) - 1 && data[n] != '\n')
		n++;
	memcpy(result->first_line, data, n);
	result->first_line[n] = '\0';
	result->size = size;
	result->sum = 1469598103934665603ULL;
	for (size_t i = 0; i < size; i++)
		result->sum = (result->sum ^ (unsigned char)data[i]) * 1099511628211ULL;
}

/* Read all of @fd and check that fstat, lseek and mmap agree with read. */
static int check_fd(int fd, const char *path, struct result *result)
{
	static __thread char data[MAX_SIZE];
	struct stat st;
	size_t size = 0;
	ssize_t got;
	off_t end;
	void *map;

	if (fd < 0)
		return fail("open", path);
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return fail("fstat", path);
	while ((got = read(fd, data + size, MAX_SIZE - size)) > 0)
		size += (size_t)got;
	if (got < 0)
		return fail("read", path);
	end = lseek(fd, 0, SEEK_END);
	if (end != st.st_size || (size_t)end != size) {
		fprintf(stderr, "preload_probe: %s: fstat %lld, lseek %lld, read %zu\n", path,
		        (long long)st.st_size, (long long)end, size);
		return -1;
	}
	if (size > 0) {
		map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED)
			return fail("mmap", path);
		if (memcmp(map, data, size) != 0) {
			fprintf(stderr, "preload_probe: %s: mmap differs from read\n", path);
			return -1;
		}
		munmap(map, size);
	}
	summarize(data, size, result);
	return close(fd) == 0 ? 0 : fail("close", path);
}

static int check_file(FILE *file, const char *path, struct result *result)
{
	static __thread char data[MAX_SIZE];
	size_t size;

	if (!file)
		return fail("fopen", path);
	size = fread(data, 1, MAX_SIZE, file);
	if (ferror(file))
		return fail("fread", path);
	summarize(data, size, result);
	return fclose(file) == 0 ? 0 : fail("fclose", path);
}

/* Open @path relative to its directory, through @opener. */
static int open_in_directory(const char *path, int variant)
{
	char copy[PATH_MAX];
	char name[PATH_MAX];
	int dirfd;
	int fd;

	snprintf(copy, sizeof(copy), "%s", path);
	snprintf(name, sizeof(name), "%s", basename(copy));
	dirfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -1;
	switch (variant) {
	case 0:
		fd = openat(dirfd, name, O_RDONLY);
		break;
	case 1:
		fd = openat64(dirfd, name, O_RDONLY | O_CLOEXEC);
		break;
	case 2:
		fd = __openat_2(dirfd, name, O_RDONLY);
		break;
	default:
		fd = __openat64_2(dirfd, name, O_RDONLY);
		break;
	}
	close(dirfd);
	return fd;
}

/* The lowest descriptor that is a socket (the interposer's connection), or -1. */
static int find_socket(void)
{
	struct stat st;

	for (int fd = 3; fd < 1024; fd++)
		if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode))
			return fd;
	return -1;
}

/*
 * Read @path (served by the agent: the interposer connects), put /dev/null
 * in place of the interposer's socket, fork: the child must still have
 * /dev/null there, and read @path again.
 */
static int fork_reuse(const char *path, struct result *result)
{
	struct stat st;
	int status;
	int socket;
	int null;
	pid_t pid;

	if (check_fd(open(path, O_RDONLY), path, result) != 0)
		return -1;
	socket = find_socket();
	null = open("/dev/null", O_RDONLY);
	if (socket < 0 || null < 0 || dup2(null, socket) != socket)
		return fail("no agent connection to reuse", path);
	close(null);
	pid = fork();
	if (pid == 0) {
		struct result again;

		if (fstat(socket, &st) != 0 || !S_ISCHR(st.st_mode)) {
			fprintf(stderr, "preload_probe: the child lost descriptor %d\n", socket);
			_exit(1);
		}
		_exit(check_fd(open(path, O_RDONLY), path, &again) == 0 && again.sum == result->sum
		              ? 0
		              : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return fail("forked child", path);
	return fstat(socket, &st) == 0 && S_ISCHR(st.st_mode) ? 0 : fail("descriptor", path);
}

/*
 * As the real ones: EFAULT for NULL paths, no crash. Passing NULL is the
 * point, so UBSan's check of the declarations' nonnull is not wanted here.
 */
__attribute__((no_sanitize("nonnull-attribute"))) static bool null_paths_fail(void)
{
	const char *volatile nothing = NULL;

	return open(nothing, O_RDONLY) == -1 && errno == EFAULT &&
	       openat(AT_FDCWD, nothing, O_RDONLY) == -1 && errno == EFAULT &&
	       fopen(nothing, "r") == NULL && errno == EFAULT;
}

static int probe(const char *mode, const char *path, struct result *result)
{
	char copy[PATH_MAX];
	FILE *file;
	int fd;

	if (!strcmp(mode, "open"))
		return check_fd(open(path, O_RDONLY), path, result);
	if (!strcmp(mode, "null")) {
		if (!null_paths_fail())
			return fail("open(NULL) did not fail with EFAULT", path);
		return check_fd(open(path, O_RDONLY), path, result);
	}
	if (!strcmp(mode, "open64"))
		return check_fd(open64(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), path, result);
	if (!strcmp(mode, "open_2"))
		return check_fd(__open_2(path, O_RDONLY), path, result);
	if (!strcmp(mode, "open64_2"))
		return check_fd(__open64_2(path, O_RDONLY), path, result);
	if (!strcmp(mode, "openat"))
		return check_fd(open_in_directory(path, 0), path, result);
	if (!strcmp(mode, "openat64"))
		return check_fd(open_in_directory(path, 1), path, result);
	if (!strcmp(mode, "openat_2"))
		return check_fd(open_in_directory(path, 2), path, result);
	if (!strcmp(mode, "openat64_2"))
		return check_fd(open_in_directory(path, 3), path, result);
	if (!strcmp(mode, "fopen"))
		return check_file(fopen(path, "rb"), path, result);
	if (!strcmp(mode, "fopen64"))
		return check_file(fopen64(path, "r"), path, result);
	if (!strcmp(mode, "fopen_e"))
		return check_file(fopen(path, "re"), path, result);
	if (!strcmp(mode, "freopen")) {
		file = tmpfile();
		return check_file(file ? freopen(path, "r", file) : NULL, path, result);
	}
	if (!strcmp(mode, "relative")) {
		snprintf(copy, sizeof(copy), "%s", path);
		if (chdir(dirname(copy)) != 0)
			return fail("chdir", path);
		snprintf(copy, sizeof(copy), "%s", path);
		fd = open(basename(copy), O_RDONLY);
		if (chdir("/") != 0)
			return fail("chdir", "/");
		return check_fd(fd, path, result);
	}
	if (!strcmp(mode, "fork_reuse"))
		return fork_reuse(path, result);
	if (!strcmp(mode, "rdwr"))
		return check_fd(open(path, O_RDWR), path, result);
	if (!strcmp(mode, "create")) {
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, "CREATED\n", 8) != 8 || close(fd) != 0)
			return fail("create", path);
		return check_fd(open(path, O_RDWR), path, result);
	}
	fprintf(stderr, "preload_probe: unknown mode %s\n", mode);
	return -1;
}

struct thread_work {
	char **paths;
	int count;
	int failures;
	struct result first[64];
};

/* Open every path 20 times with open and fopen; all reads of a path must agree. */
static void *thread_probe(void *arg)
{
	struct thread_work *work = arg;

	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < work->count && i < 64; i++) {
			struct result result;

			if (probe(round % 2 ? "fopen" : "open", work->paths[i], &result) != 0) {
				work->failures++;
				continue;
			}
			if (round == 0)
				work->first[i] = result;
			else if (result.sum != work->first[i].sum)
				work->failures++;
		}
	}
	return NULL;
}

static int run_threads(char **paths, int count)
{
	static struct thread_work work[4];
	pthread_t threads[4];
	int failures = 0;

	for (int t = 0; t < 4; t++) {
		work[t].paths = paths;
		work[t].count = count;
		pthread_create(&threads[t], NULL, thread_probe, &work[t]);
	}
	for (int t = 0; t < 4; t++) {
		pthread_join(threads[t], NULL);
		failures += work[t].failures;
	}
	for (int i = 0; i < count && i < 64; i++)
		printf("threads %s size=%zu sum=%016llx\n", work[0].first[i].first_line,
		       work[0].first[i].size, work[0].first[i].sum);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	int status = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: preload_probe MODE FILE...\n");
		return 2;
	}
	if (!strcmp(argv[1], "threads"))
		return run_threads(argv + 2, argc - 2);
	for (int i = 2; i < argc; i++) {
		struct result result;

		if (probe(argv[1], argv[i], &result) != 0) {
			status = 1;
			continue;
		}
		printf("%s %s size=%zu sum=%016llx\n", argv[1], result.first_line, result.size,
		       result.sum);
		fflush(stdout);
	}
	return status;
}
