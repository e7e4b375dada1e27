/*
 * A task's connection to its node's agent, shared by the C API (client.c)
 * and the interposer (preload.c): connect and handshake, one call at a
 * time, back-off after the agent fails (docs/protocols.md). Plain data (no
 * allocation, no logging), not thread-safe, never shared between processes.
 */
#ifndef NOPFS_CHANNEL_H
#define NOPFS_CHANNEL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/status.h"
#include "wire.h"

#define NOPFS_CHANNEL_PATH_MAX 108 /* sizeof(sockaddr_un.sun_path) */
/* WAITs taken for one request: about 10 minutes, past the agent's own limit */
#define NOPFS_WAIT_MAX 600

struct nopfs_channel {
	char socket_path[NOPFS_CHANNEL_PATH_MAX];
	int32_t rank;
	uint32_t flags; /* NOPFS_WIRE_FLAG_* sent in HELLO */
	uint32_t plan;  /* sent in HELLO: nopfs_env_plan() */
	int timeout_ms; /* per request */
	int socket;     /* -1 when not connected */
	pid_t pid;      /* the process that connected it */
	dev_t device;   /* identity of the socket, to notice the */
	ino_t inode;    /*   descriptor being closed or reused under us */
	uint32_t next_request_id;
	uint32_t failures;   /* consecutive transport failures */
	int64_t retry_at_ms; /* CLOCK_MONOTONIC; no attempt before this */
	uint32_t node;       /* from WELCOME */
	uint32_t world_size;
	uint64_t samples;
	uint32_t agent_flags; /* NOPFS_WIRE_FLAG_* the agent's WELCOME announced */
	/* Replies are decoded here; their strings stay valid until the next call. */
	uint8_t buffer[NOPFS_WIRE_HEADER_SIZE + NOPFS_WIRE_MAX_PAYLOAD];
};

/*
 * Set up @channel (not connected) for the agent at @socket_path. false when
 * the path is empty or does not fit a Unix socket address.
 */
bool nopfs_channel_init(struct nopfs_channel *channel, const char *socket_path, int32_t rank,
                        uint32_t flags, int timeout_ms);

/*
 * Connect now, whatever the back-off, and exchange HELLO/WELCOME. NOPFS_OK,
 * or NOPFS_ERR_IO / NOPFS_ERR_TIMEOUT / NOPFS_ERR_FORMAT with @why (static
 * text; errno kept for NOPFS_ERR_IO) after which the channel backs off.
 * NOPFS_ERR_PERMISSION when it is not this user's agent: the socket's
 * directory is not private, or the listening process does not run as this
 * user with the pid of the "ready" file beside the socket (or the agent
 * refused the connection).
 */
nopfs_status nopfs_channel_connect(struct nopfs_channel *channel, const char **why);

/*
 * Send @request (its request id is assigned here) and wait up to the
 * channel's timeout for the reply with the same id (each WAIT the agent
 * sends under that id restarts the timeout, NOPFS_WAIT_MAX times at most:
 * the sample is being fetched), into *reply, with a
 * passed descriptor in *fd (or -1; the caller owns it). Connects first when
 * needed and the back-off allows (else NOPFS_ERR_UNSUPPORTED, "backing off").
 * A reply that is not one of @expected or ERROR is malformed. On a transport
 * failure the channel is closed and backs off; an ERROR reply is a success
 * of the call (the caller reads reply->u.error).
 */
nopfs_status nopfs_channel_call(struct nopfs_channel *channel, struct nopfs_wire_message *request,
                                nopfs_wire_type expected, struct nopfs_wire_message *reply, int *fd,
                                const char **why);

/*
 * Send @message, which has no reply, on the current connection only (a
 * notification makes no sense on a new one): NOPFS_ERR_UNSUPPORTED when not
 * connected in this process.
 */
nopfs_status nopfs_channel_notify(struct nopfs_channel *channel,
                                  struct nopfs_wire_message *message);

/* Close the connection after a failure the caller found, and back off. */
void nopfs_channel_fail(struct nopfs_channel *channel);

/* Close the connection (if this process owns it) without backing off. */
void nopfs_channel_close(struct nopfs_channel *channel);

/*
 * In a child just forked: close the inherited socket (the parent keeps its
 * own) so the child connects on its own. Async-signal-safe.
 */
void nopfs_channel_forget(struct nopfs_channel *channel);

#endif
