/*
 * Dataset catalog: the samples of a dataset in the training script's index
 * order (torchvision ImageFolder, or a list file), with their sizes and
 * labels. Ordering rules: docs/architecture.md (Catalog).
 */
#ifndef NOPFS_CATALOG_H
#define NOPFS_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

/*
 * A sample's index in the catalog, from the task's request to the PFS read.
 * A catalog holds at most 2^32 - 1 samples. Wider values (the wire's u64
 * fields, the C API's uint64_t) are checked against the sample count where
 * they become one.
 */
typedef uint32_t nopfs_sample_id;
#define NOPFS_SAMPLE_ID_MAX UINT32_MAX

typedef enum nopfs_index_format {
	NOPFS_INDEX_IMAGEFOLDER = 0,
	NOPFS_INDEX_LIST = 1,
} nopfs_index_format;

/* torchvision.datasets.folder.IMG_EXTENSIONS, comma-separated. */
#define NOPFS_IMAGE_EXTENSIONS ".jpg,.jpeg,.png,.ppm,.bmp,.pgm,.tif,.tiff,.webp"

struct nopfs_meta_view;

struct nopfs_catalog_options {
	nopfs_index_format format;
	const char *root;       /* dataset root directory (required) */
	const char *list_path;  /* list file (format list only) */
	const char *extensions; /* comma-separated; NULL: NOPFS_IMAGE_EXTENSIONS */
	const char *cache_dir;  /* where catalog caches live; NULL: no caching */
	/*
	 * The dataset's metadata scanned just before (meta.h), or NULL: the
	 * scan's stats and access checks then come from it, not from the file
	 * system (one metadata call per file fewer, or two).
	 */
	const struct nopfs_meta_view *meta;
};

struct nopfs_catalog;

/*
 * Build the catalog by scanning the dataset (no cache involved). On success
 * *out owns a new catalog (free with nopfs_catalog_destroy()). On failure an
 * error naming the culprit (root, class, file, list line) has been logged and
 * *out is untouched: missing or unreadable root, a class with no samples, no
 * samples at all, an unreadable file or directory, a list entry outside the
 * root or missing, a duplicate list entry, a symlink cycle.
 */
nopfs_status nopfs_catalog_build(const struct nopfs_catalog_options *options,
                                 struct nopfs_catalog **out);

/*
 * Like nopfs_catalog_build(), but first try the binary cache in
 * options->cache_dir keyed by the dataset (root, format, list file,
 * extensions). A cache is used only when it validates against the tree: the
 * directories and files it lists still have the same inode, size, mtime and
 * ctime (so added, removed, renamed or rewritten files invalidate it), and
 * the list file is unchanged. Otherwise the dataset is scanned and the cache
 * rewritten atomically. A cache that cannot be written only logs a warning.
 * *used_cache (may be NULL) tells whether the cache was used.
 */
nopfs_status nopfs_catalog_open(const struct nopfs_catalog_options *options,
                                struct nopfs_catalog **out, bool *used_cache);

/*
 * The dataset's key, as the catalog cache names its file: a hash of the
 * root's and list file's real paths, the format and the extensions. false
 * when the root (or list) cannot be resolved.
 */
bool nopfs_catalog_key(const struct nopfs_catalog_options *options, uint64_t *hash);

/*
 * A catalog of @count samples with the given sizes (copied), no paths, labels
 * 0: for synthetic datasets, simulation and tests.
 */
nopfs_status nopfs_catalog_from_sizes(const uint64_t *sizes, uint64_t count,
                                      struct nopfs_catalog **out);

/*
 * Serialize the catalog into one self-contained, checksummed buffer (malloc'd,
 * caller frees) so one node can build it and others load it without scanning
 * the dataset; nopfs_catalog_deserialize() validates it (bad magic, version,
 * length or checksum: NOPFS_ERR_FORMAT) and returns a new catalog.
 */
nopfs_status nopfs_catalog_serialize(const struct nopfs_catalog *catalog, void **buffer,
                                     size_t *length);
nopfs_status nopfs_catalog_deserialize(const void *buffer, size_t length,
                                       struct nopfs_catalog **out);

void nopfs_catalog_destroy(struct nopfs_catalog *catalog);

/* Number of samples. */
uint64_t nopfs_catalog_count(const struct nopfs_catalog *catalog);

/* Sum of all sample sizes in bytes. */
uint64_t nopfs_catalog_total_bytes(const struct nopfs_catalog *catalog);

/* The sizes of all samples, indexed by sample; owned by the catalog. */
const uint64_t *nopfs_catalog_sizes(const struct nopfs_catalog *catalog);

/* Size in bytes and label of sample @index (index < count). */
uint64_t nopfs_catalog_size(const struct nopfs_catalog *catalog, uint64_t index);
int64_t nopfs_catalog_label(const struct nopfs_catalog *catalog, uint64_t index);

/* The dataset root as given (NULL for synthetic catalogs); owned by the catalog. */
const char *nopfs_catalog_root(const struct nopfs_catalog *catalog);

/* Number of classes (imagefolder) and the name of class @label, or NULL. */
uint32_t nopfs_catalog_class_count(const struct nopfs_catalog *catalog);
const char *nopfs_catalog_class_name(const struct nopfs_catalog *catalog, uint32_t label);

/*
 * The path of sample @index relative to the root, into @buffer of @length
 * bytes. NOPFS_ERR_RANGE if it does not fit, NOPFS_ERR_NOT_FOUND for a
 * synthetic catalog.
 */
nopfs_status nopfs_catalog_path(const struct nopfs_catalog *catalog, uint64_t index, char *buffer,
                                size_t length);

/*
 * The index of the sample at @relative_path (relative to the root, normalized:
 * no "./", no "//"), or -1. Constant time on average: the lookup the
 * interposer does on every open().
 */
int64_t nopfs_catalog_find(const struct nopfs_catalog *catalog, const char *relative_path);

#endif
