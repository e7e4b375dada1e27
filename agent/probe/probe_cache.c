/*
 * The probe cache: cache_dir/probe-<hash>.json, the hash being FNV-1a 64
 * of the key in compact JSON with sorted members. The file holds
 *   { "version": 1, "timestamp": seconds since the epoch, "key": KEY,
 *     "result": probe_to_json() }
 * and is replaced atomically (a temporary file renamed over it). Anything
 * wrong with it costs a warning and a new measurement, never an error.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "probe_internal.h"
#include "common/atomic_file.h"
#include "common/dirs.h"
#include "common/log.h"
#include "common/clock.h"
#include "report/report.h"

#define CACHE_VERSION         1
#define PROBE_CACHE_MAX_BYTES (1u << 20) /* a few KB of measurements */
#define FNV_INIT              UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME             UINT64_C(0x100000001b3)

json_t *probe_cache_key(const struct probe_config *config, const char *host,
                        const struct probe_plan *plan)
{
	json_t *dirs = json_array();

	for (unsigned int i = 0; dirs && i < config->tiers->count; i++) {
		if (config->tiers->tier[i].kind != NOPFS_TIER_SSD)
			continue;
		if (json_array_append_new(dirs, json_string(config->tiers->tier[i].path)) != 0) {
			json_decref(dirs);
			return NULL;
		}
	}
	return json_pack("{s:s, s:o, s:s, s:I, s:i}", "host", host, "ssd_dirs", dirs,
	                 "dataset_root", config->dataset_root ? config->dataset_root : "",
	                 "io_size", (json_int_t)plan->io_size, "max_threads",
	                 (int)plan->max_threads);
}

/* The cache file for @key (caller frees), NULL when out of memory. */
static char *cache_path(const char *dir, const json_t *key)
{
	char *text = json_dumps(key, JSON_COMPACT | JSON_SORT_KEYS);
	uint64_t hash = FNV_INIT;
	size_t length;
	char *path;

	if (!text)
		return NULL;
	for (const char *c = text; *c; c++)
		hash = (hash ^ (uint8_t)*c) * FNV_PRIME;
	free(text);
	length = strlen(dir) + sizeof("/probe-0123456789abcdef.json");
	path = malloc(length);
	if (path)
		snprintf(path, length, "%s/probe-%016" PRIx64 ".json", dir, hash);
	return path;
}

/* The cache file parsed, or NULL (quietly when there is none). */
static json_t *cache_read(const char *path)
{
	json_error_t error;
	struct stat st;
	json_t *root;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			nopfs_debug("no probe cache '%s' yet", path);
		else
			nopfs_warning("cannot open probe cache '%s': %m; measuring again", path);
		return NULL;
	}
	if (fstat(fd, &st) != 0) {
		nopfs_warning("cannot stat probe cache '%s': %m; measuring again", path);
		goto out_close;
	}
	if (st.st_uid != geteuid()) {
		nopfs_warning("probe cache '%s' belongs to uid %u, not to us; measuring again",
		              path, (unsigned int)st.st_uid);
		goto out_close;
	}
	root = nopfs_report_load_fd(fd, PROBE_CACHE_MAX_BYTES, &error);
	if (!root)
		nopfs_warning("probe cache '%s' is corrupt (line %d: %s); measuring again", path,
		              error.line, error.text);
	close(fd);
	return root;

out_close:
	close(fd);
	return NULL;
}

/* Whether @loaded describes the same ssd tiers, in order, and operation size. */
static bool same_shape(const struct probe_result *loaded, const struct probe_result *expected,
                       const struct probe_plan *plan)
{
	if (loaded->ssd_count != expected->ssd_count || loaded->io_size != plan->io_size)
		return false;
	for (unsigned int k = 0; k < loaded->ssd_count; k++)
		if (strcmp(loaded->ssd[k].path, expected->ssd[k].path) != 0)
			return false;
	return true;
}

bool probe_cache_load(const char *dir, const json_t *key, double max_age,
                      const struct probe_plan *plan, struct probe_result *result)
{
	json_t *root, *stored_key, *stored;
	struct probe_result loaded = *result;
	char why[200] = "";
	bool used = false;
	double timestamp;
	char *path;
	int version;

	path = cache_path(dir, key);
	if (!path) {
		nopfs_warning("probe cache in '%s': out of memory; measuring again", dir);
		return false;
	}
	root = cache_read(path);
	if (!root)
		goto out_free_path;
	if (json_unpack(root, "{s:i, s:F, s:o, s:o}", "version", &version, "timestamp", &timestamp,
	                "key", &stored_key, "result", &stored) != 0 ||
	    version != CACHE_VERSION) {
		snprintf(why, sizeof(why), "not a version %d probe cache", CACHE_VERSION);
	} else if (!json_equal(stored_key, (json_t *)key)) {
		snprintf(why, sizeof(why), "made for another host, tier directories or dataset");
	} else if (!(nopfs_clock_wall_seconds() - timestamp >= 0 &&
	             nopfs_clock_wall_seconds() - timestamp < max_age)) {
		/* Too old, or from the future (a clock set back): quietly stale. */
		nopfs_info("probe cache '%s' is %.0f s old (at most %.0f s); measuring again", path,
		           nopfs_clock_wall_seconds() - timestamp, max_age);
	} else if (probe_from_json(stored, plan->max_threads, &loaded, why, sizeof(why))) {
		if (same_shape(&loaded, result, plan))
			used = true;
		else
			snprintf(why, sizeof(why), "its tiers do not match its key");
	}
	if (why[0])
		nopfs_warning("probe cache '%s' cannot be used (%s); measuring again", path, why);
	if (used) {
		loaded.from_cache = true;
		loaded.seconds = 0;
		loaded.pfs_bytes_read = 0;
		*result = loaded;
		nopfs_info("using probe cache '%s'", path);
	}
	json_decref(root);
out_free_path:
	free(path);
	return used;
}

/* Write @root to @path atomically; false with errno on failure. */
static bool write_atomically(const char *path, const json_t *root)
{
	char *text = json_dumps(root, JSON_INDENT(1) | JSON_SORT_KEYS);
	nopfs_status status;

	if (!text) {
		errno = ENOMEM;
		return false;
	}
	status = nopfs_atomic_write(path, 0600, text, strlen(text));
	free(text);
	return status == NOPFS_OK;
}

void probe_cache_store(const char *dir, const json_t *key, const struct probe_result *result)
{
	char *path;
	json_t *root;

	if (nopfs_dir_make(dir, 0700) != NOPFS_OK) {
		nopfs_warning("cannot create probe cache directory '%s': %m; not caching", dir);
		return;
	}
	path = cache_path(dir, key);
	root = json_pack("{s:i, s:f, s:O, s:o}", "version", CACHE_VERSION, "timestamp",
	                 nopfs_clock_wall_seconds(), "key", (json_t *)key, "result",
	                 probe_to_json(result));
	if (!path || !root) {
		nopfs_warning("probe cache in '%s': out of memory; not caching", dir);
		goto out_free;
	}
	if (!write_atomically(path, root))
		nopfs_warning("cannot write probe cache '%s': %m; not caching", path);
	else
		nopfs_debug("wrote probe cache '%s'", path);
out_free:
	json_decref(root);
	free(path);
}
