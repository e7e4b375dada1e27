/*
 * train_mpi's options (train_mpi_options.c) and what the training loop
 * (train_mpi.c) needs of them.
 */
#ifndef NOPFS_TRAIN_MPI_H
#define NOPFS_TRAIN_MPI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "plan/sampler.h"

#define PROGRAM "train_mpi"
/* torchvision ImageFolder(..., is_valid_file=lambda p: p.endswith(".JPEG")) */
#define JPEG_SUFFIX ".JPEG"

struct train_options {
	const char *data;  /* --data DIR, or NULL */
	const char *index; /* --index FILE (a list), or NULL: ImageFolder */
	bool synthetic;
	uint64_t epochs;
	uint64_t batch_size;
	double compute;               /* seconds of sleep per step */
	uint64_t allreduce_bytes;     /* a multiple of sizeof(float) */
	const char *out;              /* CSV path with %r, or NULL */
	const char *trace;            /* trace path with %r, or NULL */
	struct nopfs_sampler sampler; /* seed and drop_last; count and world set later */
};

/* The --help text. */
void train_options_print_help(FILE *out);

/*
 * Parse the command line into @o (its defaults set by the caller) for a job
 * of @world ranks. Returns 0 to run, 1 when --help was given, 2 for bad
 * options (logged, naming the option).
 */
int train_options_parse(int argc, char **argv, int world, struct train_options *o);

/* @pattern with every %r replaced by @rank (malloc'd), or NULL when out of memory. */
char *train_expand_rank(const char *pattern, int rank);

/*
 * The dataset root: --data, else the directory of --index; no trailing slash
 * (malloc'd), or NULL when out of memory.
 */
char *train_dataset_root(const struct train_options *o);

#endif
