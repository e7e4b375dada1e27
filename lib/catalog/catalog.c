/* The in-memory catalog: samples in index order, their paths and the path index. */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_internal.h"
#include "common/log.h"

#define CATALOG_MIN_CAPACITY 64

uint64_t nopfs_catalog_fnv1a(uint64_t hash, const void *data, size_t length)
{
	const uint8_t *bytes = data;
	size_t i;

	for (i = 0; i < length; i++) {
		hash ^= bytes[i];
		hash *= UINT64_C(0x100000001b3);
	}
	return hash;
}

/* FNV's low bits mix poorly; the index uses them, so finish with a mixer. */
static uint64_t path_hash(const char *path)
{
	uint64_t hash = nopfs_catalog_fnv1a(CATALOG_FNV_INIT, path, strlen(path));

	hash ^= hash >> 33;
	hash *= UINT64_C(0xff51afd7ed558ccd);
	hash ^= hash >> 33;
	return hash;
}

nopfs_status nopfs_catalog_new(const char *root, bool with_paths, struct nopfs_catalog **out)
{
	struct nopfs_catalog *catalog;

	catalog = calloc(1, sizeof(*catalog));
	if (!catalog)
		goto out_nomem;
	if (root) {
		catalog->root = strdup(root);
		if (!catalog->root)
			goto out_free_catalog;
	}
	if (with_paths) {
		catalog->paths_capacity = CATALOG_MIN_CAPACITY * 16;
		catalog->paths = malloc(catalog->paths_capacity);
		if (!catalog->paths)
			goto out_free_root;
	}
	*out = catalog;
	return NOPFS_OK;

out_free_root:
	free(catalog->root);
out_free_catalog:
	free(catalog);
out_nomem:
	nopfs_error("out of memory creating a catalog");
	return NOPFS_ERR_NOMEM;
}

nopfs_status nopfs_catalog_set_root(struct nopfs_catalog *catalog, const char *root)
{
	char *copy = strdup(root);

	if (!copy) {
		nopfs_error("out of memory copying the dataset root '%s'", root);
		return NOPFS_ERR_NOMEM;
	}
	free(catalog->root);
	catalog->root = copy;
	return NOPFS_OK;
}

nopfs_status nopfs_catalog_add_class(struct nopfs_catalog *catalog, const char *name)
{
	char *copy;

	if (catalog->class_count == UINT32_MAX) {
		nopfs_error("more than %" PRIu32 " classes", UINT32_MAX - 1);
		return NOPFS_ERR_RANGE;
	}
	if (catalog->class_count == catalog->class_capacity) {
		uint32_t capacity = 16;
		char **names;

		if (catalog->class_capacity > UINT32_MAX / 2)
			capacity = UINT32_MAX;
		else if (catalog->class_capacity)
			capacity = catalog->class_capacity * 2;
		names = realloc(catalog->class_names, (size_t)capacity * sizeof(*names));
		if (!names)
			goto out_nomem;
		catalog->class_names = names;
		catalog->class_capacity = capacity;
	}
	copy = strdup(name);
	if (!copy)
		goto out_nomem;
	catalog->class_names[catalog->class_count++] = copy;
	return NOPFS_OK;

out_nomem:
	nopfs_error("out of memory adding class '%s'", name);
	return NOPFS_ERR_NOMEM;
}

static bool grow_samples(struct nopfs_catalog *catalog)
{
	uint64_t capacity = catalog->capacity ? catalog->capacity * 2 : CATALOG_MIN_CAPACITY;
	uint64_t *sizes, *offsets;
	int64_t *labels;

	if (capacity > CATALOG_NO_SAMPLE)
		capacity = CATALOG_NO_SAMPLE;
	sizes = realloc(catalog->sizes, capacity * sizeof(*sizes));
	if (!sizes)
		return false;
	catalog->sizes = sizes;
	labels = realloc(catalog->labels, capacity * sizeof(*labels));
	if (!labels)
		return false;
	catalog->labels = labels;
	if (catalog->paths) {
		offsets = realloc(catalog->path_offsets, capacity * sizeof(*offsets));
		if (!offsets)
			return false;
		catalog->path_offsets = offsets;
	}
	catalog->capacity = capacity;
	return true;
}

static bool reserve_paths(struct nopfs_catalog *catalog, uint64_t length)
{
	uint64_t capacity = catalog->paths_capacity;
	char *paths;

	if (catalog->paths_length + length <= capacity)
		return true;
	while (catalog->paths_length + length > capacity)
		capacity *= 2;
	paths = realloc(catalog->paths, capacity);
	if (!paths)
		return false;
	catalog->paths = paths;
	catalog->paths_capacity = capacity;
	return true;
}

nopfs_status nopfs_catalog_append(struct nopfs_catalog *catalog, const char *path, uint64_t size,
                                  int64_t label)
{
	uint64_t index = catalog->count;

	if (index == CATALOG_NO_SAMPLE) {
		nopfs_error("more than %" PRIu32 " samples: sample indices are 32-bit",
		            CATALOG_NO_SAMPLE);
		return NOPFS_ERR_RANGE;
	}
	if (index == catalog->capacity && !grow_samples(catalog))
		goto out_nomem;
	if (catalog->paths) {
		size_t length = strlen(path) + 1;

		if (!reserve_paths(catalog, length))
			goto out_nomem;
		memcpy(catalog->paths + catalog->paths_length, path, length);
		catalog->path_offsets[index] = catalog->paths_length;
		catalog->paths_length += length;
	}
	catalog->sizes[index] = size;
	catalog->labels[index] = label;
	catalog->count++;
	return NOPFS_OK;

out_nomem:
	nopfs_error("out of memory adding sample %" PRIu64 " to the catalog", index);
	return NOPFS_ERR_NOMEM;
}

/* Give back what the doubling arrays over-allocated; failure is harmless. */
static void shrink(struct nopfs_catalog *catalog)
{
	void *p;

	if (catalog->count == catalog->capacity || catalog->count == 0)
		return;
	p = realloc(catalog->sizes, catalog->count * sizeof(*catalog->sizes));
	if (p)
		catalog->sizes = p;
	p = realloc(catalog->labels, catalog->count * sizeof(*catalog->labels));
	if (p)
		catalog->labels = p;
	if (catalog->path_offsets) {
		p = realloc(catalog->path_offsets, catalog->count * sizeof(*catalog->path_offsets));
		if (p)
			catalog->path_offsets = p;
	}
	if (catalog->paths && catalog->paths_length) {
		p = realloc(catalog->paths, catalog->paths_length);
		if (p) {
			catalog->paths = p;
			catalog->paths_capacity = catalog->paths_length;
		}
	}
	catalog->capacity = catalog->count;
}

/* Index every path; load factor at most 1/2 keeps probes short. */
static nopfs_status build_index(struct nopfs_catalog *catalog, uint64_t *first, uint64_t *second)
{
	uint64_t slot_count = 16, i;

	while (slot_count < catalog->count * 2)
		slot_count *= 2;
	free(catalog->slots);
	catalog->slots = malloc(slot_count * sizeof(*catalog->slots));
	if (!catalog->slots) {
		nopfs_error("out of memory indexing %" PRIu64 " catalog paths", catalog->count);
		return NOPFS_ERR_NOMEM;
	}
	memset(catalog->slots, 0xff, slot_count * sizeof(*catalog->slots));
	catalog->slot_mask = slot_count - 1;
	for (i = 0; i < catalog->count; i++) {
		const char *path = nopfs_catalog_path_at(catalog, i);
		uint64_t slot = path_hash(path) & catalog->slot_mask;

		while (catalog->slots[slot] != CATALOG_NO_SAMPLE) {
			uint32_t other = catalog->slots[slot];

			if (strcmp(nopfs_catalog_path_at(catalog, other), path) == 0) {
				*first = other;
				*second = i;
				return NOPFS_ERR_DUPLICATE;
			}
			slot = (slot + 1) & catalog->slot_mask;
		}
		catalog->slots[slot] = (uint32_t)i;
	}
	return NOPFS_OK;
}

nopfs_status nopfs_catalog_seal(struct nopfs_catalog *catalog, uint64_t *first, uint64_t *second)
{
	uint64_t total = 0, i;

	for (i = 0; i < catalog->count; i++) {
		if (catalog->sizes[i] > UINT64_MAX - total) {
			nopfs_error("the catalog's samples add up to more than 2^64 bytes");
			return NOPFS_ERR_RANGE;
		}
		total += catalog->sizes[i];
	}
	catalog->total_bytes = total;
	shrink(catalog);
	if (!catalog->paths)
		return NOPFS_OK;
	return build_index(catalog, first, second);
}

nopfs_status nopfs_catalog_from_sizes(const uint64_t *sizes, uint64_t count,
                                      struct nopfs_catalog **out)
{
	struct nopfs_catalog *catalog;
	uint64_t unused_first, unused_second;
	nopfs_status status;

	if (count == 0) {
		nopfs_error("a synthetic catalog needs at least one sample");
		return NOPFS_ERR_EMPTY;
	}
	if (count > CATALOG_NO_SAMPLE) {
		nopfs_error("%" PRIu64 " samples: sample indices are 32-bit (at most %" PRIu32 ")",
		            count, CATALOG_NO_SAMPLE);
		return NOPFS_ERR_RANGE;
	}
	status = nopfs_catalog_new(NULL, false, &catalog);
	if (status)
		return status;
	catalog->sizes = malloc(count * sizeof(*catalog->sizes));
	catalog->labels = calloc(count, sizeof(*catalog->labels));
	if (!catalog->sizes || !catalog->labels) {
		nopfs_error("out of memory for a catalog of %" PRIu64 " samples", count);
		status = NOPFS_ERR_NOMEM;
		goto out_destroy;
	}
	memcpy(catalog->sizes, sizes, count * sizeof(*catalog->sizes));
	catalog->count = count;
	catalog->capacity = count;
	status = nopfs_catalog_seal(catalog, &unused_first, &unused_second);
	if (status)
		goto out_destroy;
	*out = catalog;
	return NOPFS_OK;

out_destroy:
	nopfs_catalog_destroy(catalog);
	return status;
}

void nopfs_catalog_destroy(struct nopfs_catalog *catalog)
{
	uint32_t i;

	if (!catalog)
		return;
	for (i = 0; i < catalog->class_count; i++)
		free(catalog->class_names[i]);
	free(catalog->class_names);
	free(catalog->slots);
	free(catalog->root);
	free(catalog->paths);
	free(catalog->path_offsets);
	free(catalog->labels);
	free(catalog->sizes);
	free(catalog);
}

uint64_t nopfs_catalog_count(const struct nopfs_catalog *catalog)
{
	return catalog->count;
}

uint64_t nopfs_catalog_total_bytes(const struct nopfs_catalog *catalog)
{
	return catalog->total_bytes;
}

const uint64_t *nopfs_catalog_sizes(const struct nopfs_catalog *catalog)
{
	return catalog->sizes;
}

uint64_t nopfs_catalog_size(const struct nopfs_catalog *catalog, uint64_t index)
{
	return index < catalog->count ? catalog->sizes[index] : 0;
}

int64_t nopfs_catalog_label(const struct nopfs_catalog *catalog, uint64_t index)
{
	return index < catalog->count ? catalog->labels[index] : 0;
}

const char *nopfs_catalog_root(const struct nopfs_catalog *catalog)
{
	return catalog->root;
}

uint32_t nopfs_catalog_class_count(const struct nopfs_catalog *catalog)
{
	return catalog->class_count;
}

const char *nopfs_catalog_class_name(const struct nopfs_catalog *catalog, uint32_t label)
{
	return label < catalog->class_count ? catalog->class_names[label] : NULL;
}

const char *nopfs_catalog_path_at(const struct nopfs_catalog *catalog, uint64_t index)
{
	return catalog->paths + catalog->path_offsets[index];
}

nopfs_status nopfs_catalog_path(const struct nopfs_catalog *catalog, uint64_t index, char *buffer,
                                size_t length)
{
	const char *path;
	size_t needed;

	if (!catalog->paths) {
		nopfs_error("sample %" PRIu64 " of a synthetic catalog has no path", index);
		return NOPFS_ERR_NOT_FOUND;
	}
	if (index >= catalog->count) {
		nopfs_error("sample %" PRIu64 " is beyond the catalog's %" PRIu64 " samples", index,
		            catalog->count);
		return NOPFS_ERR_RANGE;
	}
	path = nopfs_catalog_path_at(catalog, index);
	needed = strlen(path) + 1;
	if (needed > length) {
		nopfs_error("the path of sample %" PRIu64 " needs %zu bytes, the buffer has %zu",
		            index, needed, length);
		return NOPFS_ERR_RANGE;
	}
	memcpy(buffer, path, needed);
	return NOPFS_OK;
}

int64_t nopfs_catalog_find(const struct nopfs_catalog *catalog, const char *relative_path)
{
	uint64_t slot;

	if (!catalog->slots)
		return -1;
	slot = path_hash(relative_path) & catalog->slot_mask;
	while (catalog->slots[slot] != CATALOG_NO_SAMPLE) {
		uint32_t index = catalog->slots[slot];

		if (strcmp(nopfs_catalog_path_at(catalog, index), relative_path) == 0)
			return index;
		slot = (slot + 1) & catalog->slot_mask;
	}
	return -1;
}
