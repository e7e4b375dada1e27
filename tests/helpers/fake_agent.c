/* Test helper: a fake node agent that can misbehave (see fake_agent.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fake_agent.h"
#include "task/wire.h"

static const char *const mode_names[FAKE_AGENT_MODE_COUNT] = {
	[FAKE_AGENT_SERVE] = "serve",       [FAKE_AGENT_ERROR] = "error",
	[FAKE_AGENT_HANG] = "hang",         [FAKE_AGENT_HANG_HELLO] = "hang-hello",
	[FAKE_AGENT_CLOSE] = "close",       [FAKE_AGENT_GARBAGE] = "garbage",
	[FAKE_AGENT_NO_FD] = "no-fd",       [FAKE_AGENT_BAD_SIZE] = "bad-size",
	[FAKE_AGENT_WRONG_ID] = "wrong-id", [FAKE_AGENT_SLOW] = "slow",
};

int fake_agent_mode_parse(const char *name)
{
	for (int i = 0; i < FAKE_AGENT_MODE_COUNT; i++)
		if (!strcmp(name, mode_names[i]))
			return i;
	return -1;
}

static void log_line(struct fake_agent *agent, const char *format, ...)
        __attribute__((format(printf, 2, 3)));

static void log_line(struct fake_agent *agent, const char *format, ...)
{
	va_list args;

	if (!agent->log)
		return;
	va_start(args, format);
	vfprintf(agent->log, format, args);
	va_end(args);
	fputc('\n', agent->log);
	fflush(agent->log);
}

/* Write "PID 0\n" into "ready" beside the socket, as the agent does. */
static int write_ready(const struct fake_agent *agent)
{
	char path[sizeof(agent->socket_path) + 8];
	char text[32];
	char *slash;
	int length;
	int fd;

	snprintf(path, sizeof(path), "%s", agent->socket_path);
	slash = strrchr(path, '/');
	snprintf(slash ? slash + 1 : path, sizeof(path) - (size_t)(slash ? slash + 1 - path : 0),
	         "ready");
	unlink(path);
	if (agent->ready_pid < 0)
		return 0;
	length = snprintf(text, sizeof(text), "%d 0\n",
	                  agent->ready_pid ? agent->ready_pid : (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (write(fd, text, (size_t)length) != length) {
		close(fd);
		return -1;
	}
	return close(fd);
}

int fake_agent_listen(struct fake_agent *agent)
{
	struct sockaddr_un address = { .sun_family = AF_UNIX };

	for (int i = 0; i < FAKE_AGENT_MAX_CLIENTS; i++)
		agent->clients[i] = -1;
	agent->wake[0] = agent->wake[1] = -1;
	snprintf(address.sun_path, sizeof(address.sun_path), "%s", agent->socket_path);
	agent->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (agent->listen_fd < 0)
		return -1;
	unlink(agent->socket_path);
	/* SO_PEERCRED tells a client who called listen(). */
	if (bind(agent->listen_fd, (struct sockaddr *)&address, sizeof(address)) != 0 ||
	    write_ready(agent) != 0 ||
	    (agent->listen_as &&
	     (setgid(agent->listen_as) != 0 || setuid(agent->listen_as) != 0)) ||
	    listen(agent->listen_fd, 16) != 0 || pipe2(agent->wake, O_CLOEXEC) != 0) {
		close(agent->listen_fd);
		agent->listen_fd = -1;
		return -1;
	}
	return 0;
}

static void send_error(int socket, uint32_t id, int32_t status, const char *text)
{
	struct nopfs_wire_message reply = { .type = NOPFS_WIRE_ERROR, .request_id = id };

	reply.u.error.status = status;
	reply.u.error.text = text;
	reply.u.error.length = (uint32_t)strlen(text);
	nopfs_wire_send(socket, &reply, -1);
}

/* Answer an OPEN or GET with the copy at @path, as the mode says. */
static void send_copy(struct fake_agent *agent, int socket, uint32_t id, uint64_t index,
                      const char *path)
{
	static const uint8_t garbage[NOPFS_WIRE_HEADER_SIZE] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3 };
	struct nopfs_wire_message reply = { .type = NOPFS_WIRE_SAMPLE, .request_id = id };
	int mode = __atomic_load_n(&agent->mode, __ATOMIC_RELAXED);
	struct stat st;
	int fd;

	if (mode == FAKE_AGENT_ERROR) {
		send_error(socket, id, -4, "fake agent refuses");
		return;
	}
	if (mode == FAKE_AGENT_GARBAGE) {
		if (write(socket, garbage, sizeof(garbage)) < 0)
			return;
		return;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		send_error(socket, id, -4, "no such copy");
		if (fd >= 0)
			close(fd);
		return;
	}
	reply.u.sample.index = index;
	reply.u.sample.size = (uint64_t)st.st_size + (mode == FAKE_AGENT_BAD_SIZE ? 100 : 0);
	reply.u.sample.label = index == UINT64_MAX ? -1 : fake_agent_label(index);
	reply.u.sample.source = NOPFS_FROM_RAM;
	if (mode == FAKE_AGENT_WRONG_ID)
		reply.request_id = id + 1000;
	nopfs_wire_send(socket, &reply, mode == FAKE_AGENT_NO_FD ? -1 : fd);
	close(fd);
}

/* Handle one request; false to drop the connection, *stop to stop for good. */
static bool handle(struct fake_agent *agent, int socket, const struct nopfs_wire_message *m,
                   bool *stop)
{
	char path[PATH_MAX + NOPFS_WIRE_PATH_MAX + 16];
	int mode = __atomic_load_n(&agent->mode, __ATOMIC_RELAXED);
	unsigned served;

	switch (m->type) {
	case NOPFS_WIRE_HELLO: {
		struct nopfs_wire_message reply = { .type = NOPFS_WIRE_WELCOME,
			                            .request_id = m->request_id };

		__atomic_add_fetch(&agent->hellos, 1, __ATOMIC_RELAXED);
		log_line(agent, "HELLO %" PRIu32 " %" PRId32, m->u.hello.pid, m->u.hello.rank);
		if (mode == FAKE_AGENT_HANG_HELLO)
			return true;
		reply.u.welcome.world_size = 1;
		reply.u.welcome.samples = agent->samples;
		return nopfs_wire_send(socket, &reply, -1) == NOPFS_OK;
	}
	case NOPFS_WIRE_OPEN:
	case NOPFS_WIRE_GET:
		served = __atomic_load_n(&agent->opens, __ATOMIC_RELAXED) +
		         __atomic_load_n(&agent->gets, __ATOMIC_RELAXED);
		if (agent->exit_after && served >= agent->exit_after) {
			log_line(agent, "EXIT after %u requests", served);
			*stop = true;
			return false;
		}
		if (m->type == NOPFS_WIRE_OPEN) {
			__atomic_add_fetch(&agent->opens, 1, __ATOMIC_RELAXED);
			log_line(agent, "OPEN %.*s", (int)m->u.open.path_length, m->u.open.path);
			snprintf(path, sizeof(path), "%s/%.*s", agent->copies,
			         (int)m->u.open.path_length, m->u.open.path);
		} else {
			__atomic_add_fetch(&agent->gets, 1, __ATOMIC_RELAXED);
			log_line(agent, "GET %" PRIu64, m->u.get.index);
			snprintf(path, sizeof(path), "%s/i%" PRIu64, agent->copies, m->u.get.index);
		}
		if (mode == FAKE_AGENT_HANG || mode == FAKE_AGENT_HANG_HELLO)
			return true;
		for (int t = 0; mode == FAKE_AGENT_SLOW && t < FAKE_AGENT_SLOW_MS; t += 100) {
			struct nopfs_wire_message wait = { .type = NOPFS_WIRE_WAIT,
				                           .request_id = m->request_id,
				                           .u.wait.index = m->u.get.index };

			if (nopfs_wire_send(socket, &wait, -1) != NOPFS_OK)
				return false;
			usleep(100 * 1000);
		}
		send_copy(agent, socket, m->request_id,
		          m->type == NOPFS_WIRE_GET ? m->u.get.index : UINT64_MAX, path);
		return true;
	case NOPFS_WIRE_STATS: {
		struct nopfs_wire_message reply = { .type = NOPFS_WIRE_STATS_TEXT,
			                            .request_id = m->request_id };
		char text[256];

		__atomic_add_fetch(&agent->stats, 1, __ATOMIC_RELAXED);
		log_line(agent, "STATS");
		if (mode == FAKE_AGENT_HANG || mode == FAKE_AGENT_HANG_HELLO)
			return true;
		snprintf(text, sizeof(text), "{\"hellos\": %u, \"opens\": %u, \"gets\": %u}",
		         agent->hellos, agent->opens, agent->gets);
		reply.u.stats_text.text = text;
		reply.u.stats_text.length = (uint32_t)strlen(text);
		return nopfs_wire_send(socket, &reply, -1) == NOPFS_OK;
	}
	default:
		send_error(socket, m->request_id, -6, "unexpected message");
		return false;
	}
}

static void accept_client(struct fake_agent *agent)
{
	int fd = accept4(agent->listen_fd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if (__atomic_load_n(&agent->mode, __ATOMIC_RELAXED) == FAKE_AGENT_CLOSE) {
		close(fd);
		return;
	}
	for (int i = 0; i < FAKE_AGENT_MAX_CLIENTS; i++) {
		if (agent->clients[i] < 0) {
			agent->clients[i] = fd;
			return;
		}
	}
	close(fd);
}

int fake_agent_run(struct fake_agent *agent)
{
	uint8_t buffer[NOPFS_WIRE_HEADER_SIZE + NOPFS_WIRE_MAX_PAYLOAD];
	bool stop = false;

	while (!stop) {
		struct pollfd pfd[FAKE_AGENT_MAX_CLIENTS + 2];
		int n = 0;

		pfd[n++] = (struct pollfd){ .fd = agent->wake[0], .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = agent->listen_fd, .events = POLLIN };
		for (int i = 0; i < FAKE_AGENT_MAX_CLIENTS; i++)
			pfd[n++] = (struct pollfd){ .fd = agent->clients[i], .events = POLLIN };
		if (poll(pfd, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[0].revents)
			break;
		if (pfd[1].revents & POLLIN)
			accept_client(agent);
		for (int i = 0; i < FAKE_AGENT_MAX_CLIENTS && !stop; i++) {
			struct nopfs_wire_message message;
			const char *why;

			if (agent->clients[i] < 0 || !pfd[i + 2].revents)
				continue;
			if (nopfs_wire_receive(agent->clients[i], buffer, &message, NULL, 1000,
			                       &why) != NOPFS_OK ||
			    !handle(agent, agent->clients[i], &message, &stop)) {
				close(agent->clients[i]);
				agent->clients[i] = -1;
			}
		}
	}
	for (int i = 0; i < FAKE_AGENT_MAX_CLIENTS; i++) {
		if (agent->clients[i] >= 0)
			close(agent->clients[i]);
		agent->clients[i] = -1;
	}
	close(agent->listen_fd);
	agent->listen_fd = -1;
	unlink(agent->socket_path);
	return 0;
}

void fake_agent_wake(struct fake_agent *agent)
{
	if (write(agent->wake[1], "x", 1) < 0)
		return;
}

static void *agent_thread(void *arg)
{
	fake_agent_run(arg);
	return NULL;
}

int fake_agent_start(struct fake_agent *agent)
{
	if (fake_agent_listen(agent) != 0)
		return -1;
	if (pthread_create(&agent->thread, NULL, agent_thread, agent) != 0) {
		close(agent->listen_fd);
		close(agent->wake[0]);
		close(agent->wake[1]);
		return -1;
	}
	return 0;
}

void fake_agent_stop(struct fake_agent *agent)
{
	fake_agent_wake(agent);
	pthread_join(agent->thread, NULL);
	close(agent->wake[0]);
	close(agent->wake[1]);
}
