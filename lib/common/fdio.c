/* Whole-buffer reads and writes on a file descriptor. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <unistd.h>

#include "fdio.h"

/*
 * Read or write (@writing) all @length bytes at @data on @fd, at @offset
 * (pread/pwrite) or, with @offset negative, at the file position; resumed
 * after partial transfers and EINTR. An early end: EIO.
 */
static nopfs_status transfer_all(int fd, void *data, size_t length, int64_t offset, bool writing)
{
	for (size_t done = 0; done < length;) {
		char *at = (char *)data + done;
		size_t left = length - done;
		ssize_t n;

		if (offset < 0)
			n = writing ? write(fd, at, left) : read(fd, at, left);
		else
			n = writing ? pwrite(fd, at, left, (off_t)(offset + (int64_t)done))
			            : pread(fd, at, left, (off_t)(offset + (int64_t)done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO; /* nothing written, or the end of file before @length
				                bytes */
			return nopfs_status_from_errno(errno);
		}
		done += (size_t)n;
	}
	return NOPFS_OK;
}

nopfs_status nopfs_write_all(int fd, const void *data, size_t length)
{
	return transfer_all(fd, (void *)data, length, -1, true);
}

nopfs_status nopfs_read_exact(int fd, void *data, size_t length)
{
	return transfer_all(fd, data, length, -1, false);
}

nopfs_status nopfs_pwrite_all(int fd, const void *data, size_t length, uint64_t offset)
{
	return transfer_all(fd, (void *)data, length, (int64_t)offset, true);
}

nopfs_status nopfs_pread_exact(int fd, void *data, size_t length, uint64_t offset)
{
	return transfer_all(fd, data, length, (int64_t)offset, false);
}

int nopfs_open_regular(const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	int err;

	if (fd < 0)
		return -1;
	if (fstat(fd, st) != 0) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		errno = 0;
		return -1;
	}
	return fd;
}
