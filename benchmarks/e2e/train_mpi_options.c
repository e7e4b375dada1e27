/*
 * train_mpi's command line: the option table, the parsers (every bad value
 * named with its option), per-rank output paths and the dataset root.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "train_mpi.h"
#include "common/units.h"

const char train_usage_text[] =
        "Usage: mpirun ... train_mpi (--data DIR | --index FILE) [OPTIONS]\n"
        "\n"
        "Dataset:\n"
        "  --data DIR          ImageFolder tree: class directories of .JPEG files\n"
        "  --index FILE        list file, one sample per line [LABEL]; paths relative to\n"
        "                      --data (default: the list file's directory)\n"
        "  --synthetic         same samples and sizes, bytes from memory (no file opened)\n"
        "\n"
        "Training (DistributedSampler with shuffle=True; world and rank from MPI):\n"
        "  --seed N            the sampler's seed (default 0)\n"
        "  --epochs E          epochs (default 1)\n"
        "  --batch-size B      samples per step; an epoch's last batch may be smaller\n"
        "                      (default 32)\n"
        "  --drop-last         the sampler drops the tail instead of padding\n"
        "  --compute SECONDS   sleep per step after the allreduce (default 0)\n"
        "  --allreduce BYTES   float buffer allreduced per step, e.g. 4M; 0: none (default 1M)\n"
        "\n"
        "Output:\n"
        "  --out PATH          CSV, one row per batch; %r is the rank. Columns: rank, epoch,\n"
        "                      batch, samples, bytes, t_request, t_ready (read), t_done\n"
        "                      (exchanged and computed); wall-clock seconds\n"
        "  --trace PATH        'epoch index bytes' per sample read; %r is the rank\n"
        "  --help              this text\n";

enum {
	OPT_DATA = 256,
	OPT_INDEX,
	OPT_SYNTHETIC,
	OPT_SEED,
	OPT_EPOCHS,
	OPT_BATCH_SIZE,
	OPT_DROP_LAST,
	OPT_COMPUTE,
	OPT_ALLREDUCE,
	OPT_OUT,
	OPT_TRACE,
	OPT_HELP,
};

static const struct option long_options[] = {
	{ "data", required_argument, NULL, OPT_DATA },
	{ "index", required_argument, NULL, OPT_INDEX },
	{ "synthetic", no_argument, NULL, OPT_SYNTHETIC },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "epochs", required_argument, NULL, OPT_EPOCHS },
	{ "batch-size", required_argument, NULL, OPT_BATCH_SIZE },
	{ "drop-last", no_argument, NULL, OPT_DROP_LAST },
	{ "compute", required_argument, NULL, OPT_COMPUTE },
	{ "allreduce", required_argument, NULL, OPT_ALLREDUCE },
	{ "out", required_argument, NULL, OPT_OUT },
	{ "trace", required_argument, NULL, OPT_TRACE },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

static bool parse_seconds(const char *option, const char *text, double *value)
{
	char *end;

	errno = 0;
	*value = strtod(text, &end);
	if (errno || end == text || *end || !isfinite(*value) || *value < 0 || *value > 86400) {
		nopfs_error("--%s: '%s' is not a number of seconds in 0 .. 86400", option, text);
		return false;
	}
	return true;
}

static bool parse_allreduce(const char *text, uint64_t *bytes)
{
	if (nopfs_parse_size(text, bytes) != NOPFS_OK || *bytes % sizeof(float) ||
	    *bytes / sizeof(float) > INT_MAX) {
		nopfs_error(
		        "--allreduce: '%s' is not a size like 1M, a multiple of %zu bytes up to "
		        "%d floats",
		        text, sizeof(float), INT_MAX);
		return false;
	}
	return true;
}

static bool parse_option(int option, const char *arg, struct train_options *o)
{
	switch (option) {
	case OPT_DATA:
		o->data = arg;
		return true;
	case OPT_INDEX:
		o->index = arg;
		return true;
	case OPT_SYNTHETIC:
		o->synthetic = true;
		return true;
	case OPT_SEED:
		return nopfs_sampler_parse_seed(arg, &o->sampler) == NOPFS_OK;
	case OPT_EPOCHS:
		return nopfs_parse_uint_option("epochs", arg, 1, 1000000, &o->epochs);
	case OPT_BATCH_SIZE:
		return nopfs_parse_uint_option("batch-size", arg, 1, UINT32_MAX, &o->batch_size);
	case OPT_DROP_LAST:
		o->sampler.drop_last = true;
		return true;
	case OPT_COMPUTE:
		return parse_seconds("compute", arg, &o->compute);
	case OPT_ALLREDUCE:
		return parse_allreduce(arg, &o->allreduce_bytes);
	case OPT_OUT:
		o->out = arg;
		return true;
	case OPT_TRACE:
		o->trace = arg;
		return true;
	default:
		return false;
	}
}

/* Per-rank output paths must name the rank when several ranks write them. */
static bool check_per_rank(const char *option, const char *path, int world)
{
	if (!path || world == 1 || strstr(path, "%r"))
		return true;
	nopfs_error("--%s: '%s' has no %%r, but %d ranks would write it", option, path, world);
	return false;
}

int train_options_parse(int argc, char **argv, int world, struct train_options *o)
{
	int option;

	opterr = 0;
	while ((option = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
		if (option == OPT_HELP)
			return 1;
		if (option == '?') {
			nopfs_error("unknown or incomplete option '%s'; see --help",
			            argv[optind - 1]);
			return 2;
		}
		if (!parse_option(option, optarg, o))
			return 2;
	}
	if (optind < argc) {
		nopfs_error("unexpected argument '%s'; see --help", argv[optind]);
		return 2;
	}
	if (!o->data && !o->index) {
		nopfs_error("no dataset: give --data DIR or --index FILE; see --help");
		return 2;
	}
	if (!check_per_rank("out", o->out, world) || !check_per_rank("trace", o->trace, world))
		return 2;
	return 0;
}

/* @pattern with %r replaced by @rank (malloc'd), or NULL when out of memory. */
char *train_expand_rank(const char *pattern, int rank)
{
	size_t length = strlen(pattern) + 1;
	const char *p;
	char *out, *q;

	for (p = strstr(pattern, "%r"); p; p = strstr(p + 2, "%r"))
		length += 10;
	out = malloc(length);
	if (!out)
		return NULL;
	for (p = pattern, q = out; *p;) {
		if (p[0] == '%' && p[1] == 'r') {
			q += sprintf(q, "%d", rank);
			p += 2;
		} else {
			*q++ = *p++;
		}
	}
	*q = '\0';
	return out;
}

/* The dataset root: --data, else the directory of --index; no trailing slash (malloc'd). */
char *train_dataset_root(const struct train_options *o)
{
	char *root = strdup(o->data ? o->data : o->index), *slash;
	size_t length;

	if (!root)
		return NULL;
	if (!o->data) {
		slash = strrchr(root, '/');
		if (!slash) {
			free(root);
			return strdup(".");
		}
		slash[slash == root] = '\0';
	}
	length = strlen(root);
	while (length > 1 && root[length - 1] == '/')
		root[--length] = '\0';
	return root;
}
