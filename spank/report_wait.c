/*
 * srun, local exit, when this srun created the job: the job is over and its
 * agents got SIGTERM. Node 0's agent merges the nodes' reports into the job
 * report; wait (bounded) for it, merge what there is if it does not come,
 * and print the summary to the user's stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/private.h"
#include "launch.h"
#include "plugin.h"
#include "common/clock.h"

#define TOOL_SECONDS 20

/* Has the companion srun exited? (reaps it) */
static bool companion_done(void)
{
	if (nopfs_launch.companion <= 0)
		return true;
	if (waitpid(nopfs_launch.companion, NULL, WNOHANG) == 0)
		return false;
	nopfs_launch.companion = -1;
	return true;
}

/* Run nopfs-report with @argv (its output on our stderr), bounded. */
static int run_tool(char **argv)
{
	double deadline = nopfs_clock_seconds() + TOOL_SECONDS;
	int status = 0;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null_fd = open("/dev/null", O_RDWR);

		if (null_fd >= 0) {
			dup2(null_fd, STDIN_FILENO);
			dup2(STDERR_FILENO, STDOUT_FILENO);
		}
		execv(argv[0], argv);
		dprintf(STDERR_FILENO, PLUGIN_NAME ": cannot run %s: %s\n", argv[0],
		        strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (nopfs_clock_seconds() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		usleep(20000);
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* Is @path a regular file of this user (the report directory may be anyone's)? */
static bool is_ours(const char *path)
{
	return nopfs_private_file_is(path, geteuid());
}

/*
 * The node reports of the job report @report ("REPORT.TOKEN.node-N") that
 * are this user's, in @found (globfree() it): how many.
 */
static size_t node_reports(const char *report, glob_t *found)
{
	char pattern[PATH_MAX + 32];
	size_t kept = 0;

	snprintf(pattern, sizeof(pattern), "%s.*.node-*", report);
	if (glob(pattern, 0, NULL, found) != 0)
		return 0;
	for (size_t i = 0; i < found->gl_pathc; i++) {
		if (is_ours(found->gl_pathv[i]))
			found->gl_pathv[kept++] = found->gl_pathv[i];
		else
			user_error("ignored '%s': another user's file", found->gl_pathv[i]);
	}
	found->gl_pathv[kept] = NULL;
	return kept;
}

/* Merge the node reports that exist into the job report ourselves. */
static int merge_here(const char *tool, const char *report)
{
	char *argv[4100];
	size_t count;
	glob_t found = { 0 };
	int argc = 0, rc;

	count = node_reports(report, &found);
	if (count == 0) {
		user_error("no agent wrote a report for job %u (expected %s.TOKEN.node-N)",
		           nopfs_launch.job, report);
		globfree(&found);
		return -1;
	}
	argv[argc++] = (char *)tool;
	argv[argc++] = "--merge";
	argv[argc++] = (char *)report;
	for (size_t i = 0; i < count && argc < 4096; i++)
		argv[argc++] = found.gl_pathv[i];
	argv[argc] = NULL;
	rc = run_tool(argv);
	globfree(&found);
	return rc;
}

/* The node reports are in the job report now. */
static void remove_node_reports(const char *report)
{
	glob_t found = { 0 };
	size_t count = node_reports(report, &found);

	for (size_t i = 0; i < count; i++)
		unlink(found.gl_pathv[i]);
	globfree(&found);
}

/* Show the companion srun's complaints, if it had any (from a log of ours only). */
static void show_companion_log(void)
{
	char line[1024];
	int fd = nopfs_private_file_open_for(AT_FDCWD, nopfs_launch.lock, O_RDONLY, 0, geteuid());
	FILE *in = fd >= 0 ? fdopen(fd, "re") : NULL;

	if (!in) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (fgets(line, sizeof(line), in) && fgets(line, sizeof(line), in)) /* pid, command */
		while (fgets(line, sizeof(line), in))
			user_error("agent step: %s", strtok(line, "\n") ? line : "");
	fclose(in);
}

void report_print(spank_t sp)
{
	const char *report = nopfs_request.report;
	char tool[PATH_MAX + 16];
	char *argv[3];
	double deadline = nopfs_clock_seconds() + nopfs_config.report_wait;
	bool shown;

	if (!nopfs_launch.started || !nopfs_launch.owns_allocation || !report[0])
		return;
	snprintf(tool, sizeof(tool), "%s/nopfs-report", nopfs_config.bindir);
	/* without a companion of ours (salloc), only the deadline ends the wait */
	bool own = nopfs_launch.companion > 0;

	/* a file of another user there is not the report (the agent replaces it) */
	while (!is_ours(report) && nopfs_clock_seconds() < deadline && !(own && companion_done()))
		usleep(50000);
	if (access(report, F_OK) == 0 && !is_ours(report)) {
		user_error("'%s' is not this user's file: another user made it; no job report",
		           report);
		shown = false;
	} else if (access(report, F_OK) == 0) { /* node 0's agent merged it */
		argv[0] = tool;
		argv[1] = (char *)report;
		argv[2] = NULL;
		shown = run_tool(argv) == 0;
	} else {
		show_companion_log();
		shown = merge_here(tool, report) == 0; /* prints the summary too */
	}
	if (shown) {
		fprintf(stderr, PLUGIN_NAME ": job report: %s\n", report);
		remove_node_reports(report);
	}
	companion_done();
	unlink(nopfs_launch.lock);
}

/*
 * The lock (and log) of the srun that started the job's agents from here:
 * /tmp/nopfs-JOB.srun if it is ours, else the private name such an srun
 * takes beside a file another user planted there (planted_lock()); the
 * newest of ours if there are several, the others removed. False if none.
 */
static bool own_lock(void)
{
	char pattern[sizeof(nopfs_launch.lock) + 8];
	glob_t found = { 0 };
	time_t newest = 0;
	bool any = false;

	if (nopfs_private_file_is(nopfs_launch.lock, geteuid()))
		return true;
	snprintf(pattern, sizeof(pattern), "%s.??????", nopfs_launch.lock);
	if (glob(pattern, GLOB_NOSORT, NULL, &found) != 0)
		return false;
	for (size_t i = 0; i < found.gl_pathc; i++) {
		const char *path = found.gl_pathv[i];
		struct stat st;

		if (lstat(path, &st) != 0 || !nopfs_private_file_stat_is(&st, geteuid()))
			continue;
		if (any && st.st_mtime < newest) {
			unlink(path);
			continue;
		}
		if (any)
			unlink(nopfs_launch.lock);
		snprintf(nopfs_launch.lock, sizeof(nopfs_launch.lock), "%s", path);
		newest = st.st_mtime;
		any = true;
	}
	globfree(&found);
	return any;
}

void report_print_for_salloc(spank_t sp)
{
	const char *job = getenv("SLURM_JOB_ID");
	char cwd[PATH_MAX];

	if (!nopfs_request.active || !job || strspn(job, "0123456789") != strlen(job))
		return;
	nopfs_launch.job = (uint32_t)strtoul(job, NULL, 10);
	launch_set_lock(nopfs_launch.job);
	if (!own_lock())
		return; /* no srun of the job started agents from here */
	launch_default_report(nopfs_launch.job, getcwd(cwd, sizeof(cwd)));
	nopfs_launch.started = true;
	nopfs_launch.owns_allocation = true;
	nopfs_launch.companion = -1;
	report_print(sp);
}
