/*
 * The agent step: one nopfs-agent per node of the training step, started as
 * a step of its own by an srun the plugin runs ("companion"). Everything is
 * prepared before fork(); the child only redirects and execs (the parent,
 * srun or slurmstepd, has threads).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "companion.h"
#include "plan/layout.h"
#include "common/log.h"
#include "common/token.h"
#include "plugin.h"
#include "task/runtime.h"

/* build_command() adds at most 79 arguments and NULL (TIERS_MAX tiers, every option): room left */
#define ARGS_MAX  96
#define TIERS_MAX 8
/* How many times the agent step is started when it asks to be started again */
#define STEP_ATTEMPTS 3

/* Environment variables the companion must not inherit. */
static const char *const scrubbed[] = {
	"SLURM_NTASKS",   "SLURM_NPROCS",       "SLURM_NTASKS_PER_NODE", "SLURM_STEP_ID",
	"SLURM_STEPID",   "SLURM_DISTRIBUTION", "SLURM_TASKS_PER_NODE",  "SLURM_DIST_PLANESIZE",
	"SLURM_CPU_BIND", "SLURM_MEM_PER_CPU",  "SLURM_MEM_PER_NODE",    "SLURM_NNODES",
	"SLURM_JOB_NAME", "LD_PRELOAD",         NOPFS_ENV_AGENT_TOKEN,   NULL
};

struct command {
	const char *argv[ARGS_MAX];
	int argc;
	char job[16], jobid[32], nodes[16], seed[32], epochs[16], start_epoch[16], start_sample[16];
	char scan_timeout[16];
	char token[NOPFS_TOKEN_LENGTH + 1];
	char token_env[sizeof(NOPFS_ENV_AGENT_TOKEN) + NOPFS_TOKEN_LENGTH + 1];
	char agent[PATH_MAX + 16], node_report[PATH_MAX + 64], share[PATH_MAX], log[128];
	char summary[128];
	char keep_dir[PATH_MAX + 16];
	char tiers[TIERS_MAX][PATH_MAX + 64];
};

int companion_distribution(const char *distribution, const char *plane_size, char *out, size_t size)
{
	if (!distribution || strncmp(distribution, "block", 5) == 0 ||
	    strcmp(distribution, "unknown") == 0)
		snprintf(out, size, "block");
	else if (strncmp(distribution, "cyclic", 6) == 0)
		snprintf(out, size, "cyclic");
	else if (strncmp(distribution, "plane", 5) == 0 && plane_size)
		snprintf(out, size, "plane=%s", plane_size);
	else
		return -1;
	return 0;
}

/* The agent's --tier arguments: "ssd:SIZE" goes under the admin's ssd_base. */
static int tier_arguments(const char *spec, struct command *c)
{
	char copy[1024], *save = NULL;
	int count = 0;

	if (snprintf(copy, sizeof(copy), "%s", spec) >= (int)sizeof(copy))
		return 0;
	for (char *item = strtok_r(copy, ",", &save); item && count < TIERS_MAX;
	     item = strtok_r(NULL, ",", &save)) {
		if (strncmp(item, "ssd:", 4) == 0 && !strchr(item + 4, ':'))
			snprintf(c->tiers[count++], sizeof(c->tiers[0]), "ssd:%s:%s",
			         nopfs_config.ssd_base, item + 4);
		else
			snprintf(c->tiers[count++], sizeof(c->tiers[0]), "%s", item);
	}
	return count;
}

static void add(struct command *c, const char *arg)
{
	if (c->argc < ARGS_MAX - 1)
		c->argv[c->argc++] = arg;
}

void companion_signature(const struct step_layout *layout, char *buffer, size_t size)
{
	const struct spank_request *r = &nopfs_request;

	snprintf(buffer, size,
	         "--dataset %s --seed %lld --epochs %u --start-epoch %u --start-sample %u "
	         "--step-tasks %s --step-distribution %s",
	         r->dataset, (long long)r->seed, r->epochs, r->start_epoch, r->start_sample,
	         layout->tasks_per_node, layout->distribution);
}

/*
 * Where @name is among @nodes, -1 if not. The search starts at @hint: both
 * node lists are in Slurm's order, so it usually finds it there.
 */
static long find_node(char *const *nodes, unsigned int count, const char *name, unsigned int hint)
{
	for (unsigned int i = 0; i < count; i++) {
		unsigned int at = (hint + i) % count;

		if (strcmp(nodes[at], name) == 0)
			return at;
	}
	return -1;
}

/* @counts[i]: the step's tasks on agent node i (see companion_step_tasks()). */
static int place_tasks(char *const *agent_nodes, unsigned int agent_count, char *const *step_nodes,
                       unsigned int step_count, const char *tasks_per_node, uint32_t *counts,
                       char *why, size_t why_size)
{
	uint32_t *step_counts = NULL, listed = 0;
	unsigned int hint = 0;
	nopfs_status status;
	int rc = 0;

	nopfs_log_hold(); /* @why says it, in the caller's message */
	status = nopfs_layout_parse_tasks(tasks_per_node, &step_counts, &listed);
	nopfs_log_release();
	if (status != NOPFS_OK || listed != step_count) {
		snprintf(why, why_size, "its tasks per node '%s' do not fit its %u nodes",
		         tasks_per_node, step_count);
		free(step_counts);
		return -1;
	}
	for (unsigned int node = 0; node < step_count && rc == 0; node++) {
		long at = find_node(agent_nodes, agent_count, step_nodes[node], hint);

		if (at < 0) {
			snprintf(why, why_size, "its node %s runs no agent of the job",
			         step_nodes[node]);
			rc = -1;
		} else {
			counts[at] = step_counts[node];
			hint = (unsigned int)at + 1;
		}
	}
	free(step_counts);
	return rc;
}

/* @counts in Slurm's form, a run of equal counts as "N(xK)", into @out; -1 if too long. */
static int format_tasks(const uint32_t *counts, unsigned int count, char *out, size_t size)
{
	size_t used = 0;
	unsigned int run;

	for (unsigned int i = 0; i < count; i += run) {
		int length;

		run = 1;
		while (i + run < count && counts[i + run] == counts[i])
			run++;
		if (run > 1)
			length = snprintf(out + used, size - used, "%s%" PRIu32 "(x%u)",
			                  i ? "," : "", counts[i], run);
		else
			length = snprintf(out + used, size - used, "%s%" PRIu32, i ? "," : "",
			                  counts[i]);
		if (length < 0 || (size_t)length >= size - used)
			return -1;
		used += (size_t)length;
	}
	return count > 0 ? 0 : -1;
}

int companion_step_tasks(char *const *agent_nodes, unsigned int agent_count,
                         char *const *step_nodes, unsigned int step_count,
                         const char *tasks_per_node, char *out, size_t size, char *why,
                         size_t why_size)
{
	uint32_t *counts = calloc(agent_count ? agent_count : 1, sizeof(*counts));
	int rc;

	if (!counts) {
		snprintf(why, why_size, "out of memory");
		return -1;
	}
	rc = place_tasks(agent_nodes, agent_count, step_nodes, step_count, tasks_per_node, counts,
	                 why, why_size);
	if (rc == 0 && format_tasks(counts, agent_count, out, size) != 0) {
		snprintf(why, why_size, "the agent step has too many nodes to describe");
		rc = -1;
	}
	free(counts);
	return rc;
}

int companion_plan(unsigned long long generation, const char *step_tasks, const char *distribution,
                   char *out, size_t size, char *why, size_t why_size)
{
	const struct spank_request *r = &nopfs_request;
	const char forbidden[] = { '\n', NOPFS_PLAN_SEPARATOR, '\0' };
	char seed[32], epochs[16], start_epoch[16], start_sample[16];
	/* options and values in the agent's spelling (build_command()); NULL: none */
	const char *const arguments[][2] = {
		{ "--dataset", r->dataset },
		{ "--index", r->index[0] ? r->index : "imagefolder" },
		{ "--seed", seed },
		{ "--epochs", epochs },
		{ "--start-epoch", start_epoch },
		{ "--start-sample", start_sample },
		{ "--step-tasks", step_tasks },
		{ "--step-distribution", distribution },
		{ r->shuffle ? NULL : "--no-shuffle", NULL },
		{ r->set_epoch ? NULL : "--no-set-epoch", NULL },
		{ r->drop_last ? "--drop-last" : NULL, NULL },
	};
	size_t used;

	snprintf(seed, sizeof(seed), "%lld", (long long)r->seed);
	snprintf(epochs, sizeof(epochs), "%u", r->epochs);
	snprintf(start_epoch, sizeof(start_epoch), "%u", r->start_epoch);
	snprintf(start_sample, sizeof(start_sample), "%u", r->start_sample);
	used = (size_t)snprintf(out, size, "%llu", generation);
	for (size_t i = 0; i < sizeof(arguments) / sizeof(arguments[0]); i++) {
		for (int j = 0; j < 2 && arguments[i][j]; j++) {
			/* the agent reads one argument a line; here 0x1f separates them */
			if (strpbrk(arguments[i][j], forbidden)) {
				snprintf(why, why_size,
				         "'%.100s' holds a line break or a 0x1f byte",
				         arguments[i][j]);
				return -1;
			}
			if (used < size)
				used += (size_t)snprintf(out + used, size - used, "%c%s",
				                         NOPFS_PLAN_SEPARATOR, arguments[i][j]);
		}
	}
	if (used >= size) {
		snprintf(why, why_size, "its description is too long");
		return -1;
	}
	return 0;
}

/* An option and its value. */
static void add_option(struct command *c, const char *option, const char *value)
{
	add(c, option);
	add(c, value);
}

/*
 * The agent step's command line. @c->token names the agents' private places
 * (runtime and stage directories, SSD tiers, node reports); it reaches them
 * in their environment only (build_env()), which other users cannot read.
 * @uid: the job's user, whose directory under cache_base the job prolog made.
 */
static void build_command(uint32_t job, const struct step_layout *layout, uid_t uid,
                          struct command *c)
{
	const struct spank_request *r = &nopfs_request;
	int tier_count;
	char *slash;

	snprintf(c->job, sizeof(c->job), "%u", job);
	snprintf(c->jobid, sizeof(c->jobid), "--jobid=%u", job);
	snprintf(c->nodes, sizeof(c->nodes), "%u", layout->node_count);
	snprintf(c->seed, sizeof(c->seed), "%lld", (long long)r->seed);
	snprintf(c->epochs, sizeof(c->epochs), "%u", r->epochs);
	/* the agents wait for node 0's scan as long as the tasks wait for them */
	snprintf(c->scan_timeout, sizeof(c->scan_timeout), "%u", nopfs_config.ready_timeout);
	snprintf(c->start_epoch, sizeof(c->start_epoch), "%u", r->start_epoch);
	snprintf(c->start_sample, sizeof(c->start_sample), "%u", r->start_sample);
	snprintf(c->log, sizeof(c->log), "/tmp/nopfs-%u.%s/agent.log", job, c->token);
	snprintf(c->summary, sizeof(c->summary), "/tmp/nopfs-%u.%s/%s", job, c->token,
	         EPILOG_SUMMARY_NAME);
	snprintf(c->agent, sizeof(c->agent), "%s/nopfs-agent", nopfs_config.bindir);
	snprintf(c->node_report, sizeof(c->node_report), "%s.%s.node-%%n", r->report, c->token);
	memcpy(c->share, r->report, sizeof(c->share));
	slash = strrchr(c->share, '/');
	if (slash && slash != c->share)
		*slash = '\0';
	else
		strcpy(c->share, "/");

	add(c, nopfs_config.srun);
	add(c, "--overlap");
	add(c, c->jobid);
	add_option(c, "-w", layout->nodes);
	add_option(c, "-N", c->nodes);
	add_option(c, "-n", c->nodes);
	add(c, "--ntasks-per-node=1");
	add(c, "--mpi=pmix");
	add_option(c, "-J", AGENT_STEP_NAME);
	add(c, "--input=none");
	add(c, "--kill-on-bad-exit=0");
	add(c, "--quiet");
	add(c, c->agent);
	add_option(c, "--job-id", c->job);
	/* in the order of companion_signature() */
	add_option(c, "--dataset", r->dataset);
	add_option(c, "--seed", c->seed);
	add_option(c, "--epochs", c->epochs);
	add_option(c, "--start-epoch", c->start_epoch);
	add_option(c, "--start-sample", c->start_sample);
	add_option(c, "--step-tasks", layout->tasks_per_node);
	add_option(c, "--step-distribution", layout->distribution);
	if (r->index[0])
		add_option(c, "--index", r->index);
	if (!r->shuffle)
		add(c, "--no-shuffle");
	if (!r->set_epoch)
		add(c, "--no-set-epoch");
	if (r->drop_last)
		add(c, "--drop-last");
	if (r->verbose)
		add(c, "--verbose");
	if (r->verify)
		add(c, "--verify");
	/*
	 * Only here, at the agents' start: a later step's description
	 * (companion_plan()) carries no validation set, and a later step with
	 * another one reads it from the PFS (tasks.c).
	 */
	if (r->val_dataset[0])
		add_option(c, "--val-dataset", r->val_dataset);
	if (r->val_dataset[0] && r->val_all)
		add_option(c, "--val-sampler", "all");
	tier_count = tier_arguments(r->tiers[0] ? r->tiers : nopfs_config.tiers, c);
	for (int i = 0; i < tier_count; i++)
		add_option(c, "--tier", c->tiers[i]);
	add_option(c, "--report", c->node_report);
	add_option(c, "--merged-report", r->report);
	add(c, "--drop-node-reports");
	add_option(c, "--share-dir", c->share);
	add_option(c, "--log", c->log);
	if (nopfs_config.ready_timeout > 0)
		add_option(c, "--scan-timeout", c->scan_timeout);
	if (nopfs_config.probe_cache[0])
		add_option(c, "--probe-cache", nopfs_config.probe_cache);
	if (nopfs_config.max_sample_size[0])
		add_option(c, "--max-sample-size", nopfs_config.max_sample_size);
	if (nopfs_config.admin_comment)
		add_option(c, "--summary", c->summary);
	/* options_finish() refused --nopfs-keep=yes without cache_base */
	if (r->keep && nopfs_config.cache_base[0]) {
		snprintf(c->keep_dir, sizeof(c->keep_dir), "%s/%u", nopfs_config.cache_base,
		         (unsigned int)uid);
		add_option(c, "--keep-dir", c->keep_dir);
	}
	c->argv[c->argc] = NULL;
}

static bool is_scrubbed(const char *entry)
{
	size_t length = strcspn(entry, "=");

	if (strncmp(entry, "SLURM_SPANK_", 12) == 0 || strncmp(entry, "_SLURM_SPANK_", 13) == 0 ||
	    strncmp(entry, NOPFS_SPANK_GUARD "=", strlen(NOPFS_SPANK_GUARD) + 1) == 0)
		return true; /* forwarded options: not for the agents */
	for (int i = 0; scrubbed[i]; i++)
		if (strlen(scrubbed[i]) == length && strncmp(entry, scrubbed[i], length) == 0)
			return true;
	return false;
}

/*
 * @env without what the companion must not inherit, plus the guard and
 * @token_env (the job's token for the agents), NULL if no memory.
 */
static char **build_env(char *const *env, char *token_env)
{
	size_t count = 0, kept = 0;
	char **out;

	while (env && env[count])
		count++;
	out = calloc(count + 3, sizeof(*out));
	if (!out)
		return NULL;
	for (size_t i = 0; i < count; i++)
		if (!is_scrubbed(env[i]))
			out[kept++] = env[i];
	out[kept++] = NOPFS_SPANK_GUARD "=1";
	out[kept++] = token_env;
	out[kept] = NULL;
	return out;
}

/* The srun of one attempt (async-signal-safe calls only, as below). */
static void exec_child(const struct command *c, char **env)
{
	static const char failed[] = PLUGIN_NAME ": cannot run srun (plugstack.conf srun=)\n";

	execve(c->argv[0], (char *const *)c->argv, env);
	if (write(STDERR_FILENO, failed, sizeof(failed) - 1) < 0)
		_exit(126);
	_exit(127);
}

static void say_again(int log_fd)
{
	static const char again[] = PLUGIN_NAME ": the agent step asks to be started again\n";

	if (write(log_fd, again, sizeof(again) - 1) < 0)
		return; /* the log is gone: start it again all the same */
}

/*
 * The child's part: async-signal-safe calls only (the parent has threads).
 * In slurmstepd the user's ids are only the effective ones: srun must run as
 * the user entirely. The agent step is run again when it ends asking for it
 * (its agents never reached each other: NOPFS_AGENT_EXIT_RETRY).
 */
static void supervise(const struct command *c, char **env, int null_fd, int log_fd, uid_t uid,
                      gid_t gid)
{
	int status = 0;

	if ((getgid() != gid && setresgid(gid, gid, gid) != 0) ||
	    (getuid() != uid && setresuid(uid, uid, uid) != 0))
		_exit(126);
	setsid();
	/* stdin and stdout /dev/null, stderr the log; nothing else of srun's or slurmstepd's */
	dup2(null_fd, STDIN_FILENO);
	dup2(null_fd, STDOUT_FILENO);
	dup2(log_fd >= 0 ? log_fd : null_fd, STDERR_FILENO);
	close_range(3, ~0U, 0);
	for (int attempt = 1; attempt <= STEP_ATTEMPTS; attempt++) {
		pid_t srun = fork();

		if (srun < 0)
			_exit(126);
		if (srun == 0)
			exec_child(c, env);
		while (waitpid(srun, &status, 0) < 0)
			if (errno != EINTR)
				_exit(126);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != NOPFS_AGENT_EXIT_RETRY)
			break;
		if (attempt < STEP_ATTEMPTS && log_fd >= 0)
			say_again(STDERR_FILENO);
	}
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

int companion_start(uint32_t job, const struct step_layout *layout, char *const *env, int log_fd,
                    bool detach, pid_t *pid)
{
	struct command *c = calloc(1, sizeof(*c));
	char **child_env = NULL;
	int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC), rc = -1, status;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	pid_t child;

	if (c && nopfs_token_make(c->token) != NOPFS_OK) {
		user_error("cannot start the agent step: no random token: %m");
		goto out;
	}
	if (c) {
		snprintf(c->token_env, sizeof(c->token_env), "%s=%s", NOPFS_ENV_AGENT_TOKEN,
		         c->token);
		child_env = build_env(env, c->token_env);
	}
	if (!c || !child_env || null_fd < 0) {
		user_error("cannot start the agent step: %s",
		           null_fd < 0 ? strerror(errno) : "out of memory");
		goto out;
	}
	build_command(job, layout, uid, c);
	for (int i = 0; i < c->argc && log_fd >= 0; i++) /* the log says what ran */
		dprintf(log_fd, "%s%s", c->argv[i], i + 1 < c->argc ? " " : "\n");
	child = fork();
	if (child < 0) {
		user_error("cannot start the agent step: %m");
		goto out;
	}
	if (child == 0) {
		if (detach && fork() != 0)
			_exit(0); /* the grandchild runs it, a child of init */
		supervise(c, child_env, null_fd, log_fd, uid, gid);
	}
	if (detach) {
		waitpid(child, &status, 0);
		child = 0;
	}
	*pid = child;
	rc = 0;
out:
	if (null_fd >= 0)
		close(null_fd);
	free(child_env);
	free(c);
	return rc;
}
