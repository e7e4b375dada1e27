/* The wire protocol's encoding: round trips and every malformed message. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "wire_fixture.h"

/* Encode @m, decode it back into *out; the encoded length. */
static size_t round_trip(const struct nopfs_wire_message *m, struct nopfs_wire_message *out)
{
	const char *why = NULL;
	size_t length = nopfs_wire_encode(m, buffer);

	ck_assert_uint_gt(length, 0);
	ck_assert_int_eq(nopfs_wire_decode(buffer, length, out, &why), NOPFS_OK);
	ck_assert_int_eq(out->type, m->type);
	ck_assert_uint_eq(out->request_id, m->request_id);
	return length;
}

START_TEST(round_trip_every_type)
{
	struct nopfs_wire_message m = { .request_id = 0xfeedbeef };
	struct nopfs_wire_message out;
	static const char path[] = "class%/a b/\xc3\xa9t\xc3\xa9.jpg";
	static const char text[] = "{\"staged\": 3}";

	m.type = NOPFS_WIRE_HELLO;
	m.u.hello.pid = 4242;
	m.u.hello.rank = -1;
	m.u.hello.flags = NOPFS_WIRE_FLAG_API;
	m.u.hello.plan = 7;
	ck_assert_uint_eq(round_trip(&m, &out), 16 + 16);
	ck_assert_uint_eq(out.u.hello.pid, 4242);
	ck_assert_int_eq(out.u.hello.rank, -1);
	ck_assert_uint_eq(out.u.hello.flags, NOPFS_WIRE_FLAG_API);
	ck_assert_uint_eq(out.u.hello.plan, 7);
	m.u.hello.plan = NOPFS_WIRE_NO_PLAN;
	ck_assert_uint_eq(round_trip(&m, &out), 16 + 16);
	ck_assert_uint_eq(out.u.hello.plan, NOPFS_WIRE_NO_PLAN);

	m.type = NOPFS_WIRE_WAIT;
	m.u.wait.index = UINT64_C(0x0123456789abcdef);
	ck_assert_uint_eq(round_trip(&m, &out), 16 + 8);
	ck_assert_uint_eq(out.type, NOPFS_WIRE_WAIT);
	ck_assert_uint_eq(out.request_id, 0xfeedbeef);
	ck_assert_uint_eq(out.u.wait.index, UINT64_C(0x0123456789abcdef));

	m.type = NOPFS_WIRE_WELCOME;
	m.u.welcome.node = 3;
	m.u.welcome.world_size = 1024;
	m.u.welcome.samples = 1281167ULL << 20;
	m.u.welcome.flags = 7;
	ck_assert_uint_eq(round_trip(&m, &out), 16 + 20);
	ck_assert_uint_eq(out.u.welcome.node, 3);
	ck_assert_uint_eq(out.u.welcome.world_size, 1024);
	ck_assert_uint_eq(out.u.welcome.samples, 1281167ULL << 20);
	ck_assert_uint_eq(out.u.welcome.flags, 7);

	m.type = NOPFS_WIRE_OPEN;
	m.u.open.rank = 17;
	m.u.open.path = path;
	m.u.open.path_length = sizeof(path) - 1;
	ck_assert_uint_eq(round_trip(&m, &out), 16 + 8 + sizeof(path) - 1);
	ck_assert_int_eq(out.u.open.rank, 17);
	ck_assert_uint_eq(out.u.open.path_length, sizeof(path) - 1);
	ck_assert_mem_eq(out.u.open.path, path, sizeof(path) - 1);
	ck_assert_ptr_eq(out.u.open.path, (const char *)buffer + 24);

	m.type = NOPFS_WIRE_GET;
	m.u.get.rank = 2;
	m.u.get.index = UINT64_MAX - 1;
	ck_assert_uint_eq(round_trip(&m, &out), 16 + 16);
	ck_assert_int_eq(out.u.get.rank, 2);
	ck_assert_uint_eq(out.u.get.index, UINT64_MAX - 1);

	m.type = NOPFS_WIRE_SAMPLE;
	m.u.sample.index = 99;
	m.u.sample.size = 5ULL << 32;
	m.u.sample.label = -5;
	m.u.sample.source = NOPFS_FROM_PEER;
	ck_assert_uint_eq(round_trip(&m, &out), 16 + 32);
	ck_assert_uint_eq(out.u.sample.index, 99);
	ck_assert_uint_eq(out.u.sample.size, 5ULL << 32);
	ck_assert_int_eq(out.u.sample.label, -5);
	ck_assert_uint_eq(out.u.sample.source, NOPFS_FROM_PEER);

	m.type = NOPFS_WIRE_STATS;
	ck_assert_uint_eq(round_trip(&m, &out), 16);

	m.type = NOPFS_WIRE_STATS_TEXT;
	m.u.stats_text.text = text;
	m.u.stats_text.length = sizeof(text) - 1;
	ck_assert_uint_eq(round_trip(&m, &out), 16 + sizeof(text) - 1);
	ck_assert_uint_eq(out.u.stats_text.length, sizeof(text) - 1);
	ck_assert_mem_eq(out.u.stats_text.text, text, sizeof(text) - 1);

	m.type = NOPFS_WIRE_STATS_TEXT;
	m.u.stats_text.text = NULL;
	m.u.stats_text.length = 0;
	ck_assert_uint_eq(round_trip(&m, &out), 16);
	ck_assert_uint_eq(out.u.stats_text.length, 0);

	m.type = NOPFS_WIRE_ERROR;
	m.u.error.status = NOPFS_ERR_NOT_FOUND;
	m.u.error.text = "not in the dataset";
	m.u.error.length = 18;
	ck_assert_uint_eq(round_trip(&m, &out), 16 + 8 + 18);
	ck_assert_int_eq(out.u.error.status, NOPFS_ERR_NOT_FOUND);
	ck_assert_uint_eq(out.u.error.length, 18);
	ck_assert_mem_eq(out.u.error.text, "not in the dataset", 18);
}
END_TEST

/* A @type message whose header says @length payload bytes is refused, saying @why. */
static void expect_wrong_length(nopfs_wire_type type, uint8_t length, const char *why)
{
	struct nopfs_wire_message m = { .type = type }, out;
	const char *said = NULL;

	nopfs_wire_encode(&m, buffer);
	buffer[8] = length;
	ck_assert_int_eq(nopfs_wire_decode(buffer, NOPFS_WIRE_HEADER_SIZE + length, &out, &said),
	                 NOPFS_ERR_FORMAT);
	ck_assert_ptr_nonnull(strstr(said, why));
}

START_TEST(ring_messages)
{
	struct nopfs_wire_message m = { .type = NOPFS_WIRE_RELEASE, .request_id = 3 }, out;
	const char *why = NULL;

	m.u.release.rank = 7;
	m.u.release.slot = 511;
	m.u.release.index = 1281166;
	ck_assert_uint_eq(round_trip(&m, &out), NOPFS_WIRE_HEADER_SIZE + 16);
	ck_assert_int_eq(out.u.release.rank, 7);
	ck_assert_uint_eq(out.u.release.slot, 511);
	ck_assert_uint_eq(out.u.release.index, 1281166);

	m = (struct nopfs_wire_message){ .type = NOPFS_WIRE_RING, .request_id = 4 };
	m.u.ring.rank = 2;
	ck_assert_uint_eq(round_trip(&m, &out), NOPFS_WIRE_HEADER_SIZE + 8);
	ck_assert_int_eq(out.u.ring.rank, 2);

	m = (struct nopfs_wire_message){ .type = NOPFS_WIRE_RING_FD, .request_id = 5 };
	m.u.ring_fd.slots = 512;
	m.u.ring_fd.bytes = 1ULL << 33;
	ck_assert_uint_eq(round_trip(&m, &out), NOPFS_WIRE_HEADER_SIZE + 16);
	ck_assert_uint_eq(out.u.ring_fd.slots, 512);
	ck_assert_uint_eq(out.u.ring_fd.bytes, 1ULL << 33);

	/* Reserved fields must be zero; lengths must be those of the type. */
	buffer[NOPFS_WIRE_HEADER_SIZE + 4] = 1;
	ck_assert_int_eq(nopfs_wire_decode(buffer, NOPFS_WIRE_HEADER_SIZE + 16, &out, &why),
	                 NOPFS_ERR_FORMAT);
	ck_assert_ptr_nonnull(strstr(why, "RING_FD reserved"));
	expect_wrong_length(NOPFS_WIRE_RING, 12, "RING payload is not 8 bytes");
	expect_wrong_length(NOPFS_WIRE_WAIT, 16, "WAIT payload is not 8 bytes");
}
END_TEST

START_TEST(header_is_little_endian)
{
	struct nopfs_wire_message m = { .type = NOPFS_WIRE_GET, .request_id = 0x01020304 };
	static const uint8_t expected[16] = { 'N', 'P', 'F', 'S', 1, 0, 4, 0,
		                              16,  0,   0,   0,   4, 3, 2, 1 };

	m.u.get.index = 0x1122334455667788ULL;
	ck_assert_uint_eq(nopfs_wire_encode(&m, buffer), 32);
	ck_assert_mem_eq(buffer, expected, 16);
	ck_assert_uint_eq(buffer[24], 0x88);
	ck_assert_uint_eq(buffer[31], 0x11);
}
END_TEST

START_TEST(encode_refuses_what_cannot_be_sent)
{
	static char long_path[NOPFS_WIRE_PATH_MAX + 2];
	struct nopfs_wire_message m = { .type = NOPFS_WIRE_OPEN };

	memset(long_path, 'a', sizeof(long_path) - 1);
	m.u.open.path = long_path;
	m.u.open.path_length = NOPFS_WIRE_PATH_MAX;
	ck_assert_uint_eq(nopfs_wire_encode(&m, buffer), 16 + 8 + NOPFS_WIRE_PATH_MAX);
	m.u.open.path_length = NOPFS_WIRE_PATH_MAX + 1;
	ck_assert_uint_eq(nopfs_wire_encode(&m, buffer), 0);
	m.u.open.path_length = 0;
	ck_assert_uint_eq(nopfs_wire_encode(&m, buffer), 0);
	m.u.open.path = "a\0b";
	m.u.open.path_length = 3;
	ck_assert_uint_eq(nopfs_wire_encode(&m, buffer), 0);
	m.u.open.path = NULL;
	ck_assert_uint_eq(nopfs_wire_encode(&m, buffer), 0);

	m.type = NOPFS_WIRE_STATS_TEXT;
	m.u.stats_text.text = (const char *)received;
	memset(received, 'x', sizeof(received));
	m.u.stats_text.length = NOPFS_WIRE_MAX_PAYLOAD + 1;
	ck_assert_uint_eq(nopfs_wire_encode(&m, buffer), 0);
	m.u.stats_text.length = NOPFS_WIRE_MAX_PAYLOAD;
	ck_assert_uint_eq(nopfs_wire_encode(&m, buffer), BUFFER_SIZE);

	m.type = NOPFS_WIRE_ERROR;
	m.u.error.text = (const char *)received;
	m.u.error.length = NOPFS_WIRE_MAX_PAYLOAD - 7;
	ck_assert_uint_eq(nopfs_wire_encode(&m, buffer), 0);

	m.type = (nopfs_wire_type)99;
	ck_assert_uint_eq(nopfs_wire_encode(&m, buffer), 0);
}
END_TEST

/* Decode @length bytes of buffer, expecting @status with a reason. */
static void expect_malformed(size_t length, nopfs_status status, const char *reason)
{
	struct nopfs_wire_message out = { .type = NOPFS_WIRE_STATS, .request_id = 77 };
	const char *why = NULL;

	ck_assert_int_eq(nopfs_wire_decode(buffer, length, &out, &why), status);
	ck_assert_ptr_nonnull(why);
	ck_assert_msg(strstr(why, reason), "reason '%s' does not say '%s'", why, reason);
	/* The output is set only on success. */
	ck_assert_int_eq(out.type, NOPFS_WIRE_STATS);
	ck_assert_uint_eq(out.request_id, 77);
}

START_TEST(malformed_messages_are_rejected)
{
	size_t length;

	length = valid_message(NOPFS_WIRE_GET);
	expect_malformed(0, NOPFS_ERR_FORMAT, "shorter than its header");
	expect_malformed(10, NOPFS_ERR_FORMAT, "shorter than its header");
	expect_malformed(length - 1, NOPFS_ERR_FORMAT, "truncated");
	expect_malformed(16, NOPFS_ERR_FORMAT, "truncated");
	expect_malformed(length + 1, NOPFS_ERR_FORMAT, "trailing");

	length = valid_message(NOPFS_WIRE_GET);
	buffer[0] = 'X';
	expect_malformed(length, NOPFS_ERR_FORMAT, "magic");

	length = valid_message(NOPFS_WIRE_GET);
	buffer[4] = 2;
	expect_malformed(length, NOPFS_ERR_UNSUPPORTED, "version");
	buffer[4] = 1;
	buffer[5] = 1; /* version 257 */
	expect_malformed(length, NOPFS_ERR_UNSUPPORTED, "version");

	length = valid_message(NOPFS_WIRE_GET);
	buffer[6] = 0;
	expect_malformed(length, NOPFS_ERR_FORMAT, "unknown message type");
	buffer[6] = 99; /* no such type */
	expect_malformed(length, NOPFS_ERR_FORMAT, "unknown message type");
	buffer[6] = 4;
	buffer[7] = 1; /* type 260 */
	expect_malformed(length, NOPFS_ERR_FORMAT, "unknown message type");

	/* Oversized: rejected on the header alone, whatever follows. */
	length = valid_message(NOPFS_WIRE_STATS_TEXT);
	put32(8, NOPFS_WIRE_MAX_PAYLOAD + 1);
	expect_malformed(length, NOPFS_ERR_FORMAT, "over the maximum");
	put32(8, UINT32_MAX);
	expect_malformed(length, NOPFS_ERR_FORMAT, "over the maximum");

	/* Fixed-size types with another length. */
	length = valid_message(NOPFS_WIRE_HELLO);
	put32(8, 11);
	expect_malformed(length - 1, NOPFS_ERR_FORMAT, "HELLO");
	length = valid_message(NOPFS_WIRE_SAMPLE);
	put32(8, 40);
	expect_malformed(length, NOPFS_ERR_FORMAT, "SAMPLE");
	length = valid_message(NOPFS_WIRE_STATS);
	put32(8, 1);
	expect_malformed(length, NOPFS_ERR_FORMAT, "STATS");

	/* OPEN: path length past the end, short of it, none, with a NUL. */
	length = valid_message(NOPFS_WIRE_OPEN);
	put32(20, 10);
	expect_malformed(length, NOPFS_ERR_FORMAT, "path length");
	put32(20, UINT32_MAX);
	expect_malformed(length, NOPFS_ERR_FORMAT, "path length");
	put32(20, 8);
	expect_malformed(length, NOPFS_ERR_FORMAT, "path length");
	length = valid_message(NOPFS_WIRE_OPEN);
	put32(8, 8);
	put32(20, 0);
	expect_malformed(16 + 8, NOPFS_ERR_FORMAT, "OPEN");
	length = valid_message(NOPFS_WIRE_OPEN);
	buffer[24 + 3] = '\0';
	expect_malformed(length, NOPFS_ERR_FORMAT, "NUL");
	length = valid_message(NOPFS_WIRE_OPEN);
	put32(8, 8 + NOPFS_WIRE_PATH_MAX + 1);
	expect_malformed(16 + 8 + NOPFS_WIRE_PATH_MAX + 1, NOPFS_ERR_FORMAT, "OPEN");

	/* Reserved fields, unknown source. */
	length = valid_message(NOPFS_WIRE_GET);
	buffer[16 + 4] = 1;
	expect_malformed(length, NOPFS_ERR_FORMAT, "reserved");
	length = valid_message(NOPFS_WIRE_SAMPLE);
	buffer[16 + 28] = 1;
	expect_malformed(length, NOPFS_ERR_FORMAT, "reserved");
	length = valid_message(NOPFS_WIRE_SAMPLE);
	put32(16 + 24, NOPFS_FROM_PFS + 1);
	expect_malformed(length, NOPFS_ERR_FORMAT, "source");

	/* ERROR: length mismatch, a status that is no error, a NUL. */
	length = valid_message(NOPFS_WIRE_ERROR);
	put32(20, 4);
	expect_malformed(length, NOPFS_ERR_FORMAT, "length");
	put32(20, UINT32_MAX);
	expect_malformed(length, NOPFS_ERR_FORMAT, "length");
	length = valid_message(NOPFS_WIRE_ERROR);
	put32(16, 0);
	expect_malformed(length, NOPFS_ERR_FORMAT, "not an error");
	length = valid_message(NOPFS_WIRE_ERROR);
	buffer[24] = '\0';
	expect_malformed(length, NOPFS_ERR_FORMAT, "NUL");
	length = valid_message(NOPFS_WIRE_ERROR);
	put32(8, 7);
	expect_malformed(16 + 7, NOPFS_ERR_FORMAT, "ERROR");

	length = valid_message(NOPFS_WIRE_STATS_TEXT);
	buffer[17] = '\0';
	expect_malformed(length, NOPFS_ERR_FORMAT, "NUL");
}
END_TEST

START_TEST(check_header_alone)
{
	uint32_t payload = 12345;
	const char *why = NULL;

	valid_message(NOPFS_WIRE_OPEN);
	ck_assert_int_eq(nopfs_wire_check_header(buffer, &payload, &why), NOPFS_OK);
	ck_assert_uint_eq(payload, 8 + 9);
	put32(8, NOPFS_WIRE_MAX_PAYLOAD + 1);
	payload = 12345;
	ck_assert_int_eq(nopfs_wire_check_header(buffer, &payload, &why), NOPFS_ERR_FORMAT);
	ck_assert_uint_eq(payload, 12345);
}
END_TEST

/* Random bytes never crash the decoder, and a success is a valid message. */
START_TEST(fuzzed_bytes_are_safe)
{
	struct nopfs_wire_message out;
	unsigned seed = 12345;
	const char *why;

	for (int round = 0; round < 200000; round++) {
		size_t length = (size_t)rand_r(&seed) % 64;

		valid_message((nopfs_wire_type)(1 + rand_r(&seed) % 8));
		for (int flips = 1 + rand_r(&seed) % 3; flips > 0; flips--)
			buffer[rand_r(&seed) % 48] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
		if (nopfs_wire_decode(buffer, length, &out, &why) == NOPFS_OK)
			ck_assert_uint_eq(nopfs_wire_encode(&out, received), length);
	}
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("wire");
	TCase *tc = tcase_create("wire");
	SRunner *runner;
	int failed;

	tcase_add_test(tc, round_trip_every_type);
	tcase_add_test(tc, ring_messages);
	tcase_add_test(tc, header_is_little_endian);
	tcase_add_test(tc, encode_refuses_what_cannot_be_sent);
	tcase_add_test(tc, malformed_messages_are_rejected);
	tcase_add_test(tc, check_header_alone);
	tcase_add_test(tc, fuzzed_bytes_are_safe);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
