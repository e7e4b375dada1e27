/* What the launching srun remembers for its exit (local context). */
#ifndef NOPFS_SPANK_LAUNCH_H
#define NOPFS_SPANK_LAUNCH_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct launch_state {
	uint32_t job;         /* S_JOB_ID is gone in srun's local exit */
	bool owns_allocation; /* this srun created the job */
	bool started;         /* this srun started the agent step */
	pid_t companion;      /* its srun, or -1 */
	char lock[PATH_MAX];  /* /tmp/nopfs-JOB.srun: the lock and the companion's log */
};

extern struct launch_state nopfs_launch;

/* nopfs_launch.lock for @job: the launching srun's lock and its companion's log. */
void launch_set_lock(uint32_t job);

/* Unless the user named one: the job report goes to report_dir, else @directory (may be NULL). */
void launch_default_report(uint32_t job, const char *directory);

#endif
