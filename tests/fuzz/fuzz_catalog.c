/*
 * The catalog as node 0 sends it to the other agents (CATALOG notice):
 * nopfs_catalog_deserialize(). Built for fuzzing, the checksum is not
 * compared (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION), so what lies behind
 * it is reached. A catalog that loads must answer every question about each
 * of its samples within bounds, and serialize again.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "common/log.h"
#include "fuzz.h"

static void quiet(nopfs_log_level level, const char *message, void *arg)
{
	(void)level;
	(void)message;
	(void)arg;
}

static void walk(const struct nopfs_catalog *catalog)
{
	uint64_t count = nopfs_catalog_count(catalog), total = 0;
	uint32_t classes = nopfs_catalog_class_count(catalog);
	char path[PATH_MAX];
	void *buffer = NULL;
	size_t length = 0;

	for (uint64_t i = 0; i < count && i < 4096; i++) {
		int64_t label = nopfs_catalog_label(catalog, i);

		total += nopfs_catalog_size(catalog, i);
		if (label >= 0 && (uint64_t)label >= classes && classes > 0)
			abort();
		if (nopfs_catalog_path(catalog, i, path, sizeof(path)) == NOPFS_OK &&
		    strlen(path) >= sizeof(path))
			abort();
	}
	for (uint32_t c = 0; c < classes && c < 4096; c++)
		if (!nopfs_catalog_class_name(catalog, c))
			abort();
	if (count <= 4096 && total != nopfs_catalog_total_bytes(catalog))
		abort();
	if (nopfs_catalog_serialize(catalog, &buffer, &length) == NOPFS_OK)
		free(buffer);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nopfs_catalog *catalog = NULL;

	nopfs_log_set_sink(quiet, NULL, NOPFS_LOG_ERROR);
	if (nopfs_catalog_deserialize(data, size, &catalog) == NOPFS_OK) {
		walk(catalog);
		nopfs_catalog_destroy(catalog);
	}
	return 0;
}
