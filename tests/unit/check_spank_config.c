/* The plugin's plugstack.conf arguments: defaults, every key, and errors that name the key. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "plugin.h"

static void parse(struct spank_config *config, const char *line)
{
	char copy[1024], *argv[16], *save = NULL;
	int argc = 0;

	snprintf(copy, sizeof(copy), "%s", line);
	for (char *word = strtok_r(copy, " ", &save); word && argc < 16;
	     word = strtok_r(NULL, " ", &save))
		argv[argc++] = word;
	config_parse(config, argc, argv);
}

START_TEST(defaults)
{
	struct spank_config config;

	parse(&config, "");
	ck_assert_str_eq(config.error, "");
	ck_assert(config.enabled);
	ck_assert_str_eq(config.tiers, "ram:40%");
	ck_assert_str_eq(config.srun, "/usr/bin/srun");
	ck_assert(config.ram_max_percent == 60);
	ck_assert_uint_eq(config.ready_timeout, 120);
	ck_assert_str_eq(config.ssd_base, "");
}
END_TEST

START_TEST(every_key)
{
	struct spank_config config;

	parse(&config, "enable=no bindir=/opt/nopfs/bin preload=/opt/nopfs/lib/p.so srun=/opt/srun "
	               "tiers=ram:8G,ssd:100G ram_max=75% ssd_base=/local bench_cache=/var/cache/n "
	               "report_dir=/scratch/r ready_timeout=30 report_wait=0");
	ck_assert_str_eq(config.error, "");
	ck_assert(!config.enabled);
	ck_assert_str_eq(config.bindir, "/opt/nopfs/bin");
	ck_assert_str_eq(config.preload, "/opt/nopfs/lib/p.so");
	ck_assert_str_eq(config.srun, "/opt/srun");
	ck_assert_str_eq(config.tiers, "ram:8G,ssd:100G");
	ck_assert(config.ram_max_percent == 75);
	ck_assert_str_eq(config.ssd_base, "/local");
	ck_assert_str_eq(config.bench_cache, "/var/cache/n");
	ck_assert_str_eq(config.report_dir, "/scratch/r");
	ck_assert_uint_eq(config.ready_timeout, 30);
	ck_assert_uint_eq(config.report_wait, 0);
}
END_TEST

/* @line must leave an error containing @fragment. */
static void expect_error(const char *line, const char *fragment)
{
	struct spank_config config;

	parse(&config, line);
	ck_assert_msg(strstr(config.error, fragment), "'%s': error '%s' lacks '%s'", line,
	              config.error, fragment);
}

START_TEST(errors_name_the_key)
{
	expect_error("tiers=ram:10% colour=blue", "unknown key 'colour'");
	expect_error("bindir", "key 'bindir' needs a value");
	expect_error("bindir=relative/bin", "bindir=relative/bin is not valid");
	expect_error("enable=maybe", "enable=maybe is not valid; accepted: yes or no");
	expect_error("ram_max=150%", "ram_max=150% is not valid");
	expect_error("ram_max=50", "ram_max=50 is not valid");
	expect_error("ready_timeout=soon", "ready_timeout=soon is not valid; accepted: seconds");
	expect_error("tiers=disk:5G", "unknown tier kind 'disk'");
	expect_error("report_wait=99999", "report_wait=99999 is not valid");
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("spank_config");
	TCase *tc = tcase_create("spank_config");
	SRunner *runner;
	int failed;

	tcase_add_test(tc, defaults);
	tcase_add_test(tc, every_key);
	tcase_add_test(tc, errors_name_the_key);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? 0 : 1;
}
