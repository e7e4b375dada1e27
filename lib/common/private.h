/*
 * Private places in shared directories (/tmp, /dev/shm, an SSD base, a
 * report directory): made by their owner, and opened by whoever uses one
 * only after checking who owns it, never trusted as found. "Private" is a
 * directory (or regular file) of the expected user with no permission for
 * group or others, reached without following a link. The openers are
 * allocation-free and use raw system calls, so the interposer can use them
 * from inside any open().
 */
#ifndef NOPFS_PRIVATE_H
#define NOPFS_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "status.h"

/*
 * Open the directory @path (O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) into *fd,
 * its stat in *st (may be NULL), when it is a directory owned by the
 * effective uid with no group or other permission. Else the status (errno as
 * open left it for NOPFS_ERR_NOT_FOUND / NOPFS_ERR_IO; NOPFS_ERR_PERMISSION
 * when it is not private) with @why (static text). Logs nothing.
 */
nopfs_status nopfs_private_dir_open(const char *path, int *fd, struct stat *st, const char **why);

/*
 * Open @name in the directory @dirfd read-only with @flags added (O_CLOEXEC,
 * O_NONBLOCK, O_NOATIME, ...) into *fd, when it is a regular file owned by
 * the effective uid and, when @size is not -1, exactly @size bytes long. A
 * symbolic link is not followed, a FIFO or device is never waited for
 * (O_NONBLOCK is set only for the checks unless @flags has it). Else
 * NOPFS_ERR_NOT_FOUND (no such name), NOPFS_ERR_PERMISSION (not such a file)
 * or NOPFS_ERR_IO with @why (static text). Logs nothing.
 */
nopfs_status nopfs_private_file_openat(int dirfd, const char *name, int flags, int64_t size,
                                       int *fd, const char **why);

/*
 * The same checks for the files of user @uid (slurmstepd and the job epilog
 * act for the job's user), and files opened for writing: open directory
 * @path, or @name in @dirfd (AT_FDCWD with a path) with @flags (O_RDONLY,
 * O_WRONLY | O_CREAT | O_APPEND, ...) and @mode. The fd, or -1 with errno
 * (EPERM when it is there but not private to @uid).
 */
int nopfs_private_dir_open_for(const char *path, uid_t uid);
int nopfs_private_file_open_for(int dirfd, const char *name, int flags, mode_t mode, uid_t uid);

/* Is @path a regular file of @uid, not reached through a link? (lstat: no open) */
bool nopfs_private_file_is(const char *path, uid_t uid);

/* Is @st (from lstat) a regular file of @uid? */
bool nopfs_private_file_stat_is(const struct stat *st, uid_t uid);

/* Is @st a directory of @uid that only its owner may use? */
bool nopfs_private_dir_is(const struct stat *st, uid_t uid);

/*
 * Make directory @path 0700 for the effective user, or accept one that is
 * already there and private to it (*@made false then). A link, another
 * owner or open permissions: NOPFS_ERR_PERMISSION with errno EPERM. Logs
 * nothing: the caller names the directory for what it is.
 */
nopfs_status nopfs_private_dir_make(const char *path, bool *made);

/*
 * The name of file system type @type (statfs' f_type) when it is shared
 * between hosts (network and parallel file systems: NFS, Lustre, GPFS,
 * BeeGFS, CephFS, SMB, ...; FUSE, whose backing is unknown), NULL for a
 * node-local one. Node-local tiers refuse the former.
 */
const char *nopfs_fs_shared_name(unsigned long type);

#endif
