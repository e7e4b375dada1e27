/*
 * The agent's Unix socket for the node's tasks (interposer and C API): one
 * thread per connection (a rank and its DataLoader workers make a handful).
 * Only processes of the agent's own uid are served (SO_PEERCRED); every
 * message is validated (wire.h), and a malformed one closes its connection.
 * Connections are capped (the extra ones are closed: those tasks read the
 * PFS), and running out of descriptors makes the accept thread back off
 * rather than spin.
 */
#ifndef NOPFS_AGENT_SERVER_H
#define NOPFS_AGENT_SERVER_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "stage/stage.h"

struct server_connection;

struct val;

struct server {
	struct stage *stage;
	struct val *val; /* the validation set (OPEN_VAL), or NULL; set before the ready file */
	/* the longest wait for a sample of a task that takes WAIT; set before the ready file */
	unsigned int wait_timeout_ms;
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
	unsigned int connection_count; /* under lock */
	unsigned int max_connections;
	uint32_t plan;    /* the step generation whose plan the agent follows */
	int reserve_fd;   /* /dev/null, given up to accept and close when out of fds */
	bool out_of_fds;  /* in a burst of EMFILE/ENFILE: said once */
	bool at_capacity; /* in a burst of refusals over the cap: said once */
};

#define SERVER_DEFAULT_MAX_CONNECTIONS 256

/*
 * Listen on @path (created 0600 by our uid) and serve from a thread, at most
 * @max_connections connections at a time (0: the default), for the plan of
 * step generation @plan: requests of tasks whose HELLO names an earlier one
 * are counted as superseded (their step was planned, then another step's
 * plan was taken on).
 */
nopfs_status server_start(struct server *server, const char *path, struct stage *stage,
                          struct agent_stats *stats, json_t *(*stats_json)(void *arg),
                          void *stats_arg, unsigned int max_connections, uint32_t plan);

/* Stop accepting, end every connection, join all threads, remove the socket. */
void server_stop(struct server *server);

#endif
