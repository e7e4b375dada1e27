/*
 * meta_build: the agent's part of the dataset's metadata (catalog/meta.h)
 * for the interposer's tests.
 *
 *   meta_build [--listing] ROOT STAGE [BUDGET]
 *                                    scan ROOT into STAGE/meta, with
 *                                    STAGE/meta-changed (nothing changed);
 *                                    --listing: the listings only, the
 *                                    files' stats unknown
 *   meta_build --check STAGE         mark the directories changed since
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog/meta.h"
#include "common/atomic_file.h"
#include "common/readall.h"
#include "task/runtime.h"

static int check(const char *stage)
{
	struct nopfs_meta_view view;
	char path[4096];
	uint32_t newly[64];
	const char *why;
	uint8_t *changed;
	size_t length;
	void *buffer;
	uint32_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", stage, NOPFS_STAGE_META_NAME);
	fd = open(path, O_RDONLY);
	if (fd < 0 || nopfs_read_all(fd, SIZE_MAX, &buffer, &length) != NOPFS_OK ||
	    nopfs_meta_view_init(&view, buffer, length, &why) != NOPFS_OK) {
		fprintf(stderr, "meta_build: %s is not readable metadata\n", path);
		return 1;
	}
	close(fd);
	snprintf(path, sizeof(path), "%s/%s", stage, NOPFS_STAGE_META_CHANGED_NAME);
	fd = open(path, O_RDWR);
	changed = fd < 0 ? MAP_FAILED
	                 : mmap(NULL, view.header->dir_count, PROT_READ | PROT_WRITE, MAP_SHARED,
	                        fd, 0);
	if (changed == MAP_FAILED) {
		perror(path);
		return 1;
	}
	close(fd);
	n = nopfs_meta_check_dirs(&view, changed, newly, 64);
	for (uint32_t i = 0; i < n && i < 64; i++)
		printf("changed %s\n", nopfs_meta_name(&view, view.dirs[newly[i]].realpath));
	munmap(changed, view.header->dir_count);
	free(buffer);
	return 0;
}

int main(int argc, char **argv)
{
	size_t budget = (size_t)1 << 30;
	struct nopfs_meta_view view;
	char path[4096];
	const char *why;
	size_t length;
	void *buffer;
	int fd;

	bool listing = false;

	if (argc == 3 && !strcmp(argv[1], "--check"))
		return check(argv[2]);
	if (argc > 1 && !strcmp(argv[1], "--listing")) {
		listing = true;
		argv++;
		argc--;
	}
	if (argc < 3 || argc > 4) {
		fprintf(stderr,
		        "usage: meta_build [--listing] ROOT STAGE [BUDGET] | --check STAGE\n");
		return 2;
	}
	if (argc == 4)
		budget = strtoull(argv[3], NULL, 10);
	if ((listing ? nopfs_meta_scan_listing : nopfs_meta_scan)(argv[1], budget, &buffer,
	                                                          &length) != NOPFS_OK)
		return 1;
	if (nopfs_meta_view_init(&view, buffer, length, &why) != NOPFS_OK) {
		fprintf(stderr, "meta_build: the buffer made %s\n", why);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/%s", argv[2], NOPFS_STAGE_META_CHANGED_NAME);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
	if (fd < 0 || ftruncate(fd, view.header->dir_count) != 0) {
		perror(path);
		return 1;
	}
	close(fd);
	snprintf(path, sizeof(path), "%s/%s", argv[2], NOPFS_STAGE_META_NAME);
	if (nopfs_atomic_write(path, 0600, buffer, length) != NOPFS_OK) {
		perror(path);
		return 1;
	}
	printf("%u directories, %u entries, %u unlisted, %zu bytes\n", view.header->dir_count,
	       view.header->entry_count, view.header->unlisted, length);
	free(buffer);
	return 0;
}
