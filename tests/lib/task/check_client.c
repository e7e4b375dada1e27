/*
 * The C API against a fake agent on a real Unix socket (in a thread): the
 * staged fast path, GET with a passed descriptor, the PFS fallback, and an
 * agent that is absent, refuses, hangs, dies or talks nonsense.
 *
 * Each place a sample can come from holds a different copy ("STAGED",
 * "AGENT", "PFS" at the start), so a test can tell which one was read.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_agent.h"
#include "task/nopfs.h"
#include "task/runtime.h"
#include "task/wire.h"
#include "common/clock.h"

#define SAMPLES     6
#define EMPTY_INDEX 5   /* the sample of size 0 */
#define TIMEOUT_MS  300 /* where a test waits for a silent agent */

static char root[64];
static char stage_dir[PATH_MAX];
static char dataset[PATH_MAX];
static struct fake_agent agent;

/*
 * The copy of sample @index kept by @origin ("STAGED", "AGENT", "PFS"): all
 * of the same size, as the client checks the staging index's sizes.
 */
static size_t content(const char *origin, uint64_t index, char *out, size_t length)
{
	size_t used;

	if (index == EMPTY_INDEX)
		return 0;
	used = (size_t)snprintf(out, length, "%-6s sample %d\n", origin, (int)index);
	for (size_t i = 0; i < index * 1000 + 10 && used < length; i++)
		out[used++] = (char)('a' + index);
	return used;
}

static void write_file(const char *path, const void *data, size_t length)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, length), (ssize_t)length);
	close(fd);
}

static void write_copy(const char *dir, const char *name, const char *origin, uint64_t index)
{
	static char data[16384];
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	write_file(path, data, content(origin, index, data, sizeof(data)));
}

/* The staging index (runtime.h) of the PFS copies; @damage breaks it. */
enum damage { INTACT, BAD_MAGIC, BAD_VERSION, TRUNCATED, WRONG_COUNT };

static void write_index(enum damage damage)
{
	struct nopfs_stage_index_header header = { NOPFS_STAGE_INDEX_MAGIC,
		                                   NOPFS_STAGE_INDEX_VERSION, SAMPLES };
	uint64_t sizes[SAMPLES + 1];
	int64_t labels[SAMPLES + 1];
	uint64_t offsets[SAMPLES + 2];
	char paths[SAMPLES * 32] = "";
	char data[16384];
	char file[PATH_MAX * 2];
	FILE *out;

	if (damage == WRONG_COUNT)
		header.count = SAMPLES + 1;
	if (damage == BAD_MAGIC)
		header.magic ^= 1;
	if (damage == BAD_VERSION)
		header.version = 2;
	offsets[0] = 0;
	for (uint64_t i = 0; i < header.count; i++) {
		sizes[i] = content("PFS", i, data, sizeof(data));
		labels[i] = fake_agent_label(i);
		snprintf(paths + strlen(paths), sizeof(paths) - strlen(paths), "c%d/s%d.bin",
		         (int)(i % 2), (int)i);
		offsets[i + 1] = strlen(paths);
	}
	snprintf(file, sizeof(file), "%s/index", stage_dir);
	out = fopen(file, "w");
	ck_assert_ptr_nonnull(out);
	fwrite(&header, sizeof(header), 1, out);
	fwrite(sizes, sizeof(sizes[0]), header.count, out);
	fwrite(labels, sizeof(labels[0]), header.count, out);
	fwrite(offsets, sizeof(offsets[0]), header.count + 1, out);
	fwrite(paths, 1, strlen(paths) - (damage == TRUNCATED ? 1 : 0), out);
	fclose(out);
}

static void setup(void)
{
	char path[PATH_MAX * 2];
	char name[32];

	snprintf(root, sizeof(root), "/tmp/nopfs-client-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(stage_dir, sizeof(stage_dir), "%s/stage", root);
	snprintf(dataset, sizeof(dataset), "%s/dataset", root);
	memset(&agent, 0, sizeof(agent));
	snprintf(agent.copies, sizeof(agent.copies), "%s/copies", root);
	snprintf(agent.socket_path, sizeof(agent.socket_path), "%s/agent.sock", root);
	agent.samples = SAMPLES;
	ck_assert_int_eq(mkdir(stage_dir, 0700), 0);
	ck_assert_int_eq(mkdir(dataset, 0700), 0);
	ck_assert_int_eq(mkdir(agent.copies, 0700), 0);
	for (int c = 0; c < 2; c++) {
		snprintf(path, sizeof(path), "%s/c%d", dataset, c);
		ck_assert_int_eq(mkdir(path, 0700), 0);
	}
	for (uint64_t i = 0; i < SAMPLES; i++) {
		snprintf(name, sizeof(name), "c%d/s%d.bin", (int)(i % 2), (int)i);
		write_copy(dataset, name, "PFS", i);
		snprintf(name, sizeof(name), "i%d", (int)i);
		write_copy(agent.copies, name, "AGENT", i);
	}
	write_copy(stage_dir, "i3.0", "STAGED", 0);
	write_copy(stage_dir, "i3.5", "STAGED", 5);
	write_index(INTACT);
	setenv(NOPFS_ENV_STAGE_DIR, stage_dir, 1);
	setenv(NOPFS_ENV_DATASET, dataset, 1);
	/* Generous, for valgrind; tests of a silent agent shorten it. */
	setenv(NOPFS_ENV_TIMEOUT_MS, "5000", 1);
	unsetenv(NOPFS_ENV_SOCKET);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* Remove @name from the staging directory. */
static void unstage(const char *name)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", stage_dir, name);
	ck_assert_int_eq(unlink(path), 0);
}

static void teardown(void)
{
	nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Wait only TIMEOUT_MS for the agent in clients connected from now on. */
static void short_timeout(void)
{
	char text[16];

	snprintf(text, sizeof(text), "%d", TIMEOUT_MS);
	setenv(NOPFS_ENV_TIMEOUT_MS, text, 1);
}

static struct nopfs_client *start_and_connect(int mode)
{
	struct nopfs_client *client = NULL;

	agent.mode = mode;
	ck_assert_int_eq(fake_agent_start(&agent), 0);
	ck_assert_int_eq(nopfs_client_connect(agent.socket_path, 3, &client), NOPFS_OK);
	ck_assert_ptr_nonnull(client);
	ck_assert_uint_eq(nopfs_client_sample_count(client), SAMPLES);
	return client;
}

static void set_mode(int mode)
{
	__atomic_store_n(&agent.mode, mode, __ATOMIC_RELAXED);
}

/* Get @index and check it is @origin's copy, from @source. */
static void expect_sample(struct nopfs_client *client, uint64_t index, const char *origin,
                          uint32_t source)
{
	struct nopfs_sample sample;
	char expected[16384];
	size_t length = content(origin, index, expected, sizeof(expected));

	memset(&sample, 0xa5, sizeof(sample));
	ck_assert_int_eq(nopfs_client_get(client, index, &sample), NOPFS_OK);
	ck_assert_uint_eq(sample.index, index);
	ck_assert_uint_eq(sample.source, source);
	ck_assert_int_eq(sample.label, fake_agent_label(index));
	ck_assert_uint_eq(sample.size, length);
	if (length == 0)
		ck_assert_ptr_null(sample.data);
	else
		ck_assert_mem_eq(sample.data, expected, length);
	nopfs_client_release(client, &sample);
	ck_assert_ptr_null(sample.data);
	ck_assert_uint_eq(sample.size, 0);
}

START_TEST(staged_fast_path)
{
	struct nopfs_client *client = start_and_connect(FAKE_AGENT_SERVE);

	expect_sample(client, 0, "STAGED", NOPFS_FROM_STAGING);
	expect_sample(client, EMPTY_INDEX, "STAGED", NOPFS_FROM_STAGING);
	ck_assert_uint_eq(__atomic_load_n(&agent.gets, __ATOMIC_RELAXED), 0);
	nopfs_client_disconnect(client);
	fake_agent_stop(&agent);
}
END_TEST

START_TEST(agent_passes_a_descriptor)
{
	struct nopfs_client *client = start_and_connect(FAKE_AGENT_SERVE);

	for (uint64_t i = 1; i < SAMPLES - 1; i++)
		expect_sample(client, i, "AGENT", NOPFS_FROM_RAM);
	ck_assert_uint_eq(__atomic_load_n(&agent.gets, __ATOMIC_RELAXED), SAMPLES - 2);
	/* Not staged: the agent's empty copy. */
	unstage("i3.5");
	expect_sample(client, EMPTY_INDEX, "AGENT", NOPFS_FROM_RAM);
	nopfs_client_disconnect(client);
	fake_agent_stop(&agent);
}
END_TEST

START_TEST(sample_outlives_client_and_agent)
{
	struct nopfs_client *client = start_and_connect(FAKE_AGENT_SERVE);
	struct nopfs_sample staged;
	struct nopfs_sample served;
	char expected[16384];

	ck_assert_int_eq(nopfs_client_get(client, 0, &staged), NOPFS_OK);
	ck_assert_int_eq(nopfs_client_get(client, 2, &served), NOPFS_OK);
	nopfs_client_disconnect(client);
	fake_agent_stop(&agent);
	teardown(); /* every file gone */
	ck_assert_mem_eq(staged.data, expected, content("STAGED", 0, expected, sizeof(expected)));
	ck_assert_mem_eq(served.data, expected, content("AGENT", 2, expected, sizeof(expected)));
	nopfs_client_release(NULL, &staged);
	nopfs_client_release(NULL, &served);
}
END_TEST

START_TEST(error_reply_reads_the_pfs)
{
	struct nopfs_client *client = start_and_connect(FAKE_AGENT_ERROR);

	expect_sample(client, 1, "PFS", NOPFS_FROM_PFS);
	expect_sample(client, 4, "PFS", NOPFS_FROM_PFS);
	/* An ERROR is an answer: the agent is still asked. */
	ck_assert_uint_eq(__atomic_load_n(&agent.gets, __ATOMIC_RELAXED), 2);
	unstage("i3.5");
	expect_sample(client, EMPTY_INDEX, "PFS", NOPFS_FROM_PFS);
	nopfs_client_disconnect(client);
	fake_agent_stop(&agent);
}
END_TEST

/* Run @function with stderr in a file; what it wrote. */
static char *capture_stderr(void (*function)(void *), void *arg)
{
	static char text[4096];
	FILE *capture = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t n;

	ck_assert_ptr_nonnull(capture);
	fflush(stderr);
	dup2(fileno(capture), STDERR_FILENO);
	function(arg);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(capture);
	n = fread(text, 1, sizeof(text) - 1, capture);
	text[n] = '\0';
	fclose(capture);
	return text;
}

static nopfs_status connect_status;

/* Connect to @path, expecting a failure that leaves the output alone. */
static void connect_to(void *path)
{
	struct nopfs_client *client = NULL;

	connect_status = nopfs_client_connect(path, -1, &client);
	ck_assert_ptr_null(client);
}

START_TEST(absent_agent_fails_clearly)
{
	char *said;

	said = capture_stderr(connect_to, agent.socket_path);
	ck_assert_int_eq(connect_status, NOPFS_ERR_IO);
	ck_assert_msg(strstr(said, agent.socket_path) && strstr(said, "No such file"), "said: %s",
	              said);
	said = capture_stderr(connect_to, NULL);
	ck_assert_int_eq(connect_status, NOPFS_ERR_NOT_FOUND);
	ck_assert_msg(strstr(said, "NOPFS_SOCKET"), "said: %s", said);
	/* Not a socket at all. */
	said = capture_stderr(connect_to, dataset);
	ck_assert_int_eq(connect_status, NOPFS_ERR_PERMISSION);
	ck_assert_msg(strstr(said, "not a socket"), "said: %s", said);
	/* An agent that closes at once. */
	agent.mode = FAKE_AGENT_CLOSE;
	ck_assert_int_eq(fake_agent_start(&agent), 0);
	said = capture_stderr(connect_to, agent.socket_path);
	ck_assert_int_eq(connect_status, NOPFS_ERR_IO);
	fake_agent_stop(&agent);
}
END_TEST

START_TEST(silent_agent_times_out_on_connect)
{
	double start;
	char *said;

	short_timeout();
	agent.mode = FAKE_AGENT_HANG_HELLO;
	ck_assert_int_eq(fake_agent_start(&agent), 0);
	start = nopfs_clock_seconds();
	said = capture_stderr(connect_to, agent.socket_path);
	ck_assert_int_eq(connect_status, NOPFS_ERR_TIMEOUT);
	ck_assert_double_ge(nopfs_clock_seconds() - start, TIMEOUT_MS / 1000.0 - 0.01);
	ck_assert_double_lt(nopfs_clock_seconds() - start, 3.0);
	ck_assert_ptr_nonnull(strstr(said, agent.socket_path));
	fake_agent_stop(&agent);
}
END_TEST

START_TEST(hanging_agent_costs_one_timeout)
{
	struct nopfs_client *client;
	double start;

	short_timeout();
	client = start_and_connect(FAKE_AGENT_HANG);
	start = nopfs_clock_seconds();
	expect_sample(client, 2, "PFS", NOPFS_FROM_PFS);
	ck_assert_double_ge(nopfs_clock_seconds() - start, TIMEOUT_MS / 1000.0 - 0.01);
	ck_assert_double_lt(nopfs_clock_seconds() - start, 3.0);
	/* Backing off: the next ones go to the PFS at once. */
	start = nopfs_clock_seconds();
	expect_sample(client, 3, "PFS", NOPFS_FROM_PFS);
	expect_sample(client, 4, "PFS", NOPFS_FROM_PFS);
	ck_assert_double_lt(nopfs_clock_seconds() - start, 0.2);
	ck_assert_uint_eq(__atomic_load_n(&agent.gets, __ATOMIC_RELAXED), 1);
	/* Staged samples need no agent. */
	expect_sample(client, 0, "STAGED", NOPFS_FROM_STAGING);
	nopfs_client_disconnect(client);
	fake_agent_stop(&agent);
}
END_TEST

/*
 * An agent still fetching says WAIT every 100 ms: the client waits past its
 * 300 ms timeout and takes the agent's copy, without reading the PFS.
 */
START_TEST(waiting_agent_is_waited_for)
{
	struct nopfs_client *client;
	double start, took;

	short_timeout();
	client = start_and_connect(FAKE_AGENT_SLOW);
	start = nopfs_clock_seconds();
	expect_sample(client, 2, "AGENT", NOPFS_FROM_RAM);
	took = nopfs_clock_seconds() - start;
	ck_assert_double_ge(took, FAKE_AGENT_SLOW_MS / 1000.0 - 0.01);
	ck_assert_double_gt(took, 3 * TIMEOUT_MS / 1000.0);
	/* still connected, not backing off: the next one comes from the agent too */
	set_mode(FAKE_AGENT_SERVE);
	expect_sample(client, 3, "AGENT", NOPFS_FROM_RAM);
	ck_assert_uint_eq(__atomic_load_n(&agent.gets, __ATOMIC_RELAXED), 2);
	ck_assert_uint_eq(__atomic_load_n(&agent.hellos, __ATOMIC_RELAXED), 1);
	nopfs_client_disconnect(client);
	fake_agent_stop(&agent);
}
END_TEST

START_TEST(malformed_replies_read_the_pfs)
{
	static const int modes[] = { FAKE_AGENT_GARBAGE, FAKE_AGENT_NO_FD, FAKE_AGENT_BAD_SIZE,
		                     FAKE_AGENT_WRONG_ID, FAKE_AGENT_HANG };

	short_timeout();
	agent.mode = FAKE_AGENT_SERVE;
	ck_assert_int_eq(fake_agent_start(&agent), 0);
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct nopfs_client *client = NULL;

		set_mode(FAKE_AGENT_SERVE);
		ck_assert_int_eq(nopfs_client_connect(agent.socket_path, 0, &client), NOPFS_OK);
		set_mode(modes[m]);
		expect_sample(client, 1, "PFS", NOPFS_FROM_PFS);
		expect_sample(client, 3, "PFS", NOPFS_FROM_PFS);
		nopfs_client_disconnect(client);
	}
	fake_agent_stop(&agent);
}
END_TEST

START_TEST(agent_is_used_again_after_backoff)
{
	struct nopfs_client *client = start_and_connect(FAKE_AGENT_GARBAGE);

	expect_sample(client, 1, "PFS", NOPFS_FROM_PFS);
	set_mode(FAKE_AGENT_SERVE);
	expect_sample(client, 2, "PFS", NOPFS_FROM_PFS); /* backing off */
	usleep(1100 * 1000);
	expect_sample(client, 3, "AGENT", NOPFS_FROM_RAM);
	ck_assert_uint_eq(__atomic_load_n(&agent.hellos, __ATOMIC_RELAXED), 2);
	nopfs_client_disconnect(client);
	fake_agent_stop(&agent);
}
END_TEST

START_TEST(agent_dies_mid_run)
{
	struct nopfs_client *client;
	struct nopfs_sample kept;
	char expected[16384];

	agent.exit_after = 1;
	client = start_and_connect(FAKE_AGENT_SERVE);
	ck_assert_int_eq(nopfs_client_get(client, 1, &kept), NOPFS_OK);
	ck_assert_uint_eq(kept.source, NOPFS_FROM_RAM);
	expect_sample(client, 2, "PFS", NOPFS_FROM_PFS);
	expect_sample(client, 3, "PFS", NOPFS_FROM_PFS);
	fake_agent_stop(&agent);
	ck_assert_mem_eq(kept.data, expected, content("AGENT", 1, expected, sizeof(expected)));
	nopfs_client_release(client, &kept);
	nopfs_client_disconnect(client);
}
END_TEST

START_TEST(statistics)
{
	struct nopfs_client *client;
	char *json = NULL;

	short_timeout();
	client = start_and_connect(FAKE_AGENT_SERVE);
	expect_sample(client, 1, "AGENT", NOPFS_FROM_RAM);
	ck_assert_int_eq(nopfs_client_stats(client, &json), NOPFS_OK);
	ck_assert_str_eq(json, "{\"hellos\": 1, \"opens\": 0, \"gets\": 1}");
	free(json);
	json = NULL;
	set_mode(FAKE_AGENT_HANG);
	ck_assert_int_eq(nopfs_client_stats(client, &json), NOPFS_ERR_TIMEOUT);
	ck_assert_ptr_null(json);
	ck_assert_int_eq(nopfs_client_stats(client, &json), NOPFS_ERR_IO); /* backing off */
	nopfs_client_disconnect(client);
	fake_agent_stop(&agent);
}
END_TEST

START_TEST(bad_index_files_are_ignored)
{
	static const enum damage damages[] = { BAD_MAGIC, BAD_VERSION, TRUNCATED, WRONG_COUNT };

	agent.mode = FAKE_AGENT_SERVE;
	ck_assert_int_eq(fake_agent_start(&agent), 0);
	for (size_t d = 0; d < sizeof(damages) / sizeof(damages[0]); d++) {
		struct nopfs_client *client = NULL;
		struct nopfs_sample sample;

		write_index(damages[d]);
		set_mode(FAKE_AGENT_SERVE);
		ck_assert_int_eq(nopfs_client_connect(agent.socket_path, 0, &client), NOPFS_OK);
		/* No index, no label for "i0": the agent serves it. */
		expect_sample(client, 0, "AGENT", NOPFS_FROM_RAM);
		/* No index, no PFS path: the sample cannot be read. */
		set_mode(FAKE_AGENT_ERROR);
		ck_assert_int_eq(nopfs_client_get(client, 1, &sample), NOPFS_ERR_UNSUPPORTED);
		nopfs_client_disconnect(client);
	}
	/* No index at all. */
	unstage("index");
	{
		struct nopfs_client *client = NULL;

		set_mode(FAKE_AGENT_SERVE);
		ck_assert_int_eq(nopfs_client_connect(agent.socket_path, 0, &client), NOPFS_OK);
		expect_sample(client, 4, "AGENT", NOPFS_FROM_RAM);
		nopfs_client_disconnect(client);
	}
	fake_agent_stop(&agent);
}
END_TEST

/* Sample 0 must come from the agent, not from what was planted as "i3.0". */
static void get_from_agent_not_planted(void *client)
{
	expect_sample(client, 0, "AGENT", NOPFS_FROM_RAM);
}

START_TEST(planted_staged_copies_are_not_used)
{
	struct nopfs_client *client = start_and_connect(FAKE_AGENT_SERVE);
	char staged[PATH_MAX * 2];
	char evil[PATH_MAX * 2];
	char *said;

	snprintf(staged, sizeof(staged), "%s/i3.0", stage_dir);
	snprintf(evil, sizeof(evil), "%s/evil", root);
	write_copy(root, "evil", "EVIL", 0); /* of the right size */
	unstage("i3.0");
	ck_assert_int_eq(symlink(evil, staged), 0);
	said = capture_stderr(get_from_agent_not_planted, client);
	ck_assert_msg(strstr(said, staged) && strstr(said, "symbolic link"), "said: %s", said);
	unstage("i3.0");
	ck_assert_int_eq(mkfifo(staged, 0600), 0); /* must not block */
	said = capture_stderr(get_from_agent_not_planted, client);
	ck_assert_msg(!strstr(said, "i3.0"), "said again: %s", said);
	unstage("i3.0");
	write_copy(stage_dir, "i3.0", "STAGED", 1); /* another size than the index's */
	get_from_agent_not_planted(client);
	if (geteuid() == 0) {
		write_copy(stage_dir, "i3.0", "EVIL", 0);
		ck_assert_int_eq(chown(staged, 65534, 65534), 0);
		get_from_agent_not_planted(client);
	}
	write_copy(stage_dir, "i3.0", "STAGED", 0);
	if (geteuid() == 0)
		ck_assert_int_eq(chown(staged, 0, 0), 0);
	expect_sample(client, 0, "STAGED", NOPFS_FROM_STAGING);
	nopfs_client_disconnect(client);
	fake_agent_stop(&agent);
}
END_TEST

/* Connect: sample 0, staged, must come from the agent. */
static void connect_and_get_from_agent(void *unused)
{
	struct nopfs_client *client = NULL;

	ck_assert_int_eq(nopfs_client_connect(agent.socket_path, 3, &client), NOPFS_OK);
	expect_sample(client, 0, "AGENT", NOPFS_FROM_RAM);
	nopfs_client_disconnect(client);
}

START_TEST(only_a_private_stage_dir_is_used)
{
	char *said;

	agent.mode = FAKE_AGENT_SERVE;
	ck_assert_int_eq(fake_agent_start(&agent), 0);
	ck_assert_int_eq(chmod(stage_dir, 0755), 0);
	said = capture_stderr(connect_and_get_from_agent, NULL);
	ck_assert_msg(strstr(said, stage_dir) && strstr(said, "open to other users"), "said: %s",
	              said);
	ck_assert_int_eq(chmod(stage_dir, 0700), 0);
	if (geteuid() == 0) {
		ck_assert_int_eq(chown(stage_dir, 65534, 65534), 0);
		said = capture_stderr(connect_and_get_from_agent, NULL);
		ck_assert_msg(strstr(said, "owned by another user"), "said: %s", said);
		ck_assert_int_eq(chown(stage_dir, 0, 0), 0);
	}
	/* A planted index is not used either: no PFS path for sample 1. */
	unstage("index");
	write_index(INTACT);
	{
		char index[PATH_MAX * 2];
		char planted[PATH_MAX * 2];
		struct nopfs_client *client = NULL;
		struct nopfs_sample sample;

		snprintf(index, sizeof(index), "%s/index", stage_dir);
		snprintf(planted, sizeof(planted), "%s/planted-index", root);
		ck_assert_int_eq(rename(index, planted), 0);
		ck_assert_int_eq(symlink(planted, index), 0);
		ck_assert_int_eq(nopfs_client_connect(agent.socket_path, 3, &client), NOPFS_OK);
		set_mode(FAKE_AGENT_ERROR);
		ck_assert_int_eq(nopfs_client_get(client, 1, &sample), NOPFS_ERR_UNSUPPORTED);
		nopfs_client_disconnect(client);
	}
	fake_agent_stop(&agent);
}
END_TEST

/* Expect connecting to be refused as not this user's agent, saying @why. */
static void expect_refused(const char *why)
{
	char *said = capture_stderr(connect_to, agent.socket_path);

	ck_assert_int_eq(connect_status, NOPFS_ERR_PERMISSION);
	ck_assert_msg(strstr(said, agent.socket_path) && strstr(said, why), "said: %s", said);
	ck_assert_uint_eq(__atomic_load_n(&agent.hellos, __ATOMIC_RELAXED), 0);
}

START_TEST(agent_not_in_its_ready_file_is_refused)
{
	agent.mode = FAKE_AGENT_SERVE;
	agent.ready_pid = 1;
	ck_assert_int_eq(fake_agent_start(&agent), 0);
	expect_refused("not the one in its ready file");
	fake_agent_stop(&agent);
	agent.ready_pid = -1;
	ck_assert_int_eq(fake_agent_start(&agent), 0);
	expect_refused("no valid ready file");
	fake_agent_stop(&agent);
	agent.ready_pid = 0;
	ck_assert_int_eq(fake_agent_start(&agent), 0);
	ck_assert_int_eq(chmod(root, 0755), 0);
	expect_refused("not in a private directory");
	ck_assert_int_eq(chmod(root, 0700), 0);
	fake_agent_stop(&agent);
}
END_TEST

START_TEST(agent_of_another_user_is_refused)
{
	int ready[2];
	pid_t child;
	char byte;

	if (geteuid() != 0)
		return; /* needs root to act as another user */
	ck_assert_int_eq(pipe(ready), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		agent.mode = FAKE_AGENT_SERVE;
		agent.listen_as = 65534; /* binds as root, listens as nobody */
		if (fake_agent_listen(&agent) != 0 || write(ready[1], "x", 1) != 1)
			_exit(1);
		fake_agent_run(&agent);
		_exit(0);
	}
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], &byte, 1), 1);
	expect_refused("runs as another user");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	close(ready[0]);
}
END_TEST

START_TEST(invalid_calls)
{
	struct nopfs_client *client = start_and_connect(FAKE_AGENT_SERVE);
	struct nopfs_sample sample = { .size = 77 };

	ck_assert_int_eq(nopfs_client_get(client, SAMPLES, &sample), NOPFS_ERR_RANGE);
	ck_assert_int_eq(nopfs_client_get(client, UINT64_MAX, &sample), NOPFS_ERR_RANGE);
	ck_assert_uint_eq(sample.size, 77);
	ck_assert_int_eq(nopfs_client_get(NULL, 0, &sample), NOPFS_ERR_INVALID);
	ck_assert_int_eq(nopfs_client_get(client, 0, NULL), NOPFS_ERR_INVALID);
	ck_assert_int_eq(nopfs_client_stats(NULL, NULL), NOPFS_ERR_INVALID);
	ck_assert_int_eq(nopfs_client_connect(agent.socket_path, -2, &client), NOPFS_ERR_INVALID);
	ck_assert_uint_eq(nopfs_client_sample_count(NULL), 0);
	nopfs_client_release(client, NULL);
	nopfs_client_disconnect(NULL);
	nopfs_client_disconnect(client);
	fake_agent_stop(&agent);
}
END_TEST

START_TEST(forked_child_connects_on_its_own)
{
	struct nopfs_client *client = start_and_connect(FAKE_AGENT_SERVE);
	int status;
	pid_t child;

	expect_sample(client, 1, "AGENT", NOPFS_FROM_RAM);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		struct nopfs_sample sample;
		char expected[16384];
		size_t length = content("AGENT", 2, expected, sizeof(expected));

		int failed;

		if (nopfs_client_get(client, 2, &sample) != NOPFS_OK)
			_exit(1);
		failed = sample.size != length || memcmp(sample.data, expected, length) != 0;
		nopfs_client_release(client, &sample);
		nopfs_client_disconnect(client);
		_exit(failed);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* The child said HELLO itself; the parent's connection still works. */
	ck_assert_uint_eq(__atomic_load_n(&agent.hellos, __ATOMIC_RELAXED), 2);
	expect_sample(client, 3, "AGENT", NOPFS_FROM_RAM);
	ck_assert_uint_eq(__atomic_load_n(&agent.gets, __ATOMIC_RELAXED), 3);
	nopfs_client_disconnect(client);
	fake_agent_stop(&agent);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("client");
	TCase *tc = tcase_create("client");
	SRunner *runner;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, staged_fast_path);
	tcase_add_test(tc, agent_passes_a_descriptor);
	tcase_add_test(tc, sample_outlives_client_and_agent);
	tcase_add_test(tc, error_reply_reads_the_pfs);
	tcase_add_test(tc, absent_agent_fails_clearly);
	tcase_add_test(tc, silent_agent_times_out_on_connect);
	tcase_add_test(tc, hanging_agent_costs_one_timeout);
	tcase_add_test(tc, waiting_agent_is_waited_for);
	tcase_add_test(tc, malformed_replies_read_the_pfs);
	tcase_add_test(tc, agent_is_used_again_after_backoff);
	tcase_add_test(tc, agent_dies_mid_run);
	tcase_add_test(tc, statistics);
	tcase_add_test(tc, bad_index_files_are_ignored);
	tcase_add_test(tc, planted_staged_copies_are_not_used);
	tcase_add_test(tc, only_a_private_stage_dir_is_used);
	tcase_add_test(tc, agent_not_in_its_ready_file_is_refused);
	tcase_add_test(tc, agent_of_another_user_is_refused);
	tcase_add_test(tc, invalid_calls);
	tcase_add_test(tc, forked_child_connects_on_its_own);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
