/*
 * spank_nopfs: the SPANK plugin. spank_nopfs.c dispatches each Slurm hook to
 * the module of its context; the modules share the two structs below, one
 * per plugin instance (srun, sbatch, salloc or slurmstepd process).
 */
#ifndef NOPFS_SPANK_PLUGIN_H
#define NOPFS_SPANK_PLUGIN_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <slurm/spank.h>

#define PLUGIN_NAME "nopfs"

/* In the companion step's environment: its srun and tasks leave nopfs alone. */
#define NOPFS_SPANK_GUARD "NOPFS_AGENT_STEP"
/*
 * Set by the launching srun for its tasks' slurmstepd: "JOB:FLAGS:DATASET",
 * FLAGS the sum of the bits below.
 */
#define NOPFS_SPANK_TASKS   "NOPFS_SPANK_TASKS"
#define NOPFS_TASKS_PRELOAD 1u /* --nopfs-preload=yes */
#define NOPFS_TASKS_EARLY   2u /* --nopfs-start=early */
#define NOPFS_TASKS_LAUNCH  4u /* this step started the agents: its tasks are plan 0's */
/*
 * Set with it when the step reads a validation set (--nopfs-val-dataset):
 * its root as srun resolved it, for the tasks' NOPFS_VAL_DATASET. A variable
 * of its own: a path may hold any byte but '\0', so it cannot be one more
 * field of NOPFS_SPANK_TASKS.
 */
#define NOPFS_SPANK_VAL_DATASET "NOPFS_SPANK_VAL_DATASET"
/*
 * Set with it when the job's agents plan for other options than the step's
 * and are to re-plan for it: the plan's generation (the step id + 1), then
 * for each of the agent's arguments, NOPFS_PLAN_SEPARATOR and the argument.
 * At most NOPFS_SPANK_PLAN_MAX bytes: two paths, --step-tasks, the rest.
 */
#define NOPFS_SPANK_PLAN     "NOPFS_SPANK_PLAN"
#define NOPFS_PLAN_SEPARATOR '\x1f'
#define NOPFS_SPANK_PLAN_MAX (2 * PATH_MAX + 12288)

/* plugstack.conf arguments (the admin's). */
struct spank_config {
	bool enabled;
	char bindir[PATH_MAX];  /* nopfs-agent, nopfs-report */
	char preload[PATH_MAX]; /* libnopfs_preload.so */
	char srun[PATH_MAX];
	char tiers[1024];        /* default tier list */
	double ram_max_percent;  /* largest share of node memory for RAM tiers */
	char ssd_base[PATH_MAX]; /* where "ssd:SIZE" tiers go */
	char probe_cache[PATH_MAX];
	char max_sample_size[32]; /* the agents' --max-sample-size, as given; "" for theirs */
	char report_dir[PATH_MAX];
	unsigned int ready_timeout; /* seconds a step waits for its agents */
	unsigned int report_wait;   /* seconds srun waits for the job report */
	bool admin_comment;         /* the epilog stores node 0's summary with the job */
	char sacctmgr[PATH_MAX];    /* how it stores it */
	char cache_base[PATH_MAX];  /* where kept caches go (CACHE_BASE/UID/KEY); "": none */
	uint64_t cache_limit;       /* the most bytes a node's kept caches take; 0: no limit */
	uint64_t cache_max_age;     /* seconds a kept cache may go unused; 0: no limit */
	char error[512];            /* not empty: the configuration is unusable */
};

/*
 * With admin_comment=yes, node 0's agent writes the job's one-line summary
 * in its runtime directory under this name; the job epilog stores it as the
 * job's AdminComment.
 */
#define EPILOG_SUMMARY_NAME "summary"

/* The user's options (command line or SLURM_NOPFS_* environment). */
struct spank_request {
	bool active;    /* --nopfs-dataset given */
	bool given[32]; /* by option (user_options.c) */
	char dataset[PATH_MAX];
	char val_dataset[PATH_MAX]; /* --nopfs-val-dataset, like dataset; "": none */
	uint64_t seed;
	uint32_t epochs;
	uint32_t start_epoch;  /* a resumed job's first epoch */
	uint32_t start_sample; /* and each rank's first index in it */
	bool verify;           /* the agents check copies by CRC32C */
	char index[PATH_MAX + 8];
	char tiers[1024];
	char report[PATH_MAX];
	bool preload;
	bool early; /* --nopfs-start=early: the tasks do not wait for the agents */
	bool plan;  /* running agents re-plan for the step */
	bool shuffle;
	bool set_epoch; /* false: every epoch in epoch 0's order */
	bool drop_last;
	bool verbose;
	bool keep;    /* --nopfs-keep=yes: the agents keep their caches under cache_base */
	bool val_all; /* --nopfs-val-sampler=all: every rank reads the whole validation set */
};

extern struct spank_config nopfs_config;
extern struct spank_request nopfs_request;

/* Every message to the user goes through these: "nopfs: ..." */
#define user_error(...) slurm_error(PLUGIN_NAME ": " __VA_ARGS__)
#define user_info(...)  slurm_info(PLUGIN_NAME ": " __VA_ARGS__)

/* config.c: parse the plugstack.conf arguments (problems go to .error). */
void config_parse(struct spank_config *config, int argc, char **argv);

/* options.c */
int options_register(spank_t sp);
/* Environment equivalents and cross-option checks once all are parsed (local). */
int options_finish(spank_t sp);

/* launch.c (srun, local): start or reuse the agent step; set the task env. */
int launch_agents(spank_t sp);
/* launch.c (the batch step's slurmstepd): start the agent step at job start. */
int launch_agents_for_batch(spank_t sp);
/* report.c (srun, local exit): wait for and print the job report. */
void report_print(spank_t sp);
/* report.c (salloc's exit): the same for the agents an srun inside started. */
void report_print_for_salloc(spank_t sp);
/* tasks.c (slurmstepd): wait for the node's agent (and its re-plan); the task environment. */
int tasks_prepare(spank_t sp);
/*
 * agents.c: call @each (may be NULL) for every agent process of @job owned
 * by @uid on this node; how many there are, -1 if /proc cannot be read.
 */
int agents_of_job(uint32_t job, uid_t uid, void (*each)(pid_t pid, void *arg), void *arg);
/*
 * agents.c: the command line of process @pid (its arguments, each ending in
 * NUL, cut after the last whole one that fits 3 paths and more; malloc'd),
 * their bytes in *@length; NULL when it cannot be read.
 */
char *agents_read_cmdline(pid_t pid, size_t *length);

/* prolog.c (slurmd, root): the job user's directory under cache_base. */
void prolog_prepare(spank_t sp);
/* epilog.c (slurmd, root): remove what the job left on this node; the kept caches' limits. */
void epilog_clean(spank_t sp);

#endif
