/*
 * Reading the staging directory's "index" file (layout in runtime.h): the
 * sizes, labels and relative paths of the dataset's samples, mapped
 * read-only so that the C API can label staged samples and read the PFS
 * itself when the agent cannot serve.
 */
#ifndef NOPFS_STAGE_INDEX_H
#define NOPFS_STAGE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime.h"
#include "common/status.h"

struct nopfs_stage_index {
	void *mapping; /* NULL when not mapped */
	size_t mapping_length;
	uint64_t count;
	const uint64_t *sizes;   /* count */
	const int64_t *labels;   /* count */
	const uint64_t *offsets; /* count + 1 */
	const char *paths;
	uint64_t paths_length;
};

/*
 * Map the index file @name in the directory @dirfd into *index after checking
 * that it is a regular file of this user's (a symbolic link is not followed),
 * its header, magic, version and that its size is exactly what its count
 * implies. NOPFS_OK, or NOPFS_ERR_NOT_FOUND / NOPFS_ERR_PERMISSION /
 * NOPFS_ERR_IO / NOPFS_ERR_FORMAT / NOPFS_ERR_UNSUPPORTED with @why (static
 * text); *index is set only on success and owns the mapping (release with
 * nopfs_stage_index_unmap()).
 */
nopfs_status nopfs_stage_index_map(int dirfd, const char *name, struct nopfs_stage_index *index,
                                   const char **why);

/* Unmap an index; safe on one never mapped (all zero). */
void nopfs_stage_index_unmap(struct nopfs_stage_index *index);

/* Whether the index is mapped. */
bool nopfs_stage_index_is_mapped(const struct nopfs_stage_index *index);

/* Size and label of sample @i; false when @i is out of range or not mapped. */
bool nopfs_stage_index_entry(const struct nopfs_stage_index *index, uint64_t i, uint64_t *size,
                             int64_t *label);

/*
 * The relative path of sample @i (not NUL-terminated; points into the
 * mapping). false when out of range, when the dataset has no paths
 * (synthetic), or when the offsets of @i are inconsistent.
 */
bool nopfs_stage_index_path(const struct nopfs_stage_index *index, uint64_t i, const char **path,
                            size_t *length);

#endif
