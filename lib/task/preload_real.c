/*
 * The real functions behind the interposer's entry points, found with
 * dlsym(RTLD_NEXT) on first use, and the raw system call that stands in for
 * an open-family one while it cannot be resolved.
 */
#include "config.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload_real.h"

static const char *const real_names[REAL_COUNT] = {
	[REAL_OPEN] = "open",
	[REAL_OPEN64] = "open64",
	[REAL_OPENAT] = "openat",
	[REAL_OPENAT64] = "openat64",
	[REAL_OPEN_2] = "__open_2",
	[REAL_OPEN64_2] = "__open64_2",
	[REAL_OPENAT_2] = "__openat_2",
	[REAL_OPENAT64_2] = "__openat64_2",
	[REAL_FOPEN] = "fopen",
	[REAL_FOPEN64] = "fopen64",
	[REAL_FREOPEN] = "freopen",
	[REAL_FREOPEN64] = "freopen64",
	[REAL_OPENDIR] = "opendir",
	[REAL_FDOPENDIR] = "fdopendir",
	[REAL_READDIR] = "readdir",
	[REAL_READDIR64] = "readdir64",
	[REAL_READDIR_R] = "readdir_r",
	[REAL_READDIR64_R] = "readdir64_r",
	[REAL_REWINDDIR] = "rewinddir",
	[REAL_SEEKDIR] = "seekdir",
	[REAL_TELLDIR] = "telldir",
	[REAL_DIRFD] = "dirfd",
	[REAL_CLOSEDIR] = "closedir",
	[REAL_SCANDIR] = "scandir",
	[REAL_SCANDIR64] = "scandir64",
	[REAL_STAT] = "stat",
	[REAL_STAT64] = "stat64",
	[REAL_LSTAT] = "lstat",
	[REAL_LSTAT64] = "lstat64",
	[REAL_FSTATAT] = "fstatat",
	[REAL_FSTATAT64] = "fstatat64",
	[REAL_STATX] = "statx",
	[REAL_ACCESS] = "access",
	[REAL_FACCESSAT] = "faccessat",
	[REAL_REALPATH] = "realpath",
	[REAL_READLINK] = "readlink",
	[REAL_READLINKAT] = "readlinkat",
};

typedef int (*open_function)(const char *, int, ...);
typedef int (*openat_function)(int, const char *, int, ...);
typedef int (*open_2_function)(const char *, int);
typedef int (*openat_2_function)(int, const char *, int);

/* Resolved on first use; a race only stores the same value twice. */
static void *real_functions[REAL_COUNT];

void *nopfs_preload_real_function(enum real_function function, bool may_resolve)
{
	void *address = __atomic_load_n(&real_functions[function], __ATOMIC_ACQUIRE);

	if (!address && may_resolve) {
		address = dlsym(RTLD_NEXT, real_names[function]);
		__atomic_store_n(&real_functions[function], address, __ATOMIC_RELEASE);
	}
	return address;
}

int nopfs_preload_real_open(enum real_function function, bool may_resolve, int dirfd,
                            const char *path, int flags, mode_t mode)
{
	void *real = nopfs_preload_real_function(function, may_resolve);

	switch (real ? function : REAL_COUNT) {
	case REAL_OPEN:
	case REAL_OPEN64:
		return ((open_function)real)(path, flags, mode);
	case REAL_OPENAT:
	case REAL_OPENAT64:
		return ((openat_function)real)(dirfd, path, flags, mode);
	case REAL_OPEN_2:
	case REAL_OPEN64_2:
		return ((open_2_function)real)(path, flags);
	case REAL_OPENAT_2:
	case REAL_OPENAT64_2:
		return ((openat_2_function)real)(dirfd, path, flags);
	default:
		return (int)syscall(SYS_openat, dirfd, path, flags, mode);
	}
}

int nopfs_preload_real_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	return nopfs_preload_real_open(REAL_OPENAT, true, dirfd, path, flags, mode);
}
