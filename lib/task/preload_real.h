/*
 * The real functions the interposer (preload.c) stands in front of, for the
 * interposer's own use. Like preload.h, nothing here allocates with malloc.
 */
#ifndef NOPFS_PRELOAD_REAL_H
#define NOPFS_PRELOAD_REAL_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* The interposed functions. */
enum real_function {
	REAL_OPEN,
	REAL_OPEN64,
	REAL_OPENAT,
	REAL_OPENAT64,
	REAL_OPEN_2,
	REAL_OPEN64_2,
	REAL_OPENAT_2,
	REAL_OPENAT64_2,
	REAL_FOPEN,
	REAL_FOPEN64,
	REAL_FREOPEN,
	REAL_FREOPEN64,
	/* preload_meta.c */
	REAL_OPENDIR,
	REAL_FDOPENDIR,
	REAL_READDIR,
	REAL_READDIR64,
	REAL_READDIR_R,
	REAL_READDIR64_R,
	REAL_REWINDDIR,
	REAL_SEEKDIR,
	REAL_TELLDIR,
	REAL_DIRFD,
	REAL_CLOSEDIR,
	REAL_SCANDIR,
	REAL_SCANDIR64,
	REAL_STAT,
	REAL_STAT64,
	REAL_LSTAT,
	REAL_LSTAT64,
	REAL_FSTATAT,
	REAL_FSTATAT64,
	REAL_STATX,
	REAL_ACCESS,
	REAL_FACCESSAT,
	REAL_REALPATH,
	REAL_READLINK,
	REAL_READLINKAT,
	REAL_COUNT,
};

/* The types of the real stdio ones, for their callers. */
typedef FILE *(*fopen_function)(const char *, const char *);
typedef FILE *(*freopen_function)(const char *, const char *, FILE *);

/*
 * The real @function, resolving it when needed and allowed: NULL while nested
 * inside the interposer on this thread (dlsym may be what called us).
 */
void *nopfs_preload_real_function(enum real_function function, bool may_resolve);

/* The real open-family call @function, or the raw system call it makes. */
int nopfs_preload_real_open(enum real_function function, bool may_resolve, int dirfd,
                            const char *path, int flags, mode_t mode);

/* The real openat(), for the interposer's own opens. */
int nopfs_preload_real_openat(int dirfd, const char *path, int flags, mode_t mode);

#endif
