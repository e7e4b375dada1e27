/*
 * nopfs-pfs FUSE session: the operation table, the connection's settings,
 * mount, serve with a pool of threads, unmount.
 */
#include "pfs.h"

#include <stdio.h>

/*
 * Caching. Every "node" of a test cluster is a process of the same kernel,
 * so anything the page cache served would bypass the emulation: all files
 * are direct_io, their read(2) and write(2) reach the daemon every time.
 *
 * mmap. On a direct_io file the kernel allows private mappings only, and
 * fills them from the page cache, i.e. with reads through the daemon
 * (counted and paced) when a page is first touched; it drops the file's
 * unmapped cached pages at each mmap. That is what exec(2), the dynamic
 * loader, dlopen(3) and LD_PRELOAD use, so programs and libraries run from
 * the mount. Shared mappings (MAP_SHARED, e.g. Python's mmap module, numpy
 * memmap) fail with ENODEV unless libfuse can ask for
 * FUSE_CAP_DIRECT_IO_ALLOW_MMAP (libfuse 3.17, kernel 6.6), which libfuse
 * 3.14 cannot. Which opens will be mapped is unknown at open time, so no
 * file is opened without direct_io.
 *
 * Operations on an open file or directory use its handle, not its path
 * (nullpath_ok: libfuse need not build one). A file unlinked while open is
 * renamed to .fuse_hidden* until its last close, as libfuse does by default
 * (like NFS's .nfs* files): with hard_remove, fstat(2) of such a file would
 * fail with ESTALE (the kernel asks for its attributes without the handle,
 * and libfuse has no path left for it).
 */
static void *pfs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	cfg->use_ino = 1;
	cfg->direct_io = 1;
	cfg->nullpath_ok = 1;
	cfg->entry_timeout = 1.0;
	cfg->attr_timeout = 1.0;
	cfg->negative_timeout = 0;
	/*
	 * The kernel clears set-user-ID and set-group-ID on truncate and
	 * chown; writes clear them in files.c (direct_io writes do not ask).
	 */
	conn->want &= ~(unsigned int)FUSE_CAP_HANDLE_KILLPRIV;
	if ((conn->capable & PFS_CAP_DIRECT_IO_ALLOW_MMAP) != 0)
		conn->want |= PFS_CAP_DIRECT_IO_ALLOW_MMAP;
	pfs_stats_start();
	return NULL;
}

static void pfs_destroy(void *private_data)
{
	pfs_stats_stop();
}

static const struct fuse_operations pfs_operations = {
	.init = pfs_init,
	.destroy = pfs_destroy,
	.getattr = pfs_getattr,
	.access = pfs_access,
	.readlink = pfs_readlink,
	.opendir = pfs_opendir,
	.readdir = pfs_readdir,
	.releasedir = pfs_releasedir,
	.fsyncdir = pfs_fsyncdir,
	.mknod = pfs_mknod,
	.mkdir = pfs_mkdir,
	.symlink = pfs_symlink,
	.unlink = pfs_unlink,
	.rmdir = pfs_rmdir,
	.rename = pfs_rename,
	.link = pfs_link,
	.chmod = pfs_chmod,
	.chown = pfs_chown,
	.truncate = pfs_truncate,
	.utimens = pfs_utimens,
	.open = pfs_open,
	.create = pfs_create,
	.read = pfs_read,
	.write = pfs_write,
	.fallocate = pfs_fallocate,
	.flush = pfs_flush,
	.fsync = pfs_fsync,
	.release = pfs_release,
	.statfs = pfs_statfs,
};

/*
 * Serve with a pool of threads (readers sleep in the read handler, so one
 * thread per concurrent request). SIGTERM, SIGINT and SIGHUP (libfuse's
 * handlers) or an external unmount end it: 0.
 */
int pfs_mount_run(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
#if FUSE_USE_VERSION >= 312
	struct fuse_loop_config *loop;
#else
	struct fuse_loop_config loop_v1 = { .clone_fd = 0, .max_idle_threads = PFS_MAX_THREADS };
	struct fuse_loop_config *loop = &loop_v1;
#endif
	struct fuse *fuse;
	struct fuse_session *session;
	int rc = 1;

	fuse = fuse_new(&args, &pfs_operations, sizeof(pfs_operations), NULL);
	if (fuse == NULL) {
		fprintf(stderr, PROGRAM ": -o: bad FUSE options '%s'\n", argv[argc - 1]);
		rc = 2;
		goto out_args;
	}
	if (fuse_mount(fuse, pfs.mountpoint) != 0) {
		fprintf(stderr, PROGRAM ": cannot mount on MOUNTPOINT '%s'\n", pfs.mountpoint);
		goto out_fuse;
	}
	session = fuse_get_session(fuse);
	if (fuse_set_signal_handlers(session) != 0)
		goto out_mount;
#if FUSE_USE_VERSION >= 312
	loop = fuse_loop_cfg_create();
	if (loop == NULL)
		goto out_signals;
	fuse_loop_cfg_set_max_threads(loop, PFS_MAX_THREADS);
	fuse_loop_cfg_set_idle_threads(loop, 16);
#endif
	/* 0: unmounted; a signal number: stopped by that signal; < 0: error */
	rc = fuse_loop_mt(fuse, loop) >= 0 ? 0 : 1;
#if FUSE_USE_VERSION >= 312
	fuse_loop_cfg_destroy(loop);
out_signals:
#endif
	fuse_remove_signal_handlers(session);
out_mount:
	fuse_unmount(fuse);
out_fuse:
	fuse_destroy(fuse);
out_args:
	fuse_opt_free_args(&args);
	return rc;
}
