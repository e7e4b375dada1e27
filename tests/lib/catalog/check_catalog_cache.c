/* Unit tests of the catalog cache: reuse, invalidation, corruption, failures. */
#include "config.h"

#include <dirent.h>

#include "catalog_fixture.h"

/* Longer than the cache's window for timestamps too recent to trust (1 s). */
#define SETTLE_US 1200000

enum change {
	CHANGE_ADD_FILE,
	CHANGE_REMOVE_FILE,
	CHANGE_RENAME_FILE,
	CHANGE_REWRITE_FILE, /* same size, same inode */
	CHANGE_ADD_CLASS,
	CHANGE_SYMLINK_TARGET, /* a dangling symlink starts leading to a directory */
	CHANGE_EDIT_LIST,      /* same size, lines swapped */
	CHANGE_RESIZE_LISTED,
	CHANGES
};

static bool is_list_change(int change)
{
	return change == CHANGE_EDIT_LIST || change == CHANGE_RESIZE_LISTED;
}

static nopfs_status open_cached(int change, const char *root, struct nopfs_catalog **out,
                                bool *used)
{
	struct nopfs_catalog_options options = {
		.format = NOPFS_INDEX_IMAGEFOLDER,
		.root = root,
		.cache_dir = at("cache"),
	};

	if (is_list_change(change)) {
		options.format = NOPFS_INDEX_LIST;
		options.list_path = at("t%d/list.txt", change);
	}
	return nopfs_catalog_open(&options, out, used);
}

/* Open tree @change through the cache; the result must equal a fresh build. */
static bool open_and_compare(int change)
{
	struct nopfs_catalog *cached, *built;
	bool used = false;
	nopfs_status status;

	ck_assert_int_eq(open_cached(change, at("t%d/root", change), &cached, &used), NOPFS_OK);
	if (is_list_change(change))
		status = build_list(at("t%d/root", change), at("t%d/list.txt", change), &built);
	else
		status = build_folder(at("t%d/root", change), NULL, &built);
	ck_assert_int_eq(status, NOPFS_OK);
	assert_same_catalog(built, cached);
	nopfs_catalog_destroy(built);
	nopfs_catalog_destroy(cached);
	return used;
}

static void make_tree(int change)
{
	make_file(at("t%d/root/cls_a/1.jpg", change), 10);
	make_file(at("t%d/root/cls_a/2.jpg", change), 20);
	make_file(at("t%d/root/cls_a/sub/3.jpg", change), 30);
	make_file(at("t%d/root/cls_b/4.jpg", change), 40);
	make_link("../../later", at("t%d/root/cls_a/later", change));
	write_text(at("t%d/list.txt", change), "cls_b/4.jpg 1\ncls_a/1.jpg 0\n");
}

static void change_tree(int change)
{
	switch (change) {
	case CHANGE_ADD_FILE:
		make_file(at("t%d/root/cls_a/sub/5.jpg", change), 50);
		break;
	case CHANGE_REMOVE_FILE:
		ck_assert_int_eq(unlink(at("t%d/root/cls_a/2.jpg", change)), 0);
		break;
	case CHANGE_RENAME_FILE:
		ck_assert_int_eq(rename(at("t%d/root/cls_a/2.jpg", change),
		                        at("t%d/root/cls_a/2b.jpg", change)),
		                 0);
		break;
	case CHANGE_REWRITE_FILE:
		make_file_filled(at("t%d/root/cls_a/2.jpg", change), 20, 'y');
		break;
	case CHANGE_ADD_CLASS:
		make_file(at("t%d/root/cls_c/6.jpg", change), 60);
		break;
	case CHANGE_SYMLINK_TARGET:
		make_file(at("t%d/later/7.jpg", change), 70);
		break;
	case CHANGE_EDIT_LIST:
		write_text(at("t%d/list.txt", change), "cls_a/1.jpg 0\ncls_b/4.jpg 1\n");
		break;
	case CHANGE_RESIZE_LISTED:
		make_file(at("t%d/root/cls_b/4.jpg", change), 41);
		break;
	}
}

/* The catalog of a changed tree shows the change. */
static void check_change(int change)
{
	struct nopfs_catalog *catalog;
	bool used = true;

	ck_assert_int_eq(open_cached(change, at("t%d/root", change), &catalog, &used), NOPFS_OK);
	ck_assert_msg(!used, "change %d: stale cache used", change);
	switch (change) {
	case CHANGE_ADD_FILE:
		ck_assert_int_eq(nopfs_catalog_find(catalog, "cls_a/sub/5.jpg"), 3);
		break;
	case CHANGE_REMOVE_FILE:
		ck_assert_uint_eq(nopfs_catalog_count(catalog), 3);
		ck_assert_int_eq(nopfs_catalog_find(catalog, "cls_a/2.jpg"), -1);
		break;
	case CHANGE_RENAME_FILE:
		ck_assert_int_eq(nopfs_catalog_find(catalog, "cls_a/2.jpg"), -1);
		ck_assert_int_eq(nopfs_catalog_find(catalog, "cls_a/2b.jpg"), 1);
		break;
	case CHANGE_REWRITE_FILE:
		ck_assert_uint_eq(nopfs_catalog_count(catalog), 4);
		break;
	case CHANGE_ADD_CLASS:
		ck_assert_uint_eq(nopfs_catalog_class_count(catalog), 3);
		ck_assert_str_eq(nopfs_catalog_class_name(catalog, 2), "cls_c");
		ck_assert_int_eq(nopfs_catalog_label(catalog, 4), 2);
		break;
	case CHANGE_SYMLINK_TARGET:
		ck_assert_int_eq(nopfs_catalog_find(catalog, "cls_a/later/7.jpg"), 2);
		break;
	case CHANGE_EDIT_LIST:
		ck_assert_str_eq(path_of(catalog, 0), "cls_a/1.jpg");
		break;
	case CHANGE_RESIZE_LISTED:
		ck_assert_uint_eq(nopfs_catalog_size(catalog, 0), 41);
		break;
	}
	nopfs_catalog_destroy(catalog);
}

START_TEST(test_cache_invalidation)
{
	int change;

	for (change = 0; change < CHANGES; change++)
		make_tree(change);
	usleep(SETTLE_US);
	for (change = 0; change < CHANGES; change++) {
		ck_assert_msg(!open_and_compare(change), "change %d: first open used a cache",
		              change);
		ck_assert_msg(open_and_compare(change), "change %d: cache not used", change);
	}
	for (change = 0; change < CHANGES; change++)
		change_tree(change);
	log_reset();
	for (change = 0; change < CHANGES; change++) {
		check_change(change);
		ck_assert(!open_and_compare(change));
	}
	ck_assert(logged("is stale"));
	ck_assert(logged("changed less than"));
}
END_TEST

/* A tree younger than the timestamp granularity window is not cached. */
START_TEST(test_cache_racy)
{
	make_tree(0);
	ck_assert(!open_and_compare(0));
	ck_assert(logged("not caching the catalog"));
	ck_assert(!open_and_compare(0));
}
END_TEST

/* The path of the only cache file. */
static const char *cache_file(void)
{
	static char path[PATH_MAX];
	struct dirent *entry;
	int found = 0;
	DIR *dir;

	dir = opendir(at("cache"));
	ck_assert_ptr_nonnull(dir);
	while ((entry = readdir(dir))) {
		if (entry->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s", at("cache/%s", entry->d_name));
		found++;
	}
	closedir(dir);
	ck_assert_int_eq(found, 1);
	return path;
}

static size_t file_size(const char *path)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return (size_t)st.st_size;
}

static void flip_byte(const char *path, size_t offset)
{
	unsigned char byte;
	int fd = open(path, O_RDWR);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &byte, 1, (off_t)offset), 1);
	byte ^= 0x20;
	ck_assert_int_eq(pwrite(fd, &byte, 1, (off_t)offset), 1);
	close(fd);
}

/* Each corruption makes the next open rescan (and rewrite), the one after reuse. */
static void expect_rebuilt(void)
{
	log_reset();
	ck_assert(!open_and_compare(0));
	ck_assert_msg(logged("is corrupt"), "%s", fixture_log);
	ck_assert(open_and_compare(0));
}

static int check_unwritable_cache(void)
{
	struct nopfs_catalog *catalog;
	bool used = true;

	if (open_cached(0, at("t0/root"), &catalog, &used) != NOPFS_OK)
		return 1;
	nopfs_catalog_destroy(catalog);
	return !used && logged("cannot write catalog cache") ? 0 : 2;
}

START_TEST(test_cache_corrupt_and_unwritable)
{
	struct nopfs_catalog_options options = { .root = at("t0/root") };
	struct nopfs_catalog *catalog;
	char *contents, relative[] = "cls_a/sub/3.jpg";
	const char *path;
	size_t length;
	struct stat st;
	bool used;
	FILE *file;

	make_tree(0);
	usleep(SETTLE_US);
	ck_assert(!open_and_compare(0));
	ck_assert(open_and_compare(0));
	path = cache_file();
	length = file_size(path);

	/* Compact: relative paths only, each once. */
	contents = malloc(length);
	file = fopen(path, "r");
	ck_assert_uint_eq(fread(contents, 1, length, file), length);
	fclose(file);
	ck_assert_ptr_null(
	        memmem(contents, length, at("t0/root/cls_a"), strlen(at("t0/root/cls_a"))));
	ck_assert_ptr_nonnull(memmem(contents, length, relative, strlen(relative)));
	free(contents);

	flip_byte(path, 40); /* metadata */
	expect_rebuilt();
	flip_byte(path, file_size(path) - 1); /* catalog */
	expect_rebuilt();
	ck_assert_int_eq(truncate(path, (off_t)(file_size(path) / 2)), 0);
	expect_rebuilt();
	ck_assert_int_eq(truncate(path, 0), 0);
	expect_rebuilt();
	if (geteuid() == 0) {
		/* A cache someone else wrote is not trusted. */
		ck_assert_int_eq(chown(path, FIXTURE_NOBODY, FIXTURE_NOBODY), 0);
		log_reset();
		ck_assert(!open_and_compare(0));
		ck_assert(logged("belongs to uid 65534"));
		ck_assert(open_and_compare(0));
	}

	/* The cached catalog carries the root as given this time. */
	options.root = at("t0/root/");
	options.cache_dir = at("cache");
	ck_assert_int_eq(nopfs_catalog_open(&options, &catalog, NULL), NOPFS_OK);
	ck_assert_str_eq(nopfs_catalog_root(catalog), at("t0/root/"));
	nopfs_catalog_destroy(catalog);

	/* Missing cache directories are created private. */
	options.cache_dir = at("new/deeper");
	ck_assert_int_eq(nopfs_catalog_open(&options, &catalog, &used), NOPFS_OK);
	nopfs_catalog_destroy(catalog);
	ck_assert_int_eq(stat(at("new/deeper"), &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	ck_assert_int_eq(nopfs_catalog_open(&options, &catalog, &used), NOPFS_OK);
	ck_assert(used);
	nopfs_catalog_destroy(catalog);

	/* A cache directory that cannot be made or written only costs a warning. */
	make_file(at("blocker"), 1);
	options.cache_dir = at("blocker/cache");
	log_reset();
	ck_assert_int_eq(nopfs_catalog_open(&options, &catalog, &used), NOPFS_OK);
	ck_assert(!used);
	ck_assert(logged("warning: cannot create catalog cache directory"));
	ck_assert_uint_eq(nopfs_catalog_count(catalog), 4);
	nopfs_catalog_destroy(catalog);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(chmod(at("cache"), 0555), 0);
	ck_assert_int_eq(run_unprivileged(check_unwritable_cache), 0);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("catalog_cache");
	TCase *cache = tcase_create("cache");
	SRunner *runner;
	int failed;

	tcase_add_checked_fixture(cache, fixture_setup, fixture_teardown);
	tcase_add_test(cache, test_cache_invalidation);
	tcase_add_test(cache, test_cache_racy);
	tcase_add_test(cache, test_cache_corrupt_and_unwritable);
	suite_add_tcase(suite, cache);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
