/*
 * nopfs.h: the C API of nopfs for training code that wants its samples
 * zero-copy from the node's agent instead of opening files.
 *
 *	struct nopfs_client *client;
 *	struct nopfs_sample sample;
 *
 *	nopfs_client_connect(NULL, -1, &client);    // socket from $NOPFS_SOCKET
 *	nopfs_client_get(client, index, &sample);   // sample.data, sample.size, sample.label
 *	... use sample.data (read-only) ...
 *	nopfs_client_release(client, &sample);
 *	nopfs_client_disconnect(client);
 *
 * A sample is a read-only view of a node-local copy mapped into the caller
 * (no copy is made); it stays valid until released, even if the agent exits.
 * When the agent cannot serve a sample (gone, too slow, not staged and
 * unreachable), the API reads it from the PFS itself, so get() fails only
 * when the sample cannot be read at all. Functions return a nopfs_status
 * (0 on success, negative on error; nopfs_status_string() describes it).
 * A client is not thread-safe: use one per thread, or lock around it. After
 * fork(), the child must connect its own client (a client used in a child
 * anyway connects again rather than share the parent's socket).
 *
 * Where samples come from, in order: the staging directory ($NOPFS_STAGE_DIR,
 * "i<index>", no round trip; needs the staging index for the label), the
 * agent (GET, waiting at most $NOPFS_TIMEOUT_MS, default 10 s), the PFS
 * ($NOPFS_DATASET and the path in the staging index). After the agent fails
 * (timeout, dead, nonsense) it is left alone for 1 s, doubling up to 30 s.
 * The PFS fallback is unavailable when the staging index is absent or
 * invalid (get() then fails with NOPFS_ERR_UNSUPPORTED when the agent cannot
 * serve). Errors are logged on stderr ("nopfs: ...").
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
 * when it refuses): callers then read their data some other way.
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
