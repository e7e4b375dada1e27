/* Command lines from a table of options: getopt_long(), --help and errors. */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "optable.h"
#include "units.h"

#define OPTION_VAL_BASE 256

/* "  --name VALUE" and its help, the help's lines from @column on. */
static void print_row(const struct nopfs_option *option, int column, FILE *out)
{
	int width = fprintf(out, "  --%s%s%s", option->name, option->value ? " " : "",
	                    option->value ? option->value : "");
	const char *line = option->help;

	if (!line || !*line) {
		fputc('\n', out);
		return;
	}
	fprintf(out, "%*s", width < column ? column - width : 2, "");
	for (const char *end; (end = strchr(line, '\n')); line = end + 1)
		fprintf(out, "%.*s\n%*s", (int)(end - line), line, column, "");
	fprintf(out, "%s\n", line);
}

void nopfs_optable_print_help(const struct nopfs_optable *table, FILE *out)
{
	fputs(table->usage, out);
	for (const struct nopfs_option *o = table->options; o->kind != NOPFS_OPTION_END; o++) {
		if (o->kind == NOPFS_OPTION_TEXT)
			fprintf(out, "%s\n", o->help);
		else if (o->help || o->kind == NOPFS_OPTION_HELP)
			print_row(o, table->column, out);
	}
	if (table->epilogue)
		fputs(table->epilogue, out);
}

struct option *nopfs_optable_getopt(const struct nopfs_optable *table)
{
	const struct nopfs_option *rows = table->options;
	size_t count = 0, n = 0;
	struct option *array;

	while (rows[count].kind != NOPFS_OPTION_END)
		count++;
	array = calloc(count + 1, sizeof(*array));
	if (!array)
		return NULL;
	for (size_t i = 0; i < count; i++) {
		if (rows[i].kind == NOPFS_OPTION_TEXT)
			continue;
		array[n++] = (struct option){ rows[i].name,
			                      rows[i].value ? required_argument : no_argument, NULL,
			                      OPTION_VAL_BASE + (int)i };
	}
	return array;
}

const struct nopfs_option *nopfs_optable_option(const struct nopfs_optable *table, int val)
{
	return val >= OPTION_VAL_BASE ? &table->options[val - OPTION_VAL_BASE] : NULL;
}

static bool store_path(const struct nopfs_option *option, const char *value, char *out)
{
	if (value[0] == '\0' || strlen(value) >= option->size) {
		nopfs_error("--%s: '%s' is %s", option->name, value,
		            value[0] ? "too long" : "empty");
		return false;
	}
	strcpy(out, value);
	return true;
}

/* @number into the unsigned field of @size bytes at @out (an int holds it too). */
static void store_uint(uint64_t number, size_t size, void *out)
{
	uint8_t u8 = (uint8_t)number;
	uint16_t u16 = (uint16_t)number;
	uint32_t u32 = (uint32_t)number;

	if (size == sizeof(u8))
		memcpy(out, &u8, size);
	else if (size == sizeof(u16))
		memcpy(out, &u16, size);
	else if (size == sizeof(u32))
		memcpy(out, &u32, size);
	else
		memcpy(out, &number, sizeof(number));
}

static bool store_seconds(const struct nopfs_option *option, const char *value, double *out)
{
	char *end;
	double seconds = strtod(value, &end);

	if (end == value || *end != '\0' || !(seconds >= 0) || seconds > option->max_seconds) {
		nopfs_error("--%s: '%s' is not a number of seconds in 0 .. %g", option->name, value,
		            option->max_seconds);
		return false;
	}
	*out = seconds;
	return true;
}

bool nopfs_option_store(const struct nopfs_option *option, const char *value, void *options)
{
	char *field = (char *)options + option->offset;
	uint64_t number;

	switch (option->kind) {
	case NOPFS_OPTION_FLAG:
		*(bool *)field = option->flag;
		return true;
	case NOPFS_OPTION_STRING:
		*(const char **)field = value;
		return true;
	case NOPFS_OPTION_PATH:
		return store_path(option, value, field);
	case NOPFS_OPTION_UINT:
		if (!nopfs_parse_uint_option(option->name, value, option->min, option->max,
		                             &number))
			return false;
		store_uint(number, option->size, field);
		return true;
	case NOPFS_OPTION_SECONDS:
		return store_seconds(option, value, (double *)field);
	case NOPFS_OPTION_CALL:
		return option->parse(value, options);
	default:
		nopfs_error("--%s: not an option with a value", option->name);
		return false;
	}
}

nopfs_status nopfs_optable_parse(const struct nopfs_optable *table, int argc, char **argv,
                                 void *options, int *operands)
{
	struct option *array = nopfs_optable_getopt(table);
	nopfs_status status = NOPFS_OK;
	int val;

	if (!array) {
		nopfs_error("out of memory reading the command line");
		return NOPFS_ERR_NOMEM;
	}
	opterr = 0;
	optind = 1;
	while (status == NOPFS_OK && (val = getopt_long(argc, argv, "", array, NULL)) != -1) {
		const struct nopfs_option *option = nopfs_optable_option(table, val);

		if (!option) {
			nopfs_error("unknown or incomplete option '%s'; see --help",
			            argv[optind - 1]);
			status = NOPFS_ERR_INVALID;
		} else if (option->kind == NOPFS_OPTION_HELP) {
			status = NOPFS_ERR_EMPTY;
		} else if (!nopfs_option_store(option, optarg, options)) {
			status = NOPFS_ERR_INVALID;
		}
	}
	free(array);
	if (status == NOPFS_OK && !operands && optind < argc) {
		nopfs_error("unexpected argument '%s'; see --help", argv[optind]);
		status = NOPFS_ERR_INVALID;
	}
	if (operands)
		*operands = optind;
	return status;
}
