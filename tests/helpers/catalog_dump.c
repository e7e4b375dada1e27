/*
 * Test helper: print a dataset's catalog, one sample per line as
 * "index<TAB>label<TAB>size<TAB>relative path", for comparison with
 * torchvision in check_catalog_torch.sh.
 *
 * usage: catalog_dump [-l LIST_FILE] [-e EXTENSIONS] [-c CACHE_DIR] ROOT
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "catalog/catalog.h"

static int usage(void)
{
	fprintf(stderr, "usage: catalog_dump [-l LIST_FILE] [-e EXTENSIONS] [-c CACHE_DIR] ROOT\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct nopfs_catalog_options options = { .format = NOPFS_INDEX_IMAGEFOLDER };
	struct nopfs_catalog *catalog;
	char path[8192];
	uint64_t index;
	bool used_cache = false;
	int option;

	while ((option = getopt(argc, argv, "l:e:c:")) != -1) {
		switch (option) {
		case 'l':
			options.format = NOPFS_INDEX_LIST;
			options.list_path = optarg;
			break;
		case 'e':
			options.extensions = optarg;
			break;
		case 'c':
			options.cache_dir = optarg;
			break;
		default:
			return usage();
		}
	}
	if (optind != argc - 1)
		return usage();
	options.root = argv[optind];
	if (nopfs_catalog_open(&options, &catalog, &used_cache) != NOPFS_OK)
		return 1;
	if (options.cache_dir)
		fprintf(stderr, "used_cache=%d\n", used_cache);
	for (index = 0; index < nopfs_catalog_count(catalog); index++) {
		if (nopfs_catalog_path(catalog, index, path, sizeof(path)) != NOPFS_OK) {
			nopfs_catalog_destroy(catalog);
			return 1;
		}
		printf("%" PRIu64 "\t%" PRId64 "\t%" PRIu64 "\t%s\n", index,
		       nopfs_catalog_label(catalog, index), nopfs_catalog_size(catalog, index),
		       path);
	}
	nopfs_catalog_destroy(catalog);
	return fflush(stdout) == 0 ? 0 : 1;
}
