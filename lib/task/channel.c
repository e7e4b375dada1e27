/*
 * A task's connection to its node's agent: handshake, calls, back-off.
 *
 * The socket's path comes from the environment and may point into a shared
 * place: the agent is used only when the socket's directory is this user's
 * and private, and the process listening on it runs as this user with the
 * pid the agent wrote in the "ready" file beside it (SO_PEERCRED).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "channel.h"
#include "runtime.h"
#include "common/clock.h"
#include "common/private.h"

#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS   30000

bool nopfs_channel_init(struct nopfs_channel *channel, const char *socket_path, int32_t rank,
                        uint32_t flags, int timeout_ms)
{
	size_t length = socket_path ? strlen(socket_path) : 0;

	if (length == 0 || length >= sizeof(channel->socket_path))
		return false;
	memset(channel, 0, offsetof(struct nopfs_channel, buffer));
	memcpy(channel->socket_path, socket_path, length + 1);
	channel->rank = rank;
	channel->flags = flags;
	channel->plan = nopfs_env_plan();
	channel->timeout_ms = timeout_ms;
	channel->socket = -1;
	channel->next_request_id = 1;
	return true;
}

/* Whether channel->socket is still the socket this process connected. */
static bool owns_socket(const struct nopfs_channel *channel)
{
	struct stat st;

	if (channel->socket < 0 || channel->pid != getpid())
		return false;
	if (fstat(channel->socket, &st) != 0 || !S_ISSOCK(st.st_mode))
		return false;
	return st.st_dev == channel->device && st.st_ino == channel->inode;
}

void nopfs_channel_close(struct nopfs_channel *channel)
{
	int saved_errno = errno;
	struct stat st;

	/* In a child, close our copy only if it is still the inherited socket. */
	if (channel->socket >= 0 && fstat(channel->socket, &st) == 0 &&
	    st.st_dev == channel->device && st.st_ino == channel->inode)
		close(channel->socket);
	channel->socket = -1;
	errno = saved_errno;
}

void nopfs_channel_forget(struct nopfs_channel *channel)
{
	/* The program may have closed the inherited number and reused it. */
	nopfs_channel_close(channel);
	channel->failures = 0;
	channel->retry_at_ms = 0;
}

void nopfs_channel_fail(struct nopfs_channel *channel)
{
	int64_t delay = BACKOFF_FIRST_MS;

	nopfs_channel_close(channel);
	for (uint32_t i = 0; i < channel->failures && delay < BACKOFF_MAX_MS; i++)
		delay *= 2;
	if (delay > BACKOFF_MAX_MS)
		delay = BACKOFF_MAX_MS;
	channel->failures++;
	channel->retry_at_ms = nopfs_clock_now_ms() + delay;
}

/*
 * Open the directory of the agent's socket into *dirfd after checking that
 * it is private and that the socket in it is a socket of this user's.
 */
static nopfs_status open_agent_dir(const struct nopfs_channel *channel, int *dirfd,
                                   const char **why)
{
	char directory[NOPFS_CHANNEL_PATH_MAX] = ".";
	const char *slash = strrchr(channel->socket_path, '/');
	const char *name = slash ? slash + 1 : channel->socket_path;
	size_t length = slash ? (size_t)(slash - channel->socket_path) : 0;
	nopfs_status status;
	struct stat st;

	if (slash) {
		/* "/name" lies in "/". */
		memcpy(directory, channel->socket_path, length ? length : 1);
		directory[length ? length : 1] = '\0';
	}
	status = nopfs_private_dir_open(directory, dirfd, NULL, why);
	if (status == NOPFS_ERR_PERMISSION) {
		*why = "the agent's socket is not in a private directory of this user's";
		errno = 0;
	}
	if (status != NOPFS_OK)
		return status == NOPFS_ERR_NOT_FOUND ? NOPFS_ERR_IO : status;
	if (fstatat(*dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		*why = "cannot find the agent's socket";
		status = NOPFS_ERR_IO;
	} else if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
		*why = "the agent's socket is not a socket of this user's";
		errno = 0;
		status = NOPFS_ERR_PERMISSION;
	}
	if (status != NOPFS_OK)
		close(*dirfd);
	return status;
}

/* The agent's pid from the "ready" file ("PID GENERATION\n") in @dirfd, or 0. */
static pid_t ready_pid(int dirfd)
{
	char text[64];
	const char *why;
	ssize_t length;
	long pid;
	char *end;
	int fd;

	if (nopfs_private_file_openat(dirfd, NOPFS_RUNTIME_READY_NAME, 0, -1, &fd, &why) !=
	    NOPFS_OK)
		return 0;
	length = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (length <= 0 || text[0] < '1' || text[0] > '9')
		return 0;
	text[length] = '\0';
	pid = strtol(text, &end, 10);
	return *end == ' ' && pid > 0 && pid <= INT32_MAX ? (pid_t)pid : 0;
}

/*
 * Check who listens on the connected socket @fd: this user, with the pid of
 * the ready file. NOPFS_ERR_PERMISSION with @why when not.
 */
static nopfs_status check_peer(int fd, int dirfd, const char **why)
{
	struct ucred peer;
	socklen_t length = sizeof(peer);
	pid_t pid;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) {
		*why = "cannot get the agent's credentials";
		return NOPFS_ERR_IO;
	}
	if (peer.uid != geteuid()) {
		*why = "the process behind the agent's socket runs as another user";
		return NOPFS_ERR_PERMISSION;
	}
	pid = ready_pid(dirfd);
	if (pid == 0 || peer.pid != pid) {
		*why = pid == 0 ? "no valid ready file of this user's beside the agent's socket"
		                : "the process behind the agent's socket is not the one in its "
		                  "ready file";
		return NOPFS_ERR_PERMISSION;
	}
	return NOPFS_OK;
}

/* Open a connected, blocking, close-on-exec socket with a send timeout. */
static nopfs_status open_socket(struct nopfs_channel *channel, int *out, const char **why)
{
	struct sockaddr_un address = { .sun_family = AF_UNIX };
	struct timeval send_timeout = {
		.tv_sec = channel->timeout_ms / 1000,
		.tv_usec = (channel->timeout_ms % 1000) * 1000,
	};
	nopfs_status status;
	int saved_errno;
	int dirfd;
	int fd;

	status = open_agent_dir(channel, &dirfd, why);
	if (status != NOPFS_OK)
		return status;
	memcpy(address.sun_path, channel->socket_path, strlen(channel->socket_path) + 1);
	status = NOPFS_ERR_IO;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		*why = "cannot create a socket";
		goto out_dir;
	}
	/* Non-blocking: a full listen backlog fails (EAGAIN) instead of waiting. */
	if (connect(fd, (struct sockaddr *)&address, sizeof(address)) != 0) {
		*why = "cannot connect to the agent's socket";
		goto out_close;
	}
	status = check_peer(fd, dirfd, why);
	if (status != NOPFS_OK) {
		errno = 0;
		goto out_close;
	}
	status = NOPFS_ERR_IO;
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof(send_timeout)) != 0) {
		*why = "cannot configure the agent's socket";
		goto out_close;
	}
	close(dirfd);
	*out = fd;
	return NOPFS_OK;

out_close:
	saved_errno = errno;
	close(fd);
	errno = saved_errno;
out_dir:
	saved_errno = errno;
	close(dirfd);
	errno = saved_errno;
	return status;
}

/* Send @request with a fresh id and receive its reply on the open socket. */
static nopfs_status exchange(struct nopfs_channel *channel, struct nopfs_wire_message *request,
                             nopfs_wire_type expected, struct nopfs_wire_message *reply, int *fd,
                             const char **why)
{
	struct nopfs_wire_message received;
	int passed = -1;
	nopfs_status status;

	request->request_id = channel->next_request_id++;
	if (channel->next_request_id == 0)
		channel->next_request_id = 1;
	status = nopfs_wire_send(channel->socket, request, -1);
	if (status != NOPFS_OK) {
		*why = status == NOPFS_ERR_INVALID ? "request cannot be encoded"
		                                   : "cannot send to the agent";
		return status;
	}
	for (int waits = 0;; waits++) {
		status = nopfs_wire_receive(channel->socket, channel->buffer, &received, &passed,
		                            channel->timeout_ms, why);
		if (status != NOPFS_OK)
			return status;
		/*
		 * The agent is still fetching the sample (every second): each
		 * WAIT gives the reply another timeout, NOPFS_WAIT_MAX in all.
		 */
		if (received.type != NOPFS_WIRE_WAIT ||
		    received.request_id != request->request_id || passed >= 0)
			break;
		if (waits >= NOPFS_WAIT_MAX) {
			*why = "the agent was still fetching the sample after the longest wait";
			return NOPFS_ERR_TIMEOUT;
		}
	}
	if (received.request_id != request->request_id) {
		*why = "reply to another request";
		status = NOPFS_ERR_FORMAT;
	} else if (received.type != expected && received.type != NOPFS_WIRE_ERROR) {
		*why = "unexpected reply type";
		status = NOPFS_ERR_FORMAT;
	} else if (passed >= 0 && received.type != NOPFS_WIRE_SAMPLE &&
	           received.type != NOPFS_WIRE_RING_FD) {
		/* Only SAMPLE and RING_FD carry a descriptor; drop a stray one. */
		close(passed);
		passed = -1;
	}
	if (status != NOPFS_OK) {
		if (passed >= 0)
			close(passed);
		return status;
	}
	*reply = received;
	if (fd)
		*fd = passed;
	else if (passed >= 0)
		close(passed);
	return NOPFS_OK;
}

nopfs_status nopfs_channel_connect(struct nopfs_channel *channel, const char **why)
{
	struct nopfs_wire_message hello = { .type = NOPFS_WIRE_HELLO };
	struct nopfs_wire_message welcome;
	struct stat st;
	nopfs_status status;
	int fd;

	nopfs_channel_close(channel);
	status = open_socket(channel, &fd, why);
	if (status != NOPFS_OK)
		goto out_fail;
	if (fstat(fd, &st) != 0) {
		*why = "cannot stat the agent's socket";
		close(fd);
		status = NOPFS_ERR_IO;
		goto out_fail;
	}
	channel->socket = fd;
	channel->pid = getpid();
	channel->device = st.st_dev;
	channel->inode = st.st_ino;
	hello.u.hello.pid = (uint32_t)channel->pid;
	hello.u.hello.rank = channel->rank;
	hello.u.hello.flags = channel->flags | NOPFS_WIRE_FLAG_WAIT;
	hello.u.hello.plan = channel->plan;
	status = exchange(channel, &hello, NOPFS_WIRE_WELCOME, &welcome, NULL, why);
	if (status == NOPFS_OK && welcome.type != NOPFS_WIRE_WELCOME) {
		*why = "the agent refused the connection";
		status = NOPFS_ERR_PERMISSION;
	}
	if (status != NOPFS_OK)
		goto out_fail;
	channel->node = welcome.u.welcome.node;
	channel->world_size = welcome.u.welcome.world_size;
	channel->samples = welcome.u.welcome.samples;
	channel->agent_flags = welcome.u.welcome.flags;
	channel->failures = 0;
	channel->retry_at_ms = 0;
	return NOPFS_OK;

out_fail:
	nopfs_channel_fail(channel);
	return status;
}

nopfs_status nopfs_channel_call(struct nopfs_channel *channel, struct nopfs_wire_message *request,
                                nopfs_wire_type expected, struct nopfs_wire_message *reply, int *fd,
                                const char **why)
{
	nopfs_status status;

	if (!owns_socket(channel)) {
		/* Forked, or the application closed our descriptor: start over. */
		if (channel->socket >= 0 && channel->pid != getpid())
			nopfs_channel_close(channel);
		channel->socket = -1;
		if (channel->retry_at_ms && nopfs_clock_now_ms() < channel->retry_at_ms) {
			*why = "backing off after a failure of the agent";
			return NOPFS_ERR_UNSUPPORTED;
		}
		status = nopfs_channel_connect(channel, why);
		if (status != NOPFS_OK)
			return status;
	}
	status = exchange(channel, request, expected, reply, fd, why);
	if (status != NOPFS_OK && status != NOPFS_ERR_INVALID)
		nopfs_channel_fail(channel);
	return status;
}

nopfs_status nopfs_channel_notify(struct nopfs_channel *channel, struct nopfs_wire_message *message)
{
	nopfs_status status;

	if (!owns_socket(channel))
		return NOPFS_ERR_UNSUPPORTED; /* only on the connection that got the ring */
	message->request_id = channel->next_request_id++;
	if (channel->next_request_id == 0)
		channel->next_request_id = 1;
	status = nopfs_wire_send(channel->socket, message, -1);
	if (status != NOPFS_OK && status != NOPFS_ERR_INVALID)
		nopfs_channel_fail(channel);
	return status;
}
