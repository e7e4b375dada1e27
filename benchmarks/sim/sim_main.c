/*
 * nopfs-sim: reproduce the NoPFS paper's simulator (section 6) on our lib's
 * performance model and placements, and answer what-if questions.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "sim.h"
#include "sim_commands.h"
#include "sim_frequency.h"
#include "sim_scenarios.h"
#include "common/units.h"

static const char usage_text[] =
        "Usage: nopfs-sim COMMAND [OPTIONS]\n"
        "\n"
        "Commands:\n"
        "  paper       Fig. 8 scenarios, the Fig. 9 sweep, section 3.1 and the checks\n"
        "  whatif FILE a cluster and a dataset described in JSON (see examples/)\n"
        "  frequency   access frequencies of the real sampler and Lemma 1\n"
        "  metadata    the job-start metadata load, plain PyTorch and nopfs\n"
        "  list        policies, scenarios and the inputs we chose\n"
        "\n"
        "paper options (default: everything):\n"
        "  --fig8 --fig9 --frequency --checks   only these parts\n"
        "  --scenario LABEL   only this Fig. 8 scenario (1, 2a, 2b, 3, 4a, 4b; repeatable)\n"
        "  --fig9-ours        also run ours on the Fig. 9 grid\n"
        "  --scale X          multiply samples and capacities by X in (0, 1] (quick runs)\n"
        "whatif options:\n"
        "  --policy KEY       only this policy (repeatable; Perfect is always run)\n"
        "frequency options:\n"
        "  --samples F --workers N --epochs E --delta D --worker W --seed S\n"
        "                     (default 1281167, 16, 90, 0.8, 0, 0: the paper's example)\n"
        "metadata options:\n"
        "  --files F --dirs D --nodes N --ranks-per-node R --metadata-rate OPS\n"
        "  --metadata-latency MS (default 1281167, 1000, 1024, 4, 20000, 0.5: ImageNet)\n"
        "common options:\n"
        "  --out DIR          CSV, gnuplot scripts and PNG/SVG plots (default nopfs-sim-out)\n"
        "  --no-out           write no files\n"
        "  --no-plot          write CSV but do not run gnuplot\n"
        "  --threads T        threads (default: online CPUs)\n"
        "  --help             this text\n";

enum {
	OPT_FIG8 = 256,
	OPT_FIG9,
	OPT_FREQUENCY,
	OPT_CHECKS,
	OPT_SCENARIO,
	OPT_FIG9_OURS,
	OPT_SCALE,
	OPT_POLICY,
	OPT_SAMPLES,
	OPT_WORKERS,
	OPT_EPOCHS,
	OPT_DELTA,
	OPT_WORKER,
	OPT_SEED,
	OPT_OUT,
	OPT_NO_OUT,
	OPT_NO_PLOT,
	OPT_THREADS,
	OPT_HELP,
	OPT_FILES,
	OPT_DIRS,
	OPT_NODES,
	OPT_RANKS_PER_NODE,
	OPT_METADATA_RATE,
	OPT_METADATA_LATENCY,
};

static const struct option long_options[] = {
	{ "fig8", no_argument, NULL, OPT_FIG8 },
	{ "fig9", no_argument, NULL, OPT_FIG9 },
	{ "frequency", no_argument, NULL, OPT_FREQUENCY },
	{ "checks", no_argument, NULL, OPT_CHECKS },
	{ "scenario", required_argument, NULL, OPT_SCENARIO },
	{ "fig9-ours", no_argument, NULL, OPT_FIG9_OURS },
	{ "scale", required_argument, NULL, OPT_SCALE },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "samples", required_argument, NULL, OPT_SAMPLES },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "epochs", required_argument, NULL, OPT_EPOCHS },
	{ "delta", required_argument, NULL, OPT_DELTA },
	{ "worker", required_argument, NULL, OPT_WORKER },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "out", required_argument, NULL, OPT_OUT },
	{ "no-out", no_argument, NULL, OPT_NO_OUT },
	{ "no-plot", no_argument, NULL, OPT_NO_PLOT },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "files", required_argument, NULL, OPT_FILES },
	{ "dirs", required_argument, NULL, OPT_DIRS },
	{ "nodes", required_argument, NULL, OPT_NODES },
	{ "ranks-per-node", required_argument, NULL, OPT_RANKS_PER_NODE },
	{ "metadata-rate", required_argument, NULL, OPT_METADATA_RATE },
	{ "metadata-latency", required_argument, NULL, OPT_METADATA_LATENCY },
	{ NULL, 0, NULL, 0 },
};

struct options {
	struct sim_paper_options paper;
	struct sim_whatif_options whatif;
	struct sim_frequency freq;
	struct sim_metadata_options meta;
	bool parts_given;
};

static bool parse_number(const char *option, const char *text, double min, double max, double *out)
{
	char *end;
	double value = strtod(text, &end);

	if (*text == '\0' || *end != '\0' || !(value >= min && value <= max)) {
		nopfs_error("--%s '%s': expected a number in %g .. %g", option, text, min, max);
		return false;
	}
	*out = value;
	return true;
}

/* One option; false on a bad value (logged). */
static bool parse_option(struct options *o, int opt, const char *arg)
{
	uint64_t n;
	uint32_t mask;
	int scenario;

	switch (opt) {
	case OPT_FIG8:
	case OPT_FIG9:
	case OPT_FREQUENCY:
	case OPT_CHECKS:
		if (!o->parts_given)
			o->paper.fig8 = o->paper.fig9 = o->paper.frequency = o->paper.checks =
			        false;
		o->parts_given = true;
		*(opt == OPT_FIG8        ? &o->paper.fig8
		  : opt == OPT_FIG9      ? &o->paper.fig9
		  : opt == OPT_FREQUENCY ? &o->paper.frequency
		                         : &o->paper.checks) = true;
		return true;
	case OPT_SCENARIO:
		scenario = sim_paper_find(arg);
		if (scenario < 0) {
			nopfs_error("--scenario '%s': expected 1, 2a, 2b, 3, 4a or 4b", arg);
			return false;
		}
		if (o->paper.scenarios == (1u << SIM_PAPER_SCENARIOS) - 1)
			o->paper.scenarios = 0;
		o->paper.scenarios |= 1u << scenario;
		return true;
	case OPT_FIG9_OURS:
		o->paper.fig9_ours = true;
		return true;
	case OPT_SCALE:
		return parse_number("scale", arg, 1e-6, 1, &o->paper.scale);
	case OPT_POLICY:
		if (sim_policy_parse(arg, &mask) != NOPFS_OK)
			return false;
		o->whatif.policies |= mask;
		return true;
	case OPT_SAMPLES:
		if (!nopfs_parse_uint_option("samples", arg, 2, UINT32_MAX - 1, &n))
			return false;
		o->freq.samples = n;
		return true;
	case OPT_WORKERS:
		if (!nopfs_parse_uint_option("workers", arg, 2, 65534, &n))
			return false;
		o->freq.workers = (uint32_t)n;
		return true;
	case OPT_EPOCHS:
		if (!nopfs_parse_uint_option("epochs", arg, 1, 65534, &n))
			return false;
		o->freq.epochs = (uint32_t)n;
		return true;
	case OPT_DELTA:
		return parse_number("delta", arg, 0, 1e6, &o->freq.delta);
	case OPT_WORKER:
		if (!nopfs_parse_uint_option("worker", arg, 0, 65533, &n))
			return false;
		o->freq.worker = (uint32_t)n;
		return true;
	case OPT_SEED:
		if (!nopfs_parse_uint_option("seed", arg, 0, UINT64_MAX, &n))
			return false;
		o->freq.seed = n;
		return true;
	case OPT_OUT:
		o->paper.out = o->whatif.out = arg;
		return true;
	case OPT_NO_OUT:
		o->paper.out = o->whatif.out = NULL;
		return true;
	case OPT_NO_PLOT:
		o->paper.plot = o->whatif.plot = false;
		return true;
	case OPT_FILES:
		if (!nopfs_parse_uint_option("files", arg, 1, UINT64_MAX / 4, &n))
			return false;
		o->meta.files = n;
		return true;
	case OPT_DIRS:
		if (!nopfs_parse_uint_option("dirs", arg, 1, UINT32_MAX, &n))
			return false;
		o->meta.dirs = n;
		return true;
	case OPT_NODES:
		if (!nopfs_parse_uint_option("nodes", arg, 1, 1000000, &n))
			return false;
		o->meta.nodes = (uint32_t)n;
		return true;
	case OPT_RANKS_PER_NODE:
		if (!nopfs_parse_uint_option("ranks-per-node", arg, 1, 1024, &n))
			return false;
		o->meta.ranks_per_node = (uint32_t)n;
		return true;
	case OPT_METADATA_RATE:
		return parse_number("metadata-rate", arg, 0, 1e12, &o->meta.rate);
	case OPT_METADATA_LATENCY:
		return parse_number("metadata-latency", arg, 0, 1e6, &o->meta.latency_ms);
	case OPT_THREADS:
		if (!nopfs_parse_uint_option("threads", arg, 1, 256, &n))
			return false;
		o->paper.threads = o->whatif.threads = (unsigned int)n;
		return true;
	default:
		return false;
	}
}

static void list(void)
{
	printf("Policies (key: what we simulate):\n");
	for (int p = 0; p < SIM_POLICY_COUNT; p++)
		printf("  %-18s %s\n  %-18s   %s\n", sim_policy_key(p), sim_policy_summary(p), "",
		       sim_policy_details(p));
	printf("\nFig. 8 scenarios (N, F, mu, sigma in MB, B, our E; paper's S and regime):\n");
	for (int i = 0; i < SIM_PAPER_SCENARIOS; i++) {
		const struct sim_paper_scenario *s = &sim_paper_scenarios[i];

		printf("  %-3s %-14s N=%u F=%llu mu=%g sigma=%g B=%u E=%u  paper: %s, %s\n",
		       s->label, s->dataset, s->nodes, (unsigned long long)s->samples, s->mean_mb,
		       s->stddev_mb, s->batch, s->epochs, s->paper_size, s->paper_regime);
	}
	printf("\n");
	sim_paper_print_inputs(1);
}

int main(int argc, char **argv)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct options o = {
		.paper = { .fig8 = true,
		           .fig9 = true,
		           .frequency = true,
		           .checks = true,
		           .scenarios = (1u << SIM_PAPER_SCENARIOS) - 1,
		           .scale = 1,
		           .out = "nopfs-sim-out",
		           .plot = true },
		.whatif = { .out = "nopfs-sim-out", .plot = true },
		.freq = { .samples = 1281167, .workers = 16, .epochs = 90, .delta = 0.8 },
		.meta = { .files = 1281167,
		          .dirs = 1000,
		          .nodes = 1024,
		          .ranks_per_node = 4,
		          .rate = 20000,
		          .latency_ms = 0.5 },
	};
	const char *command;
	nopfs_status status;
	int opt;

	o.paper.threads = o.whatif.threads = cpus > 0 ? (unsigned int)cpus : 1;
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fputs(usage_text, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	command = argv[1];
	optind = 2;
	while ((opt = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
		if (opt == OPT_HELP) {
			fputs(usage_text, stdout);
			return 0;
		}
		if (!parse_option(&o, opt, optarg)) {
			fprintf(stderr, "Try 'nopfs-sim --help'.\n");
			return 2;
		}
	}
	if (strcmp(command, "paper") == 0 && optind == argc) {
		status = sim_paper_run(&o.paper);
	} else if (strcmp(command, "whatif") == 0 && optind == argc - 1) {
		o.whatif.config = argv[optind];
		status = sim_whatif_run(&o.whatif);
	} else if (strcmp(command, "frequency") == 0 && optind == argc) {
		status = sim_frequency_run(&o.freq, o.paper.threads);
		if (status == NOPFS_OK)
			sim_frequency_print(&o.freq);
		sim_frequency_fini(&o.freq);
	} else if (strcmp(command, "metadata") == 0 && optind == argc) {
		status = sim_metadata_run(&o.meta);
	} else if (strcmp(command, "list") == 0 && optind == argc) {
		list();
		status = NOPFS_OK;
	} else {
		nopfs_error("unknown command or wrong arguments: '%s'", command);
		fputs(usage_text, stderr);
		return 2;
	}
	return status == NOPFS_OK ? 0 : 1;
}
