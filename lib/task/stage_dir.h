/*
 * The staging directory as a task uses it: opened once after checking that
 * it is this user's and private (0700), then every staged copy and the index
 * opened relative to that descriptor and checked (a regular file of this
 * user's, of the expected size). Nothing found there is trusted otherwise.
 * Allocation-free and without interposed calls, for the interposer too; not
 * thread-safe (the interposer locks around nopfs_stage_dir_reopen()).
 */
#ifndef NOPFS_STAGE_DIR_H
#define NOPFS_STAGE_DIR_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/status.h"

struct nopfs_stage_dir {
	char path[PATH_MAX]; /* "" when there is none */
	int fd;              /* -1 when not open or not trusted */
	dev_t device;        /* identity of fd, to notice it being */
	ino_t inode;         /*   closed or reused by the program */
};

/*
 * Set @dir up for @path (NULL or "": none) and open it: NOPFS_OK, or the
 * status of nopfs_private_dir_open() with @why; @dir then has fd -1 and
 * serves nothing.
 */
nopfs_status nopfs_stage_dir_open(struct nopfs_stage_dir *dir, const char *path, const char **why);

/*
 * Whether dir->fd is still the directory opened (the program may have
 * closed the descriptor and reused its number). A forked child keeps it.
 */
bool nopfs_stage_dir_is_current(const struct nopfs_stage_dir *dir);

/*
 * Open the directory again when it is no longer current (the old number is
 * the program's now: it is left alone). NOPFS_OK when current afterwards.
 */
nopfs_status nopfs_stage_dir_reopen(struct nopfs_stage_dir *dir, const char **why);

/*
 * Open the staged file @name read-only, with @flags added, into *fd: see
 * nopfs_private_file_openat() (@size -1 when not known). NOPFS_ERR_NOT_FOUND
 * when there is no such file or no trusted directory.
 */
nopfs_status nopfs_stage_dir_openat(const struct nopfs_stage_dir *dir, const char *name, int flags,
                                    int64_t size, int *fd, const char **why);

/* Close the directory (if this is still it). */
void nopfs_stage_dir_close(struct nopfs_stage_dir *dir);

#endif
