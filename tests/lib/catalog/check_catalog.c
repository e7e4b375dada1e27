/* Unit tests of the catalog: order, list files, errors, lookup, serialization. */
#include "config.h"

#include "catalog_fixture.h"

struct expected_sample {
	const char *path;
	int64_t label;
	uint64_t size;
};

static void assert_samples(const struct nopfs_catalog *catalog,
                           const struct expected_sample *expected, uint64_t count)
{
	uint64_t i, total = 0;

	ck_assert_uint_eq(nopfs_catalog_count(catalog), count);
	for (i = 0; i < count; i++) {
		ck_assert_str_eq(path_of(catalog, i), expected[i].path);
		ck_assert_int_eq(nopfs_catalog_label(catalog, i), expected[i].label);
		ck_assert_uint_eq(nopfs_catalog_size(catalog, i), expected[i].size);
		ck_assert_uint_eq(nopfs_catalog_sizes(catalog)[i], expected[i].size);
		ck_assert_int_eq(nopfs_catalog_find(catalog, expected[i].path), (int64_t)i);
		total += expected[i].size;
	}
	ck_assert_uint_eq(nopfs_catalog_total_bytes(catalog), total);
}

/*
 * Classes ".hidden" < "A_cls" < "b" < "c_link" (a symlink); in class b the
 * walked directories sort "b" < "b/a" < "b/a/b" < "b/a/b-x" < "b/a/b/c",
 * which is not depth-first.
 */
static void make_tricky_tree(void)
{
	make_file(at("root/.hidden/x.png"), 11);
	make_file(at("root/A_cls/img1.JPG"), 12);
	make_file(at("root/A_cls/img0.jpeg"), 13);
	make_file(at("root/A_cls/notes.txt"), 14);
	make_file(at("root/A_cls/Z.Png"), 15);
	make_file(at("root/b/top.jpg"), 16);
	make_link("../A_cls/img0.jpeg", at("root/b/link_file.jpg"));
	make_link("/nonexistent/nowhere", at("root/b/dangling.txt"));
	make_file(at("root/b/a/b.jpg"), 17);
	make_file(at("root/b/a/readme"), 21);
	make_file(at("root/b/a/b/f.jpg"), 18);
	make_file(at("root/b/a/b-x/g.jpg"), 19);
	make_file(at("root/b/a/b/c/deep.jpg"), 20);
	make_file(at("outside/ctarget/p.bmp"), 22);
	make_file(at("outside/ctarget/sub/q.TIFF"), 23);
	make_link("../outside/ctarget", at("root/c_link"));
	make_file(at("root/file_at_root.jpg"), 24);
	make_link("file_at_root.jpg", at("root/link_at_root"));
}

static const struct expected_sample tricky[] = {
	{ ".hidden/x.png", 0, 11 },    { "A_cls/Z.Png", 1, 15 },     { "A_cls/img0.jpeg", 1, 13 },
	{ "A_cls/img1.JPG", 1, 12 },   { "b/link_file.jpg", 2, 13 }, { "b/top.jpg", 2, 16 },
	{ "b/a/b.jpg", 2, 17 },        { "b/a/b/f.jpg", 2, 18 },     { "b/a/b-x/g.jpg", 2, 19 },
	{ "b/a/b/c/deep.jpg", 2, 20 }, { "c_link/p.bmp", 3, 22 },    { "c_link/sub/q.TIFF", 3, 23 },
};

START_TEST(test_imagefolder_order)
{
	static const char *const classes[] = { ".hidden", "A_cls", "b", "c_link" };
	struct nopfs_catalog *catalog;
	uint32_t c;

	make_tricky_tree();
	ck_assert_int_eq(build_folder(at("root"), NULL, &catalog), NOPFS_OK);
	assert_samples(catalog, tricky, sizeof(tricky) / sizeof(tricky[0]));
	ck_assert_uint_eq(nopfs_catalog_class_count(catalog), 4);
	for (c = 0; c < 4; c++)
		ck_assert_str_eq(nopfs_catalog_class_name(catalog, c), classes[c]);
	ck_assert_ptr_null(nopfs_catalog_class_name(catalog, 4));
	ck_assert_str_eq(nopfs_catalog_root(catalog), at("root"));
	nopfs_catalog_destroy(catalog);

	/* A trailing slash on the root changes nothing. */
	ck_assert_int_eq(build_folder(at("root/"), NULL, &catalog), NOPFS_OK);
	assert_samples(catalog, tricky, sizeof(tricky) / sizeof(tricky[0]));
	nopfs_catalog_destroy(catalog);
}
END_TEST

START_TEST(test_user_extensions)
{
	static const struct expected_sample expected[] = {
		{ "x/a.txt", 0, 1 },
		{ "x/b.JPEG", 0, 2 },
		{ "y/d.TxT", 1, 4 },
	};
	struct nopfs_catalog *catalog;

	make_file(at("root/x/a.txt"), 1);
	make_file(at("root/x/b.JPEG"), 2);
	make_file(at("root/x/c.jpg"), 3);
	make_file(at("root/y/d.TxT"), 4);
	ck_assert_int_eq(build_folder(at("root"), " .txt , .JPEG", &catalog), NOPFS_OK);
	assert_samples(catalog, expected, 3);
	nopfs_catalog_destroy(catalog);

	ck_assert_int_eq(build_folder(at("root"), ".txt,,.jpg", &catalog), NOPFS_ERR_INVALID);
	ck_assert(logged("'.txt,,.jpg' has an empty entry"));
	ck_assert_int_eq(build_folder(at("root"), ".jp\xc3\xa9g", &catalog), NOPFS_ERR_UNSUPPORTED);
	ck_assert(logged("is not ASCII"));
}
END_TEST

/* Lines with and without labels, normalized paths, CRLF, no final newline. */
START_TEST(test_list)
{
	static const struct expected_sample expected[] = {
		{ "d2/x.png", 0, 7 }, { "d1/a.jpg", 3, 5 }, { "d1/b c.jpg", -7, 6 },
		{ "d1/c 12", 0, 8 },  { "d2/y.jpg", 1, 9 }, { "d1/d.jpg", 0, 10 },
	};
	char text[4 * PATH_MAX], cwd[PATH_MAX];
	struct nopfs_catalog *catalog;

	make_file(at("root/d1/a.jpg"), 5);
	make_file(at("root/d1/b c.jpg"), 6);
	make_file(at("root/d2/x.png"), 7);
	make_file(at("root/d1/c 12"), 8);
	make_file(at("root/d2/y.jpg"), 9);
	make_file(at("root/d1/d.jpg"), 10);
	snprintf(text, sizeof(text),
	         "d2/x.png\nd1/a.jpg 3\n  ./d1//b c.jpg\t-7\r\nd1/c 12 0\n%s/d2/y.jpg +1\n"
	         "%s/./d2/../d1/d.jpg",
	         at("root"), at("root"));
	write_text(at("list.txt"), text);
	ck_assert_int_eq(build_list(at("root"), at("list.txt"), &catalog), NOPFS_OK);
	assert_samples(catalog, expected, 6);
	ck_assert_uint_eq(nopfs_catalog_class_count(catalog), 0);
	nopfs_catalog_destroy(catalog);

	/* Without labels; the root given relative to the working directory. */
	write_text(at("plain.txt"), "d1/a.jpg\nd2/x.png\n");
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	ck_assert_int_eq(chdir(fixture_base), 0);
	ck_assert_int_eq(build_list("root", at("plain.txt"), &catalog), NOPFS_OK);
	ck_assert_uint_eq(nopfs_catalog_count(catalog), 2);
	ck_assert_str_eq(path_of(catalog, 1), "d2/x.png");
	ck_assert_int_eq(nopfs_catalog_label(catalog, 0), 0);
	ck_assert_int_eq(nopfs_catalog_label(catalog, 1), 0);
	nopfs_catalog_destroy(catalog);
	write_text(at("abs.txt"), at("root/d1/a.jpg"));
	ck_assert_int_eq(build_list("root", at("abs.txt"), &catalog), NOPFS_OK);
	ck_assert_str_eq(path_of(catalog, 0), "d1/a.jpg");
	nopfs_catalog_destroy(catalog);
	ck_assert_int_eq(chdir(cwd), 0);

	/* Through a symlinked root, absolute paths may name the real directory. */
	make_link("root", at("linkroot"));
	ck_assert_int_eq(build_list(at("linkroot"), at("abs.txt"), &catalog), NOPFS_OK);
	ck_assert_str_eq(path_of(catalog, 0), "d1/a.jpg");
	nopfs_catalog_destroy(catalog);
}
END_TEST

START_TEST(test_root_errors)
{
	struct nopfs_catalog *catalog = NULL;

	ck_assert_int_eq(build_folder(at("missing"), NULL, &catalog), NOPFS_ERR_NOT_FOUND);
	ck_assert(logged(at("missing")) && logged("does not exist"));
	make_file(at("file"), 1);
	log_reset();
	ck_assert_int_eq(build_folder(at("file"), NULL, &catalog), NOPFS_ERR_INVALID);
	ck_assert(logged(at("file")) && logged("is not a directory"));
	make_dirs(at("empty"));
	make_file(at("empty/not_a_class.jpg"), 1);
	log_reset();
	ck_assert_int_eq(build_folder(at("empty"), NULL, &catalog), NOPFS_ERR_EMPTY);
	ck_assert(logged(at("empty")) && logged("has no class directories"));
	log_reset();
	ck_assert_int_eq(build_folder(NULL, NULL, &catalog), NOPFS_ERR_INVALID);
	ck_assert(logged("no dataset root"));
	ck_assert_int_eq(build_list(at("empty"), NULL, &catalog), NOPFS_ERR_INVALID);
	ck_assert(logged("needs a list file"));
	ck_assert_ptr_null(catalog);
}
END_TEST

START_TEST(test_folder_errors)
{
	struct nopfs_catalog *catalog = NULL;

	make_file(at("root/full/a.jpg"), 1);
	make_file(at("root/void/notes.txt"), 1);
	ck_assert_int_eq(build_folder(at("root"), NULL, &catalog), NOPFS_ERR_EMPTY);
	ck_assert(logged("class 'void'") && logged(at("root/void")));

	/* A symlink back to an ancestor. */
	remove(at("root/void/notes.txt"));
	make_file(at("root/void/v.png"), 1);
	make_dirs(at("root/full/sub"));
	make_link("..", at("root/full/sub/loop"));
	log_reset();
	ck_assert_int_eq(build_folder(at("root"), NULL, &catalog), NOPFS_ERR_INVALID);
	ck_assert(logged("symlink cycle") && logged(at("root/full/sub/loop")));
	remove(at("root/full/sub/loop"));

	/* A dangling symlink with an image extension. */
	make_link("/nonexistent/gone.jpg", at("root/full/gone.jpg"));
	log_reset();
	ck_assert_int_eq(build_folder(at("root"), NULL, &catalog), NOPFS_ERR_NOT_FOUND);
	ck_assert(logged(at("root/full/gone.jpg")));
	ck_assert_ptr_null(catalog);
}
END_TEST

static int check_unreadable_root(void)
{
	struct nopfs_catalog *catalog;

	if (build_folder(at("root"), NULL, &catalog) != NOPFS_ERR_PERMISSION)
		return 1;
	return logged("cannot read dataset root") && logged(at("root")) ? 0 : 2;
}

static int check_unreadable_class(void)
{
	struct nopfs_catalog *catalog;

	if (build_folder(at("root"), NULL, &catalog) != NOPFS_ERR_PERMISSION)
		return 1;
	return logged("cannot open directory") && logged(at("root/b")) ? 0 : 2;
}

static int check_unreadable_file(void)
{
	struct nopfs_catalog *catalog;

	if (build_folder(at("root"), NULL, &catalog) != NOPFS_ERR_PERMISSION)
		return 1;
	if (!logged("cannot read sample") || !logged(at("root/a/x.jpg")))
		return 2;
	if (build_list(at("root"), at("list.txt"), &catalog) != NOPFS_ERR_PERMISSION)
		return 3;
	return logged("line 2") && logged("a/x.jpg") ? 0 : 4;
}

START_TEST(test_permission_errors)
{
	make_file(at("root/a/x.jpg"), 1);
	make_file(at("root/b/y.jpg"), 1);
	write_text(at("list.txt"), "b/y.jpg\na/x.jpg\n");
	ck_assert_int_eq(chmod(at("root"), 0311), 0);
	ck_assert_int_eq(run_unprivileged(check_unreadable_root), 0);
	ck_assert_int_eq(chmod(at("root"), 0755), 0);
	ck_assert_int_eq(chmod(at("root/b"), 0), 0);
	ck_assert_int_eq(run_unprivileged(check_unreadable_class), 0);
	ck_assert_int_eq(chmod(at("root/b"), 0755), 0);
	ck_assert_int_eq(chmod(at("root/a/x.jpg"), 0), 0);
	ck_assert_int_eq(run_unprivileged(check_unreadable_file), 0);
}
END_TEST

/* Build a list catalog of @text and expect @status and a message with @culprit. */
static void expect_list_error(const char *text, nopfs_status status, const char *culprit)
{
	struct nopfs_catalog *catalog = NULL;

	write_text(at("list.txt"), text);
	log_reset();
	ck_assert_int_eq(build_list(at("root"), at("list.txt"), &catalog), status);
	ck_assert_msg(logged(culprit), "'%s' not in: %s", culprit, fixture_log);
	ck_assert_ptr_null(catalog);
}

START_TEST(test_list_errors)
{
	struct nopfs_catalog *catalog = NULL;
	char text[2 * PATH_MAX];

	make_file(at("root/d1/a.jpg"), 1);
	make_file(at("root/d1/b.jpg"), 1);
	make_file(at("outside.jpg"), 1);
	expect_list_error("d1/a.jpg\n../outside.jpg\n", NOPFS_ERR_INVALID,
	                  "line 2: '../outside.jpg' is outside the dataset root");
	snprintf(text, sizeof(text), "%s\n", at("outside.jpg"));
	expect_list_error(text, NOPFS_ERR_INVALID, "line 1: '");
	ck_assert(logged("outside.jpg' is outside the dataset root"));
	expect_list_error("d1/a.jpg\nd1/../../root/d1/b.jpg\n", NOPFS_ERR_INVALID, "line 2");
	expect_list_error("d1/nope.jpg 3\n", NOPFS_ERR_NOT_FOUND,
	                  "line 1: cannot stat 'd1/nope.jpg'");
	expect_list_error("d1/a.jpg\nd1/b.jpg\n./d1//a.jpg 4\n", NOPFS_ERR_DUPLICATE,
	                  "lines 1 and 3 both name 'd1/a.jpg'");
	expect_list_error("d1/a.jpg\n\nd1/b.jpg\n", NOPFS_ERR_FORMAT, "line 2 is empty");
	expect_list_error("d1/a.jpg\n \r\n", NOPFS_ERR_FORMAT, "line 2 is empty");
	expect_list_error("", NOPFS_ERR_EMPTY, "has no samples");
	expect_list_error("d1 0\n", NOPFS_ERR_INVALID, "line 1: 'd1' is a directory");
	expect_list_error(".\n", NOPFS_ERR_INVALID, "the dataset root itself");
	expect_list_error("d1/a.jpg 99999999999999999999\n", NOPFS_ERR_RANGE, "line 1: label");
	log_reset();
	ck_assert_int_eq(build_list(at("root"), at("missing.txt"), &catalog), NOPFS_ERR_NOT_FOUND);
	ck_assert(logged("cannot open list file") && logged(at("missing.txt")));
}
END_TEST

START_TEST(test_find_and_path)
{
	static const char *const strangers[] = {
		"",           "b",          "b/",       "/b/top.jpg", "./b/top.jpg",
		"b//top.jpg", "b/top.jpgx", "b/top.jp", "B/top.jpg",  "c_link",
	};
	struct nopfs_catalog *catalog;
	char small[8];
	size_t i;

	make_tricky_tree();
	ck_assert_int_eq(build_folder(at("root"), NULL, &catalog), NOPFS_OK);
	for (i = 0; i < sizeof(tricky) / sizeof(tricky[0]); i++)
		ck_assert_int_eq(nopfs_catalog_find(catalog, tricky[i].path), (int64_t)i);
	for (i = 0; i < sizeof(strangers) / sizeof(strangers[0]); i++)
		ck_assert_int_eq(nopfs_catalog_find(catalog, strangers[i]), -1);
	ck_assert_int_eq(nopfs_catalog_path(catalog, 0, small, sizeof(small)), NOPFS_ERR_RANGE);
	ck_assert_int_eq(nopfs_catalog_path(catalog, 99, small, sizeof(small)), NOPFS_ERR_RANGE);
	nopfs_catalog_destroy(catalog);
}
END_TEST

START_TEST(test_from_sizes)
{
	uint64_t sizes[] = { 3, 0, UINT64_C(1) << 40 };
	struct nopfs_catalog *catalog = NULL;
	char path[16];

	ck_assert_int_eq(nopfs_catalog_from_sizes(sizes, 0, &catalog), NOPFS_ERR_EMPTY);
	ck_assert_int_eq(nopfs_catalog_from_sizes(sizes, 3, &catalog), NOPFS_OK);
	sizes[0] = 99;
	ck_assert_uint_eq(nopfs_catalog_count(catalog), 3);
	ck_assert_uint_eq(nopfs_catalog_size(catalog, 0), 3);
	ck_assert_uint_eq(nopfs_catalog_total_bytes(catalog), 3 + (UINT64_C(1) << 40));
	ck_assert_int_eq(nopfs_catalog_label(catalog, 2), 0);
	ck_assert_ptr_null(nopfs_catalog_root(catalog));
	ck_assert_uint_eq(nopfs_catalog_class_count(catalog), 0);
	ck_assert_int_eq(nopfs_catalog_path(catalog, 0, path, sizeof(path)), NOPFS_ERR_NOT_FOUND);
	ck_assert_int_eq(nopfs_catalog_find(catalog, "x"), -1);
	nopfs_catalog_destroy(catalog);
}
END_TEST

/* A sparse 5 GiB sample is reported to the byte, in both formats. */
START_TEST(test_64bit_size)
{
	const uint64_t huge = UINT64_C(5) << 30;
	struct nopfs_catalog *catalog;
	int fd;

	make_file(at("root/big/small.jpg"), 10);
	fd = open(at("root/big/huge.jpg"), O_WRONLY | O_CREAT, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)huge), 0);
	close(fd);
	ck_assert_int_eq(build_folder(at("root"), NULL, &catalog), NOPFS_OK);
	ck_assert_str_eq(path_of(catalog, 0), "big/huge.jpg");
	ck_assert_uint_eq(nopfs_catalog_size(catalog, 0), huge);
	ck_assert_uint_eq(nopfs_catalog_total_bytes(catalog), huge + 10);
	nopfs_catalog_destroy(catalog);
	write_text(at("list.txt"), "big/small.jpg\nbig/huge.jpg\n");
	ck_assert_int_eq(build_list(at("root"), at("list.txt"), &catalog), NOPFS_OK);
	ck_assert_uint_eq(nopfs_catalog_size(catalog, 1), huge);
	nopfs_catalog_destroy(catalog);
}
END_TEST

START_TEST(test_serialize_round_trip)
{
	struct nopfs_catalog *catalog, *copy, *synthetic;
	uint64_t sizes[] = { 1, UINT64_C(5) << 30, 7 };
	size_t length;
	void *buffer;

	make_tricky_tree();
	ck_assert_int_eq(build_folder(at("root"), NULL, &catalog), NOPFS_OK);
	ck_assert_int_eq(nopfs_catalog_serialize(catalog, &buffer, &length), NOPFS_OK);
	ck_assert_int_eq(nopfs_catalog_deserialize(buffer, length, &copy), NOPFS_OK);
	assert_same_catalog(catalog, copy);
	ck_assert_str_eq(nopfs_catalog_root(copy), at("root"));
	nopfs_catalog_destroy(copy);
	free(buffer);
	nopfs_catalog_destroy(catalog);

	ck_assert_int_eq(nopfs_catalog_from_sizes(sizes, 3, &synthetic), NOPFS_OK);
	ck_assert_int_eq(nopfs_catalog_serialize(synthetic, &buffer, &length), NOPFS_OK);
	ck_assert_int_eq(nopfs_catalog_deserialize(buffer, length, &copy), NOPFS_OK);
	ck_assert_uint_eq(nopfs_catalog_count(copy), 3);
	ck_assert_uint_eq(nopfs_catalog_size(copy, 1), UINT64_C(5) << 30);
	ck_assert_ptr_null(nopfs_catalog_root(copy));
	ck_assert_int_eq(nopfs_catalog_find(copy, "x"), -1);
	nopfs_catalog_destroy(copy);
	free(buffer);
	nopfs_catalog_destroy(synthetic);
}
END_TEST

/* Every truncation, every single-bit flip and a padded buffer are refused. */
START_TEST(test_deserialize_rejects)
{
	struct nopfs_catalog *catalog, *copy = NULL;
	uint8_t *buffer, *bad;
	size_t length, i;
	int bit;

	make_tricky_tree();
	ck_assert_int_eq(build_folder(at("root"), NULL, &catalog), NOPFS_OK);
	ck_assert_int_eq(nopfs_catalog_serialize(catalog, (void **)&buffer, &length), NOPFS_OK);
	nopfs_catalog_destroy(catalog);
	for (i = 0; i < length; i++) {
		/* An allocation of exactly i bytes lets valgrind see any overread. */
		bad = malloc(i ? i : 1);
		ck_assert_ptr_nonnull(bad);
		memcpy(bad, buffer, i);
		ck_assert_int_eq(nopfs_catalog_deserialize(bad, i, &copy), NOPFS_ERR_FORMAT);
		free(bad);
	}
	ck_assert(logged("shorter than its header") && logged("truncated or padded"));
	bad = malloc(length + 1);
	ck_assert_ptr_nonnull(bad);
	memcpy(bad, buffer, length);
	bad[0] ^= 1;
	log_reset();
	ck_assert_int_eq(nopfs_catalog_deserialize(bad, length, &copy), NOPFS_ERR_FORMAT);
	ck_assert(logged("cannot load serialized catalog") && logged("bad magic"));
	memcpy(bad, buffer, length);
	bad[length - 1] ^= 1;
	log_reset();
	ck_assert_int_eq(nopfs_catalog_deserialize(bad, length, &copy), NOPFS_ERR_FORMAT);
	ck_assert(logged("checksum mismatch"));
	for (i = 0; i < length; i++) {
		for (bit = 0; bit < 8; bit++) {
			memcpy(bad, buffer, length);
			bad[i] ^= (uint8_t)(1u << bit);
			ck_assert_int_eq(nopfs_catalog_deserialize(bad, length, &copy),
			                 NOPFS_ERR_FORMAT);
		}
	}
	memcpy(bad, buffer, length);
	bad[length] = 0;
	ck_assert_int_eq(nopfs_catalog_deserialize(bad, length + 1, &copy), NOPFS_ERR_FORMAT);
	ck_assert_ptr_null(copy);
	free(bad);
	free(buffer);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("catalog");
	TCase *scan = tcase_create("scan");
	TCase *errors = tcase_create("errors");
	TCase *object = tcase_create("object");
	SRunner *runner;
	int failed;

	tcase_add_checked_fixture(scan, fixture_setup, fixture_teardown);
	tcase_add_test(scan, test_imagefolder_order);
	tcase_add_test(scan, test_user_extensions);
	tcase_add_test(scan, test_list);
	tcase_add_test(scan, test_64bit_size);
	suite_add_tcase(suite, scan);
	tcase_add_checked_fixture(errors, fixture_setup, fixture_teardown);
	tcase_add_test(errors, test_root_errors);
	tcase_add_test(errors, test_folder_errors);
	tcase_add_test(errors, test_permission_errors);
	tcase_add_test(errors, test_list_errors);
	suite_add_tcase(suite, errors);
	tcase_add_checked_fixture(object, fixture_setup, fixture_teardown);
	tcase_add_test(object, test_find_and_path);
	tcase_add_test(object, test_from_sizes);
	tcase_add_test(object, test_serialize_round_trip);
	tcase_add_test(object, test_deserialize_rejects);
	suite_add_tcase(suite, object);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
