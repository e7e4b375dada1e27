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
#include "common/optable.h"
#include "common/token.h"
#include "common/units.h"

#define FIELD(field) NOPFS_OPTION_FIELD(struct agent_options, field)

/* The options a step description may give (the step's, never the agent's own). */
enum { OPT_OTHER, OPT_STEP };

/* --index list:FILE's file. */
static const struct nopfs_option list_file = { NOPFS_OPT_PATH("index", NULL, NULL,
	                                                      FIELD(list_path)) };

static int compare_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* "0,1", "0-3", "0-1,4" -> sorted unique ranks. */
static bool parse_ranks(const char *value, void *options)
{
	struct agent_options *config = options;
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

static bool parse_index(const char *value, void *options)
{
	static const char list_prefix[] = "list:";
	struct agent_options *config = options;

	if (strcmp(value, "imagefolder") == 0) {
		config->catalog.format = NOPFS_INDEX_IMAGEFOLDER;
		return true;
	}
	if (strncmp(value, list_prefix, strlen(list_prefix)) == 0 &&
	    value[strlen(list_prefix)] != '\0') {
		config->catalog.format = NOPFS_INDEX_LIST;
		return nopfs_option_store(&list_file, value + strlen(list_prefix), config);
	}
	nopfs_error("--index: '%s' is not imagefolder or list:FILE", value);
	return false;
}

static bool parse_seed(const char *value, void *options)
{
	return nopfs_sampler_parse_seed(value, &((struct agent_options *)options)->sampler) ==
	       NOPFS_OK;
}

static bool parse_max_sample_size(const char *value, void *options)
{
	struct agent_options *c = options;

	if (nopfs_parse_size(value, &c->max_sample_size) != NOPFS_OK || c->max_sample_size == 0) {
		nopfs_error("--max-sample-size '%s': not a size of at least 1 byte such as 64M",
		            value);
		return false;
	}
	return true;
}

static bool parse_job_id(const char *value, void *options)
{
	struct agent_options *c = options;

	if (strspn(value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
	            strlen(value) ||
	    value[0] == '\0' || value[0] == '.' || strlen(value) >= sizeof(c->job_id)) {
		nopfs_error("--job-id: '%s' must be 1-63 letters, digits, '_', '-' or '.'", value);
		return false;
	}
	strcpy(c->job_id, value);
	return true;
}

static bool parse_tier(const char *value, void *options)
{
	return nopfs_tierspec_parse(value, "--tier", true,
	                            &((struct agent_options *)options)->tiers) == NOPFS_OK;
}

static bool parse_bootstrap(const char *value, void *options)
{
	struct agent_options *c = options;

	if (strcmp(value, "pmix") == 0 || strcmp(value, "none") == 0) {
		c->bootstrap = value[0] == 'p' ? AGENT_BOOTSTRAP_PMIX : AGENT_BOOTSTRAP_NONE;
		return true;
	}
	nopfs_error("--bootstrap: '%s' is not pmix or none", value);
	return false;
}

static bool parse_val_sampler(const char *value, void *options)
{
	struct agent_options *c = options;

	if (strcmp(value, "distributed") == 0 || strcmp(value, "all") == 0) {
		c->val_all = value[0] == 'a';
		return true;
	}
	nopfs_error("--val-sampler: '%s' is not distributed or all", value);
	return false;
}

static bool parse_step_distribution(const char *value, void *options)
{
	struct agent_options *c = options;

	return nopfs_layout_parse_distribution(value, &c->step_distribution, &c->step_plane_size) ==
	       NOPFS_OK;
}

static const struct nopfs_option option_rows[] = {
	{ NOPFS_OPT_TEXT("Dataset:") },
	{ NOPFS_OPT_PATH("dataset", "DIR", "dataset root (as the training script names it)",
	                 FIELD(dataset_root)),
	  .id = OPT_STEP },
	{ NOPFS_OPT_CALL("index", "FORMAT", "imagefolder (default) or list:FILE", parse_index),
	  .id = OPT_STEP },
	{ NOPFS_OPT_PATH("extensions", "LIST",
	                 "file extensions for imagefolder (default: torchvision's)",
	                 FIELD(extensions)),
	  .id = OPT_STEP },
	{ NOPFS_OPT_PATH("catalog-cache", "DIR", "reuse a validated catalog cache",
	                 FIELD(catalog_cache)) },
	{ NOPFS_OPT_PATH("val-dataset", "DIR",
	                 "a validation set the script reads after every epoch\n"
	                 "(imagefolder, as the script names it): each node keeps\n"
	                 "its ranks' share in RAM",
	                 FIELD(val_dataset)) },
	{ NOPFS_OPT_CALL("val-sampler", "HOW",
	                 "distributed (default: DistributedSampler(shuffle=False)\n"
	                 "over the ranks) or all (every rank reads all of it)",
	                 parse_val_sampler) },
	{ NOPFS_OPT_TEXT("Job:") },
	{ NOPFS_OPT_CALL("seed", "S", "DistributedSampler seed (default 0)", parse_seed),
	  .id = OPT_STEP },
	{ NOPFS_OPT_UINT("epochs", "E", "epochs (default 1)", FIELD(epochs), 1, UINT16_MAX - 1),
	  .id = OPT_STEP },
	{ NOPFS_OPT_UINT("start-epoch", "K", "a resumed job: plan epochs K to E-1 only (default 0)",
	                 FIELD(sampler.first_epoch), 0, UINT16_MAX - 2),
	  .id = OPT_STEP },
	{ NOPFS_OPT_UINT("start-sample", "P",
	                 "a resume within epoch K: each rank starts at index P of its stream "
	                 "(default 0)",
	                 FIELD(sampler.first_index), 0, UINT32_MAX - 1),
	  .id = OPT_STEP },
	{ NOPFS_OPT_UINT("world-size", "W", "ranks of the training step", FIELD(sampler.world_size),
	                 1, UINT16_MAX * 64ULL),
	  .id = OPT_STEP },
	{ NOPFS_OPT_CALL("ranks", "LIST", "this node's ranks, e.g. 0,1 or 0-3", parse_ranks),
	  .id = OPT_STEP },
	{ NOPFS_OPT_FLAG("drop-last", "DistributedSampler(drop_last=True)",
	                 FIELD(sampler.drop_last), true),
	  .id = OPT_STEP },
	{ NOPFS_OPT_FLAG("no-shuffle", "DistributedSampler(shuffle=False)", FIELD(sampler.shuffle),
	                 false),
	  .id = OPT_STEP },
	{ NOPFS_OPT_FLAG("no-set-epoch",
	                 "the script never calls set_epoch: every epoch in epoch 0's order",
	                 FIELD(sampler.same_order), true),
	  .id = OPT_STEP },
	{ NOPFS_OPT_CALL("job-id", "ID", "names runtime files (default: standalone-PID)",
	                 parse_job_id) },
	{ NOPFS_OPT_TEXT("Tiers (fastest first; repeatable or comma-separated):") },
	{ NOPFS_OPT_TEXT("  --tier ram:SIZE|ram:N%  node memory") },
	{ NOPFS_OPT_TEXT("  --tier ssd:DIR:SIZE     a directory on node-local storage") },
	{ NOPFS_OPT_CALL("tier", "SPEC", NULL, parse_tier) }, /* said just above */
	{ NOPFS_OPT_TEXT("Runtime:") },
	{ NOPFS_OPT_PATH("runtime-dir", "DIR", "socket and ready file (default /tmp/nopfs-ID)",
	                 FIELD(runtime_dir)) },
	{ NOPFS_OPT_PATH("stage-dir", "DIR",
	                 "tmpfs for staged copies and RAM (default /dev/shm/nopfs-ID)",
	                 FIELD(stage_dir)) },
	{ NOPFS_OPT_PATH("report", "PATH",
	                 "per-node JSON report (default RUNTIME-DIR/report.json);\n"
	                 "%n in PATH is the node index",
	                 FIELD(report_path)) },
	{ NOPFS_OPT_PATH("merged-report", "PATH",
	                 "node 0: merge every node's --report into this job\n"
	                 "report (needs %n in --report with several nodes)",
	                 FIELD(merged_report_path)) },
	{ NOPFS_OPT_PATH("summary", "PATH",
	                 "node 0: also write the job report's summary in one line\n"
	                 "to PATH (0600; the plugin's epilog stores it with the job)",
	                 FIELD(summary_path)) },
	{ NOPFS_OPT_SECONDS("merge-wait", "SEC",
	                    "how long node 0 waits for the others' (default 5)", FIELD(merge_wait),
	                    600) },
	{ NOPFS_OPT_FLAG("drop-node-reports", "remove the node reports once in the job report",
	                 FIELD(drop_node_reports), true) },
	{ NOPFS_OPT_PATH("log", "PATH", "log file (default stderr); %n as in --report",
	                 FIELD(log_path)) },
	{ NOPFS_OPT_FLAG("verbose", "log debug messages", FIELD(verbose), true) },
	{ NOPFS_OPT_UINT("stage-window", "N", "samples staged ahead per rank (default 256)",
	                 FIELD(stage_window), 1, 1u << 20) },
	{ NOPFS_OPT_UINT("stage-threads", "N", "staging threads (default 2)", FIELD(stage_threads),
	                 1, 64) },
	{ NOPFS_OPT_UINT("serve-timeout-ms", "MS",
	                 "longest wait for one requested sample (default 5000)",
	                 FIELD(serve_timeout_ms), 1, 3600000) },
	{ NOPFS_OPT_UINT("wait-timeout-ms", "MS",
	                 "the same for a task told every second that its sample is\n"
	                 "still being fetched (WAIT; default 60000)",
	                 FIELD(wait_timeout_ms), 1, 3600000) },
	{ NOPFS_OPT_FLAG("verify",
	                 "check every copy of a sample (RAM, SSD, another node) against\n"
	                 "the CRC32C of its first read; one that differs is not served",
	                 FIELD(verify), true) },
	{ NOPFS_OPT_PATH("keep-dir", "DIR",
	                 "keep what this node holds at the end for the next job\n"
	                 "on the dataset, in DIR/KEY (DIR: private, node-local),\n"
	                 "and use what an earlier job kept there",
	                 FIELD(keep_dir)) },
	{ NOPFS_OPT_CALL("max-sample-size", "SIZE",
	                 "larger samples are neither kept nor served: the ranks\n"
	                 "read them from the PFS themselves (default 64M)",
	                 parse_max_sample_size) },
	{ NOPFS_OPT_UINT("max-connections", "N",
	                 "task connections served at a time; more are closed\n"
	                 "and those tasks read the PFS (default 256)",
	                 FIELD(max_connections), 1, 65536) },
	{ NOPFS_OPT_TEXT("Self-probe:") },
	{ NOPFS_OPT_SECONDS("probe-budget", "SEC", "time for measuring tiers and PFS (default 3)",
	                    FIELD(probe_budget), 600) },
	{ NOPFS_OPT_PATH("probe-cache", "DIR", "reuse measurements younger than --probe-max-age",
	                 FIELD(probe_cache)) },
	{ NOPFS_OPT_SECONDS("probe-max-age", "SEC", "(default 86400)", FIELD(probe_max_age), 1e9) },
	{ NOPFS_OPT_TEXT(
	        "Multi-node (the agents are the tasks of their own step, one per node):") },
	{ NOPFS_OPT_CALL("bootstrap", "MODE",
	                 "pmix, or none (one node alone); default: pmix when\n"
	                 "started with a PMIx server, else none",
	                 parse_bootstrap) },
	{ NOPFS_OPT_PATH("step-tasks", "LIST",
	                 "tasks per node of the training step, Slurm's form\n"
	                 "(2(x3),1); with pmix, required",
	                 FIELD(step_tasks)),
	  .id = OPT_STEP },
	{ NOPFS_OPT_CALL("step-distribution", "D", "block (default), cyclic or plane=N",
	                 parse_step_distribution),
	  .id = OPT_STEP },
	{ NOPFS_OPT_PATH("share-dir", "DIR",
	                 "a directory every node sees (on the PFS): node 0\n"
	                 "publishes the catalog there for the others",
	                 FIELD(share_dir)) },
	{ NOPFS_OPT_UINT("fence-timeout", "SEC", "give up a PMIx exchange after this (default 60)",
	                 FIELD(fence_timeout), 1, 3600) },
	{ NOPFS_OPT_UINT("scan-timeout", "SEC",
	                 "how long the other nodes wait for node 0's scan of\n"
	                 "the dataset and its catalog (default 600)",
	                 FIELD(scan_timeout), 1, 86400) },
	{ NOPFS_OPT_UINT("hello-timeout", "SEC",
	                 "give up either of the step's first two fences after\n"
	                 "this and exit with status 75: start the step again\n"
	                 "(default 10)",
	                 FIELD(hello_timeout), 1, 3600) },
	{ NOPFS_OPT_HELP(NULL) },
	{ NOPFS_OPT_END },
};

static const struct nopfs_optable option_table = {
	.options = option_rows,
	.usage = "Usage: nopfs-agent --dataset DIR --world-size W --ranks LIST [options]\n"
	         "\n"
	         "Serve a training job's samples on this node from node-local tiers, staged\n"
	         "ahead in each local rank's exact DistributedSampler order.\n"
	         "\n",
	.epilogue =
	        "\n"
	        "Signals: TERM drains, writes the report and exits; USR1 writes the report.\n"
	        "Steps: the agent plans for the step in the newest RUNTIME-DIR/step-G (looked\n"
	        "for every 0.2 s, at once on USR2): one per line, its --dataset, --index,\n"
	        "--extensions, --seed, --epochs, --world-size and --ranks or --step-tasks and\n"
	        "--step-distribution, --drop-last, --no-shuffle, --no-set-epoch; the ready\n"
	        "file then reads \"PID G\".\n"
	        "Environment: NOPFS_AGENT_TOKEN (32 hexadecimal digits, from the plugin) names\n"
	        "the default directories /tmp/nopfs-JOB.TOKEN and /dev/shm/nopfs-JOB.TOKEN.\n",
	.column = 25,
};

/* Point the catalog options at the strings of @c. */
static void point_catalog(struct agent_options *c)
{
	c->catalog.root = c->dataset_root;
	c->catalog.list_path = c->list_path[0] ? c->list_path : NULL;
	c->catalog.extensions = c->extensions[0] ? c->extensions : NULL;
	c->catalog.cache_dir = c->catalog_cache[0] ? c->catalog_cache : NULL;
}

/* Defaults that depend on other options, and cross-option checks. */
/*
 * The name of the job's private places: "nopfs-JOB", with the job's token
 * when the plugin gave one ("nopfs-JOB.TOKEN": nobody else can make it first).
 */
static nopfs_status private_name(struct agent_options *c)
{
	const char *token = getenv(NOPFS_ENV_AGENT_TOKEN);

	if (token && !nopfs_token_is_valid(token)) {
		nopfs_error("%s is not %d hexadecimal digits", NOPFS_ENV_AGENT_TOKEN,
		            NOPFS_TOKEN_LENGTH);
		return NOPFS_ERR_INVALID;
	}
	snprintf(c->private_name, sizeof(c->private_name), "nopfs-%s%s%s", c->job_id,
	         token ? "." : "", token ? token : "");
	return NOPFS_OK;
}

static nopfs_status finish(struct agent_options *c)
{
	if (c->dataset_root[0] == '\0') {
		nopfs_error("--dataset is required");
		return NOPFS_ERR_INVALID;
	}
	if (c->val_all && c->val_dataset[0] == '\0') {
		nopfs_error("--val-sampler is for --val-dataset, which is not given");
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
	if (c->sampler.first_epoch >= c->epochs) {
		nopfs_error("--start-epoch %" PRIu32 " is not below --epochs %" PRIu32
		            " (the script's total: it runs epochs %" PRIu32 " to %" PRIu32 ")",
		            c->sampler.first_epoch, c->epochs, c->sampler.first_epoch,
		            c->epochs - 1);
		return NOPFS_ERR_RANGE;
	}
	if (nopfs_sampler_check_epochs(&c->sampler, c->epochs - c->sampler.first_epoch) != NOPFS_OK)
		return NOPFS_ERR_RANGE;
	if (c->job_id[0] == '\0' && getenv("SLURM_JOB_ID") &&
	    strspn(getenv("SLURM_JOB_ID"), "0123456789") == strlen(getenv("SLURM_JOB_ID")) &&
	    strlen(getenv("SLURM_JOB_ID")) < sizeof(c->job_id))
		strcpy(c->job_id, getenv("SLURM_JOB_ID"));
	if (c->job_id[0] == '\0')
		snprintf(c->job_id, sizeof(c->job_id), "standalone-%ld", (long)getpid());
	if (private_name(c) != NOPFS_OK)
		return NOPFS_ERR_INVALID;
	if (c->runtime_dir[0] == '\0')
		snprintf(c->runtime_dir, sizeof(c->runtime_dir), "/tmp/%s", c->private_name);
	if (c->stage_dir[0] == '\0')
		snprintf(c->stage_dir, sizeof(c->stage_dir), "/dev/shm/%s", c->private_name);
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
	nopfs_status status;

	*config = (struct agent_options){
		.sampler = { .shuffle = true },
		.epochs = 1,
		.probe_budget = 3,
		.probe_max_age = 86400,
		.stage_window = 256,
		.stage_threads = 2,
		.serve_timeout_ms = 5000,
		.wait_timeout_ms = 60000,
		.max_sample_size = AGENT_MAX_SAMPLE_SIZE_DEFAULT,
		.merge_wait = 5,
		.fence_timeout = 60,
		.scan_timeout = 600,
		.hello_timeout = 10,
	};
	status = nopfs_optable_parse(&option_table, argc, argv, config, NULL);
	if (status == NOPFS_ERR_EMPTY)
		nopfs_optable_print_help(&option_table, stdout);
	if (status != NOPFS_OK)
		return status == NOPFS_ERR_EMPTY ? status : NOPFS_ERR_INVALID;
	return finish(config);
}

#define STEP_ARGS_MAX 64

nopfs_status agent_options_step(const struct agent_options *current, char *text,
                                struct agent_options *next)
{
	char *argv[STEP_ARGS_MAX + 2] = { "step" }, *line, *save = NULL;
	char pattern[sizeof(current->report_pattern)];
	struct option *array = nopfs_optable_getopt(&option_table);
	int argc = 1, val;
	nopfs_status status;

	if (!array) {
		nopfs_error("step description: out of memory");
		return NOPFS_ERR_NOMEM;
	}
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (argc > STEP_ARGS_MAX) {
			nopfs_error("step description: more than %d arguments", STEP_ARGS_MAX);
			free(array);
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
	while ((val = getopt_long(argc, argv, "", array, NULL)) != -1) {
		const struct nopfs_option *option = nopfs_optable_option(&option_table, val);

		if (!option) {
			nopfs_error("step description: unknown or incomplete option '%s'",
			            argv[optind - 1]);
			goto fail;
		}
		if (option->id != OPT_STEP) {
			nopfs_error("step description: '--%s' is not an option of a step",
			            option->name);
			goto fail;
		}
		if (!nopfs_option_store(option, optarg, next))
			goto fail;
	}
	free(array);
	array = NULL;
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
	free(array);
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
