/*
 * The stream path: request/response fetches over the kernel's TCP, where
 * UCX has no hardware RDMA. UCX's TCP transport copies every byte of a
 * sample through its own segments on both sides; a socket of our own moves
 * the bytes from the holder's buffer to the asker's with the kernel's two
 * copies only, as plain TCP does.
 *
 * Authentication is the same as UCX's messages: the job's key, the sender's
 * nonces. A connection starts with a sealed hello both ways (the asker's
 * node, the owner it means to reach): an accepted connection that does not
 * authenticate within a short time is closed, and its node is from then on
 * the only one whose requests it carries. A request is the sealed struct
 * peer_request of the UCX path; the answer a sealed struct peer_response
 * (kind PEER_STREAM_RESPONSE, the size in its length) and, when it carries
 * the bytes, parts of PART_CHUNKS chunks of PEER_STREAM_CHUNK bytes, each
 * part followed by its chunks' tags, keyed for the owner's chunks, nonce
 * (chunk index, the response's sequence number): both sides tag a part
 * while its bytes travel; the asker checks each chunk once its tag has
 * come and never keeps bytes that did not verify, nor a chunk moved or
 * taken from another response.
 *
 * Asking: a few connections per node are kept open, each used by one fetch
 * at a time. A fetch that finds none free, a node that published no stream
 * addresses, or one that could not be reached lately, goes through UCX.
 * The answer's header may come as late as the fetch's deadline (the owner
 * may be fetching the sample); its bytes may come later while they keep
 * coming (progress_deadline()). On any failure the connection is closed
 * (its state is unknown) and the caller reads the PFS.
 *
 * Answering: an acceptor thread and a thread per connection, at most
 * STREAM_SERVED_MAX of them. A sample goes a part (up to PART_CHUNKS
 * chunks) at a time: lent where it is by the serve_view callback (a RAM
 * tier) and sent from there without waiting, or read by serve_range into a
 * part's buffer; without those, the
 * serve callback copies it whole into the connection's buffer (at most the
 * plan's largest sample). A sample this agent keeps but has not fetched is
 * filled there by the fill callback, as the answering thread of the UCX
 * path does.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <net/if.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "peer_internal.h"

#define PEER_STREAM_CHUNK (64 * 1024)
#define PART_CHUNKS       4   /* chunks sent in one call, then their tags: one wait, one lock */
#define STREAM_OPEN_MAX   8   /* connections to one node, in use or idle */
#define STREAM_SERVED_MAX 256 /* connections answered at once */
#define STREAM_HELLO_MS   2000
#define STREAM_CONNECT_MS 1000
#define PROGRESS_MAX_MS   60000 /* an answer still coming: this long past its deadline */

/* An accepted connection and its thread. */
struct peer_served {
	struct peer_plane *plane;
	struct peer_served *next;
	int fd;
	uint32_t asker;         /* once it said hello */
	EVP_CIPHER_CTX *chunks; /* keyed for this node's chunks */
	unsigned char *buffer;
	uint64_t capacity;
	/* what the socket did not take of a part lent by serve_view */
	unsigned char spill[sizeof(struct peer_response) +
	                    PART_CHUNKS * (2 * PEER_TAG_BYTES + PEER_STREAM_CHUNK)];
};

/* ------------------------------------------------------------------------
 * Sockets with deadlines.
 */

static int remaining_ms(uint64_t deadline)
{
	uint64_t now = nopfs_clock_now_ns();

	if (now >= deadline)
		return 0;
	return (deadline - now) / 1000000u > INT32_MAX
	               ? INT32_MAX
	               : (int)((deadline - now + 999999u) / 1000000u);
}

/* Wait for @events on @fd until @deadline; NOPFS_ERR_TIMEOUT past it. */
static nopfs_status wait_for(int fd, short events, uint64_t deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };

	for (;;) {
		int timeout = remaining_ms(deadline), rc;

		if (timeout == 0)
			return NOPFS_ERR_TIMEOUT;
		rc = poll(&pfd, 1, timeout);
		if (rc > 0)
			return NOPFS_OK;
		if (rc < 0 && errno != EINTR)
			return NOPFS_ERR_IO;
	}
}

/*
 * Bound each blocking call on @fd (@option: SO_RCVTIMEO or SO_SNDTIMEO) by
 * what is left until @deadline (0: unbounded); false if nothing is left.
 * Once a connection is up, each call is bounded by the plane's timeout
 * (call_bound()) and every exchange checks its own deadline between calls:
 * a peer that sends nothing for that long, or trickles, fails it.
 */
static bool bound_calls(int fd, int option, uint64_t deadline)
{
	struct timeval tv = { 0 };

	if (deadline) {
		int ms = remaining_ms(deadline);

		if (ms == 0)
			return false;
		tv.tv_sec = ms / 1000;
		tv.tv_usec = (ms % 1000) * 1000;
	}
	return setsockopt(fd, SOL_SOCKET, option, &tv, sizeof(tv)) == 0;
}

/* The deadline of a call starting now: the plane's timeout, without the size's part. */
static uint64_t call_bound(const struct peer_plane *plane)
{
	return nopfs_clock_now_ns() + (uint64_t)plane->config.timeout_ms * 1000000u;
}

/*
 * An answer whose bytes keep coming (never the plane's timeout apart) is
 * not cut at the deadline its size gave: each part that goes through moves
 * @deadline to the plane's timeout from now, up to @last (PROGRESS_MAX_MS
 * past the size's deadline), so that a slow answer of a peer that still
 * answers never closes the connection, and a trickle still ends.
 */
static uint64_t progress_deadline(const struct peer_plane *plane, uint64_t deadline, uint64_t last)
{
	uint64_t moved = call_bound(plane);

	if (moved > last)
		moved = last;
	return moved > deadline ? moved : deadline;
}

/* The last deadline of an answer of @size bytes started now (progress_deadline()). */
static uint64_t last_deadline(const struct peer_plane *plane, uint64_t size)
{
	return nopfs_clock_now_ns() +
	       ((uint64_t)peer_deadline_ms(&plane->config, size) + PROGRESS_MAX_MS) * 1000000u;
}

/* Move @iov past @done bytes. */
static void iov_advance(struct iovec **iov, int *count, size_t done)
{
	while (*count > 0 && done >= (*iov)->iov_len) {
		done -= (*iov)->iov_len;
		(*iov)++;
		(*count)--;
	}
	if (*count > 0) {
		(*iov)->iov_base = (char *)(*iov)->iov_base + done;
		(*iov)->iov_len -= done;
	}
}

/*
 * Read into @iov from blocking @fd (calls bounded by bound_calls()) until
 * at least @least bytes came or @iov is full, by @deadline (0: none; a
 * shutdown() ends the wait); *@iov and *@count are advanced past what was
 * read. End of stream is NOPFS_ERR_IO.
 */
static nopfs_status read_at_least(int fd, struct iovec **iov, int *count, size_t least,
                                  uint64_t deadline)
{
	size_t got_total = 0;

	while (*count > 0 && got_total < least) {
		ssize_t got = readv(fd, *iov, *count);

		if (got > 0) {
			iov_advance(iov, count, (size_t)got);
			got_total += (size_t)got;
			if (*count > 0 && got_total < least && deadline &&
			    nopfs_clock_now_ns() >= deadline)
				return NOPFS_ERR_TIMEOUT;
			continue;
		}
		if (got == 0)
			return NOPFS_ERR_IO;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK ? NOPFS_ERR_TIMEOUT : NOPFS_ERR_IO;
	}
	return NOPFS_OK;
}

static nopfs_status read_all(int fd, struct iovec *iov, int count, uint64_t deadline)
{
	return read_at_least(fd, &iov, &count, SIZE_MAX, deadline);
}

/* Write what @iov describes to blocking @fd (as read_at_least()). */
static nopfs_status write_all(int fd, struct iovec *iov, int count, uint64_t deadline)
{
	while (count > 0) {
		struct msghdr msg = { .msg_iov = iov, .msg_iovlen = (size_t)count };
		ssize_t sent = sendmsg(fd, &msg, MSG_NOSIGNAL);

		if (sent >= 0) {
			iov_advance(&iov, &count, (size_t)sent);
			if (count > 0 && deadline && nopfs_clock_now_ns() >= deadline)
				return NOPFS_ERR_TIMEOUT;
			continue;
		}
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK ? NOPFS_ERR_TIMEOUT : NOPFS_ERR_IO;
	}
	return NOPFS_OK;
}

static nopfs_status read_exact(int fd, void *data, size_t length, uint64_t deadline)
{
	struct iovec iov = { .iov_base = data, .iov_len = length };

	return read_all(fd, &iov, 1, deadline);
}

static nopfs_status write_exact(int fd, const void *data, size_t length, uint64_t deadline)
{
	struct iovec iov = { .iov_base = (void *)data, .iov_len = length };

	return write_all(fd, &iov, 1, deadline);
}

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* ------------------------------------------------------------------------
 * Hellos.
 */

static nopfs_status hello_send(struct peer_plane *plane, int fd, uint32_t asker, uint32_t owner,
                               uint64_t deadline)
{
	struct peer_hello hello = { .asker = asker, .owner = owner };
	nopfs_status status =
	        peer_auth_seal(plane, PEER_STREAM_HELLO, 0, &hello, sizeof(hello), NULL, 0);

	if (status != NOPFS_OK)
		return status;
	if (!bound_calls(fd, SO_SNDTIMEO, deadline))
		return NOPFS_ERR_TIMEOUT;
	return write_exact(fd, &hello, sizeof(hello), deadline);
}

/* The other end's hello, if it authenticates (the caller checks who it names). */
static bool hello_receive(struct peer_plane *plane, int fd, uint64_t deadline,
                          struct peer_hello *hello)
{
	struct peer_hello received;

	return bound_calls(fd, SO_RCVTIMEO, deadline) &&
	       read_exact(fd, &received, sizeof(received), deadline) == NOPFS_OK &&
	       peer_auth_open(plane, PEER_STREAM_HELLO, &received, sizeof(received), NULL, 0, hello,
	                      sizeof(*hello));
}

/* ------------------------------------------------------------------------
 * Answering.
 */

/* Seal and send the header of a "not available" answer to @request. */
static nopfs_status send_not_available(struct peer_served *served,
                                       const struct peer_request *request, uint64_t deadline)
{
	struct peer_response header = {
		.id = request->id,
		.answer = PEER_ANSWER_NOT_AVAILABLE,
		.owner = served->plane->config.node,
		.asker = request->asker,
	};
	nopfs_status status =
	        peer_auth_seal(served->plane, PEER_STREAM_RESPONSE, request->auth.generation,
	                       &header, sizeof(header), NULL, 0);

	return status == NOPFS_OK ? write_exact(served->fd, &header, sizeof(header), deadline)
	                          : status;
}

/*
 * An answer with bytes being sent: its header with the first part
 * (PART_CHUNKS chunks), then the others, each after the tags of the one
 * before, and the last part's tags.
 */
struct answer_out {
	struct peer_served *served;
	const struct peer_request *request;
	uint64_t deadline;  /* moved on as parts go (progress_deadline()) */
	uint64_t last;      /* up to this */
	uint64_t seq;       /* the header's, once sealed */
	uint64_t offset;    /* of the part to send, in the sample */
	size_t length;      /* its length */
	uint64_t plan;      /* the first part's plan */
	uint64_t part_plan; /* this part's */
	bool started;       /* something was sent: the answer cannot be another now */
	size_t pending;     /* bytes in served->spill still to send */
	unsigned char tags[PART_CHUNKS][PEER_TAG_BYTES]; /* the last part's, not sent yet */
	size_t tags_length;
};

static size_t chunk_length(uint64_t size, uint64_t offset)
{
	return size - offset < PEER_STREAM_CHUNK ? (size_t)(size - offset) : PEER_STREAM_CHUNK;
}

/* The number of the chunk at @offset (chunks start at multiples of their size). */
static uint32_t chunk_index(uint64_t offset)
{
	return (uint32_t)(offset / PEER_STREAM_CHUNK);
}

/* The part at @offset: PART_CHUNKS chunks, or what is left. */
static size_t part_length(uint64_t size, uint64_t offset)
{
	return size - offset < PART_CHUNKS * PEER_STREAM_CHUNK ? (size_t)(size - offset)
	                                                       : PART_CHUNKS * PEER_STREAM_CHUNK;
}

/*
 * @iov sent on the served socket, after what is already set aside. With
 * @wait false nothing blocks: what the socket does not take at once is
 * copied to the spill buffer, which answer_flush() sends once the lender
 * of the bytes is done.
 */
static nopfs_status send_or_spill(struct answer_out *out, struct iovec *iov, int count, bool wait)
{
	struct peer_served *served = out->served;
	ssize_t sent = 0;

	if (wait)
		return write_all(served->fd, iov, count, out->deadline);
	if (out->pending == 0) {
		struct msghdr msg = { .msg_iov = iov, .msg_iovlen = (size_t)count };

		do
			sent = sendmsg(served->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		while (sent < 0 && errno == EINTR);
		if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return NOPFS_ERR_IO;
	}
	iov_advance(&iov, &count, sent > 0 ? (size_t)sent : 0);
	for (int i = 0; i < count; i++) {
		memcpy(served->spill + out->pending, iov[i].iov_base, iov[i].iov_len);
		out->pending += iov[i].iov_len;
	}
	return NOPFS_OK;
}

/*
 * Send the part at out->offset (@data) in one call, after the header if it
 * is the first, after the tags of the part before if not. The part's own
 * tags are worked out once its bytes are on their way (while the asker
 * takes them, and works out the same) and go first in the next part's
 * call, or alone after the sample's last part. @wait as send_or_spill().
 */
static nopfs_status part_send(struct answer_out *out, const unsigned char *data, bool wait)
{
	struct peer_served *served = out->served;
	struct peer_response header = {
		.id = out->request->id,
		.answer = PEER_ANSWER_BYTES,
		.owner = served->plane->config.node,
		.asker = out->request->asker,
	};
	struct iovec iovs[2], tags;
	size_t c = 0;
	nopfs_status status;

	/* the length is the sample's size; its bytes follow, a part then its tags */
	if (out->offset == 0) {
		if (peer_auth_seal(served->plane, PEER_STREAM_RESPONSE,
		                   out->request->auth.generation, &header, sizeof(header), NULL,
		                   out->request->size) != NOPFS_OK)
			return NOPFS_ERR_INTERNAL;
		out->seq = header.auth.seq;
		iovs[0] = (struct iovec){ &header, sizeof(header) };
	} else {
		iovs[0] = (struct iovec){ out->tags, out->tags_length };
	}
	iovs[1] = (struct iovec){ (void *)data, out->length };
	out->started = true;
	status = send_or_spill(out, iovs, 2, wait);
	if (status != NOPFS_OK)
		return status;
	for (size_t at = 0, length; at < out->length; at += length, c++) {
		length = chunk_length(out->request->size, out->offset + at);
		if (!peer_auth_chunk_tag(served->chunks, out->seq, chunk_index(out->offset + at),
		                         data + at, length, out->tags[c]))
			return NOPFS_ERR_INTERNAL;
	}
	out->tags_length = c * PEER_TAG_BYTES;
	if (out->offset + out->length < out->request->size)
		return NOPFS_OK;
	tags = (struct iovec){ out->tags, out->tags_length };
	return send_or_spill(out, &tags, 1, wait);
}

/* Move @out to its next part. */
static void part_next(struct answer_out *out)
{
	out->offset += out->length;
	out->length =
	        out->offset < out->request->size ? part_length(out->request->size, out->offset) : 0;
}

static nopfs_status answer_flush(struct answer_out *out)
{
	size_t pending = out->pending;

	out->pending = 0;
	return pending ? write_exact(out->served->fd, out->served->spill, pending, out->deadline)
	               : NOPFS_OK;
}

/* Whether the part just served is of the first part's plan. */
static bool same_plan(const struct answer_out *out)
{
	return out->offset == 0 || out->part_plan == out->plan;
}

/* serve_view's @take: the part's bytes where they are, if of the first part's plan. */
static nopfs_status take_part(void *arg, const void *bytes, size_t length)
{
	struct answer_out *out = arg;

	if (!same_plan(out))
		return NOPFS_ERR_AGAIN;
	if (length != out->length)
		return NOPFS_ERR_INVALID;
	return part_send(out, bytes, false);
}

/* Room for @size bytes in @served's buffer. */
static bool buffer_reserve(struct peer_served *served, uint64_t size)
{
	unsigned char *grown;

	if (size <= served->capacity)
		return true;
	if (size > SIZE_MAX)
		return false;
	grown = realloc(served->buffer, (size_t)size);
	if (!grown) {
		nopfs_error("node %u: no memory to serve %" PRIu64 " bytes; answering not "
		            "available",
		            served->plane->config.node, size);
		return false;
	}
	served->buffer = grown;
	served->capacity = size;
	return true;
}

/* What serve or fill said of a sample: OK, or "not available" (logged if an error). */
static bool served_ok(struct peer_plane *plane, const struct peer_request *request,
                      nopfs_status status)
{
	if (status == NOPFS_OK)
		return true;
	if (status != NOPFS_ERR_NOT_FOUND && status != NOPFS_ERR_AGAIN)
		nopfs_error("node %u: serving sample %" PRIu64 " to node %u: %s",
		            plane->config.node, request->sample, request->asker,
		            nopfs_status_string(status));
	return false;
}

/*
 * The whole sample into the buffer (serve, or fill for a sample this agent
 * keeps but has not fetched yet), then sent: what the UCX path does.
 */
static nopfs_status answer_whole(struct peer_served *served, const struct peer_request *request,
                                 nopfs_status status, uint64_t deadline, uint64_t *bytes)
{
	struct peer_plane *plane = served->plane;
	uint64_t size = request->size;
	struct answer_out out = { .served = served,
		                  .request = request,
		                  .deadline = deadline,
		                  .length = part_length(size, 0) };

	*bytes = 0;
	if (status == NOPFS_OK && buffer_reserve(served, size))
		status =
		        plane->config.serve(plane->config.serve_arg,
		                            (nopfs_sample_id)request->sample, served->buffer, size);
	else if (status == NOPFS_OK)
		status = NOPFS_ERR_NOMEM;
	if (status == NOPFS_ERR_AGAIN && plane->config.fill && buffer_reserve(served, size)) {
		/* three quarters of the asker's deadline: room for the answer */
		uint64_t answer_by = nopfs_clock_now_ns() +
		                     (uint64_t)peer_deadline_ms(&plane->config, size) * 750000u;

		status = plane->config.fill(plane->config.serve_arg,
		                            (nopfs_sample_id)request->sample, served->buffer, size,
		                            answer_by);
	}
	if (!served_ok(plane, request, status))
		return send_not_available(served, request, deadline);
	out.last = last_deadline(plane, size);
	for (status = NOPFS_OK; status == NOPFS_OK && out.length; part_next(&out)) {
		out.deadline = progress_deadline(plane, out.deadline, out.last);
		status = part_send(&out, served->buffer + out.offset, true);
	}
	if (status == NOPFS_OK)
		*bytes = size;
	return status;
}

/*
 * The sample a part at a time: each lent where it is by the serve_view
 * callback (tagged and sent from there), or read by serve_range into one
 * part's buffer (still in the cache when tagged and sent). Every part must
 * come from the plan the first came from: if a new plan came in between,
 * the connection is closed mid-answer (the asker reads the PFS), never a
 * chunk of another sample sent. A first part that is not there leaves the
 * answer to answer_whole() (fill, or "not available").
 */
static nopfs_status answer_chunks(struct peer_served *served, const struct peer_request *request,
                                  uint64_t deadline, uint64_t *bytes)
{
	const struct peer_config *config = &served->plane->config;
	nopfs_sample_id sample = (nopfs_sample_id)request->sample;
	uint64_t size = request->size;
	struct answer_out out = { .served = served,
		                  .request = request,
		                  .deadline = deadline,
		                  .length = part_length(size, 0) };
	nopfs_status status = NOPFS_OK;

	*bytes = 0;
	if (!buffer_reserve(served, PART_CHUNKS * PEER_STREAM_CHUNK))
		return send_not_available(served, request, deadline);
	out.last = last_deadline(served->plane, size);
	for (; status == NOPFS_OK && out.length; part_next(&out)) {
		if (out.started)
			out.deadline = progress_deadline(served->plane, out.deadline, out.last);
		status = NOPFS_ERR_UNSUPPORTED;
		if (config->serve_view)
			status = config->serve_view(config->serve_arg, sample, size, out.offset,
			                            out.length, &out.part_plan, take_part, &out);
		if (status == NOPFS_ERR_UNSUPPORTED) {
			status = config->serve_range(config->serve_arg, sample, size, out.offset,
			                             served->buffer, out.length, &out.part_plan);
			if (status == NOPFS_OK && !same_plan(&out))
				status = NOPFS_ERR_AGAIN;
			if (status == NOPFS_OK)
				status = part_send(&out, served->buffer, true);
		}
		if (status != NOPFS_OK && !out.started)
			return answer_whole(served, request, status, deadline, bytes);
		if (status == NOPFS_OK)
			status = answer_flush(&out);
		if (out.offset == 0)
			out.plan = out.part_plan;
	}
	if (status == NOPFS_OK)
		*bytes = size;
	return status;
}

/* Answer @request: the bytes, or "not available"; an error closes the connection. */
static nopfs_status answer(struct peer_served *served, const struct peer_request *request,
                           uint64_t *bytes)
{
	struct peer_plane *plane = served->plane;
	uint64_t deadline = nopfs_clock_now_ns() +
	                    (uint64_t)peer_deadline_ms(&plane->config, request->size) * 1000000u;

	*bytes = 0;
	if (!peer_serve_in_bounds(plane, request) ||
	    !peer_serve_is_serving(plane, request->auth.generation) ||
	    request->sample > NOPFS_SAMPLE_ID_MAX || request->size == 0)
		return send_not_available(served, request, deadline);
	if (plane->config.serve_range)
		return answer_chunks(served, request, deadline, bytes);
	return answer_whole(served, request, NOPFS_OK, deadline, bytes);
}

/* Requests on an authenticated connection, until it closes or breaks a rule. */
static void serve_requests(struct peer_served *served)
{
	struct peer_plane *plane = served->plane;

	for (;;) {
		struct peer_request received, request;
		uint64_t bytes;

		if (read_exact(served->fd, &received, sizeof(received), 0) != NOPFS_OK)
			return;
		if (!peer_auth_open(plane, PEER_AM_REQUEST, &received, sizeof(received), NULL, 0,
		                    &request, sizeof(request)))
			return;
		if (request.asker != request.auth.node || request.auth.node != served->asker) {
			peer_auth_reject(plane, request.auth.node,
			                 "a request naming another node than its connection's");
			return;
		}
		if (answer(served, &request, &bytes) != NOPFS_OK)
			return;
		if (bytes) {
			peer_count(plane, served, 1);
			peer_count(plane, served_bytes, bytes);
		}
	}
}

/* Remove @served from the plane's list and free it (its thread's last act). */
static void served_free(struct peer_served *served)
{
	struct peer_plane *plane = served->plane;
	struct peer_served **at;

	pthread_mutex_lock(&plane->stream_lock);
	for (at = &plane->served; *at; at = &(*at)->next) {
		if (*at == served) {
			*at = served->next;
			break;
		}
	}
	plane->served_count--;
	close(served->fd);
	pthread_cond_broadcast(&plane->stream_gone);
	pthread_mutex_unlock(&plane->stream_lock);
	EVP_CIPHER_CTX_free(served->chunks);
	free(served->buffer);
	free(served);
}

static void *served_main(void *arg)
{
	struct peer_served *served = arg;
	struct peer_plane *plane = served->plane;
	uint64_t deadline =
	        nopfs_clock_now_ns() + (uint64_t)(plane->config.timeout_ms < STREAM_HELLO_MS
	                                                  ? plane->config.timeout_ms
	                                                  : STREAM_HELLO_MS) *
	                                       1000000u;
	struct peer_hello hello;

	if (hello_receive(plane, served->fd, deadline, &hello)) {
		if (hello.asker != hello.auth.node || hello.owner != plane->config.node) {
			peer_auth_reject(plane, hello.auth.node,
			                 "a stream connection meant for another node");
		} else {
			served->asker = hello.asker;
			served->chunks = peer_auth_chunk_context(plane, plane->config.node);
			/* then requests are awaited as long as the asker keeps it open */
			if (served->chunks &&
			    hello_send(plane, served->fd, hello.asker, plane->config.node,
			               deadline) == NOPFS_OK &&
			    bound_calls(served->fd, SO_RCVTIMEO, 0) &&
			    bound_calls(served->fd, SO_SNDTIMEO, call_bound(plane)))
				serve_requests(served);
		}
	}
	served_free(served);
	return NULL;
}

/* Take an accepted connection: a thread of its own, unless there are too many. */
static void served_start(struct peer_plane *plane, int fd)
{
	struct peer_served *served = calloc(1, sizeof(*served));
	pthread_attr_t attr;
	pthread_t thread;
	int rc = ENOMEM;

	pthread_mutex_lock(&plane->stream_lock);
	if (!served || plane->served_count >= STREAM_SERVED_MAX || atomic_load(&plane->stopping)) {
		pthread_mutex_unlock(&plane->stream_lock);
		nopfs_debug("node %u: stream connection refused (%u open)", plane->config.node,
		            plane->served_count);
		free(served);
		close(fd);
		return;
	}
	*served = (struct peer_served){ .plane = plane, .fd = fd, .asker = UINT32_MAX };
	set_nodelay(fd);
	if (pthread_attr_init(&attr) == 0) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		rc = pthread_create(&thread, &attr, served_main, served);
		pthread_attr_destroy(&attr);
	}
	if (rc != 0) {
		pthread_mutex_unlock(&plane->stream_lock);
		nopfs_error("node %u: cannot start a thread for a stream connection: %s",
		            plane->config.node, strerror(rc));
		free(served);
		close(fd);
		return;
	}
	served->next = plane->served;
	plane->served = served;
	plane->served_count++;
	pthread_mutex_unlock(&plane->stream_lock);
}

static void *acceptor_main(void *arg)
{
	struct peer_plane *plane = arg;
	struct pollfd fds[2] = { { .fd = plane->stream_stop_fd, .events = POLLIN },
		                 { .fd = plane->stream_listener, .events = POLLIN } };
	bool out_of_room = false;

	for (;;) {
		int fd;

		if (poll(fds, 2, -1) < 0 && errno != EINTR) {
			nopfs_error("node %u: stream acceptor: poll: %m", plane->config.node);
			break;
		}
		if (fds[0].revents)
			break;
		if (!fds[1].revents)
			continue;
		fd = accept4(plane->stream_listener, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0) {
			served_start(plane, fd);
		} else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		           errno == ENOMEM) {
			/* not the peer's fault: do not spin on the pending connection */
			if (!out_of_room)
				nopfs_warning("node %u: cannot accept a stream connection: %m; "
				              "trying again every 100 ms",
				              plane->config.node);
			out_of_room = true;
			if (poll(fds, 1, 100) > 0)
				break;
		}
	}
	return NULL;
}

/* ------------------------------------------------------------------------
 * Where this agent listens.
 */

/*
 * Whether interface @name may carry the stream path: any, unless
 * UCX_NET_DEVICES names the devices UCX may use (then those only, as the
 * admin meant for the plane's traffic).
 */
static bool interface_allowed(const char *name)
{
	const char *devices = getenv("UCX_NET_DEVICES");
	size_t length = strlen(name);

	if (!devices || !*devices || strcmp(devices, "all") == 0)
		return true;
	while (*devices) {
		size_t item = strcspn(devices, ",");

		if (item == length && strncmp(devices, name, length) == 0)
			return true;
		devices += item + (devices[item] == ',');
	}
	return false;
}

/* Add @address (network order) with @port to the record's list, once. */
static void record_add(struct peer_plane *plane, uint32_t address, uint16_t port)
{
	unsigned char entry[PEER_STREAM_ADDRESS_BYTES];

	memcpy(entry, &address, 4);
	memcpy(entry + 4, &port, 2);
	for (size_t at = 0; at < plane->stream_record_length; at += sizeof(entry))
		if (memcmp(plane->stream_record + at, entry, sizeof(entry)) == 0)
			return;
	if (plane->stream_record_length + sizeof(entry) > sizeof(plane->stream_record))
		return;
	memcpy(plane->stream_record + plane->stream_record_length, entry, sizeof(entry));
	plane->stream_record_length += sizeof(entry);
}

/* The IPv4 addresses of the interfaces that are up (loopback only if nothing else). */
static nopfs_status record_addresses(struct peer_plane *plane, uint16_t port)
{
	struct ifaddrs *list, *at;

	if (getifaddrs(&list) != 0) {
		nopfs_error("node %u: getifaddrs: %m", plane->config.node);
		return NOPFS_ERR_IO;
	}
	for (at = list; at; at = at->ifa_next)
		if (at->ifa_addr && at->ifa_addr->sa_family == AF_INET &&
		    (at->ifa_flags & IFF_UP) && !(at->ifa_flags & IFF_LOOPBACK) &&
		    interface_allowed(at->ifa_name))
			record_add(plane, ((struct sockaddr_in *)at->ifa_addr)->sin_addr.s_addr,
			           port);
	freeifaddrs(list);
	if (plane->stream_record_length == 0)
		record_add(plane, htonl(INADDR_LOOPBACK), port);
	return NOPFS_OK;
}

static nopfs_status listener_open(struct peer_plane *plane)
{
	struct sockaddr_in address = { .sin_family = AF_INET,
		                       .sin_addr.s_addr = htonl(INADDR_ANY) };
	socklen_t length = sizeof(address);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&address, sizeof(address)) != 0 ||
	    listen(fd, SOMAXCONN) != 0 ||
	    getsockname(fd, (struct sockaddr *)&address, &length) != 0) {
		nopfs_error("node %u: cannot listen for stream connections: %m",
		            plane->config.node);
		if (fd >= 0)
			close(fd);
		return NOPFS_ERR_IO;
	}
	plane->stream_listener = fd;
	return record_addresses(plane, address.sin_port);
}

nopfs_status peer_stream_start(struct peer_plane *plane)
{
	int rc;

	plane->stream_listener = -1;
	plane->stream_stop_fd = -1;
	pthread_mutex_init(&plane->stream_lock, NULL);
	pthread_cond_init(&plane->stream_gone, NULL);
	if (plane->config.stream == PEER_STREAM_OFF ||
	    (plane->config.stream == PEER_STREAM_AUTO && plane->one_sided))
		return NOPFS_OK;
	if (listener_open(plane) != NOPFS_OK)
		goto off;
	plane->stream_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (plane->stream_stop_fd < 0) {
		nopfs_error("node %u: eventfd for the stream acceptor: %m", plane->config.node);
		goto off;
	}
	rc = pthread_create(&plane->stream_acceptor, NULL, acceptor_main, plane);
	if (rc != 0) {
		nopfs_error("node %u: cannot start the stream acceptor: %s", plane->config.node,
		            strerror(rc));
		goto off;
	}
	plane->stream = true;
	return NOPFS_OK;
off:
	/* the plane works without: its peers ask it through UCX */
	nopfs_warning("node %u: no stream path: fetches go through UCX", plane->config.node);
	if (plane->stream_listener >= 0)
		close(plane->stream_listener);
	if (plane->stream_stop_fd >= 0)
		close(plane->stream_stop_fd);
	plane->stream_listener = plane->stream_stop_fd = -1;
	plane->stream_record_length = 0;
	return NOPFS_OK;
}

/* With plane->stopping set: no new connection; those answered end (bounded by their deadlines). */
void peer_stream_stop(struct peer_plane *plane)
{
	uint64_t one = 1;

	if (plane->stream) {
		if (write(plane->stream_stop_fd, &one, sizeof(one)) != sizeof(one))
			nopfs_error("node %u: cannot stop the stream acceptor: %m",
			            plane->config.node);
		else
			pthread_join(plane->stream_acceptor, NULL);
		plane->stream = false;
	}
	pthread_mutex_lock(&plane->stream_lock);
	for (struct peer_served *served = plane->served; served; served = served->next)
		shutdown(served->fd, SHUT_RDWR);
	while (plane->served_count > 0)
		pthread_cond_wait(&plane->stream_gone, &plane->stream_lock);
	pthread_mutex_unlock(&plane->stream_lock);
	if (plane->stream_listener >= 0)
		close(plane->stream_listener);
	if (plane->stream_stop_fd >= 0)
		close(plane->stream_stop_fd);
	plane->stream_listener = plane->stream_stop_fd = -1;
	pthread_cond_destroy(&plane->stream_gone);
	pthread_mutex_destroy(&plane->stream_lock);
}

/* ------------------------------------------------------------------------
 * Asking.
 */

void peer_stream_node_init(struct peer_node *node)
{
	pthread_mutex_init(&node->stream.lock, NULL);
}

static void conn_close(struct peer_stream_conn *conn)
{
	close(conn->fd);
	EVP_CIPHER_CTX_free(conn->chunks);
	free(conn);
}

/* Close the idle connections (under the node's stream lock). */
static void idle_close_locked(struct peer_stream_peer *stream)
{
	while (stream->idle_count > 0) {
		conn_close(stream->idle[--stream->idle_count]);
		stream->open--;
	}
}

void peer_stream_node_update(struct peer_node *node, const struct peer_record *record)
{
	struct peer_stream_peer *stream = &node->stream;
	const unsigned char *at = record->stream;

	pthread_mutex_lock(&stream->lock);
	idle_close_locked(stream);
	stream->incarnation++;
	stream->down_until = 0;
	stream->address_count = 0;
	for (size_t i = 0; at && i + PEER_STREAM_ADDRESS_BYTES <= record->stream_length &&
	                   stream->address_count < PEER_STREAM_ADDRESSES_MAX;
	     i += PEER_STREAM_ADDRESS_BYTES) {
		struct sockaddr_in *address = &stream->addresses[stream->address_count++];

		*address = (struct sockaddr_in){ .sin_family = AF_INET };
		memcpy(&address->sin_addr.s_addr, at + i, 4);
		memcpy(&address->sin_port, at + i + 4, 2);
	}
	pthread_mutex_unlock(&stream->lock);
}

void peer_stream_node_destroy(struct peer_node *node)
{
	pthread_mutex_lock(&node->stream.lock);
	idle_close_locked(&node->stream);
	pthread_mutex_unlock(&node->stream.lock);
	pthread_mutex_destroy(&node->stream.lock);
}

/* A socket connected to @address by @deadline, or -1. */
static int connect_to(const struct sockaddr_in *address, uint64_t deadline)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int error = 0;
	socklen_t length = sizeof(error);

	if (fd < 0)
		return -1;
	/* connected without blocking, then used blocking (each call bounded) */
	if ((connect(fd, (const struct sockaddr *)address, sizeof(*address)) == 0 ||
	     (errno == EINPROGRESS && wait_for(fd, POLLOUT, deadline) == NOPFS_OK &&
	      getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0)) &&
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0)
		return fd;
	close(fd);
	return -1;
}

/* A new authenticated connection to @node, trying its addresses in turn; NULL if none. */
static struct peer_stream_conn *conn_open(struct peer_plane *plane, struct peer_node *node,
                                          const struct sockaddr_in *addresses, unsigned int count,
                                          uint64_t deadline)
{
	uint64_t connect_by = nopfs_clock_now_ns() + (uint64_t)STREAM_CONNECT_MS * 1000000u;
	struct peer_stream_conn *conn;
	struct peer_hello hello;
	int fd = -1;

	if (connect_by > deadline)
		connect_by = deadline;
	for (unsigned int i = 0; i < count && fd < 0; i++)
		fd = connect_to(&addresses[i], connect_by);
	if (fd < 0)
		return NULL;
	set_nodelay(fd);
	if (hello_send(plane, fd, plane->config.node, node->index, deadline) != NOPFS_OK ||
	    !hello_receive(plane, fd, deadline, &hello)) {
		close(fd);
		return NULL;
	}
	if (hello.auth.node != node->index || hello.owner != node->index ||
	    hello.asker != plane->config.node) {
		peer_auth_reject(plane, hello.auth.node, "a stream hello from another node");
		close(fd);
		return NULL;
	}
	if (!bound_calls(fd, SO_RCVTIMEO, call_bound(plane)) ||
	    !bound_calls(fd, SO_SNDTIMEO, call_bound(plane))) {
		close(fd);
		return NULL;
	}
	conn = calloc(1, sizeof(*conn));
	if (!conn || !(conn->chunks = peer_auth_chunk_context(plane, node->index))) {
		free(conn);
		close(fd);
		return NULL;
	}
	conn->fd = fd;
	return conn;
}

/*
 * A connection to @node for one fetch: an idle one, else a new one. NULL
 * when the node has no stream path, is held off, or has all it may.
 */
static struct peer_stream_conn *conn_take(struct peer_plane *plane, struct peer_node *node,
                                          uint64_t deadline, uint64_t *incarnation)
{
	struct peer_stream_peer *stream = &node->stream;
	struct sockaddr_in addresses[PEER_STREAM_ADDRESSES_MAX];
	struct peer_stream_conn *conn = NULL;
	unsigned int count;

	pthread_mutex_lock(&stream->lock);
	*incarnation = stream->incarnation;
	if (stream->idle_count > 0) {
		conn = stream->idle[--stream->idle_count];
		pthread_mutex_unlock(&stream->lock);
		return conn;
	}
	count = stream->address_count;
	if (count == 0 || stream->open >= STREAM_OPEN_MAX ||
	    nopfs_clock_now_ns() < stream->down_until) {
		pthread_mutex_unlock(&stream->lock);
		return NULL;
	}
	memcpy(addresses, stream->addresses, count * sizeof(addresses[0]));
	stream->open++;
	pthread_mutex_unlock(&stream->lock);

	conn = conn_open(plane, node, addresses, count, deadline);
	if (!conn) {
		pthread_mutex_lock(&stream->lock);
		stream->open--;
		if (stream->incarnation == *incarnation)
			stream->down_until = nopfs_clock_now_ns() +
			                     (uint64_t)plane->config.timeout_ms * 1000000u;
		pthread_mutex_unlock(&stream->lock);
		nopfs_debug("node %u: no stream connection to node %u; asking through UCX",
		            plane->config.node, node->index);
	}
	return conn;
}

/* Give @conn back: kept if healthy (@ok), of the current record and there is room. */
static void conn_give_back(struct peer_node *node, struct peer_stream_conn *conn, bool ok,
                           uint64_t incarnation)
{
	struct peer_stream_peer *stream = &node->stream;

	pthread_mutex_lock(&stream->lock);
	if (ok && incarnation == stream->incarnation && stream->idle_count < PEER_STREAM_IDLE_MAX) {
		stream->idle[stream->idle_count++] = conn;
		conn = NULL;
	} else {
		stream->open--;
	}
	pthread_mutex_unlock(&stream->lock);
	if (conn)
		conn_close(conn);
}

/*
 * The chunks of an answer being read: a window of up to READ_AHEAD of
 * them (whole parts), each part's bytes (into the caller's buffer) then its
 * tags, behind the answer's header for the first window. Each read takes
 * what has come of the whole window, as a plain socket read takes what has
 * come: one wait for several parts when the owner is ahead. A chunk's tag
 * is worked out once its bytes are in (while the owner works out the
 * same), and checked once the owner's has come.
 */
#define READ_AHEAD (4 * PART_CHUNKS)
struct chunk_window {
	struct iovec iovs[1 + 2 * READ_AHEAD / PART_CHUNKS];
	struct iovec *chunk_iovs; /* the first part's bytes */
	struct iovec *iov;        /* the first not full */
	int count;                /* iovecs from iov on */
	int chunks, tagged, checked;
	uint64_t offsets[READ_AHEAD];
	int part_iov[READ_AHEAD]; /* chunk_iovs[part_iov[c]]: chunk c's part's bytes; + 1: tags */
	unsigned char tags[READ_AHEAD][PEER_TAG_BYTES];
	unsigned char expected[READ_AHEAD][PEER_TAG_BYTES];
};

/* The window of parts from *@offset (moved past them), after @header if not NULL. */
static void window_start(struct chunk_window *window, struct peer_response *header,
                         unsigned char *dest, uint64_t size, uint64_t *offset)
{
	int count = 0, parts = 0;

	if (header)
		window->iovs[count++] = (struct iovec){ header, sizeof(*header) };
	window->chunk_iovs = window->iovs + count;
	window->chunks = window->tagged = window->checked = 0;
	for (; window->chunks < READ_AHEAD && *offset < size; parts++) {
		uint64_t end = *offset + part_length(size, *offset);
		int first = window->chunks;

		window->iovs[count++] = (struct iovec){ dest + *offset, (size_t)(end - *offset) };
		for (; *offset < end; *offset += chunk_length(size, *offset), window->chunks++) {
			window->offsets[window->chunks] = *offset;
			window->part_iov[window->chunks] = 2 * parts;
		}
		window->iovs[count++] =
		        (struct iovec){ window->tags[first],
			                (size_t)(window->chunks - first) * PEER_TAG_BYTES };
	}
	window->iov = window->iovs;
	window->count = count;
}

/* Whether chunk @c of @window is in: its bytes (ending at @end in the buffer). */
static bool chunk_in(const struct chunk_window *window, int c, const unsigned char *end)
{
	const struct iovec *bytes = window->chunk_iovs + window->part_iov[c];

	return window->iov > bytes ||
	       (window->iov == bytes && (const unsigned char *)window->iov->iov_base >= end);
}

/* Whether chunk @c's tag is in. */
static bool tag_in(const struct chunk_window *window, int c)
{
	return window->iov > window->chunk_iovs + window->part_iov[c] + 1;
}

/*
 * Tag the chunks of @window whose bytes are in, check those whose tags are
 * in; false (the answer dropped) at a chunk that does not authenticate.
 */
static bool window_check(struct peer_plane *plane, struct peer_stream_conn *conn,
                         const struct peer_response *response, unsigned char *dest, uint64_t size,
                         struct chunk_window *window)
{
	for (; window->tagged < window->chunks; window->tagged++) {
		uint64_t offset = window->offsets[window->tagged];
		size_t length = chunk_length(size, offset);

		if (!chunk_in(window, window->tagged, dest + offset + length))
			break;
		if (!peer_auth_chunk_tag(conn->chunks, response->auth.seq, chunk_index(offset),
		                         dest + offset, length, window->expected[window->tagged]))
			return false;
	}
	for (; window->checked < window->tagged && tag_in(window, window->checked);
	     window->checked++) {
		if (CRYPTO_memcmp(window->tags[window->checked], window->expected[window->checked],
		                  PEER_TAG_BYTES) != 0) {
			peer_count(plane, dropped, 1);
			nopfs_warning(
			        "node %u: dropped a stream answer from node %u: chunk %" PRIu32
			        " does not authenticate",
			        plane->config.node, response->auth.node,
			        chunk_index(window->offsets[window->checked]));
			return false;
		}
	}
	return true;
}

/* Read and check the rest of @window, then the windows after it, until @size. */
static nopfs_status read_chunks(struct peer_plane *plane, struct peer_stream_conn *conn,
                                const struct peer_response *response, unsigned char *dest,
                                uint64_t size, struct chunk_window *window, uint64_t offset,
                                uint64_t deadline, uint64_t last)
{
	for (;;) {
		while (window->checked < window->chunks) {
			nopfs_status status = nopfs_clock_now_ns() < deadline
			                              ? read_at_least(conn->fd, &window->iov,
			                                              &window->count, 1, deadline)
			                              : NOPFS_ERR_TIMEOUT;

			if (status != NOPFS_OK)
				return status;
			if (!window_check(plane, conn, response, dest, size, window))
				return NOPFS_ERR_IO;
			deadline = progress_deadline(plane, deadline, last);
		}
		if (offset >= size)
			return NOPFS_OK;
		window_start(window, NULL, dest, size, &offset);
	}
}

/*
 * One request and its answer on @conn. The header is read together with
 * what may follow it (the first chunks), so that a small sample takes one
 * wait.
 */
static nopfs_status ask(struct peer_plane *plane, struct peer_node *node,
                        struct peer_stream_conn *conn, struct peer_request *request,
                        unsigned char *dest, uint64_t deadline)
{
	struct peer_response received, response;
	struct chunk_window window;
	uint64_t offset = 0, last = last_deadline(plane, request->size);
	nopfs_status status;

	window_start(&window, &received, dest, request->size, &offset);
	status = peer_auth_seal(plane, PEER_AM_REQUEST, request->auth.generation, request,
	                        sizeof(*request), NULL, 0);
	if (status == NOPFS_OK)
		status = write_exact(conn->fd, request, sizeof(*request), deadline);
	/*
	 * The header may wait for the owner to fetch the sample (it answers "not
	 * available" at three quarters of this deadline): until the deadline;
	 * the bytes after it at most the plane's timeout apart.
	 */
	if (status == NOPFS_OK && !bound_calls(conn->fd, SO_RCVTIMEO, deadline))
		status = NOPFS_ERR_TIMEOUT;
	if (status == NOPFS_OK)
		status = read_at_least(conn->fd, &window.iov, &window.count, sizeof(received),
		                       deadline);
	if (status == NOPFS_OK && !bound_calls(conn->fd, SO_RCVTIMEO, call_bound(plane)))
		status = NOPFS_ERR_IO;
	if (status != NOPFS_OK)
		return status;
	if (!peer_auth_open(plane, PEER_STREAM_RESPONSE, &received, sizeof(received), NULL,
	                    received.auth.length, &response, sizeof(response)))
		return NOPFS_ERR_IO;
	if (response.auth.node != node->index || response.owner != node->index ||
	    response.asker != plane->config.node || response.id != request->id) {
		peer_auth_reject(plane, response.auth.node, "a stream answer to another request");
		return NOPFS_ERR_IO;
	}
	/* "not available" is the header alone: nothing may have come after it */
	if (response.answer == PEER_ANSWER_NOT_AVAILABLE && response.auth.length == 0)
		return window.iov == window.chunk_iovs &&
		                       (window.count == 0 || window.iov->iov_base == dest)
		               ? NOPFS_ERR_NOT_FOUND
		               : NOPFS_ERR_IO;
	if (response.answer != PEER_ANSWER_BYTES || response.auth.length != request->size) {
		peer_auth_reject(plane, response.auth.node, "a response of the wrong size");
		return NOPFS_ERR_IO;
	}
	if (!window_check(plane, conn, &response, dest, request->size, &window))
		return NOPFS_ERR_IO;
	return read_chunks(plane, conn, &response, dest, request->size, &window, offset,
	                   progress_deadline(plane, deadline, last), last);
}

nopfs_status peer_stream_fetch(struct peer_plane *plane, struct peer_node *node,
                               nopfs_sample_id sample, void *dest, uint64_t size)
{
	uint64_t deadline =
	        nopfs_clock_now_ns() + (uint64_t)peer_deadline_ms(&plane->config, size) * 1000000u;
	struct peer_request request = {
		.auth.generation = atomic_load(&plane->generation),
		.asker = plane->config.node,
		.sample = sample,
		.size = size,
	};
	struct peer_stream_conn *conn;
	uint64_t incarnation;
	nopfs_status status;

	if (!plane->stream)
		return NOPFS_ERR_UNSUPPORTED;
	conn = conn_take(plane, node, deadline, &incarnation);
	if (!conn)
		return NOPFS_ERR_UNSUPPORTED;
	pthread_mutex_lock(&plane->pending_lock);
	request.id = ++plane->next_id;
	pthread_mutex_unlock(&plane->pending_lock);
	status = ask(plane, node, conn, &request, dest, deadline);
	conn_give_back(node, conn, status == NOPFS_OK || status == NOPFS_ERR_NOT_FOUND,
	               incarnation);
	if (status == NOPFS_OK)
		peer_count(plane, stream_requests, 1);
	if (status == NOPFS_ERR_TIMEOUT)
		nopfs_warning("node %u: fetch of sample %" PRIu64 " from node %u timed out "
		              "(stream, %d ms)",
		              plane->config.node, (uint64_t)sample, node->index,
		              peer_deadline_ms(&plane->config, size));
	return status;
}
