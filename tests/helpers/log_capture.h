/* Test helper: capture nopfs log messages to assert on what users would read. */
#ifndef NOPFS_TEST_LOG_CAPTURE_H
#define NOPFS_TEST_LOG_CAPTURE_H

#include <stdio.h>
#include <string.h>

#include "common/log.h"

static char log_capture_buffer[16384];

static void log_capture_sink(nopfs_log_level level, const char *message, void *arg)
{
	size_t used = strlen(log_capture_buffer);

	snprintf(log_capture_buffer + used, sizeof(log_capture_buffer) - used, "%s\n", message);
}

/* Start capturing (drops earlier messages). */
static inline void log_capture_start(void)
{
	log_capture_buffer[0] = '\0';
	nopfs_log_set_sink(log_capture_sink, NULL, NOPFS_LOG_DEBUG);
}

/* Whether a captured message contains @text. */
static inline int log_captured(const char *text)
{
	return strstr(log_capture_buffer, text) != NULL;
}

#endif
