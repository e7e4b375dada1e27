/* Sizes, counts, tier specifications and synthetic sizes. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "log_capture.h"
#include "plan/synthetic.h"
#include "plan/tierspec.h"
#include "common/units.h"

START_TEST(sizes)
{
	uint64_t bytes;

	ck_assert_int_eq(nopfs_parse_size("0", &bytes), NOPFS_OK);
	ck_assert_uint_eq(bytes, 0);
	ck_assert_int_eq(nopfs_parse_size("512", &bytes), NOPFS_OK);
	ck_assert_uint_eq(bytes, 512);
	ck_assert_int_eq(nopfs_parse_size("1.5G", &bytes), NOPFS_OK);
	ck_assert_uint_eq(bytes, 1610612736ULL);
	ck_assert_int_eq(nopfs_parse_size("8gib", &bytes), NOPFS_OK);
	ck_assert_uint_eq(bytes, 8ULL << 30);
	ck_assert_int_eq(nopfs_parse_size("110KB", &bytes), NOPFS_OK);
	ck_assert_uint_eq(bytes, 110 * 1024);
	ck_assert_int_eq(nopfs_parse_size("2T", &bytes), NOPFS_OK);
	ck_assert_uint_eq(bytes, 2ULL << 40);
	ck_assert_int_eq(nopfs_parse_size("-1G", &bytes), NOPFS_ERR_INVALID);
	ck_assert_int_eq(nopfs_parse_size("1X", &bytes), NOPFS_ERR_INVALID);
	ck_assert_int_eq(nopfs_parse_size("G", &bytes), NOPFS_ERR_INVALID);
	ck_assert_int_eq(nopfs_parse_size("", &bytes), NOPFS_ERR_INVALID);
	ck_assert_int_eq(nopfs_parse_size("nan", &bytes), NOPFS_ERR_INVALID);
	ck_assert_int_eq(nopfs_parse_size("16384P", &bytes), NOPFS_ERR_RANGE);
}
END_TEST

START_TEST(counts)
{
	uint64_t value;

	ck_assert_int_eq(nopfs_parse_uint("90", 1, 100, &value), NOPFS_OK);
	ck_assert_uint_eq(value, 90);
	ck_assert_int_eq(nopfs_parse_uint("0", 1, 100, &value), NOPFS_ERR_RANGE);
	ck_assert_int_eq(nopfs_parse_uint("-3", 0, 100, &value), NOPFS_ERR_INVALID);
	ck_assert_int_eq(nopfs_parse_uint("3x", 0, 100, &value), NOPFS_ERR_INVALID);
	ck_assert_int_eq(nopfs_parse_uint("99999999999999999999999", 0, UINT64_MAX, &value),
	                 NOPFS_ERR_RANGE);
}
END_TEST

START_TEST(format_sizes)
{
	char buffer[32];

	ck_assert_str_eq(nopfs_format_size(100, buffer, sizeof(buffer)), "100 B");
	ck_assert_str_eq(nopfs_format_size(1536, buffer, sizeof(buffer)), "1.50 KiB");
	ck_assert_str_eq(nopfs_format_size(3ULL << 30, buffer, sizeof(buffer)), "3.00 GiB");
}
END_TEST

START_TEST(tier_lists)
{
	struct nopfs_tier_list list = { 0 };

	ck_assert_int_eq(
	        nopfs_tierspec_parse("ram:8G,ssd:/local/scratch:200G", "--tiers", true, &list),
	        NOPFS_OK);
	ck_assert_uint_eq(list.count, 2);
	ck_assert_int_eq(list.tier[0].kind, NOPFS_TIER_RAM);
	ck_assert_uint_eq(list.tier[0].capacity, 8ULL << 30);
	ck_assert_int_eq(list.tier[1].kind, NOPFS_TIER_SSD);
	ck_assert_str_eq(list.tier[1].path, "/local/scratch");
	ck_assert_uint_eq(list.tier[1].capacity, 200ULL << 30);
	ck_assert_int_eq(nopfs_tierspec_parse("ram:50%", "--tiers", true, &list), NOPFS_OK);
	ck_assert(list.tier[2].is_percent);
	ck_assert(fabs(list.tier[2].percent - 50) < 1e-9);
	ck_assert_int_eq(nopfs_tierspec_parse("ssd:/a:b:1G", "--tiers", true, &list), NOPFS_OK);
	ck_assert_str_eq(list.tier[3].path, "/a:b");
	/* Full: a fifth tier is refused and the list is unchanged. */
	log_capture_start();
	ck_assert_int_eq(nopfs_tierspec_parse("ram:1G", "--tiers", true, &list), NOPFS_ERR_RANGE);
	ck_assert_uint_eq(list.count, 4);
	nopfs_log_set_sink(NULL, NULL, NOPFS_LOG_INFO);
}
END_TEST

START_TEST(tier_errors_name_the_culprit)
{
	static const struct {
		const char *spec;
		bool require_path;
		const char *message;
	} cases[] = {
		{ "tape:1G", true, "unknown tier kind 'tape'" },
		{ "ram", true, "tier 'ram' has no size" },
		{ "ram:lots", true, "tier size 'lots' is not a size" },
		{ "ram:0", true, "has size 0" },
		{ "ram:150%", true, "percentage must be in (0, 100]" },
		{ "ssd:100G", true, "names no directory" },
		{ "ssd:rel/dir:1G", true, "must be an absolute path" },
		{ "ram:1G,", true, "is empty" },
		{ "ram:99999999P", true, "is too large" },
	};
	struct nopfs_tier_list list = { 0 };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		log_capture_start();
		ck_assert_int_ne(nopfs_tierspec_parse(cases[i].spec, "--nopfs-tiers",
		                                      cases[i].require_path, &list),
		                 NOPFS_OK);
		ck_assert_msg(log_captured(cases[i].message) && log_captured("--nopfs-tiers"),
		              "'%s' logged: %s", cases[i].spec, log_capture_buffer);
		ck_assert_uint_eq(list.count, 0);
	}
	ck_assert_int_eq(nopfs_tierspec_parse("ssd:100G", "--tier", false, &list), NOPFS_OK);
	nopfs_log_set_sink(NULL, NULL, NOPFS_LOG_INFO);
}
END_TEST

START_TEST(synthetic_sizes)
{
	struct nopfs_synthetic spec;
	uint64_t *a, *b;
	double sum = 0;

	ck_assert_int_eq(nopfs_synthetic_parse("100000:110K:20K", "--synthetic", &spec), NOPFS_OK);
	a = malloc(spec.count * sizeof(*a));
	b = malloc(spec.count * sizeof(*b));
	nopfs_synthetic_sizes(&spec, a);
	nopfs_synthetic_sizes(&spec, b);
	ck_assert_mem_eq(a, b, spec.count * sizeof(*a));
	for (uint64_t i = 0; i < spec.count; i++) {
		ck_assert_uint_ge(a[i], 1);
		sum += (double)a[i];
	}
	ck_assert(fabs(sum / (double)spec.count - 110 * 1024) < 0.01 * 110 * 1024);
	free(a);
	free(b);

	log_capture_start();
	ck_assert_int_ne(nopfs_synthetic_parse("10", "--synthetic", &spec), NOPFS_OK);
	ck_assert(log_captured("not COUNT:MEAN"));
	ck_assert_int_ne(nopfs_synthetic_parse("0:1K", "--synthetic", &spec), NOPFS_OK);
	ck_assert_int_ne(nopfs_synthetic_parse("5:0", "--synthetic", &spec), NOPFS_OK);
	ck_assert_int_ne(nopfs_synthetic_parse("5:1K:x", "--synthetic", &spec), NOPFS_OK);
	nopfs_log_set_sink(NULL, NULL, NOPFS_LOG_INFO);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("units");
	TCase *tc = tcase_create("units");
	SRunner *runner;
	int failed;

	tcase_add_test(tc, sizes);
	tcase_add_test(tc, counts);
	tcase_add_test(tc, format_sizes);
	tcase_add_test(tc, tier_lists);
	tcase_add_test(tc, tier_errors_name_the_culprit);
	tcase_add_test(tc, synthetic_sizes);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
