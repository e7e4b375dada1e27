/* Opening directories and files in shared places after checking who owns them. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "private.h"

/* The raw system call: an interposer in this process must not see it. */
static int raw_openat(int dirfd, const char *path, int flags)
{
	return (int)syscall(SYS_openat, dirfd, path, flags, 0);
}

nopfs_status nopfs_private_dir_open(const char *path, int *fd, struct stat *st, const char **why)
{
	nopfs_status status = NOPFS_ERR_PERMISSION;
	struct stat own;
	int dir;

	if (!st)
		st = &own;
	dir = raw_openat(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0) {
		*why = errno == ELOOP ? "is a symbolic link" : "cannot open the directory";
		return errno == ENOENT                      ? NOPFS_ERR_NOT_FOUND
		       : errno == ELOOP || errno == ENOTDIR ? NOPFS_ERR_PERMISSION
		                                            : NOPFS_ERR_IO;
	}
	if (fstat(dir, st) != 0) {
		*why = "cannot stat the directory";
		status = NOPFS_ERR_IO;
	} else if (st->st_uid != geteuid()) {
		*why = "is owned by another user";
	} else if (st->st_mode & 077) {
		*why = "is open to other users (mode is not 0700)";
	} else {
		*fd = dir;
		return NOPFS_OK;
	}
	close(dir);
	return status;
}

/* Check the file open on @fd: regular, ours, of @size bytes unless -1. */
static nopfs_status check_file(int fd, int64_t size, const char **why)
{
	struct stat st;

	if (fstat(fd, &st) != 0) {
		*why = "cannot stat the file";
		return NOPFS_ERR_IO;
	}
	if (!S_ISREG(st.st_mode)) {
		*why = "is not a regular file";
		return NOPFS_ERR_PERMISSION;
	}
	if (st.st_uid != geteuid()) {
		*why = "is owned by another user";
		return NOPFS_ERR_PERMISSION;
	}
	if (size != -1 && st.st_size != size) {
		*why = "does not have the expected size";
		return NOPFS_ERR_PERMISSION;
	}
	return NOPFS_OK;
}

nopfs_status nopfs_private_file_openat(int dirfd, const char *name, int flags, int64_t size,
                                       int *fd, const char **why)
{
	nopfs_status status;
	int file;

	file = raw_openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | flags);
	if (file < 0) {
		*why = errno == ELOOP ? "is a symbolic link" : "cannot open the file";
		return errno == ENOENT  ? NOPFS_ERR_NOT_FOUND
		       : errno == ELOOP ? NOPFS_ERR_PERMISSION
		                        : NOPFS_ERR_IO;
	}
	status = check_file(file, size, why);
	/* F_SETFL takes only the status flags (O_NOATIME, O_NONBLOCK) of these. */
	if (status == NOPFS_OK && !(flags & O_NONBLOCK) && fcntl(file, F_SETFL, flags) != 0) {
		*why = "cannot clear O_NONBLOCK";
		status = NOPFS_ERR_IO;
	}
	if (status != NOPFS_OK) {
		close(file);
		return status;
	}
	*fd = file;
	return NOPFS_OK;
}
