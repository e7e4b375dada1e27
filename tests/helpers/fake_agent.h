/*
 * Test helper: a fake node agent on a real Unix socket. It serves HELLO,
 * OPEN (from a directory of "local copies"), GET (copies/i<index>) and STATS
 * and can misbehave on request. check_client runs it in a thread,
 * check_preload.sh as a program (fake_agent_main.c). Like the agent, it
 * writes "PID 0" into the file "ready" beside its socket.
 */
#ifndef NOPFS_TEST_FAKE_AGENT_H
#define NOPFS_TEST_FAKE_AGENT_H

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

enum fake_agent_mode {
	FAKE_AGENT_SERVE,      /* answer every request properly */
	FAKE_AGENT_ERROR,      /* ERROR to every OPEN and GET */
	FAKE_AGENT_HANG,       /* WELCOME, then never answer */
	FAKE_AGENT_HANG_HELLO, /* never answer, not even HELLO */
	FAKE_AGENT_CLOSE,      /* close every connection at once */
	FAKE_AGENT_GARBAGE,    /* answer OPEN and GET with bytes that are no message */
	FAKE_AGENT_NO_FD,      /* SAMPLE without its descriptor */
	FAKE_AGENT_BAD_SIZE,   /* SAMPLE announcing another size than its copy's */
	FAKE_AGENT_WRONG_ID,   /* SAMPLE answering another request id */
	FAKE_AGENT_SLOW,       /* WAIT every 100 ms for FAKE_AGENT_SLOW_MS, then the SAMPLE */
	FAKE_AGENT_MODE_COUNT,
};

#define FAKE_AGENT_MAX_CLIENTS 32
#define FAKE_AGENT_SLOW_MS     1000

struct fake_agent {
	/* Set before fake_agent_start() / fake_agent_listen(). */
	char socket_path[108];
	char copies[PATH_MAX];
	uint64_t samples;
	unsigned exit_after; /* > 0: stop for good at OPEN/GET number exit_after + 1 */
	FILE *log;           /* one line per request when not NULL */
	int ready_pid;       /* pid written in "ready": 0 for its own, -1 for no file */
	uid_t listen_as;     /* not 0: listen() after setuid() to it (bind as the caller) */
	/* May be changed while it runs (atomically). */
	int mode;
	/* Counts, read atomically. */
	unsigned hellos;
	unsigned opens;
	unsigned gets;
	unsigned stats;
	/* Private. */
	int listen_fd;
	int wake[2];
	int clients[FAKE_AGENT_MAX_CLIENTS];
	pthread_t thread;
};

/* The label the fake agent (and the tests' staging index) gives sample @index. */
static inline int64_t fake_agent_label(uint64_t index)
{
	return (int64_t)(index % 7) - 3;
}

/* Parse a mode name ("serve", "error", "hang", ...); -1 when unknown. */
int fake_agent_mode_parse(const char *name);

/* Bind and listen on agent->socket_path; 0 or -1 (errno). */
int fake_agent_listen(struct fake_agent *agent);

/* Serve until fake_agent_wake() or exit_after; then close everything. 0. */
int fake_agent_run(struct fake_agent *agent);

/* Make fake_agent_run() return (async-signal-safe). */
void fake_agent_wake(struct fake_agent *agent);

/* Listen, then run in a thread; 0 or -1. */
int fake_agent_start(struct fake_agent *agent);

/* Stop the thread, close everything, remove the socket. */
void fake_agent_stop(struct fake_agent *agent);

#endif
