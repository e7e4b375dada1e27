/*
 * slurmstepd, remote context, once per node of a step: when the launching
 * srun started or found the job's agents (NOPFS_SPANK_TASKS in the step's
 * environment), wait (bounded) for this node's agent to be ready and give
 * the tasks its socket, staging directory and the interposer. An agent that
 * never comes, or is gone, leaves the tasks reading the PFS, with one
 * warning per node.
 */
#include <stdio.h>
#include <unistd.h>

#include "plugin.h"
#include "runtime.h"

/*
 * How long in a row this node may have no agent process before the wait
 * gives up: its start, or an agent step being started again (its agents
 * give up their first fences after 10 s each).
 */
#define AGENT_MISSING_SECONDS 25

/*
 * Is an nopfs-agent of @job running on this node (as the job's user)? In
 * slurmstepd's user_init only the effective uid is the user's (the real one
 * is root's).
 */
static bool agent_running(unsigned int job)
{
	return agents_of_job(job, geteuid(), NULL, NULL) != 0; /* -1: cannot tell, keep waiting */
}

/* Wait for /tmp/nopfs-JOB/ready: 0 ready, -1 not within @timeout seconds or gone. */
static int wait_ready(unsigned int job, unsigned int timeout, char *why, size_t size)
{
	char ready[64];
	unsigned int missing = 0; /* seconds in a row without an agent process */

	snprintf(ready, sizeof(ready), "/tmp/nopfs-%u/ready", job);
	for (unsigned int tenth = 0; tenth <= timeout * 10; tenth++) {
		if (access(ready, F_OK) == 0)
			return 0;
		if (tenth > 0 && tenth % 10 == 0) {
			missing = agent_running(job) ? 0 : missing + 1;
			if (missing >= AGENT_MISSING_SECONDS) {
				snprintf(why, size,
				         "has not been running for %d s (its log: "
				         "/tmp/nopfs-%u.log)",
				         AGENT_MISSING_SECONDS, job);
				return -1;
			}
		}
		usleep(100000);
	}
	snprintf(why, size, "is not ready after %u s (plugstack.conf ready_timeout)", timeout);
	return -1;
}

static int set_task_env(spank_t sp, unsigned int job, bool preload, const char *dataset)
{
	char value[PATH_MAX + 4096], current[4096];

	snprintf(value, sizeof(value), "/tmp/nopfs-%u/agent.sock", job);
	spank_setenv(sp, NOPFS_ENV_SOCKET, value, 1);
	snprintf(value, sizeof(value), "/dev/shm/nopfs-%u", job);
	spank_setenv(sp, NOPFS_ENV_STAGE_DIR, value, 1);
	spank_setenv(sp, NOPFS_ENV_DATASET, dataset, 1);
	if (!preload)
		return 0;
	if (spank_getenv(sp, "LD_PRELOAD", current, sizeof(current)) == ESPANK_SUCCESS &&
	    current[0])
		snprintf(value, sizeof(value), "%s:%s", nopfs_config.preload, current);
	else
		snprintf(value, sizeof(value), "%s", nopfs_config.preload);
	spank_setenv(sp, "LD_PRELOAD", value, 1);
	return 0;
}

int tasks_prepare(spank_t sp)
{
	char word[PATH_MAX + 64], host[256] = "this node";
	unsigned int job, preload, timeout;
	char why[128] = "";
	int consumed = 0;

	if (spank_getenv(sp, NOPFS_SPANK_TASKS, word, sizeof(word)) != ESPANK_SUCCESS)
		return 0;
	spank_unsetenv(sp, NOPFS_SPANK_TASKS);
	if (sscanf(word, "%u:%u:%u:%n", &job, &preload, &timeout, &consumed) != 3 ||
	    consumed == 0 || word[consumed] != '/') {
		user_error("malformed %s='%s': tasks read the PFS directly", NOPFS_SPANK_TASKS,
		           word);
		return 0;
	}
	gethostname(host, sizeof(host));
	if (wait_ready(job, timeout, why, sizeof(why)) != 0) {
		user_error("the agent of job %u on %s %s: tasks there read the PFS directly", job,
		           host, why);
		return 0;
	}
	return set_task_env(sp, job, preload != 0, word + consumed);
}
