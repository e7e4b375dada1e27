/*
 * A process-wide "stop" flag: the agent's stop-signal handler sets it, and
 * long loops of the libraries (a dataset's scan) look at it and give up with
 * NOPFS_ERR_CANCELED, so that every phase ends soon after SIGTERM.
 */
#ifndef NOPFS_CANCEL_H
#define NOPFS_CANCEL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/* The stop signal received, or 0. Set from a signal handler: nothing else. */
extern volatile sig_atomic_t nopfs_stop_signal;

static inline bool nopfs_stop_requested(void)
{
	return nopfs_stop_signal != 0;
}

/* The signals that stop the agent (drain and exit). */
static const int nopfs_stop_signals[] = { SIGTERM, SIGINT, SIGHUP };

/*
 * Whether a stop signal came, or waits, blocked, for the thread that takes
 * it: for waits on a thread that has them blocked.
 */
static inline bool nopfs_stop_pending(void)
{
	sigset_t pending;

	if (nopfs_stop_requested())
		return true;
	if (sigpending(&pending) != 0)
		return false;
	for (size_t i = 0; i < sizeof(nopfs_stop_signals) / sizeof(nopfs_stop_signals[0]); i++)
		if (sigismember(&pending, nopfs_stop_signals[i]) == 1)
			return true;
	return false;
}

#endif
