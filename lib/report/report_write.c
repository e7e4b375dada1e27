/* Writing a report atomically, with a final newline. */
#include <errno.h>
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

nopfs_status nopfs_report_write(const json_t *report, const char *path, mode_t mode,
                                const char *what)
{
	nopfs_status status = nopfs_atomic_write_with(path, mode, dump_report, (void *)report);

	if (status != NOPFS_OK)
		report_fail(what, "cannot create '%s': %m", path);
	return status;
}
