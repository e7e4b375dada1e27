/*
 * Private places in shared directories (/tmp, /dev/shm, an SSD base): made
 * by their owner, and checked by whoever uses one, never trusted as found.
 * "Private" is a directory (or regular file) owned by the expected user with
 * no permission for group or others, reached without following a link.
 */
#ifndef NOPFS_PRIVATE_H
#define NOPFS_PRIVATE_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "status.h"

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
 * Open directory @path (O_DIRECTORY, not through a link) and check that it
 * is private to @uid: its fd (O_CLOEXEC), or -1 with errno (EPERM when it is
 * there but not private).
 */
int nopfs_private_dir_open(const char *path, uid_t uid);

/*
 * Open @name in directory @dir_fd with @flags (O_RDONLY, O_WRONLY|O_APPEND,
 * ...; O_NOFOLLOW, O_NONBLOCK and O_CLOEXEC are added, so that a link is
 * refused and a FIFO never blocks) and check that it is a regular file of
 * @uid: its fd (O_NONBLOCK cleared), or -1 with errno (EPERM when it is not
 * a regular file of @uid). @dir_fd may be AT_FDCWD with an absolute @name.
 */
int nopfs_private_file_open(int dir_fd, const char *name, int flags, mode_t mode, uid_t uid);

/*
 * The name of file system type @type (statfs' f_type) when it is shared
 * between hosts (network and parallel file systems: NFS, Lustre, GPFS,
 * BeeGFS, CephFS, SMB, ...; FUSE, whose backing is unknown), NULL for a
 * node-local one. Node-local tiers refuse the former.
 */
const char *nopfs_fs_shared_name(unsigned long type);

#endif
