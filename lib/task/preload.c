/*
 * The interposer's entry points: open, open64, openat, openat64, their
 * _FORTIFY_SOURCE variants (__open_2, ...), fopen, fopen64, freopen and
 * freopen64. Each forwards to preload_serve.c for read-only opens and falls
 * back to the real function (preload_real.c) for everything else.
 *
 * Recursion: a thread-local flag is set while the interposer works; an
 * interposed call made meanwhile on that thread (by dlsym, malloc, a signal
 * handler) goes straight to the real function, or to the raw system call
 * while the real function is still being resolved.
 */
#include "config.h"

/* This file defines open and open64 both, as themselves. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"
#include "preload_real.h"

/* Declared by glibc only under _FORTIFY_SOURCE. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

/* Set while this thread is inside the interposer. Initial-exec: no malloc. */
__thread int nopfs_preload_busy __attribute__((tls_model("initial-exec")));
#define in_interposer nopfs_preload_busy

/* Every open-family entry point ends here. */
static int interpose_open(enum real_function function, int dirfd, const char *path, int flags,
                          mode_t mode)
{
	int saved_errno = errno;
	int fd;

	if (in_interposer)
		return nopfs_preload_real_open(function, false, dirfd, path, flags, mode);
	in_interposer = 1;
	fd = nopfs_preload_serve(dirfd, path, flags);
	if (fd < 0) {
		errno = saved_errno;
		fd = nopfs_preload_real_open(function, true, dirfd, path, flags, mode);
	}
	in_interposer = 0;
	return fd;
}

/* The mode argument after @flags, present only when the flags need it. */
#define OPEN_MODE(flags, mode)                       \
	do {                                         \
		if (__OPEN_NEEDS_MODE(flags)) {      \
			va_list args;                \
			va_start(args, flags);       \
			mode = va_arg(args, mode_t); \
			va_end(args);                \
		}                                    \
	} while (0)

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	return interpose_open(REAL_OPEN, AT_FDCWD, path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	return interpose_open(REAL_OPEN64, AT_FDCWD, path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	return interpose_open(REAL_OPENAT, dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	return interpose_open(REAL_OPENAT64, dirfd, path, flags, mode);
}

int __open_2(const char *path, int flags)
{
	return interpose_open(REAL_OPEN_2, AT_FDCWD, path, flags, 0);
}

int __open64_2(const char *path, int flags)
{
	return interpose_open(REAL_OPEN64_2, AT_FDCWD, path, flags, 0);
}

int __openat_2(int dirfd, const char *path, int flags)
{
	return interpose_open(REAL_OPENAT_2, dirfd, path, flags, 0);
}

int __openat64_2(int dirfd, const char *path, int flags)
{
	return interpose_open(REAL_OPENAT64_2, dirfd, path, flags, 0);
}

/*
 * The open flags of an fopen() @mode, and whether it only reads: "r"
 * followed by any of b (binary), e (close-on-exec), m (mmap), c (no
 * cancellation). Anything else ("+", "x", ",ccs=") is not served.
 */
static bool mode_only_reads(const char *mode, int *flags)
{
	int result = O_RDONLY;

	if (!mode || mode[0] != 'r')
		return false;
	for (const char *c = mode + 1; *c; c++) {
		if (*c == 'e')
			result |= O_CLOEXEC;
		else if (*c != 'b' && *c != 'm' && *c != 'c')
			return false;
	}
	*flags = result;
	return true;
}

/*
 * fopen() without the real one (nested while it is being resolved): the raw
 * system call and fdopen(), for the modes a program may use so early.
 */
static FILE *fopen_raw(const char *path, const char *mode)
{
	int flags = 0;
	FILE *file;
	int fd;

	if (!mode || !strchr("rwa", mode[0])) {
		errno = EINVAL;
		return NULL;
	}
	if (strchr(mode, '+'))
		flags = O_RDWR;
	else if (mode[0] != 'r')
		flags = O_WRONLY;
	if (mode[0] == 'w')
		flags |= O_CREAT | O_TRUNC;
	if (mode[0] == 'a')
		flags |= O_CREAT | O_APPEND;
	if (strchr(mode, 'x'))
		flags |= O_EXCL;
	if (strchr(mode, 'e'))
		flags |= O_CLOEXEC;
	fd = (int)syscall(SYS_openat, AT_FDCWD, path, flags, 0666);
	if (fd < 0)
		return NULL;
	file = fdopen(fd, mode);
	if (!file) {
		int saved_errno = errno;

		close(fd);
		errno = saved_errno;
	}
	return file;
}

static FILE *interpose_fopen(enum real_function function, const char *path, const char *mode)
{
	int saved_errno = errno;
	fopen_function real;
	FILE *file = NULL;
	int flags;
	int fd;

	if (in_interposer) {
		real = (fopen_function)nopfs_preload_real_function(function, false);
		return real ? real(path, mode) : fopen_raw(path, mode);
	}
	in_interposer = 1;
	if (mode_only_reads(mode, &flags)) {
		fd = nopfs_preload_serve(AT_FDCWD, path, flags);
		if (fd >= 0) {
			file = fdopen(fd, mode);
			if (!file)
				close(fd);
		}
	}
	errno = saved_errno;
	if (!file) {
		real = (fopen_function)nopfs_preload_real_function(function, true);
		file = real ? real(path, mode) : fopen_raw(path, mode);
	}
	in_interposer = 0;
	return file;
}

FILE *fopen(const char *path, const char *mode)
{
	return interpose_fopen(REAL_FOPEN, path, mode);
}

FILE *fopen64(const char *path, const char *mode)
{
	return interpose_fopen(REAL_FOPEN64, path, mode);
}

/*
 * freopen() of a served file reopens the stream on /proc/self/fd/N of the
 * served descriptor; without /proc, or without the real freopen, it is not
 * served.
 */
static FILE *interpose_freopen(enum real_function function, const char *path, const char *mode,
                               FILE *stream)
{
	int saved_errno = errno;
	freopen_function real;
	char proc_path[64];
	FILE *file = NULL;
	int flags;
	int fd;

	real = (freopen_function)nopfs_preload_real_function(function, !in_interposer);
	if (!real) {
		errno = ENOSYS;
		return NULL;
	}
	if (in_interposer || !path)
		return real(path, mode, stream);
	in_interposer = 1;
	if (mode_only_reads(mode, &flags) && nopfs_preload_can_reopen()) {
		fd = nopfs_preload_serve(AT_FDCWD, path, flags);
		if (fd >= 0) {
			snprintf(proc_path, sizeof(proc_path), "/proc/self/fd/%d", fd);
			errno = saved_errno;
			file = real(proc_path, mode, stream);
			close(fd);
			in_interposer = 0;
			return file;
		}
	}
	errno = saved_errno;
	file = real(path, mode, stream);
	in_interposer = 0;
	return file;
}

FILE *freopen(const char *path, const char *mode, FILE *stream)
{
	return interpose_freopen(REAL_FREOPEN, path, mode, stream);
}

FILE *freopen64(const char *path, const char *mode, FILE *stream)
{
	return interpose_freopen(REAL_FREOPEN64, path, mode, stream);
}

/* The child of a fork() must never share the parent's agent connection. */
static void after_fork_child(void)
{
	nopfs_preload_forget_after_fork();
}

__attribute__((constructor)) static void preload_init(void)
{
	pthread_atfork(NULL, NULL, after_fork_child);
}

__attribute__((destructor)) static void preload_fini(void)
{
	in_interposer = 1;
	nopfs_preload_report();
	in_interposer = 0;
}
