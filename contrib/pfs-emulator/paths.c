/*
 * nopfs-pfs paths: every path FUSE gives is looked up beneath SOURCE's fd,
 * never through a symbolic link that leads out of it (openat2's
 * RESOLVE_BENEATH), and its last component is never followed. The kernel
 * resolves the symbolic links of the mount itself (it reads them with
 * readlink), so a path from FUSE names a node of the tree as it is.
 */
#include "pfs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

const char *pfs_relative(const char *path)
{
	while (*path == '/')
		path++;
	return *path == '\0' ? "." : path;
}

/* openat2(2) relative to SOURCE (glibc 2.36 has no wrapper). */
static int open_under_root(const char *relative, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(unsigned int)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) != 0 ? (uint64_t)(mode & 07777) : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	long fd;
	int tries = 0;

	/* EAGAIN: a rename raced with the lookup; it is safe to try again. */
	do
		fd = syscall(SYS_openat2, pfs.root_fd, relative, &how, sizeof(how));
	while (fd < 0 && errno == EAGAIN && ++tries < 16);
	return fd < 0 ? -errno : (int)fd;
}

int pfs_open_beneath(const char *path, int flags, mode_t mode)
{
	return open_under_root(pfs_relative(path), flags | O_NOFOLLOW, mode);
}

int pfs_parent_open(const char *path, int *dir_fd, const char **name)
{
	const char *relative = pfs_relative(path), *slash = strrchr(relative, '/');
	char *parent;
	int fd;

	if (slash == NULL) {
		*dir_fd = pfs.root_fd;
		*name = relative;
		return 0;
	}
	parent = strndup(relative, (size_t)(slash - relative));
	if (parent == NULL)
		return -ENOMEM;
	fd = open_under_root(parent, O_PATH | O_DIRECTORY, 0);
	free(parent);
	if (fd < 0)
		return fd;
	*dir_fd = fd;
	*name = slash + 1;
	return 0;
}

void pfs_parent_close(int dir_fd)
{
	if (dir_fd != pfs.root_fd)
		close(dir_fd);
}

int pfs_give_to_caller(int dir_fd, const char *name)
{
	struct fuse_context *context = fuse_get_context();
	struct stat dir;
	gid_t gid = context->gid;

	if (fstat(dir_fd, &dir) != 0)
		return -errno;
	if ((dir.st_mode & S_ISGID) != 0)
		gid = (gid_t)-1;
	if (fchownat(dir_fd, name, context->uid, gid, AT_SYMLINK_NOFOLLOW) != 0)
		return -errno;
	return 0;
}
