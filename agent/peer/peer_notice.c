/*
 * Plans on the data plane: the generation that requests are matched
 * against, the bounds they are checked against, exposing the regions of a
 * new plan, and notices (small messages the agents send one another about
 * plans), handed on only once authenticated as from the node they name.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "peer_internal.h"

void peer_plane_set_generation(struct peer_plane *plane, uint32_t generation)
{
	atomic_store(&plane->generation, generation);
}

void peer_plane_set_bounds(struct peer_plane *plane, uint64_t max_samples, uint64_t max_sample_size)
{
	atomic_store(&plane->max_samples, max_samples);
	atomic_store(&plane->max_sample_size, max_sample_size);
}

nopfs_status peer_plane_expose(struct peer_plane *plane, void *ram_base, size_t ram_bytes,
                               void *state_base, size_t state_bytes)
{
	void *old_blobs = plane->record_blobs;
	nopfs_status status;

	peer_regions_unmap(plane);
	plane->config.ram_base = ram_base;
	plane->config.ram_bytes = ram_base ? ram_bytes : 0;
	plane->config.state_base = state_base;
	plane->config.state_bytes = state_base ? state_bytes : 0;
	status = peer_regions_map(plane);
	if (status == NOPFS_OK) {
		status = peer_record_build(plane);
		if (status != NOPFS_OK)
			peer_regions_unmap(plane);
	}
	if (status != NOPFS_OK) {
		/* expose nothing rather than a record of regions no longer registered */
		plane->config.ram_base = plane->config.state_base = NULL;
		plane->config.ram_bytes = plane->config.state_bytes = 0;
		plane->ram_memh = plane->state_memh = NULL;
		if (peer_record_build(plane) != NOPFS_OK)
			return status; /* the old record stays: its blobs are still valid */
	}
	free(old_blobs);
	return status;
}

/* A notice as sent: the header and the payload in one buffer. */
struct notice_buffer {
	struct peer_plane *plane;
	struct peer_notice header;
	size_t length;
	unsigned char payload[];
};

static void notice_sent(void *request, ucs_status_t status, void *user_data)
{
	struct notice_buffer *buffer = user_data;

	if (status != UCS_OK)
		nopfs_warning("node %u: a notice was not delivered: %s", buffer->plane->config.node,
		              ucs_status_string(status));
	free(buffer);
	ucp_request_free(request);
}

/* Post @buffer (which the completion frees) on @node's connection; false if not sent. */
static bool notice_post(struct peer_plane *plane, struct peer_node *node,
                        struct notice_buffer *buffer)
{
	ucp_request_param_t param = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
		                UCP_OP_ATTR_FIELD_FLAGS,
		.cb.send = notice_sent,
		.user_data = buffer,
		.flags = UCP_AM_SEND_FLAG_EAGER, /* whole in the handler: no rendezvous */
	};
	struct peer_conn *conn;
	ucs_status_ptr_t request;

	if (peer_auth_seal(plane, PEER_AM_NOTICE, buffer->header.auth.generation, &buffer->header,
	                   sizeof(buffer->header), buffer->payload, buffer->length) != NOPFS_OK ||
	    peer_node_acquire(plane, node, &conn) != NOPFS_OK) {
		free(buffer);
		return false;
	}
	if (peer_conn_lock(conn) != NOPFS_OK) {
		peer_conn_put(conn);
		free(buffer);
		return false;
	}
	request = ucp_am_send_nbx(conn->ep, PEER_AM_NOTICE, &buffer->header, sizeof(buffer->header),
	                          buffer->payload, buffer->length, &param);
	peer_conn_unlock(conn);
	peer_conn_put(conn);
	if (UCS_PTR_IS_PTR(request))
		return true; /* notice_sent() frees it */
	if (UCS_PTR_IS_ERR(request)) {
		nopfs_warning("node %u: cannot send a notice to node %u: %s", plane->config.node,
		              node->index, ucs_status_string(UCS_PTR_STATUS(request)));
		free(buffer);
		return false;
	}
	free(buffer);
	return true;
}

uint32_t peer_plane_notify(struct peer_plane *plane, uint32_t kind, uint32_t generation,
                           const void *payload, size_t length)
{
	uint32_t sent = 0, slots;

	if (length > PEER_NOTICE_MAX) {
		nopfs_error("node %u: a notice of %zu bytes is too long", plane->config.node,
		            length);
		return 0;
	}
	pthread_mutex_lock(&plane->nodes_lock);
	slots = plane->node_slots;
	pthread_mutex_unlock(&plane->nodes_lock);
	for (uint32_t n = 0; n < slots; n++) {
		struct peer_node *node = peer_node_find(plane, n);
		struct notice_buffer *buffer;

		if (!node || n == plane->config.node)
			continue;
		buffer = malloc(sizeof(*buffer) + length);
		if (!buffer) {
			nopfs_error("node %u: no memory for a notice", plane->config.node);
			break;
		}
		buffer->plane = plane;
		buffer->header = (struct peer_notice){
			.auth.generation = generation,
			.sender = plane->config.node,
			.kind = kind,
		};
		buffer->length = length;
		if (length)
			memcpy(buffer->payload, payload, length);
		sent += notice_post(plane, node, buffer);
	}
	return sent;
}

ucs_status_t peer_notice_received(void *arg, const void *header, size_t header_length, void *data,
                                  size_t length, const ucp_am_recv_param_t *param)
{
	struct peer_plane *plane = arg;
	struct peer_notice notice;

	if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
		peer_auth_reject(plane, UINT32_MAX, "a notice not sent whole");
		return UCS_OK;
	}
	if (!peer_auth_open(plane, PEER_AM_NOTICE, header, header_length, data, length, &notice,
	                    sizeof(notice)))
		return UCS_OK;
	if (notice.sender != notice.auth.node || length > PEER_NOTICE_MAX) {
		peer_auth_reject(plane, notice.auth.node,
		                 "a notice naming another node, or too long");
		return UCS_OK;
	}
	if (notice.kind && notice.kind == plane->config.origin_kind &&
	    (notice.sender != 0 || length > plane->config.origin_max)) {
		peer_auth_reject(plane, notice.sender, "a notice only node 0 sends, or too long");
		return UCS_OK;
	}
	if (plane->config.notice && !atomic_load(&plane->stopping))
		plane->config.notice(plane->config.serve_arg, notice.sender, notice.kind,
		                     notice.auth.generation, data, length);
	return UCS_OK;
}
