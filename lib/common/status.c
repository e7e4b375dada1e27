/* nopfs status codes and their descriptions. */
#include "config.h"

#include <errno.h>

#include "status.h"

const char *nopfs_status_string(nopfs_status status)
{
	switch (status) {
	case NOPFS_OK:
		return "success";
	case NOPFS_ERR_NOMEM:
		return "out of memory";
	case NOPFS_ERR_INVALID:
		return "invalid value";
	case NOPFS_ERR_IO:
		return "input/output error";
	case NOPFS_ERR_NOT_FOUND:
		return "not found";
	case NOPFS_ERR_PERMISSION:
		return "permission denied";
	case NOPFS_ERR_FORMAT:
		return "malformed data";
	case NOPFS_ERR_STALE:
		return "stale cached data";
	case NOPFS_ERR_EMPTY:
		return "nothing to work on";
	case NOPFS_ERR_DUPLICATE:
		return "duplicate entry";
	case NOPFS_ERR_RANGE:
		return "value out of range";
	case NOPFS_ERR_TIMEOUT:
		return "timed out";
	case NOPFS_ERR_UNSUPPORTED:
		return "not supported";
	case NOPFS_ERR_INTERNAL:
		return "internal error";
	case NOPFS_ERR_AGAIN:
		return "not there yet";
	case NOPFS_ERR_CANCELED:
		return "canceled (asked to stop)";
	}
	return "unknown status";
}

nopfs_status nopfs_status_from_errno(int err)
{
	switch (err) {
	case 0:
		return NOPFS_OK;
	case ENOMEM:
		return NOPFS_ERR_NOMEM;
	case ENOENT:
	case ENOTDIR:
		return NOPFS_ERR_NOT_FOUND;
	case EACCES:
	case EPERM:
		return NOPFS_ERR_PERMISSION;
	case EINVAL:
		return NOPFS_ERR_INVALID;
	case ERANGE:
	case EOVERFLOW:
	case ENAMETOOLONG:
		return NOPFS_ERR_RANGE;
	case ETIMEDOUT:
		return NOPFS_ERR_TIMEOUT;
	case ENOSYS:
	case EOPNOTSUPP:
		return NOPFS_ERR_UNSUPPORTED;
	default:
		return NOPFS_ERR_IO;
	}
}
