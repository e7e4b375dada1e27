/* Making a directory and the missing ones above it (mkdir -p). */
#ifndef NOPFS_DIRS_H
#define NOPFS_DIRS_H

#include <sys/types.h>

#include "status.h"

/*
 * Make @path and every missing directory above it with @mode (less the
 * umask); directories already there are fine. On failure the status of errno,
 * errno telling why (ENOTDIR when a part is a file). Logs nothing: the caller
 * knows what the directory is for.
 */
nopfs_status nopfs_dir_make(const char *path, mode_t mode);

#endif
