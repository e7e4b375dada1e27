/*
 * The data plane between the agents of a job, over UCX: requests for
 * samples kept elsewhere, one-sided reads of the peers' RAM tiers (only over
 * hardware RDMA), notices about plans. Every message is authenticated with a
 * key derived from the job's secret; what does not verify is dropped. Every
 * remote operation has a deadline; past it, or on any error, the caller
 * reads the PFS. Protocol: docs/protocols.md; threats: docs/security.md.
 * Threads: get, fetch, connect and stats may be called concurrently from any
 * threads; destroy only once they have all returned.
 */
#ifndef NOPFS_AGENT_PEER_H
#define NOPFS_AGENT_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "common/status.h"

struct peer_plane;

/*
 * Answer a peer's request for @sample: copy its bytes into @buffer (room for
 * @size bytes) and return NOPFS_OK; NOPFS_ERR_AGAIN when this agent keeps
 * the sample but has not fetched it yet (the plane then answers later, from
 * a thread of its own, through the fill callback); NOPFS_ERR_NOT_FOUND when
 * it does not keep it. Called from the progress thread: must not block for
 * long (the plane answers nothing else meanwhile) and must not call
 * peer_plane_*() functions. Also called from the stream path's threads,
 * several at once. A request whose sample number does not fit a
 * nopfs_sample_id is answered "not available" without calling it.
 */
typedef nopfs_status (*peer_serve_fn)(void *arg, nopfs_sample_id sample, void *buffer,
                                      uint64_t size);

/*
 * The stream path's serve, a part at a time: copy @length bytes at @offset
 * of @sample (@size bytes in all) into @buffer and set *@plan to the plan
 * they are of (any number that changes with the agent's plans); returns as
 * serve does. The stream path sends a sample only if all its parts came from
 * one plan. Called from the stream path's threads, several at once.
 */
typedef nopfs_status (*peer_serve_range_fn)(void *arg, nopfs_sample_id sample, uint64_t size,
                                            uint64_t offset, void *buffer, uint64_t length,
                                            uint64_t *plan);

/*
 * What serve_view hands its bytes to, where they are; it does not block.
 * The view returns what it returned.
 */
typedef nopfs_status (*peer_take_fn)(void *take_arg, const void *bytes, size_t length);

/*
 * The stream path's serve without a copy (with serve_range): while @length
 * bytes at @offset of @sample (@size bytes in all) stay where they are (a
 * RAM tier, under the agent's lock), set *@plan as serve_range does, then
 * call @take with them once and return what it returned.
 * NOPFS_ERR_UNSUPPORTED when they are not in memory (serve_range reads
 * them then); otherwise returns as serve does.
 */
typedef nopfs_status (*peer_serve_view_fn)(void *arg, nopfs_sample_id sample, uint64_t size,
                                           uint64_t offset, uint64_t length, uint64_t *plan,
                                           peer_take_fn take, void *take_arg);

/*
 * Fetch @sample, which serve said this agent keeps but does not have yet,
 * and copy its @size bytes into @buffer (e.g. read it from the PFS into the
 * tier that keeps it). May block until @deadline_ns (CLOCK_MONOTONIC ns),
 * then must fail: the asker is answered "not available" while it still
 * waits, and reads the sample itself without giving up on this node. Called
 * from the plane's answering thread.
 */
typedef nopfs_status (*peer_fill_fn)(void *arg, nopfs_sample_id sample, void *buffer, uint64_t size,
                                     uint64_t deadline_ns);

/*
 * A notice from the agent of node @sender (see peer_plane_notify()): @kind,
 * @generation and @length bytes of @payload, valid during the call only.
 * Called from the progress thread: must copy what it keeps and return.
 */
typedef void (*peer_notice_fn)(void *arg, uint32_t sender, uint32_t kind, uint32_t generation,
                               const void *payload, size_t length);

/* The job's secret: node 0 makes it, PMIx (or a test's pipe) carries it. */
#define PEER_SECRET_BYTES 32

/* Fill @secret with fresh random bytes (getrandom); logs why not. */
nopfs_status peer_secret_generate(unsigned char secret[PEER_SECRET_BYTES]);

/*
 * Whether peers may read the RAM tier with one-sided gets. Only hardware
 * RDMA checks the remote key and bounds of a read: UCX's software emulation
 * (TCP, ...) serves any address of the process to anyone connected, so
 * there the plane registers nothing and answers requests only.
 */
enum peer_one_sided {
	PEER_ONE_SIDED_RDMA = 0, /* when UCX_TLS names only verbs RDMA transports */
	PEER_ONE_SIDED_NEVER,
	PEER_ONE_SIDED_EMULATED, /* whatever the transport: tests and benchmarks only */
};

/*
 * Whether fetches go over the stream path: the kernel's TCP between the
 * agents, every message and every chunk of a sample authenticated, rather
 * than UCX's TCP transport, which copies each byte twice more. Requests and
 * notices to a node without one still go through UCX.
 */
enum peer_stream {
	PEER_STREAM_AUTO = 0, /* where one-sided reads are off (UCX over TCP, ...) */
	PEER_STREAM_OFF,
	PEER_STREAM_ON,
};

struct peer_config {
	uint32_t node;                           /* this agent's node index, for messages */
	unsigned char secret[PEER_SECRET_BYTES]; /* the job's; all zero is refused */
	enum peer_one_sided one_sided;
	enum peer_stream stream;
	/* Requests are refused, without allocating, past these (0: none; 1 GiB). */
	uint64_t max_samples;     /* sample numbers are below this */
	uint64_t max_sample_size; /* bytes of one sample */
	void *ram_base;           /* RAM tier arena to expose; may be NULL */
	size_t ram_bytes;
	void *state_base; /* per-sample state bytes of that tier; may be NULL */
	size_t state_bytes;
	uint8_t present_value; /* a state byte equal to this means "present" */
	/* tests only: called between a get's bytes and its second look at the state */
	void (*between_gets)(void *arg);
	void *between_gets_arg;
	peer_serve_fn serve;             /* for requests; may be NULL (answers "not available") */
	peer_serve_range_fn serve_range; /* the stream path's; NULL: serve */
	peer_serve_view_fn serve_view;   /* the stream path's, with serve_range; may be NULL */
	peer_fill_fn fill;               /* for serve's NOPFS_ERR_AGAIN; NULL: "not available" */
	peer_notice_fn notice;           /* for notices; may be NULL (dropped) */
	/*
	 * Notices of kind @origin_kind (0: none) are taken from node 0 only,
	 * and only up to @origin_max bytes: node 0 alone announces where the
	 * shared catalog is, and a path is short.
	 */
	uint32_t origin_kind;
	size_t origin_max;
	void *serve_arg; /* of the callbacks */
	int timeout_ms;  /* deadline of every remote operation, > 0 */
	/*
	 * Plus the operation's bytes at this rate (bytes/s; 0: nothing more): a
	 * large sample the holder first reads from a contended PFS takes longer.
	 */
	double slow_bytes_per_s;
};

/* An operation's deadline in ms from now: timeout_ms plus @size at the slow rate. */
int peer_deadline_ms(const struct peer_config *config, uint64_t size);

/*
 * What one agent publishes so that others can reach it (opaque bytes). A
 * region is exposed (has a key) if and only if its length is not zero; a
 * plane without one-sided reads exposes none.
 */
struct peer_record {
	void *address; /* UCX worker address */
	size_t address_length;
	void *ram_key; /* packed remote key of the RAM arena (NULL if none) */
	size_t ram_key_length;
	void *state_key; /* packed remote key of the state array (NULL if none) */
	size_t state_key_length;
	uint64_t ram_base; /* remote virtual addresses of the regions */
	uint64_t state_base;
	uint64_t ram_bytes; /* their lengths: reads are checked against them */
	uint64_t state_bytes;
	/*
	 * Where its stream path listens (PEER_STREAM_ADDRESS_BYTES each: IPv4
	 * address and port, network order); NULL/0 when it has none.
	 */
	void *stream;
	size_t stream_length;
};

#define PEER_STREAM_ADDRESS_BYTES 6
#define PEER_STREAM_ADDRESSES_MAX 8

/* Statistics of the plane, for the report. */
struct peer_stats {
	uint64_t gets, get_bytes;         /* successful one-sided reads of samples */
	uint64_t not_present;             /* remote state said absent: PFS instead */
	uint64_t requests, request_bytes; /* successful request/response fetches */
	uint64_t stream_requests;         /* of which over the stream path */
	uint64_t not_available;           /* a peer answered "not available" */
	uint64_t timeouts, errors;        /* operations abandoned */
	uint64_t served, served_bytes;    /* requests this agent answered with bytes */
	uint64_t refused;                 /* requests outside the bounds */
	uint64_t dropped;                 /* messages that did not authenticate */
};

/*
 * Create the plane: UCX context, worker, registrations, progress thread.
 * UCX reads its UCX_* environment variables here; TCP connections are made
 * without blocking unless UCX_TCP_CONN_NB says otherwise. On failure, logs
 * why and leaves *@out unchanged.
 */
nopfs_status peer_plane_create(const struct peer_config *config, struct peer_plane **out);

/* This agent's record (owned by the plane, valid until destroy). */
const struct peer_record *peer_plane_local_record(struct peer_plane *plane);

/*
 * Connect to @node described by @record (copied): endpoint, unpacked keys.
 * Nodes are numbered 0..nodes-1; connecting to oneself is allowed and unused.
 * Connecting again to a node replaces its record and connection.
 */
nopfs_status peer_plane_connect(struct peer_plane *plane, uint32_t node,
                                const struct peer_record *record);

/* Whether @node was connected (a plane never reaches the nodes it was not). */
bool peer_plane_connected(struct peer_plane *plane, uint32_t node);

/*
 * Whether @node looks gone: a connection to it failed or timed out, and no
 * operation on it has succeeded since.
 */
bool peer_plane_lost(struct peer_plane *plane, uint32_t node);

/*
 * Read sample bytes from @node's RAM tier: first the state byte at
 * @state_offset; if it is the present value, @size bytes at @data_offset into
 * @dest. NOPFS_ERR_NOT_FOUND when not present (nothing copied),
 * NOPFS_ERR_TIMEOUT past the deadline, NOPFS_ERR_IO on a transport error or
 * while the node is down, NOPFS_ERR_RANGE when the offsets fall outside the
 * node's regions, NOPFS_ERR_INVALID for a node never connected,
 * NOPFS_ERR_UNSUPPORTED (not logged, not counted) when the node exposes no
 * region: ask it with peer_plane_fetch(). @dest is written only on success,
 * and never after the call returned (UCX writes into a buffer of the
 * operation's own, copied to @dest at the end).
 */
nopfs_status peer_plane_get(struct peer_plane *plane, uint32_t node, uint64_t state_offset,
                            uint64_t data_offset, void *dest, uint64_t size);

/*
 * Ask @node for @sample (@size bytes into @dest); NOPFS_ERR_NOT_FOUND when it
 * answers "not available", other errors as peer_plane_get().
 */
nopfs_status peer_plane_fetch(struct peer_plane *plane, uint32_t node, nopfs_sample_id sample,
                              void *dest, uint64_t size);

void peer_plane_stats(struct peer_plane *plane, struct peer_stats *stats);

/*
 * Plans. Sample numbers mean something within one plan (generation) only: a
 * fetch carries the asker's generation and is answered "not available" by a
 * node whose generation differs (PEER_NO_GENERATION: any), without calling
 * serve. Every plane starts at generation 0.
 */
#define PEER_NO_GENERATION UINT32_MAX
void peer_plane_set_generation(struct peer_plane *plane, uint32_t generation);

/* The bounds of requests for a new plan (as max_samples, max_sample_size). */
void peer_plane_set_bounds(struct peer_plane *plane, uint64_t max_samples,
                           uint64_t max_sample_size);

/*
 * Expose other regions than the current ones (same rules as in the config;
 * NULL/0: none) and rebuild this agent's record; the previous regions are no
 * longer registered. Not concurrently with gets on this plane's own record
 * (peers' gets on the previous regions fail or read what is left there).
 */
nopfs_status peer_plane_expose(struct peer_plane *plane, void *ram_base, size_t ram_bytes,
                               void *state_base, size_t state_bytes);

/*
 * Send a notice (@kind, @generation, @length bytes of @payload, at most
 * PEER_NOTICE_MAX) to every connected node but this one, without waiting
 * for delivery. Returns how many were sent. A receiver hands a notice to its
 * callback only once it authenticated it as from the node it names.
 */
#define PEER_NOTICE_MAX 65536
uint32_t peer_plane_notify(struct peer_plane *plane, uint32_t kind, uint32_t generation,
                           const void *payload, size_t length);

/* Stop the progress thread, close endpoints, release everything. */
void peer_plane_destroy(struct peer_plane *plane);

/*
 * Serialize a record into one buffer (malloc'd, caller frees) for PMIx, and
 * back (the parsed record points into @buffer, which must outlive it).
 * Unpack rejects (NOPFS_ERR_FORMAT) any buffer whose lengths do not add up;
 * output parameters are set only on success.
 */
nopfs_status peer_record_pack(const struct peer_record *record, void **buffer, size_t *length);
nopfs_status peer_record_unpack(const void *buffer, size_t length, struct peer_record *record);

#endif
