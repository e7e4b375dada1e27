/*
 * The agent processes of a job on this node, found in /proc by their
 * command line (".../nopfs-agent --job-id JOB ..."). "On this node" means
 * in this process's mount namespace: on a real node that is every process,
 * while on a test cluster of namespaces in one machine it tells the nodes
 * apart (their PID namespace is shared).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin.h"

/* Of an agent's command line: its options, three paths among the first. */
#define CMDLINE_MAX (3 * PATH_MAX + 4096)

static bool same_mount_namespace(const char *pid)
{
	char path[300];
	struct stat mine, theirs;

	snprintf(path, sizeof(path), "/proc/%s/ns/mnt", pid);
	if (stat("/proc/self/ns/mnt", &mine) != 0 || stat(path, &theirs) != 0)
		return false;
	return mine.st_ino == theirs.st_ino && mine.st_dev == theirs.st_dev;
}

char *agents_read_cmdline(pid_t pid, size_t *length)
{
	char path[64], *cmdline = malloc(CMDLINE_MAX);
	ssize_t got = 0;
	int fd;

	*length = 0;
	snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)pid);
	fd = cmdline ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0) {
		free(cmdline);
		return NULL;
	}
	while (*length < CMDLINE_MAX - 1 &&
	       ((got = read(fd, cmdline + *length, CMDLINE_MAX - 1 - *length)) > 0 ||
	        (got < 0 && errno == EINTR)))
		*length += got > 0 ? (size_t)got : 0;
	close(fd);
	/* a full buffer may end in the middle of an argument: that one is left out */
	if (*length == CMDLINE_MAX - 1)
		while (*length > 0 && cmdline[*length - 1] != '\0')
			(*length)--;
	cmdline[*length] = '\0';
	return cmdline;
}

/* Is /proc/@pid an nopfs-agent of @job (as text) owned by @uid? */
static bool is_job_agent(const char *pid, const char *job, uid_t uid)
{
	char path[300], *cmdline;
	struct stat st;
	size_t length;
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%s", pid);
	if (stat(path, &st) != 0 || st.st_uid != uid)
		return false;
	cmdline = agents_read_cmdline((pid_t)atol(pid), &length);
	if (!cmdline || length == 0 || !strstr(cmdline, "nopfs-agent")) {
		free(cmdline);
		return false;
	}
	for (size_t at = 0; at < length; at += strlen(cmdline + at) + 1)
		if (strcmp(cmdline + at, "--job-id") == 0 && at + 9 < length &&
		    strcmp(cmdline + at + 9, job) == 0)
			found = true;
	free(cmdline);
	return found && same_mount_namespace(pid);
}

int agents_of_job(uint32_t job, uid_t uid, void (*each)(pid_t pid, void *arg), void *arg)
{
	struct dirent *entry;
	char text[32];
	DIR *proc = opendir("/proc");
	int count = 0;

	if (!proc)
		return -1;
	snprintf(text, sizeof(text), "%u", job);
	while ((entry = readdir(proc))) {
		if (entry->d_name[0] < '1' || entry->d_name[0] > '9' ||
		    !is_job_agent(entry->d_name, text, uid))
			continue;
		count++;
		if (each)
			each((pid_t)atol(entry->d_name), arg);
	}
	closedir(proc);
	return count;
}
