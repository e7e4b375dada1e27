/*
 * The data plane: records, one-sided gets, request/response fetches and
 * concurrency between planes of one process; deadlines, dead peers and two
 * processes are in check_peer_failures.c.
 *
 * UCX runs over TCP on the loopback device only (set in main() before any
 * plane reads its configuration): network namespaces do not isolate shared
 * memory, so on the test cluster UCX would otherwise pick shared memory
 * between "nodes" of one machine, and it is the TCP path, where gets are
 * emulated and need the progress thread, that these tests must exercise.
 */
#include "config.h"

#include "peer_fixture.h"
#include "peer/peer_internal.h"

START_TEST(record_round_trip)
{
	unsigned char address[37], ram_key[19], state_key[5], stream[2 * PEER_STREAM_ADDRESS_BYTES];
	struct peer_record in = {
		.address = address,
		.address_length = sizeof(address),
		.ram_key = ram_key,
		.ram_key_length = sizeof(ram_key),
		.state_key = state_key,
		.state_key_length = sizeof(state_key),
		.ram_base = 0x7f0012345000u,
		.state_base = 0x55aa00001000u,
		.ram_bytes = (uint64_t)5 << 32,
		.state_bytes = 1281167,
		.stream = stream,
		.stream_length = sizeof(stream),
	};
	struct peer_record out;
	unsigned char *packed;
	size_t length;

	for (unsigned int i = 0; i < sizeof(address); i++)
		address[i] = (unsigned char)(i * 7 + 1);
	memset(ram_key, 0xa5, sizeof(ram_key));
	memset(state_key, 0x3c, sizeof(state_key));
	memset(stream, 0x77, sizeof(stream));
	ck_assert_int_eq(peer_record_pack(&in, (void **)&packed, &length), NOPFS_OK);
	ck_assert_uint_eq(length, 64 + sizeof(address) + sizeof(ram_key) + sizeof(state_key) +
	                                  sizeof(stream));
	ck_assert_int_eq(memcmp(packed, "NPPR", 4), 0);
	ck_assert_int_eq(peer_record_unpack(packed, length, &out), NOPFS_OK);
	ck_assert_uint_eq(out.address_length, sizeof(address));
	ck_assert_uint_eq(out.ram_key_length, sizeof(ram_key));
	ck_assert_uint_eq(out.state_key_length, sizeof(state_key));
	ck_assert_int_eq(memcmp(out.address, address, sizeof(address)), 0);
	ck_assert_int_eq(memcmp(out.ram_key, ram_key, sizeof(ram_key)), 0);
	ck_assert_int_eq(memcmp(out.state_key, state_key, sizeof(state_key)), 0);
	ck_assert_uint_eq(out.stream_length, sizeof(stream));
	ck_assert_int_eq(memcmp(out.stream, stream, sizeof(stream)), 0);
	ck_assert_uint_eq(out.ram_base, in.ram_base);
	ck_assert_uint_eq(out.state_base, in.state_base);
	ck_assert_uint_eq(out.ram_bytes, in.ram_bytes);
	ck_assert_uint_eq(out.state_bytes, in.state_bytes);
	/* the parsed record points into the buffer */
	ck_assert(out.address == packed + 64);
	free(packed);

	/* no regions: no keys */
	in.ram_key = in.state_key = NULL;
	in.ram_key_length = in.state_key_length = 0;
	in.ram_bytes = in.state_bytes = in.ram_base = in.state_base = 0;
	ck_assert_int_eq(peer_record_pack(&in, (void **)&packed, &length), NOPFS_OK);
	ck_assert_int_eq(peer_record_unpack(packed, length, &out), NOPFS_OK);
	ck_assert_ptr_null(out.ram_key);
	ck_assert_ptr_null(out.state_key);
	ck_assert_uint_eq(out.address_length, sizeof(address));
	free(packed);
}
END_TEST

/* Unpacking @buffer fails with FORMAT and leaves the record alone. */
static void assert_rejected(const unsigned char *buffer, size_t length, const char *why)
{
	struct peer_record out, untouched;

	memset(&out, 0x5a, sizeof(out));
	untouched = out;
	ck_assert_msg(peer_record_unpack(buffer, length, &out) == NOPFS_ERR_FORMAT, "accepted: %s",
	              why);
	ck_assert_msg(memcmp(&out, &untouched, sizeof(out)) == 0, "record written: %s", why);
}

static void put32(unsigned char *at, uint32_t value)
{
	for (int i = 0; i < 4; i++)
		at[i] = (unsigned char)(value >> (8 * i));
}

START_TEST(record_malformed_rejected)
{
	unsigned char address[16] = { 1 }, key[8] = { 2 }, *packed, *copy;
	struct peer_record in = {
		.address = address,
		.address_length = sizeof(address),
		.ram_key = key,
		.ram_key_length = sizeof(key),
		.ram_bytes = 4096,
	};
	struct peer_record out;
	size_t length;

	ck_assert_int_eq(peer_record_pack(&in, (void **)&packed, &length), NOPFS_OK);
	copy = malloc(length + 1);
	ck_assert_ptr_nonnull(copy);

	/* every truncation, to inside the header and to inside the blobs */
	for (size_t n = 0; n < length; n++) {
		unsigned char *exact = malloc(n ? n : 1); /* valgrind sees any over-read */

		memcpy(exact, packed, n);
		assert_rejected(exact, n, "truncated");
		free(exact);
	}
	assert_rejected(NULL, length, "no buffer");

	memcpy(copy, packed, length);
	copy[length] = 0;
	assert_rejected(copy, length + 1, "a trailing byte");

#define MUTATE(what, ...)                            \
	do {                                         \
		memcpy(copy, packed, length);        \
		__VA_ARGS__;                         \
		assert_rejected(copy, length, what); \
	} while (0)
	MUTATE("bad magic", copy[0] ^= 1);
	MUTATE("version 1", copy[4] = 1);
	MUTATE("version 3", copy[4] = 3);
	MUTATE("header length", copy[6] = 65);
	MUTATE("stream addresses not whole", copy[52] = 1);
	MUTATE("total length", copy[56] ^= 1);
	MUTATE("address longer than the buffer", put32(copy + 40, sizeof(address) + 1));
	MUTATE("address length 2^32-1", put32(copy + 40, UINT32_MAX));
	MUTATE("lengths summing past 2^32", put32(copy + 40, UINT32_MAX);
	       put32(copy + 44, UINT32_MAX); put32(copy + 48, (uint32_t)(length - 64 + 2)));
	MUTATE("no address", put32(copy + 40, 0); put32(copy + 44, sizeof(key) + sizeof(address)));
	MUTATE("a RAM key without a RAM arena", memset(copy + 16, 0, 8));
	MUTATE("a state length without a key", copy[32] = 1);
#undef MUTATE
	free(copy);
	free(packed);

	/* and pack refuses what unpack would */
	in.ram_bytes = 0;
	ck_assert_int_eq(peer_record_pack(&in, (void **)&packed, &length), NOPFS_ERR_INVALID);
	in.ram_bytes = 1;
	in.address_length = 0;
	ck_assert_int_eq(peer_record_pack(&in, (void **)&packed, &length), NOPFS_ERR_INVALID);
	in.address_length = sizeof(address);
	in.stream = address; /* 16 bytes: not whole addresses */
	in.stream_length = sizeof(address);
	ck_assert_int_eq(peer_record_pack(&in, (void **)&packed, &length), NOPFS_ERR_INVALID);
	(void)out;
}
END_TEST

START_TEST(get_present_copies_bytes)
{
	static const unsigned int present[] = { 0, 1, 2, 3, 5 };
	struct peer_stats stats;
	struct pair pair;
	uint64_t bytes = 0;

	pair_start(&pair, TIMEOUT_MS);
	for (unsigned int k = 0; k < sizeof(present) / sizeof(present[0]); k++) {
		unsigned int s = present[k];
		unsigned char *dest = calloc(1, sample_sizes[s]);
		double start = now_ms();

		ck_assert_int_eq(get_sample(pair.plane[0], 1, &pair.store[0], s, dest), NOPFS_OK);
		printf("get of %llu bytes: %.2f ms\n", (unsigned long long)sample_sizes[s],
		       now_ms() - start);
		ck_assert_msg(sample_is_right(s, dest), "sample %u wrong", s);
		bytes += sample_sizes[s];
		free(dest);
	}
	/* a presence check alone */
	ck_assert_int_eq(peer_plane_get(pair.plane[0], 1, 0, 0, NULL, 0), NOPFS_OK);
	peer_plane_stats(pair.plane[0], &stats);
	ck_assert_uint_eq(stats.gets, 6);
	ck_assert_uint_eq(stats.get_bytes, bytes);
	ck_assert_uint_eq(stats.errors + stats.timeouts + stats.not_present, 0);
	pair_stop(&pair);
}
END_TEST

START_TEST(get_absent_copies_nothing)
{
	uint64_t size = sample_sizes[ABSENT];
	unsigned char *dest = malloc(size);
	struct peer_stats stats;
	struct pair pair;

	pair_start(&pair, TIMEOUT_MS);
	memset(dest, 0xee, size);
	ck_assert_int_eq(get_sample(pair.plane[0], 1, &pair.store[0], ABSENT, dest),
	                 NOPFS_ERR_NOT_FOUND);
	for (uint64_t i = 0; i < size; i++)
		ck_assert_uint_eq(dest[i], 0xee);
	peer_plane_stats(pair.plane[0], &stats);
	ck_assert_uint_eq(stats.not_present, 1);
	ck_assert_uint_eq(stats.gets + stats.errors, 0);

	/* once the owner has it, it is there */
	pair.store[1].state[ABSENT] = PRESENT;
	ck_assert_int_eq(get_sample(pair.plane[0], 1, &pair.store[0], ABSENT, dest), NOPFS_OK);
	ck_assert(sample_is_right(ABSENT, dest));
	free(dest);
	pair_stop(&pair);
}
END_TEST

/* Empty @arg's (a store's) sample 3, as a re-plan does to a slot. */
static void empty_sample_3(void *arg)
{
	struct store *store = arg;

	store->state[3] = 0;
}

/* A slot emptied while its bytes were read is not taken as the sample. */
START_TEST(get_rechecks_the_state_after_the_bytes)
{
	unsigned char *dest = calloc(1, sample_sizes[3]);
	struct peer_config config;
	struct peer_stats stats;
	struct pair pair;

	for (unsigned int n = 0; n < 2; n++)
		store_init(&pair.store[n]);
	config = plane_config(0, &pair.store[0], TIMEOUT_MS);
	config.between_gets = empty_sample_3;
	config.between_gets_arg = &pair.store[1];
	pair.plane[0] = plane_create(&config);
	pair.plane[1] = plane_start(1, &pair.store[1], TIMEOUT_MS);
	connect_to(pair.plane[0], pair.plane[1], 1);
	connect_to(pair.plane[1], pair.plane[0], 0);
	ck_assert_int_eq(get_sample(pair.plane[0], 1, &pair.store[1], 3, dest),
	                 NOPFS_ERR_NOT_FOUND);
	peer_plane_stats(pair.plane[0], &stats);
	ck_assert_uint_eq(stats.not_present, 1);
	ck_assert_uint_eq(stats.gets, 0);
	/* the other way, nothing emptied: the second look passes and the get brings it */
	ck_assert_int_eq(get_sample(pair.plane[1], 0, &pair.store[0], 3, dest), NOPFS_OK);
	ck_assert(sample_is_right(3, dest));
	free(dest);
	pair_stop(&pair);
}
END_TEST

START_TEST(get_outside_regions_refused)
{
	unsigned char dest[16];
	struct pair pair;
	struct peer_plane *bare;

	pair_start(&pair, TIMEOUT_MS);
	ck_assert_int_eq(peer_plane_get(pair.plane[0], 1, SAMPLES, 0, dest, 1), NOPFS_ERR_RANGE);
	ck_assert_int_eq(
	        peer_plane_get(pair.plane[0], 1, 0, pair.store[0].offsets[SAMPLES] - 8, dest, 9),
	        NOPFS_ERR_RANGE);
	ck_assert_int_eq(peer_plane_get(pair.plane[0], 1, 0, UINT64_MAX, dest, 2), NOPFS_ERR_RANGE);
	ck_assert_int_eq(peer_plane_get(pair.plane[0], 7, 0, 0, dest, 1), NOPFS_ERR_INVALID);
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 7, 0, dest, 1), NOPFS_ERR_INVALID);

	/* a node exposing nothing */
	bare = plane_start(2, NULL, TIMEOUT_MS);
	ck_assert_ptr_null(peer_plane_local_record(bare)->ram_key);
	ck_assert_ptr_null(peer_plane_local_record(bare)->state_key);
	connect_to(pair.plane[0], bare, 2);
	ck_assert_int_eq(peer_plane_get(pair.plane[0], 2, 0, 0, dest, 1), NOPFS_ERR_UNSUPPORTED);
	peer_plane_destroy(bare);
	pair_stop(&pair);
}
END_TEST

START_TEST(fetch_served_by_callback)
{
	static const unsigned int samples[] = { 0, 2, 3, 1, 3 };
	struct peer_stats asker, owner;
	struct pair pair;
	uint64_t bytes = 0;

	pair_start(&pair, TIMEOUT_MS);
	for (unsigned int k = 0; k < sizeof(samples) / sizeof(samples[0]); k++) {
		unsigned int s = samples[k];
		unsigned char *dest = calloc(1, sample_sizes[s]);
		double start = now_ms();

		ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, s, dest, sample_sizes[s]),
		                 NOPFS_OK);
		printf("fetch of %llu bytes: %.2f ms\n", (unsigned long long)sample_sizes[s],
		       now_ms() - start);
		ck_assert_msg(sample_is_right(s, dest), "sample %u wrong", s);
		bytes += sample_sizes[s];
		free(dest);
	}
	peer_plane_stats(pair.plane[0], &asker);
	peer_plane_stats(pair.plane[1], &owner);
	ck_assert_uint_eq(asker.requests, 5);
	ck_assert_uint_eq(asker.request_bytes, bytes);
	ck_assert_uint_eq(owner.served, 5);
	ck_assert_uint_eq(owner.served_bytes, bytes);
	ck_assert_uint_eq(atomic_load(&pair.store[1].served), 5);
	pair_stop(&pair);
}
END_TEST

START_TEST(fetch_not_available)
{
	uint64_t size = sample_sizes[ABSENT];
	unsigned char *dest = malloc(size);
	struct peer_stats stats;
	struct pair pair;

	pair_start(&pair, TIMEOUT_MS);
	memset(dest, 0xee, size);
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, ABSENT, dest, size),
	                 NOPFS_ERR_NOT_FOUND);
	/* a size the owner does not agree with, a sample it does not know */
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, 2, dest, size - 1),
	                 NOPFS_ERR_NOT_FOUND);
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, 1000, dest, 10), NOPFS_ERR_NOT_FOUND);
	for (uint64_t i = 0; i < size; i++)
		ck_assert_uint_eq(dest[i], 0xee);
	peer_plane_stats(pair.plane[0], &stats);
	ck_assert_uint_eq(stats.not_available, 3);
	ck_assert_uint_eq(stats.requests + stats.errors + stats.timeouts, 0);
	free(dest);
	pair_stop(&pair);
}
END_TEST

START_TEST(fetch_of_unfetched_sample_filled_by_owner)
{
	uint64_t size = sample_sizes[ABSENT];
	unsigned char *dest = calloc(1, size);
	struct peer_stats asker, owner;
	struct pair pair;

	pair_start(&pair, TIMEOUT_MS);
	pair.store[1].defer_absent = true;
	pair.store[1].fill_delay_ms = 50;
	/* the get finds it absent; the request makes its owner fetch it, once */
	ck_assert_int_eq(get_sample(pair.plane[0], 1, &pair.store[1], ABSENT, dest),
	                 NOPFS_ERR_NOT_FOUND);
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, ABSENT, dest, size), NOPFS_OK);
	ck_assert_msg(sample_is_right(ABSENT, dest), "filled sample wrong");
	ck_assert_uint_eq(atomic_load(&pair.store[1].fills), 1);
	memset(dest, 0, size);
	ck_assert_int_eq(get_sample(pair.plane[0], 1, &pair.store[1], ABSENT, dest), NOPFS_OK);
	ck_assert_msg(sample_is_right(ABSENT, dest), "sample wrong once present");
	ck_assert_uint_eq(atomic_load(&pair.store[1].fills), 1);
	peer_plane_stats(pair.plane[0], &asker);
	peer_plane_stats(pair.plane[1], &owner);
	ck_assert_uint_eq(asker.requests, 1);
	ck_assert_uint_eq(owner.served, 1);
	ck_assert_uint_eq(owner.served_bytes, size);
	free(dest);
	pair_stop(&pair);
}
END_TEST

START_TEST(fetch_of_unfetched_sample_fill_fails_or_is_late)
{
	uint64_t size = sample_sizes[ABSENT];
	unsigned char *dest = calloc(1, size);
	struct peer_stats asker;
	struct pair pair;
	double start;

	pair_start(&pair, DEADLINE_MS);
	pair.store[1].defer_absent = true;
	pair.store[1].fill_fails = true;
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, ABSENT, dest, size),
	                 NOPFS_ERR_NOT_FOUND);
	/* a fill slower than the asker's deadline: it gives up in time */
	pair.store[1].fill_fails = false;
	pair.store[1].fill_delay_ms = 2 * DEADLINE_MS;
	start = now_ms();
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, ABSENT, dest, size), NOPFS_ERR_TIMEOUT);
	ck_assert_double_lt(now_ms() - start, DEADLINE_MS + SLACK_MS);
	peer_plane_stats(pair.plane[0], &asker);
	ck_assert_uint_eq(asker.not_available, 1);
	ck_assert_uint_eq(asker.timeouts, 1);
	/* the late answer is dropped; destroying waits for the fill under way */
	free(dest);
	pair_stop(&pair);
	ck_assert_uint_eq(atomic_load(&pair.store[1].fills), 2);
}
END_TEST

/*
 * A holder whose fill would pass the asker's deadline gives up before it:
 * the asker hears "not available" in time and keeps its connection.
 */
START_TEST(fill_past_deadline_answers_not_available)
{
	uint64_t size = sample_sizes[ABSENT];
	unsigned char *dest = calloc(1, size);
	struct peer_stats asker;
	struct pair pair;
	double start;

	pair_start(&pair, DEADLINE_MS);
	pair.store[1].defer_absent = true;
	pair.store[1].fill_honors_deadline = true;
	pair.store[1].fill_delay_ms = 2 * DEADLINE_MS;
	start = now_ms();
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, ABSENT, dest, size),
	                 NOPFS_ERR_NOT_FOUND);
	ck_assert_double_lt(now_ms() - start, DEADLINE_MS);
	ck_assert_int_eq(get_sample(pair.plane[0], 1, &pair.store[0], 0, dest), NOPFS_OK);
	ck_assert(sample_is_right(0, dest));
	peer_plane_stats(pair.plane[0], &asker);
	ck_assert_uint_eq(asker.not_available, 1);
	ck_assert_uint_eq(asker.timeouts, 0);
	ck_assert_uint_eq(asker.errors, 0);
	free(dest);
	pair_stop(&pair);
}
END_TEST

/* A large sample's deadline grows by its bytes at the slow rate. */
START_TEST(fetch_deadline_grows_with_size)
{
	uint64_t size = sample_sizes[ABSENT];
	/* the sample's bytes at this rate take 3 deadlines */
	double rate = (double)size / (3.0 * DEADLINE_MS / 1000.0);
	struct peer_config config = { .timeout_ms = 1000, .slow_bytes_per_s = 1e6 };
	unsigned char *dest = calloc(1, size);
	struct pair pair;

	ck_assert_int_eq(peer_deadline_ms(&config, 2000000), 3000);
	ck_assert_int_eq(peer_deadline_ms(&config, 0), 1000);
	config.slow_bytes_per_s = 0;
	ck_assert_int_eq(peer_deadline_ms(&config, 2000000), 1000);
	/* a fill that takes 2 fixed deadlines is waited for: 4 with the bytes */
	pair_start_slow(&pair, DEADLINE_MS, rate);
	pair.store[1].defer_absent = true;
	pair.store[1].fill_delay_ms = 2 * DEADLINE_MS;
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, ABSENT, dest, size), NOPFS_OK);
	ck_assert(sample_is_right(ABSENT, dest));
	free(dest);
	pair_stop(&pair);
}
END_TEST

START_TEST(fetch_without_serve_callback)
{
	struct peer_plane *asker, *bare;
	unsigned char dest[4099];
	struct peer_stats stats;

	asker = plane_start(0, NULL, TIMEOUT_MS);
	bare = plane_start(1, NULL, TIMEOUT_MS);
	connect_to(asker, bare, 1);
	ck_assert_int_eq(peer_plane_fetch(asker, 1, 1, dest, sizeof(dest)), NOPFS_ERR_NOT_FOUND);
	peer_plane_stats(asker, &stats);
	ck_assert_uint_eq(stats.not_available, 1);
	peer_plane_stats(bare, &stats);
	ck_assert_uint_eq(stats.served, 0);
	peer_plane_destroy(bare);
	peer_plane_destroy(asker);
}
END_TEST

/* Allowed, and harmless should it be used. */
START_TEST(connect_to_oneself)
{
	unsigned char *dest = malloc(sample_sizes[2]);
	struct peer_plane *plane;
	struct store store;

	store_init(&store);
	plane = plane_start(0, &store, TIMEOUT_MS);
	connect_to(plane, plane, 0);
	ck_assert_int_eq(get_sample(plane, 0, &store, 2, dest), NOPFS_OK);
	ck_assert(sample_is_right(2, dest));
	memset(dest, 0, sample_sizes[2]);
	ck_assert_int_eq(peer_plane_fetch(plane, 0, 2, dest, sample_sizes[2]), NOPFS_OK);
	ck_assert(sample_is_right(2, dest));
	peer_plane_destroy(plane);
	store_fini(&store);
	free(dest);
}
END_TEST

#define THREADS        4
#define OPS_PER_THREAD 40

struct worker {
	struct pair *pair;
	unsigned int index;
	unsigned int done;
	unsigned int wrong;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned char *dest = malloc(sample_sizes[3]);

	for (unsigned int k = 0; k < OPS_PER_THREAD; k++) {
		unsigned int s = (w->index + k * 5) % SAMPLES;
		nopfs_status status, expected = s == ABSENT ? NOPFS_ERR_NOT_FOUND : NOPFS_OK;

		if (s == 3 && k % 4) /* 16 MB now and then */
			s = 2;
		if ((k + w->index) % 3 == 0)
			status = peer_plane_fetch(w->pair->plane[0], 1, s, dest, sample_sizes[s]);
		else
			status = get_sample(w->pair->plane[0], 1, &w->pair->store[0], s, dest);
		if (status != expected || (status == NOPFS_OK && !sample_is_right(s, dest)))
			w->wrong++;
		w->done++;
	}
	free(dest);
	return NULL;
}

START_TEST(concurrent_gets_and_fetches)
{
	struct worker workers[THREADS];
	pthread_t threads[THREADS];
	struct peer_stats stats;
	struct pair pair;
	double start;

	pair_start(&pair, TIMEOUT_MS);
	start = now_ms();
	for (unsigned int t = 0; t < THREADS; t++) {
		workers[t] = (struct worker){ .pair = &pair, .index = t };
		ck_assert_int_eq(pthread_create(&threads[t], NULL, worker_main, &workers[t]), 0);
	}
	for (unsigned int t = 0; t < THREADS; t++) {
		pthread_join(threads[t], NULL);
		ck_assert_uint_eq(workers[t].done, OPS_PER_THREAD);
		ck_assert_msg(workers[t].wrong == 0, "thread %u: %u wrong", t, workers[t].wrong);
	}
	printf("%d threads x %d operations: %.0f ms\n", THREADS, OPS_PER_THREAD, now_ms() - start);
	peer_plane_stats(pair.plane[0], &stats);
	ck_assert_uint_eq(stats.gets + stats.requests + stats.not_present + stats.not_available,
	                  THREADS * OPS_PER_THREAD);
	ck_assert_uint_eq(stats.errors + stats.timeouts, 0);
	pair_stop(&pair);
}
END_TEST

START_TEST(fetch_of_another_plan_not_available)
{
	uint64_t size = sample_sizes[2];
	unsigned char *dest = malloc(size);
	struct pair pair;

	pair_start(&pair, TIMEOUT_MS);
	peer_plane_set_generation(pair.plane[1], 3); /* the owner plans for another dataset */
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, 2, dest, size), NOPFS_ERR_NOT_FOUND);
	ck_assert_uint_eq(atomic_load(&pair.store[1].served), 0);     /* serve was not asked */
	peer_plane_set_generation(pair.plane[1], PEER_NO_GENERATION); /* changing plans */
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, 2, dest, size), NOPFS_ERR_NOT_FOUND);
	peer_plane_set_generation(pair.plane[0], 3); /* the asker too */
	peer_plane_set_generation(pair.plane[1], 3);
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, 2, dest, size), NOPFS_OK);
	ck_assert(sample_is_right(2, dest));
	free(dest);
	pair_stop(&pair);
}
END_TEST

START_TEST(notice_reaches_the_other_agent)
{
	struct pair pair;

	pair_start(&pair, TIMEOUT_MS);
	ck_assert_uint_eq(peer_plane_notify(pair.plane[0], 7, 5, "plan", 5), 1);
	for (int i = 0; i < 200 && atomic_load(&pair.store[1].notices) == 0; i++)
		usleep(10000);
	ck_assert_uint_eq(atomic_load(&pair.store[1].notices), 1);
	ck_assert_uint_eq(pair.store[1].notice_sender, 0);
	ck_assert_uint_eq(pair.store[1].notice_kind, 7);
	ck_assert_uint_eq(pair.store[1].notice_generation, 5);
	ck_assert_str_eq(pair.store[1].notice, "plan");
	ck_assert_uint_eq(peer_plane_notify(pair.plane[0], 7, 5, "x", PEER_NOTICE_MAX + 1), 0);
	pair_stop(&pair);
}
END_TEST

START_TEST(exposed_regions_replace_the_record)
{
	uint64_t size = sample_sizes[1], bytes = 2 * size;
	unsigned char *arena = malloc(bytes), state[2] = { PRESENT, PRESENT };
	unsigned char *dest = malloc(size);
	struct pair pair;

	pair_start(&pair, TIMEOUT_MS);
	/*
	 * Connected both ways, as agents are long before a new plan (UCX 1.13
	 * aborts when an endpoint fails while its connection is being made).
	 */
	ck_assert_int_eq(get_sample(pair.plane[0], 1, &pair.store[1], 1, dest), NOPFS_OK);
	ck_assert_int_eq(get_sample(pair.plane[1], 0, &pair.store[0], 1, dest), NOPFS_OK);
	memset(arena, 0x5a, bytes);
	ck_assert_int_eq(peer_plane_expose(pair.plane[1], arena, bytes, state, 2), NOPFS_OK);
	ck_assert_uint_eq(peer_plane_local_record(pair.plane[1])->ram_bytes, bytes);
	connect_to(pair.plane[0], pair.plane[1], 1); /* its new record */
	ck_assert_int_eq(peer_plane_get(pair.plane[0], 1, 1, size, dest, size), NOPFS_OK);
	for (uint64_t i = 0; i < size; i++)
		ck_assert_uint_eq(dest[i], 0x5a);
	/* the old regions' offsets are outside the new ones */
	ck_assert_int_eq(get_sample(pair.plane[0], 1, &pair.store[1], 3, dest), NOPFS_ERR_RANGE);
	/* exposing nothing */
	ck_assert_int_eq(peer_plane_expose(pair.plane[1], NULL, 0, NULL, 0), NOPFS_OK);
	ck_assert_ptr_null(peer_plane_local_record(pair.plane[1])->ram_key);
	pair_stop(&pair);
	free(dest);
	free(arena);
}
END_TEST

/* Send a message as it is, on @from's connection to @node, and wait for its send. */
static void send_raw(struct peer_plane *from, uint32_t node, unsigned int id, const void *header,
                     size_t header_length, const void *payload, size_t length)
{
	ucp_request_param_t param = { .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
		                      .flags = UCP_AM_SEND_FLAG_EAGER };
	struct peer_node *peer = peer_node_find(from, node);
	ucs_status_ptr_t request;
	struct peer_conn *conn;

	ck_assert_ptr_nonnull(peer);
	ck_assert_int_eq(peer_node_acquire(from, peer, &conn), NOPFS_OK);
	ck_assert_int_eq(peer_conn_lock(conn), NOPFS_OK);
	request = ucp_am_send_nbx(conn->ep, id, header, header_length, payload, length, &param);
	peer_conn_unlock(conn);
	ck_assert(!UCS_PTR_IS_ERR(request));
	if (UCS_PTR_IS_PTR(request)) {
		while (ucp_request_check_status(request) == UCS_INPROGRESS)
			ucp_worker_progress(from->worker);
		ucp_request_free(request);
	}
	peer_conn_put(conn);
}

/* A plane for @node whose secret is not the job's. */
static struct peer_plane *rogue_start(uint32_t node, struct store *store)
{
	struct peer_config config = plane_config(node, store, TIMEOUT_MS);

	ck_assert_int_eq(peer_secret_generate(config.secret), NOPFS_OK);
	return plane_create(&config);
}

/* The id of a fetch @plane has pending (waiting until there is one). */
static uint64_t pending_id(struct peer_plane *plane)
{
	uint64_t id = 0;

	for (int i = 0; i < 1000 && !id; i++) {
		pthread_mutex_lock(&plane->pending_lock);
		id = plane->pending ? plane->pending->request.id : 0;
		pthread_mutex_unlock(&plane->pending_lock);
		if (!id)
			usleep(1000);
	}
	ck_assert_uint_ne(id, 0);
	return id;
}

struct fetch_thread {
	struct peer_plane *plane;
	unsigned int sample;
	nopfs_status status;
	unsigned char *dest;
};

static void *fetch_main(void *arg)
{
	struct fetch_thread *f = arg;

	f->status = peer_plane_fetch(f->plane, 1, f->sample, f->dest, sample_sizes[f->sample]);
	return NULL;
}

/*
 * Responses to a pending fetch that do not come from the node asked, with
 * its key, untouched, are dropped: forged with another key, tampered with
 * after sealing, sealed by another node of the job. The owner's own answer,
 * which comes later, is the one taken.
 */
START_TEST(forged_responses_dropped)
{
	unsigned int s = 5;
	unsigned char *bogus = malloc(sample_sizes[s]);
	struct peer_plane *rogue, *twin, *third;
	struct peer_response forged;
	struct fetch_thread fetch;
	struct peer_stats stats;
	struct pair pair;
	pthread_t thread;
	uint64_t id;

	pair_start(&pair, TIMEOUT_MS);
	rogue = rogue_start(1, NULL);
	twin = plane_start(1, NULL, TIMEOUT_MS); /* node 1's key, for the tampering */
	third = plane_start(2, NULL, TIMEOUT_MS);
	connect_to(rogue, pair.plane[0], 0);
	connect_to(twin, pair.plane[0], 0);
	connect_to(third, pair.plane[0], 0);
	pair.store[1].serve_delay_ms = 300 * SCALE; /* the true answer comes after the forged */
	fetch = (struct fetch_thread){ .plane = pair.plane[0], .sample = s };
	fetch.dest = calloc(1, sample_sizes[s]);
	ck_assert_int_eq(pthread_create(&thread, NULL, fetch_main, &fetch), 0);
	id = pending_id(pair.plane[0]);
	memset(bogus, 0xee, sample_sizes[s]);
	forged = (struct peer_response){ .id = id, .answer = PEER_ANSWER_BYTES, .owner = 1 };

	/* another job's key, naming node 1 */
	ck_assert_int_eq(peer_auth_seal(rogue, PEER_AM_RESPONSE, 0, &forged, sizeof(forged), bogus,
	                                sample_sizes[s]),
	                 NOPFS_OK);
	send_raw(rogue, 0, PEER_AM_RESPONSE, &forged, sizeof(forged), bogus, sample_sizes[s]);
	/* node 1's key, a byte changed after sealing; then the header */
	ck_assert_int_eq(peer_auth_seal(twin, PEER_AM_RESPONSE, 0, &forged, sizeof(forged), bogus,
	                                sample_sizes[s]),
	                 NOPFS_OK);
	bogus[100] ^= 1;
	send_raw(twin, 0, PEER_AM_RESPONSE, &forged, sizeof(forged), bogus, sample_sizes[s]);
	bogus[100] ^= 1;
	forged.answer = PEER_ANSWER_NOT_AVAILABLE;
	send_raw(twin, 0, PEER_AM_RESPONSE, &forged, sizeof(forged), bogus, sample_sizes[s]);
	/* the job's key, but from node 2, which was not asked */
	forged = (struct peer_response){ .id = id, .answer = PEER_ANSWER_BYTES, .owner = 2 };
	ck_assert_int_eq(peer_auth_seal(third, PEER_AM_RESPONSE, 0, &forged, sizeof(forged), bogus,
	                                sample_sizes[s]),
	                 NOPFS_OK);
	send_raw(third, 0, PEER_AM_RESPONSE, &forged, sizeof(forged), bogus, sample_sizes[s]);

	pthread_join(thread, NULL);
	ck_assert_int_eq(fetch.status, NOPFS_OK);
	ck_assert_msg(sample_is_right(s, fetch.dest), "a forged response was taken");
	peer_plane_stats(pair.plane[0], &stats);
	ck_assert_uint_eq(stats.dropped, 3);
	ck_assert_uint_eq(stats.requests, 1);
	peer_plane_destroy(third);
	peer_plane_destroy(twin);
	peer_plane_destroy(rogue);
	pair_stop(&pair);
	free(fetch.dest);
	free(bogus);
}
END_TEST

/*
 * Messages sealed by the job's key arrive out of order: both are taken; one
 * resent as it was is dropped.
 */
START_TEST(replayed_notice_dropped)
{
	struct peer_notice first = { .sender = 0, .kind = 7 }, second = first;
	struct peer_stats stats;
	struct pair pair;

	pair_start(&pair, TIMEOUT_MS);
	ck_assert_int_eq(
	        peer_auth_seal(pair.plane[0], PEER_AM_NOTICE, 1, &first, sizeof(first), "one", 4),
	        NOPFS_OK);
	ck_assert_int_eq(
	        peer_auth_seal(pair.plane[0], PEER_AM_NOTICE, 1, &second, sizeof(second), "two", 4),
	        NOPFS_OK);
	send_raw(pair.plane[0], 1, PEER_AM_NOTICE, &second, sizeof(second), "two", 4);
	send_raw(pair.plane[0], 1, PEER_AM_NOTICE, &first, sizeof(first), "one", 4);
	send_raw(pair.plane[0], 1, PEER_AM_NOTICE, &first, sizeof(first), "one", 4);
	ck_assert_uint_eq(peer_plane_notify(pair.plane[0], 7, 2, "after", 6), 1);
	for (int i = 0; i < 200 && atomic_load(&pair.store[1].notices) < 3; i++)
		usleep(10000);
	usleep(20000);
	ck_assert_uint_eq(atomic_load(&pair.store[1].notices), 3);
	ck_assert_str_eq(pair.store[1].notice, "after");
	peer_plane_stats(pair.plane[1], &stats);
	ck_assert_uint_eq(stats.dropped, 1);
	pair_stop(&pair);
}
END_TEST

/*
 * Requests outside the plan's bounds are refused before anything is
 * allocated for them: a sample number past the catalog, a size past its
 * largest sample (past 1 GiB without a plan's bounds). The asker does not
 * ask past its own bounds either (it allocates what it asks for).
 */
START_TEST(requests_outside_the_catalog_refused)
{
	unsigned char *dest = malloc(sample_sizes[3] + 1);
	struct peer_stats owner;
	struct pair pair;

	pair_start(&pair, TIMEOUT_MS);
	peer_plane_set_bounds(pair.plane[1], SAMPLES, sample_sizes[3]);
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, SAMPLES, dest, 1), NOPFS_ERR_NOT_FOUND);
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, 3, dest, sample_sizes[3] + 1),
	                 NOPFS_ERR_NOT_FOUND);
	peer_plane_set_bounds(pair.plane[0], SAMPLES, (uint64_t)1 << 40);
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, 2, dest, (uint64_t)1 << 31),
	                 NOPFS_ERR_NOT_FOUND);
	peer_plane_stats(pair.plane[1], &owner);
	ck_assert_uint_eq(owner.refused, 3);
	ck_assert_uint_eq(owner.served, 0);
	ck_assert_uint_eq(atomic_load(&pair.store[1].served), 0);
	assert_fetched(pair.plane[0], 1, 3, dest); /* within them: served */
	/* without a plan's bounds, 2 GiB is still refused */
	peer_plane_set_bounds(pair.plane[1], 0, 0);
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, 2, dest, (uint64_t)1 << 31),
	                 NOPFS_ERR_NOT_FOUND);
	peer_plane_stats(pair.plane[1], &owner);
	ck_assert_uint_eq(owner.refused, 4);
	/* nor does the asker ask past its bounds: nothing sent */
	peer_plane_set_bounds(pair.plane[0], 0, 0);
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, 2, dest, (uint64_t)1 << 31),
	                 NOPFS_ERR_INVALID);
	peer_plane_set_bounds(pair.plane[0], SAMPLES, sample_sizes[3]);
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, 3, dest, sample_sizes[3] + 1),
	                 NOPFS_ERR_INVALID);
	peer_plane_stats(pair.plane[1], &owner);
	ck_assert_uint_eq(owner.refused, 4);
	pair_stop(&pair);
	free(dest);
}
END_TEST

/*
 * Notices are taken only as from the node that sealed them; the kind only
 * node 0 sends (the shared catalog), only from it and only up to its cap.
 */
START_TEST(notices_from_the_wrong_node_ignored)
{
	static const char long_path[40] = "/a/path/longer/than/the/cap/of/16";
	struct peer_notice notice = { .sender = 0, .kind = 7 };
	struct peer_plane *plane[2], *third;
	struct peer_config config;
	struct store store[2];
	struct peer_stats stats;

	for (unsigned int n = 0; n < 2; n++)
		store_init(&store[n]);
	plane[0] = plane_start(0, &store[0], TIMEOUT_MS);
	config = plane_config(1, &store[1], TIMEOUT_MS);
	config.origin_kind = 9;
	config.origin_max = 16;
	plane[1] = plane_create(&config);
	third = plane_start(2, NULL, TIMEOUT_MS);
	connect_to(plane[0], plane[1], 1);
	connect_to(third, plane[1], 1);

	/* node 2 names node 0 */
	ck_assert_int_eq(
	        peer_auth_seal(third, PEER_AM_NOTICE, 1, &notice, sizeof(notice), "plan", 5),
	        NOPFS_OK);
	send_raw(third, 1, PEER_AM_NOTICE, &notice, sizeof(notice), "plan", 5);
	/* the catalog: from node 2, too long from node 0, then right */
	ck_assert_uint_eq(peer_plane_notify(third, 9, 1, "/x", 3), 1);
	ck_assert_uint_eq(peer_plane_notify(plane[0], 9, 1, long_path, sizeof(long_path)), 1);
	ck_assert_uint_eq(peer_plane_notify(plane[0], 9, 1, "/catalog", 9), 1);
	for (int i = 0; i < 200; i++) {
		peer_plane_stats(plane[1], &stats);
		if (stats.refused >= 3 && atomic_load(&store[1].notices) >= 1)
			break;
		usleep(10000);
	}
	usleep(20000);
	peer_plane_stats(plane[1], &stats);
	ck_assert_uint_eq(stats.refused, 3);
	ck_assert_uint_eq(atomic_load(&store[1].notices), 1);
	ck_assert_str_eq(store[1].notice, "/catalog");
	ck_assert_uint_eq(store[1].notice_sender, 0);
	ck_assert_uint_eq(store[1].notice_kind, 9);
	peer_plane_destroy(third);
	for (unsigned int n = 0; n < 2; n++) {
		peer_plane_destroy(plane[n]);
		store_fini(&store[n]);
	}
}
END_TEST

/*
 * Over TCP, UCX emulates one-sided reads in software without checking keys
 * or bounds: a plane left to decide (the agent's) registers nothing there,
 * its record carries no key, and its samples are asked for.
 */
START_TEST(no_remote_keys_over_tcp)
{
	unsigned char *dest = calloc(1, sample_sizes[2]);
	struct peer_plane *plane, *asker;
	struct peer_config config;
	const struct peer_record *record;
	struct store store;
	void *packed;
	size_t length;

	store_init(&store);
	config = plane_config(1, &store, TIMEOUT_MS);
	config.one_sided = PEER_ONE_SIDED_RDMA; /* UCX_TLS=tcp: main() */
	plane = plane_create(&config);
	record = peer_plane_local_record(plane);
	ck_assert_ptr_null(record->ram_key);
	ck_assert_ptr_null(record->state_key);
	ck_assert_uint_eq(record->ram_bytes + record->state_bytes, 0);
	ck_assert_int_eq(peer_record_pack(record, &packed, &length), NOPFS_OK);
	/* where the stream path listens instead */
	ck_assert_uint_gt(record->stream_length, 0);
	ck_assert_uint_eq(record->stream_length % PEER_STREAM_ADDRESS_BYTES, 0);
	ck_assert_uint_eq(length, 64 + record->address_length + record->stream_length);
	free(packed);
	/* nor after a new plan */
	ck_assert_int_eq(
	        peer_plane_expose(plane, store.ram, store.offsets[SAMPLES], store.state, SAMPLES),
	        NOPFS_OK);
	ck_assert_ptr_null(peer_plane_local_record(plane)->ram_key);

	asker = plane_start(0, NULL, TIMEOUT_MS);
	connect_to(asker, plane, 1);
	ck_assert_int_eq(get_sample(asker, 1, &store, 2, dest), NOPFS_ERR_UNSUPPORTED);
	assert_fetched(asker, 1, 2, dest);
	peer_plane_destroy(asker);
	peer_plane_destroy(plane);
	store_fini(&store);
	free(dest);
}
END_TEST

struct raw_get {
	atomic_bool done;
	ucs_status_t status;
};

static void raw_get_done(void *request, ucs_status_t status, void *user_data)
{
	struct raw_get *get = user_data;

	get->status = status;
	atomic_store(&get->done, true);
}

/*
 * What an intruder with emulated one-sided reads does: unpack a key of its
 * own on its endpoint to @victim and read @address of it. The emulation
 * checks neither key nor bounds, so this reads any memory of a plane that
 * handles it; a plane without one-sided reads has no handler for it. True
 * if @length bytes came back into @dest.
 */
static bool intruder_reads(struct peer_plane *intruder, uint32_t victim, const void *address,
                           void *dest, size_t length)
{
	struct raw_get get = { .status = UCS_INPROGRESS };
	ucp_request_param_t param = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
		.cb.send = raw_get_done,
		.user_data = &get,
	};
	struct peer_node *node = peer_node_find(intruder, victim);
	ucs_status_ptr_t request;
	struct peer_conn *conn;
	ucp_rkey_h key;

	atomic_init(&get.done, false);
	ck_assert_ptr_nonnull(node);
	ck_assert_int_eq(peer_node_acquire(intruder, node, &conn), NOPFS_OK);
	ck_assert_int_eq(
	        ucp_ep_rkey_unpack(conn->ep, peer_plane_local_record(intruder)->ram_key, &key),
	        UCS_OK);
	ck_assert_int_eq(peer_conn_lock(conn), NOPFS_OK);
	request = ucp_get_nbx(conn->ep, dest, length, (uintptr_t)address, key, &param);
	peer_conn_unlock(conn);
	if (UCS_PTR_IS_PTR(request)) {
		for (int i = 0; i < 100 * SCALE && !atomic_load(&get.done); i++) {
			ucp_worker_progress(intruder->worker);
			usleep(10000);
		}
		if (!atomic_load(&get.done)) /* never answered: close to get the buffer back */
			peer_conn_retire(intruder, conn, NOPFS_ERR_TIMEOUT);
		for (int i = 0; i < 100 * SCALE && !atomic_load(&get.done); i++)
			usleep(10000);
		ck_assert(atomic_load(&get.done));
		ucp_request_free(request);
	} else {
		get.status = UCS_PTR_STATUS(request);
	}
	ucp_rkey_destroy(key);
	peer_conn_put(conn);
	return get.status == UCS_OK;
}

/*
 * An intruder reading memory the victim never exposed: it gets it from a
 * plane with emulated one-sided reads (what every agent over TCP was), and
 * not from one left to decide over TCP.
 */
START_TEST(no_emulated_reads_of_agent_memory)
{
	static const char secret_bytes[] = "not exposed to anyone";
	char *secret = strdup(secret_bytes), dest[sizeof(secret_bytes)];
	struct peer_plane *victim, *intruder;
	struct peer_config config;
	struct store store, own;

	store_init(&store);
	store_init(&own);
	intruder = plane_start(0, &own, TIMEOUT_MS);
	for (int safe = 0; safe < 2; safe++) {
		config = plane_config(1, &store, TIMEOUT_MS);
		config.one_sided = safe ? PEER_ONE_SIDED_RDMA : PEER_ONE_SIDED_EMULATED;
		victim = plane_create(&config);
		connect_to(intruder, victim, 1);
		memset(dest, 0, sizeof(dest));
		if (safe)
			ck_assert_msg(!intruder_reads(intruder, 1, secret, dest, sizeof(dest)) &&
			                      memcmp(dest, secret_bytes, sizeof(dest)) != 0,
			              "read the agent's memory");
		else
			ck_assert(intruder_reads(intruder, 1, secret, dest, sizeof(dest)) &&
			          memcmp(dest, secret_bytes, sizeof(dest)) == 0);
		peer_plane_destroy(victim);
	}
	peer_plane_destroy(intruder);
	store_fini(&own);
	store_fini(&store);
	free(secret);
}
END_TEST

static Suite *peer_suite(void)
{
	Suite *suite = suite_create("peer");
	TCase *record = tcase_create("record");
	TCase *plane = tcase_create("plane");

	tcase_add_test(record, record_round_trip);
	tcase_add_test(record, record_malformed_rejected);
	suite_add_tcase(suite, record);

	tcase_add_test(plane, get_present_copies_bytes);
	tcase_add_test(plane, get_absent_copies_nothing);
	tcase_add_test(plane, get_rechecks_the_state_after_the_bytes);
	tcase_add_test(plane, get_outside_regions_refused);
	tcase_add_test(plane, fetch_served_by_callback);
	tcase_add_test(plane, fetch_not_available);
	tcase_add_test(plane, fetch_of_unfetched_sample_filled_by_owner);
	tcase_add_test(plane, fetch_of_unfetched_sample_fill_fails_or_is_late);
	tcase_add_test(plane, fetch_deadline_grows_with_size);
	tcase_add_test(plane, fill_past_deadline_answers_not_available);
	tcase_add_test(plane, fetch_without_serve_callback);
	tcase_add_test(plane, connect_to_oneself);
	tcase_add_test(plane, concurrent_gets_and_fetches);
	tcase_add_test(plane, fetch_of_another_plan_not_available);
	tcase_add_test(plane, notice_reaches_the_other_agent);
	tcase_add_test(plane, exposed_regions_replace_the_record);
	tcase_add_test(plane, forged_responses_dropped);
	tcase_add_test(plane, replayed_notice_dropped);
	tcase_add_test(plane, requests_outside_the_catalog_refused);
	tcase_add_test(plane, notices_from_the_wrong_node_ignored);
	tcase_add_test(plane, no_remote_keys_over_tcp);
	tcase_add_test(plane, no_emulated_reads_of_agent_memory);
	tcase_set_timeout(plane, 60);
	suite_add_tcase(suite, plane);

	peer_add_failure_tests(suite);
	peer_add_stream_tests(suite);
	return suite;
}

int main(void)
{
	SRunner *runner;
	int failed;

	/* TCP on loopback only: see the top of this file. */
	setenv("UCX_TLS", "tcp", 1);
	setenv("UCX_NET_DEVICES", "lo", 1);
	runner = srunner_create(peer_suite());
	srunner_run_all(runner, CK_ENV);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
