/*
 * Replacing a file atomically: readers see the old file or the new one, never
 * a part. The bytes go to a fresh temporary beside the destination (a name
 * nobody can guess, created exclusively, so a shared directory is safe), are
 * flushed to disk, then renamed over the destination.
 */
#ifndef NOPFS_ATOMIC_FILE_H
#define NOPFS_ATOMIC_FILE_H

#include <stddef.h>
#include <sys/types.h>

#include "status.h"

/* Writes the whole content to @fd: 0, or -1 with errno set. Does not close @fd. */
typedef int (*nopfs_atomic_writer)(int fd, void *arg);

/*
 * Replace @path with what @writer(fd, @arg) writes, with permissions @mode
 * (the umask is not applied). On failure the temporary is removed, @path is
 * untouched, and the status of errno is returned with errno telling why.
 * Logs nothing: the caller names the file for what it is and logs once.
 */
nopfs_status nopfs_atomic_write_with(const char *path, mode_t mode, nopfs_atomic_writer writer,
                                     void *arg);

/* Replace @path with the @length bytes of @data; as nopfs_atomic_write_with(). */
nopfs_status nopfs_atomic_write(const char *path, mode_t mode, const void *data, size_t length);

#endif
