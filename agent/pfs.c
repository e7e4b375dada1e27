/* PFS reads of whole samples. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fdio.h"
#include "common/log.h"
#include "pfs.h"

/* Reads are issued in chunks this large: big enough for any PFS. */
#define PFS_CHUNK (8u << 20)

nopfs_status pfs_sample_path(const struct nopfs_catalog *catalog, nopfs_sample_id index, char *path,
                             size_t length)
{
	const char *root = nopfs_catalog_root(catalog);
	size_t used;
	nopfs_status status;

	if (!root) {
		nopfs_error("sample %" PRIu32 " has no file: the catalog is synthetic", index);
		return NOPFS_ERR_NOT_FOUND;
	}
	used = (size_t)snprintf(path, length, "%s/", root);
	if (used >= length)
		return NOPFS_ERR_RANGE;
	status = nopfs_catalog_path(catalog, index, path + used, length - used);
	if (status != NOPFS_OK)
		nopfs_error("the path of sample %" PRIu32 " does not fit in %zu bytes", index,
		            length);
	return status;
}

nopfs_status pfs_read_sample(const struct nopfs_catalog *catalog, nopfs_sample_id index,
                             void *buffer, struct agent_stats *stats)
{
	uint64_t size = nopfs_catalog_size(catalog, index), done = 0;
	char path[4096];
	struct stat st;
	nopfs_status status;
	int fd;

	status = pfs_sample_path(catalog, index, path, sizeof(path));
	if (status != NOPFS_OK)
		return status;
	/* never blocks on a FIFO or device named like a sample: only regular files */
	fd = nopfs_open_regular(path, &st);
	if (fd < 0) {
		if (errno == 0) {
			nopfs_error("sample %" PRIu32 " '%s' is not a regular file: not served",
			            index, path);
			status = NOPFS_ERR_INVALID;
		} else {
			status = nopfs_status_from_errno(errno);
			nopfs_error("cannot open sample %" PRIu32 " '%s': %m", index, path);
		}
		agent_count(&stats->pfs_failed, size);
		return status;
	}
	if ((uint64_t)st.st_size != size) {
		agent_count(&stats->pfs_changed, size);
		nopfs_error("sample %" PRIu32 " '%s' changed: %" PRIu64
		            " bytes in the catalog, %lld now; the catalog is stale",
		            index, path, size, (long long)st.st_size);
		close(fd);
		return NOPFS_ERR_STALE;
	}
	while (done < size) {
		size_t chunk = size - done < PFS_CHUNK ? (size_t)(size - done) : PFS_CHUNK;
		ssize_t got = pread(fd, (char *)buffer + done, chunk, (off_t)done);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			status = got < 0 ? nopfs_status_from_errno(errno) : NOPFS_ERR_STALE;
			nopfs_error("reading sample %" PRIu32 " '%s' at byte %" PRIu64 ": %s",
			            index, path, done,
			            got < 0 ? strerror(errno) : "file ended early");
			agent_count(got < 0 ? &stats->pfs_failed : &stats->pfs_changed, size);
			close(fd);
			return status;
		}
		done += (uint64_t)got;
	}
	close(fd);
	agent_count(&stats->pfs_read, size);
	return NOPFS_OK;
}
