/* The staging directory's "index" file, mapped read-only and checked. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stage_index.h"
#include "common/private.h"

#define HEADER_SIZE sizeof(struct nopfs_stage_index_header)
#define ENTRY_SIZE  (sizeof(uint64_t) + sizeof(int64_t)) /* size and label */
#define OFFSET_SIZE sizeof(uint64_t)

/* Check the layout of @length bytes at @base and describe it in *index. */
static nopfs_status check_layout(const uint8_t *base, size_t length,
                                 struct nopfs_stage_index *index, const char **why)
{
	const struct nopfs_stage_index_header *header = (const void *)base;
	uint64_t fixed;

	if (length < HEADER_SIZE + OFFSET_SIZE) {
		*why = "index file shorter than its header";
		return NOPFS_ERR_FORMAT;
	}
	if (header->magic != NOPFS_STAGE_INDEX_MAGIC) {
		*why = "index file has a bad magic";
		return NOPFS_ERR_FORMAT;
	}
	if (header->version != NOPFS_STAGE_INDEX_VERSION) {
		*why = "index file has an unsupported version";
		return NOPFS_ERR_UNSUPPORTED;
	}
	if (header->count > (length - HEADER_SIZE - OFFSET_SIZE) / (ENTRY_SIZE + OFFSET_SIZE)) {
		*why = "index file shorter than its sample count implies";
		return NOPFS_ERR_FORMAT;
	}
	fixed = HEADER_SIZE + header->count * (ENTRY_SIZE + OFFSET_SIZE) + OFFSET_SIZE;
	index->count = header->count;
	index->sizes = (const void *)(base + HEADER_SIZE);
	index->labels = (const void *)(base + HEADER_SIZE + header->count * sizeof(uint64_t));
	index->offsets = (const void *)(base + HEADER_SIZE + header->count * ENTRY_SIZE);
	index->paths = (const char *)base + fixed;
	index->paths_length = length - fixed;
	if (index->offsets[0] != 0 || index->offsets[index->count] != index->paths_length) {
		*why = "index file path offsets do not match its size";
		return NOPFS_ERR_FORMAT;
	}
	return NOPFS_OK;
}

nopfs_status nopfs_stage_index_map(int dirfd, const char *name, struct nopfs_stage_index *index,
                                   const char **why)
{
	struct nopfs_stage_index mapped = { 0 };
	nopfs_status status;
	struct stat st;
	int fd;

	status = nopfs_private_file_openat(dirfd, name, 0, -1, &fd, why);
	if (status != NOPFS_OK)
		return status;
	if (fstat(fd, &st) != 0) {
		*why = "cannot stat the index file";
		status = NOPFS_ERR_IO;
		goto out_close;
	}
	if ((uint64_t)st.st_size < HEADER_SIZE + OFFSET_SIZE || (uint64_t)st.st_size > SIZE_MAX) {
		*why = "index file shorter than its header";
		status = NOPFS_ERR_FORMAT;
		goto out_close;
	}
	mapped.mapping_length = (size_t)st.st_size;
	mapped.mapping = mmap(NULL, mapped.mapping_length, PROT_READ, MAP_SHARED, fd, 0);
	if (mapped.mapping == MAP_FAILED) {
		*why = "cannot map the index file";
		status = NOPFS_ERR_IO;
		goto out_close;
	}
	status = check_layout(mapped.mapping, mapped.mapping_length, &mapped, why);
	if (status != NOPFS_OK)
		goto out_unmap;
	close(fd);
	*index = mapped;
	return NOPFS_OK;

out_unmap:
	munmap(mapped.mapping, mapped.mapping_length);
out_close:
	close(fd);
	return status;
}

void nopfs_stage_index_unmap(struct nopfs_stage_index *index)
{
	if (index->mapping)
		munmap(index->mapping, index->mapping_length);
	memset(index, 0, sizeof(*index));
}

bool nopfs_stage_index_is_mapped(const struct nopfs_stage_index *index)
{
	return index->mapping != NULL;
}

bool nopfs_stage_index_entry(const struct nopfs_stage_index *index, uint64_t i, uint64_t *size,
                             int64_t *label)
{
	if (!index->mapping || i >= index->count)
		return false;
	*size = index->sizes[i];
	*label = index->labels[i];
	return true;
}

bool nopfs_stage_index_path(const struct nopfs_stage_index *index, uint64_t i, const char **path,
                            size_t *length)
{
	uint64_t start;
	uint64_t end;

	if (!index->mapping || i >= index->count)
		return false;
	start = index->offsets[i];
	end = index->offsets[i + 1];
	if (start >= end || end > index->paths_length)
		return false;
	*path = index->paths + start;
	*length = (size_t)(end - start);
	return true;
}
