/* Keys of reports by dotted path, with errors that name the key and node. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "report_internal.h"

const char *const report_source_names[REPORT_SOURCES] = { "staging", "ram", "ssd", "peer", "pfs" };
const char *const kept_names[KEPT_COUNTS] = { "found",      "stale",   "read",
	                                      "mismatched", "written", "kept" };

void report_fail(const char *name, const char *format, ...)
{
	char text[512];
	va_list args;

	va_start(args, format);
	vsnprintf(text, sizeof(text), format, args);
	va_end(args);
	nopfs_error("%s%s%s", name ? name : "", name ? ": " : "", text);
}

const json_t *report_get(const json_t *object, const char *path)
{
	const char *cursor = path;
	char key[128];

	while (object && *cursor) {
		const char *dot = strchr(cursor, '.');
		size_t length = dot ? (size_t)(dot - cursor) : strlen(cursor);

		if (!json_is_object(object) || length >= sizeof(key))
			return NULL;
		memcpy(key, cursor, length);
		key[length] = '\0';
		object = json_object_get(object, key);
		cursor += length + (dot != NULL);
	}
	return object;
}

/* The value at @path, or NULL with "missing" reported. */
static const json_t *need(struct report_keys *keys, const char *path)
{
	const json_t *value;

	if (!keys->ok)
		return NULL;
	value = report_get(keys->report, path);
	if (!value || json_is_null(value)) {
		report_fail(keys->name, "%skey '%s' is missing", keys->who, path);
		keys->ok = false;
		return NULL;
	}
	return value;
}

static bool mistyped(struct report_keys *keys, const char *path, const char *what)
{
	report_fail(keys->name, "%skey '%s' is not %s", keys->who, path, what);
	keys->ok = false;
	return false;
}

bool report_uint(struct report_keys *keys, const char *path, uint64_t *out)
{
	const json_t *value = need(keys, path);

	if (!value)
		return false;
	if (!json_is_integer(value) || json_integer_value(value) < 0)
		return mistyped(keys, path, "a non-negative integer");
	*out = (uint64_t)json_integer_value(value);
	return true;
}

bool report_real(struct report_keys *keys, const char *path, double *out)
{
	const json_t *value = need(keys, path);

	if (!value)
		return false;
	if (!json_is_number(value) || !(json_number_value(value) >= 0))
		return mistyped(keys, path, "a non-negative number");
	*out = json_number_value(value);
	return true;
}

bool report_string(struct report_keys *keys, const char *path, const char **out)
{
	const json_t *value = need(keys, path);

	if (!value)
		return false;
	if (!json_is_string(value))
		return mistyped(keys, path, "a string");
	*out = json_string_value(value);
	return true;
}

bool report_object(struct report_keys *keys, const char *path, const json_t **out)
{
	const json_t *value = need(keys, path);

	if (!value)
		return false;
	if (!json_is_object(value))
		return mistyped(keys, path, "an object");
	*out = value;
	return true;
}

bool report_array(struct report_keys *keys, const char *path, const json_t **out)
{
	const json_t *value = need(keys, path);

	if (!value)
		return false;
	if (!json_is_array(value))
		return mistyped(keys, path, "an array");
	*out = value;
	return true;
}

/* An optional key: 1 when @path is there and not null, 0 when not, -1 after an error. */
static int optional(const struct report_keys *keys, const char *path)
{
	const json_t *value = report_get(keys->report, path);

	if (!keys->ok)
		return -1;
	return value && !json_is_null(value);
}

bool report_optional_string(struct report_keys *keys, const char *path, const char **out)
{
	int there = optional(keys, path);

	*out = NULL;
	return there > 0 ? report_string(keys, path, out) : there == 0;
}

bool report_optional_uint(struct report_keys *keys, const char *path, uint64_t *out)
{
	int there = optional(keys, path);

	*out = 0;
	return there > 0 ? report_uint(keys, path, out) : there == 0;
}
