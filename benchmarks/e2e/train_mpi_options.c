/*
 * train_mpi's command line: the option table (every bad value named with its
 * option), per-rank output paths and the dataset root.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/optable.h"
#include "train_mpi.h"
#include "common/units.h"

static bool parse_seed(const char *value, void *options)
{
	return nopfs_sampler_parse_seed(value, &((struct train_options *)options)->sampler) ==
	       NOPFS_OK;
}

static bool parse_allreduce(const char *text, void *options)
{
	uint64_t *bytes = &((struct train_options *)options)->allreduce_bytes;

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

#define FIELD(field) NOPFS_OPTION_FIELD(struct train_options, field)

static const struct nopfs_option option_rows[] = {
	{ NOPFS_OPT_TEXT("Dataset:") },
	{ NOPFS_OPT_STRING("data", "DIR", "ImageFolder tree: class directories of .JPEG files",
	                   FIELD(data)) },
	{ NOPFS_OPT_STRING("index", "FILE",
	                   "list file, one sample per line [LABEL]; paths relative to\n"
	                   "--data (default: the list file's directory)",
	                   FIELD(index)) },
	{ NOPFS_OPT_FLAG("synthetic", "same samples and sizes, bytes from memory (no file opened)",
	                 FIELD(synthetic), true) },
	{ NOPFS_OPT_TEXT("") },
	{ NOPFS_OPT_TEXT(
	        "Training (DistributedSampler with shuffle=True; world and rank from MPI):") },
	{ NOPFS_OPT_CALL("seed", "N", "the sampler's seed (default 0)", parse_seed) },
	{ NOPFS_OPT_UINT("epochs", "E", "epochs (default 1)", FIELD(epochs), 1, 1000000) },
	{ NOPFS_OPT_UINT("batch-size", "B",
	                 "samples per step; an epoch's last batch may be smaller\n(default 32)",
	                 FIELD(batch_size), 1, UINT32_MAX) },
	{ NOPFS_OPT_FLAG("drop-last", "the sampler drops the tail instead of padding",
	                 FIELD(sampler.drop_last), true) },
	{ NOPFS_OPT_SECONDS(
	        "compute", "SECONDS",
	        "sleep per step (forward, then backward with the\nallreduce under way; default 0)",
	        FIELD(compute), 86400) },
	{ NOPFS_OPT_CALL("allreduce", "BYTES",
	                 "float buffer allreduced per step, e.g. 4M; 0: none (default 1M)",
	                 parse_allreduce) },
	{ NOPFS_OPT_TEXT("") },
	{ NOPFS_OPT_TEXT("Output:") },
	{ NOPFS_OPT_STRING("out", "PATH",
	                   "CSV, one row per batch; %r is the rank. Columns: rank, epoch,\n"
	                   "batch, samples, bytes, t_request, t_ready (read), t_done\n"
	                   "(exchanged and computed); wall-clock seconds",
	                   FIELD(out)) },
	{ NOPFS_OPT_STRING("trace", "PATH", "'epoch index bytes' per sample read; %r is the rank",
	                   FIELD(trace)) },
	{ NOPFS_OPT_HELP("this text") },
	{ NOPFS_OPT_END },
};

static const struct nopfs_optable option_table = {
	.options = option_rows,
	.usage = "Usage: mpirun ... train_mpi (--data DIR | --index FILE) [OPTIONS]\n\n",
	.column = 22,
};

void train_options_print_help(FILE *out)
{
	nopfs_optable_print_help(&option_table, out);
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
	nopfs_status status = nopfs_optable_parse(&option_table, argc, argv, o, NULL);

	if (status != NOPFS_OK)
		return status == NOPFS_ERR_EMPTY ? 1 : 2;
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
