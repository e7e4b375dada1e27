/*
 * os.walk(top, followlinks=True) as torchvision's make_dataset() runs it on a
 * class directory: an entry is a directory if it is one after following
 * symlinks, anything else (a dangling symlink too) is a file. Samples are the
 * files whose lower-cased path ends with an extension. Where os.walk()
 * silently skips (a directory it cannot open) or loops (a symlink cycle), we
 * refuse with an error naming the path.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog_walk.h"
#include "common/cancel.h"
#include "common/log.h"
#include "pyname.h"

/* Whether prefix/dir/name, lower-cased as Python would, ends with an extension. */
static nopfs_status has_extension(struct folder_walk *walk, const char *dir, const char *name,
                                  bool *match)
{
	size_t length = strlen(walk->prefix) + strlen(dir) + strlen(name) + 2;
	char *path, **extension;
	size_t lowered;

	/* The path goes in the upper half; lower-casing never lengthens it. */
	if (2 * length > walk->scratch_capacity) {
		char *scratch = realloc(walk->scratch, 2 * length);

		if (!scratch) {
			nopfs_error("out of memory matching '%s%s/%s'", walk->prefix, dir, name);
			return NOPFS_ERR_NOMEM;
		}
		walk->scratch = scratch;
		walk->scratch_capacity = 2 * length;
	}
	path = walk->scratch + walk->scratch_capacity / 2;
	snprintf(path, length, "%s%s/%s", walk->prefix, dir, name);
	lowered = nopfs_pyname_fold(path, walk->scratch);
	*match = false;
	for (extension = walk->extensions; *extension; extension++) {
		size_t n = strlen(*extension);

		if (n <= lowered && memcmp(walk->scratch + lowered - n, *extension, n) == 0) {
			*match = true;
			break;
		}
	}
	return NOPFS_OK;
}

nopfs_status nopfs_catalog_names_add(struct name_list *list, const char *name)
{
	char *copy;

	if (list->count == list->capacity) {
		size_t capacity = list->capacity ? list->capacity * 2 : 16;
		char **names = realloc(list->names, capacity * sizeof(*names));

		if (!names)
			goto out_nomem;
		list->names = names;
		list->capacity = capacity;
	}
	copy = strdup(name);
	if (!copy)
		goto out_nomem;
	list->names[list->count++] = copy;
	return NOPFS_OK;

out_nomem:
	nopfs_error("out of memory listing '%s'", name);
	return NOPFS_ERR_NOMEM;
}

void nopfs_catalog_names_free(struct name_list *list)
{
	size_t i;

	for (i = 0; i < list->count; i++)
		free(list->names[i]);
	free(list->names);
	memset(list, 0, sizeof(*list));
}

void nopfs_catalog_walk_clear(struct folder_walk *walk)
{
	size_t i, j;

	for (i = 0; i < walk->dir_count; i++) {
		for (j = 0; j < walk->dirs[i].file_count; j++)
			free(walk->dirs[i].files[j].name);
		free(walk->dirs[i].files);
		free(walk->dirs[i].path);
	}
	walk->dir_count = 0;
}

static nopfs_status add_dir(struct folder_walk *walk, const char *path, size_t *index)
{
	struct folder_dir *dir;

	if (walk->dir_count == walk->dir_capacity) {
		size_t capacity = walk->dir_capacity ? walk->dir_capacity * 2 : 16;
		struct folder_dir *dirs = realloc(walk->dirs, capacity * sizeof(*dirs));

		if (!dirs)
			goto out_nomem;
		walk->dirs = dirs;
		walk->dir_capacity = capacity;
	}
	dir = &walk->dirs[walk->dir_count];
	memset(dir, 0, sizeof(*dir));
	dir->path = strdup(path);
	if (!dir->path)
		goto out_nomem;
	*index = walk->dir_count++;
	return NOPFS_OK;

out_nomem:
	nopfs_error("out of memory walking '%s%s'", walk->prefix, path);
	return NOPFS_ERR_NOMEM;
}

static nopfs_status add_file(struct folder_walk *walk, size_t index, const char *name,
                             const struct stat *st)
{
	struct folder_dir *dir = &walk->dirs[index];
	struct folder_file *file;

	if (dir->file_count == dir->file_capacity) {
		size_t capacity = dir->file_capacity ? dir->file_capacity * 2 : 16;
		struct folder_file *files = realloc(dir->files, capacity * sizeof(*files));

		if (!files)
			goto out_nomem;
		dir->files = files;
		dir->file_capacity = capacity;
	}
	file = &dir->files[dir->file_count];
	file->name = strdup(name);
	if (!file->name)
		goto out_nomem;
	nopfs_catalog_stamp_from_stat(st, &file->stamp);
	dir->file_count++;
	return NOPFS_OK;

out_nomem:
	nopfs_error("out of memory walking '%s%s/%s'", walk->prefix, dir->path, name);
	return NOPFS_ERR_NOMEM;
}

nopfs_status nopfs_catalog_walk_enter(struct folder_walk *walk, const struct stat *st,
                                      const char *path)
{
	size_t i;

	for (i = 0; i < walk->depth; i++) {
		if (walk->ancestors[i].dev == st->st_dev && walk->ancestors[i].ino == st->st_ino) {
			nopfs_error("symlink cycle: '%s%s' is the directory '%s%s' again",
			            walk->prefix, path, walk->prefix, walk->ancestors[i].path);
			return NOPFS_ERR_INVALID;
		}
	}
	if (walk->depth == walk->ancestor_capacity) {
		size_t capacity = walk->ancestor_capacity ? walk->ancestor_capacity * 2 : 16;
		struct folder_ancestor *ancestors;

		ancestors = realloc(walk->ancestors, capacity * sizeof(*ancestors));
		if (!ancestors) {
			nopfs_error("out of memory walking '%s%s'", walk->prefix, path);
			return NOPFS_ERR_NOMEM;
		}
		walk->ancestors = ancestors;
		walk->ancestor_capacity = capacity;
	}
	walk->ancestors[walk->depth].dev = st->st_dev;
	walk->ancestors[walk->depth].ino = st->st_ino;
	walk->ancestors[walk->depth].path = path;
	walk->depth++;
	return NOPFS_OK;
}

nopfs_status nopfs_catalog_walk_classify(struct folder_walk *walk, int fd, const char *path,
                                         const struct dirent *entry, bool strict,
                                         struct entry_kind *kind)
{
	const char *sep = path[0] ? "/" : "";
	unsigned char type = entry->d_type;
	int err;

	memset(kind, 0, sizeof(*kind));
	if (type == DT_UNKNOWN) {
		if (nopfs_catalog_meta_stat(&walk->meta, fd, path, entry->d_name, &kind->st,
		                            AT_SYMLINK_NOFOLLOW) != 0)
			goto out_error;
		if (S_ISLNK(kind->st.st_mode)) {
			type = DT_LNK;
		} else {
			type = S_ISDIR(kind->st.st_mode) ? DT_DIR : DT_REG;
			kind->has_stat = true;
		}
	}
	if (type == DT_DIR) {
		kind->is_dir = true;
		return NOPFS_OK;
	}
	if (type != DT_LNK)
		return NOPFS_OK;
	kind->is_link = true;
	if (nopfs_catalog_meta_stat(&walk->meta, fd, path, entry->d_name, &kind->st, 0) == 0) {
		kind->has_stat = true;
		kind->is_dir = S_ISDIR(kind->st.st_mode);
		return NOPFS_OK;
	}
	if (errno == ENOENT || (!strict && (errno == ENOTDIR || errno == ELOOP)))
		return NOPFS_OK;

out_error:
	err = errno;
	nopfs_error("cannot stat '%s%s%s%s': %s", walk->prefix, path, sep, entry->d_name,
	            strerror(err));
	return nopfs_status_from_errno(err);
}

static nopfs_status add_sample(struct folder_walk *walk, int fd, const char *path, size_t index,
                               const char *name, struct entry_kind *kind)
{
	int err;

	if (!kind->has_stat &&
	    nopfs_catalog_meta_stat(&walk->meta, fd, path, name, &kind->st, 0) != 0) {
		err = errno;
		nopfs_error("cannot stat sample '%s%s/%s': %s", walk->prefix, path, name,
		            strerror(err));
		return nopfs_status_from_errno(err);
	}
	if (nopfs_catalog_meta_access(&walk->meta, fd, name, &kind->st) != 0) {
		err = errno;
		nopfs_error("cannot read sample '%s%s/%s': %s", walk->prefix, path, name,
		            strerror(err));
		return nopfs_status_from_errno(err);
	}
	return add_file(walk, index, name, &kind->st);
}

nopfs_status nopfs_catalog_walk_watch(struct folder_walk *walk, const char *path, const char *name)
{
	size_t length = strlen(path) + strlen(name) + 2;
	nopfs_status status;
	char *full;

	if (!walk->snapshot)
		return NOPFS_OK;
	full = malloc(length);
	if (!full) {
		nopfs_error("out of memory walking '%s%s/%s'", walk->prefix, path, name);
		return NOPFS_ERR_NOMEM;
	}
	snprintf(full, length, "%s%s%s", path, path[0] ? "/" : "", name);
	status = nopfs_catalog_snapshot_add_watch(walk->snapshot, full);
	free(full);
	return status;
}

/* Read directory @dir at @path: samples go to dirs[@index], subdirectories to @subdirs. */
static nopfs_status read_dir(struct folder_walk *walk, DIR *dir, const char *path, size_t index,
                             struct name_list *subdirs)
{
	struct entry_kind kind;
	struct dirent *entry;
	nopfs_status status;
	bool match;

	for (;;) {
		if (nopfs_stop_requested())
			return NOPFS_ERR_CANCELED; /* a dataset's scan may take minutes */
		errno = 0;
		entry = readdir(dir);
		if (!entry)
			break;
		if (!strcmp(entry->d_name, ".") || !strcmp(entry->d_name, ".."))
			continue;
		status = nopfs_catalog_walk_classify(walk, dirfd(dir), path, entry, false, &kind);
		if (status)
			return status;
		if (kind.is_dir) {
			status = nopfs_catalog_names_add(subdirs, entry->d_name);
		} else {
			status = has_extension(walk, path, entry->d_name, &match);
			if (!status && match)
				status = add_sample(walk, dirfd(dir), path, index, entry->d_name,
				                    &kind);
			else if (!status && kind.is_link)
				status = nopfs_catalog_walk_watch(walk, path, entry->d_name);
		}
		if (status)
			return status;
	}
	if (errno) {
		int err = errno;

		nopfs_error("cannot read directory '%s%s': %s", walk->prefix, path, strerror(err));
		return nopfs_status_from_errno(err);
	}
	return NOPFS_OK;
}

nopfs_status nopfs_catalog_walk_dir(struct folder_walk *walk, int parent_fd, const char *name,
                                    const char *path)
{
	struct name_list subdirs = { 0 };
	nopfs_status status;
	struct stat st;
	size_t index, i;
	DIR *dir;
	int fd, err;

	fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		err = errno;
		nopfs_error("cannot open directory '%s%s': %s", walk->prefix, path, strerror(err));
		status = nopfs_status_from_errno(err);
		goto out_close;
	}
	status = nopfs_catalog_walk_enter(walk, &st, path);
	if (status)
		goto out_close;
	if (walk->snapshot)
		status = nopfs_catalog_snapshot_add_dir(walk->snapshot, path, &st);
	if (!status)
		status = add_dir(walk, path, &index);
	if (status)
		goto out_leave;
	dir = fdopendir(fd);
	if (!dir) {
		err = errno;
		nopfs_error("cannot read directory '%s%s': %s", walk->prefix, path, strerror(err));
		status = nopfs_status_from_errno(err);
		goto out_leave;
	}
	fd = -1;
	status = read_dir(walk, dir, path, index, &subdirs);
	for (i = 0; !status && i < subdirs.count; i++) {
		size_t length = strlen(path) + strlen(subdirs.names[i]) + 2;
		char *child = malloc(length);

		if (!child) {
			nopfs_error("out of memory walking '%s%s'", walk->prefix, path);
			status = NOPFS_ERR_NOMEM;
			break;
		}
		snprintf(child, length, "%s/%s", path, subdirs.names[i]);
		status = nopfs_catalog_walk_dir(walk, dirfd(dir), subdirs.names[i], child);
		free(child);
	}
	nopfs_catalog_names_free(&subdirs);
	closedir(dir);
out_leave:
	walk->depth--;
out_close:
	if (fd >= 0)
		close(fd);
	return status;
}
