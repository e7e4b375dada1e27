/* Reading a whole file into memory, for the few small files nopfs reads whole. */
#ifndef NOPFS_READALL_H
#define NOPFS_READALL_H

#include <stddef.h>

#include "status.h"

/*
 * Read the regular file open on @fd to its end: its bytes followed by a NUL
 * (so text can be used as a string) in *@data (malloc'd, caller frees),
 * their count in *@length. Fails with NOPFS_ERR_RANGE when it holds more
 * than @max bytes, NOPFS_ERR_IO when it shrinks while being read, else the
 * status of errno; errno tells why in every case. Logs nothing: the caller
 * knows what the file is for. Does not close @fd.
 */
nopfs_status nopfs_read_all(int fd, size_t max, void **data, size_t *length);

#endif
