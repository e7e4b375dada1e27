/*
 * Removing a user's files as root (the job epilog): relative to directory
 * descriptors, never following a link, only entries of that user.
 */
#ifndef NOPFS_SPANK_REMOVE_TREE_H
#define NOPFS_SPANK_REMOVE_TREE_H

#include <stdint.h>
#include <sys/types.h>

/* Deepest directory level below the named entry that is looked into. */
#define REMOVE_TREE_DEPTH 8

/*
 * Remove @name in @parent_fd, and everything under it when it is a
 * directory, without following links, keeping every entry that is not
 * @uid's (and the directories above it). @depth: 0 for a caller's entry.
 * The bytes its removed regular files took (st_blocks x 512).
 */
uint64_t remove_tree_at(int parent_fd, const char *name, uid_t uid, int depth);

#endif
