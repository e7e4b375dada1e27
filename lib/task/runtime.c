/*
 * Names in the staging directory, whether a path lies under the dataset
 * root, and the task's environment. Everything here is allocation-free and
 * makes no system call, so the interposer can use it from inside any open().
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "wire.h"

/* The longest file name Linux file systems accept. */
#define STAGE_NAME_MAX 255

bool nopfs_stage_name_for_path(uint32_t rank, const char *relative_path, char *name, size_t length)
{
	char head[16];
	size_t needed, at;

	if (!relative_path || !*relative_path || !name)
		return false;
	at = (size_t)snprintf(head, sizeof(head), "%c%" PRIu32 ".", NOPFS_STAGE_PATH_PREFIX, rank);
	needed = at;
	for (const char *c = relative_path; *c; c++)
		needed += (*c == '%' || *c == '/') ? 3 : 1;
	if (needed > STAGE_NAME_MAX || needed >= length)
		return false;
	memcpy(name, head, at);
	for (const char *c = relative_path; *c; c++) {
		if (*c == '%' || *c == '/') {
			name[at++] = '%';
			name[at++] = '2';
			name[at++] = *c == '%' ? '5' : 'F';
		} else {
			name[at++] = *c;
		}
	}
	name[at] = '\0';
	return true;
}

void nopfs_stage_name_for_index(uint32_t rank, uint64_t index, char *name, size_t length)
{
	if (length)
		snprintf(name, length, "%c%" PRIu32 ".%" PRIu64, NOPFS_STAGE_SAMPLE_PREFIX, rank,
		         index);
}

/* Parse the decimal digits of an "i" name, without sign, spaces or leading zeros. */
static bool parse_index(const char *digits, uint64_t *index)
{
	uint64_t value = 0;

	if (!*digits || (digits[0] == '0' && digits[1]))
		return false;
	for (const char *c = digits; *c; c++) {
		if (*c < '0' || *c > '9')
			return false;
		if (value > (UINT64_MAX - (uint64_t)(*c - '0')) / 10)
			return false;
		value = value * 10 + (uint64_t)(*c - '0');
	}
	*index = value;
	return true;
}

/* The character "%25" or "%2F" at @escape stands for, or 0 for any other. */
static char unescape(const char *escape)
{
	if (escape[0] != '%' || escape[1] != '2')
		return 0;
	if (escape[2] == '5')
		return '%';
	if (escape[2] == 'F')
		return '/';
	return 0;
}

/* Unescape a "p" name into @path; false when malformed or too long. */
static bool parse_path(const char *escaped, char *path, size_t length)
{
	size_t needed = 1;

	if (!*escaped)
		return false;
	for (const char *c = escaped; *c; c++) {
		if (*c == '%') {
			if (!unescape(c))
				return false;
			c += 2;
		}
		needed++;
	}
	if (!path || needed > length)
		return false;
	for (const char *c = escaped; *c; c++) {
		if (*c == '%') {
			*path++ = unescape(c);
			c += 2;
		} else {
			*path++ = *c;
		}
	}
	*path = '\0';
	return true;
}

char nopfs_stage_name_parse(const char *name, uint32_t *rank, uint64_t *index, char *path,
                            size_t length)
{
	char digits[16];
	const char *dot;
	uint64_t value;

	if (!name || (name[0] != NOPFS_STAGE_SAMPLE_PREFIX && name[0] != NOPFS_STAGE_PATH_PREFIX))
		return 0;
	dot = strchr(name + 1, '.');
	if (!dot || (size_t)(dot - name - 1) >= sizeof(digits))
		return 0;
	memcpy(digits, name + 1, (size_t)(dot - name - 1));
	digits[dot - name - 1] = '\0';
	if (!parse_index(digits, &value) || value > UINT32_MAX)
		return 0;
	if (name[0] == NOPFS_STAGE_SAMPLE_PREFIX) {
		uint64_t sample;

		if (!index || !parse_index(dot + 1, &sample))
			return 0;
		*index = sample;
	} else if (!parse_path(dot + 1, path, length)) {
		return 0;
	}
	if (rank)
		*rank = (uint32_t)value;
	return name[0];
}

/*
 * Normalize @path lexically into @out as "/c1/c2..." (an empty string for
 * the top): no empty or "." components, ".." removes the component before it
 * (at the top of an absolute path it is dropped; a relative path keeps
 * leading ".."). false when it does not fit.
 */
static bool normalize(const char *path, bool absolute, char *out, size_t length)
{
	size_t used = 0;
	const char *c = path;

	out[0] = '\0';
	while (*c) {
		const char *end;
		size_t n;

		while (*c == '/')
			c++;
		end = c;
		while (*end && *end != '/')
			end++;
		n = (size_t)(end - c);
		if (n == 0 || (n == 1 && c[0] == '.')) {
			/* nothing */
		} else if (n == 2 && c[0] == '.' && c[1] == '.') {
			char *last = strrchr(out, '/');

			if (last && strcmp(last, "/..") != 0) {
				*last = '\0';
				used = (size_t)(last - out);
			} else if (!absolute) {
				if (used + 3 >= length)
					return false;
				memcpy(out + used, "/..", 4);
				used += 3;
			}
		} else {
			if (used + 1 + n >= length)
				return false;
			out[used++] = '/';
			memcpy(out + used, c, n);
			used += n;
			out[used] = '\0';
		}
		c = end;
	}
	return true;
}

/* Whether @path ends in a way that names a directory ("/", "/.", "/.."). */
static bool names_directory(const char *path)
{
	const char *last = strrchr(path, '/');
	const char *tail = last ? last + 1 : path;

	return !*tail || !strcmp(tail, ".") || !strcmp(tail, "..");
}

/* Whether @path has a ".." component. */
static bool has_dotdot(const char *path)
{
	for (const char *c = path; (c = strstr(c, "..")); c += 2)
		if ((c == path || c[-1] == '/') && (c[2] == '\0' || c[2] == '/'))
			return true;
	return false;
}

/*
 * Whether a path with ".." may be resolved as text: only when it starts with
 * the root as given and has no ".." after it. The kernel resolves ".." after
 * a symbolic link from the link's target, so "root/link/../x" need not be
 * "root/x": such a path is left to the file system.
 */
static bool dotdot_only_in_root(const char *root, const char *path)
{
	size_t n = strlen(root);

	while (n > 1 && root[n - 1] == '/')
		n--;
	return strncmp(path, root, n) == 0 && (path[n] == '/' || root[n - 1] == '/') &&
	       !has_dotdot(path + n);
}

bool nopfs_path_under_root(const char *root, const char *path, char *relative, size_t length)
{
	char normal_root[PATH_MAX];
	char normal_path[PATH_MAX];
	size_t root_length;
	const char *rest;
	bool absolute;

	if (!root || !path || !*root || !*path)
		return false;
	absolute = path[0] == '/';
	if ((root[0] == '/') != absolute || names_directory(path) ||
	    (has_dotdot(path) && !dotdot_only_in_root(root, path)))
		return false;
	if (!normalize(root, absolute, normal_root, sizeof(normal_root)) ||
	    !normalize(path, absolute, normal_path, sizeof(normal_path)))
		return false;
	root_length = strlen(normal_root);
	if (strncmp(normal_path, normal_root, root_length) != 0 || normal_path[root_length] != '/')
		return false;
	rest = normal_path + root_length + 1;
	/* Under a relative root of "." a path may still climb out ("../x"). */
	if (!*rest || !strcmp(rest, "..") || !strncmp(rest, "../", 3) || strlen(rest) >= length)
		return false;
	memcpy(relative, rest, strlen(rest) + 1);
	return true;
}

/* Parse @text as a whole decimal number in @min..@max. */
static bool parse_number(const char *text, long min, long max, long *out)
{
	char *end;
	long value;

	if (!text || *text < '0' || *text > '9')
		return false;
	errno = 0;
	value = strtol(text, &end, 10);
	if (errno || *end || value < min || value > max)
		return false;
	*out = value;
	return true;
}

int32_t nopfs_env_rank(void)
{
	static const char *const names[] = { NOPFS_ENV_RANK, "RANK", "SLURM_PROCID" };
	int saved_errno = errno;
	int32_t rank = -1;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *text = getenv(names[i]);
		long value;

		if (!text)
			continue;
		if (parse_number(text, 0, INT32_MAX, &value))
			rank = (int32_t)value;
		break;
	}
	errno = saved_errno;
	return rank;
}

/* $@name as a number in @min..@max into *@value: 1, 0 when not valid, -1 when unset. */
static int env_number(const char *name, long min, long max, long *value)
{
	const char *text = getenv(name);
	int saved_errno = errno;
	bool valid = text && parse_number(text, min, max, value);

	errno = saved_errno;
	return valid ? 1 : text ? 0 : -1;
}

uint32_t nopfs_env_plan(void)
{
	long value;

	return env_number(NOPFS_ENV_PLAN, 0, (long)NOPFS_WIRE_NO_PLAN - 1, &value) == 1
	               ? (uint32_t)value
	               : NOPFS_WIRE_NO_PLAN;
}

int nopfs_env_timeout_ms(bool *invalid)
{
	long value;
	int found = env_number(NOPFS_ENV_TIMEOUT_MS, 1, 3600000, &value);

	if (invalid)
		*invalid = found == 0;
	return found == 1 ? (int)value : NOPFS_DEFAULT_TIMEOUT_MS;
}

int nopfs_env_meta_wait_ms(void)
{
	long value;

	return env_number(NOPFS_ENV_META_WAIT, 0, 3600, &value) == 1 ? (int)value * 1000 : 0;
}
