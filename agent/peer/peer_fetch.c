/*
 * Request/response, the asking side: an active message names the sample and
 * an id; the owner's response carries the id and the bytes, either eagerly
 * (copied in the handler) or by rendezvous (received straight into the
 * caller's buffer with ucp_am_recv_data_nbx()).
 *
 * A fetch awaiting its response sits on the plane's pending list
 * (peer_pending.c). Whoever takes it off the list ends that unit: the
 * response, the deadline, a failed send, or the failure or close of its
 * connection. So a dead peer fails its fetches at once, and a late response
 * finds nothing and is dropped.
 */
#include <inttypes.h>
#include <string.h>

#include "common/log.h"
#include "peer_internal.h"

static void on_deadline(struct peer_op *op)
{
	peer_pending_drop(op, UCS_ERR_TIMED_OUT);
}

/* The request's send completed; if it failed, no response will come. */
static void request_sent(void *request, ucs_status_t status, void *user_data)
{
	struct peer_op *op = user_data;

	if (status != UCS_OK)
		peer_pending_drop(op, status);
	peer_op_end(op, status);
	ucp_request_free(request);
}

static void post_request(struct peer_op *op)
{
	ucp_request_param_t param = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
		                UCP_OP_ATTR_FIELD_FLAGS,
		.cb.send = request_sent,
		.user_data = op,
		.flags = UCP_AM_SEND_FLAG_REPLY,
	};
	ucs_status_ptr_t request;
	nopfs_status status;

	peer_op_begin(op);
	status = peer_conn_lock(op->conn);
	if (status != NOPFS_OK) {
		peer_pending_drop(op, UCS_ERR_CANCELED);
		peer_op_end(op, UCS_ERR_CANCELED);
		return;
	}
	request = ucp_am_send_nbx(op->conn->ep, PEER_AM_REQUEST, &op->request, sizeof(op->request),
	                          NULL, 0, &param);
	peer_conn_unlock(op->conn);
	if (peer_op_posted(op, request, "request") != NOPFS_OK)
		peer_pending_drop(op, UCS_ERR_CANCELED);
}

/*
 * The response handler (progress thread). The fetch it answers, if still
 * waiting, is taken off the list: its destination is then ours to fill.
 */
ucs_status_t peer_fetch_answered(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ucp_am_recv_param_t *param)
{
	struct peer_plane *plane = arg;
	struct peer_response response;
	ucp_request_param_t receive;
	struct peer_op *op;

	if (header_length != sizeof(response)) {
		nopfs_error("node %u: dropped a malformed response (%zu-byte header)",
		            plane->config.node, header_length);
		return UCS_OK;
	}
	memcpy(&response, header, sizeof(response));
	op = peer_pending_take(plane, response.id);
	if (!op) {
		nopfs_debug("node %u: late response %" PRIu64 " from node %u dropped",
		            plane->config.node, response.id, response.owner);
		return UCS_OK;
	}
	if (response.answer == PEER_ANSWER_NOT_AVAILABLE) {
		op->not_available = true;
		peer_op_end(op, UCS_OK);
		return UCS_OK;
	}
	if (response.answer != PEER_ANSWER_BYTES || length != op->size) {
		nopfs_error("node %u: answered sample %" PRIu64 " with %zu bytes (answer %u), "
		            "%" PRIu64 " expected",
		            op->conn->node->index, op->request.sample, length, response.answer,
		            op->size);
		peer_op_end(op, UCS_ERR_MESSAGE_TRUNCATED);
		return UCS_OK;
	}
	if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
		if (length > 0)
			memcpy(op->dest, data, length);
		peer_op_end(op, UCS_OK);
		return UCS_OK;
	}
	receive = peer_op_recv_param(op);
	peer_op_posted(op, ucp_am_recv_data_nbx(plane->worker, data, op->dest, length, &receive),
	               "receive of a response");
	return UCS_OK;
}

/* Send the request and wait for the answer; the op ends up idle or abandoned. */
static nopfs_status fetch_sample(struct peer_op *op)
{
	nopfs_status status;

	peer_op_begin(op); /* the response */
	peer_pending_add(op->plane, op);
	if (atomic_load(&op->conn->failed)) /* failed before it was on the list */
		peer_pending_drop(op, UCS_ERR_CONNECTION_RESET);
	post_request(op);
	status = peer_op_wait(op, "request", on_deadline);
	if (status == NOPFS_OK && op->not_available) {
		peer_count(op->plane, not_available, 1);
		return NOPFS_ERR_NOT_FOUND;
	}
	return status;
}

nopfs_status peer_plane_fetch(struct peer_plane *plane, uint32_t node, nopfs_sample_id sample,
                              void *dest, uint64_t size)
{
	struct peer_node *peer = peer_node_find(plane, node);
	struct peer_conn *conn;
	struct peer_op *op;
	nopfs_status status;

	if (!peer) {
		nopfs_error("node %u: request to a node never connected", node);
		return peer_op_count(plane, NOPFS_ERR_INVALID);
	}
	if (size > 0 && !dest) {
		nopfs_error("node %u: request of %" PRIu64 " bytes into no buffer", node, size);
		return peer_op_count(plane, NOPFS_ERR_INVALID);
	}
	status = peer_node_acquire(plane, peer, &conn);
	if (status != NOPFS_OK)
		return peer_op_count(plane, status);
	op = peer_op_create(plane, conn, size);
	if (!op) {
		peer_conn_put(conn);
		return peer_op_count(plane, NOPFS_ERR_NOMEM);
	}
	op->request = (struct peer_request){
		.magic = PEER_REQUEST_MAGIC,
		.asker = plane->config.node,
		.sample = sample,
		.size = size,
		.generation = atomic_load(&plane->generation),
	};
	op->dest = dest;
	op->size = size;
	status = fetch_sample(op);
	peer_op_release(op);
	if (status == NOPFS_OK || status == NOPFS_ERR_NOT_FOUND) /* it answered */
		atomic_store(&peer->lost, false);
	if (status == NOPFS_OK) {
		peer_count(plane, requests, 1);
		peer_count(plane, request_bytes, size);
	}
	return peer_op_count(plane, status);
}
