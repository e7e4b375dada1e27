/*
 * Opening what lies in a shared place (/tmp, /dev/shm) without trusting it:
 * a directory must be this process's and private, a file in it a regular
 * file of this process's. Allocation-free, with raw system calls only, so the
 * interposer can use it from inside any open().
 */
#ifndef NOPFS_PRIVATE_H
#define NOPFS_PRIVATE_H

#include <stdint.h>
#include <sys/stat.h>

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

#endif
