/*
 * nopfs-pfs: an emulated, contended parallel filesystem.
 *
 * A read-only FUSE passthrough of a directory whose reads are slowed down the
 * way a shared PFS slows them down under load: the aggregate bandwidth is a
 * function of the number of clients reading at the same time, shared equally
 * among them; every open and read can carry a latency, some reads a random
 * extra delay; chosen paths fail with EIO. A client is a network namespace
 * (each node of the test cluster has its own). Per-client counters go to a
 * JSON file every second and at unmount.
 *
 *   nopfs-pfs [options] SOURCE MOUNTPOINT
 */
#ifdef NOPFS_HAVE_FUSE_312
/* The loop configuration with max_threads (the older one caps at 10). */
#define FUSE_USE_VERSION 312
#else
#define FUSE_USE_VERSION 35
#endif

#include <fuse.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define PROGRAM "nopfs-pfs"
/* A client counts as reading if it read within this many seconds. */
#define ACTIVE_WINDOW    0.5
#define MAX_CURVE_POINTS 64
/* FUSE worker threads: concurrent requests (each may sleep) */
#define MAX_THREADS 256

struct curve_point {
	double clients; /* gamma */
	double rate;    /* aggregate bytes/s at gamma clients */
};

/* One network namespace's counters and pacing state. */
struct client {
	struct client *next;
	uint64_t netns; /* inode of /proc/PID/ns/net; 0 if unreadable */
	uint64_t opens;
	uint64_t reads;
	uint64_t bytes;
	uint64_t errors;
	double busy_until; /* pacing: when this client's earlier reads are done */
	double last_read;  /* monotonic seconds; -inf before the first read */
};

static struct {
	const char *source;
	const char *mountpoint;
	int root_fd;
	struct curve_point curve[MAX_CURVE_POINTS];
	int curve_points; /* 0: unlimited */
	double latency;   /* seconds, every open and read */
	double noise_fraction;
	double noise; /* seconds, extra for noise_fraction of the reads */
	uint64_t seed;
	char **fail_patterns;
	int fail_count;
	const char *stats_path;

	pthread_mutex_t lock; /* clients, rng */
	struct client *clients;
	uint64_t rng;

	pthread_t stats_thread;
	bool stats_running;
	bool stats_stop;
	pthread_mutex_t stats_lock;
	pthread_cond_t stats_cond;
} pfs = {
	.root_fd = -1,
	.seed = 1,
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.stats_lock = PTHREAD_MUTEX_INITIALIZER,
	.stats_cond = PTHREAD_COND_INITIALIZER,
};

/* ------------------------------------------------------------------------ */
/* Options */

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: " PROGRAM " [options] SOURCE MOUNTPOINT\n"
	        "\n"
	        "Mount directory SOURCE read-only at MOUNTPOINT, emulating a parallel\n"
	        "filesystem shared by several clients (a client is a network namespace).\n"
	        "Runs in the foreground; SIGTERM, SIGINT or fusermount3 -u unmount it.\n"
	        "\n"
	        "options:\n"
	        "  --bandwidth CURVE    aggregate read bandwidth by number of clients reading\n"
	        "                       at once (a read in the last %.1f s): N:RATE,N:RATE,...\n"
	        "                       e.g. 1:400M,2:600M,4:800M; RATE in bytes/s with an\n"
	        "                       optional K, M, G or T suffix (powers of 1024); linear\n"
	        "                       between the points, flat beyond the ends. A lone RATE\n"
	        "                       is the same at any count. Each client reading gets an\n"
	        "                       equal share. Default: unlimited\n"
	        "  --latency MS         milliseconds added to every open and read (default 0)\n"
	        "  --noise FRACTION:MS  that fraction of the reads take MS milliseconds more\n"
	        "  --seed N             seed of the noise's pseudo-random choice (default 1)\n"
	        "  --fail PATTERN       opens and reads of paths (relative to the root, no\n"
	        "                       leading /) matching fnmatch(3) PATTERN fail with EIO;\n"
	        "                       repeatable\n"
	        "  --stats FILE         write per-client counters (JSON) to FILE every second\n"
	        "                       and at unmount (written to a temporary file, renamed):\n"
	        "                       {\"clients\": {\"NETNS\": {\"opens\": N, \"reads\": N,\n"
	        "                       \"bytes\": N, \"errors\": N}, ...}, \"total\": {...}};\n"
	        "                       NETNS: the inode of /proc/PID/ns/net (0: unknown)\n"
	        "  -f                   foreground (the default and only mode)\n"
	        "  -d                   FUSE debug output\n"
	        "  -o OPTIONS           more FUSE mount options (e.g. allow_other)\n"
	        "  -h, --help           this help\n",
	        ACTIVE_WINDOW);
}

static void __attribute__((noreturn, format(printf, 1, 2))) bad_usage(const char *format, ...)
{
	va_list args;

	fputs(PROGRAM ": ", stderr);
	va_start(args, format);
	vfprintf(stderr, format, args);
	va_end(args);
	fputs("\n(" PROGRAM " --help lists the options)\n", stderr);
	exit(2);
}

/* A finite non-negative decimal number with nothing after it. */
static bool parse_double(const char *text, double *value)
{
	char *end;

	if (*text == '\0' || isspace((unsigned char)*text))
		return false;
	errno = 0;
	*value = strtod(text, &end);
	return errno == 0 && *end == '\0' && isfinite(*value) && *value >= 0;
}

/* A rate: a positive decimal number with an optional binary suffix. */
static bool parse_rate(const char *text, double *rate)
{
	static const char suffixes[] = "KMGT";
	char *end;
	double value;
	const char *found;

	if (*text == '\0' || *text == '-' || *text == '+' || isspace((unsigned char)*text))
		return false;
	errno = 0;
	value = strtod(text, &end);
	if (errno != 0 || end == text || !isfinite(value))
		return false;
	if (*end != '\0') {
		found = strchr(suffixes, toupper((unsigned char)end[0]));
		if (found == NULL || *found == '\0')
			return false;
		value *= pow(1024.0, (double)(found - suffixes + 1));
		end++;
		if ((end[0] == 'i' || end[0] == 'I') && (end[1] == 'B' || end[1] == 'b'))
			end += 2;
		else if (end[0] == 'B' || end[0] == 'b')
			end++;
		if (*end != '\0')
			return false;
	}
	if (!(value > 0) || !isfinite(value))
		return false;
	*rate = value;
	return true;
}

static void parse_curve(const char *text)
{
	char *copy = strdup(text), *item, *save = NULL, *colon, *end;
	int n = 0;
	double rate;
	unsigned long clients;

	if (copy == NULL) {
		perror(PROGRAM);
		exit(1);
	}
	if (*text == '\0')
		bad_usage("--bandwidth: empty curve (want N:RATE,N:RATE,..., e.g. 1:400M,2:600M)");
	if (strchr(text, ':') == NULL) {
		if (!parse_rate(text, &rate))
			bad_usage("--bandwidth: '%s' is not a rate (bytes/s, e.g. 400M) nor a "
			          "curve N:RATE,...",
			          text);
		pfs.curve[0] = (struct curve_point){ 1, rate };
		pfs.curve_points = 1;
		free(copy);
		return;
	}
	if (text[strlen(text) - 1] == ',' || strstr(text, ",,") != NULL || text[0] == ',')
		bad_usage("--bandwidth: curve '%s' is malformed (empty point)", text);
	for (item = strtok_r(copy, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
		colon = strchr(item, ':');
		if (colon == NULL)
			bad_usage("--bandwidth: point '%s' of '%s' is not N:RATE", item, text);
		*colon = '\0';
		errno = 0;
		clients = strtoul(item, &end, 10);
		if (*item < '0' || *item > '9' || *end != '\0' || errno != 0 || clients < 1 ||
		    clients > 1000000)
			bad_usage("--bandwidth: client count '%s' in '%s' is not an integer in "
			          "1 .. 1000000",
			          item, text);
		if (!parse_rate(colon + 1, &rate))
			bad_usage("--bandwidth: rate '%s' in '%s' is not a positive number of "
			          "bytes/s (e.g. 400M)",
			          colon + 1, text);
		if (n == MAX_CURVE_POINTS)
			bad_usage("--bandwidth: '%s' has more than %d points", text,
			          MAX_CURVE_POINTS);
		if (n > 0 && (double)clients <= pfs.curve[n - 1].clients)
			bad_usage("--bandwidth: client counts in '%s' must increase", text);
		pfs.curve[n++] = (struct curve_point){ (double)clients, rate };
	}
	pfs.curve_points = n;
	free(copy);
}

static void parse_noise(const char *text)
{
	char *copy = strdup(text), *colon;
	double fraction, ms;

	if (copy == NULL) {
		perror(PROGRAM);
		exit(1);
	}
	colon = strchr(copy, ':');
	if (colon == NULL)
		bad_usage("--noise: '%s' is not FRACTION:MS (e.g. 0.01:50)", text);
	*colon = '\0';
	if (!parse_double(copy, &fraction) || fraction > 1)
		bad_usage("--noise: fraction '%s' in '%s' is not a number in 0 .. 1", copy, text);
	if (!parse_double(colon + 1, &ms))
		bad_usage("--noise: '%s' in '%s' is not a non-negative number of milliseconds",
		          colon + 1, text);
	pfs.noise_fraction = fraction;
	pfs.noise = ms / 1000.0;
	free(copy);
}

/* ------------------------------------------------------------------------ */
/* Time, clients, pacing */

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_until(double deadline)
{
	struct timespec ts;

	if (!(deadline > 0))
		return;
	ts.tv_sec = (time_t)deadline;
	ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* The caller's network namespace: the inode of /proc/PID/ns/net, 0 if unknown. */
static uint64_t caller_netns(void)
{
	struct fuse_context *context = fuse_get_context();
	char path[64];
	struct stat st;

	if (context == NULL || context->pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)context->pid);
	if (stat(path, &st) != 0)
		return 0;
	return (uint64_t)st.st_ino;
}

/* The client record of @netns, created on first use; call with pfs.lock held. */
static struct client *client_locked(uint64_t netns)
{
	struct client *c;

	for (c = pfs.clients; c != NULL; c = c->next)
		if (c->netns == netns)
			return c;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->netns = netns;
	c->last_read = -INFINITY;
	c->next = pfs.clients;
	pfs.clients = c;
	return c;
}

/* Aggregate bandwidth at @gamma clients reading: the curve, interpolated. */
static double curve_rate(double gamma)
{
	int i;
	const struct curve_point *a, *b;

	if (gamma <= pfs.curve[0].clients)
		return pfs.curve[0].rate;
	for (i = 1; i < pfs.curve_points; i++) {
		if (gamma <= pfs.curve[i].clients) {
			a = &pfs.curve[i - 1];
			b = &pfs.curve[i];
			return a->rate + (b->rate - a->rate) * (gamma - a->clients) /
			                         (b->clients - a->clients);
		}
	}
	return pfs.curve[pfs.curve_points - 1].rate;
}

/* splitmix64; call with pfs.lock held. */
static uint64_t random_locked(void)
{
	uint64_t z = (pfs.rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static bool path_fails(const char *path)
{
	const char *relative = path[0] == '/' && path[1] != '\0' ? path + 1 : path;
	int i;

	for (i = 0; i < pfs.fail_count; i++)
		if (fnmatch(pfs.fail_patterns[i], relative, 0) == 0)
			return true;
	return false;
}

static void count_open(uint64_t netns, bool failed)
{
	struct client *c;

	pthread_mutex_lock(&pfs.lock);
	c = client_locked(netns);
	if (c != NULL) {
		c->opens++;
		if (failed)
			c->errors++;
	}
	pthread_mutex_unlock(&pfs.lock);
}

/*
 * Account a read of @bytes by client @netns at @now and return when it may
 * complete: the client's share of the bandwidth paces its reads back to back
 * (a token bucket with no burst), plus the latency and maybe the noise.
 */
static double admit_read(uint64_t netns, size_t bytes, bool failed, double now)
{
	struct client *c, *other;
	double done = now, gamma, rate;

	pthread_mutex_lock(&pfs.lock);
	c = client_locked(netns);
	if (c != NULL) {
		c->reads++;
		c->bytes += bytes;
		if (failed)
			c->errors++;
		c->last_read = now;
		if (pfs.curve_points > 0 && bytes > 0) {
			gamma = 0;
			for (other = pfs.clients; other != NULL; other = other->next)
				if (other->last_read >= now - ACTIVE_WINDOW)
					gamma++;
			rate = curve_rate(gamma) / gamma;
			if (c->busy_until < now)
				c->busy_until = now;
			c->busy_until += (double)bytes / rate;
			done = c->busy_until;
		}
	}
	done += pfs.latency;
	if (pfs.noise_fraction > 0 &&
	    (double)(random_locked() >> 11) / 9007199254740992.0 < pfs.noise_fraction)
		done += pfs.noise;
	pthread_mutex_unlock(&pfs.lock);
	return done;
}

/* ------------------------------------------------------------------------ */
/* Statistics */

static void write_counters(FILE *out, const struct client *c)
{
	fprintf(out,
	        "{\"opens\": %" PRIu64 ", \"reads\": %" PRIu64 ", \"bytes\": %" PRIu64
	        ", \"errors\": %" PRIu64 "}",
	        c->opens, c->reads, c->bytes, c->errors);
}

static void write_stats(void)
{
	char *temporary;
	FILE *out;
	struct client total = { 0 };
	const struct client *c;
	bool ok;

	if (pfs.stats_path == NULL)
		return;
	if (asprintf(&temporary, "%s.tmp.%ld", pfs.stats_path, (long)getpid()) < 0)
		return;
	out = fopen(temporary, "w");
	if (out == NULL) {
		fprintf(stderr, PROGRAM ": --stats: cannot write '%s': %s\n", temporary,
		        strerror(errno));
		free(temporary);
		return;
	}
	pthread_mutex_lock(&pfs.lock);
	fputs("{\"clients\": {", out);
	for (c = pfs.clients; c != NULL; c = c->next) {
		fprintf(out, "%s\"%" PRIu64 "\": ", c == pfs.clients ? "" : ", ", c->netns);
		write_counters(out, c);
		total.opens += c->opens;
		total.reads += c->reads;
		total.bytes += c->bytes;
		total.errors += c->errors;
	}
	fputs("}, \"total\": ", out);
	write_counters(out, &total);
	fputs("}\n", out);
	pthread_mutex_unlock(&pfs.lock);
	ok = fflush(out) == 0 && !ferror(out);
	if (fclose(out) != 0)
		ok = false;
	if (!ok || rename(temporary, pfs.stats_path) != 0) {
		fprintf(stderr, PROGRAM ": --stats: cannot write '%s': %s\n", pfs.stats_path,
		        strerror(errno));
		unlink(temporary);
	}
	free(temporary);
}

static void *stats_main(void *unused)
{
	struct timespec deadline;

	pthread_mutex_lock(&pfs.stats_lock);
	while (!pfs.stats_stop) {
		pthread_mutex_unlock(&pfs.stats_lock);
		write_stats();
		pthread_mutex_lock(&pfs.stats_lock);
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_sec += 1;
		while (!pfs.stats_stop &&
		       pthread_cond_timedwait(&pfs.stats_cond, &pfs.stats_lock, &deadline) == 0)
			;
	}
	pthread_mutex_unlock(&pfs.stats_lock);
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* Filesystem operations: paths are looked up relative to SOURCE's fd */

static const char *relative_path(const char *path)
{
	while (*path == '/')
		path++;
	return *path == '\0' ? "." : path;
}

static void *pfs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	cfg->use_ino = 1;
	/* Every read reaches the emulation: no page cache, exact byte counts. */
	cfg->direct_io = 1;
	cfg->entry_timeout = 1.0;
	cfg->attr_timeout = 1.0;
	cfg->negative_timeout = 0;
	if (pfs.stats_path != NULL) {
		/*
		 * The writer takes no signals: libfuse's SIGTERM handler only
		 * flags the session, which a FUSE thread must notice.
		 */
		sigset_t all, saved;

		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &saved);
		pfs.stats_stop = false;
		if (pthread_create(&pfs.stats_thread, NULL, stats_main, NULL) == 0)
			pfs.stats_running = true;
		else
			fprintf(stderr, PROGRAM ": --stats: cannot start the writer thread\n");
		pthread_sigmask(SIG_SETMASK, &saved, NULL);
	}
	return NULL;
}

static void pfs_destroy(void *private_data)
{
	if (pfs.stats_running) {
		pthread_mutex_lock(&pfs.stats_lock);
		pfs.stats_stop = true;
		pthread_cond_signal(&pfs.stats_cond);
		pthread_mutex_unlock(&pfs.stats_lock);
		pthread_join(pfs.stats_thread, NULL);
		pfs.stats_running = false;
	}
	write_stats();
}

static int pfs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	int rc;

	if (fi != NULL)
		rc = fstat((int)fi->fh, st);
	else
		rc = fstatat(pfs.root_fd, relative_path(path), st, 0);
	if (rc != 0)
		return -errno;
	/* Read-only: show no write permission. */
	st->st_mode &= ~(mode_t)(S_IWUSR | S_IWGRP | S_IWOTH);
	return 0;
}

static int pfs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t offset,
                       struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	int fd, saved;
	DIR *dir;
	struct dirent *entry;
	struct stat st;

	fd = openat(pfs.root_fd, relative_path(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (dir == NULL) {
		saved = errno;
		close(fd);
		return -saved;
	}
	errno = 0;
	while ((entry = readdir(dir)) != NULL) {
		memset(&st, 0, sizeof(st));
		st.st_ino = entry->d_ino;
		st.st_mode = (mode_t)(entry->d_type << 12);
		if (filler(buf, entry->d_name, &st, 0, 0) != 0)
			break;
		errno = 0;
	}
	saved = errno;
	closedir(dir);
	return -saved;
}

static int pfs_open(const char *path, struct fuse_file_info *fi)
{
	uint64_t netns = caller_netns();
	bool failed;
	int fd;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC) != 0)
		return -EROFS;
	failed = path_fails(path);
	count_open(netns, failed);
	if (pfs.latency > 0)
		sleep_until(now_seconds() + pfs.latency);
	if (failed)
		return -EIO;
	fd = openat(pfs.root_fd, relative_path(path), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	fi->direct_io = 1;
	return 0;
}

static int pfs_read(const char *path, char *buf, size_t size, off_t offset,
                    struct fuse_file_info *fi)
{
	uint64_t netns = caller_netns();
	double start = now_seconds();
	ssize_t got = 0;
	bool failed = path != NULL && path_fails(path);

	if (!failed) {
		got = pread((int)fi->fh, buf, size, offset);
		if (got < 0)
			return -errno;
	}
	sleep_until(admit_read(netns, (size_t)got, failed, start));
	return failed ? -EIO : (int)got;
}

static int pfs_release(const char *path, struct fuse_file_info *fi)
{
	close((int)fi->fh);
	return 0;
}

static int pfs_statfs(const char *path, struct statvfs *st)
{
	if (fstatvfs(pfs.root_fd, st) != 0)
		return -errno;
	return 0;
}

static const struct fuse_operations pfs_operations = {
	.init = pfs_init,
	.destroy = pfs_destroy,
	.getattr = pfs_getattr,
	.readdir = pfs_readdir,
	.open = pfs_open,
	.read = pfs_read,
	.release = pfs_release,
	.statfs = pfs_statfs,
};

/* ------------------------------------------------------------------------ */

/*
 * Mount, serve with a pool of threads (readers sleep in the read handler, so
 * one thread per concurrent request), unmount. Foreground only. SIGTERM,
 * SIGINT and SIGHUP (libfuse's handlers) or an external unmount end it: 0.
 */
static int run_fuse(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
#if FUSE_USE_VERSION >= 312
	struct fuse_loop_config *loop;
#else
	struct fuse_loop_config loop_v1 = { .clone_fd = 0, .max_idle_threads = MAX_THREADS };
	struct fuse_loop_config *loop = &loop_v1;
#endif
	struct fuse *fuse;
	struct fuse_session *session;
	int rc;

	fuse = fuse_new(&args, &pfs_operations, sizeof(pfs_operations), NULL);
	if (fuse == NULL) {
		fprintf(stderr, PROGRAM ": -o: bad FUSE options '%s'\n", argv[argc - 1]);
		fuse_opt_free_args(&args);
		return 2;
	}
	if (fuse_mount(fuse, pfs.mountpoint) != 0) {
		fprintf(stderr, PROGRAM ": cannot mount on MOUNTPOINT '%s'\n", pfs.mountpoint);
		fuse_destroy(fuse);
		fuse_opt_free_args(&args);
		return 1;
	}
	session = fuse_get_session(fuse);
	if (fuse_set_signal_handlers(session) != 0) {
		fuse_unmount(fuse);
		fuse_destroy(fuse);
		fuse_opt_free_args(&args);
		return 1;
	}
#if FUSE_USE_VERSION >= 312
	loop = fuse_loop_cfg_create();
	if (loop == NULL) {
		fuse_remove_signal_handlers(session);
		fuse_unmount(fuse);
		fuse_destroy(fuse);
		fuse_opt_free_args(&args);
		return 1;
	}
	fuse_loop_cfg_set_max_threads(loop, MAX_THREADS);
	fuse_loop_cfg_set_idle_threads(loop, 16);
#endif
	rc = fuse_loop_mt(fuse, loop);
#if FUSE_USE_VERSION >= 312
	fuse_loop_cfg_destroy(loop);
#endif
	fuse_remove_signal_handlers(session);
	fuse_unmount(fuse);
	fuse_destroy(fuse);
	fuse_opt_free_args(&args);
	/* 0: unmounted; a signal number: stopped by that signal; < 0: error */
	return rc >= 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	enum { OPT_BANDWIDTH = 256, OPT_LATENCY, OPT_NOISE, OPT_SEED, OPT_FAIL, OPT_STATS };
	static const struct option options[] = {
		{ "bandwidth", required_argument, NULL, OPT_BANDWIDTH },
		{ "latency", required_argument, NULL, OPT_LATENCY },
		{ "noise", required_argument, NULL, OPT_NOISE },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "fail", required_argument, NULL, OPT_FAIL },
		{ "stats", required_argument, NULL, OPT_STATS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *fuse_argv[16];
	char *mount_options = NULL, *joined, *end, *stats_absolute = NULL;
	int fuse_argc = 0, opt, rc;
	bool debug = false;
	double ms;
	struct stat st;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":fdo:h", options, NULL)) != -1) {
		switch (opt) {
		case OPT_BANDWIDTH:
			parse_curve(optarg);
			break;
		case OPT_LATENCY:
			if (!parse_double(optarg, &ms))
				bad_usage("--latency: '%s' is not a non-negative number of "
				          "milliseconds",
				          optarg);
			pfs.latency = ms / 1000.0;
			break;
		case OPT_NOISE:
			parse_noise(optarg);
			break;
		case OPT_SEED:
			errno = 0;
			pfs.seed = strtoull(optarg, &end, 10);
			if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || errno != 0)
				bad_usage("--seed: '%s' is not a decimal integer in 0 .. 2^64-1",
				          optarg);
			break;
		case OPT_FAIL:
			if (optarg[0] == '\0')
				bad_usage("--fail: empty pattern");
			pfs.fail_patterns =
			        realloc(pfs.fail_patterns,
			                sizeof(*pfs.fail_patterns) * (size_t)(pfs.fail_count + 1));
			if (pfs.fail_patterns == NULL) {
				perror(PROGRAM);
				return 1;
			}
			pfs.fail_patterns[pfs.fail_count++] = optarg;
			break;
		case OPT_STATS:
			if (optarg[0] == '\0')
				bad_usage("--stats: empty file name");
			pfs.stats_path = optarg;
			break;
		case 'f':
			break;
		case 'd':
			debug = true;
			break;
		case 'o':
			if (mount_options == NULL) {
				mount_options = strdup(optarg);
			} else {
				if (asprintf(&joined, "%s,%s", mount_options, optarg) < 0)
					joined = NULL;
				free(mount_options);
				mount_options = joined;
			}
			if (mount_options == NULL) {
				perror(PROGRAM);
				return 1;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			bad_usage("option '%s' needs a value", argv[optind - 1]);
		default:
			bad_usage("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind < 2)
		bad_usage("give SOURCE and MOUNTPOINT");
	if (argc - optind > 2)
		bad_usage("unexpected argument '%s' (give SOURCE and MOUNTPOINT only)",
		          argv[optind + 2]);
	/* libfuse changes to / once mounted: keep the stats file where asked. */
	if (pfs.stats_path != NULL && pfs.stats_path[0] != '/') {
		char cwd[PATH_MAX];

		if (getcwd(cwd, sizeof(cwd)) == NULL ||
		    asprintf(&stats_absolute, "%s/%s", cwd, pfs.stats_path) < 0)
			bad_usage("--stats: cannot resolve '%s': %s", pfs.stats_path,
			          strerror(errno));
		pfs.stats_path = stats_absolute;
	}
	pfs.source = argv[optind];
	pfs.mountpoint = argv[optind + 1];
	pfs.rng = pfs.seed;

	pfs.root_fd = open(pfs.source, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfs.root_fd < 0)
		bad_usage("SOURCE '%s': %s", pfs.source, strerror(errno));
	if (stat(pfs.mountpoint, &st) != 0)
		bad_usage("MOUNTPOINT '%s': %s", pfs.mountpoint, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		bad_usage("MOUNTPOINT '%s' is not a directory", pfs.mountpoint);

	if (asprintf(&joined, "ro,default_permissions,fsname=nopfs-pfs,subtype=nopfs-pfs%s%s",
	             mount_options != NULL ? "," : "",
	             mount_options != NULL ? mount_options : "") < 0) {
		perror(PROGRAM);
		return 1;
	}
	fuse_argv[fuse_argc++] = argv[0];
	if (debug)
		fuse_argv[fuse_argc++] = "-d";
	fuse_argv[fuse_argc++] = "-o";
	fuse_argv[fuse_argc++] = joined;
	fuse_argv[fuse_argc] = NULL;
	rc = run_fuse(fuse_argc, fuse_argv);

	free(joined);
	free(mount_options);
	free(stats_absolute);
	free(pfs.fail_patterns);
	close(pfs.root_fd);
	while (pfs.clients != NULL) {
		struct client *next = pfs.clients->next;

		free(pfs.clients);
		pfs.clients = next;
	}
	return rc;
}
