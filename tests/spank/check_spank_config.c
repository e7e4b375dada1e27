/*
 * The plugin's plugstack.conf arguments: defaults, every key, and errors that
 * name the key. And the description of a step the running agents re-plan
 * for: its tasks over the agent step's nodes, and NOPFS_SPANK_PLAN's value.
 * And the agent step's command line with and without --nopfs-keep and the
 * validation set's options.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "companion.h"
#include "plugin.h"

/* What companion.c needs of the rest of the plugin and of libslurm. */
struct spank_config nopfs_config;
struct spank_request nopfs_request;

void slurm_error(const char *format, ...)
{
	va_list args;

	va_start(args, format);
	vfprintf(stderr, format, args);
	va_end(args);
	fputc('\n', stderr);
}

static void parse(struct spank_config *config, const char *line)
{
	char copy[1024], *argv[32], *save = NULL;
	int argc = 0;

	snprintf(copy, sizeof(copy), "%s", line);
	for (char *word = strtok_r(copy, " ", &save); word && argc < 32;
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
	ck_assert(!config.admin_comment);
	ck_assert_str_eq(config.sacctmgr, "/usr/bin/sacctmgr");
	/* nothing kept between jobs unless the admin says where */
	ck_assert_str_eq(config.cache_base, "");
	ck_assert_uint_eq(config.cache_limit, 0);
	ck_assert_uint_eq(config.cache_max_age, 0);
}
END_TEST

START_TEST(every_key)
{
	struct spank_config config;

	parse(&config, "enable=no bindir=/opt/nopfs/bin preload=/opt/nopfs/lib/p.so srun=/opt/srun "
	               "tiers=ram:8G,ssd:100G ram_max=75% ssd_base=/local probe_cache=/var/cache/n "
	               "report_dir=/scratch/r ready_timeout=30 report_wait=0 admin_comment=yes "
	               "sacctmgr=/opt/slurm/bin/sacctmgr max_sample_size=256M "
	               "cache_base=/local/nopfs-cache cache_limit=500G cache_max_age=30d");
	ck_assert_str_eq(config.error, "");
	ck_assert(!config.enabled);
	ck_assert_str_eq(config.bindir, "/opt/nopfs/bin");
	ck_assert_str_eq(config.preload, "/opt/nopfs/lib/p.so");
	ck_assert_str_eq(config.srun, "/opt/srun");
	ck_assert_str_eq(config.tiers, "ram:8G,ssd:100G");
	ck_assert(config.ram_max_percent == 75);
	ck_assert_str_eq(config.ssd_base, "/local");
	ck_assert_str_eq(config.probe_cache, "/var/cache/n");
	ck_assert_str_eq(config.report_dir, "/scratch/r");
	ck_assert_uint_eq(config.ready_timeout, 30);
	ck_assert_uint_eq(config.report_wait, 0);
	ck_assert(config.admin_comment);
	ck_assert_str_eq(config.sacctmgr, "/opt/slurm/bin/sacctmgr");
	ck_assert_str_eq(config.max_sample_size, "256M");
	ck_assert_str_eq(config.cache_base, "/local/nopfs-cache");
	ck_assert_uint_eq(config.cache_limit, 500ull << 30);
	ck_assert_uint_eq(config.cache_max_age, 30 * 86400);
}
END_TEST

/* cache_limit's sizes and cache_max_age's units, as parsed. */
START_TEST(cache_keys)
{
	static const struct {
		const char *line;
		uint64_t limit, age;
	} cases[] = {
		{ "cache_base=/c cache_limit=0", 0, 0 },
		{ "cache_base=/c cache_limit=1536", 1536, 0 },
		{ "cache_base=/c cache_limit=64K", 64 << 10, 0 },
		{ "cache_base=/c cache_limit=1.5T", 3ull << 39, 0 },
		{ "cache_base=/c cache_limit=2g", 2ull << 30, 0 },
		{ "cache_base=/c cache_max_age=45s", 0, 45 },
		{ "cache_base=/c cache_max_age=90m", 0, 5400 },
		{ "cache_base=/c cache_max_age=12h", 0, 43200 },
		{ "cache_base=/c cache_max_age=36500d cache_limit=1M", 1 << 20, 36500ull * 86400 },
		{ "cache_limit=0 cache_base=/c", 0, 0 }, /* 0 is no limit: any order */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct spank_config config;

		parse(&config, cases[i].line);
		ck_assert_msg(config.error[0] == '\0', "'%s': %s", cases[i].line, config.error);
		ck_assert_str_eq(config.cache_base, "/c");
		ck_assert_msg(config.cache_limit == cases[i].limit, "'%s': limit %llu",
		              cases[i].line, (unsigned long long)config.cache_limit);
		ck_assert_msg(config.cache_max_age == cases[i].age, "'%s': age %llu", cases[i].line,
		              (unsigned long long)config.cache_max_age);
	}
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
	expect_error("admin_comment=sometimes",
	             "admin_comment=sometimes is not valid; accepted: yes or no");
	expect_error("sacctmgr=sacctmgr", "sacctmgr=sacctmgr is not valid; accepted: the absolute");
	expect_error("max_sample_size=0", "max_sample_size=0 is not valid; accepted: a size");
	expect_error("max_sample_size=big", "max_sample_size=big is not valid; accepted: a size");
	expect_error("cache_base=var/cache",
	             "cache_base=var/cache is not valid; accepted: an absolute");
	expect_error("cache_base", "key 'cache_base' needs a value");
	expect_error("cache_base=/c cache_limit=lots",
	             "cache_limit=lots is not valid; accepted: a size");
	expect_error("cache_base=/c cache_limit=-1G", "cache_limit=-1G is not valid");
	expect_error("cache_base=/c cache_limit=", "cache_limit= is not valid");
	expect_error("cache_base=/c cache_max_age=30",
	             "cache_max_age=30 is not valid; accepted: a duration");
	expect_error("cache_base=/c cache_max_age=0d", "cache_max_age=0d is not valid");
	expect_error("cache_base=/c cache_max_age=2w", "cache_max_age=2w is not valid");
	expect_error("cache_base=/c cache_max_age=d", "cache_max_age=d is not valid");
	expect_error("cache_base=/c cache_max_age=1.5h", "cache_max_age=1.5h is not valid");
	expect_error("cache_base=/c cache_max_age=-3d", "cache_max_age=-3d is not valid");
	expect_error("cache_base=/c cache_max_age=36526d", "cache_max_age=36526d is not valid");
	expect_error("cache_base=/c cache_max_age=99999999999999999999s",
	             "cache_max_age=99999999999999999999s is not valid");
	/* limits with nowhere to keep caches: the missing key is named */
	expect_error("cache_limit=100G", "cache_limit needs cache_base");
	expect_error("cache_max_age=7d", "cache_max_age needs cache_base");
}
END_TEST

/* companion_step_tasks() over space-separated node lists: its output, or "!" and the reason. */
static const char *step_tasks(const char *agent_list, const char *step_list, const char *tasks)
{
	static char out[STEP_TASKS_MAX];
	char agent_copy[256], step_copy[256], why[256], *agents[16], *steps[16], *save = NULL;
	unsigned int agent_count = 0, step_count = 0;

	snprintf(agent_copy, sizeof(agent_copy), "%s", agent_list);
	snprintf(step_copy, sizeof(step_copy), "%s", step_list);
	for (char *n = strtok_r(agent_copy, " ", &save); n && agent_count < 16;
	     n = strtok_r(NULL, " ", &save))
		agents[agent_count++] = n;
	for (char *n = strtok_r(step_copy, " ", &save); n && step_count < 16;
	     n = strtok_r(NULL, " ", &save))
		steps[step_count++] = n;
	if (companion_step_tasks(agents, agent_count, steps, step_count, tasks, out, sizeof(out),
	                         why, sizeof(why)) != 0)
		snprintf(out, sizeof(out), "!%s", why);
	return out;
}

START_TEST(step_tasks_over_agent_nodes)
{
	/* agents on n[1-3], a step on n1 and n3 with 2 tasks each */
	ck_assert_str_eq(step_tasks("n1 n2 n3", "n1 n3", "2(x2)"), "2,0,2");
	ck_assert_str_eq(step_tasks("n1 n2 n3", "n1 n2 n3", "2(x3)"), "2(x3)");
	ck_assert_str_eq(step_tasks("n1 n2 n3 n4", "n2 n3", "4,1"), "0,4,1,0");
	ck_assert_str_eq(step_tasks("n1 n2 n3 n4 n5", "n4 n5", "3(x2)"), "0(x3),3(x2)");
	/* the step's own order decides which count goes where */
	ck_assert_str_eq(step_tasks("a b c", "c a", "1,5"), "5,0,1");
}
END_TEST

START_TEST(step_tasks_refused)
{
	const char *out = step_tasks("n1 n2", "n1 n9", "1,1");

	ck_assert_msg(strstr(out, "!its node n9 runs no agent"), "got '%s'", out);
	out = step_tasks("n1 n2", "n1 n2", "1(x3)");
	ck_assert_msg(strstr(out, "do not fit its 2 nodes"), "got '%s'", out);
	out = step_tasks("n1 n2", "n1 n2", "1");
	ck_assert_msg(strstr(out, "do not fit its 2 nodes"), "got '%s'", out);
	out = step_tasks("n1 n2", "n1 n2", "1,x");
	ck_assert_msg(strstr(out, "do not fit its 2 nodes"), "got '%s'", out);
	out = step_tasks("n1 n2", "n1 n2", "1(x0),1");
	ck_assert_msg(out[0] == '!', "got '%s'", out);
}
END_TEST

/* NOPFS_SPANK_PLAN's value with '|' for the separator, or "!" and the reason. */
static const char *plan(unsigned long long generation, const char *step_tasks_list)
{
	static char out[NOPFS_SPANK_PLAN_MAX], why[256];

	if (companion_plan(generation, step_tasks_list, "cyclic", out, sizeof(out), why,
	                   sizeof(why)) != 0) {
		snprintf(out, sizeof(out), "!%s", why);
		return out;
	}
	for (char *at = out; (at = strchr(at, NOPFS_PLAN_SEPARATOR)); at++)
		*at = '|';
	return out;
}

START_TEST(plan_value)
{
	nopfs_request = (struct spank_request){
		.active = true, .seed = 7, .epochs = 3, .shuffle = true, .set_epoch = true
	};
	strcpy(nopfs_request.dataset, "/data/set");
	ck_assert_str_eq(plan(5, "2,0,2"), "5|--dataset|/data/set|--index|imagefolder|--seed|7|"
	                                   "--epochs|3|--start-epoch|0|--start-sample|0|"
	                                   "--step-tasks|2,0,2|"
	                                   "--step-distribution|cyclic");
	nopfs_request.shuffle = false;
	nopfs_request.set_epoch = false; /* every epoch in epoch 0's order */
	nopfs_request.drop_last = true;
	nopfs_request.start_epoch = 2;    /* a resumed job */
	nopfs_request.start_sample = 300; /* within its epoch 2 */
	strcpy(nopfs_request.index, "list:/data/files.txt");
	ck_assert_str_eq(plan(1, "1"), "1|--dataset|/data/set|--index|list:/data/files.txt|"
	                               "--seed|7|--epochs|3|--start-epoch|2|--start-sample|300|"
	                               "--step-tasks|1|"
	                               "--step-distribution|cyclic|--no-shuffle|--no-set-epoch|"
	                               "--drop-last");
	/* one argument a line in the step file: a line break cannot be carried */
	strcpy(nopfs_request.dataset, "/data/two\nlines");
	ck_assert_msg(strstr(plan(1, "1"), "!'/data/two\nlines' holds a line break"), "got '%s'",
	              plan(1, "1"));
	strcpy(nopfs_request.dataset, "/data/unit\x1fseparated");
	ck_assert_msg(plan(1, "1")[0] == '!', "a 0x1f byte is refused");
}
END_TEST

/*
 * The agent step's command line as companion_start() writes it to its log
 * (srun: /bin/true, so nothing is started), one argument a line.
 */
static char *agent_command(void)
{
	struct step_layout layout = {
		.nodes = "n1", .node_count = 1, .tasks_per_node = "1", .distribution = "block"
	};
	char path[] = "/tmp/check_spank_config.XXXXXX";
	static char text[16384];
	int fd = mkstemp(path), status;
	ssize_t got;
	pid_t pid = 0;

	ck_assert_int_ge(fd, 0);
	unlink(path);
	ck_assert_int_eq(companion_start(42, &layout, NULL, fd, false, &pid), 0);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	got = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	ck_assert_int_gt(got, 0);
	text[got] = '\0';
	return text;
}

/* Does @command hold the argument @argument, whole (followed by a space or its end)? */
static bool has_argument(const char *command, const char *argument)
{
	size_t length = strlen(argument);

	for (const char *at = command; (at = strstr(at, argument)); at++)
		if (at > command && at[-1] == ' ' && (at[length] == ' ' || at[length] == '\n'))
			return true;
	return false;
}

START_TEST(keep_dir_argument)
{
	char expected[64];

	nopfs_request = (struct spank_request){ .active = true, .epochs = 1, .shuffle = true };
	strcpy(nopfs_request.dataset, "/data/set");
	strcpy(nopfs_request.report, "/tmp/nopfs-42.json");
	parse(&nopfs_config, "srun=/bin/true cache_base=/local/nopfs-cache");
	ck_assert_str_eq(nopfs_config.error, "");
	/* the job user's directory: the effective uid, as srun and slurmstepd have it */
	snprintf(expected, sizeof(expected), "--keep-dir /local/nopfs-cache/%u", geteuid());
	ck_assert_msg(!strstr(agent_command(), "--keep-dir"), "no --nopfs-keep: %s",
	              agent_command());
	nopfs_request.keep = true;
	ck_assert_msg(has_argument(agent_command(), expected), "--nopfs-keep=yes: no '%s' in %s",
	              expected, agent_command());
	/* refused by options_finish() before; here it is simply not passed */
	parse(&nopfs_config, "srun=/bin/true");
	ck_assert_msg(!strstr(agent_command(), "--keep-dir"), "no cache_base: %s", agent_command());
}
END_TEST

START_TEST(val_arguments)
{
	nopfs_request = (struct spank_request){ .active = true, .epochs = 1, .shuffle = true };
	strcpy(nopfs_request.dataset, "/data/set");
	strcpy(nopfs_request.report, "/tmp/nopfs-42.json");
	parse(&nopfs_config, "srun=/bin/true");
	ck_assert_str_eq(nopfs_config.error, "");
	ck_assert_msg(!strstr(agent_command(), "--val-"), "no validation set: %s", agent_command());
	/* distributed, the default: the agents' own default, not said */
	strcpy(nopfs_request.val_dataset, "/data/val");
	ck_assert_msg(has_argument(agent_command(), "--val-dataset /data/val"),
	              "--nopfs-val-dataset: %s", agent_command());
	ck_assert_msg(!strstr(agent_command(), "--val-sampler"), "distributed: %s",
	              agent_command());
	ck_assert_msg(has_argument(agent_command(), "--dataset /data/set"), "%s", agent_command());
	nopfs_request.val_all = true;
	ck_assert_msg(has_argument(agent_command(), "--val-dataset /data/val --val-sampler all"),
	              "--nopfs-val-sampler=all: %s", agent_command());
	/* the agents take it at their start only: a later step's description has none */
	ck_assert_msg(!strstr(plan(3, "1"), "val"), "the description of a later step: %s",
	              plan(3, "1"));
	/* refused by options_finish() before; here a sampler without a set is not passed */
	nopfs_request.val_dataset[0] = '\0';
	ck_assert_msg(!strstr(agent_command(), "--val-"), "a sampler alone: %s", agent_command());
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
	tcase_add_test(tc, cache_keys);
	tcase_add_test(tc, errors_name_the_key);
	tcase_add_test(tc, step_tasks_over_agent_nodes);
	tcase_add_test(tc, step_tasks_refused);
	tcase_add_test(tc, plan_value);
	tcase_add_test(tc, keep_dir_argument);
	tcase_add_test(tc, val_arguments);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? 0 : 1;
}
