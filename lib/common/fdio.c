/* Whole-buffer reads and writes on a file descriptor. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "fdio.h"

nopfs_status nopfs_write_all(int fd, const void *data, size_t length)
{
	for (size_t done = 0; done < length;) {
		ssize_t n = write(fd, (const char *)data + done, length - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return nopfs_status_from_errno(errno);
		}
		done += (size_t)n;
	}
	return NOPFS_OK;
}

nopfs_status nopfs_read_exact(int fd, void *data, size_t length)
{
	for (size_t done = 0; done < length;) {
		ssize_t n = read(fd, (char *)data + done, length - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO; /* end of file before @length bytes */
			return nopfs_status_from_errno(errno);
		}
		done += (size_t)n;
	}
	return NOPFS_OK;
}

nopfs_status nopfs_pwrite_all(int fd, const void *data, size_t length, uint64_t offset)
{
	for (size_t done = 0; done < length;) {
		ssize_t n = pwrite(fd, (const char *)data + done, length - done,
		                   (off_t)(offset + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return nopfs_status_from_errno(errno);
		}
		done += (size_t)n;
	}
	return NOPFS_OK;
}

nopfs_status nopfs_pread_exact(int fd, void *data, size_t length, uint64_t offset)
{
	for (size_t done = 0; done < length;) {
		ssize_t n = pread(fd, (char *)data + done, length - done, (off_t)(offset + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO; /* end of file before @length bytes */
			return nopfs_status_from_errno(errno);
		}
		done += (size_t)n;
	}
	return NOPFS_OK;
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
