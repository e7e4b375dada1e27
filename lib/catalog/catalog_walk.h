/*
 * The os.walk(followlinks=True) of one imagefolder class directory, shared
 * by catalog_walk.c (the walk) and catalog_folder.c (classes and order).
 */
#ifndef NOPFS_CATALOG_WALK_H
#define NOPFS_CATALOG_WALK_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "catalog_internal.h"

struct folder_file {
	char *name;
	struct catalog_stamp stamp;
};

/* One walked directory and its sample files. */
struct folder_dir {
	char *path; /* relative to the root */
	struct folder_file *files;
	size_t file_count;
	size_t file_capacity;
};

/* A directory on the current walk path, to detect symlink cycles. */
struct folder_ancestor {
	dev_t dev;
	ino_t ino;
	const char *path;
};

/* The state of a scan: everything that outlives one directory. */
struct folder_walk {
	const char *prefix; /* the root and a slash, as os.path.join() makes paths */
	const char *extension_text;
	char **extensions;
	struct catalog_snapshot *snapshot;
	struct catalog_meta meta; /* stats from the dataset's metadata, when scanned */
	struct folder_dir *dirs;  /* walked directories of the current class */
	size_t dir_count;
	size_t dir_capacity;
	struct folder_ancestor *ancestors;
	size_t depth;
	size_t ancestor_capacity;
	char *scratch; /* the lower-cased path of a file */
	size_t scratch_capacity;
};

/* A growing array of names. */
struct name_list {
	char **names;
	size_t count;
	size_t capacity;
};

nopfs_status nopfs_catalog_names_add(struct name_list *list, const char *name);
void nopfs_catalog_names_free(struct name_list *list);

/* What os.scandir()'s DirEntry says of an entry. */
struct entry_kind {
	bool is_dir; /* after following symlinks */
	bool is_link;
	bool has_stat; /* st holds the followed stat */
	struct stat st;
};

/*
 * Classify entry @entry of directory @fd (at @path, "" for the root). A
 * symlink that leads nowhere is a file to os.walk(); with @strict, as in
 * find_classes(), only a missing target is. Errors are logged.
 */
nopfs_status nopfs_catalog_walk_classify(struct folder_walk *walk, int fd, const char *path,
                                         const struct dirent *entry, bool strict,
                                         struct entry_kind *kind);

/* Remember symlink @name in @path (not a directory, not a sample) for the cache. */
nopfs_status nopfs_catalog_walk_watch(struct folder_walk *walk, const char *path, const char *name);

/* Push the directory @st reached at @path on the walk path, refusing cycles. */
nopfs_status nopfs_catalog_walk_enter(struct folder_walk *walk, const struct stat *st,
                                      const char *path);

/*
 * Walk directory @name of @parent_fd, at @path relative to the root, and
 * everything below it: each directory becomes one of walk->dirs with its
 * sample files, unsorted.
 */
nopfs_status nopfs_catalog_walk_dir(struct folder_walk *walk, int parent_fd, const char *name,
                                    const char *path);

/* Free walk->dirs (keeping the array for the next class). */
void nopfs_catalog_walk_clear(struct folder_walk *walk);

#endif
