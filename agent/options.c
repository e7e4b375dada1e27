/* The agent's command line. */

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap.h"
#include "options.h"
#include "plan/layout.h"
#include "common/log.h"
#include "common/units.h"

static const char usage_text[] =
        "Usage: nopfs-agent --dataset DIR --world-size W --ranks LIST [options]\n"
        "\n"
        "Serve a training job's samples on this node from node-local tiers, staged\n"
        "ahead in each local rank's exact DistributedSampler order.\n"
        "\n"
        "Dataset:\n"
        "  --dataset DIR          dataset root (as the training script names it)\n"
        "  --index FORMAT         imagefolder (default) or list:FILE\n"
        "  --extensions LIST      file extensions for imagefolder (default: torchvision's)\n"
        "  --catalog-cache DIR    reuse a validated catalog cache\n"
        "Job:\n"
        "  --seed S               DistributedSampler seed (default 0)\n"
        "  --epochs E             epochs (default 1)\n"
        "  --world-size W         ranks of the training step\n"
        "  --ranks LIST           this node's ranks, e.g. 0,1 or 0-3\n"
        "  --drop-last            DistributedSampler(drop_last=True)\n"
        "  --no-shuffle           DistributedSampler(shuffle=False)\n"
        "  --job-id ID            names runtime files (default: standalone-PID)\n"
        "Tiers (fastest first; repeatable or comma-separated):\n"
        "  --tier ram:SIZE|ram:N%  node memory\n"
        "  --tier ssd:DIR:SIZE     a directory on node-local storage\n"
        "Runtime:\n"
        "  --runtime-dir DIR      socket and ready file (default /tmp/nopfs-ID)\n"
        "  --stage-dir DIR        tmpfs for staged copies and RAM (default /dev/shm/nopfs-ID)\n"
        "  --report PATH          per-node JSON report (default RUNTIME-DIR/report.json);\n"
        "                         %n in PATH is the node index\n"
        "  --merged-report PATH   node 0: merge every node's --report into this job\n"
        "                         report (needs %n in --report with several nodes)\n"
        "  --merge-wait SEC       how long node 0 waits for the others' (default 5)\n"
        "  --drop-node-reports    remove the node reports once in the job report\n"
        "  --log PATH             log file (default stderr); %n as in --report\n"
        "  --verbose              log debug messages\n"
        "  --stage-window N       samples staged ahead per rank (default 256)\n"
        "  --stage-threads N      staging threads (default 2)\n"
        "  --serve-timeout-ms MS  longest wait for one requested sample (default 5000)\n"
        "Self-probe:\n"
        "  --probe-budget SEC     time for measuring tiers and PFS (default 3)\n"
        "  --probe-cache DIR      reuse measurements younger than --probe-max-age\n"
        "  --probe-max-age SEC    (default 86400)\n"
        "Multi-node (the agents are the tasks of their own step, one per node):\n"
        "  --bootstrap MODE       pmix, or none (one node alone); default: pmix when\n"
        "                         started with a PMIx server, else none\n"
        "  --step-tasks LIST      tasks per node of the training step, Slurm's form\n"
        "                         (2(x3),1); with pmix, required\n"
        "  --step-distribution D  block (default), cyclic or plane=N\n"
        "  --share-dir DIR        a directory every node sees (on the PFS): node 0\n"
        "                         publishes the catalog there for the others\n"
        "  --fence-timeout SEC    give up a PMIx exchange after this (default 60)\n"
        "  --hello-timeout SEC    give up either of the step's first two fences after\n"
        "                         this and exit with status 75: start the step again\n"
        "                         (default 10)\n"
        "  --help\n"
        "\n"
        "Signals: TERM drains, writes the report and exits; USR1 writes the report;\n"
        "USR2 plans for the step in the newest RUNTIME-DIR/step-G: one per line, its\n"
        "--dataset, --index, --extensions, --seed, --epochs, --world-size and --ranks\n"
        "or --step-tasks and --step-distribution, --drop-last, --no-shuffle; the ready\n"
        "file then reads \"PID G\".\n";

enum {
	OPT_DATASET = 256,
	OPT_INDEX,
	OPT_EXTENSIONS,
	OPT_CATALOG_CACHE,
	OPT_SEED,
	OPT_EPOCHS,
	OPT_WORLD_SIZE,
	OPT_RANKS,
	OPT_DROP_LAST,
	OPT_NO_SHUFFLE,
	OPT_JOB_ID,
	OPT_TIER,
	OPT_RUNTIME_DIR,
	OPT_STAGE_DIR,
	OPT_REPORT,
	OPT_MERGED_REPORT,
	OPT_MERGE_WAIT,
	OPT_DROP_NODE_REPORTS,
	OPT_LOG,
	OPT_VERBOSE,
	OPT_STAGE_WINDOW,
	OPT_STAGE_THREADS,
	OPT_SERVE_TIMEOUT,
	OPT_PROBE_BUDGET,
	OPT_PROBE_CACHE,
	OPT_PROBE_MAX_AGE,
	OPT_BOOTSTRAP,
	OPT_STEP_TASKS,
	OPT_STEP_DISTRIBUTION,
	OPT_SHARE_DIR,
	OPT_FENCE_TIMEOUT,
	OPT_HELLO_TIMEOUT,
	OPT_HELP,
};

static const struct option long_options[] = {
	{ "dataset", required_argument, NULL, OPT_DATASET },
	{ "index", required_argument, NULL, OPT_INDEX },
	{ "extensions", required_argument, NULL, OPT_EXTENSIONS },
	{ "catalog-cache", required_argument, NULL, OPT_CATALOG_CACHE },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "epochs", required_argument, NULL, OPT_EPOCHS },
	{ "world-size", required_argument, NULL, OPT_WORLD_SIZE },
	{ "ranks", required_argument, NULL, OPT_RANKS },
	{ "drop-last", no_argument, NULL, OPT_DROP_LAST },
	{ "no-shuffle", no_argument, NULL, OPT_NO_SHUFFLE },
	{ "job-id", required_argument, NULL, OPT_JOB_ID },
	{ "tier", required_argument, NULL, OPT_TIER },
	{ "runtime-dir", required_argument, NULL, OPT_RUNTIME_DIR },
	{ "stage-dir", required_argument, NULL, OPT_STAGE_DIR },
	{ "report", required_argument, NULL, OPT_REPORT },
	{ "merged-report", required_argument, NULL, OPT_MERGED_REPORT },
	{ "merge-wait", required_argument, NULL, OPT_MERGE_WAIT },
	{ "drop-node-reports", no_argument, NULL, OPT_DROP_NODE_REPORTS },
	{ "log", required_argument, NULL, OPT_LOG },
	{ "verbose", no_argument, NULL, OPT_VERBOSE },
	{ "stage-window", required_argument, NULL, OPT_STAGE_WINDOW },
	{ "stage-threads", required_argument, NULL, OPT_STAGE_THREADS },
	{ "serve-timeout-ms", required_argument, NULL, OPT_SERVE_TIMEOUT },
	{ "probe-budget", required_argument, NULL, OPT_PROBE_BUDGET },
	{ "probe-cache", required_argument, NULL, OPT_PROBE_CACHE },
	{ "probe-max-age", required_argument, NULL, OPT_PROBE_MAX_AGE },
	{ "bootstrap", required_argument, NULL, OPT_BOOTSTRAP },
	{ "step-tasks", required_argument, NULL, OPT_STEP_TASKS },
	{ "step-distribution", required_argument, NULL, OPT_STEP_DISTRIBUTION },
	{ "share-dir", required_argument, NULL, OPT_SHARE_DIR },
	{ "fence-timeout", required_argument, NULL, OPT_FENCE_TIMEOUT },
	{ "hello-timeout", required_argument, NULL, OPT_HELLO_TIMEOUT },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

static bool copy_path(const char *option, const char *value, char *out, size_t length)
{
	if (value[0] == '\0' || strlen(value) >= length) {
		nopfs_error("--%s: '%s' is %s", option, value, value[0] ? "too long" : "empty");
		return false;
	}
	strcpy(out, value);
	return true;
}

static bool parse_seconds(const char *option, const char *value, double max, double *out)
{
	char *end;
	double seconds = strtod(value, &end);

	if (end == value || *end != '\0' || !(seconds >= 0) || seconds > max) {
		nopfs_error("--%s: '%s' is not a number of seconds in 0 .. %g", option, value, max);
		return false;
	}
	*out = seconds;
	return true;
}

static int compare_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* "0,1", "0-3", "0-1,4" -> sorted unique ranks. */
static bool parse_ranks(const char *value, struct agent_options *config)
{
	uint32_t *ranks = NULL;
	uint32_t count = 0, room = 0;
	const char *cursor = value;

	while (*cursor) {
		char *end;
		unsigned long first = strtoul(cursor, &end, 10), last;

		if (end == cursor || first > UINT32_MAX - 1)
			goto out_malformed;
		last = first;
		if (*end == '-') {
			cursor = end + 1;
			last = strtoul(cursor, &end, 10);
			if (end == cursor || last < first || last > UINT32_MAX - 1 ||
			    last - first > 1u << 20)
				goto out_malformed;
		}
		for (unsigned long r = first; r <= last; r++) {
			if (count == room) {
				uint32_t *grown;

				room = room ? room * 2 : 16;
				grown = realloc(ranks, room * sizeof(*ranks));
				if (!grown)
					goto out_malformed;
				ranks = grown;
			}
			ranks[count++] = (uint32_t)r;
		}
		if (*end == ',' && end[1] != '\0')
			end++;
		else if (*end != '\0')
			goto out_malformed;
		cursor = end;
	}
	if (count == 0)
		goto out_malformed;
	qsort(ranks, count, sizeof(*ranks), compare_u32);
	for (uint32_t i = 1; i < count; i++) {
		if (ranks[i] == ranks[i - 1]) {
			nopfs_error("--ranks: rank %" PRIu32 " is listed twice in '%s'", ranks[i],
			            value);
			free(ranks);
			return false;
		}
	}
	free(config->local_ranks);
	config->local_ranks = ranks;
	config->local_rank_count = count;
	return true;

out_malformed:
	free(ranks);
	nopfs_error("--ranks: '%s' is not a rank list like 0,1 or 0-3", value);
	return false;
}

static bool parse_index(const char *value, struct agent_options *config)
{
	static const char list_prefix[] = "list:";

	if (strcmp(value, "imagefolder") == 0) {
		config->catalog.format = NOPFS_INDEX_IMAGEFOLDER;
		return true;
	}
	if (strncmp(value, list_prefix, strlen(list_prefix)) == 0 &&
	    value[strlen(list_prefix)] != '\0') {
		config->catalog.format = NOPFS_INDEX_LIST;
		return copy_path("index", value + strlen(list_prefix), config->list_path,
		                 sizeof(config->list_path));
	}
	nopfs_error("--index: '%s' is not imagefolder or list:FILE", value);
	return false;
}

static bool parse_option(int option, const char *value, struct agent_options *c)
{
	uint64_t number;

	switch (option) {
	case OPT_DATASET:
		return copy_path("dataset", value, c->dataset_root, sizeof(c->dataset_root));
	case OPT_INDEX:
		return parse_index(value, c);
	case OPT_EXTENSIONS:
		return copy_path("extensions", value, c->extensions, sizeof(c->extensions));
	case OPT_CATALOG_CACHE:
		return copy_path("catalog-cache", value, c->catalog_cache,
		                 sizeof(c->catalog_cache));
	case OPT_SEED:
		return nopfs_sampler_parse_seed(value, &c->sampler) == NOPFS_OK;
	case OPT_EPOCHS:
		if (!nopfs_parse_uint_option("epochs", value, 1, UINT16_MAX - 1, &number))
			return false;
		c->epochs = (uint32_t)number;
		return true;
	case OPT_WORLD_SIZE:
		if (!nopfs_parse_uint_option("world-size", value, 1, UINT16_MAX * 64ULL, &number))
			return false;
		c->sampler.world_size = (uint32_t)number;
		return true;
	case OPT_RANKS:
		return parse_ranks(value, c);
	case OPT_DROP_LAST:
		c->sampler.drop_last = true;
		return true;
	case OPT_NO_SHUFFLE:
		c->sampler.shuffle = false;
		return true;
	case OPT_JOB_ID:
		if (strspn(value,
		           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
		            strlen(value) ||
		    value[0] == '\0' || value[0] == '.' || strlen(value) >= sizeof(c->job_id)) {
			nopfs_error("--job-id: '%s' must be 1-63 letters, digits, '_', '-' or '.'",
			            value);
			return false;
		}
		strcpy(c->job_id, value);
		return true;
	case OPT_TIER:
		return nopfs_tierspec_parse(value, "--tier", true, &c->tiers) == NOPFS_OK;
	case OPT_RUNTIME_DIR:
		return copy_path("runtime-dir", value, c->runtime_dir, sizeof(c->runtime_dir));
	case OPT_STAGE_DIR:
		return copy_path("stage-dir", value, c->stage_dir, sizeof(c->stage_dir));
	case OPT_REPORT:
		return copy_path("report", value, c->report_path, sizeof(c->report_path));
	case OPT_MERGED_REPORT:
		return copy_path("merged-report", value, c->merged_report_path,
		                 sizeof(c->merged_report_path));
	case OPT_MERGE_WAIT:
		return parse_seconds("merge-wait", value, 600, &c->merge_wait);
	case OPT_DROP_NODE_REPORTS:
		c->drop_node_reports = true;
		return true;
	case OPT_LOG:
		return copy_path("log", value, c->log_path, sizeof(c->log_path));
	case OPT_VERBOSE:
		c->verbose = true;
		return true;
	case OPT_STAGE_WINDOW:
		if (!nopfs_parse_uint_option("stage-window", value, 1, 1u << 20, &number))
			return false;
		c->stage_window = (uint32_t)number;
		return true;
	case OPT_STAGE_THREADS:
		if (!nopfs_parse_uint_option("stage-threads", value, 1, 64, &number))
			return false;
		c->stage_threads = (unsigned int)number;
		return true;
	case OPT_SERVE_TIMEOUT:
		if (!nopfs_parse_uint_option("serve-timeout-ms", value, 1, 3600000, &number))
			return false;
		c->serve_timeout_ms = (unsigned int)number;
		return true;
	case OPT_PROBE_BUDGET:
		return parse_seconds("probe-budget", value, 600, &c->probe_budget);
	case OPT_PROBE_CACHE:
		return copy_path("probe-cache", value, c->probe_cache, sizeof(c->probe_cache));
	case OPT_PROBE_MAX_AGE:
		return parse_seconds("probe-max-age", value, 1e9, &c->probe_max_age);
	case OPT_BOOTSTRAP:
		if (strcmp(value, "pmix") == 0 || strcmp(value, "none") == 0) {
			c->bootstrap =
			        value[0] == 'p' ? AGENT_BOOTSTRAP_PMIX : AGENT_BOOTSTRAP_NONE;
			return true;
		}
		nopfs_error("--bootstrap: '%s' is not pmix or none", value);
		return false;
	case OPT_STEP_TASKS:
		return copy_path("step-tasks", value, c->step_tasks, sizeof(c->step_tasks));
	case OPT_STEP_DISTRIBUTION:
		return nopfs_layout_parse_distribution(value, &c->step_distribution,
		                                       &c->step_plane_size) == NOPFS_OK;
	case OPT_SHARE_DIR:
		return copy_path("share-dir", value, c->share_dir, sizeof(c->share_dir));
	case OPT_FENCE_TIMEOUT:
		if (!nopfs_parse_uint_option("fence-timeout", value, 1, 3600, &number))
			return false;
		c->fence_timeout = (int)number;
		return true;
	case OPT_HELLO_TIMEOUT:
		if (!nopfs_parse_uint_option("hello-timeout", value, 1, 3600, &number))
			return false;
		c->hello_timeout = (int)number;
		return true;
	default:
		return false;
	}
}

/* Point the catalog options at the strings of @c. */
static void point_catalog(struct agent_options *c)
{
	c->catalog.root = c->dataset_root;
	c->catalog.list_path = c->list_path[0] ? c->list_path : NULL;
	c->catalog.extensions = c->extensions[0] ? c->extensions : NULL;
	c->catalog.cache_dir = c->catalog_cache[0] ? c->catalog_cache : NULL;
}

/* Defaults that depend on other options, and cross-option checks. */
static nopfs_status finish(struct agent_options *c)
{
	if (c->dataset_root[0] == '\0') {
		nopfs_error("--dataset is required");
		return NOPFS_ERR_INVALID;
	}
	if (c->bootstrap == AGENT_BOOTSTRAP_AUTO)
		c->bootstrap = bootstrap_available() ? AGENT_BOOTSTRAP_PMIX : AGENT_BOOTSTRAP_NONE;
	if (c->bootstrap == AGENT_BOOTSTRAP_PMIX) {
		/* This node's ranks follow from the step's layout and our PMIx rank. */
		if (c->step_tasks[0] == '\0' || c->local_rank_count) {
			nopfs_error("with --bootstrap pmix, give --step-tasks (the training step's "
			            "tasks per node) and not --ranks");
			return NOPFS_ERR_INVALID;
		}
	} else if (c->sampler.world_size == 0 || c->local_rank_count == 0) {
		nopfs_error("--world-size and --ranks are required without PMIx");
		return NOPFS_ERR_INVALID;
	} else if (c->local_ranks[c->local_rank_count - 1] >= c->sampler.world_size) {
		nopfs_error("--ranks: rank %" PRIu32 " is not below --world-size %" PRIu32,
		            c->local_ranks[c->local_rank_count - 1], c->sampler.world_size);
		return NOPFS_ERR_RANGE;
	}
	if (nopfs_sampler_check_epochs(&c->sampler, c->epochs) != NOPFS_OK)
		return NOPFS_ERR_RANGE;
	if (c->job_id[0] == '\0' && getenv("SLURM_JOB_ID") &&
	    strspn(getenv("SLURM_JOB_ID"), "0123456789") == strlen(getenv("SLURM_JOB_ID")) &&
	    strlen(getenv("SLURM_JOB_ID")) < sizeof(c->job_id))
		strcpy(c->job_id, getenv("SLURM_JOB_ID"));
	if (c->job_id[0] == '\0')
		snprintf(c->job_id, sizeof(c->job_id), "standalone-%ld", (long)getpid());
	if (c->runtime_dir[0] == '\0')
		snprintf(c->runtime_dir, sizeof(c->runtime_dir), "/tmp/nopfs-%s", c->job_id);
	if (c->stage_dir[0] == '\0')
		snprintf(c->stage_dir, sizeof(c->stage_dir), "/dev/shm/nopfs-%s", c->job_id);
	if (c->report_path[0] == '\0' &&
	    snprintf(c->report_path, sizeof(c->report_path), "%s/report.json", c->runtime_dir) >=
	            (int)sizeof(c->report_path)) {
		nopfs_error("--runtime-dir '%s' is too long", c->runtime_dir);
		return NOPFS_ERR_RANGE;
	}
	strcpy(c->report_pattern, c->report_path);
	point_catalog(c);
	return NOPFS_OK;
}

nopfs_status agent_options_parse(int argc, char **argv, struct agent_options *config)
{
	int option;

	*config = (struct agent_options){
		.sampler = { .shuffle = true },
		.epochs = 1,
		.probe_budget = 3,
		.probe_max_age = 86400,
		.stage_window = 256,
		.stage_threads = 2,
		.serve_timeout_ms = 5000,
		.merge_wait = 5,
		.fence_timeout = 60,
		.hello_timeout = 10,
	};
	opterr = 0;
	optind = 1;
	while ((option = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
		if (option == OPT_HELP) {
			fputs(usage_text, stdout);
			return NOPFS_ERR_EMPTY;
		}
		if (option == '?') {
			nopfs_error("unknown or incomplete option '%s'; see --help",
			            argv[optind - 1]);
			return NOPFS_ERR_INVALID;
		}
		if (!parse_option(option, optarg, config))
			return NOPFS_ERR_INVALID;
	}
	if (optind < argc) {
		nopfs_error("unexpected argument '%s'; see --help", argv[optind]);
		return NOPFS_ERR_INVALID;
	}
	return finish(config);
}

/* What a step description may give: the step, never the agent's own settings. */
static bool is_step_option(int option)
{
	switch (option) {
	case OPT_DATASET:
	case OPT_INDEX:
	case OPT_EXTENSIONS:
	case OPT_SEED:
	case OPT_EPOCHS:
	case OPT_WORLD_SIZE:
	case OPT_RANKS:
	case OPT_DROP_LAST:
	case OPT_NO_SHUFFLE:
	case OPT_STEP_TASKS:
	case OPT_STEP_DISTRIBUTION:
		return true;
	default:
		return false;
	}
}

#define STEP_ARGS_MAX 64

nopfs_status agent_options_step(const struct agent_options *current, char *text,
                                struct agent_options *next)
{
	char *argv[STEP_ARGS_MAX + 2] = { "step" }, *line, *save = NULL;
	char pattern[sizeof(current->report_pattern)];
	int argc = 1, option, index = 0;
	nopfs_status status;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (argc > STEP_ARGS_MAX) {
			nopfs_error("step description: more than %d arguments", STEP_ARGS_MAX);
			return NOPFS_ERR_INVALID;
		}
		argv[argc++] = line;
	}
	*next = *current;
	next->dataset_root[0] = next->list_path[0] = next->extensions[0] = '\0';
	next->catalog.format = NOPFS_INDEX_IMAGEFOLDER;
	next->sampler = (struct nopfs_sampler){ .shuffle = true };
	next->epochs = 1;
	next->local_ranks = NULL;
	next->local_rank_count = 0;
	next->step_tasks[0] = '\0';
	next->step_distribution = NOPFS_DISTRIBUTION_BLOCK;
	next->step_plane_size = 0;
	opterr = 0;
	optind = 1;
	while ((option = getopt_long(argc, argv, "", long_options, &index)) != -1) {
		if (option == '?') {
			nopfs_error("step description: unknown or incomplete option '%s'",
			            argv[optind - 1]);
			goto fail;
		}
		if (!is_step_option(option)) {
			nopfs_error("step description: '--%s' is not an option of a step",
			            long_options[index].name);
			goto fail;
		}
		if (!parse_option(option, optarg, next))
			goto fail;
	}
	if (optind < argc) {
		nopfs_error("step description: unexpected argument '%s'", argv[optind]);
		goto fail;
	}
	memcpy(pattern, current->report_pattern, sizeof(pattern));
	status = finish(next);
	memcpy(next->report_pattern, pattern, sizeof(pattern));
	if (status == NOPFS_OK)
		return NOPFS_OK;
	agent_options_fini(next);
	return status;
fail:
	agent_options_fini(next);
	return NOPFS_ERR_INVALID;
}

void agent_options_move(struct agent_options *to, struct agent_options *from)
{
	agent_options_fini(to);
	*to = *from;
	point_catalog(to);
	from->local_ranks = NULL;
}

void agent_options_fini(struct agent_options *config)
{
	free(config->local_ranks);
	config->local_ranks = NULL;
}
