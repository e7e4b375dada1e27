/* Writing a report atomically: a temporary file beside it, then rename. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report_internal.h"

int nopfs_report_write(const json_t *report, const char *path, mode_t mode,
                       struct nopfs_report_error *error)
{
	char temporary[PATH_MAX];
	int fd, saved;

	if (snprintf(temporary, sizeof(temporary), "%s.%ld.tmp", path, (long)getpid()) >=
	    (int)sizeof(temporary)) {
		report_fail(error, NOPFS_REPORT_NO_INPUT, "'%s': path too long", path);
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0) {
		saved = errno;
		report_fail(error, NOPFS_REPORT_NO_INPUT, "cannot create '%s': %s", temporary,
		            strerror(saved));
		errno = saved;
		return -1;
	}
	errno = EIO;
	if (fchmod(fd, mode) != 0 || json_dumpfd(report, fd, JSON_INDENT(2)) != 0 ||
	    write(fd, "\n", 1) != 1 || fsync(fd) != 0)
		goto out_unlink;
	if (close(fd) != 0) {
		fd = -1;
		goto out_unlink;
	}
	if (rename(temporary, path) != 0) {
		saved = errno;
		report_fail(error, NOPFS_REPORT_NO_INPUT, "cannot rename '%s' to '%s': %s",
		            temporary, path, strerror(saved));
		unlink(temporary);
		errno = saved;
		return -1;
	}
	return 0;

out_unlink:
	saved = errno;
	report_fail(error, NOPFS_REPORT_NO_INPUT, "cannot write '%s': %s", temporary,
	            strerror(saved));
	if (fd >= 0)
		close(fd);
	unlink(temporary);
	errno = saved;
	return -1;
}
