/*
 * Kept caches (plugstack cache_base), root's side. The job prolog makes each
 * job user's directory CACHE_BASE/UID; the agents of the user's jobs keep
 * one directory per dataset in it, CACHE_BASE/UID/KEY (KEY: 16 lowercase
 * hexadecimal digits) with "manifest" (its mtime: the last use), "data" and,
 * while a job runs, "data.JOB.TOKEN", and hold an exclusive flock on the
 * KEY directory while they use it. The job epilog removes what a killed
 * agent left and what the limits say. Nothing here uses Slurm: the callers
 * log, and the unit test runs it on a directory of its own.
 */
#ifndef NOPFS_SPANK_CACHE_LIMITS_H
#define NOPFS_SPANK_CACHE_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define CACHE_KEY_LENGTH 16
#define CACHE_MANIFEST   "manifest"

/*
 * Open @path, the admin's cache_base, when it is a directory (not a link)
 * of root that no one else may write to: only root then makes entries in
 * it, so no user can plant another's directory. The descriptor, or -1 with
 * the reason in @why.
 */
int cache_base_open(const char *path, char *why, size_t why_size);

/*
 * Make @uid's directory "UID" in @base_fd (0700, @uid:@gid) unless it is
 * there; one that is there must be a directory (not a link) of @uid with
 * mode 0700 exactly, and is left as it is when not. 1: made, 0: there and
 * right, -1: the reason in @why.
 */
int cache_user_dir_make(int base_fd, uid_t uid, gid_t gid, char *why, size_t why_size);

enum cache_reason {
	CACHE_ORPHAN,    /* new data of a job whose agent was killed: data.JOB.* */
	CACHE_TOO_OLD,   /* not used for longer than cache_max_age */
	CACHE_OVER_LIMIT /* the least recently used while the caches took more than cache_limit */
};

/* One removal, for the caller's log. */
struct cache_removal {
	char path[320]; /* under the base: UID/KEY, or UID/KEY/data.JOB.TOKEN */
	enum cache_reason reason;
	uint64_t bytes; /* what it freed (st_blocks x 512 of its regular files) */
	uint64_t idle;  /* seconds since its last use */
	uint64_t total; /* what all kept caches took just before */
	bool whole;     /* false: entries that are not the user's stay */
};

typedef void cache_removed_fn(const struct cache_removal *removal, void *arg);

/*
 * Remove the files "data.@job.*" in @uid's KEY directories that no agent
 * holds (the job's agent was killed before it could remove them), calling
 * @removed (may be NULL) for each. How many went.
 */
unsigned int cache_orphans_remove(int base_fd, uid_t uid, uint32_t job, cache_removed_fn *removed,
                                  void *arg);

/* What the kept caches of a node take. */
struct cache_usage {
	unsigned int caches; /* KEY directories */
	uint64_t bytes;      /* what they take, those in use included */
	unsigned int removed;
	unsigned int in_use; /* due for removal, but a job holds them */
};

/*
 * The limits over every user's kept caches in @base_fd at @now: first those
 * not used for longer than @max_age seconds (0: no limit) go, then the least
 * recently used while they all take more than @limit bytes (0: no limit).
 * A KEY directory is looked at only when it is a directory of the user its
 * parent is named for, and removed only while this holds its flock and only
 * when it was not used since it was measured: one a job holds is never
 * removed, though it counts. @removed (may be NULL) is called for each
 * removal; what is left in @usage (may be NULL). -1 when the base cannot be
 * listed or there is no memory.
 */
int cache_limits_enforce(int base_fd, uint64_t limit, uint64_t max_age, time_t now,
                         cache_removed_fn *removed, void *arg, struct cache_usage *usage);

#endif
