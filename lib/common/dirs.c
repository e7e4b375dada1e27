/* Making a directory and the missing ones above it. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dirs.h"

/* Make one directory; one already there is fine, a file there is ENOTDIR. */
static nopfs_status make_one(const char *path, mode_t mode)
{
	struct stat st;

	if (mkdir(path, mode) == 0)
		return NOPFS_OK;
	if (errno != EEXIST || stat(path, &st) != 0)
		return nopfs_status_from_errno(errno);
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return nopfs_status_from_errno(errno);
	}
	return NOPFS_OK;
}

nopfs_status nopfs_dir_make(const char *path, mode_t mode)
{
	char *copy = strdup(path);
	nopfs_status status = NOPFS_OK;
	int err;

	if (!copy) {
		errno = ENOMEM;
		return NOPFS_ERR_NOMEM;
	}
	for (char *slash = strchr(copy + 1, '/'); slash && status == NOPFS_OK;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		status = make_one(copy, mode);
		*slash = '/';
	}
	if (status == NOPFS_OK)
		status = make_one(copy, mode);
	err = errno;
	free(copy);
	errno = err;
	return status;
}
