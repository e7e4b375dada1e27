/*
 * nopfs-pfs file contents. An open file's handle (fi->fh) is the fd of the
 * file beneath SOURCE. Every open and create is counted and carries the
 * latency; --fail makes the opens of matching paths fail with EIO. Reads
 * are paced by the bandwidth curve; writes are counted and carry the
 * latency only. All files are direct_io (see mount.c).
 */
#include "pfs.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/clock.h"

/*
 * The open(2) flags that reach the file beneath SOURCE. Not O_DIRECT (its
 * alignment rules are the caller's business with the mount, not with the
 * backing filesystem), nor flags for the kernel only (e.g. exec's).
 */
#define PASSED_FLAGS (O_ACCMODE | O_APPEND | O_TRUNC | O_SYNC | O_DSYNC)

static bool opens_for_writing(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC) != 0;
}

/* Count an open by the caller and wait the latency; -EIO if --fail matches. */
static int admit_open(const char *path)
{
	bool failed = pfs_path_fails(path);

	pfs_count_open(pfs_caller_netns(), failed);
	if (pfs.latency > 0)
		pfs_sleep_until(nopfs_clock_seconds() + pfs.latency);
	return failed ? -EIO : 0;
}

int pfs_open(const char *path, struct fuse_file_info *fi)
{
	int rc, fd;

	if (pfs.read_only && opens_for_writing(fi->flags))
		return -EROFS;
	rc = admit_open(path);
	if (rc != 0)
		return rc;
	fd = pfs_open_beneath(path, fi->flags & PASSED_FLAGS, 0);
	if (fd < 0)
		return fd;
	fi->fh = (uint64_t)fd;
	fi->direct_io = 1;
	return 0;
}

/*
 * The kernel asks to create only names it found missing: O_EXCL makes sure
 * the file given to the caller is the one made here.
 */
int pfs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	const char *name;
	int rc, dir_fd, fd;

	if (pfs.read_only)
		return -EROFS;
	rc = admit_open(path);
	if (rc != 0)
		return rc;
	rc = pfs_parent_open(path, &dir_fd, &name);
	if (rc != 0)
		return rc;
	fd = openat(dir_fd, name,
	            (fi->flags & PASSED_FLAGS) | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	            mode & 07777);
	if (fd < 0) {
		rc = -errno;
		goto out_parent;
	}
	rc = pfs_give_to_caller(dir_fd, name);
	if (rc != 0) {
		close(fd);
		unlinkat(dir_fd, name, 0);
		goto out_parent;
	}
	fi->fh = (uint64_t)fd;
	fi->direct_io = 1;
out_parent:
	pfs_parent_close(dir_fd);
	return rc;
}

int pfs_read(const char *path, char *buf, size_t size, off_t offset, struct fuse_file_info *fi)
{
	uint64_t netns = pfs_caller_netns();
	double start = nopfs_clock_seconds();
	ssize_t got;

	got = pread((int)fi->fh, buf, size, offset);
	if (got < 0)
		return -errno;
	pfs_sleep_until(pfs_admit_read(netns, (size_t)got, start));
	return (int)got;
}

/*
 * A write by an unprivileged caller clears set-user-ID (and set-group-ID
 * of a group-executable file) as a local filesystem does; the daemon
 * writes as root, which would keep them.
 */
static void clear_set_id(int fd)
{
	struct stat st;
	mode_t mode;

	if (fuse_get_context()->uid == 0 || fstat(fd, &st) != 0)
		return;
	mode = st.st_mode & 07777;
	mode &= ~(mode_t)S_ISUID;
	if ((mode & S_IXGRP) != 0)
		mode &= ~(mode_t)S_ISGID;
	if (mode != (st.st_mode & 07777))
		fchmod(fd, mode);
}

int pfs_write(const char *path, const char *buf, size_t size, off_t offset,
              struct fuse_file_info *fi)
{
	uint64_t netns = pfs_caller_netns();
	double start = nopfs_clock_seconds();
	ssize_t put;

	if (pfs.read_only)
		return -EROFS;
	clear_set_id((int)fi->fh);
	put = pwrite((int)fi->fh, buf, size, offset);
	if (put < 0)
		return -errno;
	pfs_sleep_until(pfs_admit_write(netns, (size_t)put, start));
	return (int)put;
}

int pfs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	int fd, rc = 0;

	if (pfs.read_only)
		return -EROFS;
	if (fi != NULL)
		return ftruncate((int)fi->fh, size) == 0 ? 0 : -errno;
	fd = pfs_open_beneath(path, O_WRONLY | O_NONBLOCK, 0);
	if (fd < 0)
		return fd;
	if (ftruncate(fd, size) != 0)
		rc = -errno;
	close(fd);
	return rc;
}

int pfs_fallocate(const char *path, int mode, off_t offset, off_t length, struct fuse_file_info *fi)
{
	if (pfs.read_only)
		return -EROFS;
	if (fi == NULL)
		return -EOPNOTSUPP;
	return fallocate((int)fi->fh, mode, offset, length) == 0 ? 0 : -errno;
}

/* close(2) on the mount: report what closing the file beneath would. */
int pfs_flush(const char *path, struct fuse_file_info *fi)
{
	int fd = dup((int)fi->fh);

	if (fd < 0)
		return -errno;
	return close(fd) == 0 ? 0 : -errno;
}

int pfs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	int rc = datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh);

	return rc == 0 ? 0 : -errno;
}

int pfs_release(const char *path, struct fuse_file_info *fi)
{
	close((int)fi->fh);
	return 0;
}
