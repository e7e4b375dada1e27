/*
 * Catalog internals shared by lib/catalog*.c; nothing outside the catalog
 * module includes this header.
 *
 * A catalog is filled by appending samples in index order and then sealed,
 * which shrinks its arrays, sums the sizes and builds the path index.
 */
#ifndef NOPFS_CATALOG_INTERNAL_H
#define NOPFS_CATALOG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "catalog.h"

struct nopfs_meta_view;

/*
 * The dataset's metadata, when the caller scanned it before the catalog:
 * the scan's stats and access checks come from it (catalog_meta.c).
 */
struct catalog_meta {
	const struct nopfs_meta_view *view; /* NULL: every call goes to the file system */
	uid_t euid;
	gid_t egid;
	gid_t *groups;
	int group_count;
};

/* @view may be NULL. NOPFS_ERR_NOMEM when the groups cannot be kept. */
nopfs_status nopfs_catalog_meta_init(struct catalog_meta *meta, const struct nopfs_meta_view *view);
void nopfs_catalog_meta_fini(struct catalog_meta *meta);

/*
 * fstatat(@fd, @name, @st, @flags), where @name is in directory @dir
 * (relative to the dataset root, "" for the root): from the metadata when it
 * knows the answer (0, or -1 with errno), else the real call.
 */
int nopfs_catalog_meta_stat(const struct catalog_meta *meta, int fd, const char *dir,
                            const char *name, struct stat *st, int flags);

/*
 * faccessat(@fd, @name, R_OK, AT_EACCESS) of the file whose stat is @st:
 * without a call when the metadata was used and the mode bits grant it (an
 * ACL that denies it anyway shows when the file is read).
 */
int nopfs_catalog_meta_access(const struct catalog_meta *meta, int fd, const char *name,
                              const struct stat *st);

/* An empty slot of the path index (indices are below 2^32 - 1). */
#define CATALOG_NO_SAMPLE UINT32_MAX

struct nopfs_catalog {
	uint64_t count;
	uint64_t capacity; /* of sizes, labels and path_offsets while filling */
	uint64_t total_bytes;
	uint64_t *sizes;
	int64_t *labels;
	uint64_t *path_offsets; /* into paths; NULL for synthetic catalogs */
	char *paths;            /* NUL-terminated relative paths, back to back */
	uint64_t paths_length;
	uint64_t paths_capacity;
	char *root; /* as given; NULL for synthetic catalogs */
	uint32_t class_count;
	uint32_t class_capacity;
	char **class_names;
	uint32_t *slots; /* open-addressing index over paths, CATALOG_NO_SAMPLE if empty */
	uint64_t slot_mask;
};

/* FNV-1a 64: the checksum of serialized catalogs and caches, the path hash. */
#define CATALOG_FNV_INIT UINT64_C(0xcbf29ce484222325)
uint64_t nopfs_catalog_fnv1a(uint64_t hash, const void *data, size_t length);

/*
 * A new, empty catalog to fill. @root (may be NULL) is copied; @with_paths
 * says whether samples have paths. On success *out owns it.
 */
nopfs_status nopfs_catalog_new(const char *root, bool with_paths, struct nopfs_catalog **out);

/* Replace the root (copied). */
nopfs_status nopfs_catalog_set_root(struct nopfs_catalog *catalog, const char *root);

/* Append class @name (copied); its label is the class count before the call. */
nopfs_status nopfs_catalog_add_class(struct nopfs_catalog *catalog, const char *name);

/*
 * Append a sample: @path (copied; NULL if the catalog has no paths) of @size
 * bytes with @label. NOPFS_ERR_RANGE beyond 2^32 - 1 samples.
 */
nopfs_status nopfs_catalog_append(struct nopfs_catalog *catalog, const char *path, uint64_t size,
                                  int64_t label);

/*
 * Finish filling: sum the sizes and index the paths. Two samples with the
 * same path give NOPFS_ERR_DUPLICATE with their indices in *first and
 * *second, and nothing is logged (the caller knows what to call them);
 * other errors are logged.
 */
nopfs_status nopfs_catalog_seal(struct nopfs_catalog *catalog, uint64_t *first, uint64_t *second);

/* The path of sample @index of a catalog with paths. */
const char *nopfs_catalog_path_at(const struct nopfs_catalog *catalog, uint64_t index);

/*
 * nopfs_catalog_deserialize() without logging: on failure *reason says what
 * is wrong with the buffer (a static string).
 */
nopfs_status nopfs_catalog_decode(const void *buffer, size_t length, struct nopfs_catalog **out,
                                  const char **reason);

/*
 * Little-endian writer into a growing buffer; a failed allocation sticks in
 * @failed and later writes do nothing.
 */
struct catalog_writer {
	uint8_t *data;
	size_t length;
	size_t capacity;
	bool failed;
};

void nopfs_catalog_write_bytes(struct catalog_writer *writer, const void *bytes, size_t length);
void nopfs_catalog_write_u32(struct catalog_writer *writer, uint32_t value);
void nopfs_catalog_write_u64(struct catalog_writer *writer, uint64_t value);
/* A string as a 32-bit length and its bytes (no NUL). */
void nopfs_catalog_write_string(struct catalog_writer *writer, const char *string);

/*
 * Bounds-checked little-endian reader; reading past the end sets @failed and
 * yields zeros.
 */
struct catalog_reader {
	const uint8_t *data;
	size_t length;
	size_t offset;
	bool failed;
};

uint32_t nopfs_catalog_read_u32(struct catalog_reader *reader);
uint64_t nopfs_catalog_read_u64(struct catalog_reader *reader);
/* @length bytes in place, or NULL. */
const uint8_t *nopfs_catalog_read_bytes(struct catalog_reader *reader, size_t length);
/* A string written by nopfs_catalog_write_string(), as a new C string, or NULL (failed set). */
char *nopfs_catalog_read_string(struct catalog_reader *reader);

/* What a cache remembers of a file or directory to notice that it changed. */
/*
 * Built for fuzzing (tests/fuzz) the checksums of serialized catalogs and
 * caches are not compared, so that what they guard is reached.
 */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define CATALOG_CHECKSUMS 0
#else
#define CATALOG_CHECKSUMS 1
#endif

struct catalog_stamp {
	uint64_t ino;
	uint64_t size;
	int64_t mtime_ns;
	int64_t ctime_ns;
};

void nopfs_catalog_stamp_from_stat(const struct stat *st, struct catalog_stamp *stamp);
bool nopfs_catalog_stamp_equal(const struct catalog_stamp *a, const struct catalog_stamp *b);

/*
 * What a scan saw, for the cache to validate later: the directories walked,
 * the symlinks that led nowhere interesting (they could turn into
 * directories), a digest of the stamps of all samples in index order and the
 * list file.
 */
struct catalog_snapshot {
	uint64_t dir_count;
	uint64_t dir_capacity;
	char **dir_paths; /* relative to the root, "." for the root */
	struct catalog_stamp *dir_stamps;
	uint64_t watch_count;
	uint64_t watch_capacity;
	char **watch_paths;
	uint64_t sample_digest;
	struct catalog_stamp list_stamp;
	int64_t newest_ns; /* newest mtime or ctime seen */
};

void nopfs_catalog_snapshot_init(struct catalog_snapshot *snapshot);
void nopfs_catalog_snapshot_fini(struct catalog_snapshot *snapshot);
nopfs_status nopfs_catalog_snapshot_add_dir(struct catalog_snapshot *snapshot, const char *path,
                                            const struct stat *st);
nopfs_status nopfs_catalog_snapshot_add_watch(struct catalog_snapshot *snapshot, const char *path);
void nopfs_catalog_snapshot_add_sample(struct catalog_snapshot *snapshot,
                                       const struct catalog_stamp *stamp);
void nopfs_catalog_snapshot_set_list(struct catalog_snapshot *snapshot, const struct stat *st);
/* Fold the stamp of one sample into a digest started at CATALOG_FNV_INIT. */
uint64_t nopfs_catalog_digest_stamp(uint64_t digest, const struct catalog_stamp *stamp);

/*
 * The scanners behind nopfs_catalog_build(). @root_fd is the root directory
 * (opened O_PATH); @snapshot (may be NULL) receives what the cache needs. On
 * success *out owns the sealed catalog; on failure the culprit has been
 * logged.
 */
nopfs_status nopfs_catalog_scan(const struct nopfs_catalog_options *options,
                                struct catalog_snapshot *snapshot, struct nopfs_catalog **out);
nopfs_status nopfs_catalog_scan_folder(const struct nopfs_catalog_options *options, int root_fd,
                                       struct catalog_snapshot *snapshot,
                                       struct nopfs_catalog **out);
nopfs_status nopfs_catalog_scan_list(const struct nopfs_catalog_options *options, int root_fd,
                                     struct catalog_snapshot *snapshot, struct nopfs_catalog **out);

/*
 * Check options->extensions (or the default): on success *out is a new
 * NULL-terminated array of lower-cased extensions, freed with
 * nopfs_catalog_extensions_free().
 */
nopfs_status nopfs_catalog_extensions_parse(const char *extensions, char ***out);
void nopfs_catalog_extensions_free(char **extensions);

#endif
