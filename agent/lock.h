/*
 * One agent per job and node: two agents of one job on a node would share
 * their files (the second would truncate the first's RAM tier under it).
 * The lock is held for the agent's life.
 */
#ifndef NOPFS_AGENT_LOCK_H
#define NOPFS_AGENT_LOCK_H

#include "common/status.h"

struct agent_options;

struct agent_lock {
	int directory_fd; /* the runtime directory, flock()ed */
	int socket_fd;    /* bound to the job's abstract name, listening */
};

/*
 * Take the job's lock on this node: an exclusive flock() of the runtime
 * directory (made already) and the abstract socket name of the user's job.
 * NOPFS_ERR_DUPLICATE, with the reason logged, when another agent of the job
 * holds either. A name held by another user cannot be ours: a warning.
 */
nopfs_status agent_lock(struct agent_lock *lock, const struct agent_options *options);

/* Release what agent_lock() took (both fds closed). */
void agent_unlock(struct agent_lock *lock);

#endif
