/*
 * nopfs logging: library code reports through a sink the program installs.
 *
 * The SPANK plugin routes messages to slurm_error()/slurm_info(), the agent
 * to its log file, command-line tools to stderr (the default sink). Errors are
 * logged once, where they are first detected, with the culprit (path, key,
 * value, node) in the message.
 */
#ifndef NOPFS_LOG_H
#define NOPFS_LOG_H

#include <stdarg.h>
#include <stdbool.h>

typedef enum nopfs_log_level {
	NOPFS_LOG_ERROR = 0,
	NOPFS_LOG_WARNING = 1,
	NOPFS_LOG_INFO = 2,
	NOPFS_LOG_DEBUG = 3,
} nopfs_log_level;

/*
 * A sink receives one complete message (no trailing newline) per call. It may
 * be called from any thread, concurrently; it must not call nopfs_log().
 */
typedef void (*nopfs_log_sink)(nopfs_log_level level, const char *message, void *arg);

/*
 * Install @sink (NULL restores the default, which writes "nopfs: MESSAGE" to
 * stderr) and drop messages above @max_level. @arg is passed to the sink.
 */
void nopfs_log_set_sink(nopfs_log_sink sink, void *arg, nopfs_log_level max_level);

/* The level above which messages are dropped. */
nopfs_log_level nopfs_log_get_level(void);

/* Format a message and hand it to the sink (long messages are truncated). */
void nopfs_log(nopfs_log_level level, const char *format, ...)
        __attribute__((format(printf, 2, 3)));
void nopfs_logv(nopfs_log_level level, const char *format, va_list args)
        __attribute__((format(printf, 2, 0)));

/*
 * Hold the calling thread's messages back from the sink, keeping the first
 * error, until nopfs_log_release(): for a caller that words a failure its own
 * way or reports it later (the plugin's plugstack.conf check). Other threads
 * and the installed sink are not affected.
 */
void nopfs_log_hold(void);

/*
 * End the hold; the first error held ("" if none), valid in this thread until
 * its next nopfs_log_hold().
 */
const char *nopfs_log_release(void);

#define nopfs_error(...)   nopfs_log(NOPFS_LOG_ERROR, __VA_ARGS__)
#define nopfs_warning(...) nopfs_log(NOPFS_LOG_WARNING, __VA_ARGS__)
#define nopfs_info(...)    nopfs_log(NOPFS_LOG_INFO, __VA_ARGS__)
#define nopfs_debug(...)   nopfs_log(NOPFS_LOG_DEBUG, __VA_ARGS__)

#endif
