/*
 * What the interposer serves, and from where: a read-only open of a file
 * under $NOPFS_DATASET becomes an open of its staged copy ("p" + escaped
 * relative path in $NOPFS_STAGE_DIR, no round trip), else the descriptor the
 * agent passes back for an OPEN request, else (the caller's) real open of the
 * PFS path. Everything uses fixed storage: this runs inside open().
 *
 * Nothing found in the staging directory is trusted: it is used only when it
 * is this user's and private, and a staged copy only when it is a regular
 * file of this user's (stage_dir.h); anything else is read from the agent or
 * the PFS, with one warning per process.
 *
 * One connection per process, behind a mutex; a forked child drops the
 * inherited one and connects again when it needs to. After a failure of the
 * agent the channel backs off (channel.h), and until then opens go to the
 * PFS without touching the lock or the socket.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "channel.h"
#include "preload.h"
#include "preload_real.h"
#include "runtime.h"
#include "stage_dir.h"
#include "catalog/meta.h"
#include "common/clock.h"

/* The open flags served; any other flag (O_CREAT, O_DIRECTORY, O_PATH, ...) is not. */
#define SERVED_FLAGS (O_ACCMODE | O_CLOEXEC | O_NONBLOCK | O_LARGEFILE | O_NOCTTY | O_NOATIME)
/* The caller's flags given to the copy's open. */
#define KEPT_FLAGS (O_CLOEXEC | O_NONBLOCK | O_LARGEFILE | O_NOCTTY)

/* Set once, by the first open (pthread_once); read-only afterwards. */
static struct {
	bool enabled;
	bool debug;
	bool can_reopen; /* /proc/self/fd works */
	int32_t rank;
	int timeout_ms;
	int meta_wait_ms; /* tasks started before the agent (--start=early): wait for "meta" */
	char ready[NOPFS_CHANNEL_PATH_MAX + 8]; /* then: the agent's ready file, else "" */
	char dataset[PATH_MAX];                 /* absolute */
	char val_dataset[PATH_MAX];             /* absolute, "" when none (NOPFS_VAL_DATASET) */
	char socket[NOPFS_CHANNEL_PATH_MAX];    /* "" when not set */
} config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

/* The staging directory: opened by config_init(), opened again under the lock. */
static struct nopfs_stage_dir stage;
static pthread_mutex_t stage_lock = PTHREAD_MUTEX_INITIALIZER;
static bool stage_trusted; /* atomic: it was found private; false after a failure */

/* Set (atomically) once this process has warned about what it found. */
static int warned_stage_dir;
static int warned_staged_copy;
static int warned_agent;

/* The agent link: the channel only under the lock; down_until without it. */
static pthread_mutex_t link_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nopfs_channel link_channel;
static bool link_ready;
static int64_t link_down_until_ms; /* atomic: CLOCK_MONOTONIC ms */
static int agent_started;          /* atomic: its ready file was seen (config.ready set) */

/* Per-process counts (atomic). */
static struct {
	uint64_t staged;
	uint64_t agent;
	uint64_t fallback_backoff;  /* agent backing off after a failure */
	uint64_t fallback_refused;  /* ERROR reply: the agent cannot serve it */
	uint64_t fallback_failed;   /* connect, timeout, I/O, malformed reply */
	uint64_t fallback_other;    /* not configured for it, name too long, ... */
	uint64_t fallback_starting; /* the agent not ready yet (tasks started early) */
	uint64_t meta_served;       /* metadata calls into the dataset served from the metadata */
	uint64_t meta_passed;       /* and passed to the real function */
	uint64_t meta_absent;       /* of those, while no metadata was usable */
	uint64_t meta_stale;        /* of these, through a directory changed since the scan */
} counts;

/*
 * The dataset's metadata (nopfs_preload_meta()): mapped when first needed,
 * and again when the agent replaces it (its listings, then the whole); the
 * earlier mappings stay, for listings begun with them.
 */
#define META_GENERATIONS 4
static struct {
	pthread_mutex_t lock;
	int state; /* atomic: 0 not looked for, 1 mapped, -1 none (or gone) */
	struct nopfs_meta_view views[META_GENERATIONS];
	unsigned int generations;
	const struct nopfs_meta_view *current; /* atomic */
	bool waited;        /* the first look waited (up to config.meta_wait_ms) for it */
	ino_t inode;        /* atomic: of the file mapped last */
	int64_t checked_ms; /* atomic: when the file was last seen there */
} meta = { .lock = PTHREAD_MUTEX_INITIALIZER };
static int warned_meta;

static void count(uint64_t *counter)
{
	__atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
}

/* One line on stderr with write(2): no stdio locks, no malloc. */
static void say(const char *format, va_list args)
{
	char line[1024];
	int length;

	length = snprintf(line, sizeof(line), "nopfs-preload[%d]: ", (int)getpid());
	length += vsnprintf(line + length, sizeof(line) - (size_t)length - 1, format, args);
	if (length > (int)sizeof(line) - 2)
		length = (int)sizeof(line) - 2;
	line[length++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)length) < 0)
		return; /* nowhere to say it */
}

static void debug_log(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* With NOPFS_DEBUG=1, one line on stderr. */
static void debug_log(const char *format, ...)
{
	va_list args;

	if (!config.debug)
		return;
	va_start(args, format);
	say(format, args);
	va_end(args);
}

static void warn_once(int *warned, const char *format, ...) __attribute__((format(printf, 2, 3)));

/*
 * Something found where only this user's files should be: one line on stderr
 * the first time for *@warned in this process, whatever NOPFS_DEBUG says.
 */
static void warn_once(int *warned, const char *format, ...)
{
	va_list args;

	if (__atomic_exchange_n(warned, 1, __ATOMIC_RELAXED))
		return;
	va_start(args, format);
	say(format, args);
	va_end(args);
}

/* Copy @value into @out when it fits; false otherwise. */
static bool copy_string(const char *value, char *out, size_t length)
{
	size_t n = value ? strlen(value) : 0;

	if (n >= length)
		return false;
	memcpy(out, value ? value : "", n + 1);
	return true;
}

/* Open the staging directory @path, or say why it is not used. */
static void open_stage_dir(const char *path)
{
	nopfs_status status;
	const char *why;

	status = nopfs_stage_dir_open(&stage, path, &why);
	stage_trusted = status == NOPFS_OK;
	if (status == NOPFS_ERR_PERMISSION || status == NOPFS_ERR_IO)
		warn_once(&warned_stage_dir, "staging directory %s %s: not used", stage.path, why);
	else if (status != NOPFS_OK && path && *path)
		debug_log("staging directory %s: %s: not used", path, why);
}

/* The agent's ready file beside its socket @socket, into @out. */
static bool ready_path(const char *socket, char *out, size_t length)
{
	const char *slash = strrchr(socket, '/');

	if (!slash || slash == socket)
		return false;
	return snprintf(out, length, "%.*s/ready", (int)(slash - socket), socket) < (int)length;
}

/*
 * Whether the agent serves (tasks started before it, --start=early): its
 * ready file is there. Once seen, it is not looked at again.
 */
static bool agent_serves(void)
{
	struct stat st;

	if (!config.ready[0] || __atomic_load_n(&agent_started, __ATOMIC_RELAXED))
		return true;
	if (fstatat(AT_FDCWD, config.ready, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return false;
	__atomic_store_n(&agent_started, 1, __ATOMIC_RELAXED);
	debug_log("the agent serves from now on (%s)", config.ready);
	return true;
}

/* @root made absolute against the working directory into @out; false when it does not fit. */
static bool absolute_root(const char *root, char *out, size_t length)
{
	char cwd[PATH_MAX];

	if (root[0] == '/')
		return copy_string(root, out, length);
	return getcwd(cwd, sizeof(cwd)) && snprintf(out, length, "%s/%s", cwd, root) < (int)length;
}

static void config_init(void)
{
	const char *disable = getenv(NOPFS_ENV_DISABLE);
	const char *dataset = getenv(NOPFS_ENV_DATASET);
	const char *val_dataset = getenv(NOPFS_ENV_VAL_DATASET);
	const char *debug = getenv(NOPFS_ENV_DEBUG);
	bool timeout_invalid;

	config.debug = debug && !strcmp(debug, "1");
	if (disable && !strcmp(disable, "1"))
		return;
	if (!dataset || !*dataset ||
	    !absolute_root(dataset, config.dataset, sizeof(config.dataset)))
		return;
	if (!val_dataset || !*val_dataset ||
	    !absolute_root(val_dataset, config.val_dataset, sizeof(config.val_dataset)))
		config.val_dataset[0] = '\0';
	if (!copy_string(getenv(NOPFS_ENV_SOCKET), config.socket, sizeof(config.socket)))
		config.socket[0] = '\0';
	open_stage_dir(getenv(NOPFS_ENV_STAGE_DIR));
	if (!stage.path[0] && !config.socket[0])
		return;
	config.rank = nopfs_env_rank();
	config.timeout_ms = nopfs_env_timeout_ms(&timeout_invalid);
	config.meta_wait_ms = nopfs_env_meta_wait_ms();
	if (config.meta_wait_ms > 0 &&
	    !ready_path(config.socket, config.ready, sizeof(config.ready)))
		config.meta_wait_ms = 0;
	config.can_reopen = access("/proc/self/fd", X_OK) == 0;
	config.enabled = true;
	if (timeout_invalid)
		debug_log("$%s is not valid: using %d ms", NOPFS_ENV_TIMEOUT_MS, config.timeout_ms);
	if (config.val_dataset[0])
		debug_log("serving the validation set %s through the agent", config.val_dataset);
	debug_log("serving %s (staging %s, agent %s, timeout %d ms)", config.dataset,
	          stage.fd >= 0 ? stage.path : "none", config.socket[0] ? config.socket : "none",
	          config.timeout_ms);
}

bool nopfs_preload_can_reopen(void)
{
	pthread_once(&config_once, config_init);
	return config.can_reopen;
}

/*
 * The absolute form of relative @path as openat(@dirfd) would see it, into
 * @out: through the working directory or /proc/self/fd/N.
 */
static bool absolute_path(int dirfd, const char *path, char *out, size_t length)
{
	char link[64];
	ssize_t n;

	if (dirfd == AT_FDCWD) {
		if (!getcwd(out, length))
			return false;
		n = (ssize_t)strlen(out);
	} else {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
		n = readlink(link, out, length - 1);
		if (n <= 0 || out[0] != '/')
			return false;
		out[n] = '\0';
		/* A removed directory has no usable name. */
		if (n >= 10 && !strcmp(out + n - 10, " (deleted)"))
			return false;
	}
	return snprintf(out + n, length - (size_t)n, "/%s", path) < (int)(length - (size_t)n);
}

/* Whether the staging directory is usable, opening it again if the program closed it. */
static bool stage_dir_usable(void)
{
	nopfs_status status;
	const char *why;
	int cancel_state;

	if (!__atomic_load_n(&stage_trusted, __ATOMIC_RELAXED))
		return false;
	if (nopfs_stage_dir_is_current(&stage))
		return true;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
	pthread_mutex_lock(&stage_lock);
	status = nopfs_stage_dir_reopen(&stage, &why);
	if (status != NOPFS_OK)
		__atomic_store_n(&stage_trusted, false, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&stage_lock);
	pthread_setcancelstate(cancel_state, NULL);
	if (status != NOPFS_OK)
		warn_once(&warned_stage_dir, "staging directory %s %s: not used", stage.path, why);
	return status == NOPFS_OK;
}

/* The staged copy of @relative, checked, or -1. */
static int open_staged(const char *relative, int flags)
{
	char name[NAME_MAX + 1];
	nopfs_status status;
	const char *why;
	int fd;

	/* Staged copies are named for their rank: without ours, ask the agent. */
	if (config.rank < 0 || !stage_dir_usable() ||
	    !nopfs_stage_name_for_path((uint32_t)config.rank, relative, name, sizeof(name)))
		return -1;
	status = nopfs_stage_dir_openat(&stage, name, flags & KEPT_FLAGS, -1, &fd, &why);
	if (status == NOPFS_OK)
		return fd;
	if (status != NOPFS_ERR_NOT_FOUND)
		warn_once(&warned_staged_copy, "staged copy %s/%s %s: not used", stage.path, name,
		          why);
	return -1;
}

/*
 * Give the caller a description of the agent's copy of its own, with its
 * flags and offset 0: a fresh open through /proc, else the passed descriptor
 * adjusted. Takes @fd.
 */
static int own_copy(int fd, int flags)
{
	char link[64];
	int reopened;

	if (config.can_reopen) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		reopened = nopfs_preload_real_openat(AT_FDCWD, link,
		                                     O_RDONLY | (flags & KEPT_FLAGS), 0);
		if (reopened >= 0) {
			close(fd);
			return reopened;
		}
	}
	if (lseek(fd, 0, SEEK_SET) != 0 ||
	    ((flags & O_NONBLOCK) && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) ||
	    (!(flags & O_CLOEXEC) && fcntl(fd, F_SETFD, 0) != 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Check a SAMPLE reply's descriptor: a regular file of the size announced. */
static bool copy_is_sound(const struct nopfs_wire_message *reply, int fd)
{
	struct stat st;

	return fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	       (uint64_t)st.st_size == reply->u.sample.size;
}

/*
 * One OPEN request (@type: OPEN, or OPEN_VAL for the validation set) under
 * the lock: the agent's copy, or -1 with *counter set.
 */
static int ask_agent_locked(nopfs_wire_type type, const char *relative, int flags,
                            uint64_t **counter)
{
	struct nopfs_wire_message request = { .type = type };
	struct nopfs_wire_message reply;
	nopfs_status status;
	const char *why;
	int fd = -1;

	if (!link_ready) {
		link_ready = nopfs_channel_init(&link_channel, config.socket, config.rank,
		                                NOPFS_WIRE_FLAG_INTERPOSER, config.timeout_ms);
		if (!link_ready) {
			*counter = &counts.fallback_other;
			return -1;
		}
	}
	request.u.open.rank = config.rank;
	request.u.open.path = relative;
	request.u.open.path_length = (uint32_t)strlen(relative);
	status = nopfs_channel_call(&link_channel, &request, NOPFS_WIRE_SAMPLE, &reply, &fd, &why);
	if (status == NOPFS_ERR_UNSUPPORTED) {
		*counter = &counts.fallback_backoff;
		return -1;
	}
	if (status == NOPFS_ERR_PERMISSION)
		warn_once(&warned_agent, "agent at %s not used: %s", config.socket, why);
	if (status != NOPFS_OK) {
		debug_log("agent at %s failed (%s): %s", config.socket, why, relative);
		*counter = &counts.fallback_failed;
		return -1;
	}
	if (reply.type == NOPFS_WIRE_ERROR) {
		debug_log("agent cannot serve %s: %.*s", relative, (int)reply.u.error.length,
		          reply.u.error.text);
		*counter = &counts.fallback_refused;
		return -1;
	}
	if (!copy_is_sound(&reply, fd)) {
		debug_log("agent at %s sent a bad copy of %s", config.socket, relative);
		if (fd >= 0)
			close(fd);
		nopfs_channel_fail(&link_channel);
		*counter = &counts.fallback_failed;
		return -1;
	}
	fd = own_copy(fd, flags);
	if (fd < 0)
		*counter = &counts.fallback_other;
	return fd;
}

/* The agent's copy of @relative (in the dataset @type says), or -1 with *counter set. */
static int ask_agent(nopfs_wire_type type, const char *relative, int flags, uint64_t **counter)
{
	int cancel_state;
	int fd;

	if (!config.socket[0]) {
		*counter = &counts.fallback_other;
		return -1;
	}
	if (nopfs_clock_now_ms() < __atomic_load_n(&link_down_until_ms, __ATOMIC_RELAXED)) {
		*counter = &counts.fallback_backoff;
		return -1;
	}
	/* A cancelled thread must not leave the lock held. */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
	pthread_mutex_lock(&link_lock);
	fd = ask_agent_locked(type, relative, flags, counter);
	__atomic_store_n(&link_down_until_ms,
	                 link_channel.socket < 0 ? link_channel.retry_at_ms : 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&link_lock);
	pthread_setcancelstate(cancel_state, NULL);
	return fd;
}

int nopfs_preload_serve(int dirfd, const char *path, int flags)
{
	int saved_errno = errno;
	char resolved[PATH_MAX];
	char relative[PATH_MAX];
	const char *absolute = path;
	nopfs_wire_type type = NOPFS_WIRE_OPEN;
	uint64_t *counter = NULL;
	int fd;

	pthread_once(&config_once, config_init);
	if (!config.enabled || !path || !*path || (flags & ~SERVED_FLAGS) ||
	    (flags & O_ACCMODE) != O_RDONLY)
		return -1;
	if (path[0] != '/') {
		if (!absolute_path(dirfd, path, resolved, sizeof(resolved))) {
			errno = saved_errno;
			return -1;
		}
		absolute = resolved;
	}
	if (!nopfs_path_under_root(config.dataset, absolute, relative, sizeof(relative))) {
		/* the validation set: not staged, the agent keeps the node's share */
		if (!config.val_dataset[0] || !nopfs_path_under_root(config.val_dataset, absolute,
		                                                     relative, sizeof(relative))) {
			errno = saved_errno;
			return -1;
		}
		type = NOPFS_WIRE_OPEN_VAL;
	}
	fd = type == NOPFS_WIRE_OPEN ? open_staged(relative, flags) : -1;
	if (fd >= 0) {
		count(&counts.staged);
		goto out;
	}
	if (!agent_serves()) {
		count(&counts.fallback_starting);
		debug_log("reading %s from the PFS: the agent is not serving yet", absolute);
		fd = -1;
		goto out;
	}
	fd = ask_agent(type, relative, flags, &counter);
	if (fd >= 0) {
		count(&counts.agent);
		goto out;
	}
	count(counter);
	debug_log("reading %s from the PFS", absolute);
out:
	errno = saved_errno;
	return fd;
}

/* The metadata file's root must be the dataset's, trailing slashes aside. */
static bool same_root(const char *a, const char *b)
{
	size_t m = strlen(a), n = strlen(b);

	while (m > 1 && a[m - 1] == '/')
		m--;
	while (n > 1 && b[n - 1] == '/')
		n--;
	return m == n && memcmp(a, b, m) == 0;
}

/* Map and check STAGE/meta into @view: 1, or -1 (none usable). */
static int load_meta(struct nopfs_meta_view *view)
{
	nopfs_status status;
	const char *why;
	struct stat st;
	void *map, *changed;
	int fd;

	if (!stage_dir_usable())
		return -1;
	status = nopfs_stage_dir_openat(&stage, NOPFS_STAGE_META_NAME, 0, -1, &fd, &why);
	if (status != NOPFS_OK) {
		if (status != NOPFS_ERR_NOT_FOUND)
			warn_once(&warned_meta, "metadata %s/meta %s: not used", stage.path, why);
		return -1;
	}
	if (fstat(fd, &st) != 0 || st.st_size <= 0) {
		close(fd);
		return -1;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -1;
	if (nopfs_meta_view_init(view, map, (size_t)st.st_size, &why) != NOPFS_OK) {
		warn_once(&warned_meta, "metadata %s/meta %s: not used", stage.path, why);
		munmap(map, (size_t)st.st_size);
		return -1;
	}
	/* A later step of the job on another dataset: the agents scanned the first one only. */
	if (!same_root(nopfs_meta_name(view, view->header->root), config.dataset)) {
		debug_log("metadata %s/meta is for %s: not used", stage.path,
		          nopfs_meta_name(view, view->header->root));
		munmap(map, (size_t)st.st_size);
		return -1;
	}
	/* The directories changed since: mapped shared, the agent sets their bytes. */
	status = nopfs_stage_dir_openat(&stage, NOPFS_STAGE_META_CHANGED_NAME, 0,
	                                (int64_t)view->header->dir_count, &fd, &why);
	if (status != NOPFS_OK) {
		warn_once(&warned_meta, "metadata changes %s/%s %s: metadata not used", stage.path,
		          NOPFS_STAGE_META_CHANGED_NAME, why);
		munmap(map, (size_t)st.st_size);
		return -1;
	}
	changed = mmap(NULL, view->header->dir_count, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (changed == MAP_FAILED) {
		munmap(map, (size_t)st.st_size);
		return -1;
	}
	view->changed = changed;
	__atomic_store_n(&meta.inode, st.st_ino, __ATOMIC_RELAXED);
	__atomic_store_n(&meta.checked_ms, nopfs_clock_now_ms(), __ATOMIC_RELAXED);
	debug_log("metadata: %" PRIu32 " directories, %" PRIu32 " entries", view->header->dir_count,
	          view->header->entry_count);
	return 1;
}

/*
 * Map STAGE/meta as the next generation, under the lock: 1, or -1 when it
 * is not there or not usable (after a wait of up to config.meta_wait_ms for
 * the agent to put it there when the tasks started before it).
 */
static int map_meta(void)
{
	int wait_ms = meta.waited ? 0 : config.meta_wait_ms;
	int64_t deadline = nopfs_clock_now_ms() + wait_ms;
	struct nopfs_meta_view *view;
	int state;

	if (meta.generations == META_GENERATIONS)
		return -1;
	view = &meta.views[meta.generations];
	for (;;) {
		struct timespec pause = { 0, 10 * 1000 * 1000 };

		state = load_meta(view);
		if (state == 1 || !wait_ms || agent_serves() || nopfs_clock_now_ms() >= deadline ||
		    !stage_dir_usable())
			break;
		nanosleep(&pause, NULL);
	}
	meta.waited = true; /* once, at the first look */
	if (state != 1 && wait_ms)
		warn_once(&warned_meta,
		          "no usable dataset metadata in %s after %.1f s (%s): this process "
		          "lists and stats the dataset on the PFS",
		          stage.path,
		          (double)(nopfs_clock_now_ms() - (deadline - wait_ms)) / 1000.0,
		          !stage_dir_usable() ? "the staging directory is not usable"
		          : agent_serves()    ? "the agent serves without it"
		                              : "waited as long as NOPFS_META_WAIT says");
	if (state != 1)
		return -1;
	meta.generations++;
	__atomic_store_n(&meta.current, view, __ATOMIC_RELEASE);
	return 1;
}

/*
 * Whether the file mapped is still in the staging directory (the agent
 * serves); one replaced by the agent is mapped anew.
 */
static bool meta_still_there(void)
{
	int64_t now = nopfs_clock_now_ms();
	int cancel_state, state = 1;
	struct stat st;

	if (now - __atomic_load_n(&meta.checked_ms, __ATOMIC_RELAXED) < 1000)
		return true;
	if (stage_dir_usable() &&
	    fstatat(stage.fd, NOPFS_STAGE_META_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_ino == __atomic_load_n(&meta.inode, __ATOMIC_RELAXED)) {
		__atomic_store_n(&meta.checked_ms, now, __ATOMIC_RELAXED);
		return true;
	}
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
	pthread_mutex_lock(&meta.lock);
	if (__atomic_load_n(&meta.state, __ATOMIC_ACQUIRE) == 1 &&
	    __atomic_load_n(&meta.checked_ms, __ATOMIC_RELAXED) < now) {
		state = map_meta();
		if (state != 1) {
			__atomic_store_n(&meta.state, -1, __ATOMIC_RELEASE);
			debug_log("metadata: gone from %s, the PFS answers from now on",
			          stage.path);
		}
	}
	state = __atomic_load_n(&meta.state, __ATOMIC_ACQUIRE);
	pthread_mutex_unlock(&meta.lock);
	pthread_setcancelstate(cancel_state, NULL);
	return state == 1;
}

const struct nopfs_meta_view *nopfs_preload_meta(void)
{
	int state, cancel_state;

	pthread_once(&config_once, config_init);
	if (!config.enabled)
		return NULL;
	state = __atomic_load_n(&meta.state, __ATOMIC_ACQUIRE);
	if (state == 0) {
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
		pthread_mutex_lock(&meta.lock);
		state = __atomic_load_n(&meta.state, __ATOMIC_ACQUIRE);
		if (state == 0) {
			state = map_meta();
			__atomic_store_n(&meta.state, state, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&meta.lock);
		pthread_setcancelstate(cancel_state, NULL);
	}
	if (state != 1 || !meta_still_there())
		return NULL;
	return __atomic_load_n(&meta.current, __ATOMIC_ACQUIRE);
}

bool nopfs_preload_in_dataset(int dirfd, const char *path, char *rest, size_t length)
{
	char resolved[PATH_MAX];
	const char *absolute = path;
	size_t n;

	pthread_once(&config_once, config_init);
	if (!config.enabled || !path || !*path)
		return false;
	if (path[0] != '/') {
		if (!absolute_path(dirfd, path, resolved, sizeof(resolved)))
			return false;
		absolute = resolved;
	}
	n = strlen(config.dataset);
	while (n > 1 && config.dataset[n - 1] == '/')
		n--;
	if (strncmp(absolute, config.dataset, n) != 0 || (absolute[n] && absolute[n] != '/'))
		return false;
	return copy_string(absolute + n, rest, length);
}

void nopfs_preload_count_meta(enum nopfs_preload_meta_count what)
{
	count(what == NOPFS_PRELOAD_META_SERVED ? &counts.meta_served : &counts.meta_passed);
	if (what == NOPFS_PRELOAD_META_STALE)
		count(&counts.meta_stale);
	else if (what == NOPFS_PRELOAD_META_ABSENT)
		count(&counts.meta_absent);
}

void nopfs_preload_forget_after_fork(void)
{
	/* The parent may have held the lock: the child starts with a fresh one. */
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	link_lock = fresh;
	stage_lock = fresh;
	meta.lock = fresh;
	if (link_ready)
		nopfs_channel_forget(&link_channel);
	link_down_until_ms = 0;
	memset(&counts, 0, sizeof(counts));
}

/*
 * Leave this process' metadata counts in the staging directory for the
 * agent's report: ".meta-RANK-PID-NS" (0600, created exclusively, never
 * through a link), one line "nopfs-meta 2 RANK SERVED PASSED STALE ABSENT"
 * (of the PASSED, STALE went through a directory changed since the scan,
 * ABSENT were made while this process had no usable metadata).
 */
static void leave_meta_counts(void)
{
	uint64_t served = __atomic_load_n(&counts.meta_served, __ATOMIC_RELAXED);
	uint64_t passed = __atomic_load_n(&counts.meta_passed, __ATOMIC_RELAXED);
	uint64_t stale = __atomic_load_n(&counts.meta_stale, __ATOMIC_RELAXED);
	uint64_t absent = __atomic_load_n(&counts.meta_absent, __ATOMIC_RELAXED);
	struct timespec now;
	char name[96], line[128];
	int fd, length;

	if (served + passed == 0 || !stage_dir_usable())
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	snprintf(name, sizeof(name), NOPFS_STAGE_META_COUNTS_PREFIX "%" PRId32 "-%d-%ld%09ld",
	         config.rank, (int)getpid(), (long)now.tv_sec, now.tv_nsec);
	fd = nopfs_preload_real_openat(stage.fd, name,
	                               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	length = snprintf(line, sizeof(line),
	                  "nopfs-meta 2 %" PRId32 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
	                  "\n",
	                  config.rank, served, passed, stale, absent);
	if (write(fd, line, (size_t)length) != length)
		unlinkat(stage.fd, name, 0);
	close(fd);
}

void nopfs_preload_report(void)
{
	if (config.enabled)
		leave_meta_counts();
	if (!config.debug || !config.enabled)
		return;
	debug_log("served %" PRIu64 " staged, %" PRIu64
	          " by the agent; fallbacks to the PFS: %" PRIu64 " backing off, %" PRIu64
	          " refused, %" PRIu64 " agent failures, %" PRIu64 " other",
	          counts.staged, counts.agent, counts.fallback_backoff, counts.fallback_refused,
	          counts.fallback_failed, counts.fallback_other);
	if (counts.fallback_starting)
		debug_log("and %" PRIu64 " before the agent served", counts.fallback_starting);
	debug_log("metadata calls into the dataset: %" PRIu64 " served, %" PRIu64
	          " passed to the PFS (%" PRIu64
	          " of them for directories changed since the scan, %" PRIu64
	          " with no usable metadata)",
	          counts.meta_served, counts.meta_passed, counts.meta_stale, counts.meta_absent);
}
