/*
 * The data plane: UCX context and worker, the active-message handlers and
 * the progress thread. The regions it exposes and its record are in
 * peer_regions.c, the authentication of its messages in peer_auth.c.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"
#include "peer_internal.h"

/* Whether @name is a UCX transport doing one-sided reads in hardware (verbs). */
static bool is_rdma_transport(const char *name, size_t length)
{
	static const char *const rdma[] = { "rc",      "rc_v", "rc_x", "rc_verbs",
		                            "rc_mlx5", "dc",   "dc_x", "dc_mlx5" };

	for (size_t i = 0; i < sizeof(rdma) / sizeof(rdma[0]); i++)
		if (strlen(rdma[i]) == length && strncasecmp(name, rdma[i], length) == 0)
			return true;
	return false;
}

/*
 * Whether UCX can only use transports whose one-sided reads the hardware
 * checks (remote key, bounds): UCX_TLS lists verbs RDMA transports and
 * nothing else. Unset, "all", an exclusion ("^...") or any other transport
 * (tcp, shared memory, ud, ...) may end up in UCX's software emulation,
 * which serves any address of the process.
 */
static bool transports_are_rdma(void)
{
	const char *tls = getenv("UCX_TLS");

	if (!tls || !*tls)
		return false;
	while (*tls) {
		size_t length = strcspn(tls, ",");

		if (!is_rdma_transport(tls, length))
			return false;
		tls += length + (tls[length] == ',');
	}
	return true;
}

static bool one_sided_allowed(const struct peer_config *config)
{
	switch (config->one_sided) {
	case PEER_ONE_SIDED_RDMA:
		return transports_are_rdma();
	case PEER_ONE_SIDED_EMULATED:
		return true;
	default:
		return false;
	}
}

/*
 * Without one-sided reads the context has no RMA feature: UCX then installs
 * no handler for the software-emulated gets and puts a peer could send.
 */
static nopfs_status context_create(struct peer_plane *plane)
{
	ucp_params_t params = {
		.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME,
		.features = (plane->one_sided ? UCP_FEATURE_RMA : 0) | UCP_FEATURE_AM |
		            UCP_FEATURE_WAKEUP,
		.name = "nopfs",
	};
	ucp_config_t *config;
	ucs_status_t status;

	status = ucp_config_read(NULL, NULL, &config);
	if (status != UCS_OK) {
		nopfs_error("node %u: cannot read the UCX configuration: %s", plane->config.node,
		            ucs_status_string(status));
		return NOPFS_ERR_INVALID;
	}
	/*
	 * UCX's TCP transport connects with a blocking connect() inside
	 * ucp_ep_create(), under the worker lock: a node that does not answer
	 * SYNs would stall the whole plane for the kernel's connect timeout,
	 * far past any deadline. Connect without blocking unless told.
	 */
	if (!getenv("UCX_TCP_CONN_NB")) {
		status = ucp_config_modify(config, "CONN_NB", "y");
		if (status != UCS_OK)
			nopfs_warning("node %u: cannot set UCX_TCP_CONN_NB: %s", plane->config.node,
			              ucs_status_string(status));
	}
	status = ucp_init(&params, config, &plane->context);
	ucp_config_release(config);
	if (status != UCS_OK) {
		nopfs_error("node %u: cannot initialize UCX: %s", plane->config.node,
		            ucs_status_string(status));
		return NOPFS_ERR_UNSUPPORTED;
	}
	return NOPFS_OK;
}

/*
 * A worker shared by the callers' threads and the progress thread, which
 * sleeps on its event file descriptor.
 */
static nopfs_status worker_create(struct peer_plane *plane)
{
	ucp_worker_params_t params = {
		.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
		.thread_mode = UCS_THREAD_MODE_MULTI,
	};
	ucp_worker_attr_t attr = { .field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE };
	nopfs_status result = NOPFS_ERR_UNSUPPORTED;
	ucs_status_t status;

	status = ucp_worker_create(plane->context, &params, &plane->worker);
	if (status != UCS_OK) {
		nopfs_error("node %u: cannot create a UCX worker: %s", plane->config.node,
		            ucs_status_string(status));
		return NOPFS_ERR_IO;
	}
	status = ucp_worker_query(plane->worker, &attr);
	if (status != UCS_OK || attr.thread_mode != UCS_THREAD_MODE_MULTI) {
		nopfs_error("node %u: this UCX has no multi-threaded workers (built without "
		            "--enable-mt?)",
		            plane->config.node);
		goto out_destroy_worker;
	}
	status = ucp_worker_get_efd(plane->worker, &plane->worker_fd);
	if (status != UCS_OK) {
		nopfs_error("node %u: no event descriptor for the UCX worker: %s",
		            plane->config.node, ucs_status_string(status));
		goto out_destroy_worker;
	}
	return NOPFS_OK;

out_destroy_worker:
	ucp_worker_destroy(plane->worker);
	return result;
}

static nopfs_status handler_set(struct peer_plane *plane, unsigned int id,
                                ucp_am_recv_callback_t cb)
{
	ucp_am_handler_param_t param = {
		.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
		              UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG,
		.id = id,
		.flags = UCP_AM_FLAG_WHOLE_MSG,
		.cb = cb,
		.arg = plane,
	};
	ucs_status_t status = ucp_worker_set_am_recv_handler(plane->worker, &param);

	if (status != UCS_OK) {
		nopfs_error("node %u: cannot set the UCX active-message handler %u: %s",
		            plane->config.node, id, ucs_status_string(status));
		return NOPFS_ERR_IO;
	}
	return NOPFS_OK;
}

/*
 * Progress until the worker is idle, arm its event descriptor, sleep on it
 * (and on the stop descriptor). Should arming fail, poll every millisecond
 * rather than stop: gets over TCP need this thread.
 */
static void *progress_main(void *arg)
{
	struct peer_plane *plane = arg;
	struct pollfd fds[2] = { { .fd = plane->stop_fd, .events = POLLIN },
		                 { .fd = plane->worker_fd, .events = POLLIN } };
	bool armed_ok = true;

	for (;;) {
		ucs_status_t status;
		int timeout = -1;

		while (ucp_worker_progress(plane->worker))
			;
		status = ucp_worker_arm(plane->worker);
		if (status == UCS_ERR_BUSY)
			continue;
		if (status != UCS_OK) {
			if (armed_ok)
				nopfs_error("node %u: cannot arm the UCX worker: %s; polling",
				            plane->config.node, ucs_status_string(status));
			armed_ok = false;
			timeout = 1;
		}
		if (poll(fds, 2, timeout) < 0 && errno != EINTR) {
			nopfs_error("node %u: progress thread: poll: %m", plane->config.node);
			fds[1].fd = -1; /* keep stopping possible; progress by polling */
			armed_ok = false;
		}
		if (fds[0].revents)
			break;
	}
	return NULL;
}

static nopfs_status progress_start(struct peer_plane *plane)
{
	int rc;

	plane->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (plane->stop_fd < 0) {
		nopfs_error("node %u: eventfd for the progress thread: %m", plane->config.node);
		return nopfs_status_from_errno(errno);
	}
	rc = pthread_create(&plane->progress, NULL, progress_main, plane);
	if (rc != 0) {
		nopfs_error("node %u: cannot start the progress thread: %s", plane->config.node,
		            strerror(rc));
		close(plane->stop_fd);
		return nopfs_status_from_errno(rc);
	}
	return NOPFS_OK;
}

static void progress_stop(struct peer_plane *plane)
{
	uint64_t one = 1;

	if (write(plane->stop_fd, &one, sizeof(one)) != sizeof(one))
		nopfs_error("node %u: cannot stop the progress thread: %m", plane->config.node);
	else
		pthread_join(plane->progress, NULL);
	close(plane->stop_fd);
}

static bool config_is_valid(const struct peer_config *config)
{
	if (config->timeout_ms <= 0) {
		nopfs_error("node %u: peer timeout %d ms is not positive", config->node,
		            config->timeout_ms);
		return false;
	}
	if ((!config->ram_base && config->ram_bytes) ||
	    (!config->state_base && config->state_bytes)) {
		nopfs_error("node %u: a region to expose has a length but no address",
		            config->node);
		return false;
	}
	return true;
}

static void plane_free(struct peer_plane *plane)
{
	peer_auth_fini(plane);
	pthread_mutex_destroy(&plane->windows_lock);
	pthread_mutex_destroy(&plane->replies_lock);
	pthread_cond_destroy(&plane->deferred_ready);
	pthread_mutex_destroy(&plane->deferred_lock);
	pthread_mutex_destroy(&plane->pending_lock);
	pthread_mutex_destroy(&plane->nodes_lock);
	free(plane);
}

nopfs_status peer_plane_create(const struct peer_config *config, struct peer_plane **out)
{
	struct peer_plane *plane;
	nopfs_status status;

	if (!config_is_valid(config))
		return NOPFS_ERR_INVALID;
	plane = calloc(1, sizeof(*plane));
	if (!plane) {
		nopfs_error("node %u: no memory for the peer plane", config->node);
		return NOPFS_ERR_NOMEM;
	}
	plane->config = *config;
	plane->one_sided = one_sided_allowed(config);
	atomic_init(&plane->max_samples, config->max_samples);
	atomic_init(&plane->max_sample_size, config->max_sample_size);
	pthread_mutex_init(&plane->windows_lock, NULL);
	pthread_mutex_init(&plane->nodes_lock, NULL);
	pthread_mutex_init(&plane->pending_lock, NULL);
	pthread_mutex_init(&plane->replies_lock, NULL);
	pthread_mutex_init(&plane->deferred_lock, NULL);
	pthread_cond_init(&plane->deferred_ready, NULL);

	status = peer_auth_init(plane);
	if (status != NOPFS_OK)
		goto out_free_plane;
	status = context_create(plane);
	if (status != NOPFS_OK)
		goto out_free_plane;
	status = worker_create(plane);
	if (status != NOPFS_OK)
		goto out_cleanup_context;
	status = peer_stream_start(plane);
	if (status != NOPFS_OK)
		goto out_destroy_worker;
	status = peer_regions_map(plane);
	if (status != NOPFS_OK)
		goto out_stop_stream;
	status = peer_record_build(plane);
	if (status != NOPFS_OK)
		goto out_unmap_regions;
	status = handler_set(plane, PEER_AM_REQUEST, peer_serve_request);
	if (status == NOPFS_OK)
		status = handler_set(plane, PEER_AM_RESPONSE, peer_fetch_answered);
	if (status == NOPFS_OK)
		status = handler_set(plane, PEER_AM_NOTICE, peer_notice_received);
	if (status == NOPFS_OK)
		status = peer_answerer_start(plane);
	if (status != NOPFS_OK)
		goto out_free_record;
	status = progress_start(plane);
	if (status != NOPFS_OK)
		goto out_stop_answerer;
	*out = plane;
	return NOPFS_OK;

out_stop_answerer:
	atomic_store(&plane->stopping, true);
	peer_answerer_stop(plane);
out_free_record:
	free(plane->record_blobs);
out_unmap_regions:
	peer_regions_unmap(plane);
out_stop_stream:
	atomic_store(&plane->stopping, true);
	peer_stream_stop(plane);
out_destroy_worker:
	ucp_worker_destroy(plane->worker);
out_cleanup_context:
	ucp_cleanup(plane->context);
out_free_plane:
	plane_free(plane);
	return status;
}

const struct peer_record *peer_plane_local_record(struct peer_plane *plane)
{
	return &plane->record;
}

nopfs_status peer_plane_connect(struct peer_plane *plane, uint32_t node,
                                const struct peer_record *record)
{
	return peer_node_connect(plane, node, record);
}

void peer_plane_stats(struct peer_plane *plane, struct peer_stats *stats)
{
	const struct peer_counters *c = &plane->counters;

	*stats = (struct peer_stats){
		.gets = atomic_load_explicit(&c->gets, memory_order_relaxed),
		.get_bytes = atomic_load_explicit(&c->get_bytes, memory_order_relaxed),
		.not_present = atomic_load_explicit(&c->not_present, memory_order_relaxed),
		.requests = atomic_load_explicit(&c->requests, memory_order_relaxed),
		.request_bytes = atomic_load_explicit(&c->request_bytes, memory_order_relaxed),
		.stream_requests = atomic_load_explicit(&c->stream_requests, memory_order_relaxed),
		.not_available = atomic_load_explicit(&c->not_available, memory_order_relaxed),
		.timeouts = atomic_load_explicit(&c->timeouts, memory_order_relaxed),
		.errors = atomic_load_explicit(&c->errors, memory_order_relaxed),
		.served = atomic_load_explicit(&c->served, memory_order_relaxed),
		.served_bytes = atomic_load_explicit(&c->served_bytes, memory_order_relaxed),
		.refused = atomic_load_explicit(&c->refused, memory_order_relaxed),
		.dropped = atomic_load_explicit(&c->dropped, memory_order_relaxed),
	};
}

/*
 * The endpoints are closed before the worker goes; answers still in flight
 * are completed by the worker's destruction, and return their buffers.
 */
void peer_plane_destroy(struct peer_plane *plane)
{
	if (!plane)
		return;
	atomic_store(&plane->stopping, true);
	peer_stream_stop(plane);
	peer_answerer_stop(plane); /* may still need progress to send its answer */
	progress_stop(plane);
	peer_nodes_destroy(plane);
	free(plane->record_blobs);
	peer_regions_unmap(plane);
	ucp_worker_destroy(plane->worker);
	peer_serve_destroy(plane);
	ucp_cleanup(plane->context);
	plane_free(plane);
}
