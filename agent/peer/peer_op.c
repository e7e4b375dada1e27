/*
 * One remote operation of a caller: the UCX requests it posted, its deadline,
 * and what happens past it.
 *
 * UCX 1.13 cannot cancel a get or a rendezvous receive (ucp_request_cancel()
 * only cancels tag receives), and either may still write into its buffer.
 * So past the deadline the connection is closed: a forced close completes
 * every request of the endpoint with UCS_ERR_CANCELED. Should UCX still not
 * complete one, the buffer it writes into is the operation's own, left to
 * it: the caller's buffer (reused at once for the PFS read) is written only
 * by the caller, from the operation's, once every request is over.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "peer_internal.h"
#include "common/clock.h"

/* How long a waiting caller progresses the worker itself before sleeping. */
#define PEER_SPIN_NS 200000u

int peer_deadline_ms(const struct peer_config *config, uint64_t size)
{
	double ms = config->timeout_ms;

	if (config->slow_bytes_per_s > 0)
		ms += (double)size / config->slow_bytes_per_s * 1000.0;
	return ms < INT_MAX ? (int)ms : INT_MAX;
}

/*
 * Whether @size bytes into @dest is something to ask @node for: a buffer, and
 * no more than the largest sample (logged if not). The operation allocates
 * that much.
 */
bool peer_op_size_is_valid(struct peer_plane *plane, uint32_t node, const void *dest, uint64_t size,
                           const char *what)
{
	if (size > 0 && !dest) {
		nopfs_error("node %u: %s of %" PRIu64 " bytes into no buffer", node, what, size);
		return false;
	}
	if (size > peer_size_bound(plane)) {
		nopfs_error("node %u: %s of %" PRIu64 " bytes, more than the %" PRIu64
		            " of the largest sample",
		            node, what, size, peer_size_bound(plane));
		return false;
	}
	return true;
}

struct peer_op *peer_op_create(struct peer_plane *plane, struct peer_conn *conn, uint64_t size)
{
	struct peer_op *op = calloc(1, sizeof(*op));

	if (!op || (size > 0 && !(op->bytes = malloc(size)))) {
		nopfs_error("node %u: no memory for an operation of %" PRIu64 " bytes",
		            conn->node->index, size);
		free(op);
		return NULL;
	}
	if (pthread_mutex_init(&op->lock, NULL) != 0 || nopfs_clock_cond_init(&op->done) != 0) {
		nopfs_error("node %u: cannot initialize an operation's lock", conn->node->index);
		free(op->bytes);
		free(op);
		return NULL;
	}
	op->size = size;
	op->plane = plane;
	op->conn = conn;
	op->deadline_ms = peer_deadline_ms(&plane->config, size);
	op->deadline = nopfs_clock_now_ns() + (uint64_t)op->deadline_ms * 1000000u;
	return op;
}

static void op_free(struct peer_op *op)
{
	peer_keys_put(op->keys);
	peer_conn_put(op->conn);
	pthread_cond_destroy(&op->done);
	pthread_mutex_destroy(&op->lock);
	free(op->bytes);
	free(op);
}

/* A unit (a request about to be posted, an awaited response) starts. */
void peer_op_begin(struct peer_op *op)
{
	pthread_mutex_lock(&op->lock);
	op->units++;
	pthread_mutex_unlock(&op->lock);
}

/* A unit is over; the last one wakes the caller, or frees an abandoned op. */
void peer_op_end(struct peer_op *op, ucs_status_t status)
{
	bool release;

	pthread_mutex_lock(&op->lock);
	if (status != UCS_OK && op->status == UCS_OK)
		op->status = status;
	op->units--;
	release = op->abandoned && op->units == 0;
	if (op->units == 0)
		pthread_cond_broadcast(&op->done);
	pthread_mutex_unlock(&op->lock);
	if (release)
		op_free(op);
}

static void op_sent(void *request, ucs_status_t status, void *user_data)
{
	peer_op_end(user_data, status);
	ucp_request_free(request);
}

/* Parameters of a get or a send whose completion ends a unit of @op. */
ucp_request_param_t peer_op_send_param(struct peer_op *op)
{
	return (ucp_request_param_t){
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
		.cb.send = op_sent,
		.user_data = op,
	};
}

/*
 * What a ucp_*_nbx() call of a begun unit returned: done at once, failed at
 * once (logged unless the connection failed, which its handler logged), or
 * under way (the progress thread is woken: it may be asleep on a worker
 * whose state this call changed).
 */
nopfs_status peer_op_posted(struct peer_op *op, ucs_status_ptr_t request, const char *what)
{
	ucs_status_t status;

	if (request == NULL) {
		peer_op_end(op, UCS_OK);
		return NOPFS_OK;
	}
	if (UCS_PTR_IS_ERR(request)) {
		status = UCS_PTR_STATUS(request);
		if (!atomic_load(&op->conn->failed))
			nopfs_error("node %u: %s: %s", op->conn->node->index, what,
			            ucs_status_string(status));
		peer_op_end(op, status);
		return NOPFS_ERR_IO;
	}
	ucp_worker_signal(op->plane->worker);
	return NOPFS_OK;
}

static bool op_is_idle(struct peer_op *op)
{
	bool idle;

	pthread_mutex_lock(&op->lock);
	idle = op->units == 0;
	pthread_mutex_unlock(&op->lock);
	return idle;
}

/*
 * Progress the worker from the waiting thread for a short while first: an
 * answer that comes quickly (a sample of ~100 KB on a fast network) then
 * completes here, without waking the progress thread and then this one
 * (two wake-ups cost more than the transfer). The worker is thread-safe.
 */
static void op_spin(struct peer_op *op)
{
	uint64_t until = nopfs_clock_now_ns() + PEER_SPIN_NS;

	do {
		ucp_worker_progress(op->plane->worker);
		if (op_is_idle(op))
			return;
	} while (nopfs_clock_now_ns() < until);
}

/* Wait until no unit is left or @deadline (monotonic ns); true if none is. */
static bool op_wait_until(struct peer_op *op, uint64_t deadline)
{
	struct timespec at = nopfs_clock_deadline_at_ns(deadline);
	bool idle;

	pthread_mutex_lock(&op->lock);
	while (op->units > 0) {
		int rc = pthread_cond_timedwait(&op->done, &op->lock, &at);

		if (rc == ETIMEDOUT)
			break;
	}
	idle = op->units == 0;
	pthread_mutex_unlock(&op->lock);
	return idle;
}

/* The outcome of an operation whose units are all over. */
static nopfs_status op_result(const struct peer_op *op)
{
	if (op->status == UCS_OK)
		return NOPFS_OK;
	if (op->status == UCS_ERR_CANCELED)
		return op->conn->close_reason;
	nopfs_debug("node %u: operation failed: %s", op->conn->node->index,
	            ucs_status_string(op->status));
	return NOPFS_ERR_IO;
}

/*
 * Wait for @op until its deadline. Past it, @on_deadline (if any) drops what
 * is not a UCX request, the connection is closed (the node is then down for
 * a deadline) and the requests get one more deadline to complete.
 * NOPFS_ERR_TIMEOUT then, whether or not they did: if not, the operation is
 * abandoned by peer_op_release().
 */
nopfs_status peer_op_wait(struct peer_op *op, const char *what,
                          void (*on_deadline)(struct peer_op *op))
{
	struct peer_plane *plane = op->plane;

	op_spin(op);
	if (op_wait_until(op, op->deadline))
		return op_result(op);
	nopfs_error("node %u: %s timed out after %d ms; closing the connection",
	            op->conn->node->index, what, op->deadline_ms);
	if (on_deadline)
		on_deadline(op);
	peer_conn_retire(plane, op->conn, NOPFS_ERR_TIMEOUT);
	if (!op_wait_until(op,
	                   nopfs_clock_now_ns() + (uint64_t)plane->config.timeout_ms * 1000000u))
		nopfs_error("node %u: UCX did not complete a %s after its endpoint was closed; "
		            "abandoning it",
		            op->conn->node->index, what);
	return NOPFS_ERR_TIMEOUT;
}

/* Copy the sample's bytes of @op, which succeeded (no unit is left), to @dest. */
void peer_op_deliver(const struct peer_op *op, void *dest)
{
	if (op->size > 0)
		memcpy(dest, op->bytes, op->size);
}

/* The caller is done with @op: free it, or leave it to its last unit. */
void peer_op_release(struct peer_op *op)
{
	bool busy;

	pthread_mutex_lock(&op->lock);
	busy = op->units > 0;
	op->abandoned = busy;
	pthread_mutex_unlock(&op->lock);
	if (!busy)
		op_free(op);
}

/* Count an operation's failure in the statistics; returns @status. */
nopfs_status peer_op_count(struct peer_plane *plane, nopfs_status status)
{
	if (status == NOPFS_ERR_TIMEOUT)
		peer_count(plane, timeouts, 1);
	else if (status != NOPFS_OK && status != NOPFS_ERR_NOT_FOUND)
		peer_count(plane, errors, 1);
	return status;
}
