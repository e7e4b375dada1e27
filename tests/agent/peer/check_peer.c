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

START_TEST(record_round_trip)
{
	unsigned char address[37], ram_key[19], state_key[5];
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
	};
	struct peer_record out;
	unsigned char *packed;
	size_t length;

	for (unsigned int i = 0; i < sizeof(address); i++)
		address[i] = (unsigned char)(i * 7 + 1);
	memset(ram_key, 0xa5, sizeof(ram_key));
	memset(state_key, 0x3c, sizeof(state_key));
	ck_assert_int_eq(peer_record_pack(&in, (void **)&packed, &length), NOPFS_OK);
	ck_assert_uint_eq(length, 64 + sizeof(address) + sizeof(ram_key) + sizeof(state_key));
	ck_assert_int_eq(memcmp(packed, "NPPR", 4), 0);
	ck_assert_int_eq(peer_record_unpack(packed, length, &out), NOPFS_OK);
	ck_assert_uint_eq(out.address_length, sizeof(address));
	ck_assert_uint_eq(out.ram_key_length, sizeof(ram_key));
	ck_assert_uint_eq(out.state_key_length, sizeof(state_key));
	ck_assert_int_eq(memcmp(out.address, address, sizeof(address)), 0);
	ck_assert_int_eq(memcmp(out.ram_key, ram_key, sizeof(ram_key)), 0);
	ck_assert_int_eq(memcmp(out.state_key, state_key, sizeof(state_key)), 0);
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
	MUTATE("version 2", copy[4] = 2);
	MUTATE("header length", copy[6] = 65);
	MUTATE("reserved", copy[52] = 1);
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
	ck_assert_int_eq(peer_plane_get(pair.plane[0], 2, 0, 0, dest, 1), NOPFS_ERR_RANGE);
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
	tcase_set_timeout(plane, 60);
	suite_add_tcase(suite, plane);

	peer_add_failure_tests(suite);
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
