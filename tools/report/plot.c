/*
 * nopfs-report --plot: the bytes delivered per epoch by source and the
 * distribution of request waits, as gnuplot data, scripts and PNG files.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tool.h"

extern char **environ;

static const char *const sources[] = { "staging", "ram", "ssd", "peer", "pfs" };
static const char *const titles[] = { "staging", "node RAM", "node SSD", "other nodes", "PFS" };
#define STALL_BUCKETS 32

/* Whether an executable gnuplot is in PATH. */
static bool gnuplot_found(void)
{
	const char *path = getenv("PATH");
	char candidate[PATH_MAX];

	while (path && *path) {
		size_t length = strcspn(path, ":");

		if (length > 0 && length + sizeof("/gnuplot") < sizeof(candidate)) {
			memcpy(candidate, path, length);
			strcpy(candidate + length, "/gnuplot");
			if (access(candidate, X_OK) == 0)
				return true;
		}
		path += length + (path[length] == ':');
	}
	return false;
}

/* @dir, made 0755 if missing, or one of this user's, not a link: its descriptor, or -1. */
static int open_dir(const char *dir)
{
	struct stat st;
	int fd;

	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "nopfs-report: --plot %s: cannot create it: %s\n", dir,
		        strerror(errno));
		return -1;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		fprintf(stderr, "nopfs-report: --plot %s: not a directory: %s\n", dir,
		        strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (st.st_uid != geteuid()) {
		fprintf(stderr, "nopfs-report: --plot %s: a directory of another user\n", dir);
		close(fd);
		return -1;
	}
	return fd;
}

/* Create (or replace) @name in @dirfd for writing, never through a link. */
static FILE *create_in(int dirfd, const char *dir, const char *name)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	FILE *file = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (!file) {
		fprintf(stderr, "nopfs-report: --plot: cannot create %s/%s: %s\n", dir, name,
		        strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	return file;
}

static int finish(FILE *file, const char *dir, const char *name)
{
	if (ferror(file) | (fclose(file) != 0)) {
		fprintf(stderr, "nopfs-report: --plot: cannot write %s/%s\n", dir, name);
		return 1;
	}
	return 0;
}

/* epochs.dat: epoch, then MB per source; 1 on an error (printed). */
static int write_epochs(int dirfd, const char *dir, const json_t *per_epoch)
{
	FILE *data = create_in(dirfd, dir, "epochs.dat");
	const json_t *epoch;
	size_t e;

	if (!data)
		return 1;
	fprintf(data, "# epoch");
	for (int s = 0; s < 5; s++)
		fprintf(data, " %s_MB", sources[s]);
	fprintf(data, "\n");
	json_array_foreach(per_epoch, e, epoch)
	{
		fprintf(data, "%zu", e);
		for (int s = 0; s < 5; s++) {
			const json_t *bytes =
			        json_object_get(json_object_get(epoch, sources[s]), "bytes");

			fprintf(data, " %.6f", (double)json_integer_value(bytes) / 1e6);
		}
		fprintf(data, "\n");
	}
	return finish(data, dir, "epochs.dat");
}

/* stalls.dat: bucket upper bound (us), its label, the requests in it. */
static int write_stalls(int dirfd, const char *dir, const json_t *histogram)
{
	FILE *data = create_in(dirfd, dir, "stalls.dat");
	const json_t *count;
	size_t b, last = 0;

	if (!data)
		return 1;
	json_array_foreach(histogram, b, count) if (json_integer_value(count) > 0) last = b;
	fprintf(data, "# upper_bound_us label requests\n");
	for (b = 0; b <= last || b < 8; b++) {
		uint64_t bound = UINT64_C(1) << b;
		char label[32];

		if (bound < 1000)
			snprintf(label, sizeof(label), "%" PRIu64 "us", bound);
		else if (bound < 1000000)
			snprintf(label, sizeof(label), "%.3gms", (double)bound / 1e3);
		else
			snprintf(label, sizeof(label), "%.3gs", (double)bound / 1e6);
		fprintf(data, "%" PRIu64 " <%s %" JSON_INTEGER_FORMAT "\n", bound, label,
		        json_integer_value(json_array_get(histogram, b)));
	}
	return finish(data, dir, "stalls.dat");
}

static int write_script(int dirfd, const char *dir, const char *job)
{
	FILE *gp = create_in(dirfd, dir, "plot.gp");

	if (!gp)
		return 1;
	fprintf(gp,
	        "set terminal pngcairo size 900,500 font ',10'\n"
	        "set output 'epochs.png'\n"
	        "set title 'nopfs job %s: bytes delivered per epoch, by source'\n"
	        "set style data histograms\nset style histogram rowstacked\n"
	        "set style fill solid 0.85 border -1\nset boxwidth 0.7\n"
	        "set key outside right\nset xlabel 'epoch'\nset ylabel 'MB'\n"
	        "set yrange [0:*]\n"
	        "plot",
	        job);
	for (int s = 0; s < 5; s++)
		fprintf(gp, "%s 'epochs.dat' using %d%s title '%s'", s ? ", \\\n    " : " ", s + 2,
		        s == 0 ? ":xtic(1)" : "", titles[s]);
	fprintf(gp,
	        "\n\nset output 'stalls.png'\n"
	        "set title 'nopfs job %s: how long requests to the agents waited'\n"
	        "set style data histograms\nset style histogram clustered\nunset key\n"
	        "set xlabel 'wait (bucket upper bound)'\nset ylabel 'requests'\n"
	        "set xtics rotate by -45\n"
	        "plot 'stalls.dat' using 3:xtic(2) linecolor rgb '#3070b0'\n",
	        job);
	return finish(gp, dir, "plot.gp");
}

static int run_gnuplot(const char *dir)
{
	char *argv[] = { "gnuplot", "plot.gp", NULL };
	posix_spawn_file_actions_t actions;
	int status, rc;
	pid_t pid;

	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_addchdir_np(&actions, dir);
	rc = posix_spawnp(&pid, "gnuplot", &actions, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	if (rc != 0) {
		fprintf(stderr, "nopfs-report: --plot: cannot start gnuplot: %s\n", strerror(rc));
		return 1;
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "nopfs-report: --plot: gnuplot failed on %s/plot.gp\n", dir);
		return 1;
	}
	return 0;
}

int report_plot(const json_t *report, const char *name, const char *dir)
{
	const json_t *per_epoch = json_object_get(report, "per_epoch");
	const json_t *histogram =
	        json_object_get(json_object_get(report, "stall"), "histogram_us_log2");
	const char *job = json_string_value(json_object_get(report, "job_id"));
	int dirfd, rc;

	if (!json_is_array(per_epoch) || !json_is_array(histogram) ||
	    json_array_size(histogram) != STALL_BUCKETS) {
		fprintf(stderr,
		        "nopfs-report: --plot: %s has no 'per_epoch' or 'stall.histogram_us_log2' "
		        "(a report of an older nopfs?)\n",
		        name);
		return 1;
	}
	if (!gnuplot_found()) {
		fprintf(stderr, "nopfs-report: --plot: gnuplot is not in PATH; install it "
		                "(Debian: apt-get install gnuplot-nox)\n");
		return 1;
	}
	dirfd = open_dir(dir);
	if (dirfd < 0)
		return 1;
	rc = write_epochs(dirfd, dir, per_epoch) || write_stalls(dirfd, dir, histogram) ||
	     write_script(dirfd, dir, job ? job : "?");
	close(dirfd);
	if (rc == 0)
		rc = run_gnuplot(dir);
	if (rc == 0)
		fprintf(stderr, "nopfs-report: wrote %s/epochs.png and %s/stalls.png\n", dir, dir);
	return rc;
}
