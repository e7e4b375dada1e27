/*
 * The plane's pending list: the fetches awaiting their response, by request
 * id and the node asked. Ids start at random and grow: a response to an id
 * not pending, or from another node, finds nothing. Whoever takes a fetch
 * off the list ends that unit of it (peer_fetch.c).
 */
#include "peer_internal.h"

void peer_pending_add(struct peer_plane *plane, struct peer_op *op)
{
	pthread_mutex_lock(&plane->pending_lock);
	op->request.id = ++plane->next_id;
	op->next = plane->pending;
	plane->pending = op;
	pthread_mutex_unlock(&plane->pending_lock);
}

struct peer_op *peer_pending_take(struct peer_plane *plane, uint64_t id, uint32_t node)
{
	struct peer_op **at, *op = NULL;

	pthread_mutex_lock(&plane->pending_lock);
	for (at = &plane->pending; *at; at = &(*at)->next) {
		if ((*at)->request.id == id && (*at)->conn->node->index == node) {
			op = *at;
			*at = op->next;
			break;
		}
	}
	pthread_mutex_unlock(&plane->pending_lock);
	return op;
}

void peer_pending_drop(struct peer_op *op, ucs_status_t status)
{
	if (peer_pending_take(op->plane, op->request.id, op->conn->node->index) == op)
		peer_op_end(op, status);
}

void peer_fetch_fail_pending(struct peer_plane *plane, struct peer_conn *conn, ucs_status_t status)
{
	struct peer_op **at, *failed = NULL, *op;

	pthread_mutex_lock(&plane->pending_lock);
	for (at = &plane->pending; *at;) {
		op = *at;
		if (op->conn != conn) {
			at = &op->next;
			continue;
		}
		*at = op->next;
		op->next = failed;
		failed = op;
	}
	pthread_mutex_unlock(&plane->pending_lock);
	while (failed) {
		op = failed;
		failed = op->next;
		peer_op_end(op, status);
	}
}
