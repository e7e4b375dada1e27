/*
 * Command lines from a table of options. Each row names a long option, what
 * its value is called, a line of help, and how the value is checked and where
 * it is stored (at an offset in the caller's options struct). From the table
 * come getopt_long()'s array, the --help text and the error messages, which
 * name the option, the bad value and what is accepted.
 */
#ifndef NOPFS_OPTABLE_H
#define NOPFS_OPTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "status.h"

enum nopfs_option_kind {
	NOPFS_OPTION_END,     /* ends the table */
	NOPFS_OPTION_TEXT,    /* no option: a line of --help as it is (a heading) */
	NOPFS_OPTION_HELP,    /* --help: stop, for the caller to print the help */
	NOPFS_OPTION_FLAG,    /* no value: store .flag in a bool */
	NOPFS_OPTION_STRING,  /* store the value itself (a const char * into argv) */
	NOPFS_OPTION_PATH,    /* copy the value, not empty, into a char array */
	NOPFS_OPTION_UINT,    /* an integer in .min .. .max, into an unsigned field */
	NOPFS_OPTION_SECONDS, /* a number of seconds in 0 .. .max_seconds, into a double */
	NOPFS_OPTION_CALL,    /* .parse() checks and stores it, and logs what is wrong */
};

struct nopfs_option {
	enum nopfs_option_kind kind;
	const char *name;  /* without "--"; TEXT: NULL */
	const char *value; /* what --help calls the value ("DIR"); NULL: takes none */
	const char *help;  /* for --help; each '\n' starts a line under the first;
	                    * NULL: not shown (TEXT rows may say it), but --help */
	int id;            /* the caller's name for the option, for its own checks */
	size_t offset;     /* where the value goes in the caller's struct */
	size_t size;       /* PATH: the array's size; UINT: the field's (1, 2, 4, 8) */
	uint64_t min, max; /* UINT */
	double max_seconds;
	bool flag; /* FLAG: the value stored */
	/* CALL: store @value in @options (the caller's struct); false after logging why. */
	bool (*parse)(const char *value, void *options);
};

/* Where a value goes: @field of the caller's struct @type. */
#define NOPFS_OPTION_FIELD(type, field) \
	.offset = offsetof(type, field), .size = sizeof(((type *)0)->field)

/*
 * A row's contents, to write between braces: @n the name, @v what the value
 * is called, @h the help, @at a NOPFS_OPTION_FIELD(). More may follow
 * (".id = ...").
 */
#define NOPFS_OPT_TEXT(h) .kind = NOPFS_OPTION_TEXT, .help = (h)
#define NOPFS_OPT_HELP(h) .kind = NOPFS_OPTION_HELP, .name = "help", .help = (h)
#define NOPFS_OPT_FLAG(n, h, at, v) \
	.kind = NOPFS_OPTION_FLAG, .name = (n), .help = (h), at, .flag = (v)
#define NOPFS_OPT_STRING(n, v, h, at) \
	.kind = NOPFS_OPTION_STRING, .name = (n), .value = (v), .help = (h), at
#define NOPFS_OPT_PATH(n, v, h, at) \
	.kind = NOPFS_OPTION_PATH, .name = (n), .value = (v), .help = (h), at
#define NOPFS_OPT_UINT(n, v, h, at, low, high)                                               \
	.kind = NOPFS_OPTION_UINT, .name = (n), .value = (v), .help = (h), at, .min = (low), \
	.max = (high)
#define NOPFS_OPT_SECONDS(n, v, h, at, most)                                      \
	.kind = NOPFS_OPTION_SECONDS, .name = (n), .value = (v), .help = (h), at, \
	.max_seconds = (most)
#define NOPFS_OPT_CALL(n, v, h, function) \
	.kind = NOPFS_OPTION_CALL, .name = (n), .value = (v), .help = (h), .parse = (function)
#define NOPFS_OPT_END .kind = NOPFS_OPTION_END

/* What the tool's --help says around the rows, and how the rows line up. */
struct nopfs_optable {
	const struct nopfs_option *options; /* ends with a NOPFS_OPTION_END row */
	const char *usage;                  /* before the rows ("Usage: ...\n\n...") */
	const char *epilogue;               /* after them, or NULL */
	int column;                         /* where the help of each row starts */
};

/* Print the --help text of @table on @out. */
void nopfs_optable_print_help(const struct nopfs_optable *table, FILE *out);

/*
 * getopt_long()'s array for @table (malloc'd, the caller frees; NULL when out
 * of memory): each option's val is 256 plus its row's index.
 */
struct option *nopfs_optable_getopt(const struct nopfs_optable *table);

/* The row of the option getopt_long() returned as @val from that array; NULL for '?'. */
const struct nopfs_option *nopfs_optable_option(const struct nopfs_optable *table, int val);

/* Check and store @value (NULL for a FLAG) of @option in @options; false after logging why. */
bool nopfs_option_store(const struct nopfs_option *option, const char *value, void *options);

/*
 * Parse @argv into @options (the caller's struct). NOPFS_OK with *@operands
 * the index of the first argument that is no option; NOPFS_ERR_EMPTY when
 * --help was asked (the caller prints nopfs_optable_print_help() where it
 * wants); NOPFS_ERR_INVALID after logging what is wrong. With @operands NULL,
 * arguments that are no option are an error too. Uses getopt_long(), so it is
 * not thread-safe.
 */
nopfs_status nopfs_optable_parse(const struct nopfs_optable *table, int argc, char **argv,
                                 void *options, int *operands);

#endif
