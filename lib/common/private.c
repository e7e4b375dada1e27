/* Private places in shared directories: made, and opened after checking who owns them. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "private.h"

/* The raw system call: an interposer in this process must not see it. */
static int raw_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	return (int)syscall(SYS_openat, dirfd, path, flags, mode);
}

bool nopfs_private_file_is(const char *path, uid_t uid)
{
	struct stat st;

	return lstat(path, &st) == 0 && nopfs_private_file_stat_is(&st, uid);
}

bool nopfs_private_file_stat_is(const struct stat *st, uid_t uid)
{
	return S_ISREG(st->st_mode) && st->st_uid == uid;
}

bool nopfs_private_dir_is(const struct stat *st, uid_t uid)
{
	return S_ISDIR(st->st_mode) && st->st_uid == uid && (st->st_mode & 077) == 0;
}

static nopfs_status dir_open(const char *path, uid_t uid, int *fd, struct stat *st,
                             const char **why)
{
	nopfs_status status = NOPFS_ERR_PERMISSION;
	struct stat own;
	int dir;

	if (!st)
		st = &own;
	dir = raw_openat(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (dir < 0) {
		*why = errno == ELOOP ? "is a symbolic link" : "cannot open the directory";
		return errno == ENOENT                      ? NOPFS_ERR_NOT_FOUND
		       : errno == ELOOP || errno == ENOTDIR ? NOPFS_ERR_PERMISSION
		                                            : NOPFS_ERR_IO;
	}
	if (fstat(dir, st) != 0) {
		*why = "cannot stat the directory";
		status = NOPFS_ERR_IO;
	} else if (st->st_uid != uid) {
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

/* Check the file open on @fd: regular, of @uid, of @size bytes unless -1. */
static nopfs_status check_file(int fd, uid_t uid, int64_t size, const char **why)
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
	if (st.st_uid != uid) {
		*why = "is owned by another user";
		return NOPFS_ERR_PERMISSION;
	}
	if (size != -1 && st.st_size != size) {
		*why = "does not have the expected size";
		return NOPFS_ERR_PERMISSION;
	}
	return NOPFS_OK;
}

static nopfs_status file_open(int dirfd, const char *name, int flags, mode_t mode, uid_t uid,
                              int64_t size, int *fd, const char **why)
{
	nopfs_status status;
	int file;

	file = raw_openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
	if (file < 0) {
		*why = errno == ELOOP ? "is a symbolic link" : "cannot open the file";
		return errno == ENOENT  ? NOPFS_ERR_NOT_FOUND
		       : errno == ELOOP ? NOPFS_ERR_PERMISSION
		                        : NOPFS_ERR_IO;
	}
	status = check_file(file, uid, size, why);
	/* F_SETFL takes only the status flags (O_APPEND, O_NOATIME, O_NONBLOCK) of these. */
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

nopfs_status nopfs_private_dir_open(const char *path, int *fd, struct stat *st, const char **why)
{
	return dir_open(path, geteuid(), fd, st, why);
}

nopfs_status nopfs_private_file_openat(int dirfd, const char *name, int flags, int64_t size,
                                       int *fd, const char **why)
{
	return file_open(dirfd, name, O_RDONLY | flags, 0, geteuid(), size, fd, why);
}

/* The fd of a status's open, or -1 with errno EPERM when not private. */
static int fd_or_errno(nopfs_status status, int fd)
{
	if (status == NOPFS_OK)
		return fd;
	if (status == NOPFS_ERR_PERMISSION)
		errno = EPERM;
	return -1;
}

int nopfs_private_dir_open_for(const char *path, uid_t uid)
{
	const char *why;
	int fd = -1;
	nopfs_status status = dir_open(path, uid, &fd, NULL, &why);

	return fd_or_errno(status, fd);
}

int nopfs_private_file_open_for(int dirfd, const char *name, int flags, mode_t mode, uid_t uid)
{
	const char *why;
	int fd = -1;
	nopfs_status status = file_open(dirfd, name, flags, mode, uid, -1, &fd, &why);

	return fd_or_errno(status, fd);
}

nopfs_status nopfs_private_dir_make(const char *path, bool *made)
{
	struct stat st;

	*made = false;
	if (mkdir(path, 0700) == 0) {
		*made = true;
		return NOPFS_OK;
	}
	if (errno != EEXIST)
		return nopfs_status_from_errno(errno);
	if (lstat(path, &st) != 0)
		return nopfs_status_from_errno(errno);
	if (!nopfs_private_dir_is(&st, geteuid())) {
		errno = EPERM;
		return NOPFS_ERR_PERMISSION;
	}
	return NOPFS_OK;
}
const char *nopfs_fs_shared_name(unsigned long type)
{
	static const struct {
		unsigned long type;
		const char *name;
	} shared[] = {
		{ 0x6969, "nfs" },        { 0x0bd00bd0, "lustre" }, { 0x47504653, "gpfs" },
		{ 0x19830326, "beegfs" }, { 0x00c36400, "ceph" },   { 0xff534d42, "cifs" },
		{ 0xfe534d42, "smb2" },   { 0x517b, "smb" },        { 0x65735546, "fuse" },
		{ 0x5346414f, "afs" },    { 0x6b414653, "afs" },    { 0x13661366, "orangefs" },
		{ 0x01161970, "gfs2" },   { 0x7461636f, "ocfs2" },  { 0x01021997, "9p" },
		{ 0xaad7aaea, "panfs" },  { 0x73757245, "coda" },   { 0x564c, "ncp" },
	};

	for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++)
		if (shared[i].type == type)
			return shared[i].name;
	return NULL;
}
