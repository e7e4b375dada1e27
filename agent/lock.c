/* One agent per job and node: a directory lock and an abstract socket name. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lock.h"
#include "options.h"
#include "common/log.h"

/* "\0nopfs-agent-UID-JOB": abstract (no file), one per network namespace. */
static socklen_t job_name(const struct agent_options *options, struct sockaddr_un *address)
{
	int length;

	memset(address, 0, sizeof(*address));
	address->sun_family = AF_UNIX;
	length = snprintf(address->sun_path + 1, sizeof(address->sun_path) - 1,
	                  "nopfs-agent-%ld-%s", (long)geteuid(), options->job_id);
	if (length < 0 || (size_t)length >= sizeof(address->sun_path) - 1)
		length = (int)sizeof(address->sun_path) - 2;
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)length);
}

/* Whose is the name @address that someone holds: its uid, or -1 if unknown. */
static long holder_uid(const struct sockaddr_un *address, socklen_t length)
{
	struct ucred peer;
	socklen_t size = sizeof(peer);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	long uid = -1;

	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)address, length) == 0 &&
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) == 0)
		uid = (long)peer.uid;
	close(fd);
	return uid;
}

static nopfs_status lock_name(struct agent_lock *lock, const struct agent_options *options)
{
	struct sockaddr_un address;
	socklen_t length = job_name(options, &address);
	long uid;

	lock->socket_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lock->socket_fd < 0) {
		nopfs_error("cannot make the job's lock socket: %m");
		return nopfs_status_from_errno(errno);
	}
	if (bind(lock->socket_fd, (struct sockaddr *)&address, length) == 0 &&
	    listen(lock->socket_fd, 1) == 0)
		return NOPFS_OK;
	if (errno != EADDRINUSE) {
		nopfs_error("cannot take the job's lock socket: %m");
		return nopfs_status_from_errno(errno);
	}
	close(lock->socket_fd);
	lock->socket_fd = -1;
	uid = holder_uid(&address, length);
	if (uid == (long)geteuid()) {
		nopfs_error("another agent of job %s runs on this node: exiting", options->job_id);
		return NOPFS_ERR_DUPLICATE;
	}
	/* not ours: someone squats the name; the directory lock still holds */
	nopfs_warning("the lock name of job %s is held by uid %ld, not by this user: ignored",
	              options->job_id, uid);
	return NOPFS_OK;
}

nopfs_status agent_lock(struct agent_lock *lock, const struct agent_options *options)
{
	nopfs_status status;

	lock->socket_fd = -1;
	lock->directory_fd =
	        open(options->runtime_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (lock->directory_fd < 0) {
		nopfs_error("--runtime-dir '%s': %m", options->runtime_dir);
		return nopfs_status_from_errno(errno);
	}
	if (flock(lock->directory_fd, LOCK_EX | LOCK_NB) != 0) {
		nopfs_error(errno == EWOULDBLOCK ? "another agent uses --runtime-dir '%s': exiting"
		                                 : "cannot lock --runtime-dir '%s': %m",
		            options->runtime_dir);
		close(lock->directory_fd);
		lock->directory_fd = -1;
		return NOPFS_ERR_DUPLICATE;
	}
	status = lock_name(lock, options);
	if (status != NOPFS_OK)
		agent_unlock(lock);
	return status;
}

void agent_unlock(struct agent_lock *lock)
{
	if (lock->socket_fd >= 0)
		close(lock->socket_fd);
	if (lock->directory_fd >= 0)
		close(lock->directory_fd);
	lock->socket_fd = lock->directory_fd = -1;
}
