/* Writing a report atomically, with a final newline. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "report_internal.h"

static int dump_report(int fd, void *report)
{
	if (json_dumpfd(report, fd, JSON_INDENT(2)) != 0 || write(fd, "\n", 1) != 1) {
		errno = EIO;
		return -1;
	}
	return 0;
}

int nopfs_report_write(const json_t *report, const char *path, mode_t mode,
                       struct nopfs_report_error *error)
{
	int saved;

	if (nopfs_atomic_write_with(path, mode, dump_report, (void *)report) == NOPFS_OK)
		return 0;
	saved = errno;
	report_fail(error, NOPFS_REPORT_NO_INPUT, "cannot create '%s': %s", path, strerror(saved));
	errno = saved;
	return -1;
}
