/*
 * Pacing: against model servers, the workers grow to the most where more
 * workers are answered as fast (a latency-bound server), and stay few where
 * the server is saturated, alone or with other clients queued, without
 * losing its rate.
 */
#include <check.h>
#include <stdlib.h>

#include "common/pace.h"

#define INTERVAL_S 0.25

/*
 * A server answering each call after @base seconds, at most @rate calls a
 * second (0: no limit) in the order they come, with @others calls of other
 * clients always waiting besides ours.
 */
struct server {
	double base, rate, others;
};

/* The latency each of @workers outstanding calls sees. */
static double latency_of(const struct server *server, unsigned int workers)
{
	double queued = server->rate > 0 ? (workers + server->others) / server->rate : 0;

	return queued > server->base ? queued : server->base;
}

/* One interval with pace's workers; returns our calls a second. */
static double run_interval(struct nopfs_pace *pace, const struct server *server)
{
	unsigned int workers = pace->active;
	double latency = latency_of(server, workers);
	uint64_t ops = (uint64_t)(workers * INTERVAL_S / latency);

	nopfs_pace_update(pace, ops, (uint64_t)((double)ops * latency * 1e9));
	return workers / latency;
}

/* @count intervals; the workers of the last, and the most of those after @settle. */
static unsigned int run(struct nopfs_pace *pace, const struct server *server, unsigned int count,
                        unsigned int settle, unsigned int *most, double *slowest)
{
	*most = 0;
	*slowest = 1e30;
	for (unsigned int i = 0; i < count; i++) {
		unsigned int workers = pace->active;
		double rate = run_interval(pace, server);

		if (i >= settle && workers > *most)
			*most = workers;
		if (i >= settle && workers > pace->min && rate < *slowest)
			*slowest = rate;
	}
	return pace->active;
}

START_TEST(latency_bound_grows_to_the_most)
{
	struct server server = { .base = 0.002 };
	struct nopfs_pace pace;
	unsigned int most;
	double slowest;

	nopfs_pace_init(&pace, 2, 16);
	ck_assert_uint_eq(pace.active, 2);
	run(&pace, &server, 4, 0, &most, &slowest);
	/* doubling at first: 2, 4, 8, 16 */
	ck_assert_uint_eq(pace.active, 16);
	run(&pace, &server, 200, 0, &most, &slowest);
	ck_assert_uint_eq(most, 16);
	ck_assert_uint_eq(pace.peak, 16);
	/* never more than asked */
	ck_assert_uint_le(pace.active, 16);
}
END_TEST

START_TEST(saturated_stays_few_and_keeps_the_rate)
{
	/* 2000 calls a second, answered after 0.2 ms when nothing waits */
	struct server server = { .base = 0.0002, .rate = 2000 };
	struct nopfs_pace pace;
	unsigned int most;
	double slowest;

	nopfs_pace_init(&pace, 2, 16);
	run(&pace, &server, 400, 20, &most, &slowest);
	ck_assert_uint_le(most, 6);
	/* the fewer workers lose nothing: the server's whole rate */
	ck_assert_double_ge(slowest, 0.99 * server.rate);
	/* the probes keep the base fresh: no creeping up over a long scan */
	run(&pace, &server, 2000, 0, &most, &slowest);
	ck_assert_uint_le(most, 6);
}
END_TEST

START_TEST(other_clients_keep_their_share)
{
	/* six ranks with a call each always waiting at the same server */
	struct server server = { .base = 0.0002, .rate = 2000, .others = 6 };
	struct nopfs_pace pace;
	unsigned int most;
	double slowest;

	nopfs_pace_init(&pace, 2, 16);
	run(&pace, &server, 400, 20, &most, &slowest);
	ck_assert_uint_le(most, 8);
	/* a rank's call waits for at most 14 calls, not 22 */
	ck_assert_double_le(latency_of(&server, most), 14.0 / 2000 + 1e-9);
}
END_TEST

START_TEST(follows_the_server)
{
	struct server server = { .base = 0.002 };
	struct nopfs_pace pace;
	unsigned int most;
	double slowest;

	nopfs_pace_init(&pace, 2, 16);
	run(&pace, &server, 30, 0, &most, &slowest);
	ck_assert_uint_eq(pace.active, 16);
	/* the server becomes the bottleneck: within a few intervals, few workers */
	server.rate = 1000;
	run(&pace, &server, 4, 0, &most, &slowest);
	ck_assert_uint_le(pace.active, 8);
	run(&pace, &server, 200, 0, &most, &slowest);
	ck_assert_uint_le(most, 8);
	/* and no longer: back to the most */
	server.rate = 0;
	run(&pace, &server, 200, 0, &most, &slowest);
	ck_assert_uint_eq(pace.active, 16);
}
END_TEST

START_TEST(too_few_calls_change_nothing)
{
	struct nopfs_pace pace;

	nopfs_pace_init(&pace, 4, 16);
	ck_assert_uint_eq(nopfs_pace_update(&pace, 0, 0), 4);
	ck_assert_uint_eq(nopfs_pace_update(&pace, 3, 3000000), 4);
	ck_assert_uint_eq(pace.count, 0);
	/* enough: it grows */
	ck_assert_uint_eq(nopfs_pace_update(&pace, 100, 100 * 1000000ull), 8);
}
END_TEST

START_TEST(bounds)
{
	struct nopfs_pace pace;

	nopfs_pace_init(&pace, 0, 0);
	ck_assert_uint_eq(pace.min, 1);
	ck_assert_uint_eq(pace.max, 1);
	ck_assert_uint_eq(nopfs_pace_update(&pace, 100, 100 * 1000000ull), 1);
	nopfs_pace_init(&pace, 3, 2);
	ck_assert_uint_eq(pace.active, 3);
	ck_assert_uint_eq(pace.max, 3);
	/* a latency far above the base: never below the fewest */
	nopfs_pace_init(&pace, 4, 16);
	nopfs_pace_update(&pace, 100, 100 * 1000000ull);
	nopfs_pace_update(&pace, 100, 100 * 1000000ull);
	ck_assert_uint_eq(pace.active, 16);
	ck_assert_uint_eq(nopfs_pace_update(&pace, 100, 100 * 1000000000ull), 4);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("pace");
	TCase *tc = tcase_create("pace");
	SRunner *runner;
	int failed;

	tcase_add_test(tc, latency_bound_grows_to_the_most);
	tcase_add_test(tc, saturated_stays_few_and_keeps_the_rate);
	tcase_add_test(tc, other_clients_keep_their_share);
	tcase_add_test(tc, follows_the_server);
	tcase_add_test(tc, too_few_calls_change_nothing);
	tcase_add_test(tc, bounds);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
