/* Caches that outlive a job: the dataset's directory, its manifest and data. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "job.h"
#include "keep.h"
#include "common/crc32c.h"
#include "common/fdio.h"
#include "common/log.h"
#include "common/private.h"
#include "common/readall.h"
#include "common/units.h"
#include "tier/tier.h"

#define MANIFEST_MAGIC   "NOPFSKEP"
#define MANIFEST_VERSION 1
/* The most a manifest may take: 64 bytes a sample and its path, for 2^32 samples. */
#define MANIFEST_MAX ((size_t)1 << 38)
#define NOTED        ((uint64_t)1 << 32)

/* In the node's byte order: the files never leave the node. */
struct manifest_header {
	char magic[8];
	uint32_t version;
	uint32_t record_size;
	uint64_t count;
	uint64_t blob_length;
	uint64_t data_length; /* "data" is at least this long */
	uint32_t checksum;    /* CRC32C of everything after the header */
	uint32_t pad;
};

struct manifest_record {
	uint64_t path;        /* offset of its path (relative to the root) in the blob */
	uint32_t path_length; /* not NUL-terminated */
	uint32_t crc;         /* of its bytes */
	uint64_t offset;      /* in "data" */
	uint64_t size;
	uint64_t ino;
	int64_t mtime_sec, ctime_sec;
	uint32_t mtime_nsec, ctime_nsec;
};

void keep_init(struct keep *keep)
{
	memset(keep, 0, sizeof(*keep));
	keep->dir_fd = keep->old_fd = keep->data_fd = -1;
	keep->ssd_tier = -1;
}

static void __attribute__((format(printf, 2, 3)))
say_why(struct keep *keep, const char *format, ...)
{
	va_list args;

	va_start(args, format);
	vsnprintf(keep->why, sizeof(keep->why), format, args);
	va_end(args);
	nopfs_warning("kept cache: %s", keep->why);
}

/* The identity of @path's file from @meta: false when unknown. */
static bool identity(const struct nopfs_meta_view *meta, const char *path,
                     struct manifest_record *record)
{
	struct stat st;

	if (nopfs_meta_stat_path(meta, path, true, &st) != 0 || !S_ISREG(st.st_mode))
		return false;
	record->ino = st.st_ino;
	record->size = (uint64_t)st.st_size;
	record->mtime_sec = st.st_mtim.tv_sec;
	record->mtime_nsec = (uint32_t)st.st_mtim.tv_nsec;
	record->ctime_sec = st.st_ctim.tv_sec;
	record->ctime_nsec = (uint32_t)st.st_ctim.tv_nsec;
	return true;
}

/* Whether @record's file still is what it was, from @meta. */
static bool same_identity(const struct nopfs_meta_view *meta, const char *path,
                          const struct manifest_record *record)
{
	struct manifest_record now;

	return identity(meta, path, &now) && now.ino == record->ino && now.size == record->size &&
	       now.mtime_sec == record->mtime_sec && now.mtime_nsec == record->mtime_nsec &&
	       now.ctime_sec == record->ctime_sec && now.ctime_nsec == record->ctime_nsec;
}

/*
 * Remove what dead agents left in the dataset's directory (we hold its lock,
 * so no live one has anything there): new data and manifests never committed.
 */
static void remove_leftovers(struct keep *keep)
{
	int fd = openat(keep->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *entry;
	DIR *dir;

	if (fd < 0 || !(dir = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((entry = readdir(dir)))
		if (strncmp(entry->d_name, "data.", 5) == 0 ||
		    strncmp(entry->d_name, "manifest.", 9) == 0)
			unlinkat(keep->dir_fd, entry->d_name, 0);
	closedir(dir);
}

/* Take the records of the manifest in @data that still hold, for @job. */
static bool use_manifest(struct keep *keep, const uint8_t *data, size_t length,
                         const struct job *job, const struct nopfs_meta_view *meta,
                         uint64_t data_size)
{
	const struct manifest_header *header = (const void *)data;
	const struct manifest_record *records;
	uint64_t count = job->sampler.count;
	const char *blob;

	if (length < sizeof(*header) || memcmp(header->magic, MANIFEST_MAGIC, 8) != 0 ||
	    header->version != MANIFEST_VERSION || header->record_size != sizeof(*records))
		return false;
	if (header->count > (length - sizeof(*header)) / sizeof(*records) ||
	    header->blob_length != length - sizeof(*header) - header->count * sizeof(*records) ||
	    header->checksum != nopfs_crc32c(data + sizeof(*header), length - sizeof(*header)) ||
	    header->data_length > data_size)
		return false;
	records = (const void *)(data + sizeof(*header));
	blob = (const char *)(records + header->count);
	keep->old_offset = malloc(count * sizeof(*keep->old_offset));
	keep->old_crc = calloc(count, sizeof(*keep->old_crc));
	if (!keep->old_offset || !keep->old_crc)
		return false;
	memset(keep->old_offset, 0xff, count * sizeof(*keep->old_offset));
	for (uint64_t r = 0; r < header->count; r++) {
		const struct manifest_record *record = &records[r];
		char path[PATH_MAX];
		int64_t sample;

		if (record->path > header->blob_length ||
		    record->path_length > header->blob_length - record->path ||
		    record->path_length >= sizeof(path) || record->offset > data_size ||
		    record->size > data_size - record->offset)
			return false;
		memcpy(path, blob + record->path, record->path_length);
		path[record->path_length] = '\0';
		sample = nopfs_catalog_find(job->catalog, path);
		if (sample < 0 ||
		    nopfs_catalog_size(job->catalog, (uint64_t)sample) != record->size ||
		    !same_identity(meta, path, record)) {
			keep->stale_samples++;
			keep->stale_bytes += record->size;
			continue;
		}
		if (keep->old_offset[sample] != UINT64_MAX)
			continue; /* listed twice: the first one stands */
		keep->old_offset[sample] = record->offset;
		keep->old_crc[sample] = record->crc;
		keep->old_samples++;
		keep->old_bytes += record->size;
	}
	return true;
}

/* What earlier jobs left: "manifest" and "data", if both are there and ours. */
static void load_old(struct keep *keep, const struct job *job, const struct nopfs_meta_view *meta)
{
	const char *why = NULL;
	struct stat st;
	size_t length;
	void *data;
	int fd;

	switch (nopfs_private_file_openat(keep->dir_fd, "manifest", O_CLOEXEC, -1, &fd, &why)) {
	case NOPFS_OK:
		break;
	case NOPFS_ERR_NOT_FOUND:
		return; /* nothing kept yet */
	default:
		nopfs_warning("kept cache: '%s/manifest' %s: not used", keep->directory, why);
		return;
	}
	/* its mtime is the cache's last use, for the limits of the job epilog */
	futimens(fd, NULL);
	if (nopfs_read_all(fd, MANIFEST_MAX, &data, &length) != NOPFS_OK) {
		nopfs_warning("kept cache: cannot read '%s/manifest': %m: not used",
		              keep->directory);
		close(fd);
		return;
	}
	close(fd);
	if (nopfs_private_file_openat(keep->dir_fd, "data", O_CLOEXEC, -1, &keep->old_fd, &why) !=
	            NOPFS_OK ||
	    fstat(keep->old_fd, &st) != 0) {
		nopfs_warning("kept cache: '%s/data' %s: not used", keep->directory,
		              why ? why : "cannot be read");
	} else if (!use_manifest(keep, data, length, job, meta, (uint64_t)st.st_size)) {
		nopfs_warning("kept cache: '%s/manifest' is damaged or not for this dataset: not "
		              "used",
		              keep->directory);
	} else {
		char held[32], stale[32];

		nopfs_info("kept cache: %" PRIu64 " samples (%s) usable in '%s', %" PRIu64
		           " stale (%s: their files changed or went)",
		           keep->old_samples,
		           nopfs_format_size(keep->old_bytes, held, sizeof(held)), keep->directory,
		           keep->stale_samples,
		           nopfs_format_size(keep->stale_bytes, stale, sizeof(stale)));
		free(data);
		return;
	}
	free(data);
	free(keep->old_offset);
	free(keep->old_crc);
	keep->old_offset = NULL;
	keep->old_crc = NULL;
	keep->old_samples = keep->old_bytes = keep->stale_samples = keep->stale_bytes = 0;
	if (keep->old_fd >= 0)
		close(keep->old_fd);
	keep->old_fd = -1;
}

/* The dataset's directory in @keep_dir, made if need be: its fd, or -1 (said why). */
static int dataset_directory(struct keep *keep, const char *keep_dir, uint64_t key)
{
	const char *why = "";
	struct statfs fs;
	struct stat st;
	char name[32];
	int parent, fd;

	if (nopfs_private_dir_open(keep_dir, &parent, NULL, &why) != NOPFS_OK) {
		say_why(keep, "--keep-dir '%s' %s: nothing is kept", keep_dir, why);
		return -1;
	}
	if (fstatfs(parent, &fs) == 0 && nopfs_fs_shared_name((unsigned long)fs.f_type)) {
		say_why(keep, "--keep-dir '%s' is on a shared file system (%s): nothing is kept",
		        keep_dir, nopfs_fs_shared_name((unsigned long)fs.f_type));
		close(parent);
		return -1;
	}
	snprintf(name, sizeof(name), "%016" PRIx64, key);
	if (mkdirat(parent, name, 0700) != 0 && errno != EEXIST) {
		say_why(keep, "cannot make '%s/%s': %s: nothing is kept", keep_dir, name,
		        strerror(errno));
		close(parent);
		return -1;
	}
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(parent);
	if (fd < 0 || fstat(fd, &st) != 0 || !nopfs_private_dir_is(&st, geteuid())) {
		say_why(keep, "'%s/%s' is not a private directory of ours: nothing is kept",
		        keep_dir, name);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	snprintf(keep->directory, sizeof(keep->directory), "%s/%s", keep_dir, name);
	return fd;
}

void keep_open(struct keep *keep, const char *keep_dir, const struct nopfs_catalog_options *dataset,
               const struct job *job, const struct nopfs_meta_view *meta, const char *name)
{
	char path[PATH_MAX];
	uint64_t key;

	if (!keep_dir || !keep_dir[0])
		return;
	if (!meta) {
		say_why(keep,
		        "the files of the dataset were not stat'd at the start (no metadata): "
		        "nothing is kept");
		return;
	}
	if (nopfs_catalog_path(job->catalog, 0, path, sizeof(path)) == NOPFS_ERR_NOT_FOUND ||
	    !nopfs_catalog_key(dataset, &key)) {
		say_why(keep,
		        "the dataset has no files to identify its samples by: nothing is kept");
		return;
	}
	/*
	 * The job epilog may be removing the directory (its limits) while we
	 * lock it: a directory locked after it was unlinked is not the one at
	 * the name any more; then the name is made anew, once.
	 */
	for (int attempt = 0;; attempt++) {
		struct stat locked, named;

		keep->dir_fd = dataset_directory(keep, keep_dir, key);
		if (keep->dir_fd < 0)
			return;
		if (flock(keep->dir_fd, LOCK_EX | LOCK_NB) != 0) {
			say_why(keep,
			        "'%s' is in use by another job of yours on this node (or being "
			        "removed by the limits of the job epilog): this job keeps nothing",
			        keep->directory);
			close(keep->dir_fd);
			keep->dir_fd = -1;
			return;
		}
		if (fstat(keep->dir_fd, &locked) == 0 && lstat(keep->directory, &named) == 0 &&
		    locked.st_dev == named.st_dev && locked.st_ino == named.st_ino)
			break;
		close(keep->dir_fd);
		keep->dir_fd = -1;
		if (attempt == 1) {
			say_why(keep, "'%s' went away as it was taken: this job keeps nothing",
			        keep->directory);
			return;
		}
	}
	/* data.JOB.TOKEN: the job epilog removes a killed agent's */
	snprintf(keep->data_name, sizeof(keep->data_name), "data.%s",
	         strncmp(name, "nopfs-", 6) == 0 ? name + 6 : name);
	remove_leftovers(keep);
	load_old(keep, job, meta);
	keep->active = true;
}

uint8_t *keep_held(const struct keep *keep, uint64_t count)
{
	uint8_t *held;

	if (!keep->old_offset || keep->old_samples == 0)
		return NULL;
	held = calloc(count / 8 + 1, 1);
	for (uint64_t k = 0; held && k < count; k++)
		if (keep->old_offset[k] != UINT64_MAX)
			held[k >> 3] |= (uint8_t)(1u << (k & 7));
	return held;
}

int keep_data_fd(struct keep *keep, const struct nopfs_tier_list *specs)
{
	if (!keep->active)
		return -1;
	keep->data_fd = openat(keep->dir_fd, keep->data_name,
	                       O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (keep->data_fd < 0) {
		say_why(keep, "cannot create '%s/%s': %s: nothing is kept", keep->directory,
		        keep->data_name, strerror(errno));
		keep->active = false;
		return -1;
	}
	for (unsigned int t = 0; t < specs->count; t++)
		if (specs->tier[t].kind == NOPFS_TIER_SSD) {
			keep->ssd_tier = (int)t;
			break;
		}
	return keep->data_fd;
}

void keep_layout(struct keep *keep, const struct tier_set *tiers)
{
	uint64_t end = keep->ssd_tier >= 0 ? tiers->tier[keep->ssd_tier].bytes : 0, start = end;
	struct statvfs fs;

	if (!keep->active || keep->data_fd < 0)
		return;
	for (unsigned int t = 0; t < tiers->count; t++) {
		keep->noted[t] = calloc(tiers->tier[t].count + 1, sizeof(*keep->noted[t]));
		keep->noted_count[t] = tiers->tier[t].count;
		if (!keep->noted[t]) {
			keep_drop(keep, "no memory for its checksums");
			return;
		}
		if ((int)t == keep->ssd_tier)
			continue;
		keep->region[t] = end;
		end += tiers->tier[t].bytes;
	}
	if (end > start && (fstatvfs(keep->data_fd, &fs) != 0 ||
	                    (uint64_t)fs.f_bavail * fs.f_frsize < end - start ||
	                    ftruncate(keep->data_fd, (off_t)end) != 0 ||
	                    (fallocate(keep->data_fd, 0, (off_t)start, (off_t)(end - start)) != 0 &&
	                     errno != EOPNOTSUPP))) {
		char size[32];

		snprintf(keep->why, sizeof(keep->why),
		         "no room in '%s' for the %s the other tiers hold", keep->directory,
		         nopfs_format_size(end - start, size, sizeof(size)));
		keep_drop(keep, keep->why);
	}
}

bool keep_read(struct keep *keep, nopfs_sample_id sample, void *buffer, uint64_t size)
{
	uint64_t offset;

	if (!atomic_load(&keep->active) || keep->old_fd < 0)
		return false;
	offset = keep->old_offset[sample];
	if (offset == UINT64_MAX)
		return false;
	if (nopfs_pread_exact(keep->old_fd, buffer, size, offset) != NOPFS_OK)
		return false;
	if (nopfs_crc32c(buffer, size) != keep->old_crc[sample]) {
		if (atomic_fetch_add(&keep->mismatched.count, 1) < 10)
			nopfs_warning("kept cache: sample %" PRIu32
			              " in '%s/data' is damaged: read "
			              "elsewhere",
			              sample, keep->directory);
		atomic_fetch_add(&keep->mismatched.bytes, size);
		return false;
	}
	agent_count(&keep->read, size);
	return true;
}

void keep_note(struct keep *keep, const struct tier *tier, uint64_t position, const void *data)
{
	uint64_t size = tier->offsets[position + 1] - tier->offsets[position];
	unsigned int t = tier->index;

	if (!atomic_load(&keep->active) || !keep->noted[t] || position >= keep->noted_count[t])
		return;
	if ((int)t != keep->ssd_tier) {
		if (nopfs_pwrite_all(keep->data_fd, data, size,
		                     keep->region[t] + tier->offsets[position]) != NOPFS_OK)
			return; /* not kept: the next job reads it elsewhere */
		agent_count(&keep->written, size);
	}
	atomic_store(&keep->noted[t][position], NOTED | nopfs_crc32c(data, size));
}

/* The manifest of what @tiers hold and this job kept: a buffer, its length in *@length. */
static uint8_t *build_manifest(struct keep *keep, const struct job *job,
                               const struct tier_set *tiers, const struct nopfs_meta_view *meta,
                               size_t *length)
{
	struct manifest_header *header;
	struct manifest_record *records;
	uint64_t count = 0, blob = 0, kept = 0, at = 0, paths_room;
	uint8_t *data;
	char *paths;

	for (unsigned int t = 0; t < tiers->count; t++)
		if (keep->noted[t])
			count += tiers->tier[t].count;
	records = calloc(count + 1, sizeof(*records));
	paths_room = count * 64 + 1;
	paths = malloc(paths_room);

	if (!records || !paths)
		goto fail;
	for (unsigned int t = 0; t < tiers->count; t++) {
		const struct tier *tier = &tiers->tier[t];

		for (uint64_t p = 0; keep->noted[t] && p < tier->count; p++) {
			uint64_t noted = atomic_load(&keep->noted[t][p]);
			struct manifest_record *record = &records[kept];
			char path[PATH_MAX];
			size_t n;

			if (!(noted & NOTED) || atomic_load(&tier->state[p]) != TIER_PRESENT ||
			    nopfs_catalog_path(job->catalog, tier->samples[p], path,
			                       sizeof(path)) != NOPFS_OK ||
			    !identity(meta, path, record) ||
			    record->size != tier->offsets[p + 1] - tier->offsets[p])
				continue;
			n = strlen(path);
			if (blob + n > paths_room) {
				char *more = realloc(paths, (blob + n) * 2);

				if (!more)
					goto fail;
				paths = more;
				paths_room = (blob + n) * 2;
			}
			memcpy(paths + blob, path, n);
			record->path = blob;
			record->path_length = (uint32_t)n;
			record->crc = (uint32_t)noted;
			record->offset = keep->region[t] + tier->offsets[p];
			blob += n;
			kept++;
			keep->committed_bytes += record->size;
			if (record->offset + record->size > at)
				at = record->offset + record->size;
		}
	}
	*length = sizeof(*header) + kept * sizeof(*records) + blob;
	data = calloc(1, *length);
	if (!data)
		goto fail;
	header = (void *)data;
	memcpy(header->magic, MANIFEST_MAGIC, 8);
	header->version = MANIFEST_VERSION;
	header->record_size = sizeof(*records);
	header->count = kept;
	header->blob_length = blob;
	header->data_length = at;
	memcpy(data + sizeof(*header), records, kept * sizeof(*records));
	memcpy(data + sizeof(*header) + kept * sizeof(*records), paths, blob);
	header->checksum = nopfs_crc32c(data + sizeof(*header), *length - sizeof(*header));
	keep->committed_samples = kept;
	free(records);
	free(paths);
	return data;

fail:
	keep->committed_bytes = 0;
	free(records);
	free(paths);
	return NULL;
}

/* Write @data to a new private temporary in the directory: its name in @name, or false. */
static bool write_temporary(struct keep *keep, const uint8_t *data, size_t length, char *name,
                            size_t room)
{
	int fd;

	snprintf(name, room, "manifest.%s", keep->data_name + 5);
	fd = openat(keep->dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return false;
	if (nopfs_write_all(fd, data, length) != NOPFS_OK || fsync(fd) != 0) {
		close(fd);
		unlinkat(keep->dir_fd, name, 0);
		return false;
	}
	close(fd);
	return true;
}

void keep_commit(struct keep *keep, const struct job *job, const struct tier_set *tiers,
                 const struct nopfs_meta_view *meta)
{
	char temporary[200], size[32];
	uint8_t *manifest;
	size_t length;

	if (!keep->active || keep->data_fd < 0)
		return;
	manifest = build_manifest(keep, job, tiers, meta, &length);
	if (!manifest) {
		keep_drop(keep, "no memory for its manifest");
		return;
	}
	if (keep->committed_samples == 0) {
		free(manifest);
		keep_drop(keep, "this job fetched nothing to keep: what was kept stays");
		return;
	}
	/*
	 * Old manifest out first, new one in last: a crash in between leaves no
	 * manifest (nothing kept), never one naming other bytes. The data is not
	 * synced (gigabytes, within Slurm's KillWait): bytes a crash loses fail
	 * their CRC32C in the next job and are read elsewhere.
	 */
	if (!write_temporary(keep, manifest, length, temporary, sizeof(temporary)) ||
	    (unlinkat(keep->dir_fd, "manifest", 0) != 0 && errno != ENOENT) ||
	    renameat(keep->dir_fd, keep->data_name, keep->dir_fd, "data") != 0 ||
	    renameat(keep->dir_fd, temporary, keep->dir_fd, "manifest") != 0 ||
	    fsync(keep->dir_fd) != 0) {
		nopfs_error("kept cache: cannot commit in '%s': %m: nothing is kept",
		            keep->directory);
		unlinkat(keep->dir_fd, temporary, 0);
		free(manifest);
		keep_drop(keep, "its commit failed");
		return;
	}
	free(manifest);
	keep->committed = true;
	nopfs_info("kept cache: %" PRIu64 " samples (%s) kept in '%s'", keep->committed_samples,
	           nopfs_format_size(keep->committed_bytes, size, sizeof(size)), keep->directory);
}

void keep_drop(struct keep *keep, const char *why)
{
	if (!keep->active)
		return;
	atomic_store(&keep->active, false);
	if (why != keep->why)
		snprintf(keep->why, sizeof(keep->why), "%s", why);
	nopfs_warning("kept cache '%s': %s", keep->directory, keep->why);
	if (keep->data_fd >= 0)
		unlinkat(keep->dir_fd, keep->data_name, 0);
	keep->committed_samples = keep->committed_bytes = 0;
}

void keep_fini(struct keep *keep)
{
	if (keep->data_fd >= 0) {
		if (!keep->committed)
			unlinkat(keep->dir_fd, keep->data_name, 0);
		close(keep->data_fd);
	}
	if (keep->old_fd >= 0)
		close(keep->old_fd);
	if (keep->dir_fd >= 0)
		close(keep->dir_fd); /* and with it, the lock */
	for (unsigned int t = 0; t < NOPFS_TIERS_MAX; t++)
		free((void *)keep->noted[t]);
	free(keep->old_offset);
	free(keep->old_crc);
	keep_init(keep);
}

static json_t *pair(uint64_t samples, uint64_t bytes)
{
	return json_pack("{s:I, s:I}", "samples", (json_int_t)samples, "bytes", (json_int_t)bytes);
}

json_t *keep_json(const struct keep *keep)
{
	return json_pack(
	        "{s:s, s:b, s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "directory", keep->directory,
	        "committed", keep->committed, "why", keep->why, "found",
	        pair(keep->old_samples, keep->old_bytes), "stale",
	        pair(keep->stale_samples, keep->stale_bytes), "read",
	        pair(atomic_load(&keep->read.count), atomic_load(&keep->read.bytes)), "mismatched",
	        pair(atomic_load(&keep->mismatched.count), atomic_load(&keep->mismatched.bytes)),
	        "written",
	        pair(atomic_load(&keep->written.count), atomic_load(&keep->written.bytes)), "kept",
	        pair(keep->committed_samples, keep->committed_bytes));
}
