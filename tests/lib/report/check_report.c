/* The job report: merging node reports, checking them, the summary, writing. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log_capture.h"
#include "report/report.h"

/*
 * A node report as the agent writes it (the keys the merge reads), with
 * figures that differ per node: @pfs PFS bytes of which @probe by the
 * probe, @ram samples delivered from RAM as staged copies (100 bytes
 * each), @peer asked for and served from other nodes (10 bytes each).
 */
static json_t *node_report(int node, const char *job_id, json_int_t pfs, json_int_t probe,
                           json_int_t ram, json_int_t peer, double stall_max)
{
	static const char *const sources[] = { "staging", "ram", "ssd", "peer", "pfs" };
	json_t *staged = json_object(), *requested = json_object();

	for (int s = 0; s < 5; s++) {
		json_int_t staged_samples = strcmp(sources[s], "ram") == 0 ? ram : 0;
		json_int_t requested_samples = strcmp(sources[s], "peer") == 0 ? peer : 0;

		json_object_set_new(staged, sources[s],
		                    json_pack("{s:I, s:I}", "samples", staged_samples, "bytes",
		                              staged_samples * 100));
		json_object_set_new(requested, sources[s],
		                    json_pack("{s:I, s:I}", "samples", requested_samples, "bytes",
		                              requested_samples * 10));
	}
	return json_pack("{s:s, s:s, s:i, s:{s:s, s:i, s:i, s:i}, s:o, s:o, "
	                 "s:{s:I, s:I, s:I, s:f, s:f}, s:{s:i, s:f, s:f}, "
	                 "s:{s:i, s:i, s:i}, s:{s:i, s:i}, s:{s:i, s:i}, s:{s:i}}",
	                 "job_id", job_id, "host", "h", "node", node, "job", "dataset", "/data",
	                 "samples", 1000, "epochs", 3, "world_size", 6, "delivered_staged", staged,
	                 "delivered_on_request", requested, "pfs", "bytes", pfs, "probe_bytes",
	                 probe, "dataset_bytes", (json_int_t)100000, "vs_dataset", 0.0, "vs_naive",
	                 0.0, "stall", "requests", (int)peer, "seconds", 0.25, "max_seconds",
	                 stall_max, "fallbacks", "unknown_path", 0, "timeout", 0, "read_error", 0,
	                 "stream", "mismatched_requests", 0, "matched_deliveries", 0, "peers",
	                 "timeouts", 0, "errors", 0, "connections", "watch_overflows", 0);
}

static json_int_t integer_at(const json_t *object, const char *key, const char *sub)
{
	const json_t *value = json_object_get(object, key);

	if (sub)
		value = json_object_get(value, sub);
	ck_assert_msg(json_is_integer(value), "%s.%s is not an integer", key, sub ? sub : "");
	return json_integer_value(value);
}

static double real_at(const json_t *object, const char *key, const char *sub)
{
	const json_t *value = json_object_get(object, key);

	if (sub)
		value = json_object_get(value, sub);
	ck_assert_msg(json_is_number(value), "%s.%s is not a number", key, sub ? sub : "");
	return json_number_value(value);
}

/* Whether one of @merged's problems contains @text. */
static bool has_problem(const json_t *merged, const char *text)
{
	size_t i;
	json_t *problem;

	json_array_foreach(json_object_get(merged, "problems"), i,
	                   problem) if (strstr(json_string_value(problem), text)) return true;
	return false;
}

/* What the tests call their inputs: the culprit's name in messages. */
static const char *const names[] = { "input 0", "input 1", "input 2" };

/* Merge @count of @nodes, the messages captured; NULL on failure. */
static json_t *merge(json_t *const *nodes, size_t count, uint32_t expected)
{
	json_t *merged = NULL;
	nopfs_status status;

	log_capture_start();
	status = nopfs_report_merge(nodes, names, count, expected, &merged);
	ck_assert_int_eq(status == NOPFS_OK, merged != NULL);
	return merged;
}

/* Whether @node is a complete node report, the messages captured. */
static bool check_node(const json_t *node)
{
	log_capture_start();
	return nopfs_report_check_node(node, NULL) == NOPFS_OK;
}

/* The one message logged since the capture started is @text. */
static void expect_error(const char *text)
{
	char line[512];

	snprintf(line, sizeof(line), "%s\n", text);
	ck_assert_str_eq(log_capture_buffer, line);
}

static char *summary_of(const json_t *merged)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(nopfs_report_print_summary(merged, out), NOPFS_OK);
	fclose(out);
	return text;
}

/*
 * A job resumed within epoch 4 of the script: the summary says where it
 * started; a rank found elsewhere and copies that failed --verify are problems.
 */
START_TEST(resumed_within_an_epoch)
{
	json_t *nodes[2] = {
		node_report(0, "13", 50000, 4000, 100, 10, 0.012),
		node_report(1, "13", 40000, 3000, 200, 20, 0.005),
	};
	json_t *merged;
	char *summary;

	for (int i = 0; i < 2; i++) {
		json_t *job = json_object_get(nodes[i], "job");

		json_object_set_new(job, "start_epoch", json_integer(4));
		json_object_set_new(job, "start_sample", json_integer(96));
	}
	/* node 1 found a rank elsewhere in its stream and moved its staging there */
	json_object_set_new(json_object_get(nodes[1], "stream"), "self_synced", json_integer(2));
	json_object_set_new(json_object_get(nodes[1], "stream"), "self_sync",
	                    json_pack("[{s:i, s:i, s:i}]", "rank", 3, "epoch", 5, "index", 40));
	/* node 1: tasks of step 3 read on after step 5's plan was taken on */
	json_object_set_new(nodes[1], "plan_followed", json_integer(5));
	json_object_set_new(nodes[1], "superseded",
	                    json_pack("{s:i, s:i}", "requests", 240, "newest_plan", 3));
	json_object_set_new(nodes[0], "superseded",
	                    json_pack("{s:i, s:i}", "requests", 0, "newest_plan", -1));
	/* node 0 found its ranks reading epoch 0's order every epoch */
	json_object_set_new(json_object_get(nodes[0], "stream"), "order_found",
	                    json_pack("{s:s, s:i, s:i, s:f}", "order", "no set_epoch", "rank", 1,
	                              "after_requests", 12, "seconds", 3.25));
	/* node 0 checked copies and found bad ones in its SSD tier */
	json_object_set_new(nodes[0], "verify",
	                    json_pack("{s:b, s:i, s:{s:{s:i}, s:{s:i}, s:{s:i}}}", "on", 1,
	                              "mismatched_copies", 3, "mismatched", "ram", "samples", 0,
	                              "ssd", "samples", 3, "peer", "samples", 0));
	merged = merge(nodes, 2, 2);
	ck_assert_msg(merged, "merge failed: %s", log_capture_buffer);
	ck_assert_int_eq(integer_at(merged, "start_epoch", NULL), 4);
	ck_assert_int_eq(integer_at(merged, "start_sample", NULL), 96);
	summary = summary_of(merged);
	ck_assert_msg(strstr(summary, "3 epochs (the script's 4 from sample 96 per rank to 6)\n"),
	              "%s", summary);
	ck_assert_msg(has_problem(merged, "node 1: 2 times a rank read elsewhere than planned and "
	                                  "its staging moved there (first: rank 3 at the "
	                                  "script's epoch 5, index 40)"),
	              "%s", summary);
	ck_assert_msg(has_problem(merged, "node 0: 3 copies of samples did not have the CRC32C of "
	                                  "their first read (RAM 0, SSD 3, other nodes 0): not "
	                                  "served, the PFS was read again"),
	              "%s", summary);
	ck_assert_msg(has_problem(merged, "node 0: the ranks read another order than planned (no "
	                                  "set_epoch: seen in rank 1's requests after 12 off the "
	                                  "plan, 3.2 s in); staged in that order from then on"),
	              "%s", summary);
	ck_assert_msg(!has_problem(merged, "node 1: the ranks read another order"), "%s", summary);
	ck_assert_msg(has_problem(merged, "node 1: 240 requests came from tasks of a step planned "
	                                  "earlier (plan 3 or before) while the agents followed "
	                                  "plan 5 (a step started later): served without their "
	                                  "plan; steps running at the same time share the plan "
	                                  "of the one started last"),
	              "%s", summary);
	ck_assert_msg(!has_problem(merged, "node 0: 0 requests"), "%s", summary);
	ck_assert_msg(!has_problem(merged, "node 1: 0 copies"), "%s", summary);
	free(summary);
	json_decref(merged);
	for (int i = 0; i < 2; i++)
		json_decref(nodes[i]);
}
END_TEST

START_TEST(merge_three_nodes)
{
	/* Given out of order: the merge sorts by node. */
	json_t *nodes[3] = {
		node_report(2, "12", 30000, 2000, 300, 30, 0.002),
		node_report(0, "12", 50000, 4000, 100, 10, 0.012),
		node_report(1, "12", 40000, 3000, 200, 20, 0.005),
	};
	json_t *merged = merge(nodes, 3, 3), *per_node;
	char *summary;

	ck_assert_msg(merged, "merge failed: %s", log_capture_buffer);
	ck_assert_str_eq(json_string_value(json_object_get(merged, "job_id")), "12");
	ck_assert_str_eq(json_string_value(json_object_get(merged, "dataset")), "/data");
	ck_assert_int_eq(integer_at(merged, "dataset_bytes", NULL), 100000);
	ck_assert_int_eq(integer_at(merged, "epochs", NULL), 3);
	ck_assert_int_eq(integer_at(merged, "world_size", NULL), 6);
	ck_assert_int_eq(integer_at(merged, "nodes_expected", NULL), 3);
	ck_assert_int_eq(json_array_size(json_object_get(merged, "nodes_reported")), 3);
	ck_assert_int_eq(json_array_size(json_object_get(merged, "nodes_missing")), 0);
	/* PFS: (50000-4000) + (40000-3000) + (30000-2000) = 111000 against S = 100000. */
	ck_assert_int_eq(integer_at(merged, "pfs_bytes", NULL), 111000);
	ck_assert_int_eq(integer_at(merged, "probe_bytes", NULL), 9000);
	ck_assert_double_eq_tol(real_at(merged, "vs_dataset", NULL), 1.11, 1e-9);
	ck_assert_double_eq_tol(real_at(merged, "vs_naive", NULL), 0.37, 1e-9);
	/* Delivered: 600 staged copies from RAM, 60 requests served by peers. */
	ck_assert_int_eq(integer_at(json_object_get(merged, "delivered"), "ram", "samples"), 600);
	ck_assert_int_eq(integer_at(json_object_get(merged, "delivered"), "ram", "bytes"), 60000);
	ck_assert_int_eq(integer_at(json_object_get(merged, "delivered"), "peer", "samples"), 60);
	ck_assert_int_eq(integer_at(json_object_get(merged, "delivered"), "peer", "bytes"), 600);
	ck_assert_int_eq(integer_at(json_object_get(merged, "delivered"), "pfs", "samples"), 0);
	ck_assert_int_eq(integer_at(merged, "delivered_total", "samples"), 660);
	ck_assert_int_eq(integer_at(merged, "delivered_total", "bytes"), 60600);
	ck_assert_int_eq(integer_at(merged, "delivered_staged", "samples"), 600);
	ck_assert_int_eq(integer_at(merged, "stall", "requests"), 60);
	ck_assert_double_eq_tol(real_at(merged, "stall", "seconds"), 0.75, 1e-9);
	ck_assert_double_eq_tol(real_at(merged, "stall", "max_seconds"), 0.012, 1e-9);
	ck_assert_int_eq(integer_at(merged, "fallbacks", "timeout"), 0);
	ck_assert_int_eq(json_array_size(json_object_get(merged, "problems")), 0);
	per_node = json_object_get(merged, "per_node");
	ck_assert_int_eq(json_array_size(per_node), 3);
	for (int n = 0; n < 3; n++)
		ck_assert_int_eq(integer_at(json_array_get(per_node, n), "node", NULL), n);

	summary = summary_of(merged);
	ck_assert_msg(
	        strstr(summary, "nopfs: job 12 on 3 nodes: 1000 samples, 100.0 kB, 3 epochs\n"),
	        "%s", summary);
	ck_assert_msg(strstr(summary, "nopfs: PFS read 111.0 kB = 1.11 x dataset"), "%s", summary);
	ck_assert_msg(strstr(summary, "probe read 9.0 kB more"), "%s", summary);
	ck_assert_msg(strstr(summary, "delivered 660 samples: 90.9% node RAM, 0.0% node SSD, "
	                              "9.1% other nodes, 0.0% PFS"),
	              "%s", summary);
	ck_assert_msg(strstr(summary, "60 requests waited 0.75 s in all, 12.0 ms at most"), "%s",
	              summary);
	ck_assert_msg(strstr(summary, "nopfs: problems: none\n"), "%s", summary);
	for (char *line = summary; *line; line = strchr(line, '\n') + 1)
		ck_assert_msg(strncmp(line, "nopfs: ", 7) == 0, "unprefixed line in %s", summary);
	free(summary);

	/* The one-line summary for the job record: the same figures, no comma or quote. */
	{
		char line[512], tiny[40];

		ck_assert_int_eq(nopfs_report_one_line(merged, line, sizeof(line)), NOPFS_OK);
		ck_assert_str_eq(line, "nopfs: 3/3 nodes; PFS 1.11 x dataset (0.37 x naive); 660 "
		                       "samples delivered: 91% RAM 0% SSD 9% peers 0% PFS 0% "
		                       "staged; stalls 0.75 s; 0 problems");
		ck_assert_int_eq(nopfs_report_one_line(merged, tiny, sizeof(tiny)),
		                 NOPFS_ERR_RANGE);
	}
	json_decref(merged);
	for (int n = 0; n < 3; n++)
		json_decref(nodes[n]);
}
END_TEST

START_TEST(missing_node)
{
	json_t *nodes[2] = {
		node_report(0, "12", 50000, 4000, 100, 10, 0.01),
		node_report(2, "12", 30000, 2000, 300, 30, 0.01),
	};
	json_t *merged = merge(nodes, 2, 4), *missing;
	char *summary;

	ck_assert_msg(merged, "merge failed: %s", log_capture_buffer);
	missing = json_object_get(merged, "nodes_missing");
	ck_assert_int_eq(json_array_size(missing), 2);
	ck_assert_int_eq(json_integer_value(json_array_get(missing, 0)), 1);
	ck_assert_int_eq(json_integer_value(json_array_get(missing, 1)), 3);
	ck_assert_int_eq(json_array_size(json_object_get(merged, "nodes_reported")), 2);
	ck_assert_int_eq(integer_at(merged, "pfs_bytes", NULL), 74000);
	ck_assert(has_problem(merged, "no report from 2 nodes: 1, 3"));
	summary = summary_of(merged);
	ck_assert_msg(strstr(summary, "on 4 nodes (2 reported)"), "%s", summary);
	ck_assert_msg(strstr(summary, "nopfs: problem: no report from 2 nodes: 1, 3\n"), "%s",
	              summary);
	free(summary);
	json_decref(merged);

	/* Without an expected count: up to the highest node reported. */
	merged = merge(nodes, 2, 0);
	ck_assert_int_eq(integer_at(merged, "nodes_expected", NULL), 3);
	ck_assert(has_problem(merged, "no report from node 1"));
	json_decref(merged);
	/* A node beyond the expected count is an error naming it. */
	ck_assert_ptr_null(merge(nodes, 2, 2));
	expect_error("input 1: node 2 is not one of the job's 2 nodes");
	json_decref(nodes[0]);
	json_decref(nodes[1]);
}
END_TEST

START_TEST(missing_key)
{
	json_t *nodes[2] = {
		node_report(0, "12", 50000, 4000, 100, 10, 0.01),
		node_report(1, "12", 30000, 2000, 300, 30, 0.01),
	};

	json_object_del(json_object_get(nodes[1], "pfs"), "probe_bytes");
	ck_assert_ptr_null(merge(nodes, 2, 2));
	expect_error("input 1: node 1: key 'pfs.probe_bytes' is missing");
	ck_assert(!check_node(nodes[1]));
	expect_error("node 1: key 'pfs.probe_bytes' is missing");
	ck_assert(check_node(nodes[0]));
	json_object_set_new(json_object_get(nodes[1], "pfs"), "probe_bytes", json_integer(0));
	ck_assert(check_node(nodes[1]));

	/* Deep inside, and a wrong type. */
	json_object_del(json_object_get(json_object_get(nodes[0], "delivered_on_request"), "ssd"),
	                "bytes");
	ck_assert_ptr_null(merge(nodes, 2, 2));
	expect_error("input 0: node 0: key 'delivered_on_request.ssd.bytes' is missing");
	json_object_set_new(nodes[1], "job_id", json_integer(12));
	ck_assert(!check_node(nodes[1]));
	expect_error("node 1: key 'job_id' is not a string");
	json_object_set_new(nodes[1], "stall",
	                    json_pack("{s:i, s:s}", "requests", 1, "seconds", "x"));
	json_object_set_new(nodes[1], "job_id", json_string("12"));
	ck_assert(!check_node(nodes[1]));
	expect_error("node 1: key 'stall.seconds' is not a non-negative number");
	/* No node index: the node is not known. */
	json_object_del(nodes[1], "node");
	ck_assert(!check_node(nodes[1]));
	expect_error("key 'node' is missing");
	/* Not even an object. */
	json_decref(nodes[1]);
	nodes[1] = json_array();
	ck_assert(!check_node(nodes[1]));
	expect_error("not a JSON object");
	ck_assert_ptr_null(merge(nodes, 0, 0));
	expect_error("no node reports to merge");
	json_decref(nodes[0]);
	json_decref(nodes[1]);
}
END_TEST

START_TEST(disagreeing_reports)
{
	json_t *nodes[3] = {
		node_report(0, "12", 50000, 4000, 100, 10, 0.01),
		node_report(1, "13", 30000, 2000, 300, 30, 0.01),
		node_report(2, "12", 30000, 2000, 300, 30, 0.01),
	};
	json_t *merged;

	json_object_set_new(json_object_get(nodes[2], "job"), "epochs", json_integer(4));
	json_object_set_new(json_object_get(nodes[2], "job"), "dataset", json_string("/other"));
	merged = merge(nodes, 3, 3);
	ck_assert_msg(merged, "merge failed: %s", log_capture_buffer);
	/* The figures are node 0's; the others' disagreements are problems. */
	ck_assert_str_eq(json_string_value(json_object_get(merged, "job_id")), "12");
	ck_assert(has_problem(merged, "node 1 disagrees on job_id: '13' (node 0: '12')"));
	ck_assert(has_problem(merged, "node 2 disagrees on epochs: 4 (node 0: 3)"));
	ck_assert(has_problem(merged, "node 2 disagrees on dataset: '/other' (node 0: '/data')"));
	ck_assert_int_eq(json_array_size(json_object_get(merged, "problems")), 3);
	json_decref(merged);

	/* Two reports of one node: an error naming the second. */
	json_object_set_new(nodes[2], "node", json_integer(1));
	ck_assert_ptr_null(merge(nodes, 3, 3));
	expect_error("input 2: node 1 is reported twice");
	for (int n = 0; n < 3; n++)
		json_decref(nodes[n]);
}
END_TEST

START_TEST(nodes_planned_for_different_steps)
{
	json_t *nodes[3] = {
		node_report(0, "12", 50000, 4000, 100, 10, 0.01),
		node_report(1, "12", 30000, 2000, 300, 30, 0.01),
		node_report(2, "12", 30000, 2000, 300, 30, 0.01),
	};
	json_t *merged, *planned = json_pack("{s:I, s:s}", "generation", 5, "outcome", "planned");
	json_t *refused = json_pack("{s:I, s:s}", "generation", 6, "outcome", "refused");
	char *summary;

	/* nodes 0 and 2 planned for a later step on them only (another epoch count) */
	for (int n = 0; n < 3; n += 2) {
		json_object_set_new(nodes[n], "plan", json_integer(5));
		json_object_set_new(nodes[n], "replans", json_pack("[O, O]", planned, refused));
		json_object_set_new(json_object_get(nodes[n], "job"), "epochs", json_integer(4));
	}
	json_object_set_new(nodes[1], "plan", json_integer(0));
	json_object_set_new(nodes[1], "replans", json_array());
	merged = merge(nodes, 3, 3);
	ck_assert_msg(merged, "merge failed: %s", log_capture_buffer);
	ck_assert_int_eq(json_array_size(json_object_get(merged, "problems")), 0);
	ck_assert_int_eq(integer_at(merged, "replans", NULL), 1);
	summary = summary_of(merged);
	ck_assert_msg(strstr(summary, "nopfs: the agents planned for 1 later step with other "
	                              "options"),
	              "%s", summary);
	free(summary);
	json_decref(merged);

	/* on the same plan, they must agree */
	json_object_set_new(json_object_get(nodes[2], "job"), "epochs", json_integer(3));
	merged = merge(nodes, 3, 3);
	ck_assert_msg(merged, "merge failed: %s", log_capture_buffer);
	ck_assert(has_problem(merged, "node 2 disagrees on epochs: 3 (node 0: 4)"));
	json_decref(merged);
	/* "replans" must be an array */
	json_object_set_new(nodes[1], "replans", json_integer(1));
	ck_assert_ptr_null(merge(nodes, 3, 3));
	expect_error("input 1: node 1: key 'replans' is not an array");
	json_decref(planned);
	json_decref(refused);
	for (int n = 0; n < 3; n++)
		json_decref(nodes[n]);
}
END_TEST

START_TEST(health_problems)
{
	json_t *nodes[2] = {
		node_report(0, "12", 50000, 4000, 100, 10, 0.01),
		node_report(1, "12", 30000, 2000, 300, 30, 0.01),
	};
	json_t *merged;

	json_object_set_new(json_object_get(nodes[0], "fallbacks"), "timeout", json_integer(3));
	json_object_set_new(json_object_get(nodes[1], "fallbacks"), "timeout", json_integer(4));
	json_object_set_new(json_object_get(nodes[1], "fallbacks"), "read_error", json_integer(1));
	json_object_set_new(json_object_get(nodes[1], "stream"), "mismatched_requests",
	                    json_integer(40));
	json_object_set_new(json_object_get(nodes[1], "stream"), "diagnosis",
	                    json_string("they follow seed 0"));
	json_object_set_new(json_object_get(nodes[0], "peers"), "timeouts", json_integer(2));
	json_object_set_new(json_object_get(nodes[0], "peers"), "unauthenticated", json_integer(9));
	json_object_set_new(json_object_get(nodes[0], "peers"), "refused", json_integer(1));
	json_object_set_new(json_object_get(nodes[0], "connections"), "watch_overflows",
	                    json_integer(5));
	/* A node without peers reports null there. */
	json_object_set_new(nodes[1], "peers", json_null());
	/* samples over --max-sample-size: the same on both nodes, said once */
	for (int n = 0; n < 2; n++) {
		json_object_set_new(json_object_get(nodes[n], "job"), "max_sample_size",
		                    json_integer(1000));
		json_object_set_new(json_object_get(nodes[n], "job"), "too_large",
		                    json_pack("{s:i, s:i}", "samples", 2, "bytes", 5000));
	}
	merged = merge(nodes, 2, 2);
	ck_assert_msg(merged, "merge failed: %s", log_capture_buffer);
	ck_assert_int_eq(integer_at(merged, "fallbacks", "timeout"), 7);
	ck_assert_int_eq(integer_at(merged, "fallbacks", "read_error"), 1);
	ck_assert(has_problem(merged, "7 reads fell back to the PFS (timeout) on nodes 0, 1"));
	ck_assert(has_problem(merged, "1 reads fell back to the PFS (read_error) on node 1"));
	ck_assert(has_problem(merged, "node 1: 40 requests followed no local rank's stream: they "
	                              "follow seed 0"));
	ck_assert(has_problem(merged, "node 0: reads from other nodes: 2 timeouts, 0 errors"));
	ck_assert(has_problem(merged, "node 0: the stage directory watch overflowed 5 times"));
	ck_assert(has_problem(merged, "node 0: data-plane messages dropped: 9 that did not "
	                              "authenticate with the job's key"));
	ck_assert(has_problem(merged, "1 authenticated but refused (malformed or out of bounds)"));
	ck_assert(has_problem(merged, "2 samples (5000 bytes) are larger than the agents' "
	                              "--max-sample-size (1000 bytes): not kept"));
	ck_assert_int_eq(json_array_size(json_object_get(merged, "problems")), 7);
	json_decref(merged);
	json_decref(nodes[0]);
	json_decref(nodes[1]);
}
END_TEST

START_TEST(merged_checks_and_write)
{
	json_t *node = node_report(0, "7", 500, 100, 4, 0, 0.0), *merged, *back;
	char dir[] = "/tmp/check_report.XXXXXX", path[64];
	struct stat st;
	FILE *sink = fopen("/dev/null", "w");

	merged = merge(&node, 1, 1);
	ck_assert_ptr_nonnull(merged);
	ck_assert_int_eq(nopfs_report_check_merged(merged, NULL), NOPFS_OK);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/job.json", dir);
	ck_assert_int_eq(nopfs_report_write(merged, path, 0644, "job report"), NOPFS_OK);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0644);
	back = json_load_file(path, 0, NULL);
	ck_assert(json_equal(back, merged));
	json_decref(back);
	/* Into a directory that does not exist: an error naming the path. */
	snprintf(path, sizeof(path), "%s/none/job.json", dir);
	log_capture_start();
	ck_assert_int_eq(nopfs_report_write(merged, path, 0644, "job report"), NOPFS_ERR_NOT_FOUND);
	ck_assert_msg(log_captured("job report: cannot create '") && log_captured("/none/job.json"),
	              "%s", log_capture_buffer);

	json_object_del(merged, "vs_naive");
	log_capture_start();
	ck_assert_int_eq(nopfs_report_check_merged(merged, "job.json"), NOPFS_ERR_FORMAT);
	expect_error("job.json: key 'vs_naive' is missing");
	ck_assert_int_eq(nopfs_report_print_summary(merged, sink), NOPFS_ERR_FORMAT);
	fclose(sink);
	snprintf(path, sizeof(path), "%s/job.json", dir);
	unlink(path);
	rmdir(dir);
	json_decref(merged);
	json_decref(node);
}
END_TEST

/* The ranks' metadata calls: summed per rank and in all, printed, a bad one named. */
START_TEST(metadata_counts)
{
	json_t *nodes[2] = { node_report(0, "7", 500, 100, 4, 0, 0.0),
		             node_report(1, "7", 500, 100, 4, 0, 0.0) };
	json_t *merged;
	char *text;

	json_object_set_new(
	        nodes[0], "metadata",
	        json_pack("{s:b, s:i, s:i, s:i, s:i, s:i, s:{s:{s:i, s:i}, s:{s:i, s:i}}}",
	                  "published", 1, "directories", 31, "entries", 3062, "unlisted", 0,
	                  "served", 150, "passed", 2, "per_rank", "1", "served", 50, "passed", 2,
	                  "0", "served", 100, "passed", 0));
	json_object_set_new(nodes[1], "metadata",
	                    json_pack("{s:b, s:i, s:i, s:i, s:i, s:i, s:{s:{s:i, s:i}}}",
	                              "published", 1, "directories", 31, "entries", 3062,
	                              "unlisted", 3, "served", 40, "passed", 1, "per_rank", "2",
	                              "served", 40, "passed", 1));
	merged = merge(nodes, 2, 2);
	ck_assert_ptr_nonnull(merged);
	ck_assert_int_eq(integer_at(merged, "metadata", "served"), 190);
	ck_assert_int_eq(integer_at(merged, "metadata", "passed"), 3);
	ck_assert_int_eq(integer_at(merged, "metadata", "unlisted"), 3);
	ck_assert_int_eq(
	        integer_at(json_object_get(json_object_get(merged, "metadata"), "per_rank"), "1",
	                   "passed"),
	        2);
	text = summary_of(merged);
	ck_assert_msg(strstr(text,
	                     "nopfs: metadata saved: 190 of 193 dataset metadata calls by the "
	                     "ranks answered from the catalog, 3 reached the PFS (3 "
	                     "directories left out of the catalog)\n"),
	              "%s", text);
	/* in rank order, whatever the order the nodes gave them in */
	ck_assert_msg(strstr(text, "(served/PFS): 0:100/0 1:50/2 2:40/1\n"), "%s", text);
	free(text);
	json_decref(merged);

	/*
	 * Calls made with no metadata in the rank: counted as passed, said in
	 * the summary and as a problem with the agent's reason (node 1), or
	 * without one (node 0); a reason with no such calls is a problem too.
	 */
	json_object_set_new(json_object_get(nodes[0], "metadata"), "passed_absent",
	                    json_integer(2));
	json_object_set_new(json_object_get(nodes[1], "metadata"), "passed_absent",
	                    json_integer(1));
	json_object_set_new(json_object_get(nodes[1], "metadata"), "not_served",
	                    json_string("no dataset metadata from node 0 in '/x' (No such file)"));
	merged = merge(nodes, 2, 2);
	ck_assert_ptr_nonnull(merged);
	ck_assert_int_eq(integer_at(merged, "metadata", "passed_absent"), 3);
	text = summary_of(merged);
	ck_assert_msg(strstr(text, "ranks answered from the catalog, 3 reached the PFS, 3 of them "
	                           "with no metadata from the agent (3 directories"),
	              "%s", text);
	ck_assert_msg(has_problem(merged, "node 0: 2 dataset metadata calls of its ranks reached "
	                                  "the PFS with no metadata from the agent to answer them: "
	                                  "the agent gave them the metadata, but they found none "
	                                  "usable when they asked"),
	              "%s", text);
	ck_assert_msg(has_problem(merged, "node 1: 1 dataset metadata calls of its ranks reached "
	                                  "the PFS with no metadata from the agent to answer them: "
	                                  "no dataset metadata from node 0 in '/x' (No such file)"),
	              "%s", text);
	free(text);
	json_decref(merged);
	json_object_set_new(json_object_get(nodes[1], "metadata"), "passed_absent",
	                    json_integer(0));
	json_object_set_new(json_object_get(nodes[0], "metadata"), "published", json_false());
	merged = merge(nodes, 2, 2);
	ck_assert_ptr_nonnull(merged);
	ck_assert(has_problem(merged, "node 0: 2 dataset metadata calls of its ranks reached the "
	                              "PFS with no metadata from the agent to answer them: the "
	                              "agent gave them none (its log says why)"));
	ck_assert(has_problem(merged, "node 1: dataset metadata not served: no dataset metadata "
	                              "from node 0 in '/x' (No such file)"));
	json_decref(merged);
	json_object_set_new(json_object_get(nodes[1], "metadata"), "not_served", json_integer(3));
	ck_assert(!check_node(nodes[1]));
	expect_error("node 1: key 'metadata.not_served' is not a string");
	json_object_del(json_object_get(nodes[1], "metadata"), "not_served");

	/* A per-rank count that is not a number: the key and node named. */
	json_object_set_new(
	        json_object_get(json_object_get(json_object_get(nodes[1], "metadata"), "per_rank"),
	                        "2"),
	        "served", json_string("many"));
	ck_assert(!check_node(nodes[1]));
	expect_error("node 1: key 'metadata.per_rank.2.served' is not a non-negative integer");
	json_decref(nodes[0]);
	json_decref(nodes[1]);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("report");
	TCase *tc = tcase_create("merge");
	SRunner *runner;
	int failed;

	tcase_add_test(tc, merge_three_nodes);
	tcase_add_test(tc, resumed_within_an_epoch);
	tcase_add_test(tc, missing_node);
	tcase_add_test(tc, missing_key);
	tcase_add_test(tc, disagreeing_reports);
	tcase_add_test(tc, nodes_planned_for_different_steps);
	tcase_add_test(tc, health_problems);
	tcase_add_test(tc, merged_checks_and_write);
	tcase_add_test(tc, metadata_counts);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
