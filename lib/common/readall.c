/* Reading a whole file into memory. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "readall.h"

nopfs_status nopfs_read_all(int fd, size_t max, void **data, size_t *length)
{
	struct stat st;
	size_t done = 0, size;
	char *buffer;

	if (fstat(fd, &st) != 0)
		return nopfs_status_from_errno(errno);
	if ((uint64_t)st.st_size > max || (uint64_t)st.st_size > SIZE_MAX - 1) {
		errno = EFBIG;
		return NOPFS_ERR_RANGE;
	}
	size = (size_t)st.st_size;
	buffer = malloc(size + 1);
	if (!buffer)
		return NOPFS_ERR_NOMEM;
	while (done < size) {
		ssize_t got = read(fd, buffer + done, size - done);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			if (got == 0)
				errno = EIO; /* shrank while being read */
			free(buffer);
			return got == 0 ? NOPFS_ERR_IO : nopfs_status_from_errno(errno);
		}
		done += (size_t)got;
	}
	buffer[done] = '\0';
	*data = buffer;
	*length = done;
	return NOPFS_OK;
}
