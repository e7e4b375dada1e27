/*
 * What bounds the node's RAM tiers besides their specification: the memory
 * the job may use (its cgroup's limit, not the node's physical memory) and
 * the room left in the stage directory's file system (/dev/shm).
 */
#ifndef NOPFS_AGENT_TIER_LIMITS_H
#define NOPFS_AGENT_TIER_LIMITS_H

#include <stddef.h>
#include <stdint.h>

/*
 * The memory this process may use: the smallest limit among its cgroups
 * and their ancestors (v2 memory.max; v1 memory.limit_in_bytes), or
 * @physical when none is lower. @proc_cgroup is the process's cgroup list
 * (/proc/self/cgroup), @root where cgroups are mounted (/sys/fs/cgroup).
 * @why (if not NULL) says where the figure comes from: a limit file, or
 * "physical memory". Unreadable or malformed files are taken as no limit.
 */
uint64_t tier_memory_limit(const char *proc_cgroup, const char *root, uint64_t physical, char *why,
                           size_t why_size);

/* Free bytes of @directory's file system for this user; UINT64_MAX if unknown. */
uint64_t tier_free_bytes(const char *directory);

#endif
