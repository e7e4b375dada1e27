/* The task-facing Unix socket. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "server.h"
#include "val.h"
#include "common/clock.h"
#include "task/wire.h"

/* Time a task may take to send the rest of a message it started. */
#define MESSAGE_TIMEOUT_MS 5000
/* How long the accept thread pauses when the process is out of descriptors. */
#define OUT_OF_FDS_PAUSE_MS 100
/* A task waiting for a sample hears WAIT this often; the accept thread looks 4 times as often. */
#define WAIT_INTERVAL_NS (UINT64_C(1000) * 1000 * 1000)
#define WAIT_TICK_MS     250

struct server_connection {
	struct server *server;
	int fd;
	pid_t pid;
	int32_t rank;
	uint32_t plan;   /* its step's plan generation (HELLO), or NOPFS_WIRE_NO_PLAN */
	bool takes_wait; /* HELLO said NOPFS_WIRE_FLAG_WAIT */
	/* Sends, and the request being fetched (its WAITs), under send_lock. */
	pthread_mutex_t send_lock;
	bool busy;
	uint32_t busy_id;
	uint64_t busy_index;
	uint64_t waited_ns; /* when it was last told to wait (or started) */
	uint64_t busy_ns;   /* when the request started */
	pthread_t thread;
	bool finished;
	struct server_connection *next;
	uint8_t buffer[NOPFS_WIRE_HEADER_SIZE + NOPFS_WIRE_MAX_PAYLOAD];
	void *sample_buffer;
};

/* Send @m (and @fd when >= 0) to the task: the request is answered, no WAIT follows. */
static nopfs_status connection_send(struct server_connection *c, const struct nopfs_wire_message *m,
                                    int fd)
{
	nopfs_status status;

	pthread_mutex_lock(&c->send_lock);
	c->busy = false;
	status = nopfs_wire_send(c->fd, m, fd);
	pthread_mutex_unlock(&c->send_lock);
	return status;
}

/* Request @m is being fetched: its task hears WAIT every second until the answer. */
static void connection_busy(struct server_connection *c, const struct nopfs_wire_message *m,
                            uint64_t index)
{
	pthread_mutex_lock(&c->send_lock);
	c->busy = c->takes_wait;
	c->busy_id = m->request_id;
	c->busy_index = index;
	c->waited_ns = c->busy_ns = nopfs_clock_now_ns();
	pthread_mutex_unlock(&c->send_lock);
}

/*
 * Accept thread: tell each task whose request has been fetched for a second
 * since it was last told to keep waiting, and for less than the wait
 * timeout (past it the request is answered, or stuck: the task must give
 * up). A connection whose thread is sending, or whose socket cannot take
 * the message now (a task that does not read), is skipped this time: the
 * accept thread never waits on a task.
 */
static void tell_waiting(struct server *server)
{
	uint64_t now = nopfs_clock_now_ns();
	uint64_t longest = (uint64_t)server->wait_timeout_ms * 1000000u;

	pthread_mutex_lock(&server->lock);
	for (struct server_connection *c = server->connections; c; c = c->next) {
		struct pollfd out = { .fd = c->fd, .events = POLLOUT };

		if (pthread_mutex_trylock(&c->send_lock) != 0)
			continue;
		if (!c->finished && c->busy && now - c->waited_ns >= WAIT_INTERVAL_NS &&
		    now - c->busy_ns < longest && poll(&out, 1, 0) == 1 &&
		    (out.revents & POLLOUT)) {
			struct nopfs_wire_message wait = { .type = NOPFS_WIRE_WAIT,
				                           .request_id = c->busy_id,
				                           .u.wait.index = c->busy_index };

			if (nopfs_wire_send(c->fd, &wait, -1) == NOPFS_OK)
				atomic_fetch_add(&server->stats->wait_notices, 1);
			c->waited_ns = now;
		}
		pthread_mutex_unlock(&c->send_lock);
	}
	pthread_mutex_unlock(&server->lock);
}

static nopfs_status reply_error(struct server_connection *c, uint32_t request_id,
                                nopfs_status status, const char *why)
{
	struct nopfs_wire_message reply = { .type = NOPFS_WIRE_ERROR, .request_id = request_id };

	reply.u.error.status = status;
	reply.u.error.length = (uint32_t)strlen(why);
	reply.u.error.text = why;
	return connection_send(c, &reply, -1);
}

/* A request the task reads from the PFS instead: why, from @status or @too_large. */
static void count_fallback(struct server *server, nopfs_status status, bool too_large)
{
	enum agent_fallback why = AGENT_FALLBACK_READ_ERROR;

	if (too_large)
		why = AGENT_FALLBACK_TOO_LARGE;
	else if (status == NOPFS_ERR_TIMEOUT)
		why = AGENT_FALLBACK_TIMEOUT;
	else if (status == NOPFS_ERR_RANGE || status == NOPFS_ERR_NOT_FOUND)
		why = AGENT_FALLBACK_UNKNOWN_PATH;
	atomic_fetch_add(&server->stats->fallbacks[why], 1);
}

/*
 * Serve the sample at @index of the dataset (none when it is not below the
 * sample count, e.g. UINT64_MAX); the reply carries a file descriptor of its
 * copy.
 */
static nopfs_status serve_sample(struct server_connection *c, const struct nopfs_wire_message *m,
                                 uint64_t index, int32_t rank)
{
	struct server *server = c->server;
	const struct job *job = server->stage->job;
	struct nopfs_wire_message reply = { .type = NOPFS_WIRE_SAMPLE,
		                            .request_id = m->request_id };
	uint64_t started = nopfs_clock_now_ns(), waited;
	nopfs_wire_source source;
	nopfs_sample_id sample;
	nopfs_status status;
	int fd = -1;

	atomic_fetch_add(&server->stats->requests, 1);
	if (c->plan != NOPFS_WIRE_NO_PLAN && c->plan < server->plan) {
		/* a step planned before the plan followed now: served, not planned */
		atomic_fetch_add(&server->stats->superseded_requests, 1);
		agent_max(&server->stats->superseded_newest, (uint64_t)c->plan + 1);
	}
	if (index >= job->sampler.count) {
		count_fallback(server, NOPFS_ERR_NOT_FOUND, false);
		return reply_error(c, m->request_id, NOPFS_ERR_NOT_FOUND,
		                   "not a sample of the dataset");
	}
	sample = (nopfs_sample_id)index;
	if (!c->sample_buffer)
		c->sample_buffer = malloc(job->max_sample_size ? job->max_sample_size : 1);
	connection_busy(c, m, sample);
	status = c->sample_buffer
	                 ? stage_request(server->stage, rank, sample, c->sample_buffer,
	                                 c->takes_wait ? server->wait_timeout_ms : 0, &fd, &source)
	                 : NOPFS_ERR_NOMEM;
	waited = nopfs_clock_now_ns() - started;
	atomic_fetch_add(&server->stats->stall_ns, waited);
	agent_max(&server->stats->stall_max_ns, waited);
	atomic_fetch_add(&server->stats->stall_buckets[agent_stall_bucket(waited)], 1);
	stage_count_stall(server->stage, rank, waited);
	if (status != NOPFS_OK) {
		/* too large: its place in the rank's stream is taken, the rank reads it itself */
		bool too_large = !job_serves(job, sample);

		count_fallback(server, status, too_large);
		return reply_error(c, m->request_id, status,
		                   too_large ? "larger than the agent's --max-sample-size"
		                             : nopfs_status_string(status));
	}
	reply.u.sample.index = sample;
	reply.u.sample.size = nopfs_catalog_size(job->catalog, sample);
	reply.u.sample.label = nopfs_catalog_label(job->catalog, sample);
	reply.u.sample.source = source;
	status = connection_send(c, &reply, fd);
	close(fd);
	return status;
}

/* A request for a sample of the validation set (OPEN_VAL): its copy, or an error. */
static nopfs_status serve_val(struct server_connection *c, const struct nopfs_wire_message *m)
{
	struct server *server = c->server;
	const struct job *job = server->stage->job;
	struct nopfs_wire_message reply = { .type = NOPFS_WIRE_SAMPLE,
		                            .request_id = m->request_id };
	char path[NOPFS_WIRE_PATH_MAX + 1];
	nopfs_status status;
	int fd = -1;

	if (!server->val)
		return reply_error(c, m->request_id, NOPFS_ERR_NOT_FOUND,
		                   "this job's agents keep no validation set");
	memcpy(path, m->u.open.path, m->u.open.path_length);
	path[m->u.open.path_length] = '\0';
	if (!c->sample_buffer)
		c->sample_buffer = malloc(job->max_sample_size ? job->max_sample_size : 1);
	status = c->sample_buffer ? val_serve(server->val, path, c->sample_buffer,
	                                      job->max_sample_size, &fd, &reply)
	                          : NOPFS_ERR_NOMEM;
	if (status != NOPFS_OK)
		return reply_error(c, m->request_id, status,
		                   status == NOPFS_ERR_NOT_FOUND
		                           ? "not a sample of the validation set"
		                           : nopfs_status_string(status));
	status = connection_send(c, &reply, fd);
	close(fd);
	return status;
}

static nopfs_status handle(struct server_connection *c, const struct nopfs_wire_message *m)
{
	struct server *server = c->server;
	const struct job *job = server->stage->job;
	struct nopfs_wire_message reply = { .request_id = m->request_id };
	char path[NOPFS_WIRE_PATH_MAX + 1];
	int64_t found;

	switch (m->type) {
	case NOPFS_WIRE_HELLO:
		c->rank = m->u.hello.rank;
		c->plan = m->u.hello.plan;
		c->takes_wait = m->u.hello.flags & NOPFS_WIRE_FLAG_WAIT;
		reply.type = NOPFS_WIRE_WELCOME;
		reply.u.welcome.node = job->node;
		reply.u.welcome.world_size = job->sampler.world_size;
		reply.u.welcome.samples = job->sampler.count;
		reply.u.welcome.flags = m->u.hello.flags | NOPFS_WIRE_FLAG_RING;
		return connection_send(c, &reply, -1);
	case NOPFS_WIRE_OPEN:
		memcpy(path, m->u.open.path, m->u.open.path_length);
		path[m->u.open.path_length] = '\0';
		found = nopfs_catalog_find(job->catalog, path);
		return serve_sample(c, m, found >= 0 ? (uint64_t)found : UINT64_MAX,
		                    m->u.open.rank >= 0 ? m->u.open.rank : c->rank);
	case NOPFS_WIRE_OPEN_VAL:
		return serve_val(c, m);
	case NOPFS_WIRE_GET:
		return serve_sample(c, m, m->u.get.index,
		                    m->u.get.rank >= 0 ? m->u.get.rank : c->rank);
	case NOPFS_WIRE_STATS: {
		json_t *stats = server->stats_json(server->stats_arg);
		char *text = stats ? json_dumps(stats, JSON_COMPACT) : NULL;
		nopfs_status status;

		json_decref(stats);
		if (!text || strlen(text) > NOPFS_WIRE_MAX_PAYLOAD - 8) {
			free(text);
			return reply_error(c, m->request_id, NOPFS_ERR_RANGE,
			                   "statistics do not fit in a message");
		}
		reply.type = NOPFS_WIRE_STATS_TEXT;
		reply.u.stats_text.text = text;
		reply.u.stats_text.length = (uint32_t)strlen(text);
		status = connection_send(c, &reply, -1);
		free(text);
		return status;
	}
	case NOPFS_WIRE_RING: {
		int fd = -1;
		nopfs_status status =
		        stage_attach_ring(server->stage, m->u.ring.rank, &fd,
		                          &reply.u.ring_fd.slots, &reply.u.ring_fd.bytes);

		if (status != NOPFS_OK)
			return reply_error(c, m->request_id, status,
			                   status == NOPFS_ERR_RANGE ? "not a rank of this node"
			                                             : "no staging ring");
		reply.type = NOPFS_WIRE_RING_FD;
		status = connection_send(c, &reply, fd);
		close(fd);
		return status;
	}
	case NOPFS_WIRE_RELEASE:
		stage_ring_released_by(server->stage, m->u.release.rank, m->u.release.slot,
		                       m->u.release.index);
		return NOPFS_OK;
	default:
		atomic_fetch_add(&server->stats->malformed_messages, 1);
		nopfs_warning("connection of pid %ld: unexpected message type %d", (long)c->pid,
		              (int)m->type);
		reply_error(c, m->request_id, NOPFS_ERR_FORMAT, "unexpected message type");
		return NOPFS_ERR_FORMAT;
	}
}

static void *connection_main(void *arg)
{
	struct server_connection *c = arg;
	struct server *server = c->server;
	struct pollfd fds[2] = { { .fd = c->fd, .events = POLLIN },
		                 { .fd = server->stop_fd, .events = POLLIN } };

	for (;;) {
		struct nopfs_wire_message message;
		const char *why = NULL;
		nopfs_status status;
		int passed = -1;

		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (fds[1].revents)
			break;
		status = nopfs_wire_receive(c->fd, c->buffer, &message, &passed, MESSAGE_TIMEOUT_MS,
		                            &why);
		if (passed >= 0)
			close(passed); /* tasks never pass descriptors to us */
		if (status == NOPFS_ERR_IO)
			break; /* the task closed its end */
		if (status != NOPFS_OK) {
			atomic_fetch_add(&server->stats->malformed_messages, 1);
			atomic_fetch_add(&server->stats->fallbacks[AGENT_FALLBACK_MALFORMED], 1);
			nopfs_warning("connection of pid %ld: rejected a message: %s", (long)c->pid,
			              why ? why : nopfs_status_string(status));
			reply_error(c, 0, status, why ? why : "malformed message");
			break;
		}
		if (handle(c, &message) != NOPFS_OK)
			break;
	}
	pthread_mutex_lock(&c->send_lock);
	c->busy = false; /* no WAIT on a closed descriptor */
	pthread_mutex_unlock(&c->send_lock);
	close(c->fd);
	free(c->sample_buffer);
	c->sample_buffer = NULL;
	pthread_mutex_lock(&server->lock);
	c->finished = true;
	server->connection_count--;
	pthread_mutex_unlock(&server->lock);
	return NULL;
}

/* Join and free connections whose threads ended. */
static void reap(struct server *server, bool all)
{
	struct server_connection **link = &server->connections;

	pthread_mutex_lock(&server->lock);
	while (*link) {
		struct server_connection *c = *link;

		if (!all && !c->finished) {
			link = &c->next;
			continue;
		}
		*link = c->next;
		pthread_mutex_unlock(&server->lock);
		pthread_join(c->thread, NULL);
		pthread_mutex_destroy(&c->send_lock);
		free(c);
		pthread_mutex_lock(&server->lock);
	}
	pthread_mutex_unlock(&server->lock);
}

/*
 * Out of descriptors (EMFILE, ENFILE): say so once per burst, close the
 * waiting connection with the reserve descriptor (its task reads the PFS)
 * and pause, so that the accept thread does not spin on a readable socket.
 */
static void out_of_fds(struct server *server, int error)
{
	struct pollfd stop = { .fd = server->stop_fd, .events = POLLIN };
	int fd;

	atomic_fetch_add(&server->stats->refused_connections, 1);
	if (!server->out_of_fds)
		nopfs_warning("socket %s: cannot accept a connection: %s; closing new ones until "
		              "descriptors are free (those tasks read the PFS)",
		              server->path, strerror(error));
	server->out_of_fds = true;
	if (server->reserve_fd >= 0) {
		close(server->reserve_fd);
		fd = accept4(server->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0)
			close(fd);
		server->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	poll(&stop, 1, OUT_OF_FDS_PAUSE_MS);
}

/* Whether another connection fits under the cap; counts it if so. */
static bool admit(struct server *server, pid_t pid)
{
	bool admitted;

	pthread_mutex_lock(&server->lock);
	admitted = server->connection_count < server->max_connections;
	if (admitted)
		server->connection_count++;
	pthread_mutex_unlock(&server->lock);
	if (admitted) {
		server->at_capacity = false;
		return true;
	}
	atomic_fetch_add(&server->stats->refused_connections, 1);
	if (!server->at_capacity)
		nopfs_warning("socket %s: refused a connection of pid %ld: %u connections already "
		              "(--max-connections); that task reads the PFS",
		              server->path, (long)pid, server->max_connections);
	server->at_capacity = true;
	return false;
}

/* Undo admit() for a connection that did not start. */
static void unadmit(struct server *server)
{
	pthread_mutex_lock(&server->lock);
	server->connection_count--;
	pthread_mutex_unlock(&server->lock);
}

static void accept_one(struct server *server)
{
	struct server_connection *c;
	struct ucred peer;
	socklen_t length = sizeof(peer);
	int fd = accept4(server->listen_fd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE)
			out_of_fds(server, errno);
		return;
	}
	server->out_of_fds = false;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0 || peer.uid != geteuid()) {
		atomic_fetch_add(&server->stats->refused_connections, 1);
		nopfs_warning("refused a connection from uid %ld pid %ld: only uid %ld is served",
		              (long)peer.uid, (long)peer.pid, (long)geteuid());
		close(fd);
		return;
	}
	if (!admit(server, peer.pid)) {
		close(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		unadmit(server);
		close(fd);
		return;
	}
	c->server = server;
	c->fd = fd;
	c->pid = peer.pid;
	c->plan = NOPFS_WIRE_NO_PLAN; /* until its HELLO says */
	c->rank = -1;
	pthread_mutex_init(&c->send_lock, NULL);
	pthread_mutex_lock(&server->lock);
	if (pthread_create(&c->thread, NULL, connection_main, c) != 0) {
		server->connection_count--;
		pthread_mutex_unlock(&server->lock);
		pthread_mutex_destroy(&c->send_lock);
		nopfs_warning("cannot start a thread for pid %ld", (long)peer.pid);
		close(fd);
		free(c);
		return;
	}
	c->next = server->connections;
	server->connections = c;
	pthread_mutex_unlock(&server->lock);
}

static void *accept_main(void *arg)
{
	struct server *server = arg;
	struct pollfd fds[2] = { { .fd = server->listen_fd, .events = POLLIN },
		                 { .fd = server->stop_fd, .events = POLLIN } };

	for (;;) {
		if (poll(fds, 2, WAIT_TICK_MS) < 0 && errno != EINTR)
			break;
		if (fds[1].revents)
			break;
		if (fds[0].revents)
			accept_one(server);
		reap(server, false);
		tell_waiting(server);
	}
	return NULL;
}

nopfs_status server_start(struct server *server, const char *path, struct stage *stage,
                          struct agent_stats *stats, json_t *(*stats_json)(void *arg),
                          void *stats_arg, unsigned int max_connections, uint32_t plan)
{
	struct sockaddr_un address = { .sun_family = AF_UNIX };
	mode_t old_umask;

	memset(server, 0, sizeof(*server));
	server->stage = stage;
	server->stats = stats;
	server->stats_json = stats_json;
	server->stats_arg = stats_arg;
	server->max_connections =
	        max_connections ? max_connections : SERVER_DEFAULT_MAX_CONNECTIONS;
	server->plan = plan;
	server->listen_fd = server->stop_fd = -1;
	server->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pthread_mutex_init(&server->lock, NULL);
	if (strlen(path) >= sizeof(address.sun_path)) {
		nopfs_error("socket path '%s' is longer than %zu bytes", path,
		            sizeof(address.sun_path) - 1);
		return NOPFS_ERR_RANGE;
	}
	strcpy(server->path, path);
	strcpy(address.sun_path, path);
	server->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	server->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (server->listen_fd < 0 || server->stop_fd < 0) {
		nopfs_error("socket '%s': %m", path);
		return NOPFS_ERR_IO;
	}
	unlink(path);
	old_umask = umask(077);
	if (bind(server->listen_fd, (struct sockaddr *)&address, sizeof(address)) != 0 ||
	    listen(server->listen_fd, 128) != 0) {
		umask(old_umask);
		nopfs_error("cannot listen on '%s': %m", path);
		return NOPFS_ERR_IO;
	}
	umask(old_umask);
	if (pthread_create(&server->thread, NULL, accept_main, server) != 0) {
		nopfs_error("cannot start the socket thread");
		return NOPFS_ERR_NOMEM;
	}
	server->started = true;
	return NOPFS_OK;
}

void server_stop(struct server *server)
{
	uint64_t one = 1;

	if (server->stop_fd >= 0 && write(server->stop_fd, &one, sizeof(one)) != sizeof(one))
		nopfs_warning("cannot signal the socket threads: %m");
	if (server->started)
		pthread_join(server->thread, NULL);
	reap(server, true);
	if (server->listen_fd >= 0) {
		close(server->listen_fd);
		unlink(server->path);
	}
	if (server->stop_fd >= 0)
		close(server->stop_fd);
	if (server->reserve_fd >= 0)
		close(server->reserve_fd);
	server->listen_fd = server->stop_fd = server->reserve_fd = -1;
	server->started = false;
	pthread_mutex_destroy(&server->lock);
}
