/*
 * slurmd, job epilog (root, every node of the job, after all steps): remove
 * what the job's agents left when they could not clean up themselves (a
 * SIGKILL, a crash): their processes, the job's entries (nopfs-JOB and
 * nopfs-JOB.*) in /tmp, /dev/shm and ssd_base, and the SSD tier directories
 * the runtime directories list. Only what exists and belongs to the job's
 * user is touched, never through a link; nothing here fails the epilog.
 * With admin_comment=yes, node 0's one-line summary of the job is stored as
 * the job's AdminComment (sacctmgr, in the accounting database) first.
 * With cache_base, what the job's killed agents left in the user's kept
 * caches goes, and then every user's kept caches on the node are held to
 * cache_max_age and cache_limit (cache_limits.c).
 *
 * Kept caches are not the job's to remove: they are named CACHE_BASE/UID/KEY,
 * never nopfs-JOB*, and CACHE_BASE itself is root's, so the removal of the
 * job's entries (even in an ssd_base that holds CACHE_BASE, or through a
 * line of ssd-dirs naming a place in it) leaves them alone.
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

#include "cache_limits.h"
#include "common/private.h"
#include "common/units.h"
#include "plugin.h"
#include "remove_tree.h"

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

/* What @job's agents left of their own on this node (@uid: the job's user, not root). */
static void remove_job_files(uint32_t job, uid_t uid)
{
	char prefix[64];
	int killed = 0;

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

/* Log one removal among the kept caches (cache_limits.c). */
static void log_removal(const struct cache_removal *removal, void *arg)
{
	const uint32_t *job = arg;
	const char *stays = removal->whole ? "" : " (entries not of the user stay)";
	char bytes[32], idle[32], total[32], limit[32];

	nopfs_format_size(removal->bytes, bytes, sizeof(bytes));
	snprintf(idle, sizeof(idle), "%llu s", (unsigned long long)removal->idle);
	if (removal->reason == CACHE_ORPHAN) {
		slurm_info(PLUGIN_NAME ": job %u: removed %s/%s, new data its killed agent left in "
		                       "a kept cache; %s freed%s",
		           *job, nopfs_config.cache_base, removal->path, bytes, stays);
	} else if (removal->reason == CACHE_TOO_OLD) {
		slurm_info(PLUGIN_NAME ": kept cache %s/%s removed: not used for %s, more than "
		                       "cache_max_age (%llu s); %s freed%s",
		           nopfs_config.cache_base, removal->path, idle,
		           (unsigned long long)nopfs_config.cache_max_age, bytes, stays);
	} else {
		nopfs_format_size(removal->total, total, sizeof(total));
		nopfs_format_size(nopfs_config.cache_limit, limit, sizeof(limit));
		slurm_info(PLUGIN_NAME
		           ": kept cache %s/%s removed: the least recently used (%s "
		           "ago) while the node's kept caches took %s, more than cache_limit (%s); "
		           "%s freed%s",
		           nopfs_config.cache_base, removal->path, idle, total, limit, bytes,
		           stays);
	}
}

/*
 * Kept caches: the files of @job's killed agents in @uid's, then the limits
 * over everyone's. A cache_base that is not root's alone is not touched.
 */
static void limit_caches(uint32_t job, uid_t uid)
{
	struct cache_usage usage;
	char why[256];
	int base_fd;

	if (nopfs_config.cache_base[0] == '\0')
		return;
	base_fd = cache_base_open(nopfs_config.cache_base, why, sizeof(why));
	if (base_fd < 0) {
		slurm_error(PLUGIN_NAME ": job %u: plugstack.conf cache_base=%s %s: its limits are "
		                        "not enforced",
		            job, nopfs_config.cache_base, why);
		return;
	}
	cache_orphans_remove(base_fd, uid, job, log_removal, &job);
	if ((nopfs_config.cache_limit > 0 || nopfs_config.cache_max_age > 0) &&
	    cache_limits_enforce(base_fd, nopfs_config.cache_limit, nopfs_config.cache_max_age,
	                         time(NULL), log_removal, &job, &usage) != 0)
		slurm_error(PLUGIN_NAME ": job %u: cannot list the kept caches in %s: %m", job,
		            nopfs_config.cache_base);
	close(base_fd);
}

void epilog_clean(spank_t sp)
{
	uint32_t job = 0;
	uid_t uid = 0;

	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS)
		return;
	if (uid != 0) /* root's files are not told apart by their owner */
		remove_job_files(job, uid);
	limit_caches(job, uid); /* the agents killed above hold no lock any more */
}
