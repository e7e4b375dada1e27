/*
 * The dataset's metadata (catalog/meta.h) as an agent or a task finds it
 * beside the catalog or in the stage directory: nopfs_meta_view_init()
 * checks it, then paths are resolved in it as the interposer does. Built
 * for fuzzing, its checksum is not compared, so what it guards is reached.
 * Whatever the buffer says, a resolved entry is inside the view.
 */
#include <stdlib.h>
#include <string.h>

#include "catalog/meta.h"
#include "common/log.h"
#include "fuzz.h"

static const char *const paths[] = { "",         "a",      "a/b",          "a//b/",
	                             "./a/./b",  "a/../b", "class0/x.jpg", "l/l/l/l",
	                             "a/b/c/d/e" };

static void quiet(nopfs_log_level level, const char *message, void *arg)
{
	(void)level;
	(void)message;
	(void)arg;
}

static void resolve(const struct nopfs_meta_view *view, const char *path)
{
	uint32_t entry = 0, parent = 0;
	bool followed = false;
	int error = 0;

	for (int follow = 0; follow < 2; follow++) {
		enum nopfs_meta_found found =
		        nopfs_meta_resolve(view, path, follow, &entry, &parent, &followed, &error);

		if (found == NOPFS_META_ENTRY &&
		    (entry >= view->header->entry_count ||
		     (parent != NOPFS_META_NONE && parent >= view->header->dir_count)))
			abort();
		if (found == NOPFS_META_ENTRY)
			(void)nopfs_meta_stat_of(view, entry, follow)->error;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nopfs_meta_view view;
	const char *why = NULL;
	uint64_t *aligned;

	nopfs_log_set_sink(quiet, NULL, NOPFS_LOG_ERROR);
	aligned = malloc(size ? size : 1);
	if (!aligned)
		return 0;
	memcpy(aligned, data, size);
	if (nopfs_meta_view_init(&view, aligned, size, &why) == NOPFS_OK) {
		for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
			resolve(&view, paths[i]);
		/* the names of the first entries, as paths of their own */
		for (uint32_t e = 0; e < view.header->entry_count && e < 32; e++)
			resolve(&view, nopfs_meta_name(&view, view.entries[e].name));
	} else if (!why) {
		abort(); /* every refusal says why */
	}
	free(aligned);
	return 0;
}
