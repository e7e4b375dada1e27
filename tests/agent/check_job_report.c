/*
 * Node 0's job report (agent/job_report.c): it waits for the other nodes'
 * reports up to --merge-wait, takes the ones that come, names the ones that
 * do not (or are another job's) as missing, and never fails because of them.
 */
#include "config.h"

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "log_capture.h"
#include "peer/peer.h"
#include "report/report.h"
#include "common/clock.h"

static char work[] = "/tmp/check_job_report.XXXXXX";
static struct agent agent;

/* A minimal node report of @node in job @job_id with @pfs PFS bytes. */
static json_t *node_report(uint32_t node, const char *job_id, json_int_t pfs)
{
	static const char *const sources[] = { "staging", "ram", "ssd", "peer", "pfs" };
	json_t *delivered = json_object();

	for (int s = 0; s < 5; s++)
		json_object_set_new(delivered, sources[s],
		                    json_pack("{s:i, s:i}", "samples", 1, "bytes", 10));
	return json_pack("{s:s, s:i, s:{s:s, s:i, s:i, s:i}, s:O, s:o, s:{s:I, s:i, s:i}, "
	                 "s:{s:i, s:f, s:f}, s:{s:i}}",
	                 "job_id", job_id, "node", (int)node, "job", "dataset", "/data", "samples",
	                 10, "epochs", 2, "world_size", 4, "delivered_staged", delivered,
	                 "delivered_on_request", delivered, "pfs", "bytes", pfs, "probe_bytes", 0,
	                 "dataset_bytes", 100, "stall", "requests", 0, "seconds", 0.0,
	                 "max_seconds", 0.0, "fallbacks", "timeout", 0);
}

/* The data plane's view of the nodes, as the test sets it. */
static bool lost[3];

bool peer_plane_lost(struct peer_plane *plane, uint32_t node)
{
	ck_assert_ptr_eq(plane, agent.peers);
	return node < 3 && lost[node];
}

/* The agent's own report when its file is missing: node 0's figures. */
json_t *report_json(struct agent *a)
{
	return node_report(a->job.node, a->options.job_id, 1000);
}

static void write_report(uint32_t node, const char *job_id, json_int_t pfs)
{
	char path[PATH_MAX];
	json_t *report = node_report(node, job_id, pfs);

	snprintf(path, sizeof(path), "%s/report-%u.json", work, node);
	ck_assert_int_eq(nopfs_report_write(report, path, 0600, NULL), 0);
	json_decref(report);
}

/* Node @node's report with "final": @final (written on SIGUSR1 when false). */
static void write_report_final(uint32_t node, json_int_t pfs, bool final)
{
	char path[PATH_MAX];
	json_t *report = node_report(node, "job", pfs);

	json_object_set_new(report, "final", json_boolean(final));
	snprintf(path, sizeof(path), "%s/report-%u.json", work, node);
	ck_assert_int_eq(nopfs_report_write(report, path, 0600, NULL), 0);
	json_decref(report);
}

static void *finish_node_1(void *arg)
{
	usleep(300000);
	write_report_final(1, 2000, true);
	return NULL;
}

static void *write_later(void *arg)
{
	usleep(300000);
	write_report(1, "job", 2000);
	return NULL;
}

static json_t *merged_report(void)
{
	json_t *merged = json_load_file(agent.options.merged_report_path, 0, NULL);

	ck_assert_ptr_nonnull(merged);
	return merged;
}

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(work));
	agent = (struct agent){ .options = { .merge_wait = 1, .job_id = "job" } };
	memset(lost, 0, sizeof(lost));
	agent.bootstrap.active = true;
	agent.bootstrap.nodes = 3;
	snprintf(agent.options.report_pattern, sizeof(agent.options.report_pattern),
	         "%s/report-%%n.json", work);
	snprintf(agent.options.report_path, sizeof(agent.options.report_path), "%s/report-0.json",
	         work);
	snprintf(agent.options.merged_report_path, sizeof(agent.options.merged_report_path),
	         "%s/job.json", work);
}

static void teardown(void)
{
	char command[PATH_MAX + 16];

	snprintf(command, sizeof(command), "rm -rf %s", work);
	ck_assert_int_eq(system(command), 0);
	strcpy(work + strlen(work) - 6, "XXXXXX");
}

START_TEST(late_missing_and_foreign)
{
	pthread_t writer;
	uint64_t started;
	json_t *merged;

	write_report(0, "job", 1000);
	write_report(2, "another-job", 5000); /* a leftover of another job */
	ck_assert_int_eq(pthread_create(&writer, NULL, write_later, NULL), 0);
	log_capture_start();
	started = nopfs_clock_now_ns();
	ck_assert_int_eq(job_report_write(&agent), NOPFS_OK);
	/* Waited the whole --merge-wait for node 2, and no more. */
	ck_assert_uint_ge(nopfs_clock_now_ns() - started, 1000000000ull);
	ck_assert_uint_lt(nopfs_clock_now_ns() - started, 1500000000ull);
	pthread_join(writer, NULL);
	ck_assert_msg(log_captured("no report from node 2"), "%s", log_capture_buffer);
	ck_assert_msg(log_captured("report of job 'another-job'"), "%s", log_capture_buffer);
	merged = merged_report();
	ck_assert_int_eq(json_integer_value(json_object_get(merged, "pfs_bytes")), 3000);
	ck_assert_int_eq(json_array_size(json_object_get(merged, "nodes_reported")), 2);
	ck_assert_int_eq(
	        json_integer_value(json_array_get(json_object_get(merged, "nodes_missing"), 0)), 2);
	json_decref(merged);
}
END_TEST

START_TEST(all_there_no_wait)
{
	uint64_t started;
	json_t *merged;

	agent.options.merge_wait = 30;
	write_report(1, "job", 2000);
	write_report(2, "job", 3000);
	/* Node 0's own file is missing: its report is built in memory instead. */
	started = nopfs_clock_now_ns();
	ck_assert_int_eq(job_report_write(&agent), NOPFS_OK);
	ck_assert_uint_lt(nopfs_clock_now_ns() - started, 1000000000ull);
	merged = merged_report();
	ck_assert_int_eq(json_integer_value(json_object_get(merged, "pfs_bytes")), 6000);
	ck_assert_int_eq(json_array_size(json_object_get(merged, "nodes_missing")), 0);
	json_decref(merged);
}
END_TEST

/* A node the data plane lost gets a second, not the whole --merge-wait. */
START_TEST(lost_node_not_waited_for)
{
	static char plane_stand_in;
	uint64_t started;
	json_t *merged;

	agent.options.merge_wait = 30;
	agent.peers = (struct peer_plane *)&plane_stand_in;
	write_report(1, "job", 2000);
	lost[2] = true;
	started = nopfs_clock_now_ns();
	ck_assert_int_eq(job_report_write(&agent), NOPFS_OK);
	ck_assert_uint_ge(nopfs_clock_now_ns() - started, 1000000000ull);
	ck_assert_uint_lt(nopfs_clock_now_ns() - started, 3000000000ull);
	merged = merged_report();
	ck_assert_int_eq(json_array_size(json_object_get(merged, "nodes_missing")), 1);
	json_decref(merged);
	/* one not lost is waited for */
	lost[2] = false;
	agent.options.merge_wait = 2;
	started = nopfs_clock_now_ns();
	ck_assert_int_eq(job_report_write(&agent), NOPFS_OK);
	ck_assert_uint_ge(nopfs_clock_now_ns() - started, 2000000000ull);
}
END_TEST

START_TEST(not_node_zero_or_not_asked)
{
	char path[PATH_MAX];

	strcpy(path, agent.options.merged_report_path);
	agent.job.node = 1;
	ck_assert_int_eq(job_report_write(&agent), NOPFS_OK);
	ck_assert_int_eq(access(path, F_OK), -1);
	agent.job.node = 0;
	agent.options.merged_report_path[0] = '\0';
	ck_assert_int_eq(job_report_write(&agent), NOPFS_OK);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

START_TEST(interim_reports_wait_for_the_last)
{
	char path[PATH_MAX];
	pthread_t writer;
	uint64_t started;
	json_t *merged;
	char *problems;

	agent.options.merge_wait = 2;
	agent.options.drop_node_reports = true;
	write_report_final(1, 500, false); /* interim: node 1 still serves */
	write_report_final(2, 700, false); /* interim, and node 2 never finishes */
	ck_assert_int_eq(pthread_create(&writer, NULL, finish_node_1, NULL), 0);
	started = nopfs_clock_now_ns();
	ck_assert_int_eq(job_report_write(&agent), NOPFS_OK);
	ck_assert_uint_ge(nopfs_clock_now_ns() - started, 2000000000ull);
	pthread_join(writer, NULL);
	merged = merged_report();
	/* node 1's last report, node 2's interim one, named as such */
	ck_assert_int_eq(json_integer_value(json_object_get(merged, "pfs_bytes")),
	                 1000 + 2000 + 700);
	problems = json_dumps(json_object_get(merged, "problems"), 0);
	ck_assert_ptr_nonnull(problems);
	ck_assert_msg(strstr(problems, "node 2: only an interim report"), "%s", problems);
	free(problems);
	json_decref(merged);
	/* --drop-node-reports: the merged node reports are gone */
	for (int n = 1; n <= 2; n++) {
		snprintf(path, sizeof(path), "%s/report-%d.json", work, n);
		ck_assert_int_eq(access(path, F_OK), -1);
	}
}
END_TEST

START_TEST(unwritable_output)
{
	agent.bootstrap.nodes = 1;
	snprintf(agent.options.merged_report_path, sizeof(agent.options.merged_report_path),
	         "%s/no/such/dir/job.json", work);
	log_capture_start();
	ck_assert_int_eq(job_report_write(&agent), NOPFS_ERR_IO);
	ck_assert_msg(log_captured("--merged-report: cannot create"), "%s", log_capture_buffer);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("job_report");
	TCase *tc = tcase_create("agent");
	SRunner *runner;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, late_missing_and_foreign);
	tcase_add_test(tc, all_there_no_wait);
	tcase_add_test(tc, lost_node_not_waited_for);
	tcase_add_test(tc, not_node_zero_or_not_asked);
	tcase_add_test(tc, unwritable_output);
	tcase_add_test(tc, interim_reports_wait_for_the_last);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
