/*
 * Building a catalog from the filesystem: the options, the dataset root, the
 * extension list, and the snapshot a scan leaves for the cache. The formats
 * themselves are in catalog_folder.c and catalog_list.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
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

void nopfs_catalog_extensions_free(char **extensions)
{
	char **extension;

	if (!extensions)
		return;
	for (extension = extensions; *extension; extension++)
		free(*extension);
	free(extensions);
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

nopfs_status nopfs_catalog_extensions_parse(const char *extensions, char ***out)
{
	const char *text = extensions ? extensions : NOPFS_IMAGE_EXTENSIONS;
	const char *item = text;
	size_t count = 1, n = 0, i;
	char **list;

	for (i = 0; text[i]; i++)
		count += text[i] == ',';
	list = calloc(count + 1, sizeof(*list));
	if (!list)
		goto out_nomem;
	for (;;) {
		const char *end = strchrnul(item, ',');
		const char *start = item, *stop = end;

		while (start < stop && is_blank(*start))
			start++;
		while (stop > start && is_blank(stop[-1]))
			stop--;
		if (start == stop) {
			nopfs_error("extension list '%s' has an empty entry", text);
			nopfs_catalog_extensions_free(list);
			return NOPFS_ERR_INVALID;
		}
		list[n] = strndup(start, (size_t)(stop - start));
		if (!list[n])
			goto out_free_list;
		for (i = 0; list[n][i]; i++) {
			unsigned char c = (unsigned char)list[n][i];

			if (c >= 0x80) {
				nopfs_error("extension '%s' in '%s' is not ASCII: unsupported",
				            list[n], text);
				nopfs_catalog_extensions_free(list);
				return NOPFS_ERR_UNSUPPORTED;
			}
			if (c >= 'A' && c <= 'Z')
				list[n][i] = (char)(c - 'A' + 'a');
		}
		n++;
		if (!*end)
			break;
		item = end + 1;
	}
	*out = list;
	return NOPFS_OK;

out_free_list:
	nopfs_catalog_extensions_free(list);
out_nomem:
	nopfs_error("out of memory parsing the extension list '%s'", text);
	return NOPFS_ERR_NOMEM;
}

void nopfs_catalog_stamp_from_stat(const struct stat *st, struct catalog_stamp *stamp)
{
	stamp->ino = (uint64_t)st->st_ino;
	stamp->size = (uint64_t)st->st_size;
	stamp->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	stamp->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

bool nopfs_catalog_stamp_equal(const struct catalog_stamp *a, const struct catalog_stamp *b)
{
	return a->ino == b->ino && a->size == b->size && a->mtime_ns == b->mtime_ns &&
	       a->ctime_ns == b->ctime_ns;
}

uint64_t nopfs_catalog_digest_stamp(uint64_t digest, const struct catalog_stamp *stamp)
{
	uint64_t fields[4] = { stamp->ino, stamp->size, (uint64_t)stamp->mtime_ns,
		               (uint64_t)stamp->ctime_ns };
	uint8_t bytes[32];
	int i;

	for (i = 0; i < 32; i++)
		bytes[i] = (uint8_t)(fields[i / 8] >> (8 * (i % 8)));
	return nopfs_catalog_fnv1a(digest, bytes, sizeof(bytes));
}

static void note_times(struct catalog_snapshot *snapshot, const struct catalog_stamp *stamp)
{
	if (stamp->mtime_ns > snapshot->newest_ns)
		snapshot->newest_ns = stamp->mtime_ns;
	if (stamp->ctime_ns > snapshot->newest_ns)
		snapshot->newest_ns = stamp->ctime_ns;
}

void nopfs_catalog_snapshot_init(struct catalog_snapshot *snapshot)
{
	memset(snapshot, 0, sizeof(*snapshot));
	snapshot->sample_digest = CATALOG_FNV_INIT;
	snapshot->newest_ns = INT64_MIN;
}

void nopfs_catalog_snapshot_fini(struct catalog_snapshot *snapshot)
{
	uint64_t i;

	for (i = 0; i < snapshot->dir_count; i++)
		free(snapshot->dir_paths[i]);
	for (i = 0; i < snapshot->watch_count; i++)
		free(snapshot->watch_paths[i]);
	free(snapshot->dir_paths);
	free(snapshot->dir_stamps);
	free(snapshot->watch_paths);
	nopfs_catalog_snapshot_init(snapshot);
}

nopfs_status nopfs_catalog_snapshot_add_dir(struct catalog_snapshot *snapshot, const char *path,
                                            const struct stat *st)
{
	char *copy;

	if (snapshot->dir_count == snapshot->dir_capacity) {
		uint64_t capacity = snapshot->dir_capacity ? snapshot->dir_capacity * 2 : 64;
		struct catalog_stamp *stamps;
		char **paths;

		paths = realloc(snapshot->dir_paths, capacity * sizeof(*paths));
		if (!paths)
			goto out_nomem;
		snapshot->dir_paths = paths;
		stamps = realloc(snapshot->dir_stamps, capacity * sizeof(*stamps));
		if (!stamps)
			goto out_nomem;
		snapshot->dir_stamps = stamps;
		snapshot->dir_capacity = capacity;
	}
	copy = strdup(path);
	if (!copy)
		goto out_nomem;
	snapshot->dir_paths[snapshot->dir_count] = copy;
	nopfs_catalog_stamp_from_stat(st, &snapshot->dir_stamps[snapshot->dir_count]);
	note_times(snapshot, &snapshot->dir_stamps[snapshot->dir_count]);
	snapshot->dir_count++;
	return NOPFS_OK;

out_nomem:
	nopfs_error("out of memory recording directory '%s'", path);
	return NOPFS_ERR_NOMEM;
}

nopfs_status nopfs_catalog_snapshot_add_watch(struct catalog_snapshot *snapshot, const char *path)
{
	char *copy;

	if (snapshot->watch_count == snapshot->watch_capacity) {
		uint64_t capacity = snapshot->watch_capacity ? snapshot->watch_capacity * 2 : 16;
		char **paths = realloc(snapshot->watch_paths, capacity * sizeof(*paths));

		if (!paths)
			goto out_nomem;
		snapshot->watch_paths = paths;
		snapshot->watch_capacity = capacity;
	}
	copy = strdup(path);
	if (!copy)
		goto out_nomem;
	snapshot->watch_paths[snapshot->watch_count++] = copy;
	return NOPFS_OK;

out_nomem:
	nopfs_error("out of memory recording symlink '%s'", path);
	return NOPFS_ERR_NOMEM;
}

void nopfs_catalog_snapshot_add_sample(struct catalog_snapshot *snapshot,
                                       const struct catalog_stamp *stamp)
{
	snapshot->sample_digest = nopfs_catalog_digest_stamp(snapshot->sample_digest, stamp);
	note_times(snapshot, stamp);
}

void nopfs_catalog_snapshot_set_list(struct catalog_snapshot *snapshot, const struct stat *st)
{
	nopfs_catalog_stamp_from_stat(st, &snapshot->list_stamp);
	note_times(snapshot, &snapshot->list_stamp);
}
