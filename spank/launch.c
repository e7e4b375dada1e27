/*
 * srun, local context: make sure the job has its agent step, then tell this
 * step's tasks about it. The agent step is found by name among the job's
 * RUNNING steps and reused; the first srun to find none takes an O_EXCL
 * lock and starts it (a companion srun: overlapping, detached, scrubbed).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "launch.h"
#include "plugin.h"

/* From srun's own libslurm at run time; the plugin does not link libslurm. */
#pragma weak slurm_get_job_steps
#pragma weak slurm_free_job_step_info_response_msg

#define AGENT_STEP_NAME   "nopfs-agent"
#define STEP_WAIT_SECONDS 15

struct launch_state nopfs_launch = { .companion = -1 };

/* The job's running agent step: 1 found, 0 none, -1 cannot tell. */
static int find_agent_step(uint32_t job)
{
	job_step_info_response_msg_t *steps = NULL;
	int found = 0;

	if (!slurm_get_job_steps)
		return -1;
	if (slurm_get_job_steps(0, job, NO_VAL, &steps, SHOW_ALL) != 0 || !steps)
		return -1;
	for (uint32_t i = 0; i < steps->job_step_count; i++) {
		const job_step_info_t *step = &steps->job_steps[i];

		if (step->name && strcmp(step->name, AGENT_STEP_NAME) == 0 &&
		    (step->state == JOB_RUNNING || step->state == JOB_PENDING))
			found = 1;
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

/* Slurm's distribution name as the agent takes it (block, cyclic, plane=N). */
static int step_distribution(char *distribution, size_t size)
{
	const char *dist = getenv("SLURM_DISTRIBUTION");
	const char *plane = getenv("SLURM_DIST_PLANESIZE");

	if (!dist || strncmp(dist, "block", 5) == 0 || strcmp(dist, "unknown") == 0)
		snprintf(distribution, size, "block");
	else if (strncmp(dist, "cyclic", 6) == 0)
		snprintf(distribution, size, "cyclic");
	else if (strncmp(dist, "plane", 5) == 0 && plane)
		snprintf(distribution, size, "plane=%s", plane);
	else {
		user_error("task distribution '%s' is not supported (block, cyclic or plane): "
		           "this step reads the PFS directly",
		           dist);
		return -1;
	}
	return 0;
}

static void set_default_report(uint32_t job)
{
	char cwd[PATH_MAX];

	if (nopfs_request.report[0])
		return;
	if (nopfs_config.report_dir[0])
		snprintf(cwd, sizeof(cwd), "%s", nopfs_config.report_dir);
	else if (!getcwd(cwd, sizeof(cwd)))
		return;
	if (snprintf(nopfs_request.report, sizeof(nopfs_request.report), "%.4000s/nopfs-%u.json",
	             cwd, job) >= (int)sizeof(nopfs_request.report))
		nopfs_request.report[0] = '\0';
}

/* The agent's --tier arguments: "ssd:SIZE" goes under the admin's ssd_base. */
static int tier_arguments(const char *spec, char args[][PATH_MAX + 64], int max)
{
	char copy[1024], *save = NULL;
	int count = 0;

	if (snprintf(copy, sizeof(copy), "%s", spec) >= (int)sizeof(copy))
		return 0;
	for (char *item = strtok_r(copy, ",", &save); item && count < max;
	     item = strtok_r(NULL, ",", &save)) {
		if (strncmp(item, "ssd:", 4) == 0 && !strchr(item + 4, ':'))
			snprintf(args[count++], PATH_MAX + 64, "ssd:%s:%s", nopfs_config.ssd_base,
			         item + 4);
		else
			snprintf(args[count++], PATH_MAX + 64, "%s", item);
	}
	return count;
}

/* In the child: exec the companion srun; never returns. */
static void exec_companion(uint32_t job, const char *nodes, unsigned int node_count,
                           const char *tasks_per_node, const char *distribution, int log_fd)
{
	static const char *const scrub[] = {
		"SLURM_NTASKS",         "SLURM_NPROCS",         "SLURM_NTASKS_PER_NODE",
		"SLURM_STEP_ID",        "SLURM_STEPID",         "SLURM_DISTRIBUTION",
		"SLURM_TASKS_PER_NODE", "SLURM_DIST_PLANESIZE", "SLURM_CPU_BIND",
		"SLURM_MEM_PER_CPU",    "SLURM_MEM_PER_NODE",   "SLURM_NNODES",
		"SLURM_JOB_NAME",       "LD_PRELOAD",           NULL
	};
	const struct spank_request *r = &nopfs_request;
	char tiers[8][PATH_MAX + 64];
	char arg_job[32], arg_jobid[48], arg_nodes[64], arg_seed[32], arg_epochs[32];
	char agent[PATH_MAX + 16], node_report[PATH_MAX + 32], share[PATH_MAX], log[64];
	const char *argv[80];
	int argc = 0, tier_count, null_fd;

	setsid();
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd >= 0) {
		dup2(null_fd, STDIN_FILENO);
		dup2(null_fd, STDOUT_FILENO);
	}
	if (log_fd >= 0)
		dup2(log_fd, STDERR_FILENO);
	for (int i = 0; scrub[i]; i++)
		unsetenv(scrub[i]);
	for (char **e = environ; *e;) { /* forwarded SPANK options: not for the agents */
		if (strncmp(*e, "SLURM_SPANK_", 12) == 0 || strncmp(*e, "_SLURM_SPANK_", 13) == 0) {
			char name[256];
			size_t length = strcspn(*e, "=");

			snprintf(name, sizeof(name), "%.*s", (int)length, *e);
			unsetenv(name);
		} else {
			e++;
		}
	}
	setenv(NOPFS_SPANK_GUARD, "1", 1);

	snprintf(arg_jobid, sizeof(arg_jobid), "--jobid=%u", job);
	snprintf(arg_job, sizeof(arg_job), "%u", job);
	snprintf(log, sizeof(log), "/tmp/nopfs-%u.log", job);
	snprintf(arg_nodes, sizeof(arg_nodes), "%u", node_count);
	snprintf(arg_seed, sizeof(arg_seed), "%lld", (long long)r->seed);
	snprintf(arg_epochs, sizeof(arg_epochs), "%u", r->epochs);
	snprintf(agent, sizeof(agent), "%s/nopfs-agent", nopfs_config.bindir);
	snprintf(node_report, sizeof(node_report), "%s.node-%%n", r->report);
	memcpy(share, r->report, sizeof(share));
	*strrchr(share, '/') = '\0';
	if (share[0] == '\0')
		strcpy(share, "/");

	argv[argc++] = nopfs_config.srun;
	argv[argc++] = "--overlap";
	argv[argc++] = arg_jobid;
	argv[argc++] = "-w";
	argv[argc++] = nodes;
	argv[argc++] = "-N";
	argv[argc++] = arg_nodes;
	argv[argc++] = "-n";
	argv[argc++] = arg_nodes;
	argv[argc++] = "--ntasks-per-node=1";
	argv[argc++] = "--mpi=pmix";
	argv[argc++] = "-J";
	argv[argc++] = AGENT_STEP_NAME;
	argv[argc++] = "--input=none";
	argv[argc++] = "--kill-on-bad-exit=0";
	argv[argc++] = "--quiet";
	argv[argc++] = agent;
	argv[argc++] = "--job-id";
	argv[argc++] = arg_job;
	argv[argc++] = "--dataset";
	argv[argc++] = r->dataset;
	argv[argc++] = "--seed";
	argv[argc++] = arg_seed;
	argv[argc++] = "--epochs";
	argv[argc++] = arg_epochs;
	argv[argc++] = "--step-tasks";
	argv[argc++] = tasks_per_node;
	argv[argc++] = "--step-distribution";
	argv[argc++] = distribution;
	if (r->index[0]) {
		argv[argc++] = "--index";
		argv[argc++] = r->index;
	}
	if (!r->shuffle)
		argv[argc++] = "--no-shuffle";
	if (r->drop_last)
		argv[argc++] = "--drop-last";
	if (r->verbose)
		argv[argc++] = "--verbose";
	tier_count = tier_arguments(r->tiers[0] ? r->tiers : nopfs_config.tiers, tiers, 8);
	for (int i = 0; i < tier_count; i++) {
		argv[argc++] = "--tier";
		argv[argc++] = tiers[i];
	}
	argv[argc++] = "--report";
	argv[argc++] = node_report;
	argv[argc++] = "--merged-report";
	argv[argc++] = r->report;
	argv[argc++] = "--drop-node-reports";
	argv[argc++] = "--share-dir";
	argv[argc++] = share;
	argv[argc++] = "--log";
	argv[argc++] = log;
	if (nopfs_config.bench_cache[0]) {
		argv[argc++] = "--bench-cache";
		argv[argc++] = nopfs_config.bench_cache;
	}
	argv[argc] = NULL;
	for (int i = 0; i < argc; i++) /* the log says what ran */
		dprintf(STDERR_FILENO, "%s%s", argv[i], i + 1 < argc ? " " : "\n");
	execv(nopfs_config.srun, (char *const *)argv);
	dprintf(STDERR_FILENO, PLUGIN_NAME ": cannot run %s: %s\n", nopfs_config.srun,
	        strerror(errno));
	_exit(127);
}

/* Wait (bounded) for another srun's agent step to show up. */
static void wait_for_step(uint32_t job)
{
	for (int i = 0; i < STEP_WAIT_SECONDS * 10; i++) {
		if (find_agent_step(job) != 0)
			return;
		usleep(100000);
	}
}

/*
 * The lock of an srun that died before its agent step showed up is stale;
 * the lock of a live one means wait for its step.
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

static void start_agent_step(uint32_t job, const char *nodes, unsigned int node_count,
                             const char *tasks_per_node, const char *distribution)
{
	int lock_fd = -1;
	pid_t pid;

	for (int attempt = 0; attempt < 2 && lock_fd < 0; attempt++) {
		lock_fd = open(nopfs_launch.lock, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (lock_fd >= 0 || errno != EEXIST)
			break;
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
	pid = fork();
	if (pid == 0)
		exec_companion(job, nodes, node_count, tasks_per_node, distribution, lock_fd);
	close(lock_fd);
	if (pid < 0) {
		user_error("cannot start the agent step: %m; this step reads the PFS directly");
		unlink(nopfs_launch.lock);
		return;
	}
	nopfs_launch.companion = pid;
	nopfs_launch.started = true;
}

/* The launching srun's word to its tasks' slurmstepd (see tasks.c). */
static void publish_for_tasks(uint32_t job)
{
	char value[PATH_MAX + 64];

	snprintf(value, sizeof(value), "%u:%d:%u:%s", job, nopfs_request.preload ? 1 : 0,
	         nopfs_config.ready_timeout, nopfs_request.dataset);
	setenv(NOPFS_SPANK_TASKS, value, 1);
}

int launch_agents(spank_t sp)
{
	char nodes[4096], distribution[64];
	const char *tasks_per_node = getenv("SLURM_TASKS_PER_NODE");
	uint32_t job = 0, step = 0, node_count = 0;
	int found;

	if (!nopfs_request.active)
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NNODES, &node_count) != ESPANK_SUCCESS) {
		user_error("cannot tell the job and step: this step reads the PFS directly");
		return 0;
	}
	nopfs_launch.job = job;
	set_default_report(job);
	if (!tasks_per_node || step_distribution(distribution, sizeof(distribution)) != 0)
		return 0;
	if (step_nodes(job, step, nodes, sizeof(nodes)) != 0) {
		user_error("cannot find the nodes of step %u.%u: this step reads the PFS directly",
		           job, step);
		return 0;
	}
	found = find_agent_step(job);
	if (found < 0) {
		user_error("cannot list the steps of job %u: this step reads the PFS directly",
		           job);
		return 0;
	}
	snprintf(nopfs_launch.lock, sizeof(nopfs_launch.lock), "/tmp/nopfs-%u.srun", job);
	if (found == 0)
		start_agent_step(job, nodes, node_count, tasks_per_node, distribution);
	publish_for_tasks(job);
	return 0;
}
