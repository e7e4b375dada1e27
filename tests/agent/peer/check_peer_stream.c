/*
 * The data plane's stream path (fetches over the kernel's TCP): the bytes
 * of every sample right, a part at a time or whole; "not available", a
 * sample filled by its owner, a plan changing mid-answer; and what no one
 * without the job's key gets through: a connection with another key, a
 * forged or tampered chunk, a request outside the catalog, a connection
 * that never says who it is; a slow answer that keeps coming.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "peer_fixture.h"
#include "peer/peer_internal.h"
#include "common/fdio.h"

/* How an owner serves the stream path. */
enum serving {
	WHOLE,  /* serve: the whole sample copied, then sent */
	RANGES, /* serve_range: a part at a time copied */
	VIEWS,  /* serve_view: a part at a time lent where it is */
	MIXED,  /* serve_view lending every other part, serve_range the others */
};

/* A plane for @node serving @store over the stream path; deadlines grow at @slow_rate. */
static struct peer_plane *stream_plane_slow(uint32_t node, struct store *store,
                                            enum serving serving, double slow_rate)
{
	struct peer_config config = plane_config(node, store, TIMEOUT_MS);

	config.slow_bytes_per_s = slow_rate;
	config.stream = PEER_STREAM_ON;
	if (store && serving != WHOLE)
		config.serve_range = store_serve_range;
	if (store && serving >= VIEWS)
		config.serve_view = store_serve_view;
	if (store)
		store->mixed_views = serving == MIXED;
	return plane_create(&config);
}

static struct peer_plane *stream_plane(uint32_t node, struct store *store, enum serving serving)
{
	return stream_plane_slow(node, store, serving, 0);
}

struct stream_pair {
	struct store store[2];
	struct peer_plane *plane[2];
};

static void stream_pair_start_slow(struct stream_pair *pair, enum serving serving, double slow_rate)
{
	for (unsigned int n = 0; n < 2; n++) {
		store_init(&pair->store[n]);
		pair->plane[n] = stream_plane_slow(n, &pair->store[n], serving, slow_rate);
	}
	connect_to(pair->plane[0], pair->plane[1], 1);
	connect_to(pair->plane[1], pair->plane[0], 0);
}

static void stream_pair_start(struct stream_pair *pair, enum serving serving)
{
	stream_pair_start_slow(pair, serving, 0);
}

static void stream_pair_stop(struct stream_pair *pair)
{
	for (unsigned int n = 0; n < 2; n++) {
		peer_plane_destroy(pair->plane[n]);
		store_fini(&pair->store[n]);
	}
}

/* Connections of @plane to @node kept open: the stream path was used. */
static unsigned int stream_open(struct peer_plane *plane, uint32_t node)
{
	struct peer_node *peer = peer_node_find(plane, node);
	unsigned int open;

	ck_assert_ptr_nonnull(peer);
	pthread_mutex_lock(&peer->stream.lock);
	open = peer->stream.open;
	pthread_mutex_unlock(&peer->stream.lock);
	return open;
}

/* Every present sample right, whichever way its owner serves it; over the stream path. */
START_TEST(stream_fetch_brings_every_sample)
{
	unsigned char *dest = malloc(sample_sizes[3]);
	struct peer_stats stats;
	struct stream_pair pair;

	for (enum serving serving = WHOLE; serving <= MIXED; serving++) {
		unsigned int fetched = 0;

		stream_pair_start(&pair, serving);
		for (int round = 0; round < 2; round++) {
			for (unsigned int s = 0; s < SAMPLES; s++) {
				if (s == ABSENT)
					continue;
				assert_fetched(pair.plane[0], 1, s, dest);
				fetched++;
			}
		}
		ck_assert_uint_eq(stream_open(pair.plane[0], 1), 1); /* one connection, reused */
		peer_plane_stats(pair.plane[0], &stats);
		ck_assert_uint_eq(stats.requests, fetched);
		ck_assert_uint_eq(stats.stream_requests, fetched);
		ck_assert_uint_eq(stats.errors + stats.timeouts + stats.dropped, 0);
		for (int i = 0; i < 1000; i++) { /* counted once sent */
			peer_plane_stats(pair.plane[1], &stats);
			if (stats.served == fetched)
				break;
			usleep(1000);
		}
		ck_assert_uint_eq(stats.served, fetched);
		/* 16 MB in 65 parts (64 KiB, then 256 KiB each), twice, and the others */
		if (serving == WHOLE)
			ck_assert_uint_eq(atomic_load(&pair.store[1].served), fetched);
		if (serving == RANGES)
			ck_assert_uint_ge(atomic_load(&pair.store[1].ranges), 2 * 65);
		if (serving == VIEWS)
			ck_assert_uint_ge(atomic_load(&pair.store[1].views), 2 * 65);
		if (serving == MIXED) {
			ck_assert_uint_ge(atomic_load(&pair.store[1].views), 2 * 32);
			ck_assert_uint_ge(atomic_load(&pair.store[1].ranges), 2 * 32);
		}
		stream_pair_stop(&pair);
	}
	free(dest);
}
END_TEST

/* Several threads at once, each its own connection (up to the limit), every byte right. */
struct asker {
	struct peer_plane *plane;
	unsigned int wrong, failed;
};

static void *asker_main(void *arg)
{
	struct asker *asker = arg;
	unsigned char *dest = malloc(sample_sizes[2]);

	for (int i = 0; i < 40; i++) {
		unsigned int s = (unsigned int)i % 3 == 0 ? 2 : (unsigned int)i % 3 == 1 ? 1 : 5;

		if (peer_plane_fetch(asker->plane, 1, s, dest, sample_sizes[s]) != NOPFS_OK)
			asker->failed++;
		else if (!sample_is_right(s, dest))
			asker->wrong++;
	}
	free(dest);
	return NULL;
}

START_TEST(stream_concurrent_fetches)
{
	struct asker askers[6];
	pthread_t threads[6];
	struct stream_pair pair;

	stream_pair_start(&pair, MIXED);
	for (int t = 0; t < 6; t++) {
		askers[t] = (struct asker){ .plane = pair.plane[0] };
		ck_assert_int_eq(pthread_create(&threads[t], NULL, asker_main, &askers[t]), 0);
	}
	for (int t = 0; t < 6; t++) {
		pthread_join(threads[t], NULL);
		ck_assert_uint_eq(askers[t].wrong, 0);
		ck_assert_uint_eq(askers[t].failed, 0);
	}
	ck_assert_uint_ge(stream_open(pair.plane[0], 1), 1);
	ck_assert_uint_le(stream_open(pair.plane[0], 1), PEER_STREAM_IDLE_MAX);
	stream_pair_stop(&pair);
}
END_TEST

/* Not kept, another plan, kept but not fetched (filled by its owner, or not). */
START_TEST(stream_not_available_and_filled)
{
	unsigned char *dest = malloc(sample_sizes[ABSENT]);
	struct peer_stats stats;
	struct stream_pair pair;

	stream_pair_start(&pair, MIXED);
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, ABSENT, dest, sample_sizes[ABSENT]),
	                 NOPFS_ERR_NOT_FOUND);
	peer_plane_set_generation(pair.plane[1], 3);
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, 2, dest, sample_sizes[2]),
	                 NOPFS_ERR_NOT_FOUND);
	peer_plane_set_generation(pair.plane[1], 0);
	pair.store[1].defer_absent = true;
	pair.store[1].fill_fails = true;
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, ABSENT, dest, sample_sizes[ABSENT]),
	                 NOPFS_ERR_NOT_FOUND);
	pair.store[1].fill_fails = false;
	assert_fetched(pair.plane[0], 1, ABSENT, dest);
	ck_assert_uint_eq(atomic_load(&pair.store[1].fills), 2);
	peer_plane_stats(pair.plane[0], &stats);
	ck_assert_uint_eq(stats.not_available, 3);
	ck_assert_uint_eq(stats.requests, 1);
	ck_assert_uint_eq(stream_open(pair.plane[0], 1), 1); /* "not available" keeps it */
	stream_pair_stop(&pair);
	free(dest);
}
END_TEST

/*
 * A plan that changes between the parts of an answer (lent or copied): no
 * bytes taken, the PFS instead.
 */
START_TEST(stream_plan_change_mid_answer_fails_the_fetch)
{
	unsigned char *dest = malloc(sample_sizes[3]);
	struct stream_pair pair;

	for (enum serving serving = RANGES; serving <= MIXED; serving++) {
		stream_pair_start(&pair, serving);
		pair.store[1].plan_changes = true;
		ck_assert_int_ne(peer_plane_fetch(pair.plane[0], 1, 3, dest, sample_sizes[3]),
		                 NOPFS_OK);
		/* a one-part sample is whole from one plan */
		assert_fetched(pair.plane[0], 1, 1, dest);
		pair.store[1].plan_changes = false;
		assert_fetched(pair.plane[0], 1, 3, dest);
		stream_pair_stop(&pair);
	}
	free(dest);
}
END_TEST

/*
 * An asker with another job's key: its hello is dropped and the connection
 * closed; it gets nothing through UCX either.
 */
START_TEST(stream_other_key_refused)
{
	unsigned char *dest = malloc(sample_sizes[2]);
	struct peer_config config;
	struct peer_plane *owner, *rogue;
	struct peer_stats stats;
	struct store store;

	store_init(&store);
	owner = stream_plane(1, &store, MIXED);
	config = plane_config(0, NULL, TIMEOUT_MS);
	config.stream = PEER_STREAM_ON;
	ck_assert_int_eq(peer_secret_generate(config.secret), NOPFS_OK);
	rogue = plane_create(&config);
	connect_to(rogue, owner, 1);
	ck_assert_int_ne(peer_plane_fetch(rogue, 1, 2, dest, sample_sizes[2]), NOPFS_OK);
	ck_assert_uint_eq(stream_open(rogue, 1), 0);
	peer_plane_stats(owner, &stats);
	ck_assert_uint_ge(stats.dropped, 1);
	ck_assert_uint_eq(stats.served, 0);
	ck_assert_uint_eq(atomic_load(&store.ranges) + atomic_load(&store.views) +
	                          atomic_load(&store.served),
	                  0);
	peer_plane_destroy(rogue);
	peer_plane_destroy(owner);
	store_fini(&store);
	free(dest);
}
END_TEST

/* A stand-in owner: a socket of the test's, answering as @twin (node 1's key) would. */
struct fake_owner {
	struct peer_plane *twin;
	int listener;
	uint16_t port;
	/* 0: a right answer; 1: a chunk's byte changed; 2: chunks swapped; 3: no last tag */
	int tamper;
};

/* All of @length bytes sent on @fd, without SIGPIPE when the other end closed. */
static bool send_all(int fd, const void *data, size_t length)
{
	const char *at = data;

	while (length > 0) {
		ssize_t n = send(fd, at, length, MSG_NOSIGNAL);

		if (n <= 0)
			return false;
		at += n;
		length -= (size_t)n;
	}
	return true;
}

static void *fake_owner_main(void *arg)
{
	struct fake_owner *fake = arg;
	int fd = accept(fake->listener, NULL, NULL);
	struct peer_hello hello;
	struct peer_request request;
	struct peer_response header;
	EVP_CIPHER_CTX *chunks = peer_auth_chunk_context(fake->twin, 1);
	unsigned char tags[2][PEER_TAG_BYTES];
	uint64_t size = sample_sizes[2], first = 64 * 1024;
	unsigned char *bytes = malloc(size);
	bool sent;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(nopfs_read_exact(fd, &hello, sizeof(hello)), NOPFS_OK);
	hello = (struct peer_hello){ .asker = 0, .owner = 1 };
	ck_assert_int_eq(
	        peer_auth_seal(fake->twin, PEER_STREAM_HELLO, 0, &hello, sizeof(hello), NULL, 0),
	        NOPFS_OK);
	ck_assert_int_eq(nopfs_write_all(fd, &hello, sizeof(hello)), NOPFS_OK);
	ck_assert_int_eq(nopfs_read_exact(fd, &request, sizeof(request)), NOPFS_OK);
	header = (struct peer_response){
		.id = request.id, .answer = PEER_ANSWER_BYTES, .owner = 1, .asker = 0
	};
	ck_assert_int_eq(peer_auth_seal(fake->twin, PEER_STREAM_RESPONSE, 0, &header,
	                                sizeof(header), NULL, size),
	                 NOPFS_OK);
	for (uint64_t i = 0; i < size; i++)
		bytes[i] = sample_byte(2, i);
	ck_assert(peer_auth_chunk_tag(chunks, header.auth.seq, 0, bytes, first, tags[0]));
	ck_assert(peer_auth_chunk_tag(chunks, header.auth.seq, 1, bytes + first, size - first,
	                              tags[1]));
	if (fake->tamper == 1)
		bytes[first + 100] ^= 1;
	if (fake->tamper == 2) /* the second chunk's tag on the first: index in the nonce */
		memcpy(tags[0], tags[1], PEER_TAG_BYTES);
	/* (the asker may close the connection before the end: after a bad chunk) */
	/* one part: its bytes, then its tags */
	sent = send_all(fd, &header, sizeof(header)) && send_all(fd, bytes, size) &&
	       send_all(fd, tags[0], PEER_TAG_BYTES) &&
	       (fake->tamper == 3 || send_all(fd, tags[1], PEER_TAG_BYTES));
	if (fake->tamper == 3) /* every byte right, but the owner gone before the last tag */
		shutdown(fd, SHUT_WR);
	ck_assert(sent || fake->tamper);
	/* the asker closes a connection whose answer did not verify */
	if (fake->tamper)
		ck_assert_int_le(read(fd, &request, 1), 0);
	close(fd);
	EVP_CIPHER_CTX_free(chunks);
	free(bytes);
	return NULL;
}

/* A record for node 1 whose stream path is @fake's socket. */
static void connect_to_fake(struct peer_plane *asker, struct peer_plane *ucx_of,
                            struct fake_owner *fake)
{
	struct peer_record record = *peer_plane_local_record(ucx_of);
	unsigned char stream[PEER_STREAM_ADDRESS_BYTES];
	uint32_t loopback = htonl(INADDR_LOOPBACK);
	uint16_t port = fake->port;

	memcpy(stream, &loopback, 4);
	memcpy(stream + 4, &port, 2);
	record.stream = stream;
	record.stream_length = sizeof(stream);
	ck_assert_int_eq(peer_plane_connect(asker, 1, &record), NOPFS_OK);
}

/*
 * Answers with the job's key but a chunk changed after tagging, or tags
 * moved between chunks, are dropped: the fetch fails (the PFS instead),
 * never the bytes taken; so does one whose last chunk's tag never comes
 * (the tag follows its chunk). A right answer from the same stand-in is taken.
 */
START_TEST(stream_tampered_chunks_dropped)
{
	unsigned char *dest = malloc(sample_sizes[2]);
	struct peer_plane *asker, *twin;
	struct sockaddr_in address = { .sin_family = AF_INET };
	socklen_t length = sizeof(address);
	struct peer_stats stats;

	asker = stream_plane(0, NULL, WHOLE);
	twin = stream_plane(1, NULL, WHOLE); /* node 1's key, to seal as node 1 */
	for (int tamper = 0; tamper <= 3; tamper++) {
		struct fake_owner fake = { .twin = twin, .tamper = tamper };
		pthread_t thread;

		address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		address.sin_port = 0;
		fake.listener = socket(AF_INET, SOCK_STREAM, 0);
		ck_assert_int_ge(fake.listener, 0);
		ck_assert_int_eq(bind(fake.listener, (struct sockaddr *)&address, sizeof(address)),
		                 0);
		ck_assert_int_eq(listen(fake.listener, 1), 0);
		ck_assert_int_eq(getsockname(fake.listener, (struct sockaddr *)&address, &length),
		                 0);
		fake.port = address.sin_port;
		connect_to_fake(asker, twin, &fake);
		ck_assert_int_eq(pthread_create(&thread, NULL, fake_owner_main, &fake), 0);
		memset(dest, 0, sample_sizes[2]);
		if (tamper == 0) {
			ck_assert_int_eq(peer_plane_fetch(asker, 1, 2, dest, sample_sizes[2]),
			                 NOPFS_OK);
			ck_assert(sample_is_right(2, dest));
		} else {
			ck_assert_int_eq(peer_plane_fetch(asker, 1, 2, dest, sample_sizes[2]),
			                 NOPFS_ERR_IO);
		}
		pthread_join(thread, NULL);
		close(fake.listener);
	}
	peer_plane_stats(asker, &stats);
	ck_assert_uint_eq(stats.dropped, 2);
	ck_assert_uint_eq(stats.requests, 1);
	peer_plane_destroy(twin);
	peer_plane_destroy(asker);
	free(dest);
}
END_TEST

/* Requests outside the catalog are refused over the stream path too, nothing served. */
START_TEST(stream_requests_outside_the_catalog_refused)
{
	unsigned char *dest = malloc(sample_sizes[2]);
	struct peer_stats stats;
	struct stream_pair pair;

	stream_pair_start(&pair, MIXED);
	peer_plane_set_bounds(pair.plane[1], SAMPLES, 64 * 1024);
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, SAMPLES + 5, dest, 16),
	                 NOPFS_ERR_NOT_FOUND);
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, 2, dest, sample_sizes[2]),
	                 NOPFS_ERR_NOT_FOUND);     /* 110 KB: past the largest sample */
	assert_fetched(pair.plane[0], 1, 5, dest); /* 64 KiB: within */
	/* (the owner counts an answer once it is sent: just after the asker has it) */
	for (int i = 0; i < 1000; i++) {
		peer_plane_stats(pair.plane[1], &stats);
		if (stats.served)
			break;
		usleep(1000);
	}
	ck_assert_uint_eq(stats.refused, 2);
	ck_assert_uint_eq(stats.served, 1);
	stream_pair_stop(&pair);
	free(dest);
}
END_TEST

/* A connection that never says who it is is closed within the hello's time. */
START_TEST(stream_silent_connection_closed)
{
	struct peer_plane *owner = stream_plane(1, NULL, WHOLE);
	const struct peer_record *record = peer_plane_local_record(owner);
	struct sockaddr_in address = { .sin_family = AF_INET };
	struct timeval wait = { .tv_sec = 3 * SCALE };
	double start;
	char byte;
	int fd;

	ck_assert_uint_ge(record->stream_length, PEER_STREAM_ADDRESS_BYTES);
	memcpy(&address.sin_addr.s_addr, record->stream, 4);
	memcpy(&address.sin_port, (const char *)record->stream + 4, 2);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&address, sizeof(address)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
	start = now_ms();
	ck_assert_int_eq(read(fd, &byte, 1), 0); /* closed, not timed out here */
	ck_assert_double_le(now_ms() - start, TIMEOUT_MS + SLACK_MS);
	close(fd);
	peer_plane_destroy(owner);
}
END_TEST

/*
 * A slow answer of an owner that still answers keeps its connection and
 * brings the right bytes: a fill longer than the plane's timeout (the
 * answer's header waits until the fetch's deadline), and a 16 MB sample
 * whose parts take longer in all than its deadline, each well inside the
 * plane's timeout.
 */
START_TEST(stream_slow_answer_keeps_the_connection)
{
	unsigned char *dest = malloc(sample_sizes[3]);
	struct peer_stats stats;
	struct stream_pair pair;
	double start;

	/* 110 KB at 55 KB/s: a deadline of 3 s, the fill's budget 2.25 s */
	stream_pair_start_slow(&pair, MIXED, 55000.0 / SCALE);
	pair.store[1].defer_absent = true;
	pair.store[1].fill_delay_ms = 3 * TIMEOUT_MS / 2;
	assert_fetched(pair.plane[0], 1, ABSENT, dest);
	ck_assert_uint_eq(atomic_load(&pair.store[1].fills), 1);
	peer_plane_stats(pair.plane[0], &stats);
	ck_assert_uint_eq(stats.stream_requests, 1);
	ck_assert_uint_eq(stats.timeouts, 0);
	ck_assert_uint_eq(stream_open(pair.plane[0], 1), 1);
	stream_pair_stop(&pair);

	/* no slow rate: 16 MB by the plane's timeout, its 65 parts 25 ms apart */
	stream_pair_start(&pair, RANGES);
	pair.store[1].part_delay_ms = 25 * SCALE;
	start = now_ms();
	assert_fetched(pair.plane[0], 1, 3, dest);
	ck_assert_double_gt(now_ms() - start, TIMEOUT_MS);
	peer_plane_stats(pair.plane[0], &stats);
	ck_assert_uint_eq(stats.stream_requests, 1);
	ck_assert_uint_eq(stream_open(pair.plane[0], 1), 1);
	assert_fetched(pair.plane[0], 1, 3, dest); /* on the same connection */
	ck_assert_uint_eq(stream_open(pair.plane[0], 1), 1);
	stream_pair_stop(&pair);
	free(dest);
}
END_TEST

/* The owner gone: the fetch fails within its deadline (through UCX, once the socket is refused). */
START_TEST(stream_owner_gone)
{
	unsigned char *dest = malloc(sample_sizes[2]);
	struct stream_pair pair;
	double start;

	stream_pair_start(&pair, MIXED);
	assert_fetched(pair.plane[0], 1, 2, dest);
	peer_plane_destroy(pair.plane[1]);
	pair.plane[1] = NULL;
	start = now_ms();
	ck_assert_int_ne(peer_plane_fetch(pair.plane[0], 1, 2, dest, sample_sizes[2]), NOPFS_OK);
	ck_assert_double_le(now_ms() - start, 2 * TIMEOUT_MS + SLACK_MS);
	start = now_ms();
	ck_assert_int_ne(peer_plane_fetch(pair.plane[0], 1, 2, dest, sample_sizes[2]), NOPFS_OK);
	ck_assert_double_le(now_ms() - start, 2 * TIMEOUT_MS + SLACK_MS);
	peer_plane_destroy(pair.plane[0]);
	store_fini(&pair.store[0]);
	store_fini(&pair.store[1]);
	free(dest);
}
END_TEST

void peer_add_stream_tests(Suite *suite)
{
	TCase *stream = tcase_create("stream");

	tcase_add_test(stream, stream_fetch_brings_every_sample);
	tcase_add_test(stream, stream_concurrent_fetches);
	tcase_add_test(stream, stream_not_available_and_filled);
	tcase_add_test(stream, stream_plan_change_mid_answer_fails_the_fetch);
	tcase_add_test(stream, stream_other_key_refused);
	tcase_add_test(stream, stream_tampered_chunks_dropped);
	tcase_add_test(stream, stream_requests_outside_the_catalog_refused);
	tcase_add_test(stream, stream_silent_connection_closed);
	tcase_add_test(stream, stream_owner_gone);
	tcase_add_test(stream, stream_slow_answer_keeps_the_connection);
	tcase_set_timeout(stream, 120);
	suite_add_tcase(suite, stream);
}
