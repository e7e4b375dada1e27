/*
 * nopfs-pfs names and metadata: each operation works on the node's name in
 * its directory beneath SOURCE (paths.c), never following a last symbolic
 * link. The kernel checked the caller's permissions (default_permissions);
 * the daemon, root, then does the operation and gives what it creates to
 * the caller. An open directory's handle (fi->fh) is its DIR stream.
 */
#include "pfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int pfs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	const char *name;
	int dir_fd, rc = 0;

	pfs_metadata(PFS_META_GETATTR);
	if (fi != NULL) {
		if (fstat((int)fi->fh, st) != 0)
			return -errno;
	} else {
		rc = pfs_parent_open(path, &dir_fd, &name);
		if (rc != 0)
			return rc;
		if (fstatat(dir_fd, name, st, AT_SYMLINK_NOFOLLOW) != 0)
			rc = -errno;
		pfs_parent_close(dir_fd);
	}
	/* Read-only: show no write permission. */
	if (rc == 0 && pfs.read_only)
		st->st_mode &= ~(mode_t)(S_IWUSR | S_IWGRP | S_IWOTH);
	return rc;
}

/* Only asked without default_permissions: answers as for root, as it acts. */
int pfs_access(const char *path, int mask)
{
	const char *name;
	int dir_fd, rc;

	pfs_metadata(PFS_META_ACCESS);
	if (pfs.read_only && (mask & W_OK) != 0)
		return -EROFS;
	rc = pfs_parent_open(path, &dir_fd, &name);
	if (rc != 0)
		return rc;
	if (faccessat(dir_fd, name, mask, AT_SYMLINK_NOFOLLOW) != 0)
		rc = -errno;
	pfs_parent_close(dir_fd);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Directories */

int pfs_opendir(const char *path, struct fuse_file_info *fi)
{
	int fd, saved;
	DIR *dir;

	pfs_metadata(PFS_META_OPENDIR);
	fd = pfs_open_beneath(path, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	dir = fdopendir(fd);
	if (dir == NULL) {
		saved = errno;
		close(fd);
		return -saved;
	}
	fi->fh = (uint64_t)(uintptr_t)dir;
	return 0;
}

static DIR *handle_dir(const struct fuse_file_info *fi)
{
	return (DIR *)(uintptr_t)fi->fh;
}

/*
 * The whole directory at once (offsets 0: libfuse keeps the listing for
 * the calls that continue it); from its start again after a rewinddir.
 */
int pfs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t offset,
                struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	DIR *dir = handle_dir(fi);
	struct dirent *entry;
	struct stat st;

	pfs_metadata(PFS_META_READDIR);
	rewinddir(dir);
	errno = 0;
	while ((entry = readdir(dir)) != NULL) {
		memset(&st, 0, sizeof(st));
		st.st_ino = entry->d_ino;
		st.st_mode = (mode_t)(entry->d_type << 12);
		/* Full: libfuse keeps its own error. */
		if (filler(buf, entry->d_name, &st, 0, 0) != 0)
			return 0;
		errno = 0;
	}
	return -errno;
}

int pfs_releasedir(const char *path, struct fuse_file_info *fi)
{
	closedir(handle_dir(fi));
	return 0;
}

int pfs_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
	int fd = dirfd(handle_dir(fi));
	int rc = datasync ? fdatasync(fd) : fsync(fd);

	return rc == 0 ? 0 : -errno;
}

/* ------------------------------------------------------------------------ */
/* New nodes */

/* @name was just made in @dir_fd: give it to the caller, or remove it. */
static int give_or_remove(int dir_fd, const char *name, int unlink_flags)
{
	int rc = pfs_give_to_caller(dir_fd, name);

	if (rc != 0)
		unlinkat(dir_fd, name, unlink_flags);
	return rc;
}

int pfs_mknod(const char *path, mode_t mode, dev_t rdev)
{
	const char *name;
	int dir_fd, rc;

	if (pfs.read_only)
		return -EROFS;
	rc = pfs_parent_open(path, &dir_fd, &name);
	if (rc != 0)
		return rc;
	if (mknodat(dir_fd, name, mode & (S_IFMT | 07777), rdev) != 0)
		rc = -errno;
	else
		rc = give_or_remove(dir_fd, name, 0);
	pfs_parent_close(dir_fd);
	return rc;
}

int pfs_mkdir(const char *path, mode_t mode)
{
	const char *name;
	int dir_fd, rc;

	if (pfs.read_only)
		return -EROFS;
	rc = pfs_parent_open(path, &dir_fd, &name);
	if (rc != 0)
		return rc;
	if (mkdirat(dir_fd, name, mode & 07777) != 0)
		rc = -errno;
	else
		rc = give_or_remove(dir_fd, name, AT_REMOVEDIR);
	pfs_parent_close(dir_fd);
	return rc;
}

int pfs_symlink(const char *target, const char *path)
{
	const char *name;
	int dir_fd, rc;

	if (pfs.read_only)
		return -EROFS;
	rc = pfs_parent_open(path, &dir_fd, &name);
	if (rc != 0)
		return rc;
	if (symlinkat(target, dir_fd, name) != 0)
		rc = -errno;
	else
		rc = give_or_remove(dir_fd, name, 0);
	pfs_parent_close(dir_fd);
	return rc;
}

int pfs_readlink(const char *path, char *buf, size_t size)
{
	const char *name;
	int dir_fd, rc;
	ssize_t length;

	pfs_metadata(PFS_META_READLINK);
	rc = pfs_parent_open(path, &dir_fd, &name);
	if (rc != 0)
		return rc;
	length = readlinkat(dir_fd, name, buf, size - 1);
	if (length < 0)
		rc = -errno;
	else
		buf[length] = '\0';
	pfs_parent_close(dir_fd);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Names */

/* Remove @path's name: unlinkat(2) with @flags (0, or AT_REMOVEDIR). */
static int remove_name(const char *path, int flags)
{
	const char *name;
	int dir_fd, rc;

	if (pfs.read_only)
		return -EROFS;
	rc = pfs_parent_open(path, &dir_fd, &name);
	if (rc != 0)
		return rc;
	if (unlinkat(dir_fd, name, flags) != 0)
		rc = -errno;
	pfs_parent_close(dir_fd);
	return rc;
}

int pfs_unlink(const char *path)
{
	return remove_name(path, 0);
}

int pfs_rmdir(const char *path)
{
	return remove_name(path, AT_REMOVEDIR);
}

/* A hard link @to of @from. */
int pfs_link(const char *from, const char *to)
{
	const char *from_name, *to_name;
	int from_dir, to_dir, rc;

	if (pfs.read_only)
		return -EROFS;
	rc = pfs_parent_open(from, &from_dir, &from_name);
	if (rc != 0)
		return rc;
	rc = pfs_parent_open(to, &to_dir, &to_name);
	if (rc != 0)
		goto out_from;
	if (linkat(from_dir, from_name, to_dir, to_name, 0) != 0)
		rc = -errno;
	pfs_parent_close(to_dir);
out_from:
	pfs_parent_close(from_dir);
	return rc;
}

/* @flags: renameat2(2)'s (RENAME_NOREPLACE, RENAME_EXCHANGE), passed on. */
int pfs_rename(const char *from, const char *to, unsigned int flags)
{
	const char *from_name, *to_name;
	int from_dir, to_dir, rc;

	if (pfs.read_only)
		return -EROFS;
	rc = pfs_parent_open(from, &from_dir, &from_name);
	if (rc != 0)
		return rc;
	rc = pfs_parent_open(to, &to_dir, &to_name);
	if (rc != 0)
		goto out_from;
	if (renameat2(from_dir, from_name, to_dir, to_name, flags) != 0)
		rc = -errno;
	pfs_parent_close(to_dir);
out_from:
	pfs_parent_close(from_dir);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Attributes (fi: an open file's, else by name) */

int pfs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	const char *name;
	int dir_fd, rc;

	if (pfs.read_only)
		return -EROFS;
	if (fi != NULL)
		return fchmod((int)fi->fh, mode & 07777) == 0 ? 0 : -errno;
	rc = pfs_parent_open(path, &dir_fd, &name);
	if (rc != 0)
		return rc;
	/* glibc does it through an O_PATH fd: a symbolic link is refused. */
	if (fchmodat(dir_fd, name, mode & 07777, AT_SYMLINK_NOFOLLOW) != 0)
		rc = -errno;
	pfs_parent_close(dir_fd);
	return rc;
}

int pfs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	const char *name;
	int dir_fd, rc;

	if (pfs.read_only)
		return -EROFS;
	if (fi != NULL)
		return fchown((int)fi->fh, uid, gid) == 0 ? 0 : -errno;
	rc = pfs_parent_open(path, &dir_fd, &name);
	if (rc != 0)
		return rc;
	if (fchownat(dir_fd, name, uid, gid, AT_SYMLINK_NOFOLLOW) != 0)
		rc = -errno;
	pfs_parent_close(dir_fd);
	return rc;
}

int pfs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	const char *name;
	int dir_fd, rc;

	if (pfs.read_only)
		return -EROFS;
	if (fi != NULL)
		return futimens((int)fi->fh, tv) == 0 ? 0 : -errno;
	rc = pfs_parent_open(path, &dir_fd, &name);
	if (rc != 0)
		return rc;
	if (utimensat(dir_fd, name, tv, AT_SYMLINK_NOFOLLOW) != 0)
		rc = -errno;
	pfs_parent_close(dir_fd);
	return rc;
}

int pfs_statfs(const char *path, struct statvfs *st)
{
	if (fstatvfs(pfs.root_fd, st) != 0)
		return -errno;
	return 0;
}
