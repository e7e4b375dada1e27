/*
 * Unit tests of the dataset's metadata buffer (catalog/meta.h): the scan,
 * the resolver's answers as the kernel gives them, the changed marks, and
 * the validator refusing damaged buffers, each for its reason.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "catalog/meta.h"

uint64_t nopfs_meta_checksum(const void *data, size_t length);

static char root[256];
static void *buffer;
static size_t length;
static struct nopfs_meta_view view;

static void make(const char *relative, bool dir)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, relative);
	if (dir) {
		ck_assert_int_eq(mkdir(path, 0755), 0);
	} else {
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, "abc", 3), 3);
		close(fd);
	}
}

static void setup(void)
{
	const char *why;
	char path[512];

	snprintf(root, sizeof(root), "/tmp/check_meta.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	make("a", true);
	make("a/b", true);
	make("a/f.jpg", false);
	make("empty", true);
	snprintf(path, sizeof(path), "%s/link", root);
	ck_assert_int_eq(symlink("a", path), 0);
	snprintf(path, sizeof(path), "%s/gone", root);
	ck_assert_int_eq(symlink("/nonexistent/x", path), 0);
	snprintf(path, sizeof(path), "%s/a/b/up", root);
	ck_assert_int_eq(symlink("../..", path), 0); /* a cycle: left unlisted */
	ck_assert_int_eq(nopfs_meta_scan(root, (size_t)1 << 20, &buffer, &length), NOPFS_OK);
	ck_assert_int_eq(nopfs_meta_view_init(&view, buffer, length, &why), NOPFS_OK);
}

static void teardown(void)
{
	char command[600];

	free(buffer);
	snprintf(command, sizeof(command), "rm -rf '%s'", root);
	ck_assert_int_eq(system(command), 0);
}

/* Resolve @relative: the entry's name, or "errno N", or "pass". */
static const char *answer(const char *relative, bool follow, char *out, size_t size)
{
	uint32_t entry, parent;
	bool followed;
	int error;

	switch (nopfs_meta_resolve(&view, relative, follow, &entry, &parent, &followed, &error)) {
	case NOPFS_META_ENTRY:
		snprintf(out, size, "%s%s", nopfs_meta_name(&view, view.entries[entry].name),
		         followed ? " (followed)" : "");
		break;
	case NOPFS_META_ERROR:
		snprintf(out, size, "errno %d", error);
		break;
	default:
		snprintf(out, size, "pass");
	}
	return out;
}

START_TEST(scan_and_resolve)
{
	char out[128], expect[32];

	/* a/b/up and link/b/up (link is a again): cycles, left unlisted */
	ck_assert_uint_eq(view.header->unlisted, 2);
	ck_assert_str_eq(answer("", false, out, sizeof(out)), "");
	ck_assert_str_eq(answer("/a/f.jpg", false, out, sizeof(out)), "f.jpg");
	ck_assert_str_eq(answer("//a/./f.jpg", true, out, sizeof(out)), "f.jpg (followed)");
	ck_assert_str_eq(answer("/link", false, out, sizeof(out)), "link");
	ck_assert_str_eq(answer("/link", true, out, sizeof(out)), "link (followed)");
	ck_assert_str_eq(answer("/link/", false, out, sizeof(out)), "link (followed)");
	ck_assert_str_eq(answer("/link/f.jpg", false, out, sizeof(out)), "f.jpg");
	snprintf(expect, sizeof(expect), "errno %d", ENOENT);
	ck_assert_str_eq(answer("/nope", false, out, sizeof(out)), expect);
	ck_assert_str_eq(answer("/gone", true, out, sizeof(out)), expect);
	ck_assert_str_eq(answer("/gone/x", false, out, sizeof(out)), expect);
	ck_assert_str_eq(answer("/gone", false, out, sizeof(out)), "gone");
	snprintf(expect, sizeof(expect), "errno %d", ENOTDIR);
	ck_assert_str_eq(answer("/a/f.jpg/", false, out, sizeof(out)), expect);
	ck_assert_str_eq(answer("/a/f.jpg/x", false, out, sizeof(out)), expect);
	ck_assert_str_eq(answer("/a/../a", false, out, sizeof(out)), "pass");
	ck_assert_str_eq(answer("/a/b/up/a", false, out, sizeof(out)), "pass");
	ck_assert_str_eq(answer("/a/b/up", false, out, sizeof(out)), "up");
}
END_TEST

START_TEST(changed_directories_pass)
{
	uint8_t *changed = calloc(view.header->dir_count, 1);
	uint32_t newly[8];
	char out[128], path[512];

	view.changed = changed;
	ck_assert_uint_eq(nopfs_meta_check_dirs(&view, changed, newly, 8), 0);
	snprintf(path, sizeof(path), "%s/a/new.jpg", root);
	/* a new name changes the directory's mtime and ctime (a tick after the scan's) */
	usleep(50000);
	ck_assert_int_eq(close(open(path, O_WRONLY | O_CREAT, 0644)), 0);
	/* a, and link: the same directory listed twice */
	ck_assert_uint_eq(nopfs_meta_check_dirs(&view, changed, newly, 8), 2);
	for (int i = 0; i < 2; i++) {
		const char *real = nopfs_meta_name(&view, view.dirs[newly[i]].realpath);

		ck_assert_str_eq(real + strlen(real) - 2, "/a");
	}
	ck_assert_str_eq(answer("/a/f.jpg", false, out, sizeof(out)), "pass");
	ck_assert_str_eq(answer("/a", false, out, sizeof(out)), "pass");
	ck_assert_str_eq(answer("/link/f.jpg", false, out, sizeof(out)), "pass");
	ck_assert_str_eq(answer("/empty", false, out, sizeof(out)), "empty");
	/* Marked once only. */
	ck_assert_uint_eq(nopfs_meta_check_dirs(&view, changed, newly, 8), 0);
	view.changed = NULL;
	free(changed);
}
END_TEST

/* Damage @copy, fix its checksum when @rechecksum, expect @why. */
static void expect_refused(uint8_t *copy, bool rechecksum, const char *why_expected)
{
	struct nopfs_meta_header *h = (void *)copy;
	struct nopfs_meta_view damaged;
	const char *why;

	if (rechecksum)
		h->checksum = nopfs_meta_checksum(copy + sizeof(*h), length - sizeof(*h));
	ck_assert_int_eq(nopfs_meta_view_init(&damaged, copy, length, &why), NOPFS_ERR_FORMAT);
	ck_assert_str_eq(why, why_expected);
}

START_TEST(damaged_buffers_refused)
{
	uint8_t *copy = malloc(length);
	struct nopfs_meta_header *h = (void *)copy;
	struct nopfs_meta_entry *entries;
	const char *why;

	memcpy(copy, buffer, length);
	entries = (void *)(copy + sizeof(*h) + h->dir_count * sizeof(struct nopfs_meta_dir));
	copy[length - 2] ^= 1;
	expect_refused(copy, false, "fails its checksum");
	memcpy(copy, buffer, length);
	h->version++;
	expect_refused(copy, false, "is not a metadata file of this version and architecture");
	memcpy(copy, buffer, length);
	entries[1].name = h->names_length + 5;
	expect_refused(copy, true, "has an offset out of range");
	memcpy(copy, buffer, length);
	entries[1].dir = h->dir_count;
	expect_refused(copy, true, "has an offset out of range");
	memcpy(copy, buffer, length);
	entries[1].link = h->names_length;
	expect_refused(copy, true, "has an offset out of range");
	ck_assert_int_eq(nopfs_meta_view_init(&view, buffer, length - 8, &why), NOPFS_ERR_FORMAT);
	ck_assert_str_eq(why, "has the wrong length");
	free(copy);
}
END_TEST

/* Write @bytes bytes to @relative under @top. */
static void write_file(const char *top, const char *relative, size_t bytes, int flags)
{
	char path[512], data[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", top, relative);
	memset(data, 'x', sizeof(data));
	fd = open(path, O_WRONLY | O_CREAT | flags, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, bytes), (ssize_t)bytes);
	close(fd);
}

/* Whether catalogs @a and @b list the same samples, sizes and labels. */
static void expect_same_catalog(const struct nopfs_catalog *a, const struct nopfs_catalog *b)
{
	char pa[256], pb[256];

	ck_assert_uint_eq(nopfs_catalog_count(a), nopfs_catalog_count(b));
	ck_assert_uint_eq(nopfs_catalog_class_count(a), nopfs_catalog_class_count(b));
	for (uint64_t i = 0; i < nopfs_catalog_count(a); i++) {
		ck_assert_int_eq(nopfs_catalog_path(a, i, pa, sizeof(pa)), NOPFS_OK);
		ck_assert_int_eq(nopfs_catalog_path(b, i, pb, sizeof(pb)), NOPFS_OK);
		ck_assert_str_eq(pa, pb);
		ck_assert_uint_eq(nopfs_catalog_size(a, i), nopfs_catalog_size(b, i));
		ck_assert_int_eq(nopfs_catalog_label(a, i), nopfs_catalog_label(b, i));
	}
}

/*
 * A catalog built with the metadata's stats equals the one built from the
 * file system, in both formats; and its stats are the scan's: a file grown
 * after the scan keeps its scanned size (no stat of it was made).
 */
START_TEST(catalog_from_metadata)
{
	struct nopfs_catalog_options options = { .format = NOPFS_INDEX_IMAGEFOLDER };
	struct nopfs_catalog *plain, *served;
	struct nopfs_meta_view tree_view;
	char top[64], path[512], name[64], list[80], command[200];
	void *data;
	size_t data_length;
	const char *why;
	int64_t grown;
	FILE *lines;

	snprintf(top, sizeof(top), "/tmp/check_meta_catalog.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(top));
	snprintf(path, sizeof(path), "%s/c0", top);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/c0/sub", top);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/c1", top);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	for (int i = 0; i < 100; i++) { /* enough for several stat threads */
		snprintf(name, sizeof(name), "c0/f%03d.jpg", i);
		write_file(top, name, (size_t)i + 1, O_EXCL);
	}
	write_file(top, "c0/sub/x.png", 7, O_EXCL);
	write_file(top, "c1/readme.txt", 9, O_EXCL);
	write_file(top, "c1/y.JPEG", 11, O_EXCL);
	snprintf(path, sizeof(path), "%s/c1/l.jpg", top);
	ck_assert_int_eq(symlink("../c0/f009.jpg", path), 0);
	snprintf(path, sizeof(path), "%s/c2", top);
	ck_assert_int_eq(symlink("c1", path), 0);
	ck_assert_int_eq(nopfs_meta_scan(top, (size_t)1 << 20, &data, &data_length), NOPFS_OK);
	ck_assert_int_eq(nopfs_meta_view_init(&tree_view, data, data_length, &why), NOPFS_OK);

	options.root = top;
	ck_assert_int_eq(nopfs_catalog_build(&options, &plain), NOPFS_OK);
	options.meta = &tree_view;
	ck_assert_int_eq(nopfs_catalog_build(&options, &served), NOPFS_OK);
	ck_assert_uint_eq(nopfs_catalog_count(plain), 100 + 1 + 2 * 2);
	expect_same_catalog(plain, served);
	nopfs_catalog_destroy(served);
	nopfs_catalog_destroy(plain);

	snprintf(list, sizeof(list), "%s.list", top);
	lines = fopen(list, "w");
	ck_assert_ptr_nonnull(lines);
	fprintf(lines, "c0/f005.jpg 3\nc2/l.jpg 1\n%s/c0/sub/x.png\n", top);
	fclose(lines);
	options = (struct nopfs_catalog_options){ .format = NOPFS_INDEX_LIST,
		                                  .root = top,
		                                  .list_path = list };
	ck_assert_int_eq(nopfs_catalog_build(&options, &plain), NOPFS_OK);
	options.meta = &tree_view;
	ck_assert_int_eq(nopfs_catalog_build(&options, &served), NOPFS_OK);
	ck_assert_uint_eq(nopfs_catalog_count(plain), 3);
	expect_same_catalog(plain, served);
	nopfs_catalog_destroy(served);
	nopfs_catalog_destroy(plain);

	write_file(top, "c0/f005.jpg", 10, O_APPEND); /* 6 bytes when scanned, now 16 */
	options = (struct nopfs_catalog_options){ .format = NOPFS_INDEX_IMAGEFOLDER, .root = top };
	ck_assert_int_eq(nopfs_catalog_build(&options, &plain), NOPFS_OK);
	options.meta = &tree_view;
	ck_assert_int_eq(nopfs_catalog_build(&options, &served), NOPFS_OK);
	grown = nopfs_catalog_find(plain, "c0/f005.jpg");
	ck_assert_int_ge(grown, 0);
	ck_assert_uint_eq(nopfs_catalog_size(plain, (uint64_t)grown), 16);
	ck_assert_uint_eq(nopfs_catalog_size(served, (uint64_t)grown), 6);
	nopfs_catalog_destroy(served);
	nopfs_catalog_destroy(plain);

	free(data);
	unlink(list);
	snprintf(command, sizeof(command), "rm -rf '%s'", top);
	ck_assert_int_eq(system(command), 0);
}
END_TEST

/* @a's entries are @b's: names, readdir's fields, directories, stats. */
static void same_entries(const struct nopfs_meta_view *a, const struct nopfs_meta_view *b)
{
	ck_assert_uint_eq(a->header->entry_count, b->header->entry_count);
	for (uint32_t e = 0; e < b->header->entry_count; e++) {
		const struct nopfs_meta_entry *x = &a->entries[e], *y = &b->entries[e];

		ck_assert_str_eq(nopfs_meta_name(a, x->name), nopfs_meta_name(b, y->name));
		ck_assert_uint_eq(x->d_ino, y->d_ino);
		ck_assert_uint_eq(x->d_type, y->d_type);
		ck_assert_uint_eq(x->dir, y->dir);
		ck_assert_int_eq(x->stat.error, y->stat.error);
		ck_assert_int_eq(x->lstat.error, y->lstat.error);
		ck_assert_uint_eq(x->stat.size, y->stat.size);
		ck_assert_uint_eq(x->stat.ino, y->stat.ino);
		ck_assert_uint_eq(x->stat.mode, y->stat.mode);
		ck_assert_uint_eq(x->lstat.mode, y->lstat.mode);
	}
}

/*
 * The listings alone leave the files' stats unknown (the resolver passes
 * them to the file system); nopfs_meta_stat_files() then makes exactly
 * those, and the buffer answers as the full scan's does.
 */
START_TEST(listing_then_files)
{
	struct nopfs_meta_view full = view, listed;
	char out[128], expect[32];
	const char *why;
	uint64_t made = 0;
	unsigned int most = 0;
	size_t listed_length;
	void *listed_buffer;
	struct stat st;

	ck_assert_int_eq(
	        nopfs_meta_scan_listing(root, (size_t)1 << 20, &listed_buffer, &listed_length),
	        NOPFS_OK);
	ck_assert_uint_eq(listed_length, length);
	ck_assert_int_eq(nopfs_meta_view_init(&listed, listed_buffer, listed_length, &why),
	                 NOPFS_OK);
	view = listed;
	ck_assert_str_eq(answer("/a/f.jpg", false, out, sizeof(out)), "pass");
	ck_assert_str_eq(answer("/link/f.jpg", true, out, sizeof(out)), "pass");
	ck_assert_str_eq(answer("/a/f.jpg/x", false, out, sizeof(out)), "pass");
	ck_assert_str_eq(answer("/a", false, out, sizeof(out)), "a");
	ck_assert_str_eq(answer("/link", true, out, sizeof(out)), "link (followed)");
	ck_assert_str_eq(answer("/a/b/up", false, out, sizeof(out)), "up");
	snprintf(expect, sizeof(expect), "errno %d", ENOENT);
	ck_assert_str_eq(answer("/a/nope", false, out, sizeof(out)), expect);
	ck_assert_int_eq(nopfs_meta_stat_path(&listed, "/a/f.jpg", true, &st), 1);
	ck_assert_int_eq(nopfs_meta_stat_path(&listed, "/a", true, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));

	/* f.jpg, listed in a and again through link: one stat for each entry */
	ck_assert_int_eq(nopfs_meta_stat_files(listed_buffer, listed_length, 3, &made, NULL),
	                 NOPFS_OK);
	ck_assert_uint_eq(made, 2);
	ck_assert_int_eq(nopfs_meta_view_init(&listed, listed_buffer, listed_length, &why),
	                 NOPFS_OK);
	ck_assert_str_eq(answer("/a/f.jpg", false, out, sizeof(out)), "f.jpg");
	ck_assert_int_eq(nopfs_meta_stat_path(&listed, "/a/f.jpg", true, &st), 0);
	ck_assert_int_eq(st.st_size, 3);
	ck_assert(S_ISREG(st.st_mode));
	snprintf(expect, sizeof(expect), "errno %d", ENOTDIR);
	ck_assert_str_eq(answer("/a/f.jpg/x", false, out, sizeof(out)), expect);
	for (uint32_t e = 0; e < full.header->entry_count; e++) {
		ck_assert_str_eq(nopfs_meta_name(&listed, listed.entries[e].name),
		                 nopfs_meta_name(&full, full.entries[e].name));
		ck_assert_int_eq(listed.entries[e].stat.error, full.entries[e].stat.error);
		ck_assert_uint_eq(listed.entries[e].stat.mode, full.entries[e].stat.mode);
		ck_assert_uint_eq(listed.entries[e].stat.size, full.entries[e].stat.size);
		ck_assert_uint_eq(listed.entries[e].stat.ino, full.entries[e].stat.ino);
		ck_assert_uint_eq(listed.entries[e].lstat.ino, full.entries[e].lstat.ino);
	}
	/* nothing left to make */
	ck_assert_int_eq(nopfs_meta_stat_files(listed_buffer, listed_length, 2, &made, &most),
	                 NOPFS_OK);
	ck_assert_uint_eq(made, 0);
	/* a damaged buffer is refused, untouched */
	((char *)listed_buffer)[listed_length - 1] ^= 1;
	ck_assert_int_eq(nopfs_meta_stat_files(listed_buffer, listed_length, 2, &made, &most),
	                 NOPFS_ERR_FORMAT);
	view = full;
	free(listed_buffer);
}
END_TEST

/*
 * A tree of more files than a unit of the paced stat (256 a directory):
 * the stats the workers make, however many run, are those of the full scan,
 * each made once.
 */
START_TEST(many_files_paced)
{
	static const unsigned int files[] = { 1000, 300, 0, 257 };
	struct nopfs_meta_view full, listed;
	void *full_buffer, *listed_buffer;
	size_t full_length, listed_length;
	uint64_t made = 0, expected = 0;
	unsigned int most = 0;
	const char *why;
	char dir[32], name[64];

	for (unsigned int d = 0; d < sizeof(files) / sizeof(files[0]); d++) {
		snprintf(dir, sizeof(dir), "many%u", d);
		make(dir, true);
		for (unsigned int f = 0; f < files[d]; f++) {
			snprintf(name, sizeof(name), "%s/%04u.bin", dir, f);
			make(name, false);
		}
		expected += files[d];
	}
	ck_assert_int_eq(nopfs_meta_scan(root, (size_t)1 << 24, &full_buffer, &full_length),
	                 NOPFS_OK);
	ck_assert_int_eq(nopfs_meta_view_init(&full, full_buffer, full_length, &why), NOPFS_OK);
	/* on 16 threads, paced; on one, unpaced: the same */
	for (unsigned int t = 0; t < 2; t++) {
		unsigned int threads = t == 0 ? 16 : 1;

		ck_assert_int_eq(nopfs_meta_scan_listing(root, (size_t)1 << 24, &listed_buffer,
		                                         &listed_length),
		                 NOPFS_OK);
		ck_assert_int_eq(
		        nopfs_meta_stat_files(listed_buffer, listed_length, threads, &made, &most),
		        NOPFS_OK);
		/* the many* files, and a/f.jpg twice (through link too) */
		ck_assert_uint_eq(made, expected + 2);
		ck_assert_uint_ge(most, 1);
		ck_assert_uint_le(most, threads);
		ck_assert_int_eq(nopfs_meta_view_init(&listed, listed_buffer, listed_length, &why),
		                 NOPFS_OK);
		same_entries(&listed, &full);
		free(listed_buffer);
	}
	free(full_buffer);
}
END_TEST

/*
 * A tree of many subdirectories, read ahead in batches: 150 class folders
 * (three batches), symbolic links to directories among them, nested
 * folders with their own; the listing equals the full scan, which walks
 * them one by one, directory by directory and entry by entry.
 */
START_TEST(many_directories_read_ahead)
{
	struct nopfs_meta_view full, listed;
	void *full_buffer, *listed_buffer;
	size_t full_length, listed_length;
	char name[64], path[512];
	uint64_t made = 0;
	unsigned int most = 0;
	const char *why;

	make("classes", true);
	for (unsigned int d = 0; d < 150; d++) {
		snprintf(name, sizeof(name), "classes/c%03u", d);
		make(name, true);
		for (unsigned int f = 0; f < d % 4; f++) {
			snprintf(name, sizeof(name), "classes/c%03u/%u.jpg", d, f);
			make(name, false);
		}
		if (d % 37 == 0) {
			snprintf(name, sizeof(name), "classes/c%03u/sub", d);
			make(name, true);
			snprintf(name, sizeof(name), "classes/c%03u/sub/deep", d);
			make(name, true);
			snprintf(name, sizeof(name), "classes/c%03u/sub/x.jpg", d);
			make(name, false);
		}
		if (d % 50 == 7) {
			snprintf(path, sizeof(path), "%s/classes/l%03u", root, d);
			ck_assert_int_eq(symlink("../a", path), 0);
		}
	}
	ck_assert_int_eq(nopfs_meta_scan(root, (size_t)1 << 24, &full_buffer, &full_length),
	                 NOPFS_OK);
	ck_assert_int_eq(nopfs_meta_view_init(&full, full_buffer, full_length, &why), NOPFS_OK);
	ck_assert_int_eq(
	        nopfs_meta_scan_listing(root, (size_t)1 << 24, &listed_buffer, &listed_length),
	        NOPFS_OK);
	ck_assert_int_eq(nopfs_meta_stat_files(listed_buffer, listed_length, 4, &made, &most),
	                 NOPFS_OK);
	ck_assert_int_eq(nopfs_meta_view_init(&listed, listed_buffer, listed_length, &why),
	                 NOPFS_OK);
	ck_assert_uint_ge(full.header->dir_count, 150 + 2 * 5);
	ck_assert_uint_eq(listed.header->dir_count, full.header->dir_count);
	ck_assert_uint_eq(listed.header->unlisted, full.header->unlisted);
	for (uint32_t d = 0; d < full.header->dir_count; d++) {
		ck_assert_str_eq(nopfs_meta_name(&listed, listed.dirs[d].realpath),
		                 nopfs_meta_name(&full, full.dirs[d].realpath));
		ck_assert_uint_eq(listed.dirs[d].self, full.dirs[d].self);
		ck_assert_uint_eq(listed.dirs[d].first, full.dirs[d].first);
		ck_assert_uint_eq(listed.dirs[d].count, full.dirs[d].count);
	}
	same_entries(&listed, &full);
	free(listed_buffer);
	free(full_buffer);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("meta");
	TCase *tc = tcase_create("meta");
	SRunner *runner;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, scan_and_resolve);
	tcase_add_test(tc, changed_directories_pass);
	tcase_add_test(tc, damaged_buffers_refused);
	tcase_add_test(tc, listing_then_files);
	tcase_add_test(tc, many_files_paced);
	tcase_add_test(tc, many_directories_read_ahead);
	suite_add_tcase(suite, tc);
	tc = tcase_create("catalog");
	tcase_add_test(tc, catalog_from_metadata);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
