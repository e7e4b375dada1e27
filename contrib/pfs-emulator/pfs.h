/*
 * nopfs-pfs internals: the state shared by its files.
 *
 *   main.c     options, main()
 *   mount.c    the FUSE session: mount, serve, unmount; the operation table
 *   clients.c  clients (network namespaces), pacing, the statistics file
 *   paths.c    paths beneath SOURCE, owners of new nodes
 *   files.c    file contents: open, create, read, write, truncate, ...
 *   tree.c     names and metadata: getattr, readdir, mkdir, rename, ...
 */
#ifndef NOPFS_PFS_H
#define NOPFS_PFS_H

#ifdef NOPFS_HAVE_FUSE_312
/* The loop configuration with max_threads (the older one caps at 10). */
#define FUSE_USE_VERSION 312
#else
#define FUSE_USE_VERSION 35
#endif

#include <fuse.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <time.h>

#define PROGRAM "nopfs-pfs"
/* A client counts as reading if it read within this many seconds. */
#define PFS_ACTIVE_WINDOW 0.5
/*
 * A client's reads may run this many seconds of transfer ahead of its
 * share (the depth of its token bucket): the FUSE round trip between two
 * reads of one reader, slow on a loaded machine, is not time lost to it.
 */
#define PFS_READ_BURST       0.025
#define PFS_MAX_CURVE_POINTS 64
/* FUSE worker threads: concurrent requests (each may sleep) */
#define PFS_MAX_THREADS 256

/*
 * libfuse 3.17 lets a filesystem allow shared mmap of direct_io files
 * (kernel 6.6+); older ones cannot ask for it (see mount.c).
 */
#ifdef FUSE_CAP_DIRECT_IO_ALLOW_MMAP
#define PFS_CAP_DIRECT_IO_ALLOW_MMAP FUSE_CAP_DIRECT_IO_ALLOW_MMAP
#else
#define PFS_CAP_DIRECT_IO_ALLOW_MMAP 0
#endif

struct pfs_curve_point {
	double clients; /* gamma */
	double rate;    /* aggregate bytes/s at gamma clients */
};

/* One network namespace's counters and pacing state. */
struct pfs_client {
	struct pfs_client *next;
	uint64_t netns; /* inode of /proc/PID/ns/net; 0 if unreadable */
	uint64_t opens;
	uint64_t reads;
	uint64_t bytes; /* read */
	uint64_t writes;
	uint64_t bytes_written;
	uint64_t errors;
	/* Metadata operations (the FUSE calls a metadata server answers). */
	uint64_t getattrs; /* lookups and stats */
	uint64_t opendirs;
	uint64_t readdirs;
	uint64_t readlinks;
	uint64_t accesses;
	double busy_until; /* pacing: when this client's earlier reads are done */
	double last_read;  /* monotonic seconds; -inf before the first read */
};

struct pfs_state {
	/* Options: set by main() before mounting, constant afterwards. */
	const char *source;
	const char *mountpoint;
	int root_fd; /* SOURCE: every path is looked up beneath it */
	bool read_only;
	struct pfs_curve_point curve[PFS_MAX_CURVE_POINTS];
	int curve_points; /* 0: unlimited */
	double latency;   /* seconds, every open, read and write */
	double noise_fraction;
	double noise;               /* seconds, extra for noise_fraction of the reads */
	double metadata_latency;    /* seconds, every metadata operation */
	double metadata_rate;       /* operations/s the one metadata server answers; 0: unlimited */
	double metadata_busy_until; /* the server's queue (under lock) */
	uint64_t seed;
	char **fail_patterns;
	int fail_count;
	const char *stats_path;

	pthread_mutex_t lock; /* clients, rng */
	struct pfs_client *clients;
	uint64_t rng;

	pthread_t stats_thread;
	bool stats_running;
	bool stats_stop;
	pthread_mutex_t stats_lock;
	pthread_cond_t stats_cond;
};

extern struct pfs_state pfs;

/* clients.c */

/* Sleep until monotonic time @deadline (seconds); no-op if it has passed. */
void pfs_sleep_until(double deadline);
/* The calling process's network namespace (0 if unknown): the client. */
uint64_t pfs_caller_netns(void);
/* Whether --fail matches @path (as FUSE gives it, with a leading /). */
bool pfs_path_fails(const char *path);
/* Count an open (or create) by client @netns; an error if @failed. */
void pfs_count_open(uint64_t netns, bool failed);
/*
 * Count a read of @bytes by client @netns started at @now and return the
 * monotonic time at which it may complete (bandwidth share, latency, noise).
 */
double pfs_admit_read(uint64_t netns, size_t bytes, double now);
enum pfs_metadata_op {
	PFS_META_GETATTR,
	PFS_META_OPENDIR,
	PFS_META_READDIR,
	PFS_META_READLINK,
	PFS_META_ACCESS,
};
/*
 * Count metadata operation @op by the caller's client and wait until it may
 * complete: in line behind every client's earlier ones at --metadata-rate,
 * plus --metadata-latency.
 */
void pfs_metadata(enum pfs_metadata_op op);
/* Count a write of @bytes; returns when it may complete (latency only). */
double pfs_admit_write(uint64_t netns, size_t bytes, double now);
/* Start the thread that rewrites --stats every second (no-op without it). */
void pfs_stats_start(void);
/* Stop that thread and write the file one last time. */
void pfs_stats_stop(void);
/* Free the client records (after unmounting). */
void pfs_clients_free(void);

/* paths.c */

/* @path relative to SOURCE: no leading slashes, "." for the root. */
const char *pfs_relative(const char *path);
/*
 * Open @path (beneath SOURCE, never through a symbolic link out of it, the
 * last component not followed) with open(2) @flags and @mode.
 * Returns the fd or -errno.
 */
int pfs_open_beneath(const char *path, int flags, mode_t mode);
/*
 * The directory that holds @path: *dir_fd (an O_PATH fd to pass to
 * pfs_parent_close) and *name, the last component (pointing into @path).
 * Returns 0 or -errno.
 */
int pfs_parent_open(const char *path, int *dir_fd, const char **name);
void pfs_parent_close(int dir_fd);
/*
 * Give node @name in @dir_fd, just created by this daemon, to the caller:
 * its uid, and its gid unless the directory is set-group-ID (then the node
 * keeps the directory's group, as a local filesystem does). Returns 0 or
 * -errno.
 */
int pfs_give_to_caller(int dir_fd, const char *name);

/* files.c */

int pfs_open(const char *path, struct fuse_file_info *fi);
int pfs_create(const char *path, mode_t mode, struct fuse_file_info *fi);
int pfs_read(const char *path, char *buf, size_t size, off_t offset, struct fuse_file_info *fi);
int pfs_write(const char *path, const char *buf, size_t size, off_t offset,
              struct fuse_file_info *fi);
int pfs_truncate(const char *path, off_t size, struct fuse_file_info *fi);
int pfs_fallocate(const char *path, int mode, off_t offset, off_t length,
                  struct fuse_file_info *fi);
int pfs_flush(const char *path, struct fuse_file_info *fi);
int pfs_fsync(const char *path, int datasync, struct fuse_file_info *fi);
int pfs_release(const char *path, struct fuse_file_info *fi);

/* tree.c */

int pfs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi);
int pfs_access(const char *path, int mask);
int pfs_opendir(const char *path, struct fuse_file_info *fi);
int pfs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t offset,
                struct fuse_file_info *fi, enum fuse_readdir_flags flags);
int pfs_releasedir(const char *path, struct fuse_file_info *fi);
int pfs_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi);
int pfs_readlink(const char *path, char *buf, size_t size);
int pfs_mknod(const char *path, mode_t mode, dev_t rdev);
int pfs_mkdir(const char *path, mode_t mode);
int pfs_symlink(const char *target, const char *path);
int pfs_link(const char *from, const char *to);
int pfs_unlink(const char *path);
int pfs_rmdir(const char *path);
int pfs_rename(const char *from, const char *to, unsigned int flags);
int pfs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi);
int pfs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi);
int pfs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi);
int pfs_statfs(const char *path, struct statvfs *st);

/* mount.c */

/* Mount, serve until unmounted or signalled, unmount; returns exit status. */
int pfs_mount_run(int argc, char **argv);

#endif
