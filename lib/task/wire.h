/*
 * The wire protocol between a task (interposer, C API) and its node's agent
 * over the agent's Unix stream socket: a 16-byte little-endian header
 * (magic "NPFS", version, type, payload length, request id) and a payload
 * of fixed layout per type. Messages, fields and errors: docs/protocols.md.
 * Sample indices travel as u64; a receiver checks one against the sample
 * count before taking it as a nopfs_sample_id (catalog/catalog.h).
 */
#ifndef NOPFS_WIRE_H
#define NOPFS_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

#define NOPFS_WIRE_MAGIC       0x5346504eu /* "NPFS" */
#define NOPFS_WIRE_VERSION     1
#define NOPFS_WIRE_HEADER_SIZE 16
#define NOPFS_WIRE_MAX_PAYLOAD 65536
#define NOPFS_WIRE_PATH_MAX    4096

typedef enum nopfs_wire_type {
	NOPFS_WIRE_HELLO = 1,
	NOPFS_WIRE_WELCOME = 2,
	NOPFS_WIRE_OPEN = 3,
	NOPFS_WIRE_GET = 4,
	NOPFS_WIRE_SAMPLE = 5,
	NOPFS_WIRE_STATS = 6,
	NOPFS_WIRE_STATS_TEXT = 7,
	NOPFS_WIRE_ERROR = 8,
	NOPFS_WIRE_RELEASE = 9,
	NOPFS_WIRE_RING = 10,
	NOPFS_WIRE_RING_FD = 11,
	/* OPEN's layout, for a path under the validation set's root (NOPFS_VAL_DATASET) */
	NOPFS_WIRE_OPEN_VAL = 12,
	/* agent to task, under a request's id: still fetching it, keep waiting */
	NOPFS_WIRE_WAIT = 13,
} nopfs_wire_type;

/* Where a served copy came from (SAMPLE.source, and the report's keys). */
typedef enum nopfs_wire_source {
	NOPFS_FROM_STAGING = 0, /* already staged when asked */
	NOPFS_FROM_RAM = 1,
	NOPFS_FROM_SSD = 2,
	NOPFS_FROM_PEER = 3,
	NOPFS_FROM_PFS = 4,
} nopfs_wire_source;

/* HELLO names the client kind; in WELCOME, RING: the agent stages into rings on request. */
#define NOPFS_WIRE_FLAG_INTERPOSER 0x1u
#define NOPFS_WIRE_FLAG_API        0x2u
#define NOPFS_WIRE_FLAG_RING       0x4u
/* In HELLO: the task takes WAIT while a request is being fetched. */
#define NOPFS_WIRE_FLAG_WAIT 0x8u

/* HELLO.plan of a task that does not know the plan its step was planned under. */
#define NOPFS_WIRE_NO_PLAN UINT32_MAX

/* A decoded message. Strings point into the caller's payload buffer. */
struct nopfs_wire_message {
	nopfs_wire_type type;
	uint32_t request_id;
	union {
		struct {
			uint32_t pid;
			int32_t rank;
			uint32_t flags;
			uint32_t plan; /* the agents' plan generation of its step, or NO_PLAN */
		} hello;
		struct {
			uint32_t node;
			uint32_t world_size;
			uint64_t samples;
			uint32_t flags;
		} welcome;
		struct {
			int32_t rank;
			uint32_t path_length;
			const char *path; /* not NUL-terminated */
		} open;
		struct {
			int32_t rank;
			uint64_t index;
		} get;
		struct {
			uint64_t index;
			uint64_t size;
			int64_t label;
			uint32_t source;
		} sample;
		struct {
			uint32_t length;
			const char *text;
		} stats_text;
		struct {
			int32_t rank;
			uint32_t slot;
			uint64_t index;
		} release;
		struct {
			int32_t rank;
		} ring;
		struct {
			uint32_t slots;
			uint64_t bytes;
		} ring_fd;
		struct {
			uint64_t index; /* the sample being fetched */
		} wait;
		struct {
			int32_t status;
			uint32_t length;
			const char *text;
		} error;
	} u;
};

/*
 * Encode @message into @buffer (at least NOPFS_WIRE_HEADER_SIZE +
 * NOPFS_WIRE_MAX_PAYLOAD bytes); returns the total length, or 0 when it
 * cannot be encoded: unknown type, a string too long for its type, an empty
 * path, a NUL in a string.
 */
size_t nopfs_wire_encode(const struct nopfs_wire_message *message, uint8_t *buffer);

/*
 * Check a received header: NOPFS_OK and *payload_length, or NOPFS_ERR_FORMAT
 * (bad magic, unknown type, oversized) or NOPFS_ERR_UNSUPPORTED (another
 * version), with a reason in @why (static text).
 */
nopfs_status nopfs_wire_check_header(const uint8_t *header, uint32_t *payload_length,
                                     const char **why);

/*
 * Decode a complete message (header + payload of @length bytes) into
 * @message. NOPFS_ERR_FORMAT with a reason in @why when the payload does not
 * have its type's layout (wrong length, path length past the end, a path with
 * a NUL, ...). Logs nothing: the caller knows who sent it.
 */
nopfs_status nopfs_wire_decode(const uint8_t *buffer, size_t length,
                               struct nopfs_wire_message *message, const char **why);

/*
 * Send one message and, when @fd >= 0, one file descriptor with it (the
 * caller keeps its own). Retries on EINTR and short writes; never raises
 * SIGPIPE. Waits while the socket is full, at most its SO_SNDTIMEO.
 * NOPFS_ERR_IO on failure (errno kept), NOPFS_ERR_INVALID (nothing sent) when
 * the message cannot be encoded. After a failed send or receive the stream
 * is out of step: close the connection.
 */
nopfs_status nopfs_wire_send(int socket, const struct nopfs_wire_message *message, int fd);

/*
 * Receive one message into @buffer (NOPFS_WIRE_HEADER_SIZE +
 * NOPFS_WIRE_MAX_PAYLOAD bytes) and decode it. *fd (may be NULL) receives a
 * passed file descriptor, close-on-exec, or -1 (extra descriptors are
 * closed; all are closed on failure, when *fd is left alone). @timeout_ms is
 * for the whole message; < 0 waits forever. Never reads past the message.
 * NOPFS_ERR_TIMEOUT, NOPFS_ERR_IO (peer gone: errno ECONNRESET or 0 for EOF),
 * NOPFS_ERR_FORMAT / NOPFS_ERR_UNSUPPORTED, each with @why set.
 */
nopfs_status nopfs_wire_receive(int socket, uint8_t *buffer, struct nopfs_wire_message *message,
                                int *fd, int timeout_ms, const char **why);

#endif
