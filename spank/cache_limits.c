/*
 * Kept caches, root's side (see cache_limits.h). The users' directories are
 * theirs to change while this runs: every step is relative to a directory
 * descriptor opened without following a link, every directory is checked to
 * belong to the user it is named for, and removal goes through
 * remove_tree_at(), which removes only that user's entries. A KEY directory
 * is locked (LOCK_EX | LOCK_NB, as its agents lock it) only when something
 * in it is to be removed: an agent starting meanwhile would find it taken
 * and keep nothing, so the lock is not taken where there is nothing to do.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_limits.h"
#include "common/units.h"
#include "remove_tree.h"

#define OPEN_DIR (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

int cache_base_open(const char *path, char *why, size_t why_size)
{
	struct stat st;
	int fd = open(path, OPEN_DIR);

	if (fd < 0) {
		int error = errno;

		if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
			snprintf(why, why_size, "is a symbolic link, not a directory");
		else if (error == ENOTDIR)
			snprintf(why, why_size, "is not a directory");
		else
			snprintf(why, why_size, "cannot be opened: %s", strerror(error));
		return -1;
	}
	if (fstat(fd, &st) != 0) {
		snprintf(why, why_size, "cannot be read: %s", strerror(errno));
	} else if (st.st_uid != 0) {
		snprintf(why, why_size, "belongs to uid %u, not to root", (unsigned int)st.st_uid);
	} else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, why_size,
		         "may be written by others than root (mode %04o): users could make "
		         "each other's directories there",
		         (unsigned int)(st.st_mode & 07777));
	} else {
		return fd;
	}
	close(fd);
	return -1;
}

int cache_user_dir_make(int base_fd, uid_t uid, gid_t gid, char *why, size_t why_size)
{
	char name[16];
	struct stat st;
	int fd = -1;

	snprintf(name, sizeof(name), "%u", (unsigned int)uid);
	if (mkdirat(base_fd, name, 0700) == 0) {
		/* only root makes entries in the base: nothing can take its place meanwhile */
		if (fchownat(base_fd, name, uid, gid, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (fd = openat(base_fd, name, OPEN_DIR)) >= 0 && fchmod(fd, 0700) == 0) {
			close(fd);
			return 1;
		}
		snprintf(why, why_size, "cannot be given to uid %u: %s", (unsigned int)uid,
		         strerror(errno));
		if (fd >= 0)
			close(fd);
		unlinkat(base_fd, name, AT_REMOVEDIR); /* empty, and root's or theirs */
		return -1;
	}
	if (errno != EEXIST) {
		snprintf(why, why_size, "cannot be made: %s", strerror(errno));
		return -1;
	}
	if (fstatat(base_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		snprintf(why, why_size, "cannot be read: %s", strerror(errno));
	else if (S_ISLNK(st.st_mode))
		snprintf(why, why_size, "is a symbolic link, not a directory");
	else if (!S_ISDIR(st.st_mode))
		snprintf(why, why_size, "is not a directory");
	else if (st.st_uid != uid)
		snprintf(why, why_size, "belongs to uid %u, not to uid %u", (unsigned int)st.st_uid,
		         (unsigned int)uid);
	else if ((st.st_mode & 07777) != 0700)
		snprintf(why, why_size, "has mode %04o, not 0700",
		         (unsigned int)(st.st_mode & 07777));
	else
		return 0;
	return -1;
}

/* A user's directory name: a uid in decimal, as the prolog writes it (no sign, no leading 0). */
static bool parse_uid(const char *name, uid_t *uid)
{
	uint64_t value;

	if ((name[0] == '0' && name[1] != '\0') ||
	    nopfs_parse_uint(name, 0, (uid_t)-1 - 1, &value) != NOPFS_OK)
		return false;
	*uid = (uid_t)value;
	return true;
}

/* A KEY directory's name: 16 lowercase hexadecimal digits. */
static bool is_key(const char *name)
{
	size_t length = strspn(name, "0123456789abcdef");

	return length == CACHE_KEY_LENGTH && name[length] == '\0';
}

/* @name in @parent_fd, opened when it is a directory (not a link) of @uid; its stat in @st. */
static int open_dir_of(int parent_fd, const char *name, uid_t uid, struct stat *st)
{
	int fd = openat(parent_fd, name, OPEN_DIR);

	if (fd < 0)
		return -1;
	if (fstat(fd, st) != 0 || !S_ISDIR(st->st_mode) || st->st_uid != uid) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The entries of directory @fd, read through a descriptor of their own. */
static DIR *list_dir(int fd)
{
	int own = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir;

	if (own < 0)
		return NULL;
	dir = fdopendir(own);
	if (!dir)
		close(own);
	return dir;
}

static bool is_dot(const char *name)
{
	return strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
}

/* What the regular files under directory @fd take, links not followed. */
static uint64_t tree_bytes(int fd, int depth)
{
	DIR *dir = list_dir(fd);
	struct dirent *entry;
	uint64_t bytes = 0;

	if (!dir)
		return 0;
	while ((entry = readdir(dir))) {
		struct stat st;
		int sub;

		if (is_dot(entry->d_name) ||
		    fstatat(dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (S_ISREG(st.st_mode)) {
			bytes += (uint64_t)st.st_blocks * 512;
		} else if (S_ISDIR(st.st_mode) && depth < REMOVE_TREE_DEPTH &&
		           (sub = openat(dirfd(dir), entry->d_name, OPEN_DIR)) >= 0) {
			bytes += tree_bytes(sub, depth + 1);
			close(sub);
		}
	}
	closedir(dir);
	return bytes;
}

/* A KEY directory's last use: its manifest's mtime (the agents touch it), else its own. */
static struct timespec last_use(int key_fd, const struct stat *key_st)
{
	struct stat st;

	if (fstatat(key_fd, CACHE_MANIFEST, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
		return st.st_mtim;
	return key_st->st_mtim;
}

struct cache_entry {
	uid_t uid;
	char key[CACHE_KEY_LENGTH + 1];
	uint64_t bytes;
	struct timespec used;
	bool done; /* removed, or found in use: not looked at again */
};

struct cache_list {
	struct cache_entry *entry;
	size_t count, size;
};

static int list_add(struct cache_list *list, const struct cache_entry *entry)
{
	if (list->count == list->size) {
		size_t size = list->size ? 2 * list->size : 64;
		struct cache_entry *grown = realloc(list->entry, size * sizeof(*grown));

		if (!grown)
			return -1;
		list->entry = grown;
		list->size = size;
	}
	list->entry[list->count++] = *entry;
	return 0;
}

/* Measure the KEY directories of @uid's directory @name in @base_fd into @list. */
static int scan_user(int base_fd, const char *name, uid_t uid, struct cache_list *list)
{
	struct stat st;
	struct dirent *entry;
	int user_fd = open_dir_of(base_fd, name, uid, &st), rc = 0;
	DIR *dir = user_fd >= 0 ? list_dir(user_fd) : NULL;

	while (dir && rc == 0 && (entry = readdir(dir))) {
		struct cache_entry cache = { .uid = uid };
		int key_fd;

		if (!is_key(entry->d_name) ||
		    (key_fd = open_dir_of(user_fd, entry->d_name, uid, &st)) < 0)
			continue;
		memcpy(cache.key, entry->d_name, sizeof(cache.key));
		cache.bytes = tree_bytes(key_fd, 0);
		cache.used = last_use(key_fd, &st);
		close(key_fd);
		rc = list_add(list, &cache);
	}
	if (dir)
		closedir(dir);
	if (user_fd >= 0)
		close(user_fd);
	return rc;
}

/* Least recently used first; then by user and key, for a stable order. */
static int by_use(const void *a, const void *b)
{
	const struct cache_entry *x = a, *y = b;

	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	if (x->used.tv_nsec != y->used.tv_nsec)
		return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	return strcmp(x->key, y->key);
}

enum outcome { REMOVED, IN_USE, LEFT };

/*
 * Remove @cache's directory when no job holds it and it was not used since
 * it was measured: under its lock, and only when the name still leads to the
 * directory locked. What it freed in @removal.
 */
static enum outcome remove_cache(int base_fd, const struct cache_entry *cache,
                                 struct cache_removal *removal)
{
	struct stat user_st, key_st, named;
	enum outcome outcome = LEFT;
	struct timespec used;
	char name[16];
	int user_fd, key_fd;

	snprintf(name, sizeof(name), "%u", (unsigned int)cache->uid);
	user_fd = open_dir_of(base_fd, name, cache->uid, &user_st);
	if (user_fd < 0)
		return LEFT;
	key_fd = open_dir_of(user_fd, cache->key, cache->uid, &key_st);
	if (key_fd < 0) {
		close(user_fd);
		return LEFT;
	}
	if (flock(key_fd, LOCK_EX | LOCK_NB) != 0) {
		outcome = errno == EWOULDBLOCK ? IN_USE : LEFT;
		goto out;
	}
	used = last_use(key_fd, &key_st);
	if (used.tv_sec != cache->used.tv_sec || used.tv_nsec != cache->used.tv_nsec)
		goto out; /* a job used it since it was measured */
	if (fstatat(user_fd, cache->key, &named, AT_SYMLINK_NOFOLLOW) != 0 ||
	    named.st_dev != key_st.st_dev || named.st_ino != key_st.st_ino)
		goto out; /* the name leads elsewhere now */
	removal->bytes = remove_tree_at(user_fd, cache->key, cache->uid, 0);
	removal->whole =
	        fstatat(user_fd, cache->key, &named, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT;
	outcome = REMOVED;
out:
	close(key_fd); /* and its lock */
	close(user_fd);
	return outcome;
}

/* Try to remove @cache for @reason; @total: what all caches take, less what it freed. */
static void evict(int base_fd, struct cache_entry *cache, enum cache_reason reason, time_t now,
                  uint64_t *total, cache_removed_fn *removed, void *arg, struct cache_usage *usage)
{
	struct cache_removal removal = { .reason = reason, .total = *total };
	enum outcome outcome;

	removal.idle = now > cache->used.tv_sec ? (uint64_t)(now - cache->used.tv_sec) : 0;
	snprintf(removal.path, sizeof(removal.path), "%u/%s", (unsigned int)cache->uid, cache->key);
	outcome = remove_cache(base_fd, cache, &removal);
	cache->done = true;
	if (outcome == IN_USE) {
		usage->in_use++;
	} else if (outcome == REMOVED) {
		/* a part that stays (not the user's) still counts */
		*total -= removal.whole                  ? cache->bytes
		          : removal.bytes < cache->bytes ? removal.bytes
		                                         : cache->bytes;
		usage->removed++;
		if (removal.whole)
			usage->caches--;
		if (removed)
			removed(&removal, arg);
	}
}

int cache_limits_enforce(int base_fd, uint64_t limit, uint64_t max_age, time_t now,
                         cache_removed_fn *removed, void *arg, struct cache_usage *usage)
{
	struct cache_usage counted = { 0 };
	struct cache_list list = { 0 };
	DIR *dir = list_dir(base_fd);
	struct dirent *entry;
	uint64_t total = 0;
	int rc = 0;

	if (!dir)
		return -1;
	while (rc == 0 && (entry = readdir(dir))) {
		uid_t uid;

		if (parse_uid(entry->d_name, &uid))
			rc = scan_user(base_fd, entry->d_name, uid, &list);
	}
	closedir(dir);
	if (rc != 0) { /* out of memory: remove nothing on a partial view */
		free(list.entry);
		return -1;
	}
	for (size_t i = 0; i < list.count; i++)
		total += list.entry[i].bytes;
	counted.caches = (unsigned int)list.count;
	if (list.count > 0)
		qsort(list.entry, list.count, sizeof(list.entry[0]), by_use);
	for (size_t i = 0; max_age > 0 && i < list.count; i++) {
		struct cache_entry *cache = &list.entry[i];

		if (now > cache->used.tv_sec && (uint64_t)(now - cache->used.tv_sec) > max_age)
			evict(base_fd, cache, CACHE_TOO_OLD, now, &total, removed, arg, &counted);
	}
	for (size_t i = 0; limit > 0 && total > limit && i < list.count; i++)
		if (!list.entry[i].done)
			evict(base_fd, &list.entry[i], CACHE_OVER_LIMIT, now, &total, removed, arg,
			      &counted);
	counted.bytes = total;
	if (usage)
		*usage = counted;
	free(list.entry);
	return 0;
}

unsigned int cache_orphans_remove(int base_fd, uid_t uid, uint32_t job, cache_removed_fn *removed,
                                  void *arg)
{
	char name[16], prefix[32];
	struct stat st;
	struct dirent *entry;
	unsigned int count = 0;
	size_t length;
	int user_fd;
	DIR *dir;

	snprintf(name, sizeof(name), "%u", (unsigned int)uid);
	length = (size_t)snprintf(prefix, sizeof(prefix), "data.%u.", job);
	user_fd = open_dir_of(base_fd, name, uid, &st);
	if (user_fd < 0)
		return 0;
	dir = list_dir(user_fd);
	while (dir && (entry = readdir(dir))) {
		struct dirent *file;
		bool locked;
		DIR *files;
		int key_fd;

		if (!is_key(entry->d_name) ||
		    (key_fd = open_dir_of(user_fd, entry->d_name, uid, &st)) < 0)
			continue;
		files = list_dir(key_fd);
		locked = false;
		while (files && (file = readdir(files))) {
			struct cache_removal removal = { .reason = CACHE_ORPHAN };
			struct stat gone;

			if (strncmp(file->d_name, prefix, length) != 0 ||
			    file->d_name[length] == '\0')
				continue;
			/* held: another job of the user uses it now, and these may be its agent's
			 */
			if (!locked && flock(key_fd, LOCK_EX | LOCK_NB) != 0)
				break;
			locked = true;
			removal.bytes = remove_tree_at(key_fd, file->d_name, uid, 0);
			removal.whole =
			        fstatat(key_fd, file->d_name, &gone, AT_SYMLINK_NOFOLLOW) != 0 &&
			        errno == ENOENT;
			if (!removal.whole && removal.bytes == 0)
				continue; /* not the user's: left */
			snprintf(removal.path, sizeof(removal.path), "%s/%.16s/%.255s", name,
			         entry->d_name, file->d_name);
			count++;
			if (removed)
				removed(&removal, arg);
		}
		if (files)
			closedir(files);
		close(key_fd);
	}
	if (dir)
		closedir(dir);
	close(user_fd);
	return count;
}
