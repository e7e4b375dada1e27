/*
 * Notices from the other agents (their kinds are in team.h), queued on the
 * agent (events, under events_lock) for the main thread, which takes them
 * off in replan.c.
 */
#ifndef NOPFS_AGENT_NOTICES_H
#define NOPFS_AGENT_NOTICES_H

#include <stddef.h>
#include <stdint.h>

struct agent;

/* A queued notice, malloc'd with its payload (NUL-terminated); whoever takes it off frees it. */
struct agent_event {
	struct agent_event *next;
	uint32_t sender, kind, generation;
	size_t length;
	char payload[];
};

/*
 * A peer_notice_fn (@arg is the agent): queue a copy of the notice for the
 * main thread; a lack of memory is logged and the notice dropped.
 */
void agent_notice(void *arg, uint32_t sender, uint32_t kind, uint32_t generation,
                  const void *payload, size_t length);

/* Queue @event (taken over) for the main thread. */
void agent_event_queue(struct agent *agent, struct agent_event *event);

/*
 * Wait (at most @seconds) for the notice of @kind and @generation and take
 * it off the queue: its payload (malloc'd), or NULL.
 */
char *agent_notice_wait(struct agent *agent, uint32_t kind, uint32_t generation, int seconds);

#endif
