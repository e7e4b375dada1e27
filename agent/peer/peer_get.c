/*
 * One-sided reads of a node's RAM tier: the sample's state byte, then, if
 * it says present, the bytes, then the state byte again. The owner writes a
 * sample's bytes before its state byte, so bytes read after a "present"
 * state are complete; and a re-plan clears the state byte before the slot
 * is used again, so bytes followed by a "present" state were not changed
 * under the read (a slot emptied meanwhile reads as not present). Only
 * between planes that register their regions (hardware RDMA): others have
 * no keys, and their samples are asked for (peer_fetch.c).
 */
#include <inttypes.h>

#include "common/log.h"
#include "peer_internal.h"

/* Post a get of @length bytes at @remote into @buffer as a unit of @op. */
static void post_get(struct peer_op *op, void *buffer, uint64_t length, uint64_t remote,
                     ucp_rkey_h key, const char *what)
{
	ucp_request_param_t param = peer_op_send_param(op);
	ucs_status_ptr_t request;

	peer_op_begin(op);
	if (peer_conn_lock(op->conn) != NOPFS_OK) {
		peer_op_end(op, UCS_ERR_CANCELED); /* closed since acquired */
		return;
	}
	request = ucp_get_nbx(op->conn->ep, buffer, length, remote, key, &param);
	peer_conn_unlock(op->conn);
	peer_op_posted(op, request, what);
}

/* Whether the offsets fall inside the regions of @node's @keys (logged if not). */
static nopfs_status check_range(uint32_t node, const struct peer_keys *keys, uint64_t state_offset,
                                uint64_t data_offset, uint64_t size)
{
	if (!keys->state_key || state_offset >= keys->state_bytes) {
		nopfs_error("node %u: state byte %" PRIu64 " is outside its state array of %" PRIu64
		            " bytes",
		            node, state_offset, keys->state_bytes);
		return NOPFS_ERR_RANGE;
	}
	if (size > 0 && (!keys->ram_key || data_offset > keys->ram_bytes ||
	                 size > keys->ram_bytes - data_offset)) {
		nopfs_error("node %u: %" PRIu64 " bytes at %" PRIu64
		            " are outside its RAM arena of %" PRIu64 " bytes",
		            node, size, data_offset, keys->ram_bytes);
		return NOPFS_ERR_RANGE;
	}
	return NOPFS_OK;
}

/* Read the sample's state byte: NOPFS_ERR_NOT_FOUND unless it says present. */
static nopfs_status get_state(struct peer_op *op, uint64_t state_offset, const char *what)
{
	const struct peer_keys *keys = op->keys;
	nopfs_status status;

	post_get(op, &op->state, 1, keys->state_base + state_offset, keys->state_key, what);
	status = peer_op_wait(op, what, NULL);
	if (status == NOPFS_OK && op->state != op->plane->config.present_value) {
		peer_count(op->plane, not_present, 1);
		status = NOPFS_ERR_NOT_FOUND;
	}
	return status;
}

/* The three reads, on an operation whose keys' regions fit. */
static nopfs_status get_sample(struct peer_op *op, uint64_t state_offset, uint64_t data_offset)
{
	const struct peer_keys *keys = op->keys;
	nopfs_status status;

	status = get_state(op, state_offset, "get of a state byte");
	if (status != NOPFS_OK || op->size == 0)
		return status;
	post_get(op, op->bytes, op->size, keys->ram_base + data_offset, keys->ram_key,
	         "get of a sample");
	status = peer_op_wait(op, "get of a sample", NULL);
	if (status != NOPFS_OK)
		return status;
	if (op->plane->config.between_gets)
		op->plane->config.between_gets(op->plane->config.between_gets_arg);
	/* not present now: emptied while read, the bytes may be torn */
	return get_state(op, state_offset, "second get of a state byte");
}

nopfs_status peer_plane_get(struct peer_plane *plane, uint32_t node, uint64_t state_offset,
                            uint64_t data_offset, void *dest, uint64_t size)
{
	struct peer_node *peer = peer_node_find(plane, node);
	struct peer_keys *keys;
	struct peer_conn *conn;
	struct peer_op *op;
	nopfs_status status;

	if (!peer) {
		nopfs_error("node %u: get from a node never connected", node);
		return peer_op_count(plane, NOPFS_ERR_INVALID);
	}
	if (!peer_op_size_is_valid(plane, node, dest, size, "get"))
		return peer_op_count(plane, NOPFS_ERR_INVALID);
	status = peer_node_acquire(plane, peer, &conn);
	if (status != NOPFS_OK)
		return peer_op_count(plane, status);
	keys = peer_conn_keys(conn);
	if (!keys->state_key && !keys->ram_key) {
		peer_keys_put(keys);
		peer_conn_put(conn);
		return NOPFS_ERR_UNSUPPORTED; /* only requests to this node */
	}
	status = check_range(node, keys, state_offset, data_offset, size);
	op = status == NOPFS_OK ? peer_op_create(plane, conn, size) : NULL;
	if (!op) {
		peer_keys_put(keys);
		peer_conn_put(conn);
		return peer_op_count(plane, status == NOPFS_OK ? NOPFS_ERR_NOMEM : status);
	}
	op->keys = keys;
	status = get_sample(op, state_offset, data_offset);
	if (status == NOPFS_OK)
		peer_op_deliver(op, dest);
	peer_op_release(op);
	if (status == NOPFS_OK) {
		atomic_store(&peer->lost, false);
		peer_count(plane, gets, 1);
		peer_count(plane, get_bytes, size);
	}
	return peer_op_count(plane, status);
}
