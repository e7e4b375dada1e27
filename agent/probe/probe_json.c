/* The probe result as JSON (probe.h documents the keys) and back. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "probe_internal.h"

static json_t *curve_to_json(const struct nopfs_curve *curve)
{
	json_t *array = json_array();

	for (unsigned int i = 0; array && i < curve->points; i++) {
		json_t *point = json_pack("{s:I, s:f}", "threads", (json_int_t)curve->x[i],
		                          "bytes_per_second", curve->y[i]);

		if (json_array_append_new(array, point) != 0) {
			json_decref(array);
			return NULL;
		}
	}
	return array;
}

static json_t *ssd_to_json(const struct probe_ssd *ssd)
{
	return json_pack("{s:s, s:s, s:I, s:i, s:o, s:o}", "path", ssd->path, "io_mode",
	                 ssd->direct ? "direct" : "buffered", "scratch_bytes",
	                 (json_int_t)ssd->scratch_bytes, "threads", (int)ssd->threads, "read",
	                 curve_to_json(&ssd->read), "write", curve_to_json(&ssd->write));
}

json_t *probe_to_json(const struct probe_result *result)
{
	json_t *ssds = json_array();

	for (unsigned int k = 0; ssds && k < result->ssd_count; k++) {
		if (json_array_append_new(ssds, ssd_to_json(&result->ssd[k])) != 0) {
			json_decref(ssds);
			return NULL;
		}
	}
	/* json_pack takes the "o" references, also when it fails. */
	return json_pack("{s:s, s:b, s:f, s:I, s:I, s:{s:i, s:o}, s:o, s:{s:i, s:o}}", "host",
	                 result->host, "from_cache", result->from_cache, "seconds", result->seconds,
	                 "pfs_bytes_read", (json_int_t)result->pfs_bytes_read, "io_size",
	                 (json_int_t)result->io_size, "ram", "threads", (int)result->ram_threads,
	                 "copy", curve_to_json(&result->ram_copy), "ssd", ssds, "pfs", "threads",
	                 (int)result->pfs_threads, "read", curve_to_json(&result->pfs_read));
}

/* A thread count read back: 0 (when @zero_ok) or 1..@max. */
static bool threads_valid(json_int_t threads, unsigned int max, bool zero_ok)
{
	return (zero_ok && threads == 0) || (threads >= 1 && threads <= (json_int_t)max);
}

static bool curve_from_json(const json_t *array, unsigned int max_threads,
                            struct nopfs_curve *curve, const char *what, char *why, size_t length)
{
	struct nopfs_curve parsed = { 0 };
	size_t i;

	if (!json_is_array(array) || json_array_size(array) > NOPFS_CURVE_POINTS) {
		snprintf(why, length, "%s: not an array of at most %d points", what,
		         NOPFS_CURVE_POINTS);
		return false;
	}
	for (i = 0; i < json_array_size(array); i++) {
		json_int_t threads;
		double rate;

		if (json_unpack((json_t *)json_array_get(array, i), "{s:I, s:F}", "threads",
		                &threads, "bytes_per_second", &rate) != 0 ||
		    !threads_valid(threads, max_threads, false) || !isfinite(rate) || rate < 0 ||
		    (i > 0 && (double)threads <= parsed.x[i - 1])) {
			snprintf(why, length, "%s: point %zu is malformed or out of order", what,
			         i);
			return false;
		}
		parsed.x[i] = (double)threads;
		parsed.y[i] = rate;
		parsed.points++;
	}
	*curve = parsed;
	return true;
}

static bool ssd_from_json(const json_t *object, unsigned int max_threads, struct probe_ssd *ssd,
                          char *why, size_t length)
{
	const char *path, *mode;
	json_t *read, *write;
	json_int_t scratch;
	json_error_t error;
	int threads;

	if (json_unpack_ex((json_t *)object, &error, 0, "{s:s, s:s, s:I, s:i, s:o, s:o}", "path",
	                   &path, "io_mode", &mode, "scratch_bytes", &scratch, "threads", &threads,
	                   "read", &read, "write", &write) != 0) {
		snprintf(why, length, "ssd: %s", error.text);
		return false;
	}
	if (strlen(path) >= sizeof(ssd->path) || scratch <= 0 ||
	    !threads_valid(threads, max_threads, false) ||
	    (strcmp(mode, "direct") != 0 && strcmp(mode, "buffered") != 0)) {
		snprintf(why, length, "ssd '%s': a value is out of range", path);
		return false;
	}
	if (!curve_from_json(read, max_threads, &ssd->read, "ssd read", why, length) ||
	    !curve_from_json(write, max_threads, &ssd->write, "ssd write", why, length))
		return false;
	if (ssd->read.points == 0 || ssd->write.points == 0) {
		snprintf(why, length, "ssd '%s': a curve is empty", path);
		return false;
	}
	strcpy(ssd->path, path);
	ssd->direct = strcmp(mode, "direct") == 0;
	ssd->scratch_bytes = (uint64_t)scratch;
	ssd->threads = (unsigned int)threads;
	return true;
}

bool probe_from_json(const json_t *object, unsigned int max_threads, struct probe_result *result,
                     char *why, size_t why_length)
{
	int ram_threads, pfs_threads;
	json_t *ram, *ssds, *pfs;
	struct probe_result parsed;
	json_int_t io_size;
	json_error_t error;
	size_t k;

	memset(&parsed, 0, sizeof(parsed));
	if (json_unpack_ex((json_t *)object, &error, 0, "{s:I, s:{s:i, s:o}, s:o, s:{s:i, s:o}}",
	                   "io_size", &io_size, "ram", "threads", &ram_threads, "copy", &ram, "ssd",
	                   &ssds, "pfs", "threads", &pfs_threads, "read", &pfs) != 0) {
		snprintf(why, why_length, "%s", error.text);
		return false;
	}
	if (io_size <= 0 || !threads_valid(ram_threads, max_threads, false) ||
	    !threads_valid(pfs_threads, max_threads, true) || !json_is_array(ssds) ||
	    json_array_size(ssds) > NOPFS_TIERS_MAX) {
		snprintf(why, why_length, "a value is out of range");
		return false;
	}
	if (!curve_from_json(ram, max_threads, &parsed.ram_copy, "ram", why, why_length) ||
	    !curve_from_json(pfs, max_threads, &parsed.pfs_read, "pfs", why, why_length))
		return false;
	for (k = 0; k < json_array_size(ssds); k++)
		if (!ssd_from_json(json_array_get(ssds, k), max_threads, &parsed.ssd[k], why,
		                   why_length))
			return false;
	if (parsed.ram_copy.points == 0 || (parsed.pfs_read.points == 0) != (pfs_threads == 0)) {
		snprintf(why, why_length, "a curve is missing");
		return false;
	}
	parsed.io_size = (uint64_t)io_size;
	parsed.ram_threads = (unsigned int)ram_threads;
	parsed.ssd_count = (unsigned int)k;
	parsed.pfs_threads = (unsigned int)pfs_threads;
	result->ram_copy = parsed.ram_copy;
	result->ram_threads = parsed.ram_threads;
	result->io_size = parsed.io_size;
	result->ssd_count = parsed.ssd_count;
	memcpy(result->ssd, parsed.ssd, sizeof(result->ssd));
	result->pfs_read = parsed.pfs_read;
	result->pfs_threads = parsed.pfs_threads;
	return true;
}
