/*
 * Notices from the other agents, queued for the main thread: the data plane
 * hands each to agent_notice(), and the main thread takes them off.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "notices.h"
#include "common/cancel.h"
#include "common/log.h"

void agent_event_queue(struct agent *agent, struct agent_event *event)
{
	struct agent_event **at;

	event->next = NULL;
	pthread_mutex_lock(&agent->events_lock);
	for (at = &agent->events; *at; at = &(*at)->next)
		;
	*at = event;
	pthread_mutex_unlock(&agent->events_lock);
}

void agent_notice(void *arg, uint32_t sender, uint32_t kind, uint32_t generation,
                  const void *payload, size_t length)
{
	struct agent *agent = arg;
	struct agent_event *event = malloc(sizeof(*event) + length + 1);

	if (!event) {
		nopfs_error("no memory for a notice from node %" PRIu32, sender);
		return;
	}
	*event = (struct agent_event){
		.sender = sender, .kind = kind, .generation = generation, .length = length
	};
	memcpy(event->payload, payload, length);
	event->payload[length] = '\0';
	agent_event_queue(agent, event);
}

char *agent_notice_wait(struct agent *agent, uint32_t kind, uint32_t generation, int seconds)
{
	for (int tick = 0; tick <= seconds * 20; tick++) {
		struct agent_event **at, *found = NULL;
		char *payload;

		pthread_mutex_lock(&agent->events_lock);
		for (at = &agent->events; *at && !found; at = found ? at : &(*at)->next)
			if ((*at)->kind == kind && (*at)->generation == generation) {
				found = *at;
				*at = found->next;
			}
		pthread_mutex_unlock(&agent->events_lock);
		if (found) {
			payload = strdup(found->payload);
			free(found);
			return payload;
		}
		if (nopfs_stop_pending())
			return NULL; /* stopping: the caller gives up */
		usleep(50000);
	}
	return NULL;
}
