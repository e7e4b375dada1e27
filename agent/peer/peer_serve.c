/*
 * Request/response, the answering side (progress thread): the serve callback
 * fills a reply buffer, which goes back on the asker's reply endpoint with
 * the request's id. A few spare buffers are kept (the largest ones), so
 * answering large samples does not map and fault in fresh memory each time.
 *
 * A request for a sample this agent keeps but has not fetched yet is
 * deferred to the answering thread, which has the fill callback fetch it
 * (blocking is allowed there) and answers on this agent's own connection to
 * the asker (responses are matched by id and node, whatever endpoint they
 * come on).
 *
 * A request is looked at only once it authenticated as from the node it
 * names; one outside the bounds of the plan (a sample number or size past
 * the catalog's) is refused, answered "not available" before anything is
 * allocated for it.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "peer_internal.h"
#include "common/clock.h"

#define PEER_REPLY_SPARES 4
#define PEER_DEFERRED_MAX 1024                /* more waiting: answered "not available" */
#define PEER_SIZE_MAX     ((uint64_t)1 << 30) /* a request's bytes, without a plan's bound */

/* A buffer with room for @size bytes; NULL if out of memory. */
static struct peer_reply *reply_get(struct peer_plane *plane, uint64_t size)
{
	struct peer_reply **at, *reply = NULL;

	pthread_mutex_lock(&plane->replies_lock);
	for (at = &plane->spares; *at; at = &(*at)->next) {
		if ((*at)->capacity >= size) {
			reply = *at;
			*at = reply->next;
			plane->spare_count--;
			break;
		}
	}
	pthread_mutex_unlock(&plane->replies_lock);
	if (reply)
		return reply;
	if (size > SIZE_MAX - sizeof(*reply))
		return NULL;
	reply = malloc(sizeof(*reply) + size);
	if (!reply)
		return NULL;
	reply->plane = plane;
	reply->capacity = size;
	return reply;
}

/* Keep @reply as a spare if there is room or it is larger than the smallest. */
static void reply_put(struct peer_reply *reply)
{
	struct peer_plane *plane = reply->plane;
	struct peer_reply **at, **smallest, *unused = reply;

	pthread_mutex_lock(&plane->replies_lock);
	if (plane->spare_count == PEER_REPLY_SPARES) {
		smallest = &plane->spares;
		for (at = &plane->spares; *at; at = &(*at)->next)
			if ((*at)->capacity < (*smallest)->capacity)
				smallest = at;
		if ((*smallest)->capacity < reply->capacity) {
			unused = *smallest;
			*smallest = unused->next;
			plane->spare_count--;
		}
	}
	if (plane->spare_count < PEER_REPLY_SPARES) {
		reply->next = plane->spares;
		plane->spares = reply;
		plane->spare_count++;
		if (unused == reply)
			unused = NULL;
	}
	pthread_mutex_unlock(&plane->replies_lock);
	free(unused);
}

static void reply_sent(void *request, ucs_status_t status, void *user_data)
{
	struct peer_reply *reply = user_data;

	if (status != UCS_OK)
		nopfs_debug("node %u: answer %" PRIu64 " not delivered: %s",
		            reply->plane->config.node, reply->header.id, ucs_status_string(status));
	reply_put(reply);
	ucp_request_free(request);
}

/* Seal and send @reply (its header filled but for the authentication). */
static void send_reply(struct peer_plane *plane, ucp_ep_h ep, struct peer_reply *reply,
                       uint64_t bytes)
{
	ucp_request_param_t param = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
		.cb.send = reply_sent,
		.user_data = reply,
	};
	ucs_status_ptr_t request;

	if (peer_auth_seal(plane, PEER_AM_RESPONSE, reply->header.auth.generation, &reply->header,
	                   sizeof(reply->header), reply->data, bytes) != NOPFS_OK) {
		reply_put(reply);
		return;
	}
	request = ucp_am_send_nbx(ep, PEER_AM_RESPONSE, &reply->header, sizeof(reply->header),
	                          reply->data, bytes, &param);
	if (UCS_PTR_IS_PTR(request))
		return; /* reply_sent() takes it back */
	if (UCS_PTR_IS_ERR(request))
		nopfs_debug("node %u: answer %" PRIu64 " not sent: %s", plane->config.node,
		            reply->header.id, ucs_status_string(UCS_PTR_STATUS(request)));
	reply_put(reply);
}

/*
 * Whether a request of plan @generation goes to the serve callback: not once
 * destroy has begun, nor when this agent plans for another generation.
 */
bool peer_serve_is_serving(struct peer_plane *plane, uint32_t generation)
{
	return plane->config.serve && !atomic_load(&plane->stopping) &&
	       atomic_load(&plane->generation) == generation;
}

/* Queue @request for the answering thread; false if it cannot take it. */
static bool defer(struct peer_plane *plane, const struct peer_request *request)
{
	struct peer_deferred *deferred;

	if (!plane->answerer_started)
		return false;
	deferred = malloc(sizeof(*deferred));
	if (!deferred)
		return false;
	*deferred = (struct peer_deferred){
		.id = request->id,
		.sample = (nopfs_sample_id)request->sample,
		.size = request->size,
		/* three quarters of the asker's deadline: room for the answer */
		.answer_by = nopfs_clock_now_ns() +
		             (uint64_t)peer_deadline_ms(&plane->config, request->size) * 750000u,
		.asker = request->asker,
		.generation = request->auth.generation,
	};
	pthread_mutex_lock(&plane->deferred_lock);
	if (plane->deferred_count >= PEER_DEFERRED_MAX) {
		pthread_mutex_unlock(&plane->deferred_lock);
		free(deferred);
		return false;
	}
	if (plane->deferred_last)
		plane->deferred_last->next = deferred;
	else
		plane->deferred = deferred;
	plane->deferred_last = deferred;
	plane->deferred_count++;
	pthread_cond_signal(&plane->deferred_ready);
	pthread_mutex_unlock(&plane->deferred_lock);
	return true;
}

/* Fill @reply's header: "not available" to @request. */
static void not_available(struct peer_plane *plane, const struct peer_request *request,
                          struct peer_reply *reply)
{
	reply->header = (struct peer_response){
		.auth.generation = request->auth.generation,
		.id = request->id,
		.answer = PEER_ANSWER_NOT_AVAILABLE,
		.owner = plane->config.node,
		.asker = request->asker,
	};
}

/*
 * Fill @reply for @request (its header says "not available"): the bytes
 * (their count), not available (0), or UINT64_MAX when the request was
 * deferred (no reply now).
 */
static uint64_t answer(struct peer_plane *plane, const struct peer_request *request,
                       struct peer_reply *reply)
{
	nopfs_status status;

	/* A number past any sample id names none: as the serve callback would say. */
	if (!peer_serve_is_serving(plane, request->auth.generation) ||
	    reply->capacity < request->size || request->sample > NOPFS_SAMPLE_ID_MAX)
		return 0;
	status = plane->config.serve(plane->config.serve_arg, (nopfs_sample_id)request->sample,
	                             reply->data, request->size);
	if (status == NOPFS_ERR_NOT_FOUND)
		return 0;
	if (status == NOPFS_ERR_AGAIN && defer(plane, request))
		return UINT64_MAX;
	if (status == NOPFS_ERR_AGAIN)
		return 0;
	if (status != NOPFS_OK) {
		nopfs_error("node %u: serving sample %" PRIu64 " to node %u: %s",
		            plane->config.node, request->sample, request->asker,
		            nopfs_status_string(status));
		return 0;
	}
	reply->header.answer = PEER_ANSWER_BYTES;
	peer_count(plane, served, 1);
	peer_count(plane, served_bytes, request->size);
	return request->size;
}

uint64_t peer_size_bound(struct peer_plane *plane)
{
	uint64_t size = atomic_load(&plane->max_sample_size);

	return size ? size : PEER_SIZE_MAX;
}

/* Whether @request is inside the plan's bounds (counted and logged if not). */
bool peer_serve_in_bounds(struct peer_plane *plane, const struct peer_request *request)
{
	uint64_t samples = atomic_load(&plane->max_samples);

	if ((samples && request->sample >= samples) || request->size > peer_size_bound(plane)) {
		peer_auth_reject(plane, request->asker,
		                 "a request outside the catalog (sample number or size)");
		return false;
	}
	return true;
}

ucs_status_t peer_serve_request(void *arg, const void *header, size_t header_length, void *data,
                                size_t length, const ucp_am_recv_param_t *param)
{
	struct peer_plane *plane = arg;
	struct peer_request request;
	struct peer_reply *reply;
	uint64_t bytes = 0;
	bool in_bounds;

	if (!peer_auth_open(plane, PEER_AM_REQUEST, header, header_length, data, length, &request,
	                    sizeof(request)))
		return UCS_OK;
	if (request.asker != request.auth.node || length != 0 ||
	    !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
		peer_auth_reject(plane, request.auth.node, "a malformed request");
		return UCS_OK;
	}
	in_bounds = peer_serve_in_bounds(plane, &request);
	reply = reply_get(plane, in_bounds && peer_serve_is_serving(plane, request.auth.generation)
	                                 ? request.size
	                                 : 0);
	if (!reply) {
		nopfs_error("node %u: no memory to serve %" PRIu64 " bytes of sample %" PRIu64
		            " to node %u; answering not available",
		            plane->config.node, request.size, request.sample, request.asker);
		reply = reply_get(plane, 0);
		if (!reply)
			return UCS_OK;
	}
	not_available(plane, &request, reply);
	if (in_bounds)
		bytes = answer(plane, &request, reply);
	if (bytes == UINT64_MAX)
		reply_put(reply); /* the answering thread replies */
	else
		send_reply(plane, param->reply_ep, reply, bytes);
	return UCS_OK;
}

/* Fetch a deferred request's sample and answer the asker on our connection. */
static void answer_deferred(struct peer_plane *plane, const struct peer_deferred *deferred)
{
	struct peer_reply *reply = reply_get(plane, deferred->size);
	struct peer_node *asker = peer_node_find(plane, deferred->asker);
	struct peer_conn *conn;
	uint64_t bytes = 0;

	if (!reply)
		return; /* the asker's deadline passes: it reads the PFS */
	reply->header = (struct peer_response){
		.auth.generation = deferred->generation,
		.id = deferred->id,
		.answer = PEER_ANSWER_NOT_AVAILABLE,
		.owner = plane->config.node,
		.asker = deferred->asker,
	};
	if (peer_serve_is_serving(plane, deferred->generation) &&
	    nopfs_clock_now_ns() < deferred->answer_by &&
	    plane->config.fill(plane->config.serve_arg, deferred->sample, reply->data,
	                       deferred->size, deferred->answer_by) == NOPFS_OK) {
		reply->header.answer = PEER_ANSWER_BYTES;
		bytes = deferred->size;
	}
	if (!asker || peer_node_acquire(plane, asker, &conn) != NOPFS_OK) {
		reply_put(reply);
		return;
	}
	if (peer_conn_lock(conn) != NOPFS_OK) {
		reply_put(reply);
	} else {
		send_reply(plane, conn->ep, reply, bytes);
		peer_conn_unlock(conn);
		if (bytes) {
			peer_count(plane, served, 1);
			peer_count(plane, served_bytes, bytes);
		}
	}
	peer_conn_put(conn);
}

static void *answerer_main(void *arg)
{
	struct peer_plane *plane = arg;

	pthread_mutex_lock(&plane->deferred_lock);
	for (;;) {
		struct peer_deferred *deferred;

		while (!plane->deferred && !atomic_load(&plane->stopping))
			pthread_cond_wait(&plane->deferred_ready, &plane->deferred_lock);
		if (atomic_load(&plane->stopping))
			break;
		deferred = plane->deferred;
		plane->deferred = deferred->next;
		if (!plane->deferred)
			plane->deferred_last = NULL;
		plane->deferred_count--;
		pthread_mutex_unlock(&plane->deferred_lock);
		answer_deferred(plane, deferred);
		free(deferred);
		pthread_mutex_lock(&plane->deferred_lock);
	}
	pthread_mutex_unlock(&plane->deferred_lock);
	return NULL;
}

nopfs_status peer_answerer_start(struct peer_plane *plane)
{
	int rc;

	if (!plane->config.fill || !plane->config.serve)
		return NOPFS_OK;
	rc = pthread_create(&plane->answerer, NULL, answerer_main, plane);
	if (rc != 0) {
		nopfs_error("node %u: cannot start the answering thread: %s", plane->config.node,
		            strerror(rc));
		return nopfs_status_from_errno(rc);
	}
	plane->answerer_started = true;
	return NOPFS_OK;
}

/* With plane->stopping set: the answer being made is finished, the rest dropped. */
void peer_answerer_stop(struct peer_plane *plane)
{
	if (plane->answerer_started) {
		pthread_mutex_lock(&plane->deferred_lock);
		pthread_cond_broadcast(&plane->deferred_ready);
		pthread_mutex_unlock(&plane->deferred_lock);
		pthread_join(plane->answerer, NULL);
		plane->answerer_started = false;
	}
	while (plane->deferred) {
		struct peer_deferred *deferred = plane->deferred;

		plane->deferred = deferred->next;
		free(deferred);
	}
	plane->deferred_last = NULL;
	plane->deferred_count = 0;
}

/* After the worker is gone: no answer is in flight any more. */
void peer_serve_destroy(struct peer_plane *plane)
{
	while (plane->spares) {
		struct peer_reply *reply = plane->spares;

		plane->spares = reply->next;
		free(reply);
	}
	plane->spare_count = 0;
}
