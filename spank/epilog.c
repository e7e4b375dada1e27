/*
 * slurmd, job epilog (root, every node of the job, after all steps): remove
 * what the job's agents left when they could not clean up themselves (a
 * SIGKILL, a crash): their processes, the job's entries (nopfs-JOB and
 * nopfs-JOB.*) in /tmp, /dev/shm and ssd_base, and the SSD tier directories
 * the runtime directories list. Only what exists and belongs to the job's
 * user is touched, never through a link; nothing here fails the epilog.
 * With admin_comment=yes, node 0's one-line summary of the job is stored as
 * the job's AdminComment (sacctmgr, in the accounting database) first.
 */
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/private.h"
#include "plugin.h"

/* Remove @name in @parent_fd, a directory tree of @uid, without following links. */
static void remove_tree_at(int parent_fd, const char *name, uid_t uid, int depth)
{
	struct stat st;
	struct dirent *entry;
	DIR *dir;
	int fd;

	if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_uid != uid)
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlinkat(parent_fd, name, 0);
		return;
	}
	if (depth > 8)
		return;
	fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return;
	}
	while ((entry = readdir(dir)))
		if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0)
			remove_tree_at(fd, entry->d_name, uid, depth + 1);
	closedir(dir);
	unlinkat(parent_fd, name, AT_REMOVEDIR);
}

/* Is @name one of the job's: "nopfs-JOB" itself, or "nopfs-JOB." followed by anything? */
static bool is_job_name(const char *name, const char *prefix, size_t length)
{
	return strncmp(name, prefix, length) == 0 && (name[length] == '\0' || name[length] == '.');
}

/* Remove the job's entries of @uid in @directory (nopfs-JOB, nopfs-JOB.*). */
static void remove_in(const char *directory, const char *prefix, uid_t uid)
{
	int fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t length = strlen(prefix);
	struct dirent *entry;
	DIR *dir;

	if (fd < 0)
		return;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return;
	}
	while ((entry = readdir(dir)))
		if (is_job_name(entry->d_name, prefix, length))
			remove_tree_at(fd, entry->d_name, uid, 0);
	closedir(dir);
}

/*
 * The next runtime directory of the job in @tmp (/tmp/PREFIX...) that is a
 * private directory of @uid holding @name as a regular file of theirs: that
 * file, opened with @flags; -1 when there is none left.
 */
static int next_runtime_file(DIR *tmp, const char *prefix, uid_t uid, const char *name, int flags)
{
	size_t length = strlen(prefix);
	char path[PATH_MAX + 64];
	struct dirent *entry;

	while ((entry = readdir(tmp))) {
		int dir_fd, fd;

		if (!is_job_name(entry->d_name, prefix, length))
			continue;
		snprintf(path, sizeof(path), "/tmp/%s", entry->d_name);
		dir_fd = nopfs_private_dir_open_for(path, uid);
		if (dir_fd < 0)
			continue;
		fd = nopfs_private_file_open_for(dir_fd, name, flags, 0, uid);
		close(dir_fd);
		if (fd >= 0)
			return fd;
	}
	return -1;
}

/*
 * SSD tier directories the agents made outside ssd_base (ssd:DIR:SIZE):
 * each runtime directory of the job lists them in "ssd-dirs", one path a
 * line. The list is the user's: only an entry named for the job and owned
 * by the job's user is removed, as anywhere else.
 */
static void remove_listed(const char *prefix, uid_t uid)
{
	size_t length = strlen(prefix);
	char line[PATH_MAX + 2];
	DIR *tmp = opendir("/tmp");
	int fd;

	if (!tmp)
		return;
	while ((fd = next_runtime_file(tmp, prefix, uid, "ssd-dirs", O_RDONLY)) >= 0) {
		FILE *list = fdopen(fd, "r");

		if (!list) {
			close(fd);
			continue;
		}
		for (int lines = 0; lines < 64 && fgets(line, sizeof(line), list); lines++) {
			char *slash;

			line[strcspn(line, "\n")] = '\0';
			slash = strrchr(line, '/');
			if (line[0] != '/' || !slash || slash == line ||
			    !is_job_name(slash + 1, prefix, length))
				continue;
			*slash = '\0';
			remove_in(line, prefix, uid);
		}
		fclose(list);
	}
	closedir(tmp);
}

#define SUMMARY_MAX      1024
#define SACCTMGR_WAIT_MS 10000

/*
 * The job's one-line summary from a runtime directory of the job (the one
 * of node 0's agent has it): a regular file of the job's user in a private
 * directory of theirs, its first line, at most SUMMARY_MAX bytes, every byte
 * outside printable ASCII and every quote replaced by '?'. It is what the
 * user's own agent wrote: figures the job reports about itself.
 */
static bool read_summary(const char *prefix, uid_t uid, char *text, size_t size)
{
	DIR *tmp = opendir("/tmp");
	bool found = false;
	int fd;

	while (tmp && !found &&
	       (fd = next_runtime_file(tmp, prefix, uid, EPILOG_SUMMARY_NAME,
	                               O_RDONLY | O_NONBLOCK)) >= 0) {
		ssize_t got = read(fd, text, size - 1);

		close(fd);
		if (got <= 0)
			continue;
		text[got] = '\0';
		text[strcspn(text, "\n")] = '\0';
		for (char *c = text; *c; c++)
			if (*c < 0x20 || *c > 0x7e || *c == '"' || *c == '\'')
				*c = '?';
		found = strncmp(text, "nopfs: ", 7) == 0;
	}
	if (tmp)
		closedir(tmp);
	return found;
}

/* Run the admin's sacctmgr to set the job's AdminComment; bounded, logged. */
static void store_summary(uint32_t job, const char *text)
{
	char where[32], set[SUMMARY_MAX + 32];
	const char *argv[] = {
		nopfs_config.sacctmgr, "-i", "modify", "job", "where", where, "set", set, NULL
	};
	int status = 0, waited_ms = 0;
	pid_t pid, done = 0;

	snprintf(where, sizeof(where), "jobid=%u", job);
	snprintf(set, sizeof(set), "AdminComment=%s", text);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (pid < 0) {
		slurm_error(PLUGIN_NAME ": job %u: cannot start %s: %m", job, argv[0]);
		return;
	}
	while ((done = waitpid(pid, &status, WNOHANG)) == 0 && waited_ms < SACCTMGR_WAIT_MS) {
		struct timespec pause = { .tv_nsec = 50 * 1000000 };

		nanosleep(&pause, NULL);
		waited_ms += 50;
	}
	if (done == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		slurm_error(PLUGIN_NAME ": job %u: %s did not finish within %d s: no AdminComment",
		            job, argv[0], SACCTMGR_WAIT_MS / 1000);
	} else if (done < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		slurm_error(PLUGIN_NAME ": job %u: %s failed (status %d): no AdminComment", job,
		            argv[0],
		            done < 0            ? -1
		            : WIFEXITED(status) ? WEXITSTATUS(status)
		                                : 128);
	} else {
		slurm_info(PLUGIN_NAME ": job %u: AdminComment set: %s", job, text);
	}
}

static void kill_agent(pid_t pid, void *arg)
{
	int *killed = arg;

	if (kill(pid, SIGKILL) == 0)
		(*killed)++;
}

void epilog_clean(spank_t sp)
{
	char prefix[64];
	uint32_t job = 0;
	uid_t uid = 0;
	int killed = 0;

	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS || uid == 0)
		return;
	agents_of_job(job, uid, kill_agent, &killed);
	if (killed > 0) {
		slurm_info(PLUGIN_NAME ": job %u: killed %d leftover agent process(es)", job,
		           killed);
		usleep(100000); /* let the kernel reap them before their files go */
	}
	snprintf(prefix, sizeof(prefix), "nopfs-%u", job);
	if (nopfs_config.admin_comment) {
		char summary[SUMMARY_MAX];

		if (read_summary(prefix, uid, summary, sizeof(summary)))
			store_summary(job, summary);
	}
	remove_listed(prefix, uid); /* before the lists go with /tmp's entries */
	remove_in("/tmp", prefix, uid);
	remove_in("/dev/shm", prefix, uid);
	if (nopfs_config.ssd_base[0])
		remove_in(nopfs_config.ssd_base, prefix, uid);
}
