/*
 * The imagefolder format: torchvision 0.14's find_classes() and
 * make_dataset() order, reproduced exactly.
 *
 * Classes are the entries of the root that os.scandir() reports as
 * directories (symlinks followed), sorted. Each class directory is walked
 * like os.walk(followlinks=True) (catalog_walk.c); the walked directories are
 * then taken in sorted order of their path strings ("a/b" < "a/b-x" <
 * "a/b/c", not depth-first) and the sample files of each in sorted order.
 * Names are compared as Python compares str (pyname.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog_walk.h"
#include "common/log.h"
#include "pyname.h"

static int compare_names(const void *a, const void *b)
{
	return nopfs_pyname_compare(*(char *const *)a, *(char *const *)b);
}

static int compare_files(const void *a, const void *b)
{
	return nopfs_pyname_compare(((const struct folder_file *)a)->name,
	                            ((const struct folder_file *)b)->name);
}

static int compare_dirs(const void *a, const void *b)
{
	return nopfs_pyname_compare(((const struct folder_dir *)a)->path,
	                            ((const struct folder_dir *)b)->path);
}

/* Append the samples of class @label in sorted(os.walk()) order. */
static nopfs_status emit_class(struct folder_walk *walk, struct nopfs_catalog *catalog,
                               uint32_t label)
{
	const char *name = catalog->class_names[label];
	uint64_t before = catalog->count;
	nopfs_status status = NOPFS_OK;
	char *path = NULL;
	size_t capacity = 0, d, f;

	if (walk->dir_count)
		qsort(walk->dirs, walk->dir_count, sizeof(*walk->dirs), compare_dirs);
	for (d = 0; !status && d < walk->dir_count; d++) {
		struct folder_dir *dir = &walk->dirs[d];

		if (dir->file_count)
			qsort(dir->files, dir->file_count, sizeof(*dir->files), compare_files);
		for (f = 0; !status && f < dir->file_count; f++) {
			size_t length = strlen(dir->path) + strlen(dir->files[f].name) + 2;

			if (length > capacity) {
				char *bigger = realloc(path, length);

				if (!bigger) {
					nopfs_error("out of memory listing class '%s'", name);
					status = NOPFS_ERR_NOMEM;
					break;
				}
				path = bigger;
				capacity = length;
			}
			snprintf(path, length, "%s/%s", dir->path, dir->files[f].name);
			status = nopfs_catalog_append(catalog, path, dir->files[f].stamp.size,
			                              label);
			if (!status && walk->snapshot)
				nopfs_catalog_snapshot_add_sample(walk->snapshot,
				                                  &dir->files[f].stamp);
		}
	}
	free(path);
	if (!status && catalog->count == before) {
		nopfs_error("class '%s' ('%s%s') has no file with extension %s", name, walk->prefix,
		            name, walk->extension_text);
		status = NOPFS_ERR_EMPTY;
	}
	return status;
}

/* The class directories of the root, sorted; non-directory symlinks are watched. */
static nopfs_status find_classes(struct folder_walk *walk, DIR *root, struct name_list *classes)
{
	struct entry_kind kind;
	struct dirent *entry;
	nopfs_status status;

	for (;;) {
		errno = 0;
		entry = readdir(root);
		if (!entry)
			break;
		if (!strcmp(entry->d_name, ".") || !strcmp(entry->d_name, ".."))
			continue;
		status = nopfs_catalog_walk_classify(walk, dirfd(root), "", entry, true, &kind);
		if (!status && kind.is_dir)
			status = nopfs_catalog_names_add(classes, entry->d_name);
		else if (!status && kind.is_link)
			status = nopfs_catalog_walk_watch(walk, "", entry->d_name);
		if (status)
			return status;
	}
	if (errno) {
		int err = errno;

		nopfs_error("cannot read dataset root '%s': %s", walk->prefix, strerror(err));
		return nopfs_status_from_errno(err);
	}
	if (classes->count)
		qsort(classes->names, classes->count, sizeof(*classes->names), compare_names);
	return NOPFS_OK;
}

/* Open the root for reading and list its classes. */
static nopfs_status open_classes(struct folder_walk *walk, const char *root, int root_fd, DIR **out,
                                 struct name_list *classes)
{
	nopfs_status status;
	struct stat st;
	DIR *dir;
	int fd, err;

	fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0 || !(dir = fdopendir(fd))) {
		err = errno;
		nopfs_error("cannot read dataset root '%s': %s", root, strerror(err));
		if (fd >= 0)
			close(fd);
		return nopfs_status_from_errno(err);
	}
	status = nopfs_catalog_walk_enter(walk, &st, "");
	if (!status && walk->snapshot)
		status = nopfs_catalog_snapshot_add_dir(walk->snapshot, ".", &st);
	if (!status)
		status = find_classes(walk, dir, classes);
	if (!status && classes->count == 0) {
		nopfs_error("dataset root '%s' has no class directories", root);
		status = NOPFS_ERR_EMPTY;
	}
	if (status) {
		closedir(dir);
		return status;
	}
	*out = dir;
	return NOPFS_OK;
}

static nopfs_status walk_classes(struct folder_walk *walk, DIR *root, struct name_list *classes,
                                 struct nopfs_catalog *catalog)
{
	nopfs_status status = NOPFS_OK;
	uint64_t first, second;
	size_t i;

	for (i = 0; !status && i < classes->count; i++) {
		status = nopfs_catalog_add_class(catalog, classes->names[i]);
		if (!status)
			status = nopfs_catalog_walk_dir(walk, dirfd(root), classes->names[i],
			                                classes->names[i]);
		if (!status)
			status = emit_class(walk, catalog, (uint32_t)i);
		nopfs_catalog_walk_clear(walk);
	}
	if (status)
		return status;
	status = nopfs_catalog_seal(catalog, &first, &second);
	if (status == NOPFS_ERR_DUPLICATE) {
		nopfs_error("'%s' walked twice: a bug", nopfs_catalog_path_at(catalog, second));
		status = NOPFS_ERR_INTERNAL;
	}
	return status;
}

static char *make_prefix(const char *root)
{
	size_t length = strlen(root);
	char *prefix = malloc(length + 2);

	if (!prefix)
		return NULL;
	memcpy(prefix, root, length + 1);
	if (root[length - 1] != '/') {
		prefix[length] = '/';
		prefix[length + 1] = '\0';
	}
	return prefix;
}

nopfs_status nopfs_catalog_scan_folder(const struct nopfs_catalog_options *options, int root_fd,
                                       struct catalog_snapshot *snapshot,
                                       struct nopfs_catalog **out)
{
	struct folder_walk walk = { .snapshot = snapshot };
	struct name_list classes = { 0 };
	struct nopfs_catalog *catalog;
	nopfs_status status;
	char *prefix;
	DIR *root = NULL;

	walk.extension_text = options->extensions ? options->extensions : NOPFS_IMAGE_EXTENSIONS;
	status = nopfs_catalog_extensions_parse(options->extensions, &walk.extensions);
	if (status)
		return status;
	status = nopfs_catalog_meta_init(&walk.meta, options->meta);
	if (status) {
		nopfs_error("out of memory scanning '%s'", options->root);
		goto out_free_extensions;
	}
	prefix = make_prefix(options->root);
	if (!prefix) {
		nopfs_error("out of memory scanning '%s'", options->root);
		status = NOPFS_ERR_NOMEM;
		goto out_free_extensions;
	}
	walk.prefix = prefix;
	status = open_classes(&walk, options->root, root_fd, &root, &classes);
	if (status)
		goto out_free_walk;
	status = nopfs_catalog_new(options->root, true, &catalog);
	if (status)
		goto out_close_root;
	status = walk_classes(&walk, root, &classes, catalog);
	if (status) {
		nopfs_catalog_destroy(catalog);
		goto out_close_root;
	}
	*out = catalog;

out_close_root:
	closedir(root);
out_free_walk:
	nopfs_catalog_names_free(&classes);
	free(walk.dirs);
	free(walk.ancestors);
	free(walk.scratch);
	free(prefix);
out_free_extensions:
	nopfs_catalog_meta_fini(&walk.meta);
	nopfs_catalog_extensions_free(walk.extensions);
	return status;
}
