/*
 * The interposer's metadata entry points: opendir, fdopendir, readdir,
 * readdir64, readdir_r, readdir64_r, rewinddir, seekdir, telldir, dirfd,
 * closedir, scandir, scandir64, stat, stat64, lstat, lstat64, fstatat,
 * fstatat64, statx, access, faccessat, realpath, readlink and readlinkat. For a path in the
 * dataset they answer from the metadata the agent scanned once for the job
 * (catalog/meta.h), with what the real call would give when the dataset is
 * as it was then; everything else, and anything the metadata does not know
 * (a directory left unlisted, "..", flags not handled), goes to the real
 * function.
 *
 * A served directory stream is a slot of a pool mapped once: a DIR pointer
 * inside the pool is ours, any other is glibc's. dirfd() of a served stream
 * opens the real directory (a PFS call, counted), since the caller will use
 * the descriptor with the *at() calls.
 */
#include "config.h"

/* This file defines stat and stat64, readdir and readdir64, ... as themselves. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "preload.h"
#include "preload_real.h"
#include "catalog/meta.h"

/* Streams served at once; beyond, the real opendir. */
#define SLOTS 1024

struct served_dir {
	int used; /* atomic */
	uint32_t dir;
	uint32_t position;
	int fd; /* the real directory: fdopendir's, or opened by dirfd(); -1 */
	const struct nopfs_meta_view *view; /* kept mapped: a listing begun is finished */
	pthread_mutex_t lock;
	struct dirent entry;
	struct dirent64 entry64;
	char path[PATH_MAX]; /* absolute, for dirfd() */
};

static struct served_dir *pool; /* atomic: mapped once */
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static void pool_init(void)
{
	void *map = mmap(NULL, SLOTS * sizeof(struct served_dir), PROT_READ | PROT_WRITE,
	                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (map != MAP_FAILED)
		__atomic_store_n(&pool, map, __ATOMIC_RELEASE);
}

static struct served_dir *served(const void *stream)
{
	struct served_dir *base = __atomic_load_n(&pool, __ATOMIC_ACQUIRE);
	uintptr_t p = (uintptr_t)stream, b = (uintptr_t)base;

	if (!base || p < b || p >= b + SLOTS * sizeof(struct served_dir) ||
	    (p - b) % sizeof(struct served_dir))
		return NULL;
	return (struct served_dir *)stream;
}

static struct served_dir *slot_take(void)
{
	pthread_once(&pool_once, pool_init);
	if (!pool)
		return NULL;
	for (unsigned int i = 0; i < SLOTS; i++) {
		if (!__atomic_exchange_n(&pool[i].used, 1, __ATOMIC_ACQUIRE)) {
			pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

			pool[i].lock = fresh;
			pool[i].position = 0;
			pool[i].fd = -1;
			return &pool[i];
		}
	}
	return NULL;
}

static void slot_give(struct served_dir *slot)
{
	__atomic_store_n(&slot->used, 0, __ATOMIC_RELEASE);
}

#define REAL(function, type) ((type)nopfs_preload_real_function(function, !nopfs_preload_busy))

/* What a call into the dataset finds in the metadata. */
struct lookup {
	const struct nopfs_meta_view *view;
	enum nopfs_meta_found found;
	uint32_t entry, parent;
	bool followed;
	int error;
	char absolute[PATH_MAX];
};

/*
 * Look @path (relative to @dirfd) up when it is in the dataset and the
 * metadata is there: true with @l filled (found may still be PASS).
 */
static bool lookup(int dirfd, const char *path, bool follow, struct lookup *l)
{
	char rest[PATH_MAX];

	/*
	 * The path first: only a call into the dataset may wait for the
	 * metadata, and one made without it is counted as reaching the PFS.
	 */
	if (!nopfs_preload_in_dataset(dirfd, path, rest, sizeof(rest)))
		return false;
	l->view = nopfs_preload_meta();
	if (!l->view) {
		nopfs_preload_count_meta(NOPFS_PRELOAD_META_ABSENT);
		return false;
	}
	l->found = nopfs_meta_resolve(l->view, rest, follow, &l->entry, &l->parent, &l->followed,
	                              &l->error);
	nopfs_preload_count_meta(l->found == NOPFS_META_PASS    ? NOPFS_PRELOAD_META_PASSED
	                         : l->found == NOPFS_META_STALE ? NOPFS_PRELOAD_META_STALE
	                                                        : NOPFS_PRELOAD_META_SERVED);
	return l->found == NOPFS_META_ENTRY || l->found == NOPFS_META_ERROR;
}

/* ------------------------------------------------------------------------
 * stat family.
 */

/* struct stat and struct stat64 differ in their types only: one filling for both. */
static void fill_stat(const struct nopfs_meta_stat *m, struct stat *st)
{
	NOPFS_META_FILL_STAT(m, st);
}

static void fill_stat64(const struct nopfs_meta_stat *m, struct stat64 *st)
{
	NOPFS_META_FILL_STAT(m, st);
}

/* The stat of what @l found, or -1 with errno: the answer of a stat call. */
static const struct nopfs_meta_stat *found_stat(const struct lookup *l)
{
	const struct nopfs_meta_stat *m;

	if (l->found == NOPFS_META_ERROR) {
		errno = l->error;
		return NULL;
	}
	m = nopfs_meta_stat_of(l->view, l->entry, l->followed);
	if (m->error) {
		errno = m->error;
		return NULL;
	}
	return m;
}

typedef int (*fstatat_function)(int, const char *, struct stat *, int);
typedef int (*fstatat64_function)(int, const char *, struct stat64 *, int);

/* The flags of the *stat* calls served; with any other, the real call. */
#define SERVED_AT_FLAGS (AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT)

static int stat_common(enum real_function function, int dirfd, const char *path, void *out,
                       int flags, bool wide)
{
	const struct nopfs_meta_stat *m;
	struct lookup l;
	int saved_errno = errno;
	int rc;

	if (!nopfs_preload_busy && path && !(flags & ~SERVED_AT_FLAGS)) {
		nopfs_preload_busy = 1;
		if (lookup(dirfd, path, !(flags & AT_SYMLINK_NOFOLLOW), &l)) {
			m = found_stat(&l);
			if (m) {
				if (wide)
					fill_stat64(m, out);
				else
					fill_stat(m, out);
				errno = saved_errno;
			}
			nopfs_preload_busy = 0;
			return m ? 0 : -1;
		}
		nopfs_preload_busy = 0;
		errno = saved_errno;
	}
	switch (function) {
	case REAL_STAT:
	case REAL_STAT64:
	case REAL_LSTAT:
	case REAL_LSTAT64:
	case REAL_FSTATAT:
	case REAL_FSTATAT64: {
		/* The real fstatat stands in for all of them. */
		void *real = nopfs_preload_real_function(wide ? REAL_FSTATAT64 : REAL_FSTATAT,
		                                         !nopfs_preload_busy);

		if (!real)
			rc = (int)syscall(SYS_newfstatat, dirfd, path, out, flags);
		else if (wide)
			rc = ((fstatat64_function)real)(dirfd, path, out, flags);
		else
			rc = ((fstatat_function)real)(dirfd, path, out, flags);
		return rc;
	}
	default:
		errno = ENOSYS;
		return -1;
	}
}

int stat(const char *path, struct stat *st)
{
	return stat_common(REAL_STAT, AT_FDCWD, path, st, 0, false);
}

int stat64(const char *path, struct stat64 *st)
{
	return stat_common(REAL_STAT64, AT_FDCWD, path, st, 0, true);
}

int lstat(const char *path, struct stat *st)
{
	return stat_common(REAL_LSTAT, AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW, false);
}

int lstat64(const char *path, struct stat64 *st)
{
	return stat_common(REAL_LSTAT64, AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW, true);
}

int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	return stat_common(REAL_FSTATAT, dirfd, path, st, flags, false);
}

int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
	return stat_common(REAL_FSTATAT64, dirfd, path, st, flags, true);
}

typedef int (*statx_function)(int, const char *, int, unsigned int, struct statx *);

static void fill_statx(const struct nopfs_meta_stat *m, unsigned int request, struct statx *stx)
{
	memset(stx, 0, sizeof(*stx));
	stx->stx_mask = m->mask & (request | STATX_BASIC_STATS | STATX_MNT_ID);
	stx->stx_blksize = m->blksize;
	stx->stx_attributes = m->attributes;
	stx->stx_nlink = m->nlink;
	stx->stx_uid = m->uid;
	stx->stx_gid = m->gid;
	stx->stx_mode = (uint16_t)m->mode;
	stx->stx_ino = m->ino;
	stx->stx_size = m->size;
	stx->stx_blocks = m->blocks;
	stx->stx_attributes_mask = m->attributes_mask;
	stx->stx_atime.tv_sec = m->atime_sec;
	stx->stx_atime.tv_nsec = m->atime_nsec;
	if (stx->stx_mask & STATX_BTIME) {
		stx->stx_btime.tv_sec = m->btime_sec;
		stx->stx_btime.tv_nsec = m->btime_nsec;
	}
	stx->stx_ctime.tv_sec = m->ctime_sec;
	stx->stx_ctime.tv_nsec = m->ctime_nsec;
	stx->stx_mtime.tv_sec = m->mtime_sec;
	stx->stx_mtime.tv_nsec = m->mtime_nsec;
	stx->stx_rdev_major = m->rdev_major;
	stx->stx_rdev_minor = m->rdev_minor;
	stx->stx_dev_major = m->dev_major;
	stx->stx_dev_minor = m->dev_minor;
	if (stx->stx_mask & STATX_MNT_ID)
		stx->stx_mnt_id = m->mnt_id;
}

int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *stx)
{
	const struct nopfs_meta_stat *m;
	statx_function real;
	struct lookup l;
	int saved_errno = errno;

	/* AT_STATX_FORCE_SYNC asks the file system afresh: the real call. */
	if (!nopfs_preload_busy && path && stx &&
	    !(flags & ~(SERVED_AT_FLAGS | AT_STATX_DONT_SYNC)) && !(mask & STATX__RESERVED)) {
		nopfs_preload_busy = 1;
		if (lookup(dirfd, path, !(flags & AT_SYMLINK_NOFOLLOW), &l)) {
			m = found_stat(&l);
			if (m) {
				fill_statx(m, mask, stx);
				errno = saved_errno;
			}
			nopfs_preload_busy = 0;
			return m ? 0 : -1;
		}
		nopfs_preload_busy = 0;
		errno = saved_errno;
	}
	real = REAL(REAL_STATX, statx_function);
	if (!real)
		return (int)syscall(SYS_statx, dirfd, path, flags, mask, stx);
	return real(dirfd, path, flags, mask, stx);
}

/* ------------------------------------------------------------------------
 * access, faccessat.
 */

/* Whether the caller (real or effective ids) may @mode what @m describes. */
static int mode_allows(const struct nopfs_meta_stat *m, int mode, bool effective)
{
	uid_t uid = effective ? geteuid() : getuid();
	gid_t groups[256];
	unsigned int shift = 0;
	int count;

	if (mode == F_OK)
		return 0;
	if (uid == 0) {
		/* root reads anything; executes what some x bit allows, searches any directory */
		if (!(mode & X_OK) || S_ISDIR(m->mode) || (m->mode & 0111))
			return 0;
		return EACCES;
	}
	if (uid == m->uid) {
		shift = 6;
	} else {
		bool member = (effective ? getegid() : getgid()) == m->gid;

		count = getgroups(256, groups);
		if (count < 0)
			return -1; /* cannot tell: the real call */
		for (int i = 0; !member && i < count; i++)
			member = groups[i] == m->gid;
		shift = member ? 3 : 0;
	}
	if ((mode & R_OK) && !(m->mode & (S_IROTH << shift)))
		return EACCES;
	if ((mode & X_OK) && !(m->mode & (S_IXOTH << shift)))
		return EACCES;
	return 0;
}

typedef int (*access_function)(const char *, int);
typedef int (*faccessat_function)(int, const char *, int, int);

static int access_common(int dirfd, const char *path, int mode, int flags, bool at)
{
	const struct nopfs_meta_stat *m;
	struct lookup l;
	int saved_errno = errno;
	int verdict = -1;

	/* W_OK depends on the mount (read-only?) and is rare on a dataset: the real call. */
	if (!nopfs_preload_busy && path && !(mode & W_OK) && !(mode & ~(R_OK | X_OK)) &&
	    !(flags & ~(AT_EACCESS | AT_SYMLINK_NOFOLLOW))) {
		nopfs_preload_busy = 1;
		if (lookup(dirfd, path, !(flags & AT_SYMLINK_NOFOLLOW), &l)) {
			m = found_stat(&l);
			verdict = m ? mode_allows(m, mode, flags & AT_EACCESS) : errno;
		}
		nopfs_preload_busy = 0;
		errno = saved_errno;
		if (verdict == 0)
			return 0;
		if (verdict > 0) {
			errno = verdict;
			return -1;
		}
	}
	if (at) {
		faccessat_function real = REAL(REAL_FACCESSAT, faccessat_function);

		return real ? real(dirfd, path, mode, flags)
		            : (int)syscall(SYS_faccessat, dirfd, path, mode);
	} else {
		access_function real = REAL(REAL_ACCESS, access_function);

		return real ? real(path, mode) : (int)syscall(SYS_faccessat, AT_FDCWD, path, mode);
	}
}

int access(const char *path, int mode)
{
	return access_common(AT_FDCWD, path, mode, 0, false);
}

int faccessat(int dirfd, const char *path, int mode, int flags)
{
	return access_common(dirfd, path, mode, flags, true);
}

/* ------------------------------------------------------------------------
 * realpath.
 */

typedef char *(*realpath_function)(const char *, char *);

/* The real path of what @l found into @out of PATH_MAX bytes: 0, or an errno, or -1 (pass). */
static int found_realpath(const struct lookup *l, char *out)
{
	const struct nopfs_meta_view *view = l->view;
	const struct nopfs_meta_entry *e;
	const char *parent;

	if (l->found == NOPFS_META_ERROR)
		return l->error;
	e = &view->entries[l->entry];
	if (e->stat.error)
		return e->stat.error;
	if (e->dir != NOPFS_META_NONE)
		return snprintf(out, PATH_MAX, "%s",
		                nopfs_meta_name(view, view->dirs[e->dir].realpath)) < PATH_MAX
		               ? 0
		               : -1;
	if (S_ISLNK(e->lstat.mode)) {
		if (e->target_error)
			return e->target_error;
		return snprintf(out, PATH_MAX, "%s", nopfs_meta_name(view, e->target)) < PATH_MAX
		               ? 0
		               : -1;
	}
	if (l->parent == NOPFS_META_NONE)
		return -1;
	parent = nopfs_meta_name(view, view->dirs[l->parent].realpath);
	return snprintf(out, PATH_MAX, "%s/%s", strcmp(parent, "/") ? parent : "",
	                nopfs_meta_name(view, e->name)) < PATH_MAX
	               ? 0
	               : -1;
}

char *realpath(const char *path, char *resolved)
{
	char answer[PATH_MAX];
	realpath_function real;
	struct lookup l;
	int saved_errno = errno;
	int verdict = -1;

	if (!nopfs_preload_busy && path) {
		nopfs_preload_busy = 1;
		if (lookup(AT_FDCWD, path, true, &l))
			verdict = found_realpath(&l, answer);
		nopfs_preload_busy = 0;
		errno = saved_errno;
		if (verdict > 0) {
			errno = verdict;
			return NULL;
		}
		if (verdict == 0) {
			if (!resolved) {
				resolved = malloc(strlen(answer) + 1);
				if (!resolved)
					return NULL;
			}
			strcpy(resolved, answer);
			return resolved;
		}
	}
	real = REAL(REAL_REALPATH, realpath_function);
	if (!real) {
		errno = ENOSYS;
		return NULL;
	}
	return real(path, resolved);
}

/* ------------------------------------------------------------------------
 * readlink, readlinkat.
 */

typedef ssize_t (*readlinkat_function)(int, const char *, char *, size_t);

ssize_t readlinkat(int dirfd, const char *path, char *buffer, size_t size)
{
	const struct nopfs_meta_entry *e = NULL;
	readlinkat_function real;
	struct lookup l;
	int saved_errno = errno;
	ssize_t answer = -2;

	if (!nopfs_preload_busy && path && buffer && size) {
		nopfs_preload_busy = 1;
		if (lookup(dirfd, path, false, &l)) {
			if (l.found == NOPFS_META_ERROR) {
				saved_errno = l.error;
				answer = -1;
			} else if (!(e = &l.view->entries[l.entry])->lstat.error &&
			           (!S_ISLNK(e->lstat.mode) || l.followed)) {
				saved_errno = EINVAL;
				answer = -1;
			} else if (e->lstat.error) {
				saved_errno = e->lstat.error;
				answer = -1;
			} else if (e->link) {
				const char *contents = nopfs_meta_name(l.view, e->link);
				size_t length = strlen(contents);

				answer = (ssize_t)(length < size ? length : size);
				memcpy(buffer, contents, (size_t)answer);
			}
		}
		nopfs_preload_busy = 0;
		errno = saved_errno;
		if (answer != -2)
			return answer;
	}
	real = REAL(REAL_READLINKAT, readlinkat_function);
	if (!real)
		return (ssize_t)syscall(SYS_readlinkat, dirfd, path, buffer, size);
	return real(dirfd, path, buffer, size);
}

ssize_t readlink(const char *path, char *buffer, size_t size)
{
	return readlinkat(AT_FDCWD, path, buffer, size);
}

/* ------------------------------------------------------------------------
 * Directory streams.
 */

typedef DIR *(*opendir_function)(const char *);
typedef DIR *(*fdopendir_function)(int);
typedef struct dirent *(*readdir_function)(DIR *);
typedef struct dirent64 *(*readdir64_function)(DIR *);
typedef int (*readdir_r_function)(DIR *, struct dirent *, struct dirent **);
typedef int (*readdir64_r_function)(DIR *, struct dirent64 *, struct dirent64 **);
typedef void (*rewinddir_function)(DIR *);
typedef void (*seekdir_function)(DIR *, long);
typedef long (*telldir_function)(DIR *);
typedef int (*dirfd_function)(DIR *);
typedef int (*closedir_function)(DIR *);

/*
 * A served stream for the directory @l found, or NULL (errno set) when the
 * call fails, or NULL with *pass when the real call must answer.
 */
static struct served_dir *open_found(const struct lookup *l, bool *pass)
{
	const struct nopfs_meta_entry *e;
	struct served_dir *slot;

	*pass = false;
	if (l->found == NOPFS_META_ERROR) {
		errno = l->error;
		return NULL;
	}
	e = &l->view->entries[l->entry];
	if (e->stat.error) {
		errno = e->stat.error;
		return NULL;
	}
	if (!S_ISDIR(e->stat.mode)) {
		errno = ENOTDIR;
		return NULL;
	}
	if (e->dir == NOPFS_META_NONE || !l->view->dirs[e->dir].listed) {
		*pass = true;
		return NULL;
	}
	slot = slot_take();
	if (!slot) {
		*pass = true;
		return NULL;
	}
	slot->dir = e->dir;
	slot->view = l->view;
	return slot;
}

DIR *opendir(const char *path)
{
	struct served_dir *slot = NULL;
	opendir_function real;
	struct lookup l;
	int saved_errno = errno;
	bool pass = true;

	if (!nopfs_preload_busy && path) {
		nopfs_preload_busy = 1;
		if (lookup(AT_FDCWD, path, true, &l)) {
			errno = saved_errno;
			slot = open_found(&l, &pass);
			if (slot) {
				if (path[0] == '/')
					snprintf(slot->path, sizeof(slot->path), "%s", path);
				else if (!getcwd(slot->path, sizeof(slot->path)) ||
				         strlen(slot->path) + strlen(path) + 2 > sizeof(slot->path))
					slot->path[0] = '\0';
				else
					strcat(strcat(slot->path, "/"), path);
			}
		}
		nopfs_preload_busy = 0;
		if (!pass)
			return (DIR *)slot;
		errno = saved_errno;
	}
	real = REAL(REAL_OPENDIR, opendir_function);
	if (!real) {
		errno = ENOSYS;
		return NULL;
	}
	return real(path);
}

DIR *fdopendir(int fd)
{
	struct served_dir *slot = NULL;
	fdopendir_function real;
	char link[64];
	struct lookup l;
	int saved_errno = errno;
	bool pass = true;
	int fl;

	if (!nopfs_preload_busy && fd >= 0) {
		nopfs_preload_busy = 1;
		/* A descriptor the real fdopendir would refuse is left to it. */
		fl = fcntl(fd, F_GETFL);
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		if (fl >= 0 && !(fl & O_PATH) && (fl & O_ACCMODE) != O_WRONLY &&
		    lookup(fd, ".", true, &l)) {
			errno = saved_errno;
			slot = open_found(&l, &pass);
			if (slot) {
				ssize_t n = readlink(link, slot->path, sizeof(slot->path) - 1);

				slot->path[n > 0 ? n : 0] = '\0';
				slot->fd = fd;
			}
		}
		nopfs_preload_busy = 0;
		if (!pass) {
			if (slot)
				fcntl(fd, F_SETFD, FD_CLOEXEC);
			return (DIR *)slot;
		}
		errno = saved_errno;
	}
	real = REAL(REAL_FDOPENDIR, fdopendir_function);
	if (!real) {
		errno = ENOSYS;
		return NULL;
	}
	return real(fd);
}

/* The next entry of @slot (its lock held), or NULL at the end. */
static const struct nopfs_meta_entry *next_entry(struct served_dir *slot,
                                                 const struct nopfs_meta_view **view)
{
	const struct nopfs_meta_dir *dir;

	*view = slot->view;
	dir = &(*view)->dirs[slot->dir];
	if (slot->position >= dir->count)
		return NULL;
	return &(*view)->entries[dir->first + slot->position++];
}

#define FILL_DIRENT(out, view, e, position)                                                \
	do {                                                                               \
		const char *name_ = nopfs_meta_name(view, (e)->name);                      \
		size_t length_ = strlen(name_);                                            \
		(out)->d_ino = (e)->d_ino;                                                 \
		(out)->d_off = (position);                                                 \
		(out)->d_type = (e)->d_type;                                               \
		(out)->d_reclen = (unsigned short)((offsetof(__typeof__(*(out)), d_name) + \
		                                    length_ + 1 + 7) &                     \
		                                   ~(size_t)7);                            \
		memcpy((out)->d_name, name_, length_ + 1);                                 \
	} while (0)

struct dirent *readdir(DIR *stream)
{
	struct served_dir *slot = served(stream);
	const struct nopfs_meta_view *view;
	const struct nopfs_meta_entry *e;
	readdir_function real;
	int saved_errno = errno;

	if (slot) {
		pthread_mutex_lock(&slot->lock);
		e = next_entry(slot, &view);
		if (e)
			FILL_DIRENT(&slot->entry, view, e, slot->position);
		pthread_mutex_unlock(&slot->lock);
		errno = saved_errno;
		return e ? &slot->entry : NULL;
	}
	real = REAL(REAL_READDIR, readdir_function);
	return real ? real(stream) : NULL;
}

struct dirent64 *readdir64(DIR *stream)
{
	struct served_dir *slot = served(stream);
	const struct nopfs_meta_view *view;
	const struct nopfs_meta_entry *e;
	readdir64_function real;
	int saved_errno = errno;

	if (slot) {
		pthread_mutex_lock(&slot->lock);
		e = next_entry(slot, &view);
		if (e)
			FILL_DIRENT(&slot->entry64, view, e, slot->position);
		pthread_mutex_unlock(&slot->lock);
		errno = saved_errno;
		return e ? &slot->entry64 : NULL;
	}
	real = REAL(REAL_READDIR64, readdir64_function);
	return real ? real(stream) : NULL;
}

int readdir_r(DIR *stream, struct dirent *entry, struct dirent **result)
{
	struct served_dir *slot = served(stream);
	const struct nopfs_meta_view *view;
	const struct nopfs_meta_entry *e;
	readdir_r_function real;

	if (slot) {
		pthread_mutex_lock(&slot->lock);
		e = next_entry(slot, &view);
		if (e)
			FILL_DIRENT(entry, view, e, slot->position);
		pthread_mutex_unlock(&slot->lock);
		*result = e ? entry : NULL;
		return 0;
	}
	real = REAL(REAL_READDIR_R, readdir_r_function);
	return real ? real(stream, entry, result) : ENOSYS;
}

int readdir64_r(DIR *stream, struct dirent64 *entry, struct dirent64 **result)
{
	struct served_dir *slot = served(stream);
	const struct nopfs_meta_view *view;
	const struct nopfs_meta_entry *e;
	readdir64_r_function real;

	if (slot) {
		pthread_mutex_lock(&slot->lock);
		e = next_entry(slot, &view);
		if (e)
			FILL_DIRENT(entry, view, e, slot->position);
		pthread_mutex_unlock(&slot->lock);
		*result = e ? entry : NULL;
		return 0;
	}
	real = REAL(REAL_READDIR64_R, readdir64_r_function);
	return real ? real(stream, entry, result) : ENOSYS;
}

void rewinddir(DIR *stream)
{
	struct served_dir *slot = served(stream);
	rewinddir_function real;

	if (slot) {
		pthread_mutex_lock(&slot->lock);
		slot->position = 0;
		pthread_mutex_unlock(&slot->lock);
		return;
	}
	real = REAL(REAL_REWINDDIR, rewinddir_function);
	if (real)
		real(stream);
}

void seekdir(DIR *stream, long position)
{
	struct served_dir *slot = served(stream);
	seekdir_function real;

	if (slot) {
		pthread_mutex_lock(&slot->lock);
		if (position >= 0 && (unsigned long)position <= UINT32_MAX)
			slot->position = (uint32_t)position;
		pthread_mutex_unlock(&slot->lock);
		return;
	}
	real = REAL(REAL_SEEKDIR, seekdir_function);
	if (real)
		real(stream, position);
}

long telldir(DIR *stream)
{
	struct served_dir *slot = served(stream);
	telldir_function real;
	long position;

	if (slot) {
		pthread_mutex_lock(&slot->lock);
		position = slot->position;
		pthread_mutex_unlock(&slot->lock);
		return position;
	}
	real = REAL(REAL_TELLDIR, telldir_function);
	return real ? real(stream) : -1;
}

int dirfd(DIR *stream)
{
	struct served_dir *slot = served(stream);
	dirfd_function real;
	int fd;

	if (slot) {
		pthread_mutex_lock(&slot->lock);
		if (slot->fd < 0 && slot->path[0]) {
			/* The caller wants a real descriptor: open the directory (a PFS call). */
			nopfs_preload_count_meta(NOPFS_PRELOAD_META_PASSED);
			slot->fd = nopfs_preload_real_openat(AT_FDCWD, slot->path,
			                                     O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
		}
		fd = slot->fd;
		pthread_mutex_unlock(&slot->lock);
		if (fd < 0)
			errno = ENOTSUP;
		return fd;
	}
	real = REAL(REAL_DIRFD, dirfd_function);
	return real ? real(stream) : -1;
}

int closedir(DIR *stream)
{
	struct served_dir *slot = served(stream);
	closedir_function real;

	if (slot) {
		if (slot->fd >= 0)
			close(slot->fd);
		slot->fd = -1;
		slot_give(slot);
		return 0;
	}
	real = REAL(REAL_CLOSEDIR, closedir_function);
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(stream);
}

/* ------------------------------------------------------------------------
 * scandir, scandir64: glibc's own opens the directory inside libc, so it is
 * served here with the served streams.
 */

typedef int (*scandir_function)(const char *, struct dirent ***, int (*)(const struct dirent *),
                                int (*)(const struct dirent **, const struct dirent **));
typedef int (*scandir64_function)(const char *, struct dirent64 ***,
                                  int (*)(const struct dirent64 *),
                                  int (*)(const struct dirent64 **, const struct dirent64 **));

static __thread int (*scandir_compare)(const struct dirent **, const struct dirent **);
static __thread int (*scandir64_compare)(const struct dirent64 **, const struct dirent64 **);

static int compare_dirent(const void *a, const void *b)
{
	return scandir_compare((const struct dirent **)(uintptr_t)a,
	                       (const struct dirent **)(uintptr_t)b);
}

static int compare_dirent64(const void *a, const void *b)
{
	return scandir64_compare((const struct dirent64 **)(uintptr_t)a,
	                         (const struct dirent64 **)(uintptr_t)b);
}

#define SCANDIR_BODY(type, read_function, compare_variable, compare_function)     \
	do {                                                                      \
		type **list = NULL, *entry, *copy;                                \
		size_t count = 0, capacity = 0;                                   \
		int saved_errno = errno;                                          \
		DIR *stream = opendir(path);                                      \
                                                                                  \
		if (!stream)                                                      \
			return -1;                                                \
		while ((entry = read_function(stream))) {                         \
			if (filter && !filter(entry))                             \
				continue;                                         \
			if (count == capacity) {                                  \
				type **bigger;                                    \
				capacity = capacity ? 2 * capacity : 16;          \
				bigger = realloc(list, capacity * sizeof(*list)); \
				if (!bigger)                                      \
					goto out_nomem;                           \
				list = bigger;                                    \
			}                                                         \
			copy = malloc(entry->d_reclen);                           \
			if (!copy)                                                \
				goto out_nomem;                                   \
			memcpy(copy, entry, entry->d_reclen);                     \
			list[count++] = copy;                                     \
		}                                                                 \
		closedir(stream);                                                 \
		if (compare && count > 1) {                                       \
			compare_variable = compare;                               \
			qsort(list, count, sizeof(*list), compare_function);      \
		}                                                                 \
		*namelist = list;                                                 \
		errno = saved_errno;                                              \
		return (int)count;                                                \
	out_nomem:                                                                \
		closedir(stream);                                                 \
		while (count)                                                     \
			free(list[--count]);                                      \
		free(list);                                                       \
		errno = ENOMEM;                                                   \
		return -1;                                                        \
	} while (0)

/* Whether scandir(@path) is answered from the metadata (@l->absolute set). */
static bool scandir_is_ours(const char *path, struct lookup *l)
{
	bool ours = false;

	if (!nopfs_preload_busy && path) {
		nopfs_preload_busy = 1;
		ours = nopfs_preload_in_dataset(AT_FDCWD, path, l->absolute, sizeof(l->absolute));
		if (ours && !nopfs_preload_meta()) {
			nopfs_preload_count_meta(NOPFS_PRELOAD_META_ABSENT);
			ours = false;
		}
		nopfs_preload_busy = 0;
	}
	return ours;
}

int scandir(const char *path, struct dirent ***namelist, int (*filter)(const struct dirent *),
            int (*compare)(const struct dirent **, const struct dirent **))
{
	scandir_function real;
	struct lookup l;
	bool ours;

	ours = scandir_is_ours(path, &l);
	if (ours)
		SCANDIR_BODY(struct dirent, readdir, scandir_compare, compare_dirent);
	real = REAL(REAL_SCANDIR, scandir_function);
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(path, namelist, filter, compare);
}

int scandir64(const char *path, struct dirent64 ***namelist, int (*filter)(const struct dirent64 *),
              int (*compare)(const struct dirent64 **, const struct dirent64 **))
{
	scandir64_function real;
	struct lookup l;
	bool ours;

	ours = scandir_is_ours(path, &l);
	if (ours)
		SCANDIR_BODY(struct dirent64, readdir64, scandir64_compare, compare_dirent64);
	real = REAL(REAL_SCANDIR64, scandir64_function);
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(path, namelist, filter, compare);
}
