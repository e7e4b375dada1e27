/* Option tables: parsing each kind of option, the errors that name them, --help. */
#include <check.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "common/optable.h"
#include "log_capture.h"

struct toy {
	bool verbose, shuffle;
	const char *name;
	char dir[8];
	uint32_t count;
	uint64_t big;
	double wait;
	int calls;
};

static bool count_call(const char *value, void *options)
{
	struct toy *toy = options;

	if (strcmp(value, "bad") == 0) {
		nopfs_error("--call: '%s' is not good", value);
		return false;
	}
	toy->calls++;
	return true;
}

#define FIELD(field) NOPFS_OPTION_FIELD(struct toy, field)

static const struct nopfs_option rows[] = {
	{ NOPFS_OPT_TEXT("Toys:") },
	{ NOPFS_OPT_FLAG("verbose", "say more", FIELD(verbose), true) },
	{ NOPFS_OPT_FLAG("no-shuffle", "keep the order", FIELD(shuffle), false) },
	{ NOPFS_OPT_STRING("name", "NAME", "what to call it", FIELD(name)) },
	{ NOPFS_OPT_PATH("dir", "DIR", "where\nit goes", FIELD(dir)) },
	{ NOPFS_OPT_UINT("count", "N", "how many", FIELD(count), 1, 10) },
	{ NOPFS_OPT_UINT("big", "N", "a large one", FIELD(big), 0, UINT64_MAX) },
	{ NOPFS_OPT_SECONDS("wait", "SEC", "how long", FIELD(wait), 60) },
	{ NOPFS_OPT_CALL("a-rather-long-option", "VALUE", "checked by a call", count_call) },
	{ NOPFS_OPT_CALL("hidden", "X", NULL, count_call) },
	{ NOPFS_OPT_HELP(NULL) },
	{ NOPFS_OPT_END },
};

static const struct nopfs_optable table = {
	.options = rows,
	.usage = "Usage: toy [options]\n\n",
	.epilogue = "\nThat is all.\n",
	.column = 16,
};

/* Parse the NULL-terminated @args after a program name into @toy. */
static nopfs_status parse(struct toy *toy, int *operands, const char *const *args)
{
	char *argv[32] = { "toy" };
	int argc = 1;

	while (*args && argc < 31)
		argv[argc++] = (char *)*args++;
	ck_assert_ptr_null(*args); /* room for every argument, and the NULL after them */
	*toy = (struct toy){ .shuffle = true };
	log_capture_start();
	return nopfs_optable_parse(&table, argc, argv, toy, operands);
}

START_TEST(every_kind_is_stored)
{
	struct toy toy;
	int operands;

	ck_assert_int_eq(parse(&toy, &operands,
	                       (const char *const[]){ "--verbose", "--no-shuffle", "--name", "n1",
	                                              "--dir=/d", "--count", "7", "--big",
	                                              "18446744073709551615", "--wait", "1.5",
	                                              "--a-rather-long-option", "x", "--hidden",
	                                              "y", "file", NULL }),
	                 NOPFS_OK);
	ck_assert(toy.verbose);
	ck_assert(!toy.shuffle);
	ck_assert_str_eq(toy.name, "n1");
	ck_assert_str_eq(toy.dir, "/d");
	ck_assert_uint_eq(toy.count, 7);
	ck_assert_uint_eq(toy.big, UINT64_MAX);
	ck_assert_double_eq(toy.wait, 1.5);
	ck_assert_int_eq(toy.calls, 2);
	ck_assert_int_eq(operands, 16);
	ck_assert_str_eq(log_capture_buffer, "");
}
END_TEST

/* Parsing @args fails with @message, logged once. */
static void expect_error(const char *message, const char *const *args)
{
	struct toy toy;
	char line[256];

	ck_assert_int_eq(parse(&toy, NULL, args), NOPFS_ERR_INVALID);
	snprintf(line, sizeof(line), "%s\n", message);
	ck_assert_str_eq(log_capture_buffer, line);
}

START_TEST(errors_name_option_value_and_what_is_accepted)
{
	expect_error("--count: '0' is not an integer in 1 .. 10",
	             (const char *const[]){ "--count", "0", NULL });
	expect_error("--count: 'x' is not an integer in 1 .. 10",
	             (const char *const[]){ "--count=x", NULL });
	expect_error("--dir: '' is empty", (const char *const[]){ "--dir", "", NULL });
	expect_error("--dir: '/too/long' is too long",
	             (const char *const[]){ "--dir", "/too/long", NULL });
	expect_error("--wait: '61' is not a number of seconds in 0 .. 60",
	             (const char *const[]){ "--wait", "61", NULL });
	expect_error("--call: 'bad' is not good",
	             (const char *const[]){ "--a-rather-long-option", "bad", NULL });
	expect_error("unknown or incomplete option '--bogus'; see --help",
	             (const char *const[]){ "--bogus", NULL });
	expect_error("unknown or incomplete option '--count'; see --help",
	             (const char *const[]){ "--count", NULL });
	expect_error("unexpected argument 'file'; see --help",
	             (const char *const[]){ "--verbose", "file", NULL });
}
END_TEST

START_TEST(help_from_the_table)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	nopfs_optable_print_help(&table, out);
	fclose(out);
	ck_assert_str_eq(text, "Usage: toy [options]\n"
	                       "\n"
	                       "Toys:\n"
	                       "  --verbose     say more\n"
	                       "  --no-shuffle  keep the order\n"
	                       "  --name NAME   what to call it\n"
	                       "  --dir DIR     where\n"
	                       "                it goes\n"
	                       "  --count N     how many\n"
	                       "  --big N       a large one\n"
	                       "  --wait SEC    how long\n"
	                       "  --a-rather-long-option VALUE  checked by a call\n"
	                       "  --help\n"
	                       "\n"
	                       "That is all.\n");
	free(text);
}
END_TEST

START_TEST(getopt_array_maps_back_to_rows)
{
	struct option *array = nopfs_optable_getopt(&table);

	ck_assert_ptr_nonnull(array);
	ck_assert_str_eq(array[0].name, "verbose");
	ck_assert_int_eq(array[0].has_arg, no_argument);
	ck_assert_ptr_eq(nopfs_optable_option(&table, array[0].val), &rows[1]);
	ck_assert_str_eq(array[4].name, "count");
	ck_assert_int_eq(array[4].has_arg, required_argument);
	ck_assert_ptr_eq(nopfs_optable_option(&table, array[4].val), &rows[5]);
	ck_assert_ptr_null(array[10].name);
	ck_assert_ptr_null(nopfs_optable_option(&table, '?'));
	free(array);
}
END_TEST

START_TEST(help_stops_the_parse)
{
	struct toy toy;

	ck_assert_int_eq(parse(&toy, NULL, (const char *const[]){ "--help", "--bogus", NULL }),
	                 NOPFS_ERR_EMPTY);
	ck_assert_str_eq(log_capture_buffer, "");
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("optable");
	TCase *tc = tcase_create("optable");
	SRunner *runner;
	int failed;

	tcase_add_test(tc, every_kind_is_stored);
	tcase_add_test(tc, errors_name_option_value_and_what_is_accepted);
	tcase_add_test(tc, help_from_the_table);
	tcase_add_test(tc, getopt_array_maps_back_to_rows);
	tcase_add_test(tc, help_stops_the_parse);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
