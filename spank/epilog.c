/*
 * slurmd, job epilog (root, every node of the job, after all steps): remove
 * what the job's agents left when they could not clean up themselves (a
 * SIGKILL, a crash): their processes, the job's entries (nopfs-JOB and
 * nopfs-JOB.*) in /tmp, /dev/shm and ssd_base, and the SSD tier directories
 * the runtime directories list. Only what exists and belongs to the job's
 * user is touched, never through a link; nothing here fails the epilog.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
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
 * SSD tier directories the agents made outside ssd_base (ssd:DIR:SIZE):
 * each runtime directory of the job lists them in "ssd-dirs", one path a
 * line. The list is the user's: only an entry named for the job and owned
 * by the job's user is removed, as anywhere else.
 */
static void remove_listed(const char *prefix, uid_t uid)
{
	size_t length = strlen(prefix);
	char path[PATH_MAX + 64], line[PATH_MAX + 2];
	struct dirent *entry;
	DIR *tmp = opendir("/tmp");

	if (!tmp)
		return;
	while ((entry = readdir(tmp))) {
		FILE *list;
		int dir_fd, fd;

		if (!is_job_name(entry->d_name, prefix, length))
			continue;
		snprintf(path, sizeof(path), "/tmp/%s", entry->d_name);
		dir_fd = nopfs_private_dir_open_for(path, uid);
		if (dir_fd < 0)
			continue;
		fd = nopfs_private_file_open_for(dir_fd, "ssd-dirs", O_RDONLY, 0, uid);
		close(dir_fd);
		list = fd >= 0 ? fdopen(fd, "r") : NULL;
		if (!list) {
			if (fd >= 0)
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
	remove_listed(prefix, uid); /* before the lists go with /tmp's entries */
	remove_in("/tmp", prefix, uid);
	remove_in("/dev/shm", prefix, uid);
	if (nopfs_config.ssd_base[0])
		remove_in(nopfs_config.ssd_base, prefix, uid);
}
