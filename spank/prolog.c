/*
 * slurmd, job prolog (root, every node of the job, before its first step):
 * with cache_base, the job user's directory CACHE_BASE/UID, where the agents
 * of jobs run with --nopfs-keep=yes keep their caches (their --keep-dir).
 * Only root makes entries in CACHE_BASE (it checks that), so no other user
 * can make a user's directory first. Nothing here fails the prolog: a
 * problem is logged, and the agents, which check the directory again, then
 * keep nothing.
 */
#include <pwd.h>
#include <stdio.h>
#include <unistd.h>

#include "cache_limits.h"
#include "plugin.h"

/* The job user's primary group, from Slurm or else from the user database. */
static int job_gid(spank_t sp, uid_t uid, gid_t *gid)
{
	struct passwd entry, *found = NULL;
	char buffer[4096];

	if (spank_get_item(sp, S_JOB_GID, gid) == ESPANK_SUCCESS)
		return 0;
	if (getpwuid_r(uid, &entry, buffer, sizeof(buffer), &found) != 0 || !found)
		return -1;
	*gid = found->pw_gid;
	return 0;
}

void prolog_prepare(spank_t sp)
{
	char why[256];
	uint32_t job = 0;
	uid_t uid = 0;
	gid_t gid = 0;
	int base_fd;

	if (nopfs_config.cache_base[0] == '\0')
		return;
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS || job_gid(sp, uid, &gid) != 0) {
		slurm_error(PLUGIN_NAME ": job prolog: cannot tell the job's user and group: no "
		                        "directory made under plugstack.conf cache_base=%s",
		            nopfs_config.cache_base);
		return;
	}
	base_fd = cache_base_open(nopfs_config.cache_base, why, sizeof(why));
	if (base_fd < 0) {
		slurm_error(PLUGIN_NAME ": job %u: plugstack.conf cache_base=%s %s: no cache is "
		                        "kept on this node",
		            job, nopfs_config.cache_base, why);
		return;
	}
	switch (cache_user_dir_make(base_fd, uid, gid, why, sizeof(why))) {
	case 1:
		slurm_info(PLUGIN_NAME ": job %u: made %s/%u, uid %u's directory of kept caches",
		           job, nopfs_config.cache_base, (unsigned int)uid, (unsigned int)uid);
		break;
	case 0:
		break;
	default:
		slurm_error(PLUGIN_NAME ": job %u: %s/%u %s: left as it is; the agents of uid %u "
		                        "keep no cache on this node",
		            job, nopfs_config.cache_base, (unsigned int)uid, why,
		            (unsigned int)uid);
	}
	close(base_fd);
}
