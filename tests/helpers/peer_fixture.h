/*
 * Test helpers for the data plane: a store of samples (a RAM arena and its
 * state bytes, with a serve callback over the same bytes), planes built on
 * it, connected through packed records as PMIx would carry them.
 */
#ifndef NOPFS_TEST_PEER_FIXTURE_H
#define NOPFS_TEST_PEER_FIXTURE_H

#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

#include "peer/peer.h"
#include "common/clock.h"

#define PRESENT 2 /* state byte of a sample in the arena */
#define FILLING 1 /* state byte of a sample not there yet */
#define SAMPLES 6
#define ABSENT  4 /* the sample whose state byte says "filling" */

/* Deadlines, and the scheduling slack allowed on top; longer under valgrind. */
#define SCALE       (RUNNING_ON_VALGRIND ? 10 : 1)
#define TIMEOUT_MS  (1000 * SCALE)
#define DEADLINE_MS (300 * SCALE)
#define SLACK_MS    (250 * SCALE)

/* 1 byte, an odd size, 110 KB, 16 MB, absent, 64 KiB. */
static const uint64_t sample_sizes[SAMPLES] = {
	1, 4099, 110 * 1000, 16 * 1024 * 1024, 110 * 1000, 64 * 1024,
};

struct store {
	unsigned char *ram;
	uint64_t offsets[SAMPLES + 1];
	unsigned char state[SAMPLES];
	unsigned int serve_delay_ms; /* the serve callback sleeps this long first */
	atomic_uint served;
	/* ABSENT is kept here but not fetched yet: serve defers it to fill */
	bool defer_absent;
	unsigned int fill_delay_ms; /* fill "reads the PFS" this long */
	bool fill_fails;
	bool fill_honors_deadline; /* a fill past its deadline gives up then */
	/* serve_range: parts past the first come from plan 1 (a new plan meanwhile) */
	bool plan_changes;
	unsigned int part_delay_ms; /* serve_range sleeps this long per part */
	atomic_uint ranges;
	/* serve_view: parts lent (every other one copied instead, when mixed) */
	bool mixed_views;
	atomic_uint views;
	atomic_uint fills;
	/* the last notice received */
	atomic_uint notices;
	uint32_t notice_sender, notice_kind, notice_generation;
	char notice[64];
};

/* The byte @i of @sample: differs between samples and positions. */
static inline unsigned char sample_byte(unsigned int sample, uint64_t i)
{
	return (unsigned char)(i * 131 + (i >> 9) * 7 + sample * 29 + 1);
}

static inline void store_init(struct store *store)
{
	store->offsets[0] = 0;
	for (unsigned int s = 0; s < SAMPLES; s++)
		store->offsets[s + 1] = store->offsets[s] + sample_sizes[s];
	store->ram = malloc(store->offsets[SAMPLES]);
	ck_assert_ptr_nonnull(store->ram);
	for (unsigned int s = 0; s < SAMPLES; s++) {
		for (uint64_t i = 0; i < sample_sizes[s]; i++)
			store->ram[store->offsets[s] + i] = sample_byte(s, i);
		store->state[s] = s == ABSENT ? FILLING : PRESENT;
	}
	store->serve_delay_ms = 0;
	atomic_init(&store->served, 0);
	store->defer_absent = false;
	store->fill_delay_ms = 0;
	store->fill_fails = false;
	store->fill_honors_deadline = false;
	store->part_delay_ms = 0;
	atomic_init(&store->fills, 0);
	store->plan_changes = false;
	atomic_init(&store->ranges, 0);
	store->mixed_views = false;
	atomic_init(&store->views, 0);
	atomic_init(&store->notices, 0);
}

static inline void store_fini(struct store *store)
{
	free(store->ram);
}

/* Whether @buffer holds @sample's bytes. */
static inline int sample_is_right(unsigned int sample, const unsigned char *buffer)
{
	for (uint64_t i = 0; i < sample_sizes[sample]; i++)
		if (buffer[i] != sample_byte(sample, i))
			return 0;
	return 1;
}

/* Whether @store keeps part @offset, @length of @sample (*@status if not). */
static inline bool store_has_part(const struct store *store, nopfs_sample_id sample, uint64_t size,
                                  uint64_t offset, uint64_t length, nopfs_status *status)
{
	*status = NOPFS_ERR_NOT_FOUND;
	if (sample >= SAMPLES || size != sample_sizes[sample] || offset > size ||
	    length > size - offset)
		return false;
	if (store->state[sample] != PRESENT) {
		*status = store->defer_absent ? NOPFS_ERR_AGAIN : NOPFS_ERR_NOT_FOUND;
		return false;
	}
	return true;
}

static inline nopfs_status store_serve(void *arg, nopfs_sample_id sample, void *buffer,
                                       uint64_t size)
{
	struct store *store = arg;
	nopfs_status status;

	if (store->serve_delay_ms)
		usleep(store->serve_delay_ms * 1000u);
	if (!store_has_part(store, sample, size, 0, size, &status))
		return status;
	memcpy(buffer, store->ram + store->offsets[sample], size);
	atomic_fetch_add(&store->served, 1);
	return NOPFS_OK;
}

/* The stream path's serve, a part at a time, from the same bytes. */
static inline nopfs_status store_serve_range(void *arg, nopfs_sample_id sample, uint64_t size,
                                             uint64_t offset, void *buffer, uint64_t length,
                                             uint64_t *plan)
{
	struct store *store = arg;
	nopfs_status status;

	if (store->part_delay_ms)
		usleep(store->part_delay_ms * 1000u);
	if (!store_has_part(store, sample, size, offset, length, &status))
		return status;
	memcpy(buffer, store->ram + store->offsets[sample] + offset, length);
	*plan = store->plan_changes && offset > 0;
	atomic_fetch_add(&store->ranges, 1);
	return NOPFS_OK;
}

/* The same, lent where it is (every other part copied instead, when @mixed). */
static inline nopfs_status store_serve_view(void *arg, nopfs_sample_id sample, uint64_t size,
                                            uint64_t offset, uint64_t length, uint64_t *plan,
                                            peer_take_fn take, void *take_arg)
{
	struct store *store = arg;
	nopfs_status status;

	if (!store_has_part(store, sample, size, offset, length, &status))
		return status;
	/* parts: the first 64 KiB, then 256 KiB each */
	if (store->mixed_views && (offset + 64 * 1024) / (256 * 1024) % 2)
		return NOPFS_ERR_UNSUPPORTED;
	*plan = store->plan_changes && offset > 0;
	atomic_fetch_add(&store->views, 1);
	return take(take_arg, store->ram + store->offsets[sample] + offset, length);
}

static inline void store_notice(void *arg, uint32_t sender, uint32_t kind, uint32_t generation,
                                const void *payload, size_t length)
{
	struct store *store = arg;

	store->notice_sender = sender;
	store->notice_kind = kind;
	store->notice_generation = generation;
	snprintf(store->notice, sizeof(store->notice), "%.*s", (int)length, (const char *)payload);
	atomic_fetch_add(&store->notices, 1);
}

/* The owner fetches a sample it keeps (here: marks it present) and copies it. */
static inline nopfs_status store_fill(void *arg, nopfs_sample_id sample, void *buffer,
                                      uint64_t size, uint64_t deadline_ns)
{
	struct store *store = arg;
	uint64_t left_us = (deadline_ns - nopfs_clock_now_ns()) / 1000u;

	if (store->fill_honors_deadline && store->fill_delay_ms * 1000u > left_us) {
		usleep((useconds_t)left_us); /* a slow fill that gives up in time */
		atomic_fetch_add(&store->fills, 1);
		return NOPFS_ERR_TIMEOUT;
	}
	if (store->fill_delay_ms)
		usleep(store->fill_delay_ms * 1000u);
	atomic_fetch_add(&store->fills, 1);
	if (store->fill_fails)
		return NOPFS_ERR_IO;
	store->state[sample] = PRESENT;
	memcpy(buffer, store->ram + store->offsets[sample], size);
	return NOPFS_OK;
}

/* The secret of this process's test job, made once. */
static inline const unsigned char *job_secret(void)
{
	static unsigned char secret[PEER_SECRET_BYTES];
	static bool made;

	if (!made)
		ck_assert_int_eq(peer_secret_generate(secret), NOPFS_OK);
	made = true;
	return secret;
}

/*
 * The configuration of a plane for @node exposing @store (none if NULL) and
 * serving from it, with the job's secret. Its one-sided reads work over TCP
 * (emulated): the get tests need them; the agent never allows that.
 */
static inline struct peer_config plane_config(uint32_t node, struct store *store, int timeout_ms)
{
	struct peer_config config = {
		.node = node,
		.one_sided = PEER_ONE_SIDED_EMULATED,
		.present_value = PRESENT,
		.timeout_ms = timeout_ms,
	};

	memcpy(config.secret, job_secret(), PEER_SECRET_BYTES);
	if (store) {
		config.ram_base = store->ram;
		config.ram_bytes = store->offsets[SAMPLES];
		config.state_base = store->state;
		config.state_bytes = SAMPLES;
		config.serve = store_serve;
		config.fill = store_fill;
		config.notice = store_notice;
		config.serve_arg = store;
	}
	return config;
}

static inline struct peer_plane *plane_create(const struct peer_config *config)
{
	struct peer_plane *plane = NULL;

	ck_assert_int_eq(peer_plane_create(config, &plane), NOPFS_OK);
	ck_assert_ptr_nonnull(plane);
	return plane;
}

/*
 * A plane for @node exposing @store (none if NULL) and serving from it; its
 * operations' deadlines grow by their bytes at @slow_rate (0: fixed).
 */
static inline struct peer_plane *plane_start_slow(uint32_t node, struct store *store,
                                                  int timeout_ms, double slow_rate)
{
	struct peer_config config = plane_config(node, store, timeout_ms);

	config.slow_bytes_per_s = slow_rate;
	return plane_create(&config);
}

static inline struct peer_plane *plane_start(uint32_t node, struct store *store, int timeout_ms)
{
	return plane_start_slow(node, store, timeout_ms, 0);
}

/* Connect @plane to @node through @packed, as received from PMIx. */
static inline void connect_packed(struct peer_plane *plane, uint32_t node, const void *packed,
                                  size_t length)
{
	struct peer_record record;

	ck_assert_int_eq(peer_record_unpack(packed, length, &record), NOPFS_OK);
	ck_assert_int_eq(peer_plane_connect(plane, node, &record), NOPFS_OK);
}

/* @from learns @to's record (as node @to_node) through pack and unpack. */
static inline void connect_to(struct peer_plane *from, struct peer_plane *to, uint32_t to_node)
{
	void *packed;
	size_t length;

	ck_assert_int_eq(peer_record_pack(peer_plane_local_record(to), &packed, &length), NOPFS_OK);
	connect_packed(from, to_node, packed, length);
	free(packed);
}

/* CLOCK_MONOTONIC in milliseconds, for the tests' timings. */
static inline double now_ms(void)
{
	return nopfs_clock_seconds() * 1e3;
}

/* A get of @sample of @store from @node into @dest. */
static inline nopfs_status get_sample(struct peer_plane *plane, uint32_t node,
                                      const struct store *store, unsigned int sample, void *dest)
{
	return peer_plane_get(plane, node, sample, store->offsets[sample], dest,
	                      sample_sizes[sample]);
}

/* A fetch of @sample from @node into @dest that must bring its bytes. */
static inline void assert_fetched(struct peer_plane *plane, uint32_t node, unsigned int sample,
                                  unsigned char *dest)
{
	memset(dest, 0, sample_sizes[sample]);
	ck_assert_int_eq(peer_plane_fetch(plane, node, sample, dest, sample_sizes[sample]),
	                 NOPFS_OK);
	ck_assert_msg(sample_is_right(sample, dest), "sample %u wrong", sample);
}

/* Two planes of this process, each a node of the other. */
struct pair {
	struct store store[2];
	struct peer_plane *plane[2];
};

static inline void pair_start_slow(struct pair *pair, int timeout_ms, double slow_rate)
{
	for (unsigned int n = 0; n < 2; n++) {
		store_init(&pair->store[n]);
		pair->plane[n] = plane_start_slow(n, &pair->store[n], timeout_ms, slow_rate);
	}
	connect_to(pair->plane[0], pair->plane[1], 1);
	connect_to(pair->plane[1], pair->plane[0], 0);
}

static inline void pair_start(struct pair *pair, int timeout_ms)
{
	pair_start_slow(pair, timeout_ms, 0);
}

static inline void pair_stop(struct pair *pair)
{
	for (unsigned int n = 0; n < 2; n++) {
		peer_plane_destroy(pair->plane[n]);
		store_fini(&pair->store[n]);
	}
}

/* check_peer_failures.c: deadlines, dead peers, two processes. */
void peer_add_failure_tests(Suite *suite);

/* check_peer_stream.c: the stream path. */
void peer_add_stream_tests(Suite *suite);

#endif
