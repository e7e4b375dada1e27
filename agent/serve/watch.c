/* inotify on the stage directory. */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "common/log.h"
#include "watch.h"

/* How long opens are collected before they are handled, while they keep coming. */
#define WATCH_BATCH_MS 2

static void handle_events(struct watch *watch, const char *buffer, ssize_t length)
{
	const char *at = buffer;

	while (at < buffer + length) {
		const struct inotify_event *event = (const struct inotify_event *)at;

		if (event->mask & IN_Q_OVERFLOW) {
			atomic_fetch_add(&watch->stage->stats->watch_overflows, 1);
			nopfs_warning("stage watch: the kernel dropped open events; "
			              "some staged copies will be counted as unused");
		} else if ((event->mask & IN_OPEN) && event->len > 0 && event->name[0] != '.') {
			stage_opened(watch->stage, event->name);
		}
		at += sizeof(*event) + event->len;
	}
}

/* Read and handle every queued event; false when there was none. */
static bool drain(struct watch *watch, char *buffer, size_t size, bool *failed)
{
	uint64_t mark = stage_watch_begin(watch->stage);
	bool any = false;

	for (;;) {
		ssize_t length = read(watch->inotify_fd, buffer, size);

		if (length < 0 && errno == EINTR)
			continue;
		if (length < 0 && errno == EAGAIN) {
			stage_watch_settled(watch->stage, mark);
			return any;
		}
		if (length <= 0) {
			nopfs_error("stage watch: read: %m");
			*failed = true;
			return any;
		}
		handle_events(watch, buffer, length);
		any = true;
	}
}

/*
 * Wait for the first open while idle; while opens keep coming, handle them
 * in batches every WATCH_BATCH_MS without waiting on the inotify descriptor.
 * A waiter there would be woken by every task's open(), a cross-CPU wake-up
 * that costs the task more than the open itself; a batch also lets tasks
 * close their copies before the agent removes the names, so that freeing the
 * memory is the agent's work, not the task's.
 */
static void *watch_main(void *arg)
{
	struct watch *watch = arg;
	char buffer[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct pollfd idle[2] = { { .fd = watch->inotify_fd, .events = POLLIN },
		                  { .fd = watch->stop_fd, .events = POLLIN } };
	struct pollfd busy = { .fd = watch->stop_fd, .events = POLLIN };
	bool failed = false;

	while (!failed) {
		if (poll(idle, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			nopfs_error("stage watch: poll: %m");
			break;
		}
		if (idle[1].revents)
			break;
		while (drain(watch, buffer, sizeof(buffer), &failed) && !failed) {
			if (poll(&busy, 1, WATCH_BATCH_MS) > 0)
				break; /* stopping */
		}
		if (busy.revents)
			break;
	}
	/* Stopping: the opens still queued are deliveries, count them. */
	if (!failed)
		drain(watch, buffer, sizeof(buffer), &failed);
	return NULL;
}

nopfs_status watch_start(struct watch *watch, struct stage *stage, const char *directory)
{
	memset(watch, 0, sizeof(*watch));
	watch->stage = stage;
	watch->stop_fd = -1;
	watch->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (watch->inotify_fd < 0) {
		nopfs_error("stage watch: inotify: %m");
		return NOPFS_ERR_UNSUPPORTED;
	}
	if (inotify_add_watch(watch->inotify_fd, directory, IN_OPEN | IN_ONLYDIR) < 0) {
		nopfs_error("stage watch: cannot watch '%s': %m", directory);
		goto out_close;
	}
	watch->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (watch->stop_fd < 0) {
		nopfs_error("stage watch: eventfd: %m");
		goto out_close;
	}
	if (pthread_create(&watch->thread, NULL, watch_main, watch) != 0) {
		nopfs_error("stage watch: cannot start its thread");
		goto out_close;
	}
	watch->started = true;
	return NOPFS_OK;

out_close:
	if (watch->stop_fd >= 0)
		close(watch->stop_fd);
	close(watch->inotify_fd);
	watch->inotify_fd = watch->stop_fd = -1;
	return NOPFS_ERR_IO;
}

void watch_stop(struct watch *watch)
{
	uint64_t one = 1;

	if (!watch->started)
		return;
	if (write(watch->stop_fd, &one, sizeof(one)) != sizeof(one))
		nopfs_warning("stage watch: cannot signal its thread: %m");
	pthread_join(watch->thread, NULL);
	close(watch->stop_fd);
	close(watch->inotify_fd);
	watch->started = false;
}
