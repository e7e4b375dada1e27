/*
 * slurmd, job epilog (root, every node of the job, after all steps): remove
 * what the job's agents left when they could not clean up themselves (a
 * SIGKILL, a crash): their processes, /tmp/nopfs-JOB*, /dev/shm/nopfs-JOB
 * and the SSD tier directory under ssd_base. Only what exists and belongs
 * to the job's user is touched; nothing here fails the epilog.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

static void remove_in(const char *directory, const char *name, uid_t uid)
{
	int fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return;
	remove_tree_at(fd, name, uid, 0);
	close(fd);
}

static void kill_agent(pid_t pid, void *arg)
{
	int *killed = arg;

	if (kill(pid, SIGKILL) == 0)
		(*killed)++;
}

void epilog_clean(spank_t sp)
{
	char name[64];
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
	snprintf(name, sizeof(name), "nopfs-%u", job);
	remove_in("/tmp", name, uid);
	remove_in("/dev/shm", name, uid);
	if (nopfs_config.ssd_base[0])
		remove_in(nopfs_config.ssd_base, name, uid);
	snprintf(name, sizeof(name), "nopfs-%u.log", job);
	remove_in("/tmp", name, uid);
	snprintf(name, sizeof(name), "nopfs-%u.srun", job);
	remove_in("/tmp", name, uid);
}
