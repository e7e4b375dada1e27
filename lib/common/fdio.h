/* Whole-buffer reads and writes on a file descriptor, retried on EINTR. */
#ifndef NOPFS_FDIO_H
#define NOPFS_FDIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "status.h"

/*
 * Write all @length bytes of @data to @fd, resuming after partial writes and
 * EINTR. On failure, the status of errno (errno tells why; EIO if write(2)
 * wrote nothing). Logs nothing: the caller knows what @fd is.
 */
nopfs_status nopfs_write_all(int fd, const void *data, size_t length);

/*
 * Read exactly @length bytes from @fd into @data, resuming after partial
 * reads and EINTR. NOPFS_ERR_IO with errno EIO at an early end of file, else
 * the status of errno. Logs nothing.
 */
nopfs_status nopfs_read_exact(int fd, void *data, size_t length);

/* The same at offset @offset of @fd (pwrite, pread): the file position does not move. */
nopfs_status nopfs_pwrite_all(int fd, const void *data, size_t length, uint64_t offset);
nopfs_status nopfs_pread_exact(int fd, void *data, size_t length, uint64_t offset);

/*
 * Open @path to read without blocking (a FIFO or device named like a data
 * file is not waited on) and fstat it into *st: the descriptor, or -1 with
 * errno. A file that is not regular is closed again: -1 with errno 0, *st
 * saying what it is. Logs nothing.
 */
int nopfs_open_regular(const char *path, struct stat *st);

#endif
