/*
 * The catalog cache: a scan's result and the stamps of what it saw, in
 * cache_dir/catalog-<hash>.nopfs, used only while every stamp still
 * matches. Layout and rules: docs/architecture.md (Catalog).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "catalog_internal.h"
#include "common/atomic_file.h"
#include "common/dirs.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/readall.h"

#define CACHE_MAGIC       "NOPFSCCH"
#define CACHE_VERSION     1
#define CACHE_HEADER      32
#define CACHE_RACY_NS     INT64_C(1000000000)
#define CACHE_STAMP_BYTES 32

struct cache_key {
	uint32_t format;
	char *root; /* real path */
	char *list; /* real path, "" for imagefolder */
	const char *extensions;
	char *file;    /* the cache file (NULL without a cache directory) */
	uint64_t hash; /* of the four above */
};

static void key_fini(struct cache_key *key)
{
	free(key->file);
	free(key->list);
	free(key->root);
}

/* Fails (quietly) when the root or list cannot be resolved: the scan will say why. */
static bool key_init(const struct nopfs_catalog_options *options, struct cache_key *key)
{
	uint64_t hash = CATALOG_FNV_INIT;
	uint8_t format[4];
	size_t length;
	int i;

	memset(key, 0, sizeof(*key));
	key->format = (uint32_t)options->format;
	key->root = realpath(options->root, NULL);
	if (options->format == NOPFS_INDEX_LIST) {
		key->list = options->list_path ? realpath(options->list_path, NULL) : NULL;
		key->extensions = "";
	} else {
		key->list = strdup("");
		key->extensions =
		        options->extensions ? options->extensions : NOPFS_IMAGE_EXTENSIONS;
	}
	if (!key->root || !key->list)
		goto out_fini;
	for (i = 0; i < 4; i++)
		format[i] = (uint8_t)(key->format >> (8 * i));
	hash = nopfs_catalog_fnv1a(hash, format, sizeof(format));
	hash = nopfs_catalog_fnv1a(hash, key->root, strlen(key->root) + 1);
	hash = nopfs_catalog_fnv1a(hash, key->list, strlen(key->list) + 1);
	hash = nopfs_catalog_fnv1a(hash, key->extensions, strlen(key->extensions) + 1);
	key->hash = hash;
	if (!options->cache_dir)
		return true;
	length = strlen(options->cache_dir) + 32;
	key->file = malloc(length);
	if (!key->file)
		goto out_fini;
	snprintf(key->file, length, "%s/catalog-%016" PRIx64 ".nopfs", options->cache_dir, hash);
	return true;

out_fini:
	key_fini(key);
	return false;
}

bool nopfs_catalog_key(const struct nopfs_catalog_options *options, uint64_t *hash)
{
	struct nopfs_catalog_options bare = *options;
	struct cache_key key;

	bare.cache_dir = NULL;
	if (!options->root || !key_init(&bare, &key))
		return false;
	*hash = key.hash;
	key_fini(&key);
	return true;
}

static void write_stamp(struct catalog_writer *writer, const struct catalog_stamp *stamp)
{
	nopfs_catalog_write_u64(writer, stamp->ino);
	nopfs_catalog_write_u64(writer, stamp->size);
	nopfs_catalog_write_u64(writer, (uint64_t)stamp->mtime_ns);
	nopfs_catalog_write_u64(writer, (uint64_t)stamp->ctime_ns);
}

static void read_stamp(struct catalog_reader *reader, struct catalog_stamp *stamp)
{
	stamp->ino = nopfs_catalog_read_u64(reader);
	stamp->size = nopfs_catalog_read_u64(reader);
	stamp->mtime_ns = (int64_t)nopfs_catalog_read_u64(reader);
	stamp->ctime_ns = (int64_t)nopfs_catalog_read_u64(reader);
}

/* FNV-1a 64 of the header before the checksum field, then of the metadata. */
static uint64_t metadata_checksum(const uint8_t *data, uint64_t metadata)
{
	uint64_t hash = nopfs_catalog_fnv1a(CATALOG_FNV_INIT, data, 24);

	return nopfs_catalog_fnv1a(hash, data + CACHE_HEADER, metadata);
}

/* Everything but the header and the catalog. */
static void write_metadata(struct catalog_writer *writer, const struct cache_key *key,
                           const struct catalog_snapshot *snapshot)
{
	uint64_t i;

	nopfs_catalog_write_u32(writer, key->format);
	nopfs_catalog_write_string(writer, key->root);
	nopfs_catalog_write_string(writer, key->list);
	nopfs_catalog_write_string(writer, key->extensions);
	write_stamp(writer, &snapshot->list_stamp);
	nopfs_catalog_write_u64(writer, snapshot->sample_digest);
	nopfs_catalog_write_u64(writer, snapshot->dir_count);
	for (i = 0; i < snapshot->dir_count; i++) {
		nopfs_catalog_write_string(writer, snapshot->dir_paths[i]);
		write_stamp(writer, &snapshot->dir_stamps[i]);
	}
	nopfs_catalog_write_u64(writer, snapshot->watch_count);
	for (i = 0; i < snapshot->watch_count; i++)
		nopfs_catalog_write_string(writer, snapshot->watch_paths[i]);
}

/* The cache file's bytes, or NULL with a warning. */
static struct catalog_writer encode(const struct cache_key *key,
                                    const struct catalog_snapshot *snapshot,
                                    const struct nopfs_catalog *catalog)
{
	struct catalog_writer writer = { 0 };
	uint64_t metadata, checksum;
	size_t blob_length;
	void *blob;
	int i;

	nopfs_catalog_write_bytes(&writer, CACHE_MAGIC, 8);
	nopfs_catalog_write_u32(&writer, CACHE_VERSION);
	nopfs_catalog_write_u32(&writer, 0);
	nopfs_catalog_write_u64(&writer, 0); /* metadata length, patched below */
	nopfs_catalog_write_u64(&writer, 0); /* checksum, patched below */
	write_metadata(&writer, key, snapshot);
	if (writer.failed || nopfs_catalog_serialize(catalog, &blob, &blob_length)) {
		free(writer.data);
		memset(&writer, 0, sizeof(writer));
		return writer;
	}
	metadata = writer.length - CACHE_HEADER;
	for (i = 0; i < 8; i++)
		writer.data[16 + i] = (uint8_t)(metadata >> (8 * i));
	checksum = metadata_checksum(writer.data, metadata);
	for (i = 0; i < 8; i++)
		writer.data[24 + i] = (uint8_t)(checksum >> (8 * i));
	nopfs_catalog_write_bytes(&writer, blob, blob_length);
	free(blob);
	if (writer.failed) {
		free(writer.data);
		memset(&writer, 0, sizeof(writer));
	}
	return writer;
}

/* Write the cache atomically (a temporary file renamed over it); only warns. */
static void store(const struct nopfs_catalog_options *options, const struct cache_key *key,
                  const struct catalog_snapshot *snapshot, const struct nopfs_catalog *catalog)
{
	struct catalog_writer bytes;

	if (nopfs_dir_make(options->cache_dir, 0700) != NOPFS_OK) {
		nopfs_warning("cannot create catalog cache directory '%s': %s; not caching",
		              options->cache_dir, strerror(errno));
		return;
	}
	bytes = encode(key, snapshot, catalog);
	if (!bytes.data) {
		nopfs_warning("out of memory encoding catalog cache '%s'; not caching", key->file);
		return;
	}
	if (nopfs_atomic_write(key->file, 0600, bytes.data, bytes.length) == NOPFS_OK)
		nopfs_debug("wrote catalog cache '%s' (%zu bytes)", key->file, bytes.length);
	else
		nopfs_warning("cannot write catalog cache '%s': %s; not caching", key->file,
		              strerror(errno));
	free(bytes.data);
}

/* Read the whole cache file; false if it does not exist or cannot be read. */
static bool read_file(const char *path, uint8_t **data, size_t *length)
{
	struct stat st;
	void *buffer;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			nopfs_debug("no catalog cache '%s' yet", path);
		else
			nopfs_warning("cannot open catalog cache '%s': %s; rescanning", path,
			              strerror(errno));
		return false;
	}
	if (fstat(fd, &st) != 0)
		goto out_warn;
	if (st.st_uid != geteuid()) {
		/* Someone else's file could make us stage the wrong samples. */
		nopfs_warning("catalog cache '%s' belongs to uid %u, not to us; ignoring it", path,
		              (unsigned int)st.st_uid);
		close(fd);
		return false;
	}
	if (nopfs_read_all(fd, SIZE_MAX, &buffer, length) != NOPFS_OK)
		goto out_warn;
	close(fd);
	*data = buffer;
	return true;

out_warn:
	nopfs_warning("cannot read catalog cache '%s': %s; rescanning", path, strerror(errno));
	close(fd);
	return false;
}

static const char *decode_header(struct catalog_reader *reader, uint64_t *metadata)
{
	const uint8_t *magic = nopfs_catalog_read_bytes(reader, 8);
	uint32_t version = nopfs_catalog_read_u32(reader);
	uint32_t zero = nopfs_catalog_read_u32(reader);
	uint64_t checksum;

	*metadata = nopfs_catalog_read_u64(reader);
	checksum = nopfs_catalog_read_u64(reader);
	if (reader->failed)
		return "shorter than its header";
	if (memcmp(magic, CACHE_MAGIC, 8) != 0)
		return "bad magic";
	if (version != CACHE_VERSION)
		return "unsupported version";
	if (zero != 0)
		return "bad header";
	if (*metadata > reader->length - CACHE_HEADER)
		return "truncated";
	if (CATALOG_CHECKSUMS && metadata_checksum(reader->data, *metadata) != checksum)
		return "checksum mismatch";
	return NULL;
}

/* The key fields; *other says the cache is intact but for another dataset. */
static const char *decode_key(struct catalog_reader *reader, const struct cache_key *key,
                              bool *other)
{
	uint32_t format = nopfs_catalog_read_u32(reader);
	char *root = nopfs_catalog_read_string(reader);
	char *list = nopfs_catalog_read_string(reader);
	char *extensions = nopfs_catalog_read_string(reader);
	const char *reason = NULL;

	if (reader->failed)
		reason = "truncated metadata";
	else if (format != key->format || strcmp(root, key->root) || strcmp(list, key->list) ||
	         strcmp(extensions, key->extensions))
		*other = true;
	free(extensions);
	free(list);
	free(root);
	return *other ? "for another dataset" : reason;
}

static const char *decode_snapshot(struct catalog_reader *reader, struct catalog_snapshot *snapshot)
{
	uint64_t count, i;

	read_stamp(reader, &snapshot->list_stamp);
	snapshot->sample_digest = nopfs_catalog_read_u64(reader);
	count = nopfs_catalog_read_u64(reader);
	if (reader->failed || count > (reader->length - reader->offset) / (4 + CACHE_STAMP_BYTES))
		return "bad directory count";
	snapshot->dir_paths = calloc(count ? count : 1, sizeof(*snapshot->dir_paths));
	snapshot->dir_stamps = calloc(count ? count : 1, sizeof(*snapshot->dir_stamps));
	if (!snapshot->dir_paths || !snapshot->dir_stamps)
		return "out of memory";
	for (i = 0; i < count && !reader->failed; i++) {
		snapshot->dir_paths[i] = nopfs_catalog_read_string(reader);
		read_stamp(reader, &snapshot->dir_stamps[i]);
		snapshot->dir_count = i + 1;
	}
	count = nopfs_catalog_read_u64(reader);
	if (reader->failed || count > (reader->length - reader->offset) / 4)
		return "bad symlink count";
	snapshot->watch_paths = calloc(count ? count : 1, sizeof(*snapshot->watch_paths));
	if (!snapshot->watch_paths)
		return "out of memory";
	for (i = 0; i < count && !reader->failed; i++) {
		snapshot->watch_paths[i] = nopfs_catalog_read_string(reader);
		snapshot->watch_count = i + 1;
	}
	if (reader->failed)
		return "truncated metadata";
	if (reader->offset != reader->length)
		return "trailing metadata";
	return NULL;
}

/* Parse a cache file: NULL on success, else what is wrong with it. */
static const char *decode(const uint8_t *data, size_t length, const struct cache_key *key,
                          struct catalog_snapshot *snapshot, struct nopfs_catalog **catalog,
                          bool *other)
{
	struct catalog_reader reader = { .data = data, .length = length };
	struct catalog_reader metadata = { 0 };
	const char *reason;
	uint64_t size;

	reason = decode_header(&reader, &size);
	if (reason)
		return reason;
	metadata.data = data + CACHE_HEADER;
	metadata.length = size;
	reason = decode_key(&metadata, key, other);
	if (!reason)
		reason = decode_snapshot(&metadata, snapshot);
	if (!reason)
		nopfs_catalog_decode(data + CACHE_HEADER + size, length - CACHE_HEADER - size,
		                     catalog, &reason);
	return reason;
}

static bool stamp_matches(int dir_fd, const char *path, int flags,
                          const struct catalog_stamp *expected)
{
	struct catalog_stamp stamp;
	struct stat st;

	if (fstatat(dir_fd, path, &st, flags) != 0)
		return false;
	nopfs_catalog_stamp_from_stat(&st, &stamp);
	return nopfs_catalog_stamp_equal(&stamp, expected);
}

/* Whether the tree still matches @snapshot; if not, @why says what changed. */
static bool validate(const struct cache_key *key, const struct catalog_snapshot *snapshot,
                     const struct nopfs_catalog *catalog, char *why, size_t size)
{
	uint64_t digest = CATALOG_FNV_INIT, i;
	bool valid = false;
	struct stat st;
	int root_fd;

	root_fd = open(key->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0) {
		snprintf(why, size, "cannot open '%s'", key->root);
		return false;
	}
	if (key->format == NOPFS_INDEX_LIST &&
	    !stamp_matches(AT_FDCWD, key->list, 0, &snapshot->list_stamp)) {
		snprintf(why, size, "list file '%s' changed", key->list);
		goto out_close;
	}
	for (i = 0; i < snapshot->dir_count; i++) {
		if (!stamp_matches(root_fd, snapshot->dir_paths[i], 0, &snapshot->dir_stamps[i])) {
			snprintf(why, size, "directory '%s' changed", snapshot->dir_paths[i]);
			goto out_close;
		}
	}
	for (i = 0; i < snapshot->watch_count; i++) {
		if (fstatat(root_fd, snapshot->watch_paths[i], &st, 0) == 0 &&
		    S_ISDIR(st.st_mode)) {
			snprintf(why, size, "symlink '%s' now leads to a directory",
			         snapshot->watch_paths[i]);
			goto out_close;
		}
	}
	for (i = 0; i < catalog->count; i++) {
		struct catalog_stamp stamp;
		const char *path = nopfs_catalog_path_at(catalog, i);

		if (fstatat(root_fd, path, &st, 0) != 0) {
			snprintf(why, size, "sample '%s' is gone", path);
			goto out_close;
		}
		if ((uint64_t)st.st_size != catalog->sizes[i]) {
			snprintf(why, size, "sample '%s' is not of the size cached", path);
			goto out_close;
		}
		nopfs_catalog_stamp_from_stat(&st, &stamp);
		digest = nopfs_catalog_digest_stamp(digest, &stamp);
	}
	valid = digest == snapshot->sample_digest;
	if (!valid)
		snprintf(why, size, "a sample file changed");
out_close:
	close(root_fd);
	return valid;
}

/* The cached catalog if there is a valid one; reasons not to use it are logged. */
static bool load(const struct nopfs_catalog_options *options, const struct cache_key *key,
                 struct nopfs_catalog **out)
{
	struct nopfs_catalog *catalog = NULL;
	struct catalog_snapshot snapshot;
	bool other = false, used = false;
	const char *reason;
	char why[512];
	uint8_t *data;
	size_t length;

	if (!read_file(key->file, &data, &length))
		return false;
	nopfs_catalog_snapshot_init(&snapshot);
	reason = decode(data, length, key, &snapshot, &catalog, &other);
	free(data);
	if (other)
		nopfs_info("catalog cache '%s' is for another dataset; rescanning", key->file);
	else if (reason)
		nopfs_warning("catalog cache '%s' is corrupt (%s); rescanning", key->file, reason);
	else if (!validate(key, &snapshot, catalog, why, sizeof(why)))
		nopfs_info("catalog cache '%s' is stale (%s); rescanning", key->file, why);
	else if (nopfs_catalog_set_root(catalog, options->root) == NOPFS_OK)
		used = true;
	if (used)
		*out = catalog;
	else
		nopfs_catalog_destroy(catalog);
	nopfs_catalog_snapshot_fini(&snapshot);
	return used;
}

/* Scan and, unless the tree changed too recently to tell, cache the result. */
static nopfs_status scan_and_store(const struct nopfs_catalog_options *options,
                                   const struct cache_key *key, struct nopfs_catalog **out)
{
	struct catalog_snapshot snapshot;
	int64_t start = nopfs_clock_wall_ns();
	nopfs_status status;

	nopfs_catalog_snapshot_init(&snapshot);
	status = nopfs_catalog_scan(options, &snapshot, out);
	if (status == NOPFS_OK && snapshot.newest_ns > start - CACHE_RACY_NS)
		nopfs_info("not caching the catalog of '%s': it changed less than %" PRId64
		           " ms before the scan",
		           options->root, CACHE_RACY_NS / 1000000);
	else if (status == NOPFS_OK)
		store(options, key, &snapshot, *out);
	nopfs_catalog_snapshot_fini(&snapshot);
	return status;
}

nopfs_status nopfs_catalog_open(const struct nopfs_catalog_options *options,
                                struct nopfs_catalog **out, bool *used_cache)
{
	struct nopfs_catalog *catalog;
	struct cache_key key;
	nopfs_status status;
	bool used = false;

	if (!options || !options->cache_dir || !options->root || !key_init(options, &key)) {
		/* No cache wanted, or the scan will say what is wrong with the dataset. */
		status = nopfs_catalog_build(options, &catalog);
	} else {
		used = load(options, &key, &catalog);
		status = used ? NOPFS_OK : scan_and_store(options, &key, &catalog);
		key_fini(&key);
	}
	if (status)
		return status;
	*out = catalog;
	if (used_cache)
		*used_cache = used;
	return NOPFS_OK;
}
