/*
 * What reaches an agent from the network before anything else looks at it:
 * the authentication of a data-plane message (peer_auth_open()) and the
 * record a node publishes (peer_record_unpack()).
 *
 * Input: a selector byte (message kind, including the stream path's;
 * whether the harness seals the message with the job's key first), then the
 * header, then the payload (for a stream answer, also tagged as a chunk).
 * Unsealed, nothing may authenticate: the harness does not know the key to
 * forge with any better than a remote sender. Sealed, the message opens
 * exactly once (a second time is a replay). A record that unpacks packs
 * again to the same bytes.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "common/log.h"
#include "peer/peer_internal.h"

static struct peer_plane plane;
static unsigned char scratch[65536];

static void quiet(nopfs_log_level level, const char *message, void *arg)
{
	(void)level;
	(void)message;
	(void)arg;
}

static void setup(void)
{
	static int done;

	if (done)
		return;
	done = 1;
	nopfs_log_set_sink(quiet, NULL, NOPFS_LOG_ERROR);
	memset(&plane, 0, sizeof(plane));
	pthread_mutex_init(&plane.windows_lock, NULL);
	plane.config.node = 3;
	memset(plane.config.secret, 0x5a, sizeof(plane.config.secret));
	if (peer_auth_init(&plane) != NOPFS_OK)
		abort();
}

static size_t header_size(enum peer_am_id kind)
{
	switch (kind) {
	case PEER_AM_REQUEST:
		return sizeof(struct peer_request);
	case PEER_AM_RESPONSE:
	case PEER_STREAM_RESPONSE:
		return sizeof(struct peer_response);
	case PEER_STREAM_HELLO:
		return sizeof(struct peer_hello);
	default:
		return sizeof(struct peer_notice);
	}
}

static void check_record(const uint8_t *data, size_t size)
{
	struct peer_record record;
	void *packed = NULL;
	size_t length = 0;

	if (peer_record_unpack(data, size, &record) != NOPFS_OK)
		return;
	if (peer_record_pack(&record, &packed, &length) != NOPFS_OK || length != size ||
	    memcmp(packed, data, size) != 0)
		abort();
	free(packed);
}

/* A stream chunk's tag: the same for the same chunk, another at another position. */
static void check_chunk(const uint8_t *chunk, size_t length)
{
	static EVP_CIPHER_CTX *ctx;
	unsigned char tag[PEER_TAG_BYTES], again[PEER_TAG_BYTES], moved[PEER_TAG_BYTES];

	if (!ctx)
		ctx = peer_auth_chunk_context(&plane, plane.config.node);
	if (!ctx || !peer_auth_chunk_tag(ctx, 7, 0, chunk, length, tag) ||
	    !peer_auth_chunk_tag(ctx, 7, 0, chunk, length, again) ||
	    !peer_auth_chunk_tag(ctx, 7, 1, chunk, length, moved) ||
	    memcmp(tag, again, sizeof(tag)) != 0 || memcmp(tag, moved, sizeof(tag)) == 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum peer_am_id kinds[] = { PEER_AM_REQUEST, PEER_AM_RESPONSE, PEER_AM_NOTICE,
		                                 PEER_STREAM_HELLO, PEER_STREAM_RESPONSE };
	enum peer_am_id kind;
	size_t header_length, length;
	const uint8_t *payload;
	bool sealed;

	setup();
	if (size < 1)
		return 0;
	if (data[0] >= 0xf0) { /* a record */
		check_record(data + 1, size - 1);
		return 0;
	}
	kind = kinds[data[0] % 5];
	sealed = data[0] & 0x10;
	header_length = header_size(kind);
	if (size - 1 < header_length)
		return 0;
	payload = data + 1 + header_length;
	length = size - 1 - header_length;
	memcpy(scratch, data + 1, header_length);
	if (!sealed) {
		if (peer_auth_open(&plane, kind, scratch, header_length, payload, length,
		                   scratch + header_length, header_length))
			abort(); /* forged without the key */
		return 0;
	}
	if (peer_auth_seal(&plane, kind, 1, scratch, header_length, payload, length) != NOPFS_OK)
		abort();
	if (!peer_auth_open(&plane, kind, scratch, header_length, payload, length,
	                    scratch + header_length, header_length))
		abort(); /* its own sealed message */
	if (peer_auth_open(&plane, kind, scratch, header_length, payload, length,
	                   scratch + header_length, header_length))
		abort(); /* replayed */
	if (kind == PEER_STREAM_RESPONSE)
		check_chunk(payload, length);
	return 0;
}
