/* nopfs logging through a caller-installed sink. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "log.h"

#define LOG_MESSAGE_MAX 2048

static void log_to_stderr(nopfs_log_level level, const char *message, void *arg)
{
	static const char *const prefix[] = { "error: ", "warning: ", "", "debug: " };

	fprintf(stderr, "nopfs: %s%s\n", prefix[level], message);
}

/*
 * Set once at start-up by the program, before threads exist; read afterwards.
 */
static nopfs_log_sink log_sink = log_to_stderr;
static void *log_sink_arg;
static nopfs_log_level log_max_level = NOPFS_LOG_INFO;

/* Per thread: whether messages are held back, and the first error held. */
static __thread bool log_holding;
static __thread char log_held[LOG_MESSAGE_MAX];

void nopfs_log_set_sink(nopfs_log_sink sink, void *arg, nopfs_log_level max_level)
{
	log_sink = sink ? sink : log_to_stderr;
	log_sink_arg = sink ? arg : NULL;
	log_max_level = max_level;
}

nopfs_log_level nopfs_log_get_level(void)
{
	return log_max_level;
}

void nopfs_log_hold(void)
{
	log_holding = true;
	log_held[0] = '\0';
}

const char *nopfs_log_release(void)
{
	log_holding = false;
	return log_held;
}

void nopfs_logv(nopfs_log_level level, const char *format, va_list args)
{
	char message[LOG_MESSAGE_MAX];
	int saved_errno = errno;

	if (log_holding) {
		if (level == NOPFS_LOG_ERROR && log_held[0] == '\0')
			vsnprintf(log_held, sizeof(log_held), format, args);
		errno = saved_errno;
		return;
	}
	if (level > log_max_level)
		return;
	vsnprintf(message, sizeof(message), format, args);
	log_sink(level, message, log_sink_arg);
	errno = saved_errno;
}

void nopfs_log(nopfs_log_level level, const char *format, ...)
{
	va_list args;

	va_start(args, format);
	nopfs_logv(level, format, args);
	va_end(args);
}
