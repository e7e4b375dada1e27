/*
 * Building a catalog from the filesystem: the options and the dataset root,
 * then the format's scanner (catalog_folder.c, catalog_list.c), which records
 * what it saw for the cache in a snapshot (catalog_snapshot.c).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "catalog_internal.h"
#include "common/log.h"

static nopfs_status check_options(const struct nopfs_catalog_options *options)
{
	if (!options || !options->root || !options->root[0]) {
		nopfs_error("no dataset root given");
		return NOPFS_ERR_INVALID;
	}
	switch (options->format) {
	case NOPFS_INDEX_IMAGEFOLDER:
		return NOPFS_OK;
	case NOPFS_INDEX_LIST:
		if (!options->list_path || !options->list_path[0]) {
			nopfs_error("dataset root '%s': the list format needs a list file",
			            options->root);
			return NOPFS_ERR_INVALID;
		}
		return NOPFS_OK;
	}
	nopfs_error("dataset root '%s': unknown index format %d (accepted: imagefolder, list)",
	            options->root, (int)options->format);
	return NOPFS_ERR_INVALID;
}

/* Open the root O_PATH: missing, not a directory and inaccessible are told apart. */
static nopfs_status open_root(const char *root, int *out)
{
	struct stat st;
	int fd;

	if (stat(root, &st) != 0) {
		int err = errno;

		if (err == ENOENT)
			nopfs_error("dataset root '%s' does not exist", root);
		else
			nopfs_error("cannot access dataset root '%s': %s", root, strerror(err));
		return nopfs_status_from_errno(err);
	}
	if (!S_ISDIR(st.st_mode)) {
		nopfs_error("dataset root '%s' is not a directory", root);
		return NOPFS_ERR_INVALID;
	}
	fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;

		nopfs_error("cannot open dataset root '%s': %s", root, strerror(err));
		return nopfs_status_from_errno(err);
	}
	*out = fd;
	return NOPFS_OK;
}

nopfs_status nopfs_catalog_scan(const struct nopfs_catalog_options *options,
                                struct catalog_snapshot *snapshot, struct nopfs_catalog **out)
{
	nopfs_status status;
	int root_fd = -1;

	status = check_options(options);
	if (status)
		return status;
	status = open_root(options->root, &root_fd);
	if (status)
		return status;
	if (options->format == NOPFS_INDEX_LIST)
		status = nopfs_catalog_scan_list(options, root_fd, snapshot, out);
	else
		status = nopfs_catalog_scan_folder(options, root_fd, snapshot, out);
	close(root_fd);
	return status;
}

nopfs_status nopfs_catalog_build(const struct nopfs_catalog_options *options,
                                 struct nopfs_catalog **out)
{
	return nopfs_catalog_scan(options, NULL, out);
}
