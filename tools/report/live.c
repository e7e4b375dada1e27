/*
 * nopfs-report --live: a running job's agents, as their user sees them.
 *
 * On a node (--live-node), the agent of this user and job is found by its
 * private runtime directory (/tmp/nopfs-JOB or /tmp/nopfs-JOB.TOKEN, a
 * directory of this user without group or other permission) and asked for
 * its statistics on its socket: the channel checks that the process behind
 * the socket runs as this user and is the one of the directory's "ready"
 * file, and the agent checks the caller's uid. From a login node, --live
 * runs --live-node on every node of the job as a step of it (srun --overlap
 * --jobid), which Slurm allows only to the job's user (and root).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/private.h"
#include "common/token.h"
#include "common/units.h"
#include "tool.h"
#include "ask.h"

extern char **environ;

#define LIVE_TIMEOUT_MS   2000    /* an agent's answer */
#define LIVE_STEP_SECONDS 20      /* the srun that asks every node */
#define LIVE_OUTPUT_MAX   4194304 /* its output, all nodes together */

static const char *const sources[] = { "staging", "ram", "ssd", "peer", "pfs" };

static bool job_name_ok(const char *job)
{
	return job[0] != '\0' && job[0] != '.' && strlen(job) < 64 &&
	       strspn(job, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
	               strlen(job);
}

/* Is @name the runtime directory's name of job @job: nopfs-JOB or nopfs-JOB.TOKEN? */
static bool runtime_name(const char *name, const char *job)
{
	size_t length = strlen(job);

	if (strncmp(name, "nopfs-", 6) != 0 || strncmp(name + 6, job, length) != 0)
		return false;
	name += 6 + length;
	return name[0] == '\0' || (name[0] == '.' && nopfs_token_is_valid(name + 1));
}

#define LIVE_PIECE 400 /* bytes of JSON per line with --lines */

/*
 * @line as one line of JSON, or with @pieces cut into lines "nopfs-live HOST
 * SEQ COUNT TEXT" of at most LIVE_PIECE bytes of it: srun forwards short
 * lines whole, while it may cut long ones and mix them with other tasks'.
 */
static void print_line(json_t *line, const char *host, bool pieces)
{
	/* ASCII only: a piece never ends inside a character. */
	char *text = json_dumps(line, JSON_COMPACT | (pieces ? JSON_ENSURE_ASCII : 0));
	size_t length = text ? strlen(text) : 0;
	size_t count = (length + LIVE_PIECE - 1) / LIVE_PIECE;

	json_decref(line);
	if (!text)
		return;
	if (!pieces)
		printf("%s\n", text);
	for (size_t i = 0; pieces && i < count; i++) {
		printf("nopfs-live %s %zu %zu %.*s\n", host, i, count, LIVE_PIECE,
		       text + i * LIVE_PIECE);
		fflush(stdout);
	}
	free(text);
	fflush(stdout);
}

int report_live_node(const char *job, bool pieces)
{
	char host[256] = "", path[PATH_MAX], socket_path[PATH_MAX + 16];
	const char *why = "no agent of this job and user on this node";
	json_t *status = NULL;
	struct dirent *entry;
	DIR *tmp;

	gethostname(host, sizeof(host) - 1);
	if (strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
	            strlen(host) ||
	    !host[0])
		strcpy(host, "unknown");
	if (!job_name_ok(job)) {
		fprintf(stderr, "nopfs-report: --live-node: '%s' is not a job id\n", job);
		return 1;
	}
	tmp = opendir("/tmp");
	while (tmp && !status && (entry = readdir(tmp))) {
		struct stat st;
		int fd;

		if (!runtime_name(entry->d_name, job))
			continue;
		snprintf(path, sizeof(path), "/tmp/%s", entry->d_name);
		/* Only this user's private directory: anything else is not our agent. */
		if (nopfs_private_dir_open(path, &fd, &st, &why) != NOPFS_OK)
			continue;
		close(fd);
		snprintf(socket_path, sizeof(socket_path), "%s/agent.sock", path);
		status = tool_ask_stats(socket_path, LIVE_TIMEOUT_MS, &why);
	}
	if (tmp)
		closedir(tmp);
	if (!status) {
		print_line(json_pack("{s:s, s:s, s:s}", "host", host, "job", job, "error", why),
		           host, pieces);
		return 1;
	}
	print_line(json_pack("{s:s, s:s, s:o}", "host", host, "job", job, "status", status), host,
	           pieces);
	return 0;
}

/* ------------------------------------------------------------------------
 * The whole job, from anywhere Slurm's commands work.
 */

/* Run @argv with its stdout in a string (at most LIVE_OUTPUT_MAX bytes), bounded in time. */
static int run_capture(char *const *argv, char **output, int *exit_status)
{
	posix_spawn_file_actions_t actions;
	size_t length = 0, capacity = 65536;
	uint64_t deadline = nopfs_clock_now_ns() + (uint64_t)LIVE_STEP_SECONDS * 1000000000u;
	char *buffer = malloc(capacity);
	int pipefd[2], rc, status;
	pid_t pid;

	if (!buffer || pipe2(pipefd, O_CLOEXEC) != 0) {
		free(buffer);
		return -1;
	}
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDOUT_FILENO);
	rc = posix_spawnp(&pid, argv[0], &actions, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	close(pipefd[1]);
	if (rc != 0) {
		close(pipefd[0]);
		free(buffer);
		errno = rc;
		return -1;
	}
	for (;;) {
		struct pollfd pfd = { .fd = pipefd[0], .events = POLLIN };
		uint64_t now = nopfs_clock_now_ns();
		ssize_t got;

		if (now >= deadline) {
			fprintf(stderr,
			        "nopfs-report: --live: no answer within %d s: stopping srun\n",
			        LIVE_STEP_SECONDS);
			kill(pid, SIGTERM);
			break;
		}
		if (poll(&pfd, 1, (int)((deadline - now) / 1000000u) + 1) <= 0)
			continue;
		if (length + 1 >= capacity) {
			char *grown =
			        capacity < LIVE_OUTPUT_MAX ? realloc(buffer, capacity * 2) : NULL;

			if (!grown)
				break;
			buffer = grown;
			capacity *= 2;
		}
		got = read(pipefd[0], buffer + length, capacity - length - 1);
		if (got <= 0)
			break;
		length += (size_t)got;
	}
	close(pipefd[0]);
	buffer[length] = '\0';
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	*exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	*output = buffer;
	return 0;
}

/* The job's node count from squeue; 0 after printing why. */
static unsigned long job_nodes(const char *job)
{
	char *argv[] = { "squeue", "-h", "-j", (char *)job, "-o", "%D %T", NULL };
	char *output = NULL, state[64] = "";
	unsigned long nodes = 0;
	int status;

	if (run_capture(argv, &output, &status) != 0) {
		fprintf(stderr, "nopfs-report: --live: cannot run squeue: %s\n", strerror(errno));
		return 0;
	}
	if (status != 0 || sscanf(output, "%lu %63s", &nodes, state) != 2) {
		fprintf(stderr, "nopfs-report: --live %s: no such job in squeue\n", job);
		nodes = 0;
	} else if (strcmp(state, "RUNNING") != 0) {
		fprintf(stderr, "nopfs-report: --live %s: the job is %s, not running\n", job,
		        state);
		nodes = 0;
	}
	free(output);
	return nodes;
}

static uint64_t get_uint(const json_t *object, const char *a, const char *b)
{
	const json_t *value = json_object_get(object, a);

	if (b)
		value = json_object_get(value, b);
	return json_is_integer(value) ? (uint64_t)json_integer_value(value) : 0;
}

static void print_node(const json_t *line, FILE *out)
{
	const json_t *status = json_object_get(line, "status"), *tier, *rank;
	const char *host = json_string_value(json_object_get(line, "host"));
	char size_a[32], size_b[32];
	uint64_t total = 0, by_source[5];
	size_t i;

	if (!status) {
		fprintf(out, "%s: %s\n", host ? host : "?",
		        json_string_value(json_object_get(line, "error")) ?: "no answer");
		return;
	}
	fprintf(out, "node %" PRIu64 " (%s), plan %" PRIu64 ":\n", get_uint(status, "node", NULL),
	        host ? host : "?", get_uint(status, "plan", NULL));
	json_array_foreach(json_object_get(status, "tiers"), i, tier)
	{
		uint64_t planned = get_uint(tier, "planned_samples", NULL);
		uint64_t filled = get_uint(tier, "filled", "samples");

		fprintf(out,
		        "  prefetch %s: %" PRIu64 " of %" PRIu64 " samples (%.0f%%), %s of %s\n",
		        json_string_value(json_object_get(tier, "kind")) ?: "?", filled, planned,
		        planned ? 100.0 * (double)filled / (double)planned : 100.0,
		        nopfs_format_size(get_uint(tier, "filled", "bytes"), size_a,
		                          sizeof(size_a)),
		        nopfs_format_size(get_uint(tier, "planned_bytes", NULL), size_b,
		                          sizeof(size_b)));
	}
	for (int s = 0; s < 5; s++) {
		const json_t *staged = json_object_get(status, "delivered_staged");
		const json_t *asked = json_object_get(status, "delivered_on_request");

		by_source[s] = get_uint(json_object_get(staged, sources[s]), "samples", NULL) +
		               get_uint(json_object_get(asked, sources[s]), "samples", NULL);
		total += by_source[s];
	}
	fprintf(out, "  delivered %" PRIu64 " samples:", total);
	for (int s = 0; s < 5; s++)
		fprintf(out, " %s %" PRIu64 "%s", sources[s], by_source[s], s < 4 ? "," : "");
	fprintf(out, "; PFS read %s\n",
	        nopfs_format_size(get_uint(status, "pfs", "bytes"), size_a, sizeof(size_a)));
	json_array_foreach(json_object_get(status, "ranks"), i, rank)
	{
		fprintf(out,
		        "  rank %" PRIu64 ": epoch %" PRIu64 " position %" PRIu64 ", %" PRIu64
		        " staged ahead; %" PRIu64 " requests, stall p50 %.3f s, p99 %.3f s\n",
		        get_uint(rank, "rank", NULL), get_uint(rank, "epoch", NULL),
		        get_uint(rank, "position", NULL), get_uint(rank, "staged_ahead", NULL),
		        get_uint(rank, "requests", NULL),
		        json_number_value(json_object_get(rank, "stall_p50_seconds")),
		        json_number_value(json_object_get(rank, "stall_p99_seconds")));
	}
}

static int compare_lines(const void *a, const void *b)
{
	const json_t *x = json_object_get(*(json_t *const *)a, "status");
	const json_t *y = json_object_get(*(json_t *const *)b, "status");
	uint64_t m = x ? get_uint(x, "node", NULL) : UINT64_MAX;
	uint64_t n = y ? get_uint(y, "node", NULL) : UINT64_MAX;

	return m < n ? -1 : m > n;
}

/* One look at every node; 0 when every node's agent answered. */
static int live_once(const char *job, unsigned long nodes, const char *srun, bool as_json,
                     bool clear)
{
	char self[PATH_MAX], count[32], jobid[96];
	char *argv[] = { (char *)srun, "--overlap",   jobid,        "-N",
		         count,        "-n",          count,        "--ntasks-per-node=1",
		         "--quiet",    "-J",          "nopfs-live", "--input=none",
		         self,         "--live-node", (char *)job,  "--lines",
		         NULL };
	char *output = NULL, *line, *save = NULL;
	json_t *lines = json_array();
	int status, rc = 0;
	ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
	time_t now = time(NULL);
	char stamp[64];

	if (length <= 0) {
		fprintf(stderr, "nopfs-report: --live: cannot find my own path: %s\n",
		        strerror(errno));
		json_decref(lines);
		return 1;
	}
	self[length] = '\0';
	snprintf(count, sizeof(count), "%lu", nodes);
	snprintf(jobid, sizeof(jobid), "--jobid=%s", job);
	if (run_capture(argv, &output, &status) != 0) {
		fprintf(stderr, "nopfs-report: --live: cannot run %s: %s\n", srun, strerror(errno));
		json_decref(lines);
		return 1;
	}
	json_t *pieces = json_object(); /* host: [pieces] */
	const char *host;
	json_t *parts;

	for (line = strtok_r(output, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[256];
		size_t seq, total;
		int offset = 0;

		if (sscanf(line, "nopfs-live %255s %zu %zu%n", name, &seq, &total, &offset) != 3 ||
		    line[offset] != ' ' || total == 0 || total > LIVE_OUTPUT_MAX / LIVE_PIECE ||
		    seq >= total)
			continue;
		parts = json_object_get(pieces, name);
		if (!parts) {
			parts = json_array();
			for (size_t i = 0; i < total; i++)
				json_array_append_new(parts, json_null());
			json_object_set_new(pieces, name, parts);
		}
		if (json_array_size(parts) == total)
			json_array_set_new(parts, seq, json_string(line + offset + 1));
	}
	free(output);
	json_object_foreach(pieces, host, parts)
	{
		size_t i, bytes = 0;
		json_t *piece, *parsed = NULL;
		char *text;

		json_array_foreach(parts, i, piece) bytes += json_string_length(piece);
		text = calloc(1, bytes + 1);
		json_array_foreach(parts, i, piece)
		{
			if (!json_is_string(piece) || !text)
				break;
			strcat(text, json_string_value(piece));
		}
		if (text && i == json_array_size(parts))
			parsed = json_loads(text, 0, NULL);
		free(text);
		if (json_is_object(parsed) && json_object_get(parsed, "host"))
			json_array_append_new(lines, parsed);
		else
			json_decref(parsed);
	}
	json_decref(pieces);
	if (json_array_size(lines) == 0) {
		fprintf(stderr,
		        "nopfs-report: --live %s: no node answered (srun exit status %d): is it "
		        "your running job?\n",
		        job, status);
		json_decref(lines);
		return 1;
	}
	{
		size_t n = json_array_size(lines);
		json_t **sorted = calloc(n, sizeof(*sorted));
		json_t *ordered = json_array();

		for (size_t i = 0; sorted && i < n; i++)
			sorted[i] = json_array_get(lines, i);
		if (sorted)
			qsort(sorted, n, sizeof(*sorted), compare_lines);
		for (size_t i = 0; sorted && i < n; i++)
			json_array_append(ordered, sorted[i]);
		free(sorted);
		json_decref(lines);
		lines = ordered;
	}
	size_t answered = 0;

	for (size_t i = 0; i < json_array_size(lines); i++)
		answered += json_object_get(json_array_get(lines, i), "status") != NULL;
	rc = answered < nodes;
	if (as_json) {
		char *text = json_dumps(lines, JSON_COMPACT);

		printf("%s\n", text ? text : "[]");
		free(text);
	} else {
		if (clear)
			printf("\033[H\033[2J");
		strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime(&now));
		printf("nopfs job %s at %s: the agents of %zu of %lu nodes answered\n", job, stamp,
		       answered, nodes);
		for (size_t i = 0; i < json_array_size(lines); i++)
			print_node(json_array_get(lines, i), stdout);
	}
	fflush(stdout);
	json_decref(lines);
	return rc;
}

int report_live(const char *job, bool once, unsigned int interval, const char *srun, bool as_json)
{
	unsigned long nodes;
	int rc;

	if (strspn(job, "0123456789") != strlen(job) || job[0] == '\0' || strlen(job) > 20) {
		fprintf(stderr, "nopfs-report: --live: '%s' is not a Slurm job id\n", job);
		return 1;
	}
	/* The step must not act as a nopfs step of the caller's environment. */
	for (char **e = environ; *e;) {
		if (strncmp(*e, "SLURM_NOPFS_", 12) == 0) {
			char name[256];
			size_t length = strcspn(*e, "=");

			snprintf(name, sizeof(name), "%.*s", (int)length, *e);
			unsetenv(name);
		} else {
			e++;
		}
	}
	nodes = job_nodes(job);
	if (nodes == 0)
		return 1;
	for (;;) {
		rc = live_once(job, nodes, srun, as_json, !once && isatty(STDOUT_FILENO));
		if (once)
			return rc;
		sleep(interval);
	}
}
