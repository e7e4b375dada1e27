/*
 * Request/response, the asking side. Over the stream path where the node has
 * one (peer_stream.c); otherwise, or when it cannot be had now, through UCX:
 * an active message names the sample and
 * an id; the owner's response carries the id and the bytes, either eagerly
 * (copied in the handler) or by rendezvous (received with
 * ucp_am_recv_data_nbx()), into the operation's buffer; the caller copies
 * them out once the operation is over (peer_op.c).
 *
 * A response is taken only once it authenticated as from the node asked,
 * for a request of this node still pending, with exactly the size asked;
 * bytes received by rendezvous are authenticated once they are in, and the
 * fetch fails if they do not (the caller reads the PFS: it never uses bytes
 * that did not verify).
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
	status = peer_auth_seal(op->plane, PEER_AM_REQUEST, op->request.auth.generation,
	                        &op->request, sizeof(op->request), NULL, 0);
	if (status == NOPFS_OK)
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

/* The bytes of a rendezvous response are in: authenticate them there. */
static void response_received(void *request, ucs_status_t status, size_t length, void *user_data)
{
	struct peer_op *op = user_data;

	if (status == UCS_OK && !peer_auth_payload(op->plane, &op->response, op->bytes, op->size))
		status = UCS_ERR_INVALID_PARAM;
	peer_op_end(op, status);
	ucp_request_free(request);
}

/* Whether an authenticated @response answers @op; logged (rate-limited) if not. */
static bool answers(struct peer_plane *plane, const struct peer_response *response,
                    struct peer_op *op, size_t length)
{
	if (response->answer == PEER_ANSWER_NOT_AVAILABLE && length == 0)
		return true;
	if (response->answer == PEER_ANSWER_BYTES && length == op->size)
		return true;
	peer_auth_reject(plane, response->auth.node, "a response of the wrong size");
	return false;
}

/*
 * The response handler (progress thread). The fetch it answers, if still
 * waiting, is taken off the list: its buffer is then ours to fill.
 */
ucs_status_t peer_fetch_answered(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ucp_am_recv_param_t *param)
{
	struct peer_plane *plane = arg;
	bool rndv = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;
	struct peer_response response;
	ucp_request_param_t receive;
	struct peer_op *op;

	if (!peer_auth_open(plane, PEER_AM_RESPONSE, header, header_length, rndv ? NULL : data,
	                    length, &response, sizeof(response)))
		return UCS_OK;
	if (response.owner != response.auth.node || response.asker != plane->config.node) {
		peer_auth_reject(plane, response.auth.node, "a response naming another node");
		return UCS_OK;
	}
	op = peer_pending_take(plane, response.id, response.auth.node);
	if (!op) {
		nopfs_debug("node %u: late response %" PRIu64 " from node %u dropped",
		            plane->config.node, response.id, response.owner);
		return UCS_OK;
	}
	if (!answers(plane, &response, op, length)) {
		peer_op_end(op, UCS_ERR_MESSAGE_TRUNCATED);
		return UCS_OK;
	}
	if (response.answer == PEER_ANSWER_NOT_AVAILABLE) {
		op->not_available = true;
		peer_op_end(op, UCS_OK);
		return UCS_OK;
	}
	if (!rndv) {
		if (length > 0)
			memcpy(op->bytes, data, length);
		peer_op_end(op, UCS_OK);
		return UCS_OK;
	}
	op->response = response.auth;
	receive = (ucp_request_param_t){
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
		.cb.recv_am = response_received,
		.user_data = op,
	};
	peer_op_posted(op, ucp_am_recv_data_nbx(plane->worker, data, op->bytes, length, &receive),
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
	if (status == NOPFS_OK && op->not_available)
		return NOPFS_ERR_NOT_FOUND;
	return status;
}

/* Count a fetch's outcome (either path); its status. */
static nopfs_status fetch_counted(struct peer_plane *plane, struct peer_node *peer,
                                  nopfs_status status, uint64_t size)
{
	if (status == NOPFS_OK || status == NOPFS_ERR_NOT_FOUND) /* it answered */
		atomic_store(&peer->lost, false);
	if (status == NOPFS_OK) {
		peer_count(plane, requests, 1);
		peer_count(plane, request_bytes, size);
	} else if (status == NOPFS_ERR_NOT_FOUND) {
		peer_count(plane, not_available, 1);
	}
	return peer_op_count(plane, status);
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
	if (!peer_op_size_is_valid(plane, node, dest, size, "request"))
		return peer_op_count(plane, NOPFS_ERR_INVALID);
	status = peer_stream_fetch(plane, peer, sample, dest, size);
	if (status != NOPFS_ERR_UNSUPPORTED)
		return fetch_counted(plane, peer, status, size);
	status = peer_node_acquire(plane, peer, &conn);
	if (status != NOPFS_OK)
		return peer_op_count(plane, status);
	op = peer_op_create(plane, conn, size);
	if (!op) {
		peer_conn_put(conn);
		return peer_op_count(plane, NOPFS_ERR_NOMEM);
	}
	op->request = (struct peer_request){
		.auth.generation = atomic_load(&plane->generation),
		.asker = plane->config.node,
		.sample = sample,
		.size = size,
	};
	status = fetch_sample(op);
	if (status == NOPFS_OK)
		peer_op_deliver(op, dest);
	peer_op_release(op);
	return fetch_counted(plane, peer, status, size);
}
