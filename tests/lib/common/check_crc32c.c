/* CRC32C: the published check values, and the instruction and the table agree. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "common/crc32c.h"

START_TEST(known_values)
{
	uint8_t zeros[32] = { 0 }, ones[32];

	memset(ones, 0xff, sizeof(ones));
	ck_assert_uint_eq(nopfs_crc32c("123456789", 9), 0xe3069283u);
	ck_assert_uint_eq(nopfs_crc32c_table("123456789", 9), 0xe3069283u);
	/* RFC 3720, B.4 */
	ck_assert_uint_eq(nopfs_crc32c(zeros, 32), 0x8a9136aau);
	ck_assert_uint_eq(nopfs_crc32c(ones, 32), 0x62a8ab43u);
	ck_assert_uint_eq(nopfs_crc32c("", 0), 0);
}
END_TEST

START_TEST(both_ways_agree)
{
	static uint8_t buffer[4096 + 8];
	uint32_t x = 12345;

	for (size_t i = 0; i < sizeof(buffer); i++) {
		x = x * 1103515245u + 12345u;
		buffer[i] = (uint8_t)(x >> 16);
	}
	/* every length to 1 KiB and a few larger, at odd alignments */
	for (size_t size = 0; size <= 4096; size += size < 1024 ? 1 : 509)
		for (size_t at = 0; at < 8; at += 3)
			ck_assert_uint_eq(nopfs_crc32c(buffer + at, size),
			                  nopfs_crc32c_table(buffer + at, size));
	/* one flipped bit changes it */
	{
		uint32_t before = nopfs_crc32c(buffer, 4096);

		buffer[1000] ^= 0x10;
		ck_assert_uint_ne(nopfs_crc32c(buffer, 4096), before);
	}
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("crc32c");
	TCase *tc = tcase_create("crc32c");
	SRunner *runner;
	int failed;

	tcase_add_test(tc, known_values);
	tcase_add_test(tc, both_ways_agree);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? 1 : 0;
}
