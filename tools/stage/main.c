/*
 * nopfs-stage: the command of a pre-warm step. Run by srun with
 * --nopfs-dataset (and usually --nopfs-keep=yes), it waits on each node
 * until the node's agent has filled its tiers with every sample the plan
 * gives it, printing the progress, then exits: the step ends, the agents
 * drain and, keeping, leave what they hold for the training job to come.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ask.h"
#include "common/clock.h"
#include "common/optable.h"
#include "common/units.h"

#define STAGE_ASK_MS    5000 /* one answer of the agent */
#define STAGE_ASK_TRIES 3    /* answers missed in a row before giving up */

struct stage_options {
	double timeout;  /* seconds */
	double interval; /* seconds between looks */
	bool quiet;
};

#define FIELD(field) NOPFS_OPTION_FIELD(struct stage_options, field)

static const struct nopfs_option option_rows[] = {
	{ NOPFS_OPT_SECONDS("timeout", "SEC",
	                    "give up (exit 1) when the tiers are not full after SEC\n"
	                    "seconds (default 86400)",
	                    FIELD(timeout), 1e7) },
	{ NOPFS_OPT_SECONDS("interval", "SEC", "seconds between progress lines (default 10)",
	                    FIELD(interval), 3600) },
	{ NOPFS_OPT_FLAG("quiet", "print only the last line", FIELD(quiet), true) },
	{ NOPFS_OPT_HELP(NULL) },
	{ NOPFS_OPT_END },
};

static const struct nopfs_optable option_table = {
	.options = option_rows,
	.usage = "Usage: srun --nopfs-dataset=DIR [--nopfs-keep=yes] ... nopfs-stage [options]\n"
	         "\n"
	         "Wait until this node's nopfs agent holds every sample its plan gives it,\n"
	         "then exit: a step that fills the nodes' caches ahead of a training step.\n"
	         "\n",
	.epilogue = "\n"
	            "Environment: NOPFS_SOCKET, set by the plugin for the step's tasks.\n"
	            "Exit status: 0 when the tiers are full, 1 otherwise (no agent, the\n"
	            "agent gone, the timeout).\n",
	.column = 18,
};

/* Planned, filled and failed samples and bytes over the tiers of @status. */
struct progress {
	uint64_t planned, filled, failed;
	uint64_t planned_bytes, filled_bytes;
};

static bool read_progress(const json_t *status, struct progress *p)
{
	const json_t *tiers = json_object_get(status, "tiers"), *tier;
	size_t i;

	memset(p, 0, sizeof(*p));
	if (!json_is_array(tiers))
		return false;
	json_array_foreach(tiers, i, tier)
	{
		const json_t *filled = json_object_get(tier, "filled");

		p->planned +=
		        (uint64_t)json_integer_value(json_object_get(tier, "planned_samples"));
		p->planned_bytes +=
		        (uint64_t)json_integer_value(json_object_get(tier, "planned_bytes"));
		p->filled += (uint64_t)json_integer_value(json_object_get(filled, "samples"));
		p->filled_bytes += (uint64_t)json_integer_value(json_object_get(filled, "bytes"));
		p->failed += (uint64_t)json_integer_value(json_object_get(tier, "failed_samples"));
	}
	return true;
}

static void print_progress(const char *host, const struct progress *p, double seconds,
                           const char *what)
{
	char filled[32], planned[32];

	printf("nopfs-stage: %s: %" PRIu64 " of %" PRIu64 " samples (%s of %s) in the node's "
	       "tiers after %.0f s%s\n",
	       host, p->filled, p->planned,
	       nopfs_format_size(p->filled_bytes, filled, sizeof(filled)),
	       nopfs_format_size(p->planned_bytes, planned, sizeof(planned)), seconds, what);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct stage_options options = { .timeout = 86400, .interval = 10 };
	const char *socket_path = getenv("NOPFS_SOCKET"), *why = "";
	double start = nopfs_clock_seconds(), last = -1e9;
	struct progress p = { 0 };
	char host[256] = "";
	unsigned int missed = 0;
	nopfs_status status;
	int operands;

	status = nopfs_optable_parse(&option_table, argc, argv, &options, &operands);
	if (status == NOPFS_ERR_EMPTY) {
		nopfs_optable_print_help(&option_table, stdout);
		return 0;
	}
	if (status != NOPFS_OK)
		return 1;
	if (operands < argc) {
		fprintf(stderr, "nopfs-stage: '%s': no operands are taken; see --help\n",
		        argv[operands]);
		return 1;
	}
	gethostname(host, sizeof(host) - 1);
	if (!socket_path || !socket_path[0]) {
		fprintf(stderr,
		        "nopfs-stage: %s: NOPFS_SOCKET is not set: no nopfs agent serves "
		        "this step (run it with srun --nopfs-dataset=DIR; the step's "
		        "standard error says why the agent did not come)\n",
		        host);
		return 1;
	}
	for (;;) {
		json_t *answer = tool_ask_stats(socket_path, STAGE_ASK_MS, &why);
		double now = nopfs_clock_seconds() - start;
		bool done;

		if (!answer || !read_progress(answer, &p)) {
			json_decref(answer);
			if (++missed >= STAGE_ASK_TRIES) {
				fprintf(stderr,
				        "nopfs-stage: %s: the agent at %s does not answer (%s): "
				        "its tiers are not known to be full\n",
				        host, socket_path, answer ? "no tiers in its answer" : why);
				return 1;
			}
		} else {
			json_decref(answer);
			missed = 0;
			done = p.filled + p.failed >= p.planned;
			if (done) {
				print_progress(host, &p, now, "");
				if (p.failed)
					fprintf(stderr,
					        "nopfs-stage: %s: %" PRIu64 " samples could not be "
					        "read from the PFS (the agent's log names them)\n",
					        host, p.failed);
				return 0;
			}
			if (!options.quiet && now - last >= options.interval) {
				print_progress(host, &p, now, "");
				last = now;
			}
		}
		if (now >= options.timeout) {
			print_progress(host, &p, now, ": not full at the --timeout");
			return 1;
		}
		usleep(200 * 1000);
	}
}
