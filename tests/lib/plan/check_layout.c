/* Task layouts: Slurm's block, cyclic and plane distributions, parsing. */
#include <check.h>
#include <stdlib.h>

#include "plan/layout.h"
#include "log_capture.h"

static void assert_nodes(const struct nopfs_layout *layout, const uint32_t *expected,
                         uint32_t count)
{
	ck_assert_uint_eq(layout->world_size, count);
	for (uint32_t r = 0; r < count; r++)
		ck_assert_msg(layout->node_of_rank[r] == expected[r], "rank %u on node %u, want %u",
		              r, layout->node_of_rank[r], expected[r]);
}

START_TEST(block_uneven)
{
	const uint32_t tasks[] = { 2, 3, 1 };
	const uint32_t want[] = { 0, 0, 1, 1, 1, 2 };
	struct nopfs_layout *layout;

	ck_assert_int_eq(nopfs_layout_create(3, tasks, NOPFS_DISTRIBUTION_BLOCK, 0, &layout),
	                 NOPFS_OK);
	assert_nodes(layout, want, 6);
	ck_assert_uint_eq(layout->tasks_on_node[1], 3);
	nopfs_layout_destroy(layout);
}
END_TEST

START_TEST(cyclic_uneven)
{
	const uint32_t tasks[] = { 2, 3, 1 };
	const uint32_t want[] = { 0, 1, 2, 0, 1, 1 };
	struct nopfs_layout *layout;

	ck_assert_int_eq(nopfs_layout_create(3, tasks, NOPFS_DISTRIBUTION_CYCLIC, 0, &layout),
	                 NOPFS_OK);
	assert_nodes(layout, want, 6);
	nopfs_layout_destroy(layout);
}
END_TEST

START_TEST(plane_and_empty_node)
{
	const uint32_t tasks[] = { 3, 0, 2 };
	const uint32_t want[] = { 0, 0, 2, 2, 0 };
	struct nopfs_layout *layout;

	ck_assert_int_eq(nopfs_layout_create(3, tasks, NOPFS_DISTRIBUTION_PLANE, 2, &layout),
	                 NOPFS_OK);
	assert_nodes(layout, want, 5);
	ck_assert_uint_eq(layout->tasks_on_node[1], 0);
	nopfs_layout_destroy(layout);
}
END_TEST

START_TEST(explicit_map)
{
	const uint32_t map[] = { 1, 0, 1 };
	const uint32_t bad[] = { 1, 2 };
	struct nopfs_layout *layout;

	ck_assert_int_eq(nopfs_layout_from_map(2, 3, map, &layout), NOPFS_OK);
	ck_assert_uint_eq(layout->tasks_on_node[1], 2);
	nopfs_layout_destroy(layout);
	log_capture_start();
	ck_assert_int_eq(nopfs_layout_from_map(2, 2, bad, &layout), NOPFS_ERR_RANGE);
	ck_assert(log_captured("rank 1 is on node 2"));
	nopfs_log_set_sink(NULL, NULL, NOPFS_LOG_INFO);
}
END_TEST

START_TEST(parse_slurm_task_lists)
{
	uint32_t *counts, nodes;

	ck_assert_int_eq(nopfs_layout_parse_tasks("2(x3),1", &counts, &nodes), NOPFS_OK);
	ck_assert_uint_eq(nodes, 4);
	ck_assert_uint_eq(counts[0], 2);
	ck_assert_uint_eq(counts[2], 2);
	ck_assert_uint_eq(counts[3], 1);
	free(counts);
	ck_assert_int_eq(nopfs_layout_parse_tasks("4", &counts, &nodes), NOPFS_OK);
	ck_assert_uint_eq(nodes, 1);
	free(counts);
	log_capture_start();
	ck_assert_int_eq(nopfs_layout_parse_tasks("2(x0)", &counts, &nodes), NOPFS_ERR_FORMAT);
	ck_assert_int_eq(nopfs_layout_parse_tasks("2,", &counts, &nodes), NOPFS_ERR_FORMAT);
	ck_assert_int_eq(nopfs_layout_parse_tasks("", &counts, &nodes), NOPFS_ERR_FORMAT);
	ck_assert_int_eq(nopfs_layout_parse_tasks("a", &counts, &nodes), NOPFS_ERR_FORMAT);
	ck_assert(log_captured("task count list 'a' is malformed"));
	nopfs_log_set_sink(NULL, NULL, NOPFS_LOG_INFO);
}
END_TEST

START_TEST(parse_distributions)
{
	nopfs_distribution d;
	uint32_t plane;

	ck_assert_int_eq(nopfs_layout_parse_distribution("cyclic:block", &d, &plane), NOPFS_OK);
	ck_assert_int_eq(d, NOPFS_DISTRIBUTION_CYCLIC);
	ck_assert_int_eq(nopfs_layout_parse_distribution("block", &d, &plane), NOPFS_OK);
	ck_assert_int_eq(d, NOPFS_DISTRIBUTION_BLOCK);
	ck_assert_int_eq(nopfs_layout_parse_distribution("plane=4", &d, &plane), NOPFS_OK);
	ck_assert_int_eq(d, NOPFS_DISTRIBUTION_PLANE);
	ck_assert_uint_eq(plane, 4);
	log_capture_start();
	ck_assert_int_eq(nopfs_layout_parse_distribution("arbitrary", &d, &plane),
	                 NOPFS_ERR_INVALID);
	ck_assert(log_captured("'arbitrary'"));
	ck_assert_int_eq(nopfs_layout_parse_distribution("plane=0", &d, &plane), NOPFS_ERR_INVALID);
	ck_assert_int_eq(nopfs_layout_parse_distribution("blockx", &d, &plane), NOPFS_ERR_INVALID);
	nopfs_log_set_sink(NULL, NULL, NOPFS_LOG_INFO);
}
END_TEST

START_TEST(invalid_layouts)
{
	const uint32_t none[] = { 0, 0 };
	struct nopfs_layout *layout;

	log_capture_start();
	ck_assert_int_eq(nopfs_layout_create(2, none, NOPFS_DISTRIBUTION_BLOCK, 0, &layout),
	                 NOPFS_ERR_RANGE);
	ck_assert_int_eq(nopfs_layout_create(0, none, NOPFS_DISTRIBUTION_BLOCK, 0, &layout),
	                 NOPFS_ERR_RANGE);
	nopfs_log_set_sink(NULL, NULL, NOPFS_LOG_INFO);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("layout");
	TCase *tc = tcase_create("layout");
	SRunner *runner;
	int failed;

	tcase_add_test(tc, block_uneven);
	tcase_add_test(tc, cyclic_uneven);
	tcase_add_test(tc, plane_and_empty_node);
	tcase_add_test(tc, explicit_map);
	tcase_add_test(tc, parse_slurm_task_lists);
	tcase_add_test(tc, parse_distributions);
	tcase_add_test(tc, invalid_layouts);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
