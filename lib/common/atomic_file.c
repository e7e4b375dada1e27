/* Replacing a file atomically: a temporary beside it, then rename(2). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "fdio.h"

#define TEMPORARY_SUFFIX ".tmp"

/* Write, flush and close @fd; 0, or -1 with errno of the first failure. */
static int fill(int fd, mode_t mode, nopfs_atomic_writer writer, void *arg)
{
	int failed = fchmod(fd, mode) != 0 || writer(fd, arg) != 0 || fsync(fd) != 0;
	int err = errno;

	if (close(fd) != 0 && !failed) {
		failed = 1;
		err = errno;
	}
	errno = err;
	return failed ? -1 : 0;
}

nopfs_status nopfs_atomic_write_with(const char *path, mode_t mode, nopfs_atomic_writer writer,
                                     void *arg)
{
	char *temporary;
	int fd, err;

	if (asprintf(&temporary, "%s.XXXXXX" TEMPORARY_SUFFIX, path) < 0) {
		errno = ENOMEM;
		return NOPFS_ERR_NOMEM;
	}
	/* O_CREAT | O_EXCL with a random name: never someone else's file. */
	fd = mkostemps(temporary, sizeof(TEMPORARY_SUFFIX) - 1, O_CLOEXEC);
	if (fd < 0)
		goto out_free;
	if (fill(fd, mode, writer, arg) != 0 || rename(temporary, path) != 0)
		goto out_unlink;
	free(temporary);
	return NOPFS_OK;

out_unlink:
	err = errno;
	unlink(temporary);
	errno = err;
out_free:
	err = errno;
	free(temporary);
	errno = err;
	return nopfs_status_from_errno(err);
}

struct buffer {
	const void *data;
	size_t length;
};

static int write_buffer(int fd, void *arg)
{
	const struct buffer *buffer = arg;

	return nopfs_write_all(fd, buffer->data, buffer->length) == NOPFS_OK ? 0 : -1;
}

nopfs_status nopfs_atomic_write(const char *path, mode_t mode, const void *data, size_t length)
{
	struct buffer buffer = { data, length };

	return nopfs_atomic_write_with(path, mode, write_buffer, &buffer);
}
