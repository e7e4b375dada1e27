/*
 * Watching the stage directory: the kernel tells the agent (inotify IN_OPEN)
 * when a task opens a staged copy, so the fast path costs the task nothing
 * but its own open().
 */
#ifndef NOPFS_AGENT_WATCH_H
#define NOPFS_AGENT_WATCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "stage/stage.h"

struct watch {
	struct stage *stage;
	int inotify_fd;
	int stop_fd; /* eventfd */
	pthread_t thread;
	bool started;
};

/* Watch @directory and report opens to @stage, from a thread of its own. */
nopfs_status watch_start(struct watch *watch, struct stage *stage, const char *directory);

/* Stop and join the thread; close everything. */
void watch_stop(struct watch *watch);

#endif
