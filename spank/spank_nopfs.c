/*
 * spank_nopfs: Slurm's hooks, each handed to the module of its context.
 *   init            every context: the log sink, plugstack.conf arguments, the
 *                   options
 *   init_post_opt   srun/sbatch/salloc: environment equivalents, checks
 *   local_user_init srun: start or reuse the job's agent step
 *   user_init       slurmstepd: at a batch job's start, start its agent step;
 *                   for a step's tasks, wait for the node's agent and set
 *                   their environment
 *   exit            srun that created the job, or salloc: print the job report
 *   job_prolog      slurmd (root): with cache_base, the user's directory of
 *                   kept caches
 *   job_epilog      slurmd (root): remove what the job left on the node, and
 *                   the kept caches the limits say
 * Nothing here may take srun or slurmstepd down: errors are messages, and
 * only a bad option (or a broken configuration when nopfs is asked for)
 * fails the command, before any job or step exists.
 */
#include <stdlib.h>

#include "common/log.h"
#include "launch.h"
#include "plugin.h"

SPANK_PLUGIN(nopfs, 1);

struct spank_config nopfs_config;

/* The libraries' messages (common/log.h) go to Slurm's log, "nopfs: ..." */
static void slurm_sink(nopfs_log_level level, const char *message, void *arg)
{
	if (level == NOPFS_LOG_ERROR)
		user_error("%s", message);
	else if (level == NOPFS_LOG_WARNING)
		user_info("warning: %s", message);
	else if (level == NOPFS_LOG_INFO)
		user_info("%s", message);
	else
		slurm_debug(PLUGIN_NAME ": %s", message);
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t context = spank_context();

	nopfs_log_set_sink(slurm_sink, NULL, NOPFS_LOG_DEBUG);
	config_parse(&nopfs_config, ac, av);
	if (context == S_CTX_LOCAL)
		nopfs_launch.owns_allocation = getenv("SLURM_JOB_ID") == NULL;
	if (context == S_CTX_LOCAL || context == S_CTX_ALLOCATOR || context == S_CTX_REMOTE)
		return options_register(sp);
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	spank_context_t context = spank_context();

	/*
	 * Slurm ignores what an "optional" plugin's hooks return, so a bad
	 * combination of options ends the command here, the way srun ends on
	 * a bad option of its own: nothing has been allocated or launched yet.
	 */
	if ((context == S_CTX_LOCAL || context == S_CTX_ALLOCATOR) && options_finish(sp) != 0)
		exit(1);
	return 0;
}

int slurm_spank_local_user_init(spank_t sp, int ac, char **av)
{
	return launch_agents(sp);
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	if (!spank_remote(sp))
		return 0;
	launch_agents_for_batch(sp);
	return tasks_prepare(sp);
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	if (spank_context() == S_CTX_LOCAL)
		report_print(sp);
	else if (spank_context() == S_CTX_ALLOCATOR)
		report_print_for_salloc(sp);
	return 0;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	/* as in the epilog: no slurm_spank_init in the job script context */
	config_parse(&nopfs_config, ac, av);
	prolog_prepare(sp);
	return 0; /* never fails the prolog, which would drain the node */
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	/* slurm_spank_init is not called in the job script context: read the keys here. */
	config_parse(&nopfs_config, ac, av);
	epilog_clean(sp);
	return 0;
}
