/* Inside the report module: keys by dotted path, checked as they are read. */
#ifndef NOPFS_REPORT_INTERNAL_H
#define NOPFS_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "report.h"

#define REPORT_SOURCES  5 /* the agent's sources, in its order */
#define REPORT_MAX_NODE (1u << 20)

extern const char *const report_source_names[REPORT_SOURCES];

/*
 * A node's kept cache ("kept", agent --keep-dir), each a count of samples and
 * bytes: usable at the start, stale (their files changed), read from it,
 * damaged (another CRC32C), other tiers' samples written to it, kept at the end.
 */
#define KEPT_COUNTS 6
extern const char *const kept_names[KEPT_COUNTS];

/* Reading the keys of one report; the first failure is logged, once. */
struct report_keys {
	const json_t *report;
	const char *name; /* the culprit's name in messages, or NULL */
	const char *who;  /* "node 2: ", or "" */
	bool ok;
};

/* Log the formatted text as an error, prefixed "@name: " unless @name is NULL. */
void report_fail(const char *name, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* The value at @path ("pfs.bytes") in @object, or NULL. */
const json_t *report_get(const json_t *object, const char *path);

/* Required keys: false (and the error set, once) when missing or mistyped. */
bool report_uint(struct report_keys *keys, const char *path, uint64_t *out);
bool report_real(struct report_keys *keys, const char *path, double *out);
bool report_string(struct report_keys *keys, const char *path, const char **out);
bool report_object(struct report_keys *keys, const char *path, const json_t **out);
bool report_array(struct report_keys *keys, const char *path, const json_t **out);

/* An optional count: 0 when absent (or its parent is null), checked when there. */
bool report_optional_uint(struct report_keys *keys, const char *path, uint64_t *out);
/* The same for a string: NULL when absent or null. */
bool report_optional_string(struct report_keys *keys, const char *path, const char **out);

#endif
