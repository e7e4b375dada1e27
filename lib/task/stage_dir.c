/* The task's handle on its staging directory, checked before any use. */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stage_dir.h"
#include "common/private.h"

/* Open dir->path after checking it, recording its identity. */
static nopfs_status open_checked(struct nopfs_stage_dir *dir, const char **why)
{
	struct stat st;
	nopfs_status status;
	int fd;

	status = nopfs_private_dir_open(dir->path, &fd, &st, why);
	if (status != NOPFS_OK)
		return status;
	dir->fd = fd;
	dir->device = st.st_dev;
	dir->inode = st.st_ino;
	return NOPFS_OK;
}

nopfs_status nopfs_stage_dir_open(struct nopfs_stage_dir *dir, const char *path, const char **why)
{
	size_t length = path ? strlen(path) : 0;

	dir->path[0] = '\0';
	dir->fd = -1;
	if (length == 0) {
		*why = "no staging directory";
		return NOPFS_ERR_NOT_FOUND;
	}
	if (length >= sizeof(dir->path)) {
		*why = "path too long";
		return NOPFS_ERR_INVALID;
	}
	memcpy(dir->path, path, length + 1);
	return open_checked(dir, why);
}

bool nopfs_stage_dir_is_current(const struct nopfs_stage_dir *dir)
{
	int saved_errno = errno;
	struct stat st;
	bool current;

	current = dir->fd >= 0 && fstat(dir->fd, &st) == 0 && S_ISDIR(st.st_mode) &&
	          st.st_dev == dir->device && st.st_ino == dir->inode;
	errno = saved_errno;
	return current;
}

nopfs_status nopfs_stage_dir_reopen(struct nopfs_stage_dir *dir, const char **why)
{
	if (nopfs_stage_dir_is_current(dir))
		return NOPFS_OK;
	dir->fd = -1;
	if (!dir->path[0]) {
		*why = "no staging directory";
		return NOPFS_ERR_NOT_FOUND;
	}
	return open_checked(dir, why);
}

nopfs_status nopfs_stage_dir_openat(const struct nopfs_stage_dir *dir, const char *name, int flags,
                                    int64_t size, int *fd, const char **why)
{
	if (dir->fd < 0) {
		*why = "no trusted staging directory";
		return NOPFS_ERR_NOT_FOUND;
	}
	return nopfs_private_file_openat(dir->fd, name, flags, size, fd, why);
}

void nopfs_stage_dir_close(struct nopfs_stage_dir *dir)
{
	if (nopfs_stage_dir_is_current(dir))
		close(dir->fd);
	dir->fd = -1;
}
