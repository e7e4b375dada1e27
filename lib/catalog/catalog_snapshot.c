/*
 * What a scan saw, for the cache to validate later: the stamps of files and
 * directories, and the snapshot that gathers them.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "catalog_internal.h"
#include "common/log.h"

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
