/* Staged copies: filling, naming, publishing; request copies; the API index. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/fdio.h"
#include "common/log.h"
#include "task/runtime.h"
#include "stage_internal.h"

/* ------------------------------------------------------------------------
 * Names and files in the stage directory.
 */

/* The one name of @rank's copy of @sample: its path's, or its index's when that is too long. */
static void staged_name(struct stage *stage, uint32_t rank, nopfs_sample_id sample, char *name,
                        size_t length)
{
	char relative[4096];

	if (nopfs_catalog_path(stage->job->catalog, sample, relative, sizeof(relative)) !=
	            NOPFS_OK ||
	    !nopfs_stage_name_for_path(rank, relative, name, length))
		nopfs_stage_name_for_index(rank, sample, name, length);
}

void stage_unlink_names(struct stage *stage, uint32_t rank, nopfs_sample_id sample)
{
	char name[300];

	staged_name(stage, rank, sample, name, sizeof(name));
	unlinkat(stage->directory_fd, name, 0);
}

nopfs_status stage_fill_memory(struct stage *stage, nopfs_sample_id sample, void *dest,
                               nopfs_wire_source *from)
{
	return source_copy(stage->source, sample, -1, dest, NULL, false, from);
}

/* Write @sample under the temporary name @temporary. */
nopfs_status stage_write_temporary(struct stage *stage, struct stage_worker *worker,
                                   nopfs_sample_id sample, const char *temporary,
                                   nopfs_wire_source *from)
{
	nopfs_status status;
	int fd;

	fd = openat(stage->directory_fd, temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		nopfs_error("stage: cannot create '%s/%s': %m", stage->directory, temporary);
		return nopfs_status_from_errno(errno);
	}
	status = source_copy(stage->source, sample, fd, worker->buffer, NULL, false, from);
	close(fd);
	if (status != NOPFS_OK)
		unlinkat(stage->directory_fd, temporary, 0);
	return status;
}

/*
 * Give a written copy its name and drop the temporary one. Called with the
 * lock held, so a task that opens the name finds its slot already staged.
 */
nopfs_status stage_publish(struct stage *stage, uint32_t rank, nopfs_sample_id sample,
                           const char *temporary)
{
	char name[300];
	nopfs_status status = NOPFS_OK;

	staged_name(stage, rank, sample, name, sizeof(name));
	if (linkat(stage->directory_fd, temporary, stage->directory_fd, name, 0) != 0 &&
	    errno != EEXIST) {
		nopfs_error("stage: cannot link '%s/%s': %m", stage->directory, name);
		status = NOPFS_ERR_IO;
	}
	unlinkat(stage->directory_fd, temporary, 0);
	if (status == NOPFS_OK)
		agent_count(&stage->stats->staged, nopfs_catalog_size(stage->job->catalog, sample));
	else
		stage_unlink_names(stage, rank, sample);
	return status;
}

nopfs_status stage_seal_copy(int copy)
{
	if (fcntl(copy, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
		return NOPFS_ERR_IO;
	lseek(copy, 0, SEEK_SET);
	return NOPFS_OK;
}

/* An anonymous, sealed, read-only copy of @sample for a request. */
nopfs_status stage_serve_copy(struct stage *stage, nopfs_sample_id sample, void *buffer,
                              const struct timespec *deadline, bool leading, int *fd,
                              nopfs_wire_source *from)
{
	int copy = memfd_create("nopfs-sample", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	nopfs_status status;

	if (copy < 0) {
		nopfs_error("cannot create a copy of sample %" PRIu32 ": %m", sample);
		return NOPFS_ERR_NOMEM;
	}
	status = source_copy(stage->source, sample, copy, buffer, deadline, leading, from);
	if (status == NOPFS_OK)
		status = stage_seal_copy(copy);
	if (status != NOPFS_OK) {
		close(copy);
		return status;
	}
	*fd = copy;
	return NOPFS_OK;
}

/*
 * Open the staged copy of @sample read-only, or -1. Through a hidden link:
 * the watch ignores dot names, so the agent's own open is not mistaken for a
 * task reading the sample.
 */
int stage_open_staged(struct stage *stage, uint32_t rank, nopfs_sample_id sample)
{
	char name[300], hidden[64];
	int fd;

	staged_name(stage, rank, sample, name, sizeof(name));
	snprintf(hidden, sizeof(hidden), ".r%" PRIu32 ".%" PRIu32, rank, sample);
	if (linkat(stage->directory_fd, name, stage->directory_fd, hidden, 0) != 0)
		return -1;
	fd = openat(stage->directory_fd, hidden, O_RDONLY | O_CLOEXEC);
	unlinkat(stage->directory_fd, hidden, 0);
	return fd;
}

/* The "index" file: sizes, labels and paths for the C API (see runtime.h). */
nopfs_status stage_publish_index(struct stage *stage)
{
	const struct nopfs_catalog *catalog = stage->job->catalog;
	uint64_t count = nopfs_catalog_count(catalog), offset = 0;
	struct nopfs_stage_index_header header = { .magic = NOPFS_STAGE_INDEX_MAGIC,
		                                   .version = NOPFS_STAGE_INDEX_VERSION,
		                                   .count = count };
	char temporary[] = ".index";
	char path[4096];
	nopfs_status status = NOPFS_OK;
	FILE *out;
	int fd;

	fd = openat(stage->directory_fd, temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || !(out = fdopen(fd, "w"))) {
		nopfs_error("stage: cannot write '%s/%s': %m", stage->directory, temporary);
		if (fd >= 0)
			close(fd);
		return NOPFS_ERR_IO;
	}
	fwrite(&header, sizeof(header), 1, out);
	fwrite(nopfs_catalog_sizes(catalog), sizeof(uint64_t), count, out);
	for (uint64_t k = 0; k < count; k++) {
		int64_t label = nopfs_catalog_label(catalog, k);

		fwrite(&label, sizeof(label), 1, out);
	}
	for (uint64_t k = 0; k <= count; k++) {
		fwrite(&offset, sizeof(offset), 1, out);
		if (k < count && nopfs_catalog_path(catalog, k, path, sizeof(path)) == NOPFS_OK)
			offset += strlen(path);
	}
	for (uint64_t k = 0; k < count; k++)
		if (nopfs_catalog_path(catalog, k, path, sizeof(path)) == NOPFS_OK)
			fwrite(path, 1, strlen(path), out);
	if (ferror(out) || fclose(out) != 0) {
		nopfs_error("stage: writing '%s/%s': %m", stage->directory, temporary);
		status = NOPFS_ERR_IO;
	}
	if (status == NOPFS_OK && renameat(stage->directory_fd, temporary, stage->directory_fd,
	                                   NOPFS_STAGE_INDEX_NAME) != 0) {
		nopfs_error("stage: cannot publish '%s/%s': %m", stage->directory,
		            NOPFS_STAGE_INDEX_NAME);
		status = NOPFS_ERR_IO;
	}
	return status;
}
