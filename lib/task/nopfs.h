/*
 * nopfs.h: the C API of nopfs, for training code that wants its samples
 * zero-copy from the node's agent (or, when it cannot serve, the PFS):
 *
 *	nopfs_client_connect(NULL, -1, &client);    // socket from $NOPFS_SOCKET
 *	nopfs_client_get(client, index, &sample);   // sample.data, sample.size, sample.label
 *	nopfs_client_release(client, &sample);
 *	nopfs_client_disconnect(client);
 *
 * Functions return a nopfs_status (0, or negative). A client is not
 * thread-safe. Where samples come from: docs/task-contract.md.
 */
#ifndef NOPFS_H
#define NOPFS_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct nopfs_client;

struct nopfs_sample {
	const void *data; /* size bytes, read-only; NULL when size is 0 */
	uint64_t size;
	int64_t label; /* the class index (imagefolder) or the list's label */
	uint64_t index;
	uint32_t source; /* nopfs_wire_source: staging, RAM, SSD, peer, PFS */
	/* Private to the API. */
	void *mapping;
	size_t mapping_length;
	uint32_t ring_slot; /* slot + 1 in the rank's staging ring, 0 for none */
};

/*
 * Connect to the agent at @socket_path (NULL: $NOPFS_SOCKET) as @rank (-1:
 * from $NOPFS_RANK, $RANK or $SLURM_PROCID). On success *out owns a client
 * (free with nopfs_client_disconnect()). Fails with NOPFS_ERR_NOT_FOUND when
 * no agent is configured, NOPFS_ERR_IO or NOPFS_ERR_TIMEOUT when it does not
 * answer (NOPFS_ERR_FORMAT when it answers nonsense, NOPFS_ERR_PERMISSION
 * when it refuses, or when it is not this user's agent: the socket's
 * directory is not private, or the process behind the socket is not of this
 * user or not the one in the "ready" file beside it): callers then read
 * their data some other way.
 * NOPFS_ERR_INVALID for a rank below -1 or a socket path too long.
 */
nopfs_status nopfs_client_connect(const char *socket_path, int rank, struct nopfs_client **out);

/* Close the connection and free the client; samples not released stay valid. */
void nopfs_client_disconnect(struct nopfs_client *client);

/* Number of samples of the dataset the agent serves. */
uint64_t nopfs_client_sample_count(const struct nopfs_client *client);

/*
 * Get sample @index as a zero-copy view in *sample (set only on success).
 * The caller owns the view and must nopfs_client_release() it.
 * NOPFS_ERR_RANGE when @index is not below nopfs_client_sample_count().
 */
nopfs_status nopfs_client_get(struct nopfs_client *client, uint64_t index,
                              struct nopfs_sample *sample);

/* Release a view obtained from nopfs_client_get(); @sample is cleared. */
void nopfs_client_release(struct nopfs_client *client, struct nopfs_sample *sample);

/*
 * The agent's live statistics as JSON text in *json (malloc'd, caller frees).
 */
nopfs_status nopfs_client_stats(struct nopfs_client *client, char **json);

#ifdef __cplusplus
}
#endif

#endif
