/*
 * The nodes of the plane and their connections: an endpoint created from the
 * node's record with peer error handling (a dead peer fails its operations
 * instead of hanging them), the remote keys unpacked on it, and what happens
 * on a failure: the connection is closed, the node is down for a deadline,
 * and the next operation after that reconnects from the record.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "peer_internal.h"
#include "common/clock.h"

/* The node numbered @index, NULL if never connected. */
struct peer_node *peer_node_find(struct peer_plane *plane, uint32_t index)
{
	struct peer_node *node = NULL;

	pthread_mutex_lock(&plane->nodes_lock);
	if (index < plane->node_slots)
		node = plane->nodes[index];
	pthread_mutex_unlock(&plane->nodes_lock);
	return node;
}

bool peer_plane_connected(struct peer_plane *plane, uint32_t node)
{
	return peer_node_find(plane, node) != NULL;
}

bool peer_plane_lost(struct peer_plane *plane, uint32_t node)
{
	struct peer_node *found = peer_node_find(plane, node);

	return found && atomic_load(&found->lost);
}

/* Called by UCX (under its worker lock) when the endpoint fails. */
static void conn_failed(void *arg, ucp_ep_h ep, ucs_status_t status)
{
	struct peer_conn *conn = arg;

	atomic_store(&conn->failed, true);
	atomic_store(&conn->node->lost, true);
	nopfs_error("node %u: connection failed: %s; its samples come from the PFS for now",
	            conn->node->index, ucs_status_string(status));
	peer_fetch_fail_pending(conn->plane, conn, status);
}

void peer_keys_put(struct peer_keys *keys)
{
	if (!keys || atomic_fetch_sub(&keys->refs, 1) != 1)
		return;
	if (keys->state_key)
		ucp_rkey_destroy(keys->state_key);
	if (keys->ram_key)
		ucp_rkey_destroy(keys->ram_key);
	free(keys);
}

void peer_conn_put(struct peer_conn *conn)
{
	if (atomic_fetch_sub(&conn->refs, 1) != 1)
		return;
	peer_keys_put(conn->keys);
	free(conn);
}

struct peer_keys *peer_conn_keys(struct peer_conn *conn)
{
	struct peer_keys *keys;

	pthread_rwlock_rdlock(&conn->node->lock);
	keys = conn->keys;
	atomic_fetch_add(&keys->refs, 1);
	pthread_rwlock_unlock(&conn->node->lock);
	return keys;
}

/* Hold @conn's endpoint for posting; the reason it closed if it has. */
nopfs_status peer_conn_lock(struct peer_conn *conn)
{
	pthread_rwlock_rdlock(&conn->node->lock);
	if (conn->closed) {
		pthread_rwlock_unlock(&conn->node->lock);
		return conn->close_reason;
	}
	return NOPFS_OK;
}

void peer_conn_unlock(struct peer_conn *conn)
{
	pthread_rwlock_unlock(&conn->node->lock);
}

static nopfs_status unpack_key(struct peer_conn *conn, const void *packed, const char *what,
                               ucp_rkey_h *out)
{
	ucs_status_t status = ucp_ep_rkey_unpack(conn->ep, packed, out);

	if (status != UCS_OK) {
		nopfs_error("node %u: cannot unpack the remote key of its %s: %s",
		            conn->node->index, what, ucs_status_string(status));
		return NOPFS_ERR_FORMAT;
	}
	return NOPFS_OK;
}

/*
 * The keys of @record unpacked on @conn's endpoint, referenced once; none on
 * a plane without one-sided reads (its context cannot use them).
 */
static nopfs_status keys_create(struct peer_conn *conn, const struct peer_record *record,
                                struct peer_keys **out)
{
	struct peer_keys *keys = calloc(1, sizeof(*keys));
	nopfs_status status = NOPFS_OK;

	if (!keys) {
		nopfs_error("node %u: no memory for its keys", conn->node->index);
		return NOPFS_ERR_NOMEM;
	}
	*keys = (struct peer_keys){
		.ram_base = record->ram_base,
		.ram_bytes = record->ram_bytes,
		.state_base = record->state_base,
		.state_bytes = record->state_bytes,
	};
	atomic_init(&keys->refs, 1);
	if (!conn->plane->one_sided) {
		keys->ram_bytes = keys->state_bytes = 0;
		*out = keys;
		return NOPFS_OK;
	}
	if (record->ram_key_length)
		status = unpack_key(conn, record->ram_key, "RAM arena", &keys->ram_key);
	if (status == NOPFS_OK && record->state_key_length)
		status = unpack_key(conn, record->state_key, "state array", &keys->state_key);
	if (status != NOPFS_OK) {
		peer_keys_put(keys);
		return status;
	}
	*out = keys;
	return NOPFS_OK;
}

/*
 * A forced close: the peer sees the connection go, and the pending requests
 * of the endpoint complete with UCS_ERR_CANCELED once its transport
 * endpoints are discarded. UCX does that from a progress callback, which no
 * event announces: the progress thread is woken for it.
 */
static void close_endpoint(struct peer_conn *conn)
{
	ucp_request_param_t param = { .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
		                      .flags = UCP_EP_CLOSE_FLAG_FORCE };
	ucs_status_ptr_t request = ucp_ep_close_nbx(conn->ep, &param);

	if (UCS_PTR_IS_PTR(request))
		ucp_request_free(request); /* completes in the progress thread */
	else if (UCS_PTR_IS_ERR(request))
		nopfs_warning("node %u: closing the endpoint: %s", conn->node->index,
		              ucs_status_string(UCS_PTR_STATUS(request)));
	ucp_worker_signal(conn->plane->worker);
}

/* A connection to @node from its record, referenced once (by the node). */
static nopfs_status conn_create(struct peer_plane *plane, struct peer_node *node,
                                struct peer_conn **out)
{
	const struct peer_record *record = &node->record;
	ucp_ep_params_t params = {
		.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
		              UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER,
		.address = record->address,
		.err_mode = UCP_ERR_HANDLING_MODE_PEER,
		.err_handler = { .cb = conn_failed },
	};
	struct peer_conn *conn = calloc(1, sizeof(*conn));
	nopfs_status status = NOPFS_ERR_NOMEM;
	ucs_status_t ucs;

	if (!conn) {
		nopfs_error("node %u: no memory for a connection", node->index);
		return status;
	}
	conn->plane = plane;
	conn->node = node;
	atomic_init(&conn->refs, 1);
	atomic_init(&conn->failed, false);
	params.err_handler.arg = conn;
	ucs = ucp_ep_create(plane->worker, &params, &conn->ep);
	if (ucs != UCS_OK) {
		nopfs_error("node %u: cannot create a UCX endpoint: %s", node->index,
		            ucs_status_string(ucs));
		status = NOPFS_ERR_IO;
		goto out_free_conn;
	}
	status = keys_create(conn, record, &conn->keys);
	if (status != NOPFS_OK)
		goto out_close_endpoint;
	*out = conn;
	return NOPFS_OK;

out_close_endpoint:
	close_endpoint(conn);
out_free_conn:
	free(conn);
	return status;
}

/*
 * Close @node's connection (under its write lock) and keep the node down for
 * a deadline. Operations still using it complete as canceled and report
 * @reason; fetches awaiting a response from it fail now.
 */
static void node_retire_locked(struct peer_plane *plane, struct peer_node *node,
                               nopfs_status reason)
{
	struct peer_conn *conn = node->conn;

	node->conn = NULL;
	node->down_until = nopfs_clock_now_ns() + (uint64_t)plane->config.timeout_ms * 1000000u;
	if (reason != NOPFS_OK)
		atomic_store(&node->lost, true);
	conn->closed = true;
	conn->close_reason = reason;
	close_endpoint(conn);
	peer_fetch_fail_pending(plane, conn, UCS_ERR_CANCELED);
	peer_conn_put(conn);
}

/* Retire @conn unless that was done already (by another operation). */
void peer_conn_retire(struct peer_plane *plane, struct peer_conn *conn, nopfs_status reason)
{
	struct peer_node *node = conn->node;

	pthread_rwlock_wrlock(&node->lock);
	if (node->conn == conn)
		node_retire_locked(plane, node, reason);
	pthread_rwlock_unlock(&node->lock);
}

/*
 * @node's connection, referenced for an operation (peer_conn_put() when
 * done). A failed connection is retired; a missing one is created unless the
 * node is down (NOPFS_ERR_IO at once, not logged again).
 */
nopfs_status peer_node_acquire(struct peer_plane *plane, struct peer_node *node,
                               struct peer_conn **out)
{
	struct peer_conn *conn;
	nopfs_status status = NOPFS_OK;

	pthread_rwlock_rdlock(&node->lock);
	conn = node->conn;
	if (conn && !atomic_load(&conn->failed)) {
		atomic_fetch_add(&conn->refs, 1);
		pthread_rwlock_unlock(&node->lock);
		*out = conn;
		return NOPFS_OK;
	}
	pthread_rwlock_unlock(&node->lock);

	pthread_rwlock_wrlock(&node->lock);
	if (node->conn && atomic_load(&node->conn->failed))
		node_retire_locked(plane, node, NOPFS_ERR_IO);
	if (!node->conn) {
		if (nopfs_clock_now_ns() < node->down_until) {
			nopfs_debug("node %u: down, not contacted", node->index);
			status = NOPFS_ERR_IO;
		} else {
			status = conn_create(plane, node, &node->conn);
			if (status != NOPFS_OK)
				node->down_until = nopfs_clock_now_ns() +
				                   (uint64_t)plane->config.timeout_ms * 1000000u;
		}
	}
	if (status == NOPFS_OK) {
		atomic_fetch_add(&node->conn->refs, 1);
		*out = node->conn;
	}
	pthread_rwlock_unlock(&node->lock);
	return status;
}

/* A copy of @record whose blobs live in one allocation (*@blobs). */
static nopfs_status record_copy(const struct peer_record *record, uint32_t index,
                                struct peer_record *copy, void **blobs)
{
	size_t total = record->address_length + record->ram_key_length + record->state_key_length;
	unsigned char *at = malloc(total);

	if (!at) {
		nopfs_error("node %u: no memory for its record", index);
		return NOPFS_ERR_NOMEM;
	}
	*blobs = at;
	*copy = *record;
	copy->stream = NULL; /* taken in peer_stream_node_update() */
	copy->stream_length = 0;
	copy->address = at;
	memcpy(at, record->address, record->address_length);
	at += record->address_length;
	copy->ram_key = record->ram_key_length ? at : NULL;
	if (record->ram_key_length)
		memcpy(at, record->ram_key, record->ram_key_length);
	at += record->ram_key_length;
	copy->state_key = record->state_key_length ? at : NULL;
	if (record->state_key_length)
		memcpy(at, record->state_key, record->state_key_length);
	return NOPFS_OK;
}

/* The node numbered @index, created (without a record) if new. */
static struct peer_node *node_get(struct peer_plane *plane, uint32_t index)
{
	struct peer_node *node = NULL;

	pthread_mutex_lock(&plane->nodes_lock);
	if (index >= plane->node_slots) {
		uint32_t slots =
		        index + 1 > 2 * plane->node_slots ? index + 1 : 2 * plane->node_slots;
		struct peer_node **nodes = realloc(plane->nodes, slots * sizeof(*nodes));

		if (!nodes)
			goto out;
		memset(nodes + plane->node_slots, 0, (slots - plane->node_slots) * sizeof(*nodes));
		plane->nodes = nodes;
		plane->node_slots = slots;
	}
	node = plane->nodes[index];
	if (!node) {
		node = calloc(1, sizeof(*node));
		if (!node)
			goto out;
		if (pthread_rwlock_init(&node->lock, NULL) != 0) {
			free(node);
			node = NULL;
			goto out;
		}
		node->index = index;
		peer_stream_node_init(node);
		plane->nodes[index] = node;
	}
out:
	pthread_mutex_unlock(&plane->nodes_lock);
	if (!node)
		nopfs_error("node %u: no memory to add it", index);
	return node;
}

/* Whether @node has a working connection to the worker of @record. */
static bool is_same_worker(const struct peer_node *node, const struct peer_record *record)
{
	return node->conn && !atomic_load(&node->conn->failed) &&
	       node->record.address_length == record->address_length &&
	       memcmp(node->record.address, record->address, record->address_length) == 0;
}

/*
 * The node exposes other regions (a new plan): new keys on the endpoint it
 * has. Not a new endpoint: UCX 1.13 aborts the process when the one it
 * replaces, or the peer's, still has connection messages pending.
 */
static nopfs_status rekey_locked(struct peer_node *node)
{
	struct peer_keys *keys;
	nopfs_status status = keys_create(node->conn, &node->record, &keys);

	if (status != NOPFS_OK)
		return status;
	peer_keys_put(node->conn->keys); /* gets still using them keep them */
	node->conn->keys = keys;
	return NOPFS_OK;
}

/* A connection from @node's record in place of any it has. */
static nopfs_status reconnect_locked(struct peer_plane *plane, struct peer_node *node)
{
	nopfs_status status;

	if (node->conn)
		node_retire_locked(plane, node, NOPFS_ERR_IO);
	node->down_until = 0;
	peer_auth_forget(plane, node->index); /* a new worker numbers its messages anew */
	status = conn_create(plane, node, &node->conn);
	atomic_store(&node->lost, false); /* a new record: it is there */
	return status;
}

nopfs_status peer_node_connect(struct peer_plane *plane, uint32_t index,
                               const struct peer_record *record)
{
	struct peer_record copy;
	struct peer_node *node;
	nopfs_status status;
	void *blobs, *old_blobs;
	bool same;

	if (!peer_record_is_valid(record)) {
		nopfs_error("node %u: invalid record (no address, or a key without a region)",
		            index);
		return NOPFS_ERR_INVALID;
	}
	status = record_copy(record, index, &copy, &blobs);
	if (status != NOPFS_OK)
		return status;
	node = node_get(plane, index);
	if (!node) {
		free(blobs);
		return NOPFS_ERR_NOMEM;
	}

	pthread_rwlock_wrlock(&node->lock);
	same = is_same_worker(node, &copy);
	old_blobs = node->blobs;
	node->record = copy;
	node->blobs = blobs;
	status = same ? rekey_locked(node) : reconnect_locked(plane, node);
	pthread_rwlock_unlock(&node->lock);
	peer_stream_node_update(node, record);
	free(old_blobs);
	return status;
}

/*
 * Complete what is in flight on every endpoint, connection establishment
 * included, before the endpoints are closed: UCX 1.13 asserts, and aborts
 * the process, when an endpoint is closed while wireup messages of a
 * connection made from both sides at once are still pending. Bounded by a
 * deadline (a hung peer never completes a flush); the progress thread has
 * stopped, so this thread progresses.
 */
static void nodes_flush(struct peer_plane *plane)
{
	uint64_t deadline = nopfs_clock_now_ns() + (uint64_t)plane->config.timeout_ms * 1000000u;
	ucs_status_ptr_t *flushes = calloc(plane->node_slots, sizeof(*flushes));
	ucp_request_param_t param = { .op_attr_mask = 0 };
	bool busy;

	if (!flushes)
		return; /* closing regardless is all that is left */
	for (uint32_t i = 0; i < plane->node_slots; i++) {
		struct peer_node *node = plane->nodes[i];

		if (node && node->conn && !atomic_load(&node->conn->failed))
			flushes[i] = ucp_ep_flush_nbx(node->conn->ep, &param);
	}
	do {
		ucp_worker_progress(plane->worker);
		busy = false;
		for (uint32_t i = 0; i < plane->node_slots; i++) {
			if (!UCS_PTR_IS_PTR(flushes[i]))
				continue;
			if (ucp_request_check_status(flushes[i]) == UCS_INPROGRESS) {
				busy = true;
				continue;
			}
			ucp_request_free(flushes[i]);
			flushes[i] = NULL;
		}
	} while (busy && nopfs_clock_now_ns() < deadline);
	for (uint32_t i = 0; i < plane->node_slots; i++)
		if (UCS_PTR_IS_PTR(flushes[i]))
			ucp_request_free(flushes[i]); /* completed by the close */
	free(flushes);
}

/* At destroy: no operation is running, the progress thread has stopped. */
void peer_nodes_destroy(struct peer_plane *plane)
{
	nodes_flush(plane);
	for (uint32_t i = 0; i < plane->node_slots; i++) {
		struct peer_node *node = plane->nodes[i];

		if (!node)
			continue;
		if (node->conn)
			node_retire_locked(plane, node, NOPFS_ERR_IO);
		pthread_rwlock_destroy(&node->lock);
		peer_stream_node_destroy(node);
		free(node->blobs);
		free(node);
	}
	/* let UCX discard the closed endpoints, as the progress thread would */
	for (unsigned int i = 0; i < 1000 && ucp_worker_progress(plane->worker); i++)
		;
	free(plane->nodes);
	plane->nodes = NULL;
	plane->node_slots = 0;
}
