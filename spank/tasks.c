/*
 * slurmstepd, remote context, once per node of a step: when the launching
 * srun started or found the job's agents (NOPFS_SPANK_TASKS in the step's
 * environment), wait (bounded) for this node's agent to be ready and give
 * the tasks its socket, staging directory and the interposer. An agent that
 * never comes, or is gone, leaves the tasks reading the PFS, with one
 * warning per node. When the launching srun found the job's agents running
 * (NOPFS_SPANK_PLAN), the step's description goes to the node's agent
 * (/tmp/nopfs-JOB/step-GEN, then SIGUSR2), and the tasks wait (bounded) for
 * it to plan for the step (re-planning if it planned for other options); if
 * it does not, they are served all the same, unplanned.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin.h"
#include "common/atomic_file.h"
#include "task/runtime.h"

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

/*
 * This node's agent, from /tmp/nopfs-JOB/ready: "PID GEN" (GEN: the newest
 * step generation it plans for, 0 at first; agents that cannot re-plan write
 * "PID" alone). How many of the two it holds, -1 if it cannot be read.
 */
static int read_ready(unsigned int job, long *pid, unsigned long long *generation)
{
	char path[64], line[64];
	FILE *in;
	int fields = -1;

	snprintf(path, sizeof(path), "/tmp/nopfs-%u/ready", job);
	in = fopen(path, "re");
	if (!in)
		return -1;
	*generation = 0;
	if (fgets(line, sizeof(line), in))
		fields = sscanf(line, "%ld %llu", pid, generation);
	fclose(in);
	return fields >= 1 ? fields : -1;
}

/*
 * NOPFS_SPANK_PLAN's value @plan (see plugin.h): its generation, and its
 * arguments made one a line (in place). 0, -1 if malformed.
 */
static int parse_plan(char *plan, unsigned long long *generation, char **arguments)
{
	char *end;

	errno = 0;
	*generation = strtoull(plan, &end, 10);
	if (errno || end == plan || *end != NOPFS_PLAN_SEPARATOR || strchr(end, '\n'))
		return -1;
	*arguments = end + 1;
	for (char *at = *arguments; (at = strchr(at, NOPFS_PLAN_SEPARATOR)); at++)
		*at = '\n';
	return 0;
}

/*
 * /tmp/nopfs-JOB/step-GEN: @arguments, one a line, each line ending in
 * '\n'. Written aside and renamed, so that the agent never reads half of it.
 */
static int write_arguments(int fd, void *arguments)
{
	return dprintf(fd, "%s\n", (const char *)arguments) < 0 ? -1 : 0;
}

static int write_step_file(unsigned int job, unsigned long long generation, const char *arguments)
{
	char path[96];

	snprintf(path, sizeof(path), "/tmp/nopfs-%u/step-%llu", job, generation);
	return nopfs_atomic_write_with(path, 0600, write_arguments, (void *)arguments) == NOPFS_OK
	               ? 0
	               : -1;
}

struct agent_pid {
	pid_t pid;
	bool found;
};

static void match_agent(pid_t pid, void *arg)
{
	struct agent_pid *agent = arg;

	if (pid == agent->pid)
		agent->found = true;
}

/*
 * SIGUSR2 (a step described itself) to @pid, once it is known to be an agent
 * of @job on this node: the ready file is the user's to write, and
 * slurmstepd's real uid, root's, may signal any root process.
 */
static int signal_agent(unsigned int job, long pid)
{
	struct agent_pid agent = { .pid = (pid_t)pid };

	if (pid > 1 && pid == (long)agent.pid)
		agents_of_job(job, geteuid(), match_agent, &agent);
	if (!agent.found) {
		errno = ESRCH;
		return -1;
	}
	return kill(agent.pid, SIGUSR2);
}

/*
 * Wait (polling, at most @timeout seconds) for this node's agent to follow
 * plan @generation: 0, or -1 with the reason in @why. The agent takes the
 * step file and, once it has re-planned, says so in the ready file; the step
 * file gone while the ready file says an older generation: it refused.
 */
static int wait_generation(unsigned int job, unsigned long long generation, unsigned int timeout,
                           char *why, size_t size)
{
	char step[96];
	unsigned long long current;
	long pid;

	snprintf(step, sizeof(step), "/tmp/nopfs-%u/step-%llu", job, generation);
	for (unsigned int tenth = 0; tenth <= timeout * 10; tenth++) {
		if (read_ready(job, &pid, &current) > 0 && current >= generation)
			return 0;
		if (access(step, F_OK) != 0 && errno == ENOENT) {
			/* it may have re-planned since the ready file was read */
			if (read_ready(job, &pid, &current) > 0 && current >= generation)
				return 0;
			snprintf(why, size, "it refused");
			return -1;
		}
		usleep(100000);
	}
	snprintf(why, size, "not within %u s", timeout);
	return -1;
}

/*
 * Have this node's agent re-plan for this step, as NOPFS_SPANK_PLAN @plan
 * describes it. Whatever happens, the tasks go on: the agent serves them
 * all the same.
 */
static void replan(unsigned int job, unsigned int timeout, const char *host, char *plan)
{
	unsigned long long generation, current;
	char *arguments, why[192];
	long pid;
	int fields;

	if (parse_plan(plan, &generation, &arguments) != 0) {
		snprintf(why, sizeof(why), "malformed %s", NOPFS_SPANK_PLAN);
	} else if ((fields = read_ready(job, &pid, &current)) < 0) {
		snprintf(why, sizeof(why), "cannot read /tmp/nopfs-%u/ready", job);
	} else if (fields < 2) {
		/* without a generation it is an agent that SIGUSR2 would end */
		snprintf(why, sizeof(why), "it is too old to re-plan");
	} else if (current >= generation) {
		return; /* it plans for this step, or a later one, already */
	} else if (write_step_file(job, generation, arguments) != 0) {
		snprintf(why, sizeof(why), "cannot write /tmp/nopfs-%u/step-%llu: %s", job,
		         generation, strerror(errno));
	} else if (signal_agent(job, pid) != 0) {
		snprintf(why, sizeof(why), "cannot signal it: %s", strerror(errno));
	} else if (wait_generation(job, generation, timeout, why, sizeof(why)) == 0) {
		return;
	}
	user_error("the agent of job %u on %s did not re-plan for this step (%s; its log: "
	           "/tmp/nopfs-%u.log): its reads are served, not planned",
	           job, host, why, job);
}

/* NOPFS_SPANK_PLAN, taken out of the step's environment (malloc'd), or NULL. */
static char *take_plan(spank_t sp)
{
	char *plan = malloc(NOPFS_SPANK_PLAN_MAX);
	spank_err_t rc = ESPANK_ENV_NOEXIST;

	if (plan)
		rc = spank_getenv(sp, NOPFS_SPANK_PLAN, plan, NOPFS_SPANK_PLAN_MAX);
	spank_unsetenv(sp, NOPFS_SPANK_PLAN); /* not for the tasks */
	if (rc == ESPANK_SUCCESS)
		return plan;
	if (rc != ESPANK_ENV_NOEXIST)
		user_error("cannot read %s (%s): this step's reads are served, not planned",
		           NOPFS_SPANK_PLAN, spank_strerror(rc));
	free(plan);
	return NULL;
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
	char why[128] = "", *plan;
	int consumed = 0, rc = 0;

	if (spank_getenv(sp, NOPFS_SPANK_TASKS, word, sizeof(word)) != ESPANK_SUCCESS)
		return 0;
	spank_unsetenv(sp, NOPFS_SPANK_TASKS);
	plan = take_plan(sp);
	if (sscanf(word, "%u:%u:%u:%n", &job, &preload, &timeout, &consumed) != 3 ||
	    consumed == 0 || word[consumed] != '/') {
		user_error("malformed %s='%s': tasks read the PFS directly", NOPFS_SPANK_TASKS,
		           word);
		goto out;
	}
	gethostname(host, sizeof(host));
	if (wait_ready(job, timeout, why, sizeof(why)) != 0) {
		user_error("the agent of job %u on %s %s: tasks there read the PFS directly", job,
		           host, why);
		goto out;
	}
	if (plan)
		replan(job, timeout, host, plan);
	rc = set_task_env(sp, job, preload != 0, word + consumed);
out:
	free(plan);
	return rc;
}
