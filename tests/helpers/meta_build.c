/*
 * meta_build: scan a dataset's metadata (catalog/meta.h) into a file, as the
 * agent does for the staging directory, for the interposer's tests.
 *
 *   meta_build ROOT OUTPUT [BUDGET]
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "catalog/meta.h"
#include "common/atomic_file.h"

int main(int argc, char **argv)
{
	size_t budget = (size_t)1 << 30;
	struct nopfs_meta_view view;
	const char *why;
	size_t length;
	void *buffer;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: meta_build ROOT OUTPUT [BUDGET]\n");
		return 2;
	}
	if (argc == 4)
		budget = strtoull(argv[3], NULL, 10);
	if (nopfs_meta_scan(argv[1], budget, &buffer, &length) != NOPFS_OK)
		return 1;
	if (nopfs_meta_view_init(&view, buffer, length, &why) != NOPFS_OK) {
		fprintf(stderr, "meta_build: the buffer made %s\n", why);
		return 1;
	}
	if (nopfs_atomic_write(argv[2], 0600, buffer, length) != NOPFS_OK) {
		perror(argv[2]);
		return 1;
	}
	printf("%u directories, %u entries, %u unlisted, %zu bytes\n", view.header->dir_count,
	       view.header->entry_count, view.header->unlisted, length);
	free(buffer);
	return 0;
}
