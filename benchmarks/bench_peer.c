/*
 * The data plane's remote read rate between two processes on loopback, for
 * 110 KB and 16 MB samples, against a plain blocking TCP socket serving the
 * same bytes on request, one operation in flight each, interleaved rounds:
 *
 *   - fetches over the stream path (authenticated, the agents' own sockets:
 *     what the agents use over TCP) and, in the same rounds, authenticated
 *     fetches through UCX's TCP transport (what they used before, and still
 *     do for a node without a stream path);
 *   - in processes of their own, one-sided gets emulated by UCX over TCP
 *     (which the agents never allow: for comparison), with UCX's default TCP
 *     segments and with UCX_TCP_TX_SEG_SIZE=64k UCX_TCP_RX_SEG_SIZE=64k. (UCX
 *     keeps working after a run of gets; measured beside them the fetches
 *     would pay for it.)
 *
 * The processes share the job's secret through the pipe that carries their
 * records. Figures are printed, not asserted.
 *
 *   bench_peer [seconds per figure and pass, default 2]
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "peer/peer.h"
#include "peer/peer_pipe.h"
#include "common/clock.h"

#define PRESENT 1
#define SIZES   2
#define ROUNDS  10 /* a process measures every figure once per round */
#define PASSES  2  /* processes per configuration, alternating */

static const uint64_t sizes[SIZES] = { 110 * 1000, 16 * 1024 * 1024 };
static const char *const size_names[SIZES] = { "110 KB", "16 MB" };

enum method { METHOD_GET, METHOD_FETCH, METHOD_FETCH_UCX, METHOD_TCP, METHODS };
static const char *const method_names[METHODS] = { "get", "fetch", "fetch through UCX", "tcp" };

struct figures {
	double rate[ROUNDS][SIZES][METHODS]; /* MB/s */
};

/* The server's samples: one of each size, back to back in one arena. */
struct arena {
	unsigned char *ram;
	uint64_t offsets[SIZES];
	unsigned char state[SIZES];
};

static int arena_init(struct arena *arena)
{
	uint64_t total = 0;

	for (int s = 0; s < SIZES; s++) {
		arena->offsets[s] = total;
		arena->state[s] = PRESENT;
		total += sizes[s];
	}
	arena->ram = malloc(total);
	if (!arena->ram)
		return -1;
	for (uint64_t i = 0; i < total; i++)
		arena->ram[i] = (unsigned char)(i * 131 + 7);
	return 0;
}

/* Where @length bytes at @offset of @sample (@size bytes) are, or NULL: not one of ours. */
static const unsigned char *arena_part(const struct arena *arena, nopfs_sample_id sample,
                                       uint64_t size, uint64_t offset, uint64_t length)
{
	if (sample >= SIZES || size != sizes[sample] || offset > size || length > size - offset)
		return NULL;
	return arena->ram + arena->offsets[sample] + offset;
}

static nopfs_status arena_serve(void *arg, nopfs_sample_id sample, void *buffer, uint64_t size)
{
	const unsigned char *bytes = arena_part(arg, sample, size, 0, size);

	if (!bytes)
		return NOPFS_ERR_NOT_FOUND;
	memcpy(buffer, bytes, size);
	return NOPFS_OK;
}

/* The same a part at a time, as the agents serve the stream path from their tiers. */
static nopfs_status arena_serve_range(void *arg, nopfs_sample_id sample, uint64_t size,
                                      uint64_t offset, void *buffer, uint64_t length,
                                      uint64_t *plan)
{
	const unsigned char *bytes = arena_part(arg, sample, size, offset, length);

	if (!bytes)
		return NOPFS_ERR_NOT_FOUND;
	memcpy(buffer, bytes, length);
	*plan = 0;
	return NOPFS_OK;
}

/* ... and without a copy, as the agents serve from a RAM tier. */
static nopfs_status arena_serve_view(void *arg, nopfs_sample_id sample, uint64_t size,
                                     uint64_t offset, uint64_t length, uint64_t *plan,
                                     peer_take_fn take, void *take_arg)
{
	const unsigned char *bytes = arena_part(arg, sample, size, offset, length);

	if (!bytes)
		return NOPFS_ERR_NOT_FOUND;
	*plan = 0;
	return take(take_arg, bytes, length);
}

static struct peer_plane *plane_create(uint32_t node, struct arena *arena,
                                       const unsigned char *secret, enum peer_stream stream)
{
	struct peer_config config = { .node = node,
		                      .one_sided = PEER_ONE_SIDED_EMULATED,
		                      .stream = stream,
		                      .present_value = PRESENT,
		                      .timeout_ms = 10000 };
	struct peer_plane *plane;

	memcpy(config.secret, secret, PEER_SECRET_BYTES);
	if (arena) {
		config.ram_base = arena->ram;
		config.ram_bytes = arena->offsets[SIZES - 1] + sizes[SIZES - 1];
		config.state_base = arena->state;
		config.state_bytes = SIZES;
		config.serve = arena_serve;
		config.serve_range = arena_serve_range;
		config.serve_view = arena_serve_view;
		config.serve_arg = arena;
	}
	return peer_plane_create(&config, &plane) == NOPFS_OK ? plane : NULL;
}

/* The baseline server: for each 8-byte request (a sample), its bytes. */
struct tcp_server {
	int listener;
	struct arena *arena;
};

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void *tcp_serve(void *arg)
{
	struct tcp_server *server = arg;
	uint64_t sample;
	int fd = accept(server->listener, NULL, NULL);

	if (fd < 0)
		return NULL;
	set_nodelay(fd);
	while (nopfs_read_exact(fd, &sample, sizeof(sample)) == NOPFS_OK && sample < SIZES)
		if (nopfs_write_all(fd, server->arena->ram + server->arena->offsets[sample],
		                    sizes[sample]))
			break;
	close(fd);
	return NULL;
}

/* A loopback listener on an ephemeral port (*@port). */
static int tcp_listen(uint16_t *port)
{
	struct sockaddr_in address = { .sin_family = AF_INET,
		                       .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t length = sizeof(address);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&address, sizeof(address)) || listen(fd, 1) ||
	    getsockname(fd, (struct sockaddr *)&address, &length)) {
		close(fd);
		return -1;
	}
	*port = ntohs(address.sin_port);
	return fd;
}

static int tcp_connect(uint16_t port)
{
	struct sockaddr_in address = { .sin_family = AF_INET,
		                       .sin_port = htons(port),
		                       .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&address, sizeof(address))) {
		close(fd);
		return -1;
	}
	set_nodelay(fd);
	return fd;
}

/* The server process: node 1, the plane and the TCP baseline, until EOF. */
static void __attribute__((noreturn)) server_main(int to_client, int from_client)
{
	unsigned char secret[PEER_SECRET_BYTES];
	struct tcp_server server;
	struct peer_plane *plane;
	struct arena arena;
	pthread_t thread;
	uint16_t port;
	char byte;

	if (arena_init(&arena) || pipe_receive_secret(from_client, secret))
		_exit(2);
	plane = plane_create(1, &arena, secret, PEER_STREAM_ON);
	server.listener = tcp_listen(&port);
	server.arena = &arena;
	if (!plane || server.listener < 0 || pthread_create(&thread, NULL, tcp_serve, &server))
		_exit(3);
	/* twice: for node 0 (the stream path) and node 2 (UCX) */
	if (pipe_send_record(to_client, plane) || pipe_send_record(to_client, plane) ||
	    pipe_receive_record(from_client, plane, 0) ||
	    nopfs_write_all(to_client, &port, sizeof(port)))
		_exit(4);
	while (read(from_client, &byte, 1) > 0)
		;
	pthread_join(thread, NULL);
	close(server.listener);
	peer_plane_destroy(plane);
	free(arena.ram);
	_exit(0);
}

struct client {
	struct peer_plane *plane;
	struct peer_plane *ucx_plane; /* node 2: fetches through UCX */
	int tcp;
	uint64_t offsets[SIZES];
	unsigned char *dest;
};

static int run_once(struct client *client, enum method method, int s)
{
	uint64_t sample = (uint64_t)s;

	switch (method) {
	case METHOD_GET:
		return peer_plane_get(client->plane, 1, sample, client->offsets[s], client->dest,
		                      sizes[s]) != NOPFS_OK;
	case METHOD_FETCH:
		return peer_plane_fetch(client->plane, 1, sample, client->dest, sizes[s]) !=
		       NOPFS_OK;
	case METHOD_FETCH_UCX:
		return peer_plane_fetch(client->ucx_plane, 1, sample, client->dest, sizes[s]) !=
		       NOPFS_OK;
	default:
		return nopfs_write_all(client->tcp, &sample, sizeof(sample)) ||
		       nopfs_read_exact(client->tcp, client->dest, sizes[s]);
	}
}

/* MB/s of @method on sample @s for about @seconds; negative on failure. */
static double measure(struct client *client, enum method method, int s, double seconds)
{
	unsigned long count = 0;
	double start, elapsed;

	for (int i = 0; i < 3; i++) /* warm up */
		if (run_once(client, method, s))
			return -1;
	start = nopfs_clock_seconds();
	do {
		if (run_once(client, method, s))
			return -1;
		count++;
		elapsed = nopfs_clock_seconds() - start;
	} while (elapsed < seconds || count < 5);
	return count * sizes[s] / elapsed / 1e6;
}

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *values, int count)
{
	qsort(values, (size_t)count, sizeof(values[0]), compare_doubles);
	return count % 2 ? values[count / 2] : (values[count / 2 - 1] + values[count / 2]) / 2;
}

/*
 * One configuration, in a process of its own (UCX reads its environment
 * once): fork the server, connect, and measure every size and method once
 * per round, so that drift of a shared machine hits them alike.
 */
static int run_configuration(double seconds, unsigned int methods, struct figures *figures)
{
	int down[2], up[2], status = -1, wstatus;
	unsigned char secret[PEER_SECRET_BYTES];
	struct client client = { .tcp = -1 };
	uint16_t port;
	pid_t pid;

	if (pipe(down) || pipe(up))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(down[1]);
		close(up[0]);
		server_main(up[1], down[0]);
	}
	close(down[0]);
	close(up[1]);
	for (int s = 0; s < SIZES; s++) /* as arena_init() lays them out */
		client.offsets[s] = s ? client.offsets[s - 1] + sizes[s - 1] : 0;
	client.dest = malloc(sizes[SIZES - 1]);
	if (peer_secret_generate(secret) != NOPFS_OK || pipe_send_secret(down[1], secret))
		goto out;
	client.plane = plane_create(0, NULL, secret, PEER_STREAM_ON);
	client.ucx_plane = plane_create(2, NULL, secret, PEER_STREAM_OFF);
	if (!client.dest || !client.plane || !client.ucx_plane ||
	    pipe_receive_record(up[0], client.plane, 1) ||
	    pipe_receive_record(up[0], client.ucx_plane, 1) ||
	    pipe_send_record(down[1], client.plane) || nopfs_read_exact(up[0], &port, sizeof(port)))
		goto out;
	client.tcp = tcp_connect(port);
	if (client.tcp < 0)
		goto out;
	for (int r = 0; r < ROUNDS; r++) {
		for (int s = 0; s < SIZES; s++) {
			for (int m = 0; m < METHODS; m++) {
				double rate;

				if (!(methods & (1u << m)))
					continue;
				rate = measure(&client, (enum method)m, s, seconds / ROUNDS);

				if (rate < 0) {
					fprintf(stderr, "bench_peer: %s of %s failed\n",
					        method_names[m], size_names[s]);
					goto out;
				}
				figures->rate[r][s][m] = rate;
			}
		}
	}
	status = 0;
out:
	if (client.tcp >= 0)
		close(client.tcp);
	close(down[1]);
	close(up[0]);
	waitpid(pid, &wstatus, 0);
	peer_plane_destroy(client.plane);
	peer_plane_destroy(client.ucx_plane);
	free(client.dest);
	return status;
}

/* Run one configuration in a child; its figures come back through a pipe. */
static int measure_with(const char *segment, unsigned int methods, double seconds,
                        struct figures *figures)
{
	int fds[2], wstatus;
	pid_t pid;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		if (segment) {
			setenv("UCX_TCP_TX_SEG_SIZE", segment, 1);
			setenv("UCX_TCP_RX_SEG_SIZE", segment, 1);
		} else {
			unsetenv("UCX_TCP_TX_SEG_SIZE");
			unsetenv("UCX_TCP_RX_SEG_SIZE");
		}
		_exit(run_configuration(seconds, methods, figures) ||
		      nopfs_write_all(fds[1], figures, sizeof(*figures)));
	}
	close(fds[1]);
	if (pid < 0 || nopfs_read_exact(fds[0], figures, sizeof(*figures))) {
		close(fds[0]);
		if (pid > 0)
			waitpid(pid, &wstatus, 0);
		return -1;
	}
	close(fds[0]);
	waitpid(pid, &wstatus, 0);
	return 0;
}

/* Medians over every round of every pass: rates, and ratios within a round. */
struct summary {
	double rate[SIZES][METHODS];
	double versus_tcp[SIZES][METHODS];                /* median of the per-round ratios */
	double low[SIZES][METHODS], high[SIZES][METHODS]; /* their spread: lowest, highest */
};

static void summarize(const struct figures passes[PASSES], struct summary *summary)
{
	double values[PASSES * ROUNDS], ratios[PASSES * ROUNDS];

	for (int s = 0; s < SIZES; s++) {
		for (int m = 0; m < METHODS; m++) {
			int n = 0;

			for (int p = 0; p < PASSES; p++) {
				for (int r = 0; r < ROUNDS; r++, n++) {
					const double *round = passes[p].rate[r][s];

					values[n] = round[m];
					ratios[n] = round[m] / round[METHOD_TCP];
				}
			}
			summary->rate[s][m] = median(values, n);
			summary->versus_tcp[s][m] = median(ratios, n); /* sorts them */
			summary->low[s][m] = ratios[0];
			summary->high[s][m] = ratios[n - 1];
		}
	}
}

static void print_fetches(const struct summary *f)
{
	printf("fetches (stream: the agents' own sockets; ucx: UCX's TCP transport); "
	       "ratios: median (lowest-highest round)\n"
	       "  %-8s %12s %10s %10s %18s %18s\n",
	       "size", "stream MB/s", "ucx MB/s", "tcp MB/s", "stream/tcp", "ucx/tcp");
	for (int s = 0; s < SIZES; s++)
		printf("  %-8s %12.0f %10.0f %10.0f %6.2f (%.2f-%.2f) %6.2f (%.2f-%.2f)\n",
		       size_names[s], f->rate[s][METHOD_FETCH], f->rate[s][METHOD_FETCH_UCX],
		       f->rate[s][METHOD_TCP], f->versus_tcp[s][METHOD_FETCH],
		       f->low[s][METHOD_FETCH], f->high[s][METHOD_FETCH],
		       f->versus_tcp[s][METHOD_FETCH_UCX], f->low[s][METHOD_FETCH_UCX],
		       f->high[s][METHOD_FETCH_UCX]);
}

static void print_gets(const struct summary *p, const struct summary *l)
{
	printf("one-sided gets emulated by UCX over TCP (never used by the agents)\n"
	       "  %-8s %14s %9s %14s %9s\n",
	       "size", "default MB/s", "/tcp", "64k segs MB/s", "/tcp");
	for (int s = 0; s < SIZES; s++)
		printf("  %-8s %14.0f %9.2f %14.0f %9.2f\n", size_names[s], p->rate[s][METHOD_GET],
		       p->versus_tcp[s][METHOD_GET], l->rate[s][METHOD_GET],
		       l->versus_tcp[s][METHOD_GET]);
}

static void print_load(const char *when)
{
	double load[3];

	if (getloadavg(load, 3) == 3)
		printf("load average %s: %.2f %.2f %.2f\n", when, load[0], load[1], load[2]);
}

int main(int argc, char **argv)
{
	static struct figures fetches[PASSES], plain[PASSES], large[PASSES];
	const unsigned int fetch = 1u << METHOD_FETCH | 1u << METHOD_FETCH_UCX | 1u << METHOD_TCP,
	                   get = 1u << METHOD_GET | 1u << METHOD_TCP;
	struct summary f, p, l;
	double seconds = argc > 1 ? atof(argv[1]) : 2;

	if (seconds <= 0) {
		fprintf(stderr, "usage: bench_peer [seconds per figure and pass]\n");
		return 2;
	}
	/* loopback TCP, as between the nodes of the test cluster */
	setenv("UCX_TLS", "tcp", 1);
	setenv("UCX_NET_DEVICES", "lo", 1);
	printf("bench_peer: two processes on lo, one operation in flight; medians of %d "
	       "passes x %d interleaved rounds, ratios within a round; target stream/tcp >= 0.8\n",
	       PASSES, ROUNDS);
	print_load("before");
	for (int pass = 0; pass < PASSES; pass++) {
		if (measure_with(NULL, fetch, seconds, &fetches[pass]) ||
		    measure_with(NULL, get, seconds, &plain[pass]) ||
		    measure_with("64k", get, seconds, &large[pass])) {
			fprintf(stderr, "bench_peer: a measurement failed\n");
			return 1;
		}
	}
	print_load("after");
	summarize(fetches, &f);
	summarize(plain, &p);
	summarize(large, &l);
	print_fetches(&f);
	print_gets(&p, &l);
	return 0;
}
