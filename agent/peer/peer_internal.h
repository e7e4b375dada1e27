/*
 * Internals of the data plane (peer.h), shared by its files:
 *   peer.c         the plane: UCX context, worker, handlers, progress thread
 *   peer_regions.c the regions this node exposes and its record
 *   peer_node.c    the nodes: connections (endpoint and keys), failures, hold-off
 *   peer_op.c      one remote operation: its UCX requests, deadline, abort
 *   peer_get.c     one-sided reads of a node's RAM tier
 *   peer_fetch.c   request/response: the asking side
 *   peer_pending.c the fetches awaiting their response
 *   peer_serve.c   request/response: the answering side
 *   peer_notice.c  plans: the generation, new regions, notices between agents
 *   peer_record.c  the published record, packed and unpacked
 *   peer_stream.c  fetches over the kernel's TCP: both sides, connections
 * Threads and lock order: docs/protocols.md.
 */
#ifndef NOPFS_AGENT_PEER_INTERNAL_H
#define NOPFS_AGENT_PEER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <netinet/in.h>
#include <openssl/evp.h>
#include <ucp/api/ucp.h>

#include "peer.h"

enum peer_am_id {
	PEER_AM_REQUEST = 1,  /* asker -> owner: struct peer_request, no data */
	PEER_AM_RESPONSE = 2, /* owner -> asker: struct peer_response, the bytes */
	PEER_AM_NOTICE = 3,   /* any -> any: struct peer_notice, its payload */
	/* the stream path's own (never active messages) */
	PEER_STREAM_HELLO = 4,    /* both ways, first: struct peer_hello */
	PEER_STREAM_RESPONSE = 5, /* owner -> asker: struct peer_response, then chunks */
};

#define PEER_MAGIC     0x3246504eu /* "NPF2" read as little endian */
#define PEER_TAG_BYTES 16

/*
 * What every active-message header starts with. The agents of a job run the
 * same build, so headers travel in host order. @tag authenticates the whole
 * header (this and what follows, @tag left out), @payload_tag the payload;
 * both are ChaCha20-Poly1305 tags (a MAC) with the job's key, under the nonces (@node, @seq)
 * and (@node, @seq | 2^63): a sender's @seq grows by one a message from a
 * random start below 2^62, so no nonce repeats. The receiver drops what does
 * not verify, or repeats a (@node, @seq) it saw, before looking at anything
 * else (peer_auth.c).
 */
struct peer_auth {
	uint32_t magic;
	uint16_t kind; /* enum peer_am_id: a header is not valid as another kind */
	uint16_t unused;
	uint32_t node;       /* the sender's */
	uint32_t generation; /* the plan the message is about */
	uint64_t seq;
	uint64_t length; /* of the payload */
	unsigned char payload_tag[PEER_TAG_BYTES];
	unsigned char tag[PEER_TAG_BYTES];
};

struct peer_request {
	struct peer_auth auth; /* generation: the asker's plan, whose sample numbers these are */
	uint32_t asker;        /* the asking agent's node, as authenticated */
	uint32_t unused;
	uint64_t id;     /* echoed in the response */
	uint64_t sample; /* a nopfs_sample_id, checked by the answering side */
	uint64_t size;
};

struct peer_notice {
	struct peer_auth auth; /* generation: the notice's */
	uint32_t sender;       /* the sending agent's node, as authenticated */
	uint32_t kind;         /* the agent's, opaque to the plane */
};

/* Who is at each end of a stream connection: the first message both ways. */
struct peer_hello {
	struct peer_auth auth; /* generation: unused (0) */
	uint32_t asker;        /* the connecting agent's node */
	uint32_t owner;        /* the node it means to reach */
};

enum peer_answer {
	PEER_ANSWER_BYTES = 0,         /* the data are the sample's bytes */
	PEER_ANSWER_NOT_AVAILABLE = 1, /* no data */
};

struct peer_response {
	struct peer_auth auth; /* generation: the request's */
	uint64_t id;
	uint32_t answer; /* enum peer_answer */
	uint32_t owner;  /* the answering agent's node, as authenticated */
	uint32_t asker;  /* the node whose request this answers */
	uint32_t unused;
};

/*
 * A connection to a node: an endpoint and the remote keys unpacked on it.
 * Referenced by the node while current and by every operation using it; the
 * last reference destroys the keys (after the endpoint was closed: the keys
 * of UCX 1.13 hold no reference to their endpoint, and operations still
 * using them must complete first).
 */
/*
 * The remote keys of a node's regions, unpacked on a connection's endpoint,
 * with the regions from its record. Referenced by the connection while
 * current and by every get using them: a node exposing other regions (a new
 * plan) gets new keys on the same endpoint, and the old ones go with the
 * last get that used them.
 */
struct peer_keys {
	ucp_rkey_h ram_key;           /* NULL when the node exposes no RAM arena */
	ucp_rkey_h state_key;         /* NULL when it exposes no state array */
	uint64_t ram_base, ram_bytes; /* the node's regions, from its record */
	uint64_t state_base, state_bytes;
	atomic_uint refs;
};

struct peer_conn {
	struct peer_plane *plane;
	struct peer_node *node;
	ucp_ep_h ep;            /* closed (and stale) once @closed is set */
	struct peer_keys *keys; /* current; replaced under the node's write lock */
	atomic_uint refs;
	atomic_bool failed;        /* UCX reported an error on the endpoint */
	bool closed;               /* under the node's write lock */
	nopfs_status close_reason; /* what canceled operations report */
};

/* One stream connection of an asker: the socket, the owner's chunk key. */
struct peer_stream_conn {
	int fd;
	EVP_CIPHER_CTX *chunks; /* keyed for the owner's chunks */
};

/* Stream connections to one node, in use or idle, and where it listens. */
#define PEER_STREAM_IDLE_MAX 4
struct peer_stream_peer {
	pthread_mutex_t lock;
	struct sockaddr_in addresses[PEER_STREAM_ADDRESSES_MAX];
	unsigned int address_count;
	struct peer_stream_conn *idle[PEER_STREAM_IDLE_MAX];
	unsigned int idle_count;
	unsigned int open;    /* in use or idle */
	uint64_t down_until;  /* monotonic ns: UCX until then */
	uint64_t incarnation; /* grows with each new record: older connections are closed */
};

struct peer_node {
	uint32_t index;
	struct peer_stream_peer stream;
	/*
	 * Readers post operations on conn->ep; a writer creates, closes or
	 * replaces the connection, so no endpoint is used while being closed.
	 */
	pthread_rwlock_t lock;
	struct peer_record record; /* copy; its blobs live in @blobs */
	void *blobs;
	struct peer_conn *conn; /* NULL while down or not yet reconnected */
	uint64_t down_until;    /* monotonic ns: not contacted before */
	atomic_bool lost;       /* a connection failed; no operation succeeded since */
};

/* Counters behind struct peer_stats (relaxed atomics). */
struct peer_counters {
	atomic_uint_fast64_t gets, get_bytes, not_present;
	atomic_uint_fast64_t requests, request_bytes, not_available, stream_requests;
	atomic_uint_fast64_t timeouts, errors;
	atomic_uint_fast64_t served, served_bytes;
	atomic_uint_fast64_t refused, dropped;
};

/* A buffer for one answer: the header and room for the bytes. */
struct peer_deferred {
	struct peer_deferred *next;
	uint64_t id, size;
	nopfs_sample_id sample;
	uint64_t answer_by; /* monotonic ns: well before the asker's deadline */
	uint32_t asker;
	uint32_t generation;
};

struct peer_reply {
	struct peer_plane *plane;
	struct peer_reply *next;     /* among the spares */
	struct peer_response header; /* sealed just before sending */
	uint64_t capacity;
	unsigned char data[];
};

/* The nonces seen from one sender: the highest, and which of those below it. */
#define PEER_WINDOW 1024
struct peer_window {
	bool used;
	uint64_t top;
	uint64_t bits[PEER_WINDOW / 64]; /* bit s % PEER_WINDOW: s was seen */
};

struct peer_plane {
	struct peer_config config;   /* its secret is wiped once the key is made */
	bool one_sided;              /* regions registered, gets allowed */
	unsigned char key[32];       /* of the tags, derived from the secret */
	unsigned char chunk_key[32]; /* whence the stream chunks' keys, one per node */
	EVP_CIPHER *mac_cipher;      /* OpenSSL's ChaCha20-Poly1305 */
	atomic_uint_fast64_t seq;    /* of the next message sent */
	pthread_mutex_t windows_lock;
	struct peer_window *windows; /* by sender node; all zero: none seen */
	uint32_t window_slots;
	atomic_uint_fast64_t drop_logged_ns; /* drops are logged once a second */
	atomic_uint_fast64_t max_samples, max_sample_size;
	ucp_context_h context;
	ucp_worker_h worker;
	ucp_mem_h ram_memh; /* NULL when not exposed */
	ucp_mem_h state_memh;
	atomic_uint generation;    /* of this agent's plan; requests for another are declined */
	struct peer_record record; /* ours; its blobs live in @record_blobs */
	void *record_blobs;

	pthread_t progress;
	atomic_bool stopping; /* destroy has begun: requests are not served */
	int worker_fd;        /* ucp_worker_get_efd(); owned by UCX */
	int stop_fd;          /* eventfd: stop the progress thread */

	pthread_mutex_t nodes_lock; /* the array; nodes themselves are stable */
	struct peer_node **nodes;
	uint32_t node_slots;

	pthread_mutex_t pending_lock; /* fetches awaiting a response */
	struct peer_op *pending;
	uint64_t next_id;

	/* the stream path's answering side (peer_stream.c) */
	bool stream;         /* its acceptor runs; fetches go over it where the node has one */
	int stream_listener; /* -1 when none */
	int stream_stop_fd;  /* eventfd: stop accepting */
	pthread_t stream_acceptor;
	unsigned char stream_record[PEER_STREAM_ADDRESSES_MAX * PEER_STREAM_ADDRESS_BYTES];
	size_t stream_record_length;
	pthread_mutex_t stream_lock; /* the connections being answered */
	pthread_cond_t stream_gone;
	struct peer_served *served;
	unsigned int served_count;

	pthread_mutex_t replies_lock; /* spare reply buffers */
	struct peer_reply *spares;
	unsigned int spare_count;

	pthread_mutex_t deferred_lock; /* requests waiting for the fill callback */
	pthread_cond_t deferred_ready;
	struct peer_deferred *deferred, *deferred_last;
	unsigned int deferred_count;
	pthread_t answerer; /* answers them, when there is a fill callback */
	bool answerer_started;

	struct peer_counters counters;
};

/*
 * One remote operation of a caller. Its "units" are what may still touch it:
 * posted UCX requests and, for a fetch, the awaited response. UCX and the
 * progress thread write a sample's bytes only into the operation's own
 * @bytes, never into the caller's buffer: the caller copies them out once
 * every unit is over (peer_op_deliver()). The caller frees the operation
 * once no unit is left; if it must leave earlier (UCX did not complete a
 * request even after the endpoint was closed), it abandons the operation,
 * @bytes included, to the last unit, and its own buffer is never written
 * after it returned.
 */
struct peer_op {
	struct peer_plane *plane;
	struct peer_conn *conn; /* referenced */
	pthread_mutex_t lock;
	pthread_cond_t done;
	unsigned int units;
	ucs_status_t status; /* the first unit's failure, UCS_OK if none */
	bool abandoned;
	uint64_t deadline;    /* monotonic ns */
	int deadline_ms;      /* from its start, for messages */
	unsigned char *bytes; /* the sample's @size bytes land here */
	uint64_t size;

	/* fetch */
	struct peer_op *next;        /* in plane->pending while the response is awaited */
	struct peer_request request; /* sent; valid until its send completes */
	bool not_available;
	struct peer_auth response; /* of a response received by rendezvous */

	/* get */
	struct peer_keys *keys; /* referenced */
	uint8_t state;          /* the remote state byte lands here */
};

#define peer_count(plane, counter, n) \
	atomic_fetch_add_explicit(&(plane)->counters.counter, (n), memory_order_relaxed)

/* peer_auth.c */
nopfs_status peer_auth_init(struct peer_plane *plane);
void peer_auth_fini(struct peer_plane *plane);
/*
 * Number, authenticate and fill the peer_auth at the start of @header. With
 * @payload NULL and @length not 0, the payload is authenticated otherwise
 * (the stream path's chunks): its length only is in the header.
 */
nopfs_status peer_auth_seal(struct peer_plane *plane, enum peer_am_id kind, uint32_t generation,
                            void *header, size_t header_length, const void *payload, size_t length);
/*
 * Whether a received message of @kind authenticates: its header is exactly
 * @expected bytes, it verifies, and its nonce is new; the header is copied to
 * @out. With @payload NULL (rendezvous) the payload is checked later with
 * peer_auth_payload(). Drops are counted and logged (once a second).
 */
bool peer_auth_open(struct peer_plane *plane, enum peer_am_id kind, const void *header,
                    size_t header_length, const void *payload, size_t length, void *out,
                    size_t expected);
bool peer_auth_payload(struct peer_plane *plane, const struct peer_auth *auth, const void *payload,
                       size_t length);
/* Forget the nonces seen from @node: it may have restarted. */
void peer_auth_forget(struct peer_plane *plane, uint32_t node);
/* A message that authenticated but breaks the rules: counted, logged once a second. */
void peer_auth_reject(struct peer_plane *plane, uint32_t node, const char *what);

/* peer_regions.c */
nopfs_status peer_regions_map(struct peer_plane *plane);
void peer_regions_unmap(struct peer_plane *plane);
nopfs_status peer_record_build(struct peer_plane *plane);

/* peer_node.c */
struct peer_node *peer_node_find(struct peer_plane *plane, uint32_t index);
nopfs_status peer_node_connect(struct peer_plane *plane, uint32_t index,
                               const struct peer_record *record);
nopfs_status peer_node_acquire(struct peer_plane *plane, struct peer_node *node,
                               struct peer_conn **out);
void peer_conn_put(struct peer_conn *conn);
struct peer_keys *peer_conn_keys(struct peer_conn *conn);
void peer_keys_put(struct peer_keys *keys);
nopfs_status peer_conn_lock(struct peer_conn *conn);
void peer_conn_unlock(struct peer_conn *conn);
void peer_conn_retire(struct peer_plane *plane, struct peer_conn *conn, nopfs_status reason);
void peer_nodes_destroy(struct peer_plane *plane);

/* peer_record.c */
bool peer_record_is_valid(const struct peer_record *record);

/* peer_serve.c: the most bytes of one sample, asked or answered */
uint64_t peer_size_bound(struct peer_plane *plane);

/* peer_op.c */
bool peer_op_size_is_valid(struct peer_plane *plane, uint32_t node, const void *dest, uint64_t size,
                           const char *what);
struct peer_op *peer_op_create(struct peer_plane *plane, struct peer_conn *conn, uint64_t size);
void peer_op_begin(struct peer_op *op);
void peer_op_end(struct peer_op *op, ucs_status_t status);
ucp_request_param_t peer_op_send_param(struct peer_op *op);
nopfs_status peer_op_posted(struct peer_op *op, ucs_status_ptr_t request, const char *what);
nopfs_status peer_op_wait(struct peer_op *op, const char *what,
                          void (*on_deadline)(struct peer_op *op));
void peer_op_deliver(const struct peer_op *op, void *dest);
void peer_op_release(struct peer_op *op);
nopfs_status peer_op_count(struct peer_plane *plane, nopfs_status status);

/* peer_pending.c */
void peer_pending_add(struct peer_plane *plane, struct peer_op *op);
/* Take the fetch with request @id sent to @node off the list; NULL if not there. */
struct peer_op *peer_pending_take(struct peer_plane *plane, uint64_t id, uint32_t node);
/* End @op's wait for its response, unless something else did. */
void peer_pending_drop(struct peer_op *op, ucs_status_t status);
/* Fail the fetches awaiting a response on @conn (failed or closed). */
void peer_fetch_fail_pending(struct peer_plane *plane, struct peer_conn *conn, ucs_status_t status);

/* peer_serve.c: whether a request goes to the serve callback, is within bounds */
bool peer_serve_is_serving(struct peer_plane *plane, uint32_t generation);
bool peer_serve_in_bounds(struct peer_plane *plane, const struct peer_request *request);

/* peer_auth.c: the stream path's chunks */
EVP_CIPHER_CTX *peer_auth_chunk_context(struct peer_plane *plane, uint32_t node);
bool peer_auth_chunk_tag(EVP_CIPHER_CTX *ctx, uint64_t seq, uint32_t index, const void *data,
                         size_t length, unsigned char tag[PEER_TAG_BYTES]);

/* peer_stream.c */
nopfs_status peer_stream_start(struct peer_plane *plane);
void peer_stream_stop(struct peer_plane *plane);
void peer_stream_node_init(struct peer_node *node);
/* The node published @record: where its stream path listens from now on. */
void peer_stream_node_update(struct peer_node *node, const struct peer_record *record);
void peer_stream_node_destroy(struct peer_node *node);
/*
 * A fetch over the stream path; NOPFS_ERR_UNSUPPORTED (nothing counted)
 * when the node has none now: the caller asks through UCX.
 */
nopfs_status peer_stream_fetch(struct peer_plane *plane, struct peer_node *node,
                               nopfs_sample_id sample, void *dest, uint64_t size);

/* peer_fetch.c */
ucs_status_t peer_fetch_answered(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ucp_am_recv_param_t *param);

/* peer_notice.c */
ucs_status_t peer_notice_received(void *arg, const void *header, size_t header_length, void *data,
                                  size_t length, const ucp_am_recv_param_t *param);

/* peer_serve.c */
ucs_status_t peer_serve_request(void *arg, const void *header, size_t header_length, void *data,
                                size_t length, const ucp_am_recv_param_t *param);
void peer_serve_destroy(struct peer_plane *plane);
/* The thread answering deferred requests (only with a fill callback). */
nopfs_status peer_answerer_start(struct peer_plane *plane);
void peer_answerer_stop(struct peer_plane *plane);

#endif
