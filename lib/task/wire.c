/*
 * The task <-> agent wire protocol: encoding, validation, and one message at
 * a time over a Unix stream socket with a file descriptor alongside.
 *
 * Nothing received is trusted: the header is checked before its payload is
 * read, the payload must have exactly its type's layout, and every length is
 * checked against what is actually there before anything is read through it.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "wire.h"
#include "common/clock.h"

/* Fixed payload lengths, and the fixed part of the variable-length ones. */
#define HELLO_LENGTH       16
#define WELCOME_LENGTH     20
#define OPEN_FIXED_LENGTH  8
#define GET_LENGTH         16
#define SAMPLE_LENGTH      32
#define STATS_LENGTH       0
#define RELEASE_LENGTH     16
#define RING_LENGTH        8
#define RING_FD_LENGTH     16
#define WAIT_LENGTH        8
#define ERROR_FIXED_LENGTH 8

/* Messages up to this size are sent from the stack (OPEN with a long path). */
#define SEND_STACK_SIZE (NOPFS_WIRE_HEADER_SIZE + OPEN_FIXED_LENGTH + NOPFS_WIRE_PATH_MAX)

/* Descriptors accepted in one read: the first is kept, the others closed. */
#define RECEIVE_MAX_FDS 8

static void put_u16(uint8_t *p, uint16_t value)
{
	p[0] = (uint8_t)value;
	p[1] = (uint8_t)(value >> 8);
}

static void put_u32(uint8_t *p, uint32_t value)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(value >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t value)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(value >> (8 * i));
}

static uint16_t get_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t value = 0;

	for (int i = 3; i >= 0; i--)
		value = (value << 8) | p[i];
	return value;
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t value = 0;

	for (int i = 7; i >= 0; i--)
		value = (value << 8) | p[i];
	return value;
}

/* Whether a payload of @length bytes may carry a message of @type. */
static bool length_fits_type(uint16_t type, uint32_t length, const char **why)
{
	switch (type) {
	case NOPFS_WIRE_HELLO:
		*why = "HELLO payload is not 16 bytes";
		return length == HELLO_LENGTH;
	case NOPFS_WIRE_WELCOME:
		*why = "WELCOME payload is not 20 bytes";
		return length == WELCOME_LENGTH;
	case NOPFS_WIRE_OPEN:
	case NOPFS_WIRE_OPEN_VAL:
		*why = "OPEN payload length does not fit a path";
		return length > OPEN_FIXED_LENGTH &&
		       length <= OPEN_FIXED_LENGTH + NOPFS_WIRE_PATH_MAX;
	case NOPFS_WIRE_GET:
		*why = "GET payload is not 16 bytes";
		return length == GET_LENGTH;
	case NOPFS_WIRE_SAMPLE:
		*why = "SAMPLE payload is not 32 bytes";
		return length == SAMPLE_LENGTH;
	case NOPFS_WIRE_STATS:
		*why = "STATS payload is not empty";
		return length == STATS_LENGTH;
	case NOPFS_WIRE_STATS_TEXT:
		return true;
	case NOPFS_WIRE_ERROR:
		*why = "ERROR payload shorter than its fixed part";
		return length >= ERROR_FIXED_LENGTH;
	case NOPFS_WIRE_RELEASE:
		*why = "RELEASE payload is not 16 bytes";
		return length == RELEASE_LENGTH;
	case NOPFS_WIRE_RING:
		*why = "RING payload is not 8 bytes";
		return length == RING_LENGTH;
	case NOPFS_WIRE_RING_FD:
		*why = "RING_FD payload is not 16 bytes";
		return length == RING_FD_LENGTH;
	case NOPFS_WIRE_WAIT:
		*why = "WAIT payload is not 8 bytes";
		return length == WAIT_LENGTH;
	}
	*why = "unknown message type";
	return false;
}

/* The payload length of @message, or 0 with *valid false when not encodable. */
static uint32_t payload_length(const struct nopfs_wire_message *message, bool *valid)
{
	*valid = true;
	switch (message->type) {
	case NOPFS_WIRE_HELLO:
		return HELLO_LENGTH;
	case NOPFS_WIRE_WELCOME:
		return WELCOME_LENGTH;
	case NOPFS_WIRE_OPEN:
	case NOPFS_WIRE_OPEN_VAL:
		if (message->u.open.path_length == 0 ||
		    message->u.open.path_length > NOPFS_WIRE_PATH_MAX || !message->u.open.path ||
		    memchr(message->u.open.path, '\0', message->u.open.path_length))
			break;
		return OPEN_FIXED_LENGTH + message->u.open.path_length;
	case NOPFS_WIRE_GET:
		return GET_LENGTH;
	case NOPFS_WIRE_SAMPLE:
		return SAMPLE_LENGTH;
	case NOPFS_WIRE_STATS:
		return STATS_LENGTH;
	case NOPFS_WIRE_STATS_TEXT:
		if (message->u.stats_text.length > NOPFS_WIRE_MAX_PAYLOAD ||
		    (message->u.stats_text.length && !message->u.stats_text.text) ||
		    (message->u.stats_text.length &&
		     memchr(message->u.stats_text.text, '\0', message->u.stats_text.length)))
			break;
		return message->u.stats_text.length;
	case NOPFS_WIRE_ERROR:
		if (message->u.error.length > NOPFS_WIRE_MAX_PAYLOAD - ERROR_FIXED_LENGTH ||
		    (message->u.error.length && !message->u.error.text) ||
		    (message->u.error.length &&
		     memchr(message->u.error.text, '\0', message->u.error.length)))
			break;
		return ERROR_FIXED_LENGTH + message->u.error.length;
	case NOPFS_WIRE_RELEASE:
		return RELEASE_LENGTH;
	case NOPFS_WIRE_RING:
		return RING_LENGTH;
	case NOPFS_WIRE_RING_FD:
		return RING_FD_LENGTH;
	case NOPFS_WIRE_WAIT:
		return WAIT_LENGTH;
	}
	*valid = false;
	return 0;
}

/* Write the payload of @message (payload_length() bytes) at @p. */
static void encode_payload(const struct nopfs_wire_message *message, uint8_t *p)
{
	switch (message->type) {
	case NOPFS_WIRE_HELLO:
		put_u32(p, message->u.hello.pid);
		put_u32(p + 4, (uint32_t)message->u.hello.rank);
		put_u32(p + 8, message->u.hello.flags);
		put_u32(p + 12, message->u.hello.plan);
		break;
	case NOPFS_WIRE_WELCOME:
		put_u32(p, message->u.welcome.node);
		put_u32(p + 4, message->u.welcome.world_size);
		put_u64(p + 8, message->u.welcome.samples);
		put_u32(p + 16, message->u.welcome.flags);
		break;
	case NOPFS_WIRE_OPEN:
	case NOPFS_WIRE_OPEN_VAL:
		put_u32(p, (uint32_t)message->u.open.rank);
		put_u32(p + 4, message->u.open.path_length);
		memcpy(p + 8, message->u.open.path, message->u.open.path_length);
		break;
	case NOPFS_WIRE_GET:
		put_u32(p, (uint32_t)message->u.get.rank);
		put_u32(p + 4, 0);
		put_u64(p + 8, message->u.get.index);
		break;
	case NOPFS_WIRE_SAMPLE:
		put_u64(p, message->u.sample.index);
		put_u64(p + 8, message->u.sample.size);
		put_u64(p + 16, (uint64_t)message->u.sample.label);
		put_u32(p + 24, message->u.sample.source);
		put_u32(p + 28, 0);
		break;
	case NOPFS_WIRE_STATS:
		break;
	case NOPFS_WIRE_STATS_TEXT:
		if (message->u.stats_text.length)
			memcpy(p, message->u.stats_text.text, message->u.stats_text.length);
		break;
	case NOPFS_WIRE_ERROR:
		put_u32(p, (uint32_t)message->u.error.status);
		put_u32(p + 4, message->u.error.length);
		if (message->u.error.length)
			memcpy(p + 8, message->u.error.text, message->u.error.length);
		break;
	case NOPFS_WIRE_RELEASE:
		put_u32(p, (uint32_t)message->u.release.rank);
		put_u32(p + 4, message->u.release.slot);
		put_u64(p + 8, message->u.release.index);
		break;
	case NOPFS_WIRE_RING:
		put_u32(p, (uint32_t)message->u.ring.rank);
		put_u32(p + 4, 0);
		break;
	case NOPFS_WIRE_RING_FD:
		put_u32(p, message->u.ring_fd.slots);
		put_u32(p + 4, 0);
		put_u64(p + 8, message->u.ring_fd.bytes);
		break;
	case NOPFS_WIRE_WAIT:
		put_u64(p, message->u.wait.index);
		break;
	}
}

size_t nopfs_wire_encode(const struct nopfs_wire_message *message, uint8_t *buffer)
{
	bool valid;
	uint32_t length = payload_length(message, &valid);

	if (!valid)
		return 0;
	put_u32(buffer, NOPFS_WIRE_MAGIC);
	put_u16(buffer + 4, NOPFS_WIRE_VERSION);
	put_u16(buffer + 6, (uint16_t)message->type);
	put_u32(buffer + 8, length);
	put_u32(buffer + 12, message->request_id);
	encode_payload(message, buffer + NOPFS_WIRE_HEADER_SIZE);
	return NOPFS_WIRE_HEADER_SIZE + (size_t)length;
}

nopfs_status nopfs_wire_check_header(const uint8_t *header, uint32_t *payload_length_out,
                                     const char **why)
{
	uint32_t length = get_u32(header + 8);
	const char *reason;

	if (get_u32(header) != NOPFS_WIRE_MAGIC) {
		*why = "bad magic (not a nopfs message)";
		return NOPFS_ERR_FORMAT;
	}
	if (get_u16(header + 4) != NOPFS_WIRE_VERSION) {
		*why = "unsupported protocol version";
		return NOPFS_ERR_UNSUPPORTED;
	}
	if (length > NOPFS_WIRE_MAX_PAYLOAD) {
		*why = "payload length over the maximum";
		return NOPFS_ERR_FORMAT;
	}
	if (!length_fits_type(get_u16(header + 6), length, &reason)) {
		*why = reason;
		return NOPFS_ERR_FORMAT;
	}
	*payload_length_out = length;
	return NOPFS_OK;
}

/* Decode a payload whose length already fits its type (length_fits_type()). */
static nopfs_status decode_payload(const uint8_t *p, uint32_t length, struct nopfs_wire_message *m,
                                   const char **why)
{
	switch (m->type) {
	case NOPFS_WIRE_HELLO:
		m->u.hello.pid = get_u32(p);
		m->u.hello.rank = (int32_t)get_u32(p + 4);
		m->u.hello.flags = get_u32(p + 8);
		m->u.hello.plan = get_u32(p + 12);
		return NOPFS_OK;
	case NOPFS_WIRE_WELCOME:
		m->u.welcome.node = get_u32(p);
		m->u.welcome.world_size = get_u32(p + 4);
		m->u.welcome.samples = get_u64(p + 8);
		m->u.welcome.flags = get_u32(p + 16);
		return NOPFS_OK;
	case NOPFS_WIRE_OPEN:
	case NOPFS_WIRE_OPEN_VAL:
		m->u.open.rank = (int32_t)get_u32(p);
		m->u.open.path_length = get_u32(p + 4);
		m->u.open.path = (const char *)p + 8;
		if (m->u.open.path_length != length - OPEN_FIXED_LENGTH) {
			*why = "OPEN path length does not match the payload";
			return NOPFS_ERR_FORMAT;
		}
		if (memchr(m->u.open.path, '\0', m->u.open.path_length)) {
			*why = "OPEN path contains a NUL byte";
			return NOPFS_ERR_FORMAT;
		}
		return NOPFS_OK;
	case NOPFS_WIRE_GET:
		m->u.get.rank = (int32_t)get_u32(p);
		m->u.get.index = get_u64(p + 8);
		if (get_u32(p + 4) != 0) {
			*why = "GET reserved field is not zero";
			return NOPFS_ERR_FORMAT;
		}
		return NOPFS_OK;
	case NOPFS_WIRE_SAMPLE:
		m->u.sample.index = get_u64(p);
		m->u.sample.size = get_u64(p + 8);
		m->u.sample.label = (int64_t)get_u64(p + 16);
		m->u.sample.source = get_u32(p + 24);
		if (get_u32(p + 28) != 0) {
			*why = "SAMPLE reserved field is not zero";
			return NOPFS_ERR_FORMAT;
		}
		if (m->u.sample.source > NOPFS_FROM_PFS) {
			*why = "SAMPLE source is unknown";
			return NOPFS_ERR_FORMAT;
		}
		return NOPFS_OK;
	case NOPFS_WIRE_STATS:
		return NOPFS_OK;
	case NOPFS_WIRE_STATS_TEXT:
		m->u.stats_text.length = length;
		m->u.stats_text.text = (const char *)p;
		if (memchr(p, '\0', length)) {
			*why = "STATS_TEXT contains a NUL byte";
			return NOPFS_ERR_FORMAT;
		}
		return NOPFS_OK;
	case NOPFS_WIRE_ERROR:
		m->u.error.status = (int32_t)get_u32(p);
		m->u.error.length = get_u32(p + 4);
		m->u.error.text = (const char *)p + 8;
		if (m->u.error.length != length - ERROR_FIXED_LENGTH) {
			*why = "ERROR text length does not match the payload";
			return NOPFS_ERR_FORMAT;
		}
		if (m->u.error.status >= 0) {
			*why = "ERROR status is not an error";
			return NOPFS_ERR_FORMAT;
		}
		if (memchr(m->u.error.text, '\0', m->u.error.length)) {
			*why = "ERROR text contains a NUL byte";
			return NOPFS_ERR_FORMAT;
		}
		return NOPFS_OK;
	case NOPFS_WIRE_RELEASE:
		m->u.release.rank = (int32_t)get_u32(p);
		m->u.release.slot = get_u32(p + 4);
		m->u.release.index = get_u64(p + 8);
		return NOPFS_OK;
	case NOPFS_WIRE_RING:
		m->u.ring.rank = (int32_t)get_u32(p);
		if (get_u32(p + 4) != 0) {
			*why = "RING reserved field is not zero";
			return NOPFS_ERR_FORMAT;
		}
		return NOPFS_OK;
	case NOPFS_WIRE_RING_FD:
		m->u.ring_fd.slots = get_u32(p);
		m->u.ring_fd.bytes = get_u64(p + 8);
		if (get_u32(p + 4) != 0) {
			*why = "RING_FD reserved field is not zero";
			return NOPFS_ERR_FORMAT;
		}
		return NOPFS_OK;
	case NOPFS_WIRE_WAIT:
		m->u.wait.index = get_u64(p);
		return NOPFS_OK;
	}
	*why = "unknown message type";
	return NOPFS_ERR_FORMAT;
}

nopfs_status nopfs_wire_decode(const uint8_t *buffer, size_t length,
                               struct nopfs_wire_message *message, const char **why)
{
	struct nopfs_wire_message decoded = { 0 };
	uint32_t declared;
	nopfs_status status;

	if (length < NOPFS_WIRE_HEADER_SIZE) {
		*why = "message shorter than its header";
		return NOPFS_ERR_FORMAT;
	}
	status = nopfs_wire_check_header(buffer, &declared, why);
	if (status != NOPFS_OK)
		return status;
	if (length - NOPFS_WIRE_HEADER_SIZE != declared) {
		*why = length - NOPFS_WIRE_HEADER_SIZE < declared
		               ? "message truncated"
		               : "trailing bytes after the payload";
		return NOPFS_ERR_FORMAT;
	}
	decoded.type = (nopfs_wire_type)get_u16(buffer + 6);
	decoded.request_id = get_u32(buffer + 12);
	status = decode_payload(buffer + NOPFS_WIRE_HEADER_SIZE, declared, &decoded, why);
	if (status != NOPFS_OK)
		return status;
	*message = decoded;
	return NOPFS_OK;
}

/* Write all of @data, the first byte carrying @fd when >= 0. */
static nopfs_status send_all(int socket, const uint8_t *data, size_t length, int fd)
{
	union {
		struct cmsghdr header;
		char space[CMSG_SPACE(sizeof(int))];
	} control;

	while (length > 0) {
		struct iovec iov = { .iov_base = (void *)data, .iov_len = length };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t sent;

		if (fd >= 0) {
			struct cmsghdr *cmsg;

			memset(&control, 0, sizeof(control));
			msg.msg_control = control.space;
			msg.msg_controllen = sizeof(control.space);
			cmsg = CMSG_FIRSTHDR(&msg);
			cmsg->cmsg_level = SOL_SOCKET;
			cmsg->cmsg_type = SCM_RIGHTS;
			cmsg->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
		}
		sent = sendmsg(socket, &msg, MSG_NOSIGNAL);
		if (sent < 0) {
			if (errno == EINTR)
				continue;
			return NOPFS_ERR_IO;
		}
		/* The descriptor went with the first bytes. */
		fd = -1;
		data += sent;
		length -= (size_t)sent;
	}
	return NOPFS_OK;
}

nopfs_status nopfs_wire_send(int socket, const struct nopfs_wire_message *message, int fd)
{
	uint8_t stack[SEND_STACK_SIZE];
	uint8_t *buffer = stack;
	bool valid;
	size_t length = NOPFS_WIRE_HEADER_SIZE + payload_length(message, &valid);
	nopfs_status status;

	if (!valid) {
		errno = EINVAL;
		return NOPFS_ERR_INVALID;
	}
	if (length > sizeof(stack)) {
		buffer = malloc(length);
		if (!buffer)
			return NOPFS_ERR_NOMEM;
	}
	nopfs_wire_encode(message, buffer);
	status = send_all(socket, buffer, length, fd);
	if (buffer != stack) {
		int saved_errno = errno;

		free(buffer);
		errno = saved_errno;
	}
	return status;
}

/* Wait until @socket is readable or @deadline (ms, < 0: never) passes. */
static nopfs_status wait_readable(int socket, int64_t deadline)
{
	for (;;) {
		struct pollfd pfd = { .fd = socket, .events = POLLIN };
		int timeout = -1;
		int ready;

		if (deadline >= 0) {
			int64_t left = deadline - nopfs_clock_now_ms();

			timeout = left > 0 ? (int)(left < INT32_MAX ? left : INT32_MAX) : 0;
		}
		ready = poll(&pfd, 1, timeout);
		if (ready > 0)
			return NOPFS_OK;
		if (ready == 0) {
			errno = ETIMEDOUT;
			return NOPFS_ERR_TIMEOUT;
		}
		if (errno != EINTR)
			return NOPFS_ERR_IO;
	}
}

/* Keep the first descriptor of a control message in *kept, close the rest. */
static void collect_fds(struct msghdr *msg, int *kept)
{
	for (struct cmsghdr *cmsg = CMSG_FIRSTHDR(msg); cmsg; cmsg = CMSG_NXTHDR(msg, cmsg)) {
		size_t count;

		if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS)
			continue;
		count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < count; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
			if (*kept < 0)
				*kept = fd;
			else
				close(fd);
		}
	}
}

/*
 * Read exactly @length bytes into @data by @deadline, collecting a passed
 * descriptor into *fd. Never reads past @length: the next message stays queued.
 */
static nopfs_status receive_exact(int socket, uint8_t *data, size_t length, int *fd,
                                  int64_t deadline, const char **why)
{
	union {
		struct cmsghdr header;
		char space[CMSG_SPACE(RECEIVE_MAX_FDS * sizeof(int))];
	} control;
	size_t done = 0;

	while (done < length) {
		struct iovec iov = { .iov_base = data + done, .iov_len = length - done };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
		nopfs_status status;
		ssize_t got;

		status = wait_readable(socket, deadline);
		if (status != NOPFS_OK) {
			*why = status == NOPFS_ERR_TIMEOUT ? "no reply before the deadline"
			                                   : "poll on the socket failed";
			return status;
		}
		msg.msg_control = control.space;
		msg.msg_controllen = sizeof(control.space);
		got = recvmsg(socket, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (got < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			*why = "receive failed";
			return NOPFS_ERR_IO;
		}
		collect_fds(&msg, fd);
		if (got == 0) {
			errno = 0;
			*why = done ? "peer closed the connection in the middle of a message"
			            : "peer closed the connection";
			return NOPFS_ERR_IO;
		}
		done += (size_t)got;
	}
	return NOPFS_OK;
}

nopfs_status nopfs_wire_receive(int socket, uint8_t *buffer, struct nopfs_wire_message *message,
                                int *fd, int timeout_ms, const char **why)
{
	int64_t deadline = timeout_ms < 0 ? -1 : nopfs_clock_now_ms() + timeout_ms;
	int passed = -1;
	uint32_t length;
	nopfs_status status;

	status = receive_exact(socket, buffer, NOPFS_WIRE_HEADER_SIZE, &passed, deadline, why);
	if (status != NOPFS_OK)
		goto out_close_fd;
	status = nopfs_wire_check_header(buffer, &length, why);
	if (status != NOPFS_OK)
		goto out_close_fd;
	status = receive_exact(socket, buffer + NOPFS_WIRE_HEADER_SIZE, length, &passed, deadline,
	                       why);
	if (status != NOPFS_OK)
		goto out_close_fd;
	status = nopfs_wire_decode(buffer, NOPFS_WIRE_HEADER_SIZE + (size_t)length, message, why);
	if (status != NOPFS_OK)
		goto out_close_fd;
	if (fd)
		*fd = passed;
	else if (passed >= 0)
		close(passed);
	return NOPFS_OK;

out_close_fd:
	if (passed >= 0) {
		int saved_errno = errno;

		close(passed);
		errno = saved_errno;
	}
	return status;
}
