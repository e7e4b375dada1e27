/*
 * The data plane when peers fail: a peer whose progress is blocked, a
 * destroyed peer, and a peer in another process that stops or is killed
 * mid-run. Every operation must end by its deadline (plus scheduling
 * slack), most of them at once, and the plane must stay usable.
 */
#include "config.h"

#include <signal.h>
#include <sys/wait.h>

#include "peer_fixture.h"
#include "peer/peer_internal.h"
#include "peer/peer_pipe.h"

struct blocked_fetch {
	struct peer_plane *plane;
	nopfs_status status;
	double ms;
};

static void *blocked_fetch_main(void *arg)
{
	struct blocked_fetch *f = arg;
	unsigned char *dest = malloc(sample_sizes[2]);
	double start = now_ms();

	f->status = peer_plane_fetch(f->plane, 1, 2, dest, sample_sizes[2]);
	f->ms = now_ms() - start;
	free(dest);
	return NULL;
}

/*
 * Node 1's serve callback sleeps three deadlines, which blocks its progress
 * thread: node 0's fetch, and node 2's get (emulated over TCP, so it needs
 * node 1's progress too), time out; after that both planes work again.
 */
START_TEST(deadline_on_blocked_peer)
{
	struct peer_plane *third;
	struct blocked_fetch fetch;
	unsigned char *dest = malloc(sample_sizes[2]);
	struct peer_stats stats;
	struct pair pair;
	nopfs_status status;
	pthread_t thread;
	double start, ms;

	pair_start(&pair, DEADLINE_MS);
	third = plane_start(2, NULL, DEADLINE_MS);
	connect_to(third, pair.plane[1], 1);
	ck_assert_int_eq(get_sample(third, 1, &pair.store[0], 2, dest), NOPFS_OK);

	pair.store[1].serve_delay_ms = 3 * DEADLINE_MS;
	fetch = (struct blocked_fetch){ .plane = pair.plane[0] };
	ck_assert_int_eq(pthread_create(&thread, NULL, blocked_fetch_main, &fetch), 0);
	usleep(50 * 1000 * SCALE); /* the request is being served */
	start = now_ms();
	status = get_sample(third, 1, &pair.store[0], 2, dest);
	ms = now_ms() - start;
	pthread_join(thread, NULL);
	printf("deadline %d ms: fetch %s after %.1f ms, get %s after %.1f ms\n", DEADLINE_MS,
	       nopfs_status_string(fetch.status), fetch.ms, nopfs_status_string(status), ms);
	ck_assert_int_eq(fetch.status, NOPFS_ERR_TIMEOUT);
	ck_assert_int_eq(status, NOPFS_ERR_TIMEOUT);
	ck_assert_msg(fetch.ms >= DEADLINE_MS - 1 && fetch.ms <= DEADLINE_MS + SLACK_MS,
	              "fetch gave up after %.1f ms", fetch.ms);
	ck_assert_msg(ms >= DEADLINE_MS - 1 && ms <= DEADLINE_MS + SLACK_MS,
	              "get gave up after %.1f ms", ms);

	/* down for a deadline: failing at once */
	start = now_ms();
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, 2, dest, sample_sizes[2]),
	                 NOPFS_ERR_IO);
	ms = now_ms() - start;
	ck_assert_msg(ms < 20 * SCALE, "a fetch from a down node took %.1f ms", ms);

	/* the owner wakes up; after the hold-off both askers reconnect */
	pair.store[1].serve_delay_ms = 0;
	usleep((3 * DEADLINE_MS + 100) * 1000);
	ck_assert_int_eq(peer_plane_fetch(pair.plane[0], 1, 2, dest, sample_sizes[2]), NOPFS_OK);
	ck_assert(sample_is_right(2, dest));
	ck_assert_int_eq(get_sample(third, 1, &pair.store[0], 3 - 1, dest), NOPFS_OK);
	ck_assert(sample_is_right(2, dest));
	peer_plane_stats(pair.plane[0], &stats);
	ck_assert_uint_eq(stats.timeouts, 1);
	ck_assert_uint_eq(stats.errors, 1);
	ck_assert_uint_eq(stats.requests, 1);
	peer_plane_stats(third, &stats);
	ck_assert_uint_eq(stats.timeouts, 1);
	ck_assert_uint_eq(stats.gets, 2);

	free(dest);
	peer_plane_destroy(third);
	pair_stop(&pair);
}
END_TEST

START_TEST(destroyed_peer_fails_fast)
{
	unsigned char *dest = malloc(sample_sizes[2]);
	struct peer_plane *other;
	struct store store;
	struct pair pair;
	nopfs_status status;
	double start, ms;

	pair_start(&pair, TIMEOUT_MS);
	ck_assert_int_eq(get_sample(pair.plane[0], 1, &pair.store[0], 2, dest), NOPFS_OK);
	ck_assert(!peer_plane_lost(pair.plane[0], 1));
	peer_plane_destroy(pair.plane[1]);
	pair.plane[1] = NULL;

	for (int round = 0; round < 3; round++) {
		start = now_ms();
		status = get_sample(pair.plane[0], 1, &pair.store[0], 2, dest);
		ms = now_ms() - start;
		printf("get from a destroyed peer: %s after %.1f ms\n", nopfs_status_string(status),
		       ms);
		ck_assert(status == NOPFS_ERR_IO || status == NOPFS_ERR_TIMEOUT);
		ck_assert_msg(ms <= TIMEOUT_MS + SLACK_MS, "took %.1f ms", ms);
		start = now_ms();
		status = peer_plane_fetch(pair.plane[0], 1, 2, dest, sample_sizes[2]);
		ms = now_ms() - start;
		printf("fetch from a destroyed peer: %s after %.1f ms\n",
		       nopfs_status_string(status), ms);
		ck_assert(status == NOPFS_ERR_IO || status == NOPFS_ERR_TIMEOUT);
		ck_assert_msg(ms <= TIMEOUT_MS + SLACK_MS, "took %.1f ms", ms);
		if (round == 1)
			usleep((TIMEOUT_MS + 50) * 1000); /* past the hold-off: reconnects, fails */
	}

	ck_assert(peer_plane_lost(pair.plane[0], 1));

	/* the plane still works with others */
	store_init(&store);
	other = plane_start(3, &store, TIMEOUT_MS);
	connect_to(pair.plane[0], other, 3);
	ck_assert_int_eq(get_sample(pair.plane[0], 3, &store, 2, dest), NOPFS_OK);
	ck_assert(!peer_plane_lost(pair.plane[0], 3));
	ck_assert(sample_is_right(2, dest));
	peer_plane_destroy(other);
	store_fini(&store);
	free(dest);
	peer_plane_destroy(pair.plane[0]);
	store_fini(&pair.store[0]);
	store_fini(&pair.store[1]);
}
END_TEST

/* What the child reports when asked ('s'): its plane's statistics. */
struct child_report {
	struct peer_stats stats;
	unsigned int notices;
};

/*
 * The child process: node 1, serving its store with the secret it is sent,
 * until killed (or until the test process goes, closing the pipe). On 'f'
 * it asks node 0 for sample 2, on 'n' sends it a notice, on 's' reports. No
 * Check assertions here: exit codes.
 */
static void __attribute__((noreturn)) child_main(int to_parent, int from_parent)
{
	struct peer_config config;
	struct peer_plane *plane;
	struct store store;
	char command = 'r';

	store_init(&store);
	config = plane_config(1, &store, TIMEOUT_MS);
	if (pipe_receive_secret(from_parent, config.secret))
		_exit(4);
	if (peer_plane_create(&config, &plane) != NOPFS_OK)
		_exit(2);
	if (pipe_send_record(to_parent, plane) || pipe_receive_record(from_parent, plane, 0) ||
	    nopfs_write_all(to_parent, &command, 1))
		_exit(3);
	while (read(from_parent, &command, 1) > 0) {
		unsigned char *dest = malloc(sample_sizes[2]);
		struct child_report report = { .notices = atomic_load(&store.notices) };

		if (command == 'f')
			peer_plane_fetch(plane, 0, 2, dest, sample_sizes[2]);
		else if (command == 'n')
			peer_plane_notify(plane, 7, 0, "forged", 7);
		peer_plane_stats(plane, &report.stats);
		free(dest);
		if (command == 's' && nopfs_write_all(to_parent, &report, sizeof(report)))
			_exit(5);
	}
	peer_plane_destroy(plane);
	store_fini(&store);
	_exit(0);
}

struct child {
	pid_t pid;
	int to_child, from_child;
};

/* Fork node 1 with @secret and connect @plane (node 0) and it to each other. */
static void child_start_with(struct child *child, struct peer_plane **plane, struct store *store,
                             const unsigned char *secret)
{
	int down[2], up[2];
	char ready;

	ck_assert_int_eq(pipe(down), 0);
	ck_assert_int_eq(pipe(up), 0);
	child->pid = fork();
	ck_assert_int_ge(child->pid, 0);
	if (child->pid == 0) {
		close(down[1]);
		close(up[0]);
		child_main(up[1], down[0]);
	}
	close(down[0]);
	close(up[1]);
	child->to_child = down[1];
	child->from_child = up[0];
	/* UCX starts in each process after the fork */
	store_init(store);
	*plane = plane_start(0, store, TIMEOUT_MS);
	ck_assert_int_eq(pipe_send_secret(child->to_child, secret), 0);
	ck_assert_int_eq(pipe_receive_record(child->from_child, *plane, 1), 0);
	ck_assert_int_eq(pipe_send_record(child->to_child, *plane), 0);
	ck_assert_int_eq(nopfs_read_exact(child->from_child, &ready, 1), NOPFS_OK);
}

static void child_start(struct child *child, struct peer_plane **plane, struct store *store)
{
	child_start_with(child, plane, store, job_secret());
}

/* Have the child do @command, and report. */
static struct child_report child_ask(struct child *child, char command)
{
	struct child_report report;
	char report_command = 's';

	ck_assert_int_eq(nopfs_write_all(child->to_child, &command, 1), NOPFS_OK);
	if (command != report_command)
		ck_assert_int_eq(nopfs_write_all(child->to_child, &report_command, 1), NOPFS_OK);
	ck_assert_int_eq(nopfs_read_exact(child->from_child, &report, sizeof(report)), NOPFS_OK);
	return report;
}

static void child_kill(struct child *child)
{
	int wstatus;

	ck_assert_int_eq(kill(child->pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(child->pid, &wstatus, 0), child->pid);
	ck_assert(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL);
	close(child->to_child);
	close(child->from_child);
}

START_TEST(two_processes_get_and_fetch)
{
	unsigned char *dest = malloc(sample_sizes[3]);
	struct peer_plane *plane;
	struct child child;
	struct store store;
	nopfs_status status;
	double start, ms;

	child_start(&child, &plane, &store);
	for (unsigned int s = 0; s < SAMPLES; s++) {
		nopfs_status expected = s == ABSENT ? NOPFS_ERR_NOT_FOUND : NOPFS_OK;

		memset(dest, 0, sample_sizes[s]);
		ck_assert_int_eq(get_sample(plane, 1, &store, s, dest), expected);
		ck_assert(expected != NOPFS_OK || sample_is_right(s, dest));
		memset(dest, 0, sample_sizes[s]);
		ck_assert_int_eq(peer_plane_fetch(plane, 1, s, dest, sample_sizes[s]), expected);
		ck_assert(expected != NOPFS_OK || sample_is_right(s, dest));
	}

	/* killed while idle: the next operations fail, quickly */
	child_kill(&child);
	for (int round = 0; round < 2; round++) {
		start = now_ms();
		status = get_sample(plane, 1, &store, 2, dest);
		ms = now_ms() - start;
		printf("get from a killed process: %s after %.1f ms\n", nopfs_status_string(status),
		       ms);
		ck_assert(status == NOPFS_ERR_IO || status == NOPFS_ERR_TIMEOUT);
		ck_assert_msg(ms <= TIMEOUT_MS + SLACK_MS, "took %.1f ms", ms);
		start = now_ms();
		status = peer_plane_fetch(plane, 1, 2, dest, sample_sizes[2]);
		ms = now_ms() - start;
		printf("fetch from a killed process: %s after %.1f ms\n",
		       nopfs_status_string(status), ms);
		ck_assert(status == NOPFS_ERR_IO || status == NOPFS_ERR_TIMEOUT);
		ck_assert_msg(ms <= TIMEOUT_MS + SLACK_MS, "took %.1f ms", ms);
	}
	free(dest);
	peer_plane_destroy(plane);
	store_fini(&store);
}
END_TEST

/*
 * A stopped process: its kernel still accepts connections and data, but
 * nothing answers. Operations time out; once it continues and the hold-off
 * has passed, they work again.
 */
START_TEST(two_processes_stopped_peer_times_out)
{
	unsigned char *dest = malloc(sample_sizes[2]);
	struct peer_plane *plane;
	struct child child;
	struct store store;
	nopfs_status status;
	double start, ms;
	int wait_status;

	child_start(&child, &plane, &store);
	ck_assert_int_eq(get_sample(plane, 1, &store, 2, dest), NOPFS_OK);
	ck_assert_int_eq(kill(child.pid, SIGSTOP), 0);
	/* until every thread of it has stopped: a running one may still answer */
	ck_assert_int_eq(waitpid(child.pid, &wait_status, WUNTRACED), child.pid);
	ck_assert(WIFSTOPPED(wait_status));
	start = now_ms();
	status = get_sample(plane, 1, &store, 2, dest);
	ms = now_ms() - start;
	printf("get from a stopped process: %s after %.1f ms\n", nopfs_status_string(status), ms);
	ck_assert_int_eq(status, NOPFS_ERR_TIMEOUT);
	ck_assert_msg(ms >= TIMEOUT_MS - 1 && ms <= TIMEOUT_MS + SLACK_MS, "took %.1f ms", ms);
	usleep((TIMEOUT_MS + 50) * 1000); /* past the hold-off */
	start = now_ms();
	status = peer_plane_fetch(plane, 1, 2, dest, sample_sizes[2]);
	ms = now_ms() - start;
	printf("fetch from a stopped process: %s after %.1f ms\n", nopfs_status_string(status), ms);
	ck_assert_int_eq(status, NOPFS_ERR_TIMEOUT);
	ck_assert_msg(ms >= TIMEOUT_MS - 1 && ms <= TIMEOUT_MS + SLACK_MS, "took %.1f ms", ms);

	ck_assert_int_eq(kill(child.pid, SIGCONT), 0);
	usleep((TIMEOUT_MS + 50) * 1000);
	ck_assert_int_eq(get_sample(plane, 1, &store, 2, dest), NOPFS_OK);
	ck_assert(sample_is_right(2, dest));
	memset(dest, 0, sample_sizes[2]);
	ck_assert_int_eq(peer_plane_fetch(plane, 1, 2, dest, sample_sizes[2]), NOPFS_OK);
	ck_assert(sample_is_right(2, dest));
	child_kill(&child);
	free(dest);
	peer_plane_destroy(plane);
	store_fini(&store);
}
END_TEST

struct runner {
	struct peer_plane *plane;
	const struct store *store;
	bool fetch;
	atomic_bool *killed;
	atomic_uint before_kill; /* operations that succeeded */
	nopfs_status failure;    /* the first failure */
	double failed_at;        /* ms, monotonic */
};

/* 16 MB gets or fetches until one fails. */
static void *runner_main(void *arg)
{
	struct runner *r = arg;
	unsigned char *dest = malloc(sample_sizes[3]);

	for (;;) {
		nopfs_status status =
		        r->fetch ? peer_plane_fetch(r->plane, 1, 3, dest, sample_sizes[3])
		                 : get_sample(r->plane, 1, r->store, 3, dest);

		if (status != NOPFS_OK) {
			r->failure = status;
			r->failed_at = now_ms();
			break;
		}
		if (!sample_is_right(3, dest)) {
			r->failure = NOPFS_ERR_INTERNAL;
			break;
		}
		if (!atomic_load(r->killed))
			atomic_fetch_add(&r->before_kill, 1);
	}
	free(dest);
	return NULL;
}

START_TEST(two_processes_killed_mid_run)
{
	struct runner runners[2];
	pthread_t threads[2];
	struct peer_plane *plane;
	atomic_bool killed;
	struct child child;
	struct store store;
	double killed_at;

	atomic_init(&killed, false);
	child_start(&child, &plane, &store);
	for (unsigned int t = 0; t < 2; t++) {
		runners[t] = (struct runner){
			.plane = plane, .store = &store, .fetch = t == 1, .killed = &killed
		};
		ck_assert_int_eq(pthread_create(&threads[t], NULL, runner_main, &runners[t]), 0);
	}
	/* both under way, then some more */
	for (int waited = 0; waited < 600 && (!atomic_load(&runners[0].before_kill) ||
	                                      !atomic_load(&runners[1].before_kill));
	     waited++)
		usleep(100 * 1000);
	usleep(100 * 1000 * SCALE);
	atomic_store(&killed, true);
	killed_at = now_ms();
	child_kill(&child);
	for (unsigned int t = 0; t < 2; t++) {
		double after;

		pthread_join(threads[t], NULL);
		after = runners[t].failed_at - killed_at;
		printf("%s: %u x 16 MB before the kill, then %s %.1f ms after it\n",
		       runners[t].fetch ? "fetches" : "gets", atomic_load(&runners[t].before_kill),
		       nopfs_status_string(runners[t].failure), after);
		ck_assert_uint_gt(atomic_load(&runners[t].before_kill), 0);
		ck_assert(runners[t].failure == NOPFS_ERR_IO ||
		          runners[t].failure == NOPFS_ERR_TIMEOUT);
		ck_assert_msg(after <= TIMEOUT_MS + SLACK_MS, "failed %.1f ms after the kill",
		              after);
	}
	peer_plane_destroy(plane);
	store_fini(&store);
}
END_TEST

/* Wait (at most 2 s) until @plane has dropped @count messages; how many it has. */
static uint64_t wait_dropped(struct peer_plane *plane, uint64_t count)
{
	struct peer_stats stats;

	for (int i = 0; i < 200 * SCALE; i++) {
		peer_plane_stats(plane, &stats);
		if (stats.dropped >= count)
			break;
		usleep(10000);
	}
	return stats.dropped;
}

/*
 * A plane with another job's secret, in another process: each side drops
 * what the other sends (requests, notices), serves it nothing and hands on
 * no notice; the honest side keeps working with the others.
 */
START_TEST(wrong_secret_refused)
{
	unsigned char other[PEER_SECRET_BYTES], *dest = malloc(sample_sizes[2]);
	struct peer_plane *plane, *honest;
	struct child_report report;
	struct peer_stats stats;
	struct store store, honest_store;
	struct child child;
	nopfs_status status;

	ck_assert_int_eq(peer_secret_generate(other), NOPFS_OK);
	child_start_with(&child, &plane, &store, other);
	/* notices both ways: dropped on both sides */
	ck_assert_uint_eq(peer_plane_notify(plane, 7, 0, "plan", 5), 1);
	report = child_ask(&child, 'n');
	ck_assert_uint_ge(wait_dropped(plane, 1), 1);
	for (int i = 0; i < 200 && report.stats.dropped == 0; i++) {
		usleep(10000);
		report = child_ask(&child, 's');
	}
	ck_assert_uint_eq(report.stats.dropped, 1);
	/* its request: dropped here, unanswered, so it times out there */
	report = child_ask(&child, 'f');
	ck_assert_uint_eq(report.stats.timeouts, 1);
	ck_assert_uint_eq(report.stats.requests + report.stats.served, 0);
	ck_assert_uint_eq(report.notices, 0);
	ck_assert_uint_eq(wait_dropped(plane, 2), 2);
	/* ours: no answer either (the connection its timeout closed may fail at once) */
	status = peer_plane_fetch(plane, 1, 2, dest, sample_sizes[2]);
	ck_assert(status == NOPFS_ERR_TIMEOUT || status == NOPFS_ERR_IO);
	peer_plane_stats(plane, &stats);
	ck_assert_uint_eq(stats.served, 0);
	ck_assert_uint_eq(atomic_load(&store.served), 0);
	ck_assert_uint_eq(atomic_load(&store.notices), 0);

	/* the honest side is unaffected: with a plane of its own job, both ways */
	store_init(&honest_store);
	honest = plane_start(2, &honest_store, TIMEOUT_MS);
	connect_to(plane, honest, 2);
	connect_to(honest, plane, 0);
	assert_fetched(plane, 2, 2, dest);
	assert_fetched(honest, 0, 2, dest);
	peer_plane_destroy(honest);
	store_fini(&honest_store);
	child_kill(&child);
	peer_plane_destroy(plane);
	store_fini(&store);
	free(dest);
}
END_TEST

/*
 * An operation whose UCX request does not complete, not even once its
 * endpoint is closed (the request is emulated: a unit this test holds, then
 * ends late after writing where UCX writes). The caller gets
 * NOPFS_ERR_TIMEOUT after its deadline and the close's grace, reuses its
 * buffer at once (as for the PFS read that follows), and the late write
 * never reaches that buffer; the late completion frees the operation (ASan
 * and valgrind would see a leak or a use after free). The node is down for
 * a deadline, then serves again.
 */
START_TEST(abandoned_operation_leaves_the_callers_buffer_alone)
{
	uint64_t size = sample_sizes[2];
	unsigned char *dest = malloc(size);
	struct peer_conn *conn;
	struct peer_op *op;
	struct pair pair;
	nopfs_status status;
	double start, ms;

	pair_start(&pair, DEADLINE_MS);
	assert_fetched(pair.plane[0], 1, 2, dest);
	ck_assert_int_eq(peer_node_acquire(pair.plane[0], peer_node_find(pair.plane[0], 1), &conn),
	                 NOPFS_OK);
	op = peer_op_create(pair.plane[0], conn, size);
	ck_assert_ptr_nonnull(op);
	peer_op_begin(op); /* the request UCX never completes */
	start = now_ms();
	status = peer_op_wait(op, "get of a sample", NULL);
	ms = now_ms() - start;
	printf("abandoned operation: %s after %.1f ms\n", nopfs_status_string(status), ms);
	ck_assert_int_eq(status, NOPFS_ERR_TIMEOUT);
	ck_assert_msg(ms >= 2 * DEADLINE_MS - 1 && ms <= 2 * DEADLINE_MS + SLACK_MS,
	              "gave up after %.1f ms", ms);
	peer_op_release(op);
	memset(dest, 0x5a, size);
	memset(op->bytes, 0xee, size); /* UCX, late */
	peer_op_end(op, UCS_OK);
	for (uint64_t i = 0; i < size; i++)
		ck_assert_msg(dest[i] == 0x5a, "byte %" PRIu64 " of the caller's buffer written",
		              i);

	ck_assert(peer_plane_lost(pair.plane[0], 1));
	usleep((DEADLINE_MS + 50) * 1000);
	assert_fetched(pair.plane[0], 1, 2, dest);
	free(dest);
	pair_stop(&pair);
}
END_TEST

void peer_add_failure_tests(Suite *suite)
{
	TCase *failures = tcase_create("failures");
	TCase *processes = tcase_create("processes");

	tcase_add_test(failures, deadline_on_blocked_peer);
	tcase_add_test(failures, destroyed_peer_fails_fast);
	tcase_add_test(failures, abandoned_operation_leaves_the_callers_buffer_alone);
	tcase_set_timeout(failures, 60);
	suite_add_tcase(suite, failures);

	tcase_add_test(processes, two_processes_get_and_fetch);
	tcase_add_test(processes, two_processes_stopped_peer_times_out);
	tcase_add_test(processes, two_processes_killed_mid_run);
	tcase_add_test(processes, wrong_secret_refused);
	tcase_set_timeout(processes, 60);
	suite_add_tcase(suite, processes);
}
