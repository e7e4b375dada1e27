/*
 * The list format: a text file, one sample per line, index = line number.
 *
 * A line is "PATH" or "PATH<whitespace>LABEL", LABEL being the last
 * whitespace-separated field when it is a decimal integer (default 0).
 * Leading and trailing whitespace (a CR of CRLF too) is ignored. PATH is
 * relative to the root, or absolute inside it (the root as given or its real
 * path), after lexical normalization of ".", ".." and "//". Every entry must
 * name an existing, readable file; an empty line is an error.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog_internal.h"
#include "common/log.h"

struct list_scan {
	const char *list_path;
	const char *root;
	char *root_lexical; /* absolute, normalized */
	char *root_real;    /* realpath() of the root, or NULL */
	int root_fd;
	uint64_t line; /* 1-based, for messages */
	struct catalog_snapshot *snapshot;
	struct catalog_meta meta; /* stats from the dataset's metadata, when scanned */
	struct nopfs_catalog *catalog;
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == '\n';
}

/*
 * Normalize @path lexically into @out (strlen(@path) + 2 bytes): empty and
 * "." components go, ".." takes the previous one away ("/.." is "/").
 * False if a relative path climbs above its start.
 */
static bool normalize(const char *path, char *out)
{
	bool absolute = path[0] == '/';
	size_t base = absolute ? 1 : 0, n = base;
	const char *p = path;

	out[0] = '/';
	while (*p) {
		const char *end;
		size_t length;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		end = strchrnul(p, '/');
		length = (size_t)(end - p);
		if (length == 2 && p[0] == '.' && p[1] == '.') {
			if (n == base && !absolute)
				return false;
			while (n > base && out[n - 1] != '/')
				n--;
			if (n > base)
				n--;
		} else if (length != 1 || p[0] != '.') {
			if (n > base)
				out[n++] = '/';
			memcpy(out + n, p, length);
			n += length;
		}
		p = end;
	}
	out[n] = '\0';
	return true;
}

/* The part of absolute @path below @root, or NULL. */
static const char *below(const char *path, const char *root)
{
	size_t length;

	if (!root)
		return NULL;
	length = strlen(root);
	if (length == 1)
		return path + 1;
	if (strncmp(path, root, length) != 0)
		return NULL;
	if (path[length] == '\0')
		return path + length;
	return path[length] == '/' ? path + length + 1 : NULL;
}

/* Turn the PATH of a line into a normalized path relative to the root. */
static nopfs_status relative_path(struct list_scan *scan, const char *path, char **out)
{
	char *normal = malloc(strlen(path) + 2);
	const char *relative = NULL;
	char *copy;

	if (!normal)
		goto out_nomem;
	if (!normalize(path, normal))
		relative = NULL;
	else if (path[0] != '/')
		relative = normal;
	else if (!(relative = below(normal, scan->root_lexical)) && scan->root_real)
		relative = below(normal, scan->root_real);
	if (!relative) {
		nopfs_error("list file '%s' line %" PRIu64
		            ": '%s' is outside the dataset root '%s'",
		            scan->list_path, scan->line, path, scan->root);
		free(normal);
		return NOPFS_ERR_INVALID;
	}
	if (!relative[0]) {
		nopfs_error("list file '%s' line %" PRIu64 ": '%s' is the dataset root itself",
		            scan->list_path, scan->line, path);
		free(normal);
		return NOPFS_ERR_INVALID;
	}
	copy = strdup(relative);
	free(normal);
	if (!copy)
		goto out_nomem;
	*out = copy;
	return NOPFS_OK;

out_nomem:
	free(normal);
	nopfs_error("out of memory reading list file '%s'", scan->list_path);
	return NOPFS_ERR_NOMEM;
}

/* Whether @text is a decimal integer: an optional sign and digits. */
static bool is_integer(const char *text)
{
	if (*text == '+' || *text == '-')
		text++;
	if (!*text)
		return false;
	for (; *text; text++) {
		if (*text < '0' || *text > '9')
			return false;
	}
	return true;
}

/* Split the trimmed, non-empty @line in place into its path and label. */
static nopfs_status split_line(struct list_scan *scan, char *line, char **path, int64_t *label)
{
	char *field = line + strlen(line), *end;
	long long value = 0;

	while (field > line && !is_space(field[-1]))
		field--;
	if (field != line && is_integer(field)) {
		errno = 0;
		value = strtoll(field, &end, 10);
		if (errno == ERANGE) {
			nopfs_error("list file '%s' line %" PRIu64
			            ": label %s is outside the 64-bit range",
			            scan->list_path, scan->line, field);
			return NOPFS_ERR_RANGE;
		}
		end = field;
		while (end > line && is_space(end[-1]))
			end--;
		*end = '\0';
	}
	*path = line;
	*label = value;
	return NOPFS_OK;
}

/* Stat and check the sample at @relative (written as @path) and append it. */
static nopfs_status add_sample(struct list_scan *scan, const char *path, const char *relative,
                               int64_t label)
{
	struct catalog_stamp stamp;
	struct stat st;
	int err;

	if (nopfs_catalog_meta_stat(&scan->meta, scan->root_fd, "", relative, &st, 0) != 0) {
		err = errno;
		nopfs_error("list file '%s' line %" PRIu64 ": cannot stat '%s': %s",
		            scan->list_path, scan->line, path, strerror(err));
		return nopfs_status_from_errno(err);
	}
	if (S_ISDIR(st.st_mode)) {
		nopfs_error("list file '%s' line %" PRIu64 ": '%s' is a directory", scan->list_path,
		            scan->line, path);
		return NOPFS_ERR_INVALID;
	}
	if (nopfs_catalog_meta_access(&scan->meta, scan->root_fd, relative, &st) != 0) {
		err = errno;
		nopfs_error("list file '%s' line %" PRIu64 ": cannot read '%s': %s",
		            scan->list_path, scan->line, path, strerror(err));
		return nopfs_status_from_errno(err);
	}
	nopfs_catalog_stamp_from_stat(&st, &stamp);
	if (scan->snapshot)
		nopfs_catalog_snapshot_add_sample(scan->snapshot, &stamp);
	return nopfs_catalog_append(scan->catalog, relative, stamp.size, label);
}

static nopfs_status parse_line(struct list_scan *scan, char *line, size_t length)
{
	char *start = line, *end = line + length, *path, *relative;
	nopfs_status status;
	int64_t label;

	if (memchr(line, '\0', length)) {
		nopfs_error("list file '%s' line %" PRIu64 " contains a NUL byte", scan->list_path,
		            scan->line);
		return NOPFS_ERR_FORMAT;
	}
	while (start < end && is_space(*start))
		start++;
	while (end > start && is_space(end[-1]))
		end--;
	*end = '\0';
	if (start == end) {
		nopfs_error("list file '%s' line %" PRIu64 " is empty", scan->list_path,
		            scan->line);
		return NOPFS_ERR_FORMAT;
	}
	status = split_line(scan, start, &path, &label);
	if (status)
		return status;
	status = relative_path(scan, path, &relative);
	if (status)
		return status;
	status = add_sample(scan, path, relative, label);
	free(relative);
	return status;
}

static nopfs_status read_lines(struct list_scan *scan, FILE *file)
{
	nopfs_status status = NOPFS_OK;
	size_t capacity = 0;
	char *line = NULL;
	ssize_t length;

	errno = 0;
	while (!status && (length = getline(&line, &capacity, file)) >= 0) {
		scan->line++;
		status = parse_line(scan, line, (size_t)length);
		errno = 0;
	}
	free(line);
	if (!status && ferror(file)) {
		int err = errno ? errno : EIO;

		nopfs_error("cannot read list file '%s': %s", scan->list_path, strerror(err));
		status = nopfs_status_from_errno(err);
	}
	return status;
}

/* The root as an absolute, lexically normalized path, and its real path. */
static nopfs_status anchor_root(struct list_scan *scan)
{
	char cwd[PATH_MAX], *joined;
	size_t length;

	if (scan->root[0] == '/') {
		joined = strdup(scan->root);
	} else {
		if (!getcwd(cwd, sizeof(cwd))) {
			int err = errno;

			nopfs_error("cannot resolve dataset root '%s': working directory: %s",
			            scan->root, strerror(err));
			return nopfs_status_from_errno(err);
		}
		length = strlen(cwd) + strlen(scan->root) + 2;
		joined = malloc(length);
		if (joined)
			snprintf(joined, length, "%s/%s", cwd, scan->root);
	}
	if (!joined)
		goto out_nomem;
	scan->root_lexical = malloc(strlen(joined) + 2);
	if (!scan->root_lexical) {
		free(joined);
		goto out_nomem;
	}
	normalize(joined, scan->root_lexical);
	free(joined);
	scan->root_real = realpath(scan->root, NULL);
	return NOPFS_OK;

out_nomem:
	nopfs_error("out of memory resolving dataset root '%s'", scan->root);
	return NOPFS_ERR_NOMEM;
}

static nopfs_status open_list(struct list_scan *scan, FILE **out)
{
	struct stat st;
	FILE *file = NULL;
	int err;

	file = fopen(scan->list_path, "re");
	if (!file || fstat(fileno(file), &st) != 0) {
		err = errno;
		nopfs_error("cannot open list file '%s': %s", scan->list_path, strerror(err));
		if (file)
			fclose(file);
		return nopfs_status_from_errno(err);
	}
	if (S_ISDIR(st.st_mode)) {
		nopfs_error("list file '%s' is a directory", scan->list_path);
		fclose(file);
		return NOPFS_ERR_INVALID;
	}
	if (scan->snapshot)
		nopfs_catalog_snapshot_set_list(scan->snapshot, &st);
	*out = file;
	return NOPFS_OK;
}

static nopfs_status seal(struct list_scan *scan)
{
	uint64_t first, second;
	nopfs_status status;

	if (scan->catalog->count == 0) {
		nopfs_error("list file '%s' has no samples", scan->list_path);
		return NOPFS_ERR_EMPTY;
	}
	status = nopfs_catalog_seal(scan->catalog, &first, &second);
	if (status == NOPFS_ERR_DUPLICATE)
		nopfs_error("list file '%s': lines %" PRIu64 " and %" PRIu64 " both name '%s'",
		            scan->list_path, first + 1, second + 1,
		            nopfs_catalog_path_at(scan->catalog, first));
	return status;
}

nopfs_status nopfs_catalog_scan_list(const struct nopfs_catalog_options *options, int root_fd,
                                     struct catalog_snapshot *snapshot, struct nopfs_catalog **out)
{
	struct list_scan scan = {
		.list_path = options->list_path,
		.root = options->root,
		.root_fd = root_fd,
		.snapshot = snapshot,
	};
	nopfs_status status;
	FILE *file = NULL;

	status = nopfs_catalog_meta_init(&scan.meta, options->meta);
	if (status) {
		nopfs_error("out of memory reading list file '%s'", options->list_path);
		return status;
	}
	status = anchor_root(&scan);
	if (status)
		goto out_free_roots;
	status = open_list(&scan, &file);
	if (status)
		goto out_free_roots;
	status = nopfs_catalog_new(options->root, true, &scan.catalog);
	if (status)
		goto out_close_list;
	status = read_lines(&scan, file);
	if (!status)
		status = seal(&scan);
	if (status)
		nopfs_catalog_destroy(scan.catalog);
	else
		*out = scan.catalog;
out_close_list:
	fclose(file);
out_free_roots:
	nopfs_catalog_meta_fini(&scan.meta);
	free(scan.root_real);
	free(scan.root_lexical);
	return status;
}
