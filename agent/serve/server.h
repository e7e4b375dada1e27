/*
 * The agent's Unix socket for the node's tasks (interposer and C API): one
 * thread per connection (a rank and its DataLoader workers make a handful).
 * Only processes of the agent's own uid are served (SO_PEERCRED); every
 * message is validated (wire.h), and a malformed one closes its connection.
 */
#ifndef NOPFS_AGENT_SERVER_H
#define NOPFS_AGENT_SERVER_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "stage/stage.h"

struct server_connection;

struct server {
	struct stage *stage;
	struct agent_stats *stats;
	json_t *(*stats_json)(void *arg); /* live statistics for STATS */
	void *stats_arg;
	char path[108];
	int listen_fd;
	int stop_fd; /* eventfd: wakes every thread */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	struct server_connection *connections;
};

/* Listen on @path (created 0600 by our uid) and serve from a thread. */
nopfs_status server_start(struct server *server, const char *path, struct stage *stage,
                          struct agent_stats *stats, json_t *(*stats_json)(void *arg),
                          void *stats_arg);

/* Stop accepting, end every connection, join all threads, remove the socket. */
void server_stop(struct server *server);

#endif
