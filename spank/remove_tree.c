/*
 * Removing a user's files as root. Every step is relative to a descriptor of
 * a directory opened without following a link, and every entry is checked
 * to be the user's before it goes: a user who moves or links things while
 * this runs can only make it remove (or keep) files of their own.
 */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "remove_tree.h"

uint64_t remove_tree_at(int parent_fd, const char *name, uid_t uid, int depth)
{
	uint64_t freed = 0;
	struct stat st;
	struct dirent *entry;
	DIR *dir;
	int fd;

	if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_uid != uid)
		return 0;
	if (!S_ISDIR(st.st_mode)) {
		/* a link goes as a link: its target is not looked at */
		if (unlinkat(parent_fd, name, 0) == 0 && S_ISREG(st.st_mode))
			freed = (uint64_t)st.st_blocks * 512;
		return freed;
	}
	if (depth > REMOVE_TREE_DEPTH)
		return 0;
	fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) != 0 || st.st_uid != uid) { /* replaced since the fstatat() */
		close(fd);
		return 0;
	}
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return 0;
	}
	while ((entry = readdir(dir)))
		if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0)
			freed += remove_tree_at(fd, entry->d_name, uid, depth + 1);
	closedir(dir);
	unlinkat(parent_fd, name, AT_REMOVEDIR);
	return freed;
}
