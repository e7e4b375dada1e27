/*
 * nopfs status codes: one error type for the whole project.
 *
 * Zero is success, every error is negative. Errors are translated from errno,
 * PMIx, UCS or SPANK codes once, where they are detected, and logged there
 * (see log.h); callers above only pass the status on.
 */
#ifndef NOPFS_STATUS_H
#define NOPFS_STATUS_H

typedef enum nopfs_status {
	NOPFS_OK = 0,
	NOPFS_ERR_NOMEM = -1,        /* out of memory */
	NOPFS_ERR_INVALID = -2,      /* invalid argument or value */
	NOPFS_ERR_IO = -3,           /* read, write or stat failed */
	NOPFS_ERR_NOT_FOUND = -4,    /* file, directory or entry does not exist */
	NOPFS_ERR_PERMISSION = -5,   /* access denied */
	NOPFS_ERR_FORMAT = -6,       /* malformed file, list or message */
	NOPFS_ERR_STALE = -7,        /* cached data no longer matches its source */
	NOPFS_ERR_EMPTY = -8,        /* nothing to work on (no samples, empty class) */
	NOPFS_ERR_DUPLICATE = -9,    /* the same entry given twice */
	NOPFS_ERR_RANGE = -10,       /* value out of the accepted range */
	NOPFS_ERR_TIMEOUT = -11,     /* a deadline passed */
	NOPFS_ERR_UNSUPPORTED = -12, /* not possible here */
	NOPFS_ERR_INTERNAL = -13,    /* broken invariant: a bug */
	NOPFS_ERR_AGAIN = -14,       /* not there yet: it will be */
	NOPFS_ERR_CANCELED = -15,    /* given up: the process was asked to stop */
} nopfs_status;

/* A static, human-readable description of a status; never NULL. */
const char *nopfs_status_string(nopfs_status status);

/* Map an errno value to the closest status (ENOENT -> NOT_FOUND, ...). */
nopfs_status nopfs_status_from_errno(int err);

#endif
