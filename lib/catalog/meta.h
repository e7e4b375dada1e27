/*
 * The dataset's metadata: every directory under the root with its entries in
 * the order the file system lists them (name, d_type, d_ino), and every
 * entry's lstat and stat (statx fields, or the errno the call gave), as one
 * flat buffer that needs no parsing: the agents make it once per job (node
 * 0 scans, the others load its copy) and put it in the staging directory,
 * where each task maps it and answers opendir/readdir/stat/access/realpath
 * for paths in the dataset without asking the PFS.
 *
 * Layout (native byte order and struct layout, checked by the header: the
 * job's nodes share one architecture): struct meta_header, then dir_count
 * struct meta_dir, entry_count struct meta_entry, entry_count u32 (each
 * directory's entries sorted by name, for lookups), then the names
 * (NUL-terminated; entry names, directory and link target real paths).
 * Entry 0 is the root itself; directory 0 is the root's listing.
 *
 * The readers are allocation-free and make no interposed call, for the
 * interposer.
 */
#ifndef NOPFS_META_H
#define NOPFS_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/status.h"

#define NOPFS_META_MAGIC   "NOPFSMET"
#define NOPFS_META_VERSION 1
#define NOPFS_META_NONE    UINT32_MAX
/* A stat not made yet (a listing-only scan's regular files): ask the file system. */
#define NOPFS_META_UNKNOWN (-1)

/* What statx gave for one path, or the errno it failed with. */
struct nopfs_meta_stat {
	int32_t error; /* 0: the fields below are valid; NOPFS_META_UNKNOWN: not made */
	uint32_t mask;
	uint32_t blksize;
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint32_t mode;
	uint32_t dev_major, dev_minor;
	uint32_t rdev_major, rdev_minor;
	uint32_t atime_nsec, btime_nsec, ctime_nsec, mtime_nsec;
	uint32_t pad;
	uint64_t attributes;
	uint64_t attributes_mask;
	uint64_t ino;
	uint64_t size;
	uint64_t blocks;
	uint64_t mnt_id;
	int64_t atime_sec, btime_sec, ctime_sec, mtime_sec;
};

struct nopfs_meta_entry {
	uint64_t name;        /* offset of the NUL-terminated name */
	uint64_t d_ino;       /* as readdir gave it */
	uint64_t target;      /* symlink: offset of the target's real path, else 0 */
	int32_t target_error; /* symlink whose real path failed: its errno */
	uint64_t link;        /* symlink: offset of its contents (readlink), else 0 */
	uint32_t dir;         /* the directory listed at this entry (after following), or NONE */
	uint8_t d_type;
	uint8_t pad[7];
	struct nopfs_meta_stat lstat; /* not following a final symlink */
	struct nopfs_meta_stat stat;  /* following it */
};

struct nopfs_meta_dir {
	uint64_t realpath; /* offset of its real path */
	uint32_t first;    /* its entries are first .. first + count - 1, "." and ".." too */
	uint32_t count;
	uint32_t listed; /* 1 when its entries are all here; 0: pass to the PFS */
	uint32_t self;   /* the entry naming it */
};

struct nopfs_meta_header {
	char magic[8];
	uint32_t version;
	uint32_t layout; /* sizes of the structs above, packed: checks the ABI */
	uint64_t length; /* of the whole buffer */
	uint32_t dir_count;
	uint32_t entry_count;
	uint64_t names_offset;
	uint64_t names_length;
	uint64_t checksum; /* FNV-1a 64 of everything after the header */
	uint64_t made_ns;  /* CLOCK_REALTIME when the scan started */
	uint32_t complete; /* 1: every directory listed (the budget sufficed) */
	uint32_t unlisted; /* directories left out (budget, unreadable, cycles) */
	uint64_t root;     /* offset of the root as given to the scan */
};

/* A mapped buffer, checked. */
struct nopfs_meta_view {
	const struct nopfs_meta_header *header;
	/*
	 * One byte per directory, set (by the agent, while tasks read it) when
	 * the directory changed since the scan; NULL: none known.
	 */
	const uint8_t *changed;
	const struct nopfs_meta_dir *dirs;
	const struct nopfs_meta_entry *entries;
	const uint32_t *sorted;
	const char *names;
};

/*
 * Scan the tree at @root (absolute) into a new buffer (malloc'd; caller
 * frees): every directory reached from the root, following symbolic links
 * to directories as os.walk(followlinks=True) does, except into an ancestor
 * (a cycle). Directories beyond @budget bytes, or that cannot be read, are
 * left unlisted. NOPFS_ERR_* with an error logged when the root cannot be
 * read.
 */
nopfs_status nopfs_meta_scan(const char *root, size_t budget, void **buffer, size_t *length);

/*
 * The same walk with the listings only: regular files (d_type DT_REG) are
 * not stat'd, their stats are NOPFS_META_UNKNOWN (what asks for one goes to
 * the file system). Directories, links and entries of unknown type are
 * stat'd as by nopfs_meta_scan(): one call per directory listed and per
 * such entry, where the full scan makes one per file too.
 */
nopfs_status nopfs_meta_scan_listing(const char *root, size_t budget, void **buffer,
                                     size_t *length);

/*
 * Make the stats a listing-only scan left unknown in @buffer (@length bytes,
 * checked by nopfs_meta_view_init()), in place, on up to @threads threads
 * paced against the metadata server (as many as make it answer more: see
 * common/pace.h), and update its checksum; *@made: how many entries were
 * stat'd; *@most (if not NULL): the most threads that ran at once. The buffer
 * then answers as nopfs_meta_scan()'s does. NOPFS_ERR_CANCELED when a stop
 * was requested (the buffer is then left with some stats unknown and a
 * valid checksum); NOPFS_ERR_FORMAT when @buffer is not valid metadata.
 */
nopfs_status nopfs_meta_stat_files(void *buffer, size_t length, unsigned int threads,
                                   uint64_t *made, unsigned int *most);

/*
 * Check @length bytes at @data (any alignment of 8 bytes) and set @view up:
 * magic, version, layout, length, checksum, and every offset and index in
 * range. Else NOPFS_ERR_FORMAT with @why (static text).
 */
nopfs_status nopfs_meta_view_init(struct nopfs_meta_view *view, const void *data, size_t length,
                                  const char **why);

/*
 * Look at every listed directory of @view not yet marked in @changed (one
 * byte per directory): one statx of its real path each. A directory whose
 * mtime or ctime differs from the scan's, or that is gone, is marked (byte
 * set to 1) and its index stored in @newly (up to @max of them). Returns how
 * many were marked.
 */
uint32_t nopfs_meta_check_dirs(const struct nopfs_meta_view *view, uint8_t *changed,
                               uint32_t *newly, uint32_t max);

/* How nopfs_meta_resolve() found a path. */
enum nopfs_meta_found {
	NOPFS_META_ENTRY, /* *entry is it */
	NOPFS_META_ERROR, /* the real call fails with *error */
	NOPFS_META_PASS,  /* not known here: ask the PFS */
	NOPFS_META_STALE, /* through or at a directory changed since the scan: ask the PFS */
};

/*
 * Resolve @relative (relative to the root, "" for the root; components
 * separated by one or more "/", "." allowed, ".." not: PASS) as the kernel
 * would: intermediate symbolic links are followed, the final one when
 * @follow, or when @relative ends in "/" (which also requires a directory).
 * A path through or at a directory marked changed is STALE. A non-empty
 * @relative follows the root ("/" after it). *parent is the
 * directory holding *entry (NOPFS_META_NONE for the root), *followed whether
 * its stat (rather than its lstat) is the answer.
 */
enum nopfs_meta_found nopfs_meta_resolve(const struct nopfs_meta_view *view, const char *relative,
                                         bool follow, uint32_t *entry, uint32_t *parent,
                                         bool *followed, int *error);

/*
 * The stat of @entry as a call following (or not) a final link sees it
 * (nopfs_meta_resolve() finds no entry whose stat is NOPFS_META_UNKNOWN).
 */
static inline const struct nopfs_meta_stat *nopfs_meta_stat_of(const struct nopfs_meta_view *view,
                                                               uint32_t entry, bool follow)
{
	return follow ? &view->entries[entry].stat : &view->entries[entry].lstat;
}

/* The name at offset @offset. */
/* Fill a struct stat or stat64 @st from the metadata's stat @m. */
#define NOPFS_META_FILL_STAT(m, st)                                        \
	do {                                                               \
		memset((st), 0, sizeof(*(st)));                            \
		(st)->st_dev = makedev((m)->dev_major, (m)->dev_minor);    \
		(st)->st_ino = (m)->ino;                                   \
		(st)->st_mode = (m)->mode;                                 \
		(st)->st_nlink = (m)->nlink;                               \
		(st)->st_uid = (m)->uid;                                   \
		(st)->st_gid = (m)->gid;                                   \
		(st)->st_rdev = makedev((m)->rdev_major, (m)->rdev_minor); \
		(st)->st_size = (m)->size;                                 \
		(st)->st_blksize = (blksize_t)(m)->blksize;                \
		(st)->st_blocks = (m)->blocks;                             \
		(st)->st_atim.tv_sec = (m)->atime_sec;                     \
		(st)->st_atim.tv_nsec = (m)->atime_nsec;                   \
		(st)->st_mtim.tv_sec = (m)->mtime_sec;                     \
		(st)->st_mtim.tv_nsec = (m)->mtime_nsec;                   \
		(st)->st_ctim.tv_sec = (m)->ctime_sec;                     \
		(st)->st_ctim.tv_nsec = (m)->ctime_nsec;                   \
	} while (0)

/*
 * What stat(), or lstat() without @follow, of @relative (as for
 * nopfs_meta_resolve()) would answer, from @view: 0 with *st, -1 with errno
 * (the call's failure), or 1 when @view does not know (ask the file system).
 */
int nopfs_meta_stat_path(const struct nopfs_meta_view *view, const char *relative, bool follow,
                         struct stat *st);

static inline const char *nopfs_meta_name(const struct nopfs_meta_view *view, uint64_t offset)
{
	return view->names + offset;
}

#endif
