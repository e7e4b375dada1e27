/*
 * A process-wide "stop" flag: the agent's stop-signal handler sets it, and
 * long loops of the libraries (a dataset's scan) look at it and give up with
 * NOPFS_ERR_CANCELED, so that every phase ends soon after SIGTERM.
 */
#ifndef NOPFS_CANCEL_H
#define NOPFS_CANCEL_H

#include <signal.h>
#include <stdbool.h>

/* The stop signal received, or 0. Set from a signal handler: nothing else. */
extern volatile sig_atomic_t nopfs_stop_signal;

static inline bool nopfs_stop_requested(void)
{
	return nopfs_stop_signal != 0;
}

/*
 * Whether a stop signal came, or waits, blocked, for the thread that takes
 * it: for waits on a thread that has them blocked.
 */
static inline bool nopfs_stop_pending(void)
{
	sigset_t pending;

	return nopfs_stop_requested() ||
	       (sigpending(&pending) == 0 &&
	        (sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1 ||
	         sigismember(&pending, SIGHUP) == 1));
}

#endif
