/*
 * A catalog scan's stats and access checks answered from the dataset's
 * metadata (meta.h) when the agent scanned it first: the catalog then costs
 * the file system no call per file, only the directories' listings. What the
 * metadata does not know goes to the file system.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "catalog_internal.h"
#include "meta.h"

nopfs_status nopfs_catalog_meta_init(struct catalog_meta *meta, const struct nopfs_meta_view *view)
{
	int count;

	*meta = (struct catalog_meta){ .view = view, .euid = geteuid(), .egid = getegid() };
	if (!view)
		return NOPFS_OK;
	count = getgroups(0, NULL);
	if (count <= 0)
		return NOPFS_OK;
	meta->groups = calloc((size_t)count, sizeof(*meta->groups));
	if (!meta->groups)
		return NOPFS_ERR_NOMEM;
	count = getgroups(count, meta->groups);
	meta->group_count = count > 0 ? count : 0;
	return NOPFS_OK;
}

void nopfs_catalog_meta_fini(struct catalog_meta *meta)
{
	free(meta->groups);
	meta->groups = NULL;
	meta->group_count = 0;
}

int nopfs_catalog_meta_stat(const struct catalog_meta *meta, int fd, const char *dir,
                            const char *name, struct stat *st, int flags)
{
	char relative[PATH_MAX];

	if (meta && meta->view &&
	    (size_t)snprintf(relative, sizeof(relative), "%s%s/%s", dir[0] == '/' ? "" : "/", dir,
	                     name) < sizeof(relative)) {
		int known = nopfs_meta_stat_path(meta->view, relative,
		                                 !(flags & AT_SYMLINK_NOFOLLOW), st);

		if (known <= 0)
			return known;
	}
	return fstatat(fd, name, st, flags);
}

/* Whether @st's mode bits let this process read it, as the kernel checks them. */
static bool mode_readable(const struct catalog_meta *meta, const struct stat *st)
{
	if (st->st_uid == meta->euid)
		return st->st_mode & S_IRUSR;
	if (st->st_gid == meta->egid)
		return st->st_mode & S_IRGRP;
	for (int i = 0; i < meta->group_count; i++)
		if (st->st_gid == meta->groups[i])
			return st->st_mode & S_IRGRP;
	return st->st_mode & S_IROTH;
}

int nopfs_catalog_meta_access(const struct catalog_meta *meta, int fd, const char *name,
                              const struct stat *st)
{
	/* denied by the mode (or root): the kernel decides, ACLs and capabilities included */
	if (meta && meta->view && meta->euid != 0 && mode_readable(meta, st))
		return 0;
	return faccessat(fd, name, R_OK, AT_EACCESS);
}
