/*
 * slurmstepd, remote context, once per node of a step that uses nopfs: find
 * this node's agent of the job, wait (bounded) for it to be ready and give
 * the tasks its socket, staging directory and the interposer. An agent that
 * never comes, or is gone, leaves the tasks reading the PFS, with one
 * warning per node. A later step's description (NOPFS_SPANK_PLAN) goes to
 * the agent as a file in its runtime directory, and the tasks wait (bounded)
 * for it to plan for the step; if it does not, they are served all the same.
 * A step's validation set is given to the tasks only when the agent was
 * started with it (the description of a later step carries none).
 * The agent's directories are named with the job's token, read from the
 * agent process's own environment; every file is checked to be the job
 * user's before it is believed. Nothing here uses root's privileges: files
 * are read and written with the user's effective ids, and no signal is sent.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/private.h"
#include "common/token.h"
#include "plugin.h"
#include "task/runtime.h"

/*
 * How long in a row this node may have no agent process before the wait
 * gives up: its start, or an agent step being started again (its agents
 * give up their first fences after 10 s each).
 */
#define AGENT_MISSING_SECONDS 25
#define ENVIRON_MAX           (1 << 20) /* of an agent process, read for its token */

/* This node's agent of the job: its process and its private directories. */
struct node_agent {
	uint32_t job;
	uid_t uid;
	pid_t pid;
	char runtime[PATH_MAX];
	char stage[PATH_MAX];
	char log[PATH_MAX + 16];
};

/* The value of NOPFS_AGENT_TOKEN in the environment of process @pid, into @token. */
static bool agent_token(pid_t pid, char *token)
{
	static const char key[] = NOPFS_ENV_AGENT_TOKEN "=";
	char path[64], chunk[4096], entry[sizeof(key) + NOPFS_TOKEN_LENGTH + 1];
	size_t kept = 0, total = 0;
	bool found = false, skipping = false;
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/environ", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	while (!found && total < ENVIRON_MAX && (got = read(fd, chunk, sizeof(chunk))) > 0) {
		total += (size_t)got;
		for (ssize_t i = 0; i < got && !found; i++) {
			if (chunk[i] != '\0') {
				if (!skipping && kept < sizeof(entry) - 1)
					entry[kept++] = chunk[i];
				else
					skipping = true;
				continue;
			}
			entry[kept] = '\0';
			found = !skipping && strncmp(entry, key, sizeof(key) - 1) == 0 &&
			        nopfs_token_is_valid(entry + sizeof(key) - 1);
			if (found)
				strcpy(token, entry + sizeof(key) - 1);
			kept = 0;
			skipping = false;
		}
	}
	close(fd);
	return found;
}

static void first_pid(pid_t pid, void *arg)
{
	pid_t *first = arg;

	if (*first <= 0)
		*first = pid;
}

/*
 * Find this node's agent of the job (a process of the job's user running
 * nopfs-agent for the job, with the job's token): 1 found, 0 not (yet).
 */
static int find_agent(struct node_agent *agent)
{
	char token[NOPFS_TOKEN_LENGTH + 1];
	pid_t pid = 0;

	if (agents_of_job(agent->job, agent->uid, first_pid, &pid) <= 0 || pid <= 0 ||
	    !agent_token(pid, token))
		return 0;
	agent->pid = pid;
	snprintf(agent->runtime, sizeof(agent->runtime), "/tmp/nopfs-%u.%s", agent->job, token);
	snprintf(agent->stage, sizeof(agent->stage), "/dev/shm/nopfs-%u.%s", agent->job, token);
	snprintf(agent->log, sizeof(agent->log), "%s/agent.log", agent->runtime);
	return 1;
}

/*
 * The agent's ready file, "PID GEN" (GEN: the newest step generation it
 * plans for), read only from its private runtime directory and only when it
 * is a regular file of the job's user naming the agent's process: how many
 * fields it holds, -1 if it is not there or not to be believed.
 */
static int read_ready(const struct node_agent *agent, unsigned long long *generation)
{
	char line[64];
	long pid = 0;
	ssize_t got;
	int dir_fd, fd, fields;

	dir_fd = nopfs_private_dir_open_for(agent->runtime, agent->uid);
	if (dir_fd < 0)
		return -1;
	fd = nopfs_private_file_open_for(dir_fd, "ready", O_RDONLY, 0, agent->uid);
	close(dir_fd);
	if (fd < 0)
		return -1;
	got = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (got <= 0)
		return -1;
	line[got] = '\0';
	*generation = 0;
	fields = sscanf(line, "%ld %llu", &pid, generation);
	return fields >= 1 && pid == (long)agent->pid ? fields : -1;
}

/* Whether the agent made its runtime and stage directories, private to the user. */
static bool agent_started(const struct node_agent *agent)
{
	int fd = nopfs_private_dir_open_for(agent->runtime, agent->uid);

	if (fd < 0)
		return false;
	close(fd);
	fd = nopfs_private_dir_open_for(agent->stage, agent->uid);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/*
 * Wait for the node's agent to be ready, or with @early only to have
 * started (its private directories made): 0, or -1 with the reason in @why.
 * It looks every 0.1 s; early, every 10 ms (the tasks wait for nothing
 * else, and not long), for the agent's process every 20 ms until found.
 */
#define TICK_MS         10
#define TICKS_PER_TENTH (100 / TICK_MS)
#define TICKS_PER_S     (1000 / TICK_MS)
static int wait_ready(struct node_agent *agent, unsigned int timeout, bool early, char *why,
                      size_t size)
{
	unsigned int missing = 0; /* seconds in a row without an agent process */
	unsigned long long generation;

	for (unsigned int tick = 0; tick <= timeout * TICKS_PER_S; tick++) {
		if (agent->pid > 0 && (early || tick % TICKS_PER_TENTH == 0) &&
		    (early ? agent_started(agent) : read_ready(agent, &generation) > 0))
			return 0;
		if (early && agent->pid <= 0 && tick % TICKS_PER_S != 0 && tick % 2 == 0 &&
		    find_agent(agent))
			missing = 0;
		if (tick % TICKS_PER_S == 0) {
			agent->pid = 0;
			missing = find_agent(agent) ? 0 : missing + (tick > 0);
			if (missing >= AGENT_MISSING_SECONDS) {
				snprintf(why, size,
				         "has not been running for %d s (the agent step's log: "
				         "/tmp/nopfs-%u.srun where it was started)",
				         AGENT_MISSING_SECONDS, agent->job);
				return -1;
			}
		}
		usleep(TICK_MS * 1000);
	}
	if (agent->pid > 0 && early)
		snprintf(
		        why, size,
		        "has made no private directories after %u s (plugstack.conf ready_timeout; "
		        "its log: %s)",
		        timeout, agent->log);
	else if (agent->pid > 0)
		snprintf(why, size,
		         "is not ready after %u s (plugstack.conf ready_timeout; its log: %s)",
		         timeout, agent->log);
	else
		snprintf(why, size, "is not ready after %u s (plugstack.conf ready_timeout)",
		         timeout);
	return -1;
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
 * RUNTIME/step-GEN: @arguments, one a line, each line ending in '\n', in the
 * agent's private runtime directory (checked), written aside and renamed so
 * that the agent never reads half of it. The agent looks for it itself.
 */
static int write_step_file(const struct node_agent *agent, unsigned long long generation,
                           const char *arguments)
{
	char path[PATH_MAX + 32], *text;
	int dir_fd, length;
	nopfs_status status;

	dir_fd = nopfs_private_dir_open_for(agent->runtime, agent->uid);
	if (dir_fd < 0)
		return -1;
	close(dir_fd);
	length = asprintf(&text, "%s\n", arguments);
	if (length < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/step-%llu", agent->runtime, generation);
	status = nopfs_atomic_write(path, 0600, text, (size_t)length);
	free(text);
	return status == NOPFS_OK ? 0 : -1;
}

/*
 * Wait (polling, at most @timeout seconds) for the agent to follow plan
 * @generation: 0, or -1 with the reason in @why. The agent takes the step
 * file and, once it has re-planned, says so in the ready file; the step file
 * gone while the ready file says an older generation: it refused.
 */
static int wait_generation(const struct node_agent *agent, unsigned long long generation,
                           unsigned int timeout, char *why, size_t size)
{
	char step[PATH_MAX + 32];
	unsigned long long current;

	snprintf(step, sizeof(step), "%s/step-%llu", agent->runtime, generation);
	for (unsigned int tenth = 0; tenth <= timeout * 10; tenth++) {
		if (read_ready(agent, &current) > 0 && current >= generation)
			return 0;
		if (access(step, F_OK) != 0 && errno == ENOENT) {
			/* it may have re-planned since the ready file was read */
			if (read_ready(agent, &current) > 0 && current >= generation)
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
 * describes it: the step's plan generation once the agent follows it (or a
 * later one), else -1. Whatever happens, the tasks go on: the agent serves
 * them all the same.
 */
static long long replan(const struct node_agent *agent, unsigned int timeout, const char *host,
                        char *plan)
{
	unsigned long long generation, current;
	char *arguments, why[PATH_MAX + 128];
	int fields;

	if (parse_plan(plan, &generation, &arguments) != 0) {
		snprintf(why, sizeof(why), "malformed %s", NOPFS_SPANK_PLAN);
	} else if ((fields = read_ready(agent, &current)) < 0) {
		snprintf(why, sizeof(why), "cannot read its ready file");
	} else if (fields < 2) {
		snprintf(why, sizeof(why), "it is too old to re-plan");
	} else if (current >= generation) {
		return (long long)generation; /* it plans for this step, or a later one, already */
	} else if (write_step_file(agent, generation, arguments) != 0) {
		snprintf(why, sizeof(why), "cannot write %s/step-%llu: %s", agent->runtime,
		         generation, strerror(errno));
	} else if (wait_generation(agent, generation, timeout, why, sizeof(why)) == 0) {
		return (long long)generation;
	}
	user_error("the agent of job %u on %s did not re-plan for this step (%s; its log: %s): "
	           "its reads are served, not planned",
	           agent->job, host, why, agent->log);
	return -1;
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

/*
 * The tasks' environment: the agent's socket and stage directory, the
 * interposer, the validation set's root (@val_dataset, NULL: none, the
 * variable removed so that no value of the user's names a set the agents do
 * not know), and the plan generation the step is served under (@generation,
 * -1: none, the variable removed so that no value of the user's stands).
 */
static int set_task_env(spank_t sp, const struct node_agent *agent, bool preload, bool early,
                        const char *dataset, const char *val_dataset, long long generation)
{
	char value[PATH_MAX + 4096], current[4096];

	if (generation >= 0 && generation < UINT32_MAX) {
		snprintf(value, sizeof(value), "%lld", generation);
		spank_setenv(sp, NOPFS_ENV_PLAN, value, 1);
	} else {
		spank_unsetenv(sp, NOPFS_ENV_PLAN);
	}

	if (early) {
		/* the first metadata call waits (as long as the plugin did) for the listings */
		snprintf(value, sizeof(value), "%u", nopfs_config.ready_timeout);
		spank_setenv(sp, NOPFS_ENV_META_WAIT, value, 1);
	}

	snprintf(value, sizeof(value), "%s/agent.sock", agent->runtime);
	spank_setenv(sp, NOPFS_ENV_SOCKET, value, 1);
	spank_setenv(sp, NOPFS_ENV_STAGE_DIR, agent->stage, 1);
	spank_setenv(sp, NOPFS_ENV_DATASET, dataset, 1);
	if (val_dataset)
		spank_setenv(sp, NOPFS_ENV_VAL_DATASET, val_dataset, 1);
	else
		spank_unsetenv(sp, NOPFS_ENV_VAL_DATASET);
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

/*
 * Does this step use nopfs? Its --nopfs-dataset option, or the option's
 * environment equivalent, which srun applied itself: nothing else (a
 * NOPFS_SPANK_TASKS alone in a step without nopfs is ignored).
 */
static bool step_uses_nopfs(spank_t sp)
{
	char value[16];
	spank_err_t rc;

	if (nopfs_request.active)
		return true;
	rc = spank_getenv(sp, "SLURM_NOPFS_DATASET", value, sizeof(value));
	return rc == ESPANK_SUCCESS || rc == ESPANK_NOSPACE;
}

/*
 * The validation set's root for the tasks, or NULL. As for the dataset,
 * whether the step reads one is its own option (--nopfs-val-dataset, or
 * SLURM_NOPFS_VAL_DATASET, which srun applied itself): a
 * NOPFS_SPANK_VAL_DATASET alone is ignored. The root is the launching
 * srun's, resolved in its working directory (@val, read as spank_getenv()
 * said in @rc). A missing or malformed one is left out, with a message: the
 * tasks then read the validation set from the PFS themselves.
 */
static const char *val_dataset_for_tasks(spank_t sp, spank_err_t rc, const char *val,
                                         const char *host)
{
	char option[16];
	spank_err_t given;

	if (!nopfs_request.val_dataset[0]) {
		given = spank_getenv(sp, "SLURM_NOPFS_VAL_DATASET", option, sizeof(option));
		if (given != ESPANK_SUCCESS && given != ESPANK_NOSPACE)
			return NULL;
	}
	if (rc == ESPANK_SUCCESS && val[0] == '/')
		return val;
	if (rc == ESPANK_SUCCESS)
		user_error("malformed %s='%.200s': tasks on %s read the validation set from the "
		           "PFS directly",
		           NOPFS_SPANK_VAL_DATASET, val, host);
	else
		user_error("cannot read %s (%s): tasks on %s read the validation set from the PFS "
		           "directly",
		           NOPFS_SPANK_VAL_DATASET, spank_strerror(rc), host);
	return NULL;
}

/*
 * Does this node's agent keep the validation set @val? Its --val-dataset,
 * given when it started, must name the same directory (the batch step gives
 * it as typed, srun resolved). The agents serve a validation set by paths
 * relative to their own root: tasks with another root would be given the
 * samples of the agents' set that have the same relative paths.
 */
static bool agent_keeps_val_set(const struct node_agent *agent, const char *val)
{
	size_t length = 0;
	char *cmdline = agents_read_cmdline(agent->pid, &length);
	struct stat ours, theirs;
	bool same = false;

	for (size_t at = 0; cmdline && at < length; at += strlen(cmdline + at) + 1) {
		const char *next = cmdline + at + strlen(cmdline + at) + 1;

		if (strcmp(cmdline + at, "--val-dataset") == 0 && next < cmdline + length) {
			same = stat(next, &theirs) == 0 && stat(val, &ours) == 0 &&
			       theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino;
			break;
		}
	}
	free(cmdline);
	return same;
}

int tasks_prepare(spank_t sp)
{
	char word[PATH_MAX + 64], host[256] = "this node", why[PATH_MAX + 192] = "", *plan;
	char val[PATH_MAX] = "";
	struct node_agent agent = { .pid = 0 };
	long long generation = -1; /* the plan the agents serve this step's tasks under */
	const char *val_dataset;
	unsigned int job, flags;
	spank_err_t val_rc;
	bool early;
	int consumed = 0, rc = 0, fd;

	if (spank_getenv(sp, NOPFS_SPANK_TASKS, word, sizeof(word)) != ESPANK_SUCCESS)
		return 0;
	spank_unsetenv(sp, NOPFS_SPANK_TASKS);
	plan = take_plan(sp);
	val_rc = spank_getenv(sp, NOPFS_SPANK_VAL_DATASET, val, sizeof(val));
	spank_unsetenv(sp, NOPFS_SPANK_VAL_DATASET); /* not for the tasks */
	if (!step_uses_nopfs(sp))
		goto out;
	if (sscanf(word, "%u:%u:%n", &job, &flags, &consumed) != 2 || consumed == 0 ||
	    word[consumed] != '/' || spank_get_item(sp, S_JOB_ID, &agent.job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &agent.uid) != ESPANK_SUCCESS || agent.job != job) {
		user_error("malformed %s='%s': tasks read the PFS directly", NOPFS_SPANK_TASKS,
		           word);
		goto out;
	}
	gethostname(host, sizeof(host));
	val_dataset = val_dataset_for_tasks(sp, val_rc, val, host);
	/* a step the agents re-plan for waits for that: early only at the job's start */
	early = (flags & NOPFS_TASKS_EARLY) && !plan;
	if (wait_ready(&agent, nopfs_config.ready_timeout, early, why, sizeof(why)) != 0) {
		user_error("the agent of job %u on %s %s: tasks there read the PFS directly", job,
		           host, why);
		goto out;
	}
	fd = nopfs_private_dir_open_for(agent.stage, agent.uid);
	if (fd < 0) {
		user_error(
		        "the agent of job %u on %s has no private stage directory %s: tasks there "
		        "read the PFS directly",
		        job, host, agent.stage);
		goto out;
	}
	close(fd);
	if (plan)
		generation = replan(&agent, nopfs_config.ready_timeout, host, plan);
	else if (flags & NOPFS_TASKS_LAUNCH)
		generation = 0; /* the agents' first plan is this step's */
	if (val_dataset && !agent_keeps_val_set(&agent, val_dataset)) {
		user_error("the agent of job %u on %s keeps no validation set %s (the agents take "
		           "it when they start): tasks there read it from the PFS directly",
		           job, host, val_dataset);
		val_dataset = NULL;
	}
	rc = set_task_env(sp, &agent, flags & NOPFS_TASKS_PRELOAD, early, word + consumed,
	                  val_dataset, generation);
out:
	free(plan);
	return rc;
}
