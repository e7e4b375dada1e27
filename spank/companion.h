/* The agent step's srun ("companion"): its command line, environment and start. */
#ifndef NOPFS_SPANK_COMPANION_H
#define NOPFS_SPANK_COMPANION_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define AGENT_STEP_NAME "nopfs-agent"

/* The training step the agents plan for. */
struct step_layout {
	char nodes[4096]; /* Slurm hostlist */
	unsigned int node_count;
	char tasks_per_node[256]; /* Slurm's form: 2(x3),1 */
	char distribution[64];    /* as the agent takes it: block, cyclic, plane=N */
};

/*
 * Start the companion srun for @job with the user's options (nopfs_request),
 * in the environment @env (scrubbed of the step's task counts and forwarded
 * options, with the recursion guard added), its stderr on @log_fd, detached
 * (new session, stdin and stdout /dev/null). @detach: fork twice so that it
 * is not the caller's child (slurmstepd). The companion's pid in *pid (the
 * caller's child; 0 when detached). 0 on success, -1 (logged) if not.
 */
int companion_start(uint32_t job, const struct step_layout *layout, char *const *env, int log_fd,
                    bool detach, pid_t *pid);

/*
 * The part of the agent's command line that must match for a step to use
 * the agents as planned (dataset, sampler, epochs, layout), into @buffer.
 */
void companion_signature(const struct step_layout *layout, char *buffer, size_t size);

/* Longest --step-tasks a re-planning step's description carries. */
#define STEP_TASKS_MAX 8192

/*
 * --step-tasks for a step the agents re-plan for: the step's tasks per node
 * (@tasks_per_node, Slurm's form "2(x3),1", over @step_nodes in order) put
 * on the agent step's nodes (@agent_nodes, in its order), 0 on those the
 * step does not use, into @out ("2,0,2"; runs in Slurm's form "2(x3)").
 * 0, or -1 with the reason in @why.
 */
int companion_step_tasks(char *const *agent_nodes, unsigned int agent_count,
                         char *const *step_nodes, unsigned int step_count,
                         const char *tasks_per_node, char *out, size_t size, char *why,
                         size_t why_size);

/*
 * NOPFS_SPANK_PLAN's value (see plugin.h) for plan generation @generation:
 * the user's options (nopfs_request) with @step_tasks (from
 * companion_step_tasks()) and @distribution, into @out. 0, or -1 with the
 * reason in @why (an argument the description cannot carry, too long).
 */
int companion_plan(unsigned long long generation, const char *step_tasks, const char *distribution,
                   char *out, size_t size, char *why, size_t why_size);

/* @distribution (SLURM_DISTRIBUTION, may be NULL) as the agent takes it; -1 if unsupported. */
int companion_distribution(const char *distribution, const char *plane_size, char *out,
                           size_t size);

#endif
