/*
 * Closing the SSD scratch files off the clock. They are unlinked already, so
 * once closed nothing of them is left; the close itself frees their blocks,
 * which takes tens of milliseconds on a quiet disk mounted with online
 * discard, and seconds on a busy one. A thread closes them while RAM and the
 * PFS are measured; probe_run() waits for it until its budget is spent and
 * then lets it finish on its own rather than overrun.
 */
#include "config.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "probe_internal.h"
#include "common/log.h"
#include "common/clock.h"

/* What the thread works on; freed by the last of it and probe_run(). */
struct probe_closing {
	int fds[2 * NOPFS_TIERS_MAX]; /* owned */
	unsigned int count;
	atomic_bool released; /* set by the first to let go of this */
};

void probe_closer_add(struct probe_closer *closer, int fd)
{
	if (fd < 0)
		return;
	if (closer->count == sizeof(closer->fds) / sizeof(closer->fds[0]))
		close(fd);
	else
		closer->fds[closer->count++] = fd;
}

static void close_all(int *fds, unsigned int *count)
{
	for (unsigned int i = 0; i < *count; i++)
		close(fds[i]);
	*count = 0;
}

static void *closing_work(void *arg)
{
	struct probe_closing *closing = arg;

	close_all(closing->fds, &closing->count);
	if (atomic_exchange(&closing->released, true))
		free(closing); /* probe_run() stopped waiting */
	return NULL;
}

void probe_closer_start(struct probe_closer *closer)
{
	struct probe_closing *closing;

	if (closer->count == 0 || closer->closing)
		return;
	closing = malloc(sizeof(*closing));
	if (closing) {
		for (unsigned int i = 0; i < closer->count; i++)
			closing->fds[i] = closer->fds[i];
		closing->count = closer->count;
		atomic_init(&closing->released, false);
		if (pthread_create(&closer->thread, NULL, closing_work, closing) == 0) {
			closer->closing = closing;
			closer->count = 0;
			return;
		}
		free(closing);
	}
	close_all(closer->fds, &closer->count);
}

void probe_closer_finish(struct probe_closer *closer, double deadline)
{
	struct probe_closing *closing = closer->closing;
	struct timespec at;

	close_all(closer->fds, &closer->count);
	if (!closing)
		return;
	closer->closing = NULL;
	at = nopfs_clock_wall_deadline_after(deadline - nopfs_clock_seconds());
	if (pthread_timedjoin_np(closer->thread, NULL, &at) == 0) {
		free(closing);
		return;
	}
	nopfs_info("probe: freeing the SSD scratch space goes on in the background");
	pthread_detach(closer->thread);
	if (atomic_exchange(&closing->released, true))
		free(closing); /* the thread ended meanwhile */
}
