/*
 * The user's options: --nopfs-* on srun, sbatch and salloc (an sbatch or
 * salloc option reaches every srun of the job), or SLURM_NOPFS_* in the
 * environment. Every value is checked where the user typed it, before a
 * step exists; a bad one fails the command with a message naming it.
 * Callbacks are idempotent: Slurm calls them more than once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "plugin.h"
#include "plan/tierspec.h"
#include "common/units.h"

enum option_id {
	OPT_DATASET = 0,
	OPT_SEED,
	OPT_EPOCHS,
	OPT_INDEX,
	OPT_TIERS,
	OPT_REPORT,
	OPT_PRELOAD,
	OPT_SHUFFLE,
	OPT_DROP_LAST,
	OPT_VERBOSE,
	OPT_PLAN,
	OPT_START_EPOCH,
	OPT_START_SAMPLE,
	OPT_VERIFY,
	OPT_START,
	OPT_SET_EPOCH,
	OPT_KEEP,
	OPT_VAL_DATASET,
	OPT_VAL_SAMPLER,
	OPT_COUNT
};

_Static_assert(OPT_COUNT <= sizeof(nopfs_request.given) / sizeof(nopfs_request.given[0]),
               "struct spank_request's given[] has a flag per option");

static const char *const env_names[OPT_COUNT] = {
	"SLURM_NOPFS_DATASET",      "SLURM_NOPFS_SEED",    "SLURM_NOPFS_EPOCHS",
	"SLURM_NOPFS_INDEX",        "SLURM_NOPFS_TIERS",   "SLURM_NOPFS_REPORT",
	"SLURM_NOPFS_PRELOAD",      "SLURM_NOPFS_SHUFFLE", "SLURM_NOPFS_DROP_LAST",
	"SLURM_NOPFS_VERBOSE",      "SLURM_NOPFS_PLAN",    "SLURM_NOPFS_START_EPOCH",
	"SLURM_NOPFS_START_SAMPLE", "SLURM_NOPFS_VERIFY",  "SLURM_NOPFS_START",
	"SLURM_NOPFS_SET_EPOCH",    "SLURM_NOPFS_KEEP",    "SLURM_NOPFS_VAL_DATASET",
	"SLURM_NOPFS_VAL_SAMPLER",
};

static int option_cb(int val, const char *optarg, int remote);

static struct spank_option options[OPT_COUNT + 1] = {
	{ "nopfs-dataset", "DIR",
	  "nopfs: stage the dataset under DIR on the job's nodes (turns nopfs on)", 1, OPT_DATASET,
	  option_cb },
	{ "nopfs-seed", "S", "nopfs: the DistributedSampler seed of the script (default 0)", 1,
	  OPT_SEED, option_cb },
	{ "nopfs-epochs", "E", "nopfs: epochs the script runs (default 1)", 1, OPT_EPOCHS,
	  option_cb },
	{ "nopfs-index", "imagefolder|list:FILE",
	  "nopfs: sample order: torchvision ImageFolder (default) or FILE's lines", 1, OPT_INDEX,
	  option_cb },
	{ "nopfs-tiers", "SPEC", "nopfs: node storage to use, e.g. ram:30%,ssd:100G", 1, OPT_TIERS,
	  option_cb },
	{ "nopfs-report", "PATH", "nopfs: where the job report goes (default ./nopfs-JOBID.json)",
	  1, OPT_REPORT, option_cb },
	{ "nopfs-preload", "yes|no",
	  "nopfs: serve the script's open() calls via LD_PRELOAD (default yes)", 1, OPT_PRELOAD,
	  option_cb },
	{ "nopfs-shuffle", "yes|no", "nopfs: the sampler shuffles (default yes)", 1, OPT_SHUFFLE,
	  option_cb },
	{ "nopfs-drop-last", NULL, "nopfs: the sampler has drop_last=True", 0, OPT_DROP_LAST,
	  option_cb },
	{ "nopfs-verbose", NULL, "nopfs: the agents log debug messages", 0, OPT_VERBOSE,
	  option_cb },
	{ "nopfs-plan", "yes|no",
	  "nopfs: the job's running agents re-plan for this step (default yes; no: use them as "
	  "they are, e.g. for a helper step)",
	  1, OPT_PLAN, option_cb },
	{ "nopfs-start-epoch", "K",
	  "nopfs: a resumed job: the script runs epochs K to E-1 of --nopfs-epochs=E (default 0)",
	  1, OPT_START_EPOCH, option_cb },
	{ "nopfs-start-sample", "P",
	  "nopfs: a resume within epoch K: each rank's sampler starts at its P-th index "
	  "(default 0)",
	  1, OPT_START_SAMPLE, option_cb },
	{ "nopfs-verify", "yes|no",
	  "nopfs: check every copy of a sample against the CRC32C of its first read; one that "
	  "differs is not served (default no)",
	  1, OPT_VERIFY, option_cb },
	{ "nopfs-start", "ready|early",
	  "nopfs: the tasks start once their node's agent serves (ready, the default), or at "
	  "once, reading the PFS until it does and waiting only for its dataset listing at their "
	  "first look at the dataset (early)",
	  1, OPT_START, option_cb },
	{ "nopfs-set-epoch", "yes|no",
	  "nopfs: the script calls set_epoch() every epoch (default yes; no: every epoch in epoch "
	  "0's order)",
	  1, OPT_SET_EPOCH, option_cb },
	{ "nopfs-keep", "yes|no",
	  "nopfs: keep what the agents staged on each node for your next job on the same dataset "
	  "(the cluster's plugstack.conf cache_base; default no)",
	  1, OPT_KEEP, option_cb },
	{ "nopfs-val-dataset", "DIR",
	  "nopfs: the validation set's root as the script names it, read after every epoch: "
	  "each node keeps its ranks' share after the first pass",
	  1, OPT_VAL_DATASET, option_cb },
	{ "nopfs-val-sampler", "distributed|all",
	  "nopfs: how the script reads the validation set: DistributedSampler(shuffle=False), "
	  "each rank its share (distributed, the default), or every rank all of it (all)",
	  1, OPT_VAL_SAMPLER, option_cb },
	SPANK_OPTIONS_TABLE_END
};

struct spank_request nopfs_request = {
	.epochs = 1, .preload = true, .shuffle = true, .plan = true, .set_epoch = true
};

/* Where a value came from, for messages: "--nopfs-seed" or "SLURM_NOPFS_SEED". */
static void origin(enum option_id id, bool from_env, char *buffer, size_t size)
{
	if (from_env)
		snprintf(buffer, size, "%s", env_names[id]);
	else
		snprintf(buffer, size, "--%s", options[id].name);
}

static int parse_yes_no(const char *value, bool *result)
{
	if (strcmp(value, "yes") == 0)
		*result = true;
	else if (strcmp(value, "no") == 0)
		*result = false;
	else
		return -1;
	return 0;
}

/* An existing directory the user can list and read, made absolute. */
static int check_dataset(const char *what, const char *value, char *resolved)
{
	struct stat st;

	if (value[0] == '\0') {
		user_error("%s: no directory given", what);
		return -1;
	}
	if (stat(value, &st) != 0) {
		user_error("%s=%s: %s", what, value,
		           errno == ENOENT ? "no such directory" : strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		user_error("%s=%s: is a file, not a directory", what, value);
		return -1;
	}
	if (access(value, R_OK | X_OK) != 0) {
		user_error("%s=%s: you cannot read this directory", what, value);
		return -1;
	}
	if (!realpath(value, resolved) || strlen(resolved) >= PATH_MAX - 1) {
		user_error("%s=%s: cannot resolve the path: %m", what, value);
		return -1;
	}
	return 0;
}

static int check_seed(const char *what, const char *value, uint64_t *seed)
{
	char *end;

	errno = 0;
	if (value[0] == '-') {
		long long negative = strtoll(value, &end, 10);

		*seed = (uint64_t)negative;
	} else {
		*seed = strtoull(value, &end, 10);
	}
	if (value[0] == '\0' || *end != '\0' || errno != 0 || value[0] == '+' || value[0] == ' ') {
		user_error("%s=%s: not a seed; accepted: a whole number (torch's manual seed)",
		           what, value);
		return -1;
	}
	return 0;
}

static int check_epochs(const char *what, const char *value, uint32_t *epochs)
{
	uint64_t parsed;

	if (nopfs_parse_uint(value, 1, 1000000, &parsed) != NOPFS_OK) {
		user_error("%s=%s: not an epoch count; accepted: a whole number from 1 to 1000000",
		           what, value);
		return -1;
	}
	*epochs = (uint32_t)parsed;
	return 0;
}

static int check_index(const char *what, const char *value, char *index, size_t size)
{
	char resolved[PATH_MAX];

	if (strcmp(value, "imagefolder") == 0) {
		snprintf(index, size, "imagefolder");
		return 0;
	}
	if (strncmp(value, "list:", 5) != 0 || value[5] == '\0') {
		user_error("%s=%s: accepted: imagefolder or list:FILE", what, value);
		return -1;
	}
	if (access(value + 5, R_OK) != 0 || !realpath(value + 5, resolved)) {
		user_error("%s=%s: cannot read the list file: %m", what, value);
		return -1;
	}
	snprintf(index, size, "list:%s", resolved);
	return 0;
}

/* A tier list as the agent takes it; "ssd:SIZE" needs the admin's ssd_base. */
static int check_tiers(const char *what, const char *value, struct nopfs_tier_list *list)
{
	nopfs_status status;

	memset(list, 0, sizeof(*list));
	status = nopfs_tierspec_parse(value, what, false, list); /* logs what is wrong */
	if (status != NOPFS_OK)
		return -1;
	for (unsigned int i = 0; i < list->count; i++) {
		const struct nopfs_tier_spec *tier = &list->tier[i];

		if (tier->kind == NOPFS_TIER_RAM && tier->is_percent &&
		    tier->percent > nopfs_config.ram_max_percent) {
			user_error("%s=%s: ram:%g%% is more than this cluster allows (%g%% of a "
			           "node's memory)",
			           what, value, tier->percent, nopfs_config.ram_max_percent);
			return -1;
		}
		if (tier->kind == NOPFS_TIER_SSD && tier->path[0] == '\0' &&
		    nopfs_config.ssd_base[0] == '\0') {
			user_error("%s=%s: this cluster has no node-local SSD directory "
			           "(plugstack.conf "
			           "ssd_base); name one: ssd:DIR:SIZE",
			           what, value);
			return -1;
		}
	}
	return 0;
}

/* The report file: its directory exists and is writable; it is not a directory. */
static int check_report(const char *what, const char *value, char *report)
{
	char directory[PATH_MAX], cwd[PATH_MAX];
	struct stat st;
	char *slash;

	if (value[0] == '\0') {
		user_error("%s: no path given", what);
		return -1;
	}
	if (value[0] == '/') {
		snprintf(directory, sizeof(directory), "%s", value);
	} else if (!getcwd(cwd, sizeof(cwd)) || snprintf(directory, sizeof(directory), "%s/%s", cwd,
	                                                 value) >= (int)sizeof(directory)) {
		user_error("%s=%s: path too long", what, value);
		return -1;
	}
	snprintf(report, PATH_MAX, "%s", directory);
	if (stat(report, &st) == 0 && S_ISDIR(st.st_mode)) {
		user_error("%s=%s: is a directory; name the report file", what, value);
		return -1;
	}
	slash = strrchr(directory, '/');
	if (slash == directory)
		slash[1] = '\0';
	else
		*slash = '\0';
	if (stat(directory, &st) != 0 || !S_ISDIR(st.st_mode)) {
		user_error("%s=%s: directory '%s' does not exist", what, value, directory);
		return -1;
	}
	if (access(directory, W_OK | X_OK) != 0) {
		user_error("%s=%s: you cannot write to directory '%s'", what, value, directory);
		return -1;
	}
	return 0;
}

/* Check and record @value of option @id; @remote: no file checks (slurmstepd). */
static int apply(enum option_id id, const char *value, bool from_env, int remote)
{
	struct spank_request *r = &nopfs_request;
	struct nopfs_tier_list tiers;
	char what[64], resolved[PATH_MAX];
	uint64_t parsed;
	bool flag;

	origin(id, from_env, what, sizeof(what));
	if (!value)
		value = "";
	switch (id) {
	case OPT_DATASET:
		if (remote) {
			snprintf(r->dataset, sizeof(r->dataset), "%s", value);
		} else {
			if (check_dataset(what, value, resolved) != 0)
				return -1;
			strcpy(r->dataset, resolved);
		}
		r->active = true;
		break;
	case OPT_VAL_DATASET:
		/* as --nopfs-dataset: srun resolves it, slurmstepd keeps it as typed */
		if (remote) {
			snprintf(r->val_dataset, sizeof(r->val_dataset), "%s", value);
		} else {
			if (check_dataset(what, value, resolved) != 0)
				return -1;
			strcpy(r->val_dataset, resolved);
		}
		break;
	case OPT_VAL_SAMPLER:
		if (strcmp(value, "distributed") != 0 && strcmp(value, "all") != 0) {
			user_error("%s=%s: accepted: distributed or all", what, value);
			return -1;
		}
		r->val_all = !strcmp(value, "all");
		break;
	case OPT_SEED:
		if (check_seed(what, value, &r->seed) != 0)
			return -1;
		break;
	case OPT_EPOCHS:
		if (check_epochs(what, value, &r->epochs) != 0)
			return -1;
		break;
	case OPT_START_EPOCH:
		if (nopfs_parse_uint(value, 0, 999999, &parsed) != NOPFS_OK) {
			user_error("%s=%s: not an epoch; accepted: a whole number from 0 to 999999 "
			           "(the script's first epoch in this job)",
			           what, value);
			return -1;
		}
		r->start_epoch = (uint32_t)parsed;
		break;
	case OPT_START_SAMPLE:
		if (nopfs_parse_uint(value, 0, UINT32_MAX - 1, &parsed) != NOPFS_OK) {
			user_error("%s=%s: not a sample index; accepted: a whole number from 0 to "
			           "4294967294 (the index in each rank's stream of epoch K where "
			           "the script resumes)",
			           what, value);
			return -1;
		}
		r->start_sample = (uint32_t)parsed;
		break;
	case OPT_INDEX:
		if (remote)
			snprintf(r->index, sizeof(r->index), "%s", value);
		else if (check_index(what, value, r->index, sizeof(r->index)) != 0)
			return -1;
		break;
	case OPT_TIERS:
		if (strlen(value) >= sizeof(r->tiers)) {
			user_error("%s: the tier list is too long", what);
			return -1;
		}
		if (!remote && check_tiers(what, value, &tiers) != 0)
			return -1;
		strcpy(r->tiers, value);
		break;
	case OPT_REPORT:
		if (remote)
			snprintf(r->report, sizeof(r->report), "%s", value);
		else if (check_report(what, value, r->report) != 0)
			return -1;
		break;
	case OPT_PRELOAD:
	case OPT_SHUFFLE:
	case OPT_PLAN:
	case OPT_VERIFY:
	case OPT_SET_EPOCH:
	case OPT_KEEP:
		if (parse_yes_no(value, &flag) != 0) {
			user_error("%s=%s: accepted: yes or no", what, value);
			return -1;
		}
		if (id == OPT_PRELOAD)
			r->preload = flag;
		else if (id == OPT_SHUFFLE)
			r->shuffle = flag;
		else if (id == OPT_VERIFY)
			r->verify = flag;
		else if (id == OPT_SET_EPOCH)
			r->set_epoch = flag;
		else if (id == OPT_KEEP)
			r->keep = flag;
		else
			r->plan = flag;
		break;
	case OPT_START:
		if (strcmp(value, "ready") != 0 && strcmp(value, "early") != 0) {
			user_error("%s=%s: accepted: ready or early", what, value);
			return -1;
		}
		r->early = !strcmp(value, "early");
		break;
	case OPT_DROP_LAST:
	case OPT_VERBOSE:
		if (from_env && parse_yes_no(value, &flag) != 0) {
			user_error("%s=%s: accepted: yes or no", what, value);
			return -1;
		}
		if (!from_env)
			flag = true;
		if (id == OPT_DROP_LAST)
			r->drop_last = flag;
		else
			r->verbose = flag;
		break;
	default:
		return -1;
	}
	r->given[id] = true;
	return 0;
}

static int option_cb(int val, const char *optarg, int remote)
{
	if (val < 0 || val >= OPT_COUNT)
		return -1;
	return apply((enum option_id)val, optarg, false, remote);
}

int options_register(spank_t sp)
{
	for (int i = 0; i < OPT_COUNT; i++)
		if (spank_option_register(sp, &options[i]) != ESPANK_SUCCESS) {
			user_error("cannot register option --%s", options[i].name);
			return -1;
		}
	return 0;
}

int options_finish(spank_t sp)
{
	struct spank_request *r = &nopfs_request;
	struct nopfs_tier_list tiers;
	bool any = false;

	for (int i = 0; i < OPT_COUNT; i++) {
		const char *value = getenv(env_names[i]);

		if (!r->given[i] && value && apply((enum option_id)i, value, true, 0) != 0)
			return -1;
		any = any || r->given[i];
	}
	if (getenv(NOPFS_SPANK_GUARD)) {
		r->active = false; /* the agents' own step */
		return 0;
	}
	if (!any)
		return 0;
	if (nopfs_config.error[0]) {
		user_error("%s", nopfs_config.error);
		return -1;
	}
	if (!nopfs_config.enabled) {
		user_error("nopfs is disabled on this cluster (plugstack.conf enable=no)");
		return -1;
	}
	if (!r->active) {
		for (int i = 0; i < OPT_COUNT; i++)
			if (r->given[i]) {
				user_error("--%s needs --nopfs-dataset", options[i].name);
				return -1;
			}
	}
	if (r->given[OPT_VAL_SAMPLER] && !r->given[OPT_VAL_DATASET]) {
		user_error("--nopfs-val-sampler needs --nopfs-val-dataset (the validation set it "
		           "describes)");
		return -1;
	}
	/* one catalog, one plan and one count per root: a set cannot be both */
	if (r->given[OPT_VAL_DATASET] && strcmp(r->val_dataset, r->dataset) == 0) {
		user_error("--nopfs-val-dataset and --nopfs-dataset are the same directory, %s: "
		           "name the validation set's own root",
		           r->val_dataset);
		return -1;
	}
	if (r->start_epoch >= r->epochs) {
		user_error("--nopfs-start-epoch=%u is not below --nopfs-epochs=%u: give the "
		           "script's total epochs, the job runs %u to E-1",
		           r->start_epoch, r->epochs, r->start_epoch);
		return -1;
	}
	if (r->keep && nopfs_config.cache_base[0] == '\0') {
		user_error("--nopfs-keep=yes: this cluster keeps no caches between jobs "
		           "(plugstack.conf has no cache_base)");
		return -1;
	}
	if (r->given[OPT_SEED] && !r->shuffle) {
		user_error("--nopfs-seed conflicts with --nopfs-shuffle=no: a sampler that does "
		           "not shuffle uses no seed");
		return -1;
	}
	if (!r->given[OPT_TIERS] &&
	    check_tiers("plugstack.conf tiers", nopfs_config.tiers, &tiers) != 0)
		return -1;
	return 0;
}
