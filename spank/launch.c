/*
 * Making sure a job has its agent step (one per job), and telling a step's
 * tasks about it:
 *  - srun (local_user_init): find the job's agent step and reuse it, or
 *    start it for this step's layout;
 *  - sbatch (the batch step's user_init, at job start): start it for the
 *    job's layout, so the agents are ready when the first srun comes.
 * The first to find none takes an O_EXCL lock (/tmp/nopfs-JOB.srun, also
 * the companion srun's log) and starts it; the others wait for it to show
 * up. A step that finds the agents running is described to them
 * (NOPFS_SPANK_PLAN, for its tasks' slurmstepd to hand to each node's
 * agent): agents planning for another dataset, sampler, epoch count or
 * layout re-plan for it. When it cannot be described and differs, the step
 * is told that its reads are served, not planned.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "common/private.h"
#include "companion.h"
#include "launch.h"
#include "plugin.h"

/* From srun's or slurmstepd's own libslurm at run time; the plugin links none. */
#pragma weak slurm_get_job_steps
#pragma weak slurm_free_job_step_info_response_msg
#pragma weak slurm_hostlist_create
#pragma weak slurm_hostlist_shift
#pragma weak slurm_hostlist_destroy

#define STEP_WAIT_SECONDS 15

extern char **environ;

struct launch_state nopfs_launch = { .companion = -1 };

/*
 * The job's agent step: 1 found (its submit line in @line and its node list
 * in @nodes, those not NULL; "" if too long), 0 none, -1 cannot tell.
 */
static int find_agent_step(uint32_t job, char *line, size_t size, char *nodes, size_t nodes_size)
{
	job_step_info_response_msg_t *steps = NULL;
	int found = 0;

	if (!slurm_get_job_steps)
		return -1;
	if (slurm_get_job_steps(0, job, NO_VAL, &steps, SHOW_ALL) != 0 || !steps)
		return -1;
	for (uint32_t i = 0; i < steps->job_step_count; i++) {
		const job_step_info_t *step = &steps->job_steps[i];

		if (!step->name || strcmp(step->name, AGENT_STEP_NAME) != 0 ||
		    (step->state != JOB_RUNNING && step->state != JOB_PENDING))
			continue;
		found = 1;
		if (line)
			snprintf(line, size, "%s", step->submit_line ? step->submit_line : "");
		if (nodes && (size_t)snprintf(nodes, nodes_size, "%s",
		                              step->nodes ? step->nodes : "") >= nodes_size)
			nodes[0] = '\0';
	}
	slurm_free_job_step_info_response_msg(steps);
	return found;
}

/* The node list of step @step of @job (this srun's), into @nodes. */
static int step_nodes(uint32_t job, uint32_t step, char *nodes, size_t size)
{
	job_step_info_response_msg_t *steps = NULL;
	int rc = -1;

	if (!slurm_get_job_steps)
		return -1;
	if (slurm_get_job_steps(0, job, step, &steps, SHOW_ALL) != 0 || !steps)
		return -1;
	for (uint32_t i = 0; i < steps->job_step_count; i++) {
		const job_step_info_t *info = &steps->job_steps[i];

		if (info->step_id.step_id == step && info->nodes &&
		    (size_t)snprintf(nodes, size, "%s", info->nodes) < size)
			rc = 0;
	}
	slurm_free_job_step_info_response_msg(steps);
	return rc;
}

void launch_set_lock(uint32_t job)
{
	snprintf(nopfs_launch.lock, sizeof(nopfs_launch.lock), "/tmp/nopfs-%u.srun", job);
}

void launch_default_report(uint32_t job, const char *directory)
{
	char base[PATH_MAX];

	if (nopfs_request.report[0])
		return;
	if (nopfs_config.report_dir[0])
		snprintf(base, sizeof(base), "%s", nopfs_config.report_dir);
	else if (directory)
		snprintf(base, sizeof(base), "%s", directory);
	else
		return;
	if (snprintf(nopfs_request.report, sizeof(nopfs_request.report), "%.4000s/nopfs-%u.json",
	             base, job) >= (int)sizeof(nopfs_request.report))
		nopfs_request.report[0] = '\0';
}

/* Wait (bounded) for another's agent step to show up. */
static void wait_for_step(uint32_t job)
{
	for (int i = 0; i < STEP_WAIT_SECONDS * 10; i++) {
		if (find_agent_step(job, NULL, 0, NULL, 0) != 0)
			return;
		usleep(100000);
	}
}

/*
 * The lock of an srun that died before its agent step showed up is stale;
 * the lock of a live one means wait for its step. Only a lock of ours is
 * read at all (nopfs_private_file_is()).
 */
static bool lock_is_stale(const char *path)
{
	long pid = 0;
	FILE *in = fopen(path, "re");

	if (!in)
		return errno == ENOENT;
	if (fscanf(in, "%ld", &pid) != 1)
		pid = 0;
	fclose(in);
	return pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/*
 * Another user put a file where the job's lock goes (/tmp is everyone's):
 * it is no lock of ours. The agent step starts without the lock (at worst
 * two sruns of the job start one each, and the second's agents refuse), with
 * its log in a file of our own beside it.
 */
static int planted_lock(void)
{
	char path[sizeof(nopfs_launch.lock)];
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s.XXXXXX", nopfs_launch.lock) >= sizeof(path))
		return -1;
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0) {
		user_error("'%s' is not this user's (another user made it), and no log of our own "
		           "can be made beside it: %m",
		           nopfs_launch.lock);
		return -1;
	}
	user_error("'%s' is not this user's (another user made it): the agents start without "
	           "it; their step's log: %s",
	           nopfs_launch.lock, path);
	memcpy(nopfs_launch.lock, path, sizeof(nopfs_launch.lock) - 1);
	nopfs_launch.lock[sizeof(nopfs_launch.lock) - 1] = '\0';
	return fd;
}

/* Take the lock and start the agent step, or wait for whoever has the lock. */
static void start_agent_step(uint32_t job, const struct step_layout *layout, char *const *env,
                             bool detach)
{
	int lock_fd = -1;
	pid_t pid = -1;

	launch_set_lock(job);
	for (int attempt = 0; attempt < 2 && lock_fd < 0; attempt++) {
		lock_fd = open(nopfs_launch.lock,
		               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (lock_fd >= 0 || errno != EEXIST)
			break;
		if (!nopfs_private_file_is(nopfs_launch.lock, geteuid())) {
			lock_fd = planted_lock();
			break;
		}
		if (!lock_is_stale(nopfs_launch.lock)) {
			wait_for_step(job); /* another srun of the job is starting it */
			return;
		}
		unlink(nopfs_launch.lock);
	}
	if (lock_fd < 0) {
		user_error("cannot create '%s': %m: this step reads the PFS directly",
		           nopfs_launch.lock);
		return;
	}
	dprintf(lock_fd, "%ld\n", (long)getpid());
	if (companion_start(job, layout, env, lock_fd, detach, &pid) != 0) {
		close(lock_fd);
		unlink(nopfs_launch.lock);
		return;
	}
	close(lock_fd);
	nopfs_launch.companion = pid > 0 ? pid : -1;
	nopfs_launch.started = true;
}

/* The host names of Slurm hostlist @expression, in its order. */
struct hosts {
	char **names;
	unsigned int count;
};

static void hosts_free(struct hosts *hosts)
{
	for (unsigned int i = 0; i < hosts->count; i++)
		free(hosts->names[i]);
	free(hosts->names);
	hosts->names = NULL;
	hosts->count = 0;
}

/* @expression into @hosts (hosts_free() either way): 0, -1 if it cannot be expanded. */
static int hosts_expand(const char *expression, struct hosts *hosts)
{
	hostlist_t list;
	char *name;
	int rc = 0;

	if (!slurm_hostlist_create || !slurm_hostlist_shift || !slurm_hostlist_destroy)
		return -1;
	list = slurm_hostlist_create(expression);
	if (!list)
		return -1;
	while (rc == 0 && (name = slurm_hostlist_shift(list))) { /* malloc'd */
		char **grown = realloc(hosts->names, (hosts->count + 1) * sizeof(*grown));

		if (grown) {
			hosts->names = grown;
			hosts->names[hosts->count++] = name;
		} else {
			free(name);
			rc = -1;
		}
	}
	slurm_hostlist_destroy(list);
	return rc == 0 && hosts->count > 0 ? 0 : -1;
}

/*
 * NOPFS_SPANK_PLAN's value for step @step on @layout, for the agents of the
 * agent step on @agent_nodes (malloc'd), or NULL with the reason in @why.
 */
static char *describe_step(uint32_t step, const struct step_layout *layout, const char *agent_nodes,
                           char *why, size_t size)
{
	struct hosts agents = { 0 }, ours = { 0 };
	char step_tasks[STEP_TASKS_MAX];
	char *plan = malloc(NOPFS_SPANK_PLAN_MAX);
	bool described = false;

	if (!plan)
		snprintf(why, size, "out of memory");
	else if (hosts_expand(agent_nodes, &agents) != 0)
		snprintf(why, size, "cannot expand the agent step's node list '%.200s'",
		         agent_nodes);
	else if (hosts_expand(layout->nodes, &ours) != 0)
		snprintf(why, size, "cannot expand its node list '%.200s'", layout->nodes);
	else
		described = companion_step_tasks(agents.names, agents.count, ours.names, ours.count,
		                                 layout->tasks_per_node, step_tasks,
		                                 sizeof(step_tasks), why, size) == 0 &&
		            companion_plan((unsigned long long)step + 1, step_tasks,
		                           layout->distribution, plan, NOPFS_SPANK_PLAN_MAX, why,
		                           size) == 0;
	hosts_free(&agents);
	hosts_free(&ours);
	if (!described) {
		free(plan);
		plan = NULL;
	}
	return plan;
}

/*
 * Describe step @step to the running agents: its description goes to its
 * tasks' slurmstepd (tasks.c), which hands it to each node's agent; an agent
 * planning for the same already only notes it, one planning for another
 * dataset, sampler or layout re-plans (and so back to an earlier plan). If
 * it cannot be described, the step reads through the agents all the same,
 * unplanned when they plan for something else.
 */
static void describe_to_agents(uint32_t step, const char *submit_line, const char *agent_nodes,
                               const struct step_layout *layout)
{
	char signature[PATH_MAX + 512], why[512] = "";
	char *plan;

	if (!nopfs_request.plan)
		return; /* --nopfs-plan=no: the agents as they are */
	companion_signature(layout, signature, sizeof(signature));
	plan = describe_step(step, layout, agent_nodes, why, sizeof(why));
	if (plan) {
		setenv(NOPFS_SPANK_PLAN, plan, 1);
		free(plan);
		if (nopfs_request.verbose)
			user_info("the job's agents plan for this step (%s)", signature);
		return;
	}
	if (submit_line[0] && !strstr(submit_line, signature))
		user_error("the job's agents plan for another dataset, seed, epoch count or task "
		           "layout than this step's (%s) and cannot re-plan for it (%s): its reads "
		           "are served, not planned",
		           signature, why);
}

/* The launching srun's word to its tasks' slurmstepd (see tasks.c); @launched: it started the
 * agents. */
static void publish_for_tasks(uint32_t job, bool launched)
{
	char value[PATH_MAX + 64];

	snprintf(value, sizeof(value), "%u:%u:%s", job,
	         (nopfs_request.preload ? NOPFS_TASKS_PRELOAD : 0) |
	                 (nopfs_request.early ? NOPFS_TASKS_EARLY : 0) |
	                 (launched ? NOPFS_TASKS_LAUNCH : 0),
	         nopfs_request.dataset);
	setenv(NOPFS_SPANK_TASKS, value, 1);
	/* resolved here, in srun's working directory, as the dataset is */
	if (nopfs_request.val_dataset[0])
		setenv(NOPFS_SPANK_VAL_DATASET, nopfs_request.val_dataset, 1);
}

int launch_agents(spank_t sp)
{
	struct step_layout layout = { 0 };
	const char *tasks = getenv("SLURM_TASKS_PER_NODE");
	char submit_line[8192] = "", agent_nodes[sizeof(layout.nodes)] = "", cwd[PATH_MAX];
	uint32_t job = 0, step = 0;
	int found;

	if (!nopfs_request.active)
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NNODES, &layout.node_count) != ESPANK_SUCCESS) {
		user_error("cannot tell the job and step: this step reads the PFS directly");
		return 0;
	}
	nopfs_launch.job = job;
	launch_default_report(job, getcwd(cwd, sizeof(cwd)));
	if (!tasks ||
	    companion_distribution(getenv("SLURM_DISTRIBUTION"), getenv("SLURM_DIST_PLANESIZE"),
	                           layout.distribution, sizeof(layout.distribution)) != 0) {
		user_error("task distribution '%s' is not supported (block, cyclic or plane): "
		           "this step reads the PFS directly",
		           getenv("SLURM_DISTRIBUTION"));
		return 0;
	}
	snprintf(layout.tasks_per_node, sizeof(layout.tasks_per_node), "%s", tasks);
	if (step_nodes(job, step, layout.nodes, sizeof(layout.nodes)) != 0) {
		user_error("cannot find the nodes of step %u.%u: this step reads the PFS directly",
		           job, step);
		return 0;
	}
	found = find_agent_step(job, submit_line, sizeof(submit_line), agent_nodes,
	                        sizeof(agent_nodes));
	if (found < 0) {
		user_error("cannot list the steps of job %u: this step reads the PFS directly",
		           job);
		return 0;
	}
	/* set for this step's tasks only, never inherited */
	unsetenv(NOPFS_SPANK_PLAN);
	unsetenv(NOPFS_SPANK_VAL_DATASET);
	if (found)
		describe_to_agents(step, submit_line, agent_nodes, &layout);
	else
		start_agent_step(job, &layout, environ, false);
	publish_for_tasks(job, !found);
	return 0;
}

/* A value of the batch job's environment @env, or NULL. */
static const char *job_env(char **env, const char *name)
{
	size_t length = strlen(name);

	for (; env && *env; env++)
		if (strncmp(*env, name, length) == 0 && (*env)[length] == '=')
			return *env + length + 1;
	return NULL;
}

int launch_agents_for_batch(spank_t sp)
{
	struct step_layout layout = { 0 };
	uint32_t job = 0, step = 0;
	const char *nodes, *count, *tasks;
	char **env = NULL;

	/* paths as typed to sbatch: relative ones are left to the first srun to resolve */
	if (!nopfs_request.active || nopfs_request.dataset[0] != '/' ||
	    (nopfs_request.val_dataset[0] && nopfs_request.val_dataset[0] != '/') ||
	    (nopfs_request.report[0] && nopfs_request.report[0] != '/') ||
	    strncmp(nopfs_request.index, "list:", 5) == 0 ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
	    step != SLURM_BATCH_SCRIPT || spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS ||
	    job_env(env, NOPFS_SPANK_GUARD))
		return 0;
	nodes = job_env(env, "SLURM_JOB_NODELIST");
	count = job_env(env, "SLURM_JOB_NUM_NODES");
	tasks = job_env(env, "SLURM_TASKS_PER_NODE");
	if (!nodes || !count || !tasks ||
	    companion_distribution(job_env(env, "SLURM_DISTRIBUTION"),
	                           job_env(env, "SLURM_DIST_PLANESIZE"), layout.distribution,
	                           sizeof(layout.distribution)) != 0)
		return 0; /* the job's first srun starts the agents for its own layout */
	snprintf(layout.nodes, sizeof(layout.nodes), "%s", nodes);
	layout.node_count = (unsigned int)strtoul(count, NULL, 10);
	snprintf(layout.tasks_per_node, sizeof(layout.tasks_per_node), "%s", tasks);
	launch_default_report(job, job_env(env, "SLURM_SUBMIT_DIR"));
	if (layout.node_count == 0 || !nopfs_request.report[0])
		return 0;
	start_agent_step(job, &layout, env, true);
	return 0;
}
