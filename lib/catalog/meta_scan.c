/*
 * Making the dataset's metadata buffer (meta.h): one walk of the tree with
 * readdir and statx, following symbolic links to directories except into an
 * ancestor.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "meta.h"
#include "common/cancel.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/pace.h"
#include "common/parallel.h"

uint32_t nopfs_meta_layout(void);
uint64_t nopfs_meta_checksum(const void *data, size_t length);

#define STATX_WANTED (STATX_BASIC_STATS | STATX_BTIME | STATX_MNT_ID)

struct ancestor {
	uint32_t dev_major, dev_minor;
	uint64_t ino;
};

struct scan {
	struct nopfs_meta_dir *dirs;
	uint32_t dir_count, dir_capacity;
	struct nopfs_meta_entry *entries;
	uint32_t entry_count, entry_capacity;
	char *names;
	size_t names_length, names_capacity;
	size_t budget;
	bool listing_only; /* regular files are not stat'd */
	uint32_t unlisted;
	bool failed; /* out of memory */
	struct ancestor ancestors[PATH_MAX / 2];
	uint32_t depth;
};

static bool grow(void **array, uint32_t *capacity, uint32_t count, size_t size)
{
	uint32_t wanted;
	void *bigger;

	if (count < *capacity)
		return true;
	if (*capacity >= NOPFS_META_NONE / 2)
		return false;
	wanted = *capacity ? *capacity * 2 : 64;
	bigger = realloc(*array, (size_t)wanted * size);
	if (!bigger)
		return false;
	*array = bigger;
	*capacity = wanted;
	return true;
}

/*
 * Append @name (with its NUL) to the names @names, @length bytes of
 * @capacity used: its offset, or SIZE_MAX without memory.
 */
static size_t append_name(char **names, size_t *length, size_t *capacity, const char *name)
{
	size_t size = strlen(name) + 1, offset = *length;

	while (*length + size > *capacity) {
		size_t bigger_capacity = *capacity ? *capacity * 2 : 4096;
		char *bigger = realloc(*names, bigger_capacity);

		if (!bigger)
			return SIZE_MAX;
		*names = bigger;
		*capacity = bigger_capacity;
	}
	memcpy(*names + offset, name, size);
	*length += size;
	return offset;
}

/* Append @name (with its NUL); its offset, or 0 on failure (failed set). */
static uint64_t add_name(struct scan *scan, const char *name)
{
	size_t offset = append_name(&scan->names, &scan->names_length, &scan->names_capacity, name);

	if (offset == SIZE_MAX) {
		scan->failed = true;
		return 0;
	}
	return offset;
}

/* @path opened as a directory stream, or NULL with errno set. */
static DIR *open_stream(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), error;
	DIR *stream = fd >= 0 ? fdopendir(fd) : NULL;

	if (!stream && fd >= 0) {
		error = errno;
		close(fd);
		errno = error;
	}
	return stream;
}

static void stat_at(int dirfd, const char *name, int flags, struct nopfs_meta_stat *out)
{
	struct statx stx;

	memset(out, 0, sizeof(*out));
	if (statx(dirfd, name, flags | AT_NO_AUTOMOUNT, STATX_WANTED, &stx) != 0) {
		out->error = errno ? errno : EIO;
		return;
	}
	out->mask = stx.stx_mask;
	out->blksize = stx.stx_blksize;
	out->nlink = stx.stx_nlink;
	out->uid = stx.stx_uid;
	out->gid = stx.stx_gid;
	out->mode = stx.stx_mode;
	out->dev_major = stx.stx_dev_major;
	out->dev_minor = stx.stx_dev_minor;
	out->rdev_major = stx.stx_rdev_major;
	out->rdev_minor = stx.stx_rdev_minor;
	out->attributes = stx.stx_attributes;
	out->attributes_mask = stx.stx_attributes_mask;
	out->ino = stx.stx_ino;
	out->size = stx.stx_size;
	out->blocks = stx.stx_blocks;
	out->mnt_id = stx.stx_mnt_id;
	out->atime_sec = stx.stx_atime.tv_sec;
	out->atime_nsec = stx.stx_atime.tv_nsec;
	out->btime_sec = stx.stx_btime.tv_sec;
	out->btime_nsec = stx.stx_btime.tv_nsec;
	out->ctime_sec = stx.stx_ctime.tv_sec;
	out->ctime_nsec = stx.stx_ctime.tv_nsec;
	out->mtime_sec = stx.stx_mtime.tv_sec;
	out->mtime_nsec = stx.stx_mtime.tv_nsec;
}

/*
 * The stats of a directory's entries, on up to STAT_THREADS threads: on a
 * parallel file system each is a round trip to a metadata server, which
 * answers several at once.
 */
#define STAT_THREADS    16
#define STAT_PER_THREAD 4 /* fewer entries than this per thread: fewer threads */

struct stat_job {
	int fd;
	struct nopfs_meta_entry *entries;
	const char *names;
	uint32_t begin, end;
	bool listing_only;
};

static void set_unknown(struct nopfs_meta_entry *e)
{
	memset(&e->lstat, 0, sizeof(e->lstat));
	e->lstat.error = NOPFS_META_UNKNOWN;
	e->stat = e->lstat;
}

/* Stat entry @e of the directory open at @fd (name @name). */
static void stat_entry(int fd, const char *name, struct nopfs_meta_entry *e)
{
	stat_at(fd, name, AT_SYMLINK_NOFOLLOW, &e->lstat);
	if (!e->lstat.error && S_ISLNK(e->lstat.mode))
		stat_at(fd, name, 0, &e->stat);
	else
		e->stat = e->lstat;
}

static void stat_job_run(void *arg)
{
	struct stat_job *job = arg;

	for (uint32_t i = job->begin; i < job->end; i++) {
		struct nopfs_meta_entry *e = &job->entries[i];
		const char *name = job->names + e->name;

		if (nopfs_stop_requested())
			return; /* list_dir() sees it too and gives up */
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		if (job->listing_only && e->d_type == DT_REG)
			set_unknown(e);
		else
			stat_entry(job->fd, name, e);
	}
}

/* How many of the @count entries from @first the listing stats (not ".", "..", files). */
static uint32_t to_stat(const struct scan *scan, uint32_t first, uint32_t count)
{
	uint32_t n = 0;

	for (uint32_t i = first; i < first + count; i++) {
		const struct nopfs_meta_entry *e = &scan->entries[i];
		const char *name = scan->names + e->name;

		if (strcmp(name, ".") && strcmp(name, "..") &&
		    !(scan->listing_only && e->d_type == DT_REG))
			n++;
	}
	return n;
}

/*
 * Stat the entries, @stats of which need a stat (to_stat(); @fd: their
 * directory, -1 when none does).
 */
static void stat_entries(struct scan *scan, int fd, uint32_t first, uint32_t count, uint32_t stats)
{
	struct stat_job jobs[STAT_THREADS];
	uint32_t threads = stats / STAT_PER_THREAD, per;

	if (threads < 1)
		threads = 1;
	if (threads > STAT_THREADS)
		threads = STAT_THREADS;
	per = (count + threads - 1) / threads;
	for (uint32_t t = 0; t < threads; t++) {
		uint32_t begin = first + t * per, end = begin + per;

		jobs[t] = (struct stat_job){
			.fd = fd,
			.entries = scan->entries,
			.names = scan->names,
			.begin = begin < first + count ? begin : first + count,
			.end = end < first + count ? end : first + count,
			.listing_only = scan->listing_only,
		};
	}
	nopfs_parallel_run(stat_job_run, jobs, sizeof(jobs[0]), threads);
}

/* The real path of @path as a name offset, or 0 with *error. */
static uint64_t real_name(struct scan *scan, const char *path, int32_t *error)
{
	char resolved[PATH_MAX];

	*error = 0;
	if (!realpath(path, resolved)) {
		*error = errno ? errno : EIO;
		return 0;
	}
	return add_name(scan, resolved);
}

/* Whether listing another directory of @count entries stays in the budget. */
static bool within_budget(const struct scan *scan, size_t count)
{
	size_t used = (size_t)scan->dir_count * sizeof(struct nopfs_meta_dir) +
	              ((size_t)scan->entry_count + count) *
	                      (sizeof(struct nopfs_meta_entry) + sizeof(uint32_t)) +
	              scan->names_length;

	return used <= scan->budget;
}

static const char *sort_names;
static const struct nopfs_meta_entry *sort_entries;

static int compare_entries(const void *a, const void *b)
{
	const char *x = sort_names + sort_entries[*(const uint32_t *)a].name;
	const char *y = sort_names + sort_entries[*(const uint32_t *)b].name;

	return strcmp(x, y);
}

/*
 * Subdirectories read ahead of the walk: the listings of up to
 * AHEAD_BATCH subdirectories of a directory are read on up to
 * AHEAD_THREADS threads before the walk goes into the first of them. Each
 * is an open and a readdir, round trips to a metadata server that answers
 * several at once: a tree of many small directories (a class folder per
 * label) is listed in a fraction of the time, in the same order.
 */
#define AHEAD_BATCH   64
#define AHEAD_THREADS 8

struct ahead_entry {
	uint64_t d_ino;
	size_t name; /* offset in the listing's names */
	uint8_t d_type;
};

struct ahead {
	char path[PATH_MAX];
	struct ahead_entry *entries;
	uint32_t count, capacity;
	char *names;
	size_t names_length, names_capacity;
	int error; /* the open or readdir failed with it */
	bool read; /* else the walk reads the directory itself */
};

struct ahead_job {
	struct ahead *aheads;
	uint32_t begin, end;
};

static bool ahead_add(struct ahead *a, const struct dirent *dent)
{
	size_t name;

	if (!grow((void **)&a->entries, &a->capacity, a->count, sizeof(*a->entries)))
		return false;
	name = append_name(&a->names, &a->names_length, &a->names_capacity, dent->d_name);
	if (name == SIZE_MAX)
		return false;
	a->entries[a->count++] =
	        (struct ahead_entry){ .d_ino = dent->d_ino, .name = name, .d_type = dent->d_type };
	return true;
}

static void ahead_free(struct ahead *a)
{
	free(a->entries);
	free(a->names);
	a->entries = NULL;
	a->names = NULL;
	a->count = a->capacity = 0;
	a->names_length = a->names_capacity = 0;
	a->read = false;
}

static void ahead_job_run(void *arg)
{
	struct ahead_job *job = arg;

	for (uint32_t i = job->begin; i < job->end; i++) {
		struct ahead *a = &job->aheads[i];
		struct dirent *dent;
		DIR *stream;

		if (nopfs_stop_requested())
			return; /* the walk sees it too */
		stream = open_stream(a->path);
		if (!stream) {
			a->error = errno ? errno : EIO;
			a->read = true;
			continue;
		}
		for (;;) {
			errno = 0;
			dent = readdir(stream);
			if (!dent)
				break;
			if (!ahead_add(a, dent)) {
				errno = ENOMEM;
				break;
			}
		}
		a->error = errno;
		closedir(stream);
		if (a->error == ENOMEM)
			ahead_free(a); /* the walk tries again */
		else
			a->read = true;
	}
}

/* Read the listings of @aheads[0 .. @count) at once. */
static void read_ahead(struct ahead *aheads, uint32_t count)
{
	struct ahead_job jobs[AHEAD_THREADS];
	uint32_t threads = count < AHEAD_THREADS ? count : AHEAD_THREADS;
	uint32_t per = threads ? (count + threads - 1) / threads : 0;

	for (uint32_t t = 0; t < threads; t++)
		jobs[t] = (struct ahead_job){
			.aheads = aheads,
			.begin = t * per < count ? t * per : count,
			.end = (t + 1) * per < count ? (t + 1) * per : count,
		};
	nopfs_parallel_run(ahead_job_run, jobs, sizeof(jobs[0]), threads);
}

static nopfs_status scan_dir(struct scan *scan, uint32_t d, const char *path,
                             const struct ahead *ahead);

/* Append a new entry (zeroed, not a directory) named @name; NULL without memory. */
static struct nopfs_meta_entry *entry_add(struct scan *scan, const char *name, uint64_t d_ino,
                                          uint8_t d_type)
{
	struct nopfs_meta_entry *e;

	if (!grow((void **)&scan->entries, &scan->entry_capacity, scan->entry_count,
	          sizeof(*scan->entries))) {
		scan->failed = true;
		return NULL;
	}
	e = &scan->entries[scan->entry_count];
	memset(e, 0, sizeof(*e));
	e->name = add_name(scan, name);
	e->d_ino = d_ino;
	e->d_type = d_type;
	e->dir = NOPFS_META_NONE;
	scan->entry_count++;
	return e;
}

/* Whether entry @i is a directory (after following) to walk into. */
static bool is_subdir(const struct scan *scan, uint32_t i)
{
	const struct nopfs_meta_entry *e = &scan->entries[i];
	const char *name = scan->names + e->name;

	return !e->stat.error && S_ISDIR(e->stat.mode) && strcmp(name, ".") && strcmp(name, "..");
}

static nopfs_status list_entries(struct scan *scan, uint32_t d, const char *path, int fd,
                                 uint32_t first, uint32_t count, uint32_t stats);

/*
 * The entries of @stream, appended: readdir's errno (0: all read), -1
 * without memory, -2 when stopped.
 */
static int read_entries(struct scan *scan, DIR *stream)
{
	struct dirent *dent;

	for (;;) {
		if (nopfs_stop_requested())
			return -2; /* the scan of a large dataset takes long */
		errno = 0;
		dent = readdir(stream);
		if (!dent)
			return errno;
		if (!entry_add(scan, dent->d_name, dent->d_ino, dent->d_type))
			return -1;
	}
}

/*
 * Read directory @d at @path (open as @stream, or read ahead as @ahead) into
 * the entries, then its subdirectories.
 */
static nopfs_status list_dir(struct scan *scan, uint32_t d, const char *path, DIR *stream,
                             const struct ahead *ahead)
{
	uint32_t first = scan->entry_count, count, stats;
	int fd = stream ? dirfd(stream) : -1, error = 0;
	nopfs_status status;

	if (stream) {
		error = read_entries(scan, stream);
	} else {
		for (uint32_t i = 0; i < ahead->count && error == 0; i++)
			if (!entry_add(scan, ahead->names + ahead->entries[i].name,
			               ahead->entries[i].d_ino, ahead->entries[i].d_type))
				error = -1;
		if (error == 0)
			error = ahead->error;
	}
	if (error == -2)
		return NOPFS_ERR_CANCELED;
	if (error == -1)
		return NOPFS_ERR_NOMEM;
	if (error) {
		/* Unreadable: forget what was read, the PFS answers for it. */
		scan->entry_count = first;
		scan->unlisted++;
		return NOPFS_OK;
	}
	count = scan->entry_count - first;
	if (!within_budget(scan, 0)) {
		scan->entry_count = first;
		scan->unlisted++;
		return NOPFS_OK;
	}
	stats = to_stat(scan, first, count);
	if (fd < 0 && stats) {
		/* read ahead, but with entries to stat: opened again for them */
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			scan->entry_count = first;
			scan->unlisted++;
			return NOPFS_OK;
		}
	}
	status = list_entries(scan, d, path, fd, first, count, stats);
	if (!stream && fd >= 0)
		close(fd);
	return status;
}

/*
 * Stat (@stats of them), follow and walk into the @count entries from @first
 * of @d, open at @fd.
 */
static nopfs_status list_entries(struct scan *scan, uint32_t d, const char *path, int fd,
                                 uint32_t first, uint32_t count, uint32_t stats)
{
	struct ahead *aheads = NULL;
	uint32_t planned = first, ahead_at[AHEAD_BATCH], ahead_count = 0, next_ahead = 0;
	nopfs_status status = NOPFS_OK;

	stat_entries(scan, fd, first, count, stats);
	if (nopfs_stop_requested())
		return NOPFS_ERR_CANCELED;
	for (uint32_t i = first; i < first + count; i++) {
		struct nopfs_meta_entry *e = &scan->entries[i];
		const char *name = scan->names + e->name;
		char child[PATH_MAX];

		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		if (!e->lstat.error && S_ISLNK(e->lstat.mode)) {
			char contents[PATH_MAX];
			ssize_t n = readlinkat(fd, name, contents, sizeof(contents) - 1);

			if (n > 0) {
				contents[n] = '\0';
				e->link = add_name(scan, contents);
				e = &scan->entries[i];
				name = scan->names + e->name;
			}
			if ((size_t)snprintf(child, sizeof(child), "%s/%s", path, name) <
			    sizeof(child))
				e->target = real_name(scan, child, &e->target_error);
			else
				e->target_error = ENAMETOOLONG;
			name = scan->names + e->name; /* the names may have moved */
		}
	}
	scan->dirs[d].first = first;
	scan->dirs[d].count = count;
	scan->dirs[d].listed = 1;
	for (uint32_t i = first; i < first + count && status == NOPFS_OK; i++) {
		struct nopfs_meta_entry *e = &scan->entries[i];
		const char *name = scan->names + e->name;
		const struct ahead *ahead = NULL;
		char child[PATH_MAX];
		uint32_t sub;

		if (!is_subdir(scan, i))
			continue;
		if ((size_t)snprintf(child, sizeof(child), "%s/%s", path, name) >= sizeof(child))
			continue;
		if (i >= planned && scan->listing_only && !S_ISLNK(e->lstat.mode)) {
			/* the next batch of (real) subdirectories, read at once */
			if (!aheads)
				aheads = calloc(AHEAD_BATCH, sizeof(*aheads));
			for (uint32_t k = 0; k < ahead_count; k++)
				ahead_free(&aheads[k]);
			ahead_count = next_ahead = 0;
			for (planned = i;
			     aheads && planned < first + count && ahead_count < AHEAD_BATCH;
			     planned++) {
				struct ahead *a = &aheads[ahead_count];

				if (!is_subdir(scan, planned) ||
				    S_ISLNK(scan->entries[planned].lstat.mode) ||
				    (size_t)snprintf(a->path, sizeof(a->path), "%s/%s", path,
				                     scan->names + scan->entries[planned].name) >=
				            sizeof(a->path))
					continue;
				a->error = 0;
				ahead_at[ahead_count++] = planned;
			}
			if (ahead_count > 1)
				read_ahead(aheads, ahead_count);
		}
		while (next_ahead < ahead_count && ahead_at[next_ahead] < i)
			next_ahead++;
		if (next_ahead < ahead_count && ahead_at[next_ahead] == i &&
		    aheads[next_ahead].read)
			ahead = &aheads[next_ahead];
		if (!grow((void **)&scan->dirs, &scan->dir_capacity, scan->dir_count,
		          sizeof(*scan->dirs))) {
			scan->failed = true;
			status = NOPFS_ERR_NOMEM;
			break;
		}
		sub = scan->dir_count++;
		memset(&scan->dirs[sub], 0, sizeof(scan->dirs[sub]));
		scan->dirs[sub].self = i;
		if (S_ISLNK(e->lstat.mode)) {
			if (e->target_error)
				continue; /* left unlisted: the PFS answers */
			scan->dirs[sub].realpath = e->target;
		} else {
			char real[PATH_MAX];
			const char *parent = scan->names + scan->dirs[d].realpath;

			if ((size_t)snprintf(real, sizeof(real), "%s/%s",
			                     strcmp(parent, "/") ? parent : "",
			                     name) >= sizeof(real))
				continue;
			scan->dirs[sub].realpath = add_name(scan, real);
		}
		scan->entries[i].dir = sub;
		status = scan_dir(scan, sub, child, ahead);
	}
	for (uint32_t k = 0; aheads && k < ahead_count; k++)
		ahead_free(&aheads[k]);
	free(aheads);
	if (status == NOPFS_OK && scan->failed)
		status = NOPFS_ERR_NOMEM;
	return status;
}

/*
 * Open and list directory @d at @path (or take its listing read ahead),
 * unless it is an ancestor again.
 */
static nopfs_status scan_dir(struct scan *scan, uint32_t d, const char *path,
                             const struct ahead *ahead)
{
	const struct nopfs_meta_stat *st = &scan->entries[scan->dirs[d].self].stat;
	nopfs_status status;
	DIR *stream;

	for (uint32_t i = 0; i < scan->depth; i++) {
		if (scan->ancestors[i].ino == st->ino &&
		    scan->ancestors[i].dev_major == st->dev_major &&
		    scan->ancestors[i].dev_minor == st->dev_minor) {
			scan->unlisted++;
			return NOPFS_OK;
		}
	}
	if (scan->depth == sizeof(scan->ancestors) / sizeof(scan->ancestors[0])) {
		scan->unlisted++;
		return NOPFS_OK;
	}
	stream = ahead ? NULL : open_stream(path);
	if (!stream && !ahead) {
		if (d == 0) {
			nopfs_error("cannot list the dataset root '%s': %m", path);
			return nopfs_status_from_errno(errno);
		}
		scan->unlisted++;
		return NOPFS_OK;
	}
	scan->ancestors[scan->depth].ino = st->ino;
	scan->ancestors[scan->depth].dev_major = st->dev_major;
	scan->ancestors[scan->depth].dev_minor = st->dev_minor;
	scan->depth++;
	status = list_dir(scan, d, path, stream, ahead);
	scan->depth--;
	if (stream)
		closedir(stream);
	return status;
}

/* Lay the scan out as one buffer. */
static nopfs_status pack(struct scan *scan, uint64_t root, int64_t made_ns, void **buffer,
                         size_t *length)
{
	struct nopfs_meta_header header = { .version = NOPFS_META_VERSION };
	size_t dirs = (size_t)scan->dir_count * sizeof(struct nopfs_meta_dir);
	size_t entries = (size_t)scan->entry_count * sizeof(struct nopfs_meta_entry);
	size_t sorted = (size_t)scan->entry_count * sizeof(uint32_t);
	size_t names_offset = (sizeof(header) + dirs + entries + sorted + 7) & ~(size_t)7;
	uint32_t *order;
	uint8_t *out;

	out = calloc(1, names_offset + scan->names_length);
	if (!out)
		return NOPFS_ERR_NOMEM;
	memcpy(out + sizeof(header), scan->dirs, dirs);
	memcpy(out + sizeof(header) + dirs, scan->entries, entries);
	order = (uint32_t *)(out + sizeof(header) + dirs + entries);
	for (uint32_t e = 0; e < scan->entry_count; e++)
		order[e] = e;
	sort_names = scan->names;
	sort_entries = scan->entries;
	for (uint32_t d = 0; d < scan->dir_count; d++)
		qsort(order + scan->dirs[d].first, scan->dirs[d].count, sizeof(*order),
		      compare_entries);
	memcpy(out + names_offset, scan->names, scan->names_length);
	memcpy(header.magic, NOPFS_META_MAGIC, 8);
	header.layout = nopfs_meta_layout();
	header.length = names_offset + scan->names_length;
	header.dir_count = scan->dir_count;
	header.entry_count = scan->entry_count;
	header.names_offset = names_offset;
	header.names_length = scan->names_length;
	header.made_ns = (uint64_t)made_ns;
	header.complete = scan->unlisted == 0;
	header.unlisted = scan->unlisted;
	header.root = root;
	header.checksum = nopfs_meta_checksum(out + sizeof(header), header.length - sizeof(header));
	memcpy(out, &header, sizeof(header));
	*buffer = out;
	*length = header.length;
	return NOPFS_OK;
}

static nopfs_status meta_scan(const char *root, size_t budget, bool listing_only, void **buffer,
                              size_t *length)
{
	struct scan *scan = calloc(1, sizeof(*scan));
	struct nopfs_meta_entry *e;
	struct timespec now;
	nopfs_status status;
	int32_t error;
	uint64_t root_name;

	if (!scan)
		return NOPFS_ERR_NOMEM;
	clock_gettime(CLOCK_REALTIME, &now);
	scan->budget = budget;
	scan->listing_only = listing_only;
	add_name(scan, ""); /* offset 0: no name */
	root_name = add_name(scan, root);
	scan->dir_capacity = 64;
	scan->dirs = calloc(scan->dir_capacity, sizeof(*scan->dirs));
	scan->entry_capacity = 64;
	scan->entries = calloc(scan->entry_capacity, sizeof(*scan->entries));
	status = NOPFS_ERR_NOMEM;
	if (!scan->dirs || !scan->entries || scan->failed)
		goto out;
	e = &scan->entries[0];
	e->name = 0;
	e->dir = 0;
	e->d_type = DT_DIR;
	stat_at(AT_FDCWD, root, AT_SYMLINK_NOFOLLOW, &e->lstat);
	stat_at(AT_FDCWD, root, 0, &e->stat);
	scan->entry_count = 1;
	scan->dir_count = 1;
	scan->dirs[0].self = 0;
	scan->dirs[0].realpath = real_name(scan, root, &error);
	if (e->stat.error || !S_ISDIR(e->stat.mode) || error) {
		errno = e->stat.error ? e->stat.error : error ? error : ENOTDIR;
		nopfs_error("cannot scan the dataset root '%s': %m", root);
		status = nopfs_status_from_errno(errno);
		goto out;
	}
	status = scan_dir(scan, 0, root, NULL);
	if (status == NOPFS_OK && scan->failed)
		status = NOPFS_ERR_NOMEM;
	if (status == NOPFS_OK)
		status = pack(scan, root_name, (int64_t)now.tv_sec * 1000000000 + now.tv_nsec,
		              buffer, length);
	if (status == NOPFS_ERR_NOMEM)
		nopfs_error("out of memory scanning the metadata of '%s'", root);
out:
	free(scan->dirs);
	free(scan->entries);
	free(scan->names);
	free(scan);
	return status;
}

nopfs_status nopfs_meta_scan(const char *root, size_t budget, void **buffer, size_t *length)
{
	return meta_scan(root, budget, false, buffer, length);
}

nopfs_status nopfs_meta_scan_listing(const char *root, size_t budget, void **buffer, size_t *length)
{
	return meta_scan(root, budget, true, buffer, length);
}

/*
 * The stats of the files a listing left unknown, on workers paced against
 * the PFS's metadata server (common/pace.h): a unit of work is up to
 * UNIT_ENTRIES entries of one directory, taken in turn by the active
 * workers; the others wait. On a server that answers more when asked more
 * at once, all the workers run; on a saturated one, a few, which scan as
 * fast and leave the server's queue to the ranks' own calls.
 */
#define FILES_THREADS_MAX 64
#define FILES_THREADS_MIN 2
#define UNIT_ENTRIES      256
#define PACE_INTERVAL_NS  250000000u /* between the controller's looks */
#define IDLE_NS           2000000u   /* a worker beyond the active ones sleeps this long */
#define FILES_NICE        10         /* the workers' nice value above the agent's */

struct files_unit {
	uint32_t dir, first, end; /* entries [first, end) of directory dir */
};

struct files_work {
	const struct nopfs_meta_view *view;
	struct nopfs_meta_entry *entries;
	struct files_unit *units;
	uint32_t unit_count;
	unsigned int workers;
	_Atomic uint32_t next_unit;
	_Atomic unsigned int active;
	_Atomic unsigned int running; /* workers not yet done */
	_Atomic uint64_t made;        /* stats made */
	_Atomic uint64_t latency_ns;  /* their latencies, summed */
};

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
		               .tv_nsec = (long)(ns % 1000000000u) };

	nanosleep(&ts, NULL);
}

/* Stat the unknown entries of @unit; @fd/@fd_dir: the worker's open directory. */
static void files_unit_run(struct files_work *work, const struct files_unit *unit, int *fd,
                           uint32_t *fd_dir)
{
	const struct nopfs_meta_view *view = work->view;
	const struct nopfs_meta_dir *dir = &view->dirs[unit->dir];

	for (uint32_t i = unit->first; i < unit->end; i++) {
		struct nopfs_meta_entry *e = &work->entries[i];
		uint64_t start;

		if (e->lstat.error != NOPFS_META_UNKNOWN && e->stat.error != NOPFS_META_UNKNOWN)
			continue;
		if (nopfs_stop_requested())
			return;
		if (*fd < 0 || *fd_dir != unit->dir) {
			if (*fd >= 0)
				close(*fd);
			*fd_dir = unit->dir;
			*fd = open(nopfs_meta_name(view, dir->realpath),
			           O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		}
		if (*fd < 0)
			return; /* gone: its files' stats stay unknown, the PFS answers */
		start = nopfs_clock_now_ns();
		stat_entry(*fd, nopfs_meta_name(view, e->name), e);
		atomic_fetch_add(&work->latency_ns, nopfs_clock_now_ns() - start);
		atomic_fetch_add(&work->made, 1);
	}
}

struct files_worker {
	struct files_work *work;
	unsigned int index; /* from 1 */
	pthread_t thread;
};

static void files_work_run(struct files_work *work, unsigned int index)
{
	uint32_t fd_dir = 0;
	int fd = -1;

	while (!nopfs_stop_requested()) {
		uint32_t u;

		if (index > atomic_load(&work->active)) {
			if (atomic_load(&work->next_unit) >= work->unit_count)
				break; /* nothing left for it */
			sleep_ns(IDLE_NS);
			continue;
		}
		u = atomic_fetch_add(&work->next_unit, 1);
		if (u >= work->unit_count)
			break;
		files_unit_run(work, &work->units[u], &fd, &fd_dir);
	}
	if (fd >= 0)
		close(fd);
}

/*
 * The files' stats are background work beside the ranks (started early,
 * they import and list at the same time) and the agent's own threads: its
 * workers run FILES_NICE lower, so that on a node with few free cores the
 * ranks get them first (the pacing then sees the workers' calls take
 * longer and runs fewer of them).
 */
static void lower_priority(void)
{
	id_t self = (id_t)gettid();
	int nice;

	errno = 0;
	nice = getpriority(PRIO_PROCESS, self);
	if (nice == -1 && errno)
		return;
	(void)setpriority(PRIO_PROCESS, self, nice + FILES_NICE > 19 ? 19 : nice + FILES_NICE);
}

static void *files_worker_main(void *arg)
{
	struct files_worker *worker = arg;

	lower_priority();
	files_work_run(worker->work, worker->index);
	atomic_fetch_sub(&worker->work->running, 1);
	return NULL;
}

/*
 * Every PACE_INTERVAL_NS, the workers for the next interval (@pace's, started
 * with work->active), until all are done; the most that were active at once.
 */
static unsigned int files_controller(struct files_work *work, struct nopfs_pace *pace)
{
	uint64_t last_made = 0, last_latency = 0, next = nopfs_clock_now_ns() + PACE_INTERVAL_NS;

	while (atomic_load(&work->running) > 0) {
		uint64_t now = nopfs_clock_now_ns(), made, latency;

		if (now < next) {
			/* short sleeps: a small scan ends without waiting out an interval */
			sleep_ns(next - now < IDLE_NS ? next - now : IDLE_NS);
			continue;
		}
		next = now + PACE_INTERVAL_NS;
		made = atomic_load(&work->made);
		latency = atomic_load(&work->latency_ns);
		atomic_store(&work->active,
		             nopfs_pace_update(pace, made - last_made, latency - last_latency));
		last_made = made;
		last_latency = latency;
	}
	return pace->peak;
}

/* The units of work: the listed directories' entries, UNIT_ENTRIES at a time. */
static struct files_unit *files_units(const struct nopfs_meta_view *view, uint32_t *count)
{
	struct files_unit *units;
	uint64_t n = 0;

	for (uint32_t d = 0; d < view->header->dir_count; d++)
		if (view->dirs[d].listed)
			n += (view->dirs[d].count + UNIT_ENTRIES - 1) / UNIT_ENTRIES;
	*count = 0;
	units = malloc((n ? n : 1) * sizeof(*units));
	if (!units)
		return NULL;
	for (uint32_t d = 0; d < view->header->dir_count; d++) {
		const struct nopfs_meta_dir *dir = &view->dirs[d];

		for (uint32_t at = 0; dir->listed && at < dir->count; at += UNIT_ENTRIES) {
			uint32_t left = dir->count - at;

			units[(*count)++] = (struct files_unit){
				.dir = d,
				.first = dir->first + at,
				.end = dir->first + at +
				       (left < UNIT_ENTRIES ? left : UNIT_ENTRIES),
			};
		}
	}
	return units;
}

/* Pace @work on @workers threads, starting with FILES_THREADS_MIN of them. */
static void pace_start(struct files_work *work, struct nopfs_pace *pace, unsigned int workers)
{
	nopfs_pace_init(pace, workers < FILES_THREADS_MIN ? workers : FILES_THREADS_MIN, workers);
	atomic_store(&work->active, pace->active);
}

/*
 * Run @work on up to work->workers threads, paced by this one, starting with
 * FILES_THREADS_MIN; on none if none can be started (then this thread does
 * the work, unpaced). Returns the most threads that worked at once.
 */
static unsigned int files_run(struct files_work *work)
{
	struct files_worker workers[FILES_THREADS_MAX];
	struct nopfs_pace pace;
	unsigned int started = 0, most = 1;

	pace_start(work, &pace, work->workers);
	atomic_init(&work->running, work->workers);
	for (unsigned int t = 0; t < work->workers; t++) {
		workers[t] = (struct files_worker){ .work = work, .index = t + 1 };
		if (pthread_create(&workers[t].thread, NULL, files_worker_main, &workers[t]) != 0)
			break;
		started++;
	}
	atomic_fetch_sub(&work->running, work->workers - started);
	if (started == 0) {
		atomic_store(&work->active, 1);
		files_work_run(work, 1);
	} else {
		if (started < work->workers)
			pace_start(work, &pace, started);
		most = files_controller(work, &pace);
	}
	for (unsigned int t = 0; t < started; t++)
		pthread_join(workers[t].thread, NULL);
	return most;
}

nopfs_status nopfs_meta_stat_files(void *buffer, size_t length, unsigned int threads,
                                   uint64_t *made, unsigned int *most)
{
	struct nopfs_meta_header *header = buffer;
	struct files_work work = { 0 };
	struct nopfs_meta_view view;
	const char *why;

	*made = 0;
	if (most)
		*most = 0;
	if (nopfs_meta_view_init(&view, buffer, length, &why) != NOPFS_OK)
		return NOPFS_ERR_FORMAT;
	work.view = &view;
	work.entries = (struct nopfs_meta_entry *)view.entries;
	work.units = files_units(&view, &work.unit_count);
	if (!work.units) {
		nopfs_error("out of memory for the work of stating the dataset's files");
		return NOPFS_ERR_NOMEM;
	}
	work.workers = threads < 1 ? 1 : threads > FILES_THREADS_MAX ? FILES_THREADS_MAX : threads;
	if (work.workers > work.unit_count)
		work.workers = work.unit_count ? work.unit_count : 1;
	atomic_init(&work.next_unit, 0);
	atomic_init(&work.made, 0);
	atomic_init(&work.latency_ns, 0);
	threads = files_run(&work);
	free(work.units);
	*made = atomic_load(&work.made);
	if (most)
		*most = threads;
	header->checksum = nopfs_meta_checksum((uint8_t *)buffer + sizeof(*header),
	                                       header->length - sizeof(*header));
	return nopfs_stop_requested() ? NOPFS_ERR_CANCELED : NOPFS_OK;
}

uint32_t nopfs_meta_check_dirs(const struct nopfs_meta_view *view, uint8_t *changed,
                               uint32_t *newly, uint32_t max)
{
	uint32_t marked = 0;

	for (uint32_t d = 0; d < view->header->dir_count; d++) {
		const struct nopfs_meta_dir *dir = &view->dirs[d];
		const struct nopfs_meta_stat *then = &view->entries[dir->self].stat;
		struct statx now;

		if (!dir->listed || __atomic_load_n(&changed[d], __ATOMIC_RELAXED))
			continue;
		if (statx(AT_FDCWD, nopfs_meta_name(view, dir->realpath), AT_NO_AUTOMOUNT,
		          STATX_MTIME | STATX_CTIME, &now) == 0 &&
		    now.stx_mtime.tv_sec == then->mtime_sec &&
		    now.stx_mtime.tv_nsec == then->mtime_nsec &&
		    now.stx_ctime.tv_sec == then->ctime_sec &&
		    now.stx_ctime.tv_nsec == then->ctime_nsec)
			continue;
		__atomic_store_n(&changed[d], 1, __ATOMIC_RELAXED);
		if (marked < max)
			newly[marked] = d;
		marked++;
	}
	return marked;
}
