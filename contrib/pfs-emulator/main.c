/*
 * nopfs-pfs: an emulated, contended parallel filesystem.
 *
 * A FUSE passthrough of a directory, read-write (or read-only), whose reads
 * are slowed down the way a shared PFS slows them down under load: the
 * aggregate bandwidth is a function of the number of clients reading at the
 * same time, shared equally among them; every open, read and write can
 * carry a latency, some reads a random extra delay; chosen paths fail with
 * EIO. A client is a network namespace (each node of the test cluster has
 * its own). Per-client counters go to a JSON file every second and at
 * unmount. pfs.h lists the files.
 *
 *   nopfs-pfs [options] SOURCE MOUNTPOINT
 */
#include "pfs.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct pfs_state pfs = {
	.root_fd = -1,
	.seed = 1,
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.stats_lock = PTHREAD_MUTEX_INITIALIZER,
	.stats_cond = PTHREAD_COND_INITIALIZER,
};

/* What main() passes to libfuse besides the state above. */
struct session_options {
	char *mount_options; /* -o, joined with commas; NULL: none */
	bool debug;          /* -d */
};

/* ------------------------------------------------------------------------ */
/* Options */

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: " PROGRAM " [options] SOURCE MOUNTPOINT\n"
	        "\n"
	        "Mount directory SOURCE at MOUNTPOINT, read-write (or read-only), emulating\n"
	        "a parallel filesystem shared by several clients (a client is a network\n"
	        "namespace). Runs in the foreground; SIGTERM, SIGINT or fusermount3 -u\n"
	        "unmount it. Run as root (with -o allow_other to share the mount): the kernel\n"
	        "checks permissions, and what a caller creates belongs to the caller.\n"
	        "Reads and writes bypass the page cache, so each one reaches the emulation;\n"
	        "programs and libraries run from the mount (private mmap); shared mmap\n"
	        "(MAP_SHARED) fails with ENODEV (before libfuse 3.17).\n"
	        "\n"
	        "options:\n"
	        "  --bandwidth CURVE    aggregate read bandwidth by number of clients reading\n"
	        "                       at once (a read in the last %.1f s): N:RATE,N:RATE,...\n"
	        "                       e.g. 1:400M,2:600M,4:800M; RATE in bytes/s with an\n"
	        "                       optional K, M, G or T suffix (powers of 1024); linear\n"
	        "                       between the points, flat beyond the ends. A lone RATE\n"
	        "                       is the same at any count. Each client reading gets an\n"
	        "                       equal share, paced with a burst of %.0f ms of its\n"
	        "                       share. Writes are not paced. Default: unlimited\n"
	        "  --latency MS         milliseconds added to every open (and create), read\n"
	        "                       and write (default 0)\n"
	        "  --noise FRACTION:MS  that fraction of the reads take MS milliseconds more\n"
	        "  --metadata-latency MS  milliseconds added to every metadata operation\n"
	        "                       (lookup and getattr, opendir, readdir, readlink,\n"
	        "                       access; default 0)\n"
	        "  --metadata-rate OPS  metadata operations per second the one metadata server\n"
	        "                       answers, all clients in one queue (default unlimited)\n"
	        "  --seed N             seed of the noise's pseudo-random choice (default 1)\n"
	        "  --fail PATTERN       opens and creates of paths (relative to the root, no\n"
	        "                       leading /) matching fnmatch(3) PATTERN fail with EIO;\n"
	        "                       repeatable\n"
	        "  --read-only          mount read-only: every change fails with EROFS, no\n"
	        "                       write permission is shown\n"
	        "  --stats FILE         write per-client counters (JSON) to FILE every second\n"
	        "                       and at unmount (written to a temporary file, renamed):\n"
	        "                       {\"clients\": {\"NETNS\": {\"opens\": N, \"reads\": N,\n"
	        "                       \"bytes\": N, \"writes\": N, \"bytes_written\": N,\n"
	        "                       \"errors\": N, \"metadata\": {\"getattr\": N, \"opendir\": "
	        "N,\n"
	        "                       \"readdir\": N, \"readlink\": N, \"access\": N, "
	        "\"total\":\n"
	        "                       N}}, ...}, \"total\": {...}}; \"bytes\" are read;\n"
	        "                       NETNS: the inode of /proc/PID/ns/net (0: unknown)\n"
	        "  -f                   foreground (the default and only mode)\n"
	        "  -d                   FUSE debug output\n"
	        "  -o OPTIONS           more FUSE mount options (e.g. allow_other)\n"
	        "  -h, --help           this help\n",
	        PFS_ACTIVE_WINDOW, PFS_READ_BURST * 1000);
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
		pfs.curve[0] = (struct pfs_curve_point){ 1, rate };
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
		if (n == PFS_MAX_CURVE_POINTS)
			bad_usage("--bandwidth: '%s' has more than %d points", text,
			          PFS_MAX_CURVE_POINTS);
		if (n > 0 && (double)clients <= pfs.curve[n - 1].clients)
			bad_usage("--bandwidth: client counts in '%s' must increase", text);
		pfs.curve[n++] = (struct pfs_curve_point){ (double)clients, rate };
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

static void add_fail_pattern(char *pattern)
{
	char **grown;

	if (pattern[0] == '\0')
		bad_usage("--fail: empty pattern");
	grown = realloc(pfs.fail_patterns, sizeof(*grown) * (size_t)(pfs.fail_count + 1));
	if (grown == NULL) {
		perror(PROGRAM);
		exit(1);
	}
	pfs.fail_patterns = grown;
	pfs.fail_patterns[pfs.fail_count++] = pattern;
}

static void add_mount_options(struct session_options *fo, const char *more)
{
	char *joined;

	if (fo->mount_options == NULL) {
		joined = strdup(more);
	} else if (asprintf(&joined, "%s,%s", fo->mount_options, more) < 0) {
		joined = NULL;
	}
	if (joined == NULL) {
		perror(PROGRAM);
		exit(1);
	}
	free(fo->mount_options);
	fo->mount_options = joined;
}

/* The options into pfs and @fo, SOURCE and MOUNTPOINT; exits on errors, --help. */
static void parse_command_line(int argc, char **argv, struct session_options *fo)
{
	enum {
		OPT_BANDWIDTH = 256,
		OPT_LATENCY,
		OPT_NOISE,
		OPT_SEED,
		OPT_FAIL,
		OPT_READ_ONLY,
		OPT_STATS,
		OPT_METADATA_LATENCY,
		OPT_METADATA_RATE,
	};
	static const struct option options[] = {
		{ "bandwidth", required_argument, NULL, OPT_BANDWIDTH },
		{ "latency", required_argument, NULL, OPT_LATENCY },
		{ "noise", required_argument, NULL, OPT_NOISE },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "fail", required_argument, NULL, OPT_FAIL },
		{ "read-only", no_argument, NULL, OPT_READ_ONLY },
		{ "stats", required_argument, NULL, OPT_STATS },
		{ "metadata-latency", required_argument, NULL, OPT_METADATA_LATENCY },
		{ "metadata-rate", required_argument, NULL, OPT_METADATA_RATE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int opt;
	double ms;

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
		case OPT_METADATA_LATENCY:
			if (!parse_double(optarg, &ms))
				bad_usage(
				        "--metadata-latency: '%s' is not a non-negative number of "
				        "milliseconds",
				        optarg);
			pfs.metadata_latency = ms / 1000.0;
			break;
		case OPT_METADATA_RATE:
			if (!parse_double(optarg, &pfs.metadata_rate) || !(pfs.metadata_rate > 0))
				bad_usage("--metadata-rate: '%s' is not a positive number of "
				          "operations per second",
				          optarg);
			break;
		case OPT_SEED:
			errno = 0;
			pfs.seed = strtoull(optarg, &end, 10);
			if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || errno != 0)
				bad_usage("--seed: '%s' is not a decimal integer in 0 .. 2^64-1",
				          optarg);
			break;
		case OPT_FAIL:
			add_fail_pattern(optarg);
			break;
		case OPT_READ_ONLY:
			pfs.read_only = true;
			break;
		case OPT_STATS:
			if (optarg[0] == '\0')
				bad_usage("--stats: empty file name");
			pfs.stats_path = optarg;
			break;
		case 'f':
			break;
		case 'd':
			fo->debug = true;
			break;
		case 'o':
			add_mount_options(fo, optarg);
			break;
		case 'h':
			usage(stdout);
			exit(0);
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
	pfs.source = argv[optind];
	pfs.mountpoint = argv[optind + 1];
}

/*
 * libfuse changes to / once mounted: keep the stats file where asked.
 * Returns the absolute path to free (pfs.stats_path points to it), or NULL.
 */
static char *resolve_stats_path(void)
{
	char cwd[PATH_MAX], *absolute;

	if (pfs.stats_path == NULL || pfs.stats_path[0] == '/')
		return NULL;
	if (getcwd(cwd, sizeof(cwd)) == NULL ||
	    asprintf(&absolute, "%s/%s", cwd, pfs.stats_path) < 0)
		bad_usage("--stats: cannot resolve '%s': %s", pfs.stats_path, strerror(errno));
	pfs.stats_path = absolute;
	return absolute;
}

static void open_source(void)
{
	struct stat st;

	pfs.root_fd = open(pfs.source, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfs.root_fd < 0)
		bad_usage("SOURCE '%s': %s", pfs.source, strerror(errno));
	if (stat(pfs.mountpoint, &st) != 0)
		bad_usage("MOUNTPOINT '%s': %s", pfs.mountpoint, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		bad_usage("MOUNTPOINT '%s' is not a directory", pfs.mountpoint);
}

/* Every file open on the mount holds an fd of the daemon: allow many. */
static void raise_open_files_limit(void)
{
	struct rlimit limit;

	if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
		limit.rlim_cur = limit.rlim_max;
		setrlimit(RLIMIT_NOFILE, &limit);
	}
}

/* The -o string for libfuse: ours, then the user's; NULL if out of memory. */
static char *mount_option_string(const struct session_options *fo)
{
	char *joined;

	if (asprintf(&joined, "%sdefault_permissions,fsname=nopfs-pfs,subtype=nopfs-pfs%s%s",
	             pfs.read_only ? "ro," : "", fo->mount_options != NULL ? "," : "",
	             fo->mount_options != NULL ? fo->mount_options : "") < 0)
		return NULL;
	return joined;
}

int main(int argc, char **argv)
{
	struct session_options fo = { 0 };
	char *fuse_argv[8], *stats_absolute, *joined;
	int fuse_argc = 0, rc;

	parse_command_line(argc, argv, &fo);
	stats_absolute = resolve_stats_path();
	open_source();
	pfs.rng = pfs.seed;
	/* The kernel applied each caller's umask to the modes it sends. */
	umask(0);
	raise_open_files_limit();

	joined = mount_option_string(&fo);
	if (joined == NULL) {
		perror(PROGRAM);
		rc = 1;
		goto out;
	}
	fuse_argv[fuse_argc++] = argv[0];
	if (fo.debug)
		fuse_argv[fuse_argc++] = "-d";
	fuse_argv[fuse_argc++] = "-o";
	fuse_argv[fuse_argc++] = joined;
	fuse_argv[fuse_argc] = NULL;
	rc = pfs_mount_run(fuse_argc, fuse_argv);

	free(joined);
out:
	pfs_clients_free();
	close(pfs.root_fd);
	free(pfs.fail_patterns);
	free(stats_absolute);
	free(fo.mount_options);
	return rc;
}
