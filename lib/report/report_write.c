/*
 * Reading and writing a report whole: one write of the text made in memory,
 * one read of the file into memory (jansson's fd functions make a system
 * call per token or per byte, each a round trip on a parallel file system).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/fdio.h"
#include "common/readall.h"
#include "report_internal.h"

static int dump_report(int fd, void *report)
{
	char *text = json_dumps(report, JSON_INDENT(2));
	size_t length;
	nopfs_status status;

	if (!text) {
		errno = ENOMEM;
		return -1;
	}
	length = strlen(text);
	text[length] = '\n'; /* the final newline, in its NUL's place: one write */
	status = nopfs_write_all(fd, text, length + 1);
	free(text);
	return status == NOPFS_OK ? 0 : -1;
}

json_t *nopfs_report_load_fd(int fd, size_t max, json_error_t *error)
{
	void *text;
	size_t length;
	json_t *report;

	if (nopfs_read_all(fd, max, &text, &length) != NOPFS_OK) {
		snprintf(error->text, sizeof(error->text), "%s",
		         errno == ERANGE || errno == EFBIG ? "too large" : strerror(errno));
		error->line = 0;
		return NULL;
	}
	report = json_loadb(text, length, 0, error);
	free(text);
	return report;
}

nopfs_status nopfs_report_write(const json_t *report, const char *path, mode_t mode,
                                const char *what)
{
	nopfs_status status = nopfs_atomic_write_with(path, mode, dump_report, (void *)report);

	if (status != NOPFS_OK)
		report_fail(what, "cannot create '%s': %m", path);
	return status;
}
