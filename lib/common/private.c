/* Private places in shared directories: made and checked. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "private.h"

bool nopfs_private_dir_is(const struct stat *st, uid_t uid)
{
	return S_ISDIR(st->st_mode) && st->st_uid == uid && (st->st_mode & 077) == 0;
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

int nopfs_private_dir_open(const char *path, uid_t uid)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !nopfs_private_dir_is(&st, uid)) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

int nopfs_private_file_open(int dir_fd, const char *name, int flags, mode_t mode, uid_t uid)
{
	int fd = openat(dir_fd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != uid ||
	    fcntl(fd, F_SETFL, flags & O_APPEND) != 0) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
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
