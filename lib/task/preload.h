/*
 * The interposer (libnopfs_preload.so, LD_PRELOAD), internal interface
 * between its entry points (preload.c: open, fopen, ... and the guard against
 * recursion) and the serving logic (preload_serve.c: environment, staged
 * copies, the agent link, counts).
 *
 * Nothing here allocates with malloc or calls an interposed function, so it
 * may run inside any open(), even one made by the dynamic loader or malloc
 * before main().
 */
#ifndef NOPFS_PRELOAD_H
#define NOPFS_PRELOAD_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * Serve a read-only open of @path (relative to @dirfd as openat() does) with
 * the caller's @flags: a descriptor of the staged copy or of the agent's copy,
 * or -1 when the caller must do the real open (not under the dataset, flags
 * not served, not configured, or any failure: counted and, with NOPFS_DEBUG=1,
 * logged). errno is left as it was. Call only inside the guard.
 */
int nopfs_preload_serve(int dirfd, const char *path, int flags);

/* Set while this thread is inside the interposer (preload.c). */
extern __thread int nopfs_preload_busy __attribute__((tls_model("initial-exec")));

struct nopfs_meta_view;

/*
 * The dataset's metadata the agent put in the staging directory (mapped and
 * checked on first use), or NULL: not configured, none there, not valid, or
 * gone since (the agent stopped: it is looked for at most once a second).
 */
const struct nopfs_meta_view *nopfs_preload_meta(void);

/*
 * When @path (relative to @dirfd as the *at() calls take it) names the
 * dataset root or something under it, lexically, the rest of the path after
 * the root ("" for the root itself, else starting with "/") into @rest.
 */
bool nopfs_preload_in_dataset(int dirfd, const char *path, char *rest, size_t length);

/* Metadata calls into the dataset: served from the metadata, or passed to the PFS. */
enum nopfs_preload_meta_count {
	NOPFS_PRELOAD_META_SERVED,
	NOPFS_PRELOAD_META_PASSED,
	NOPFS_PRELOAD_META_STALE,  /* passed: a directory changed since the scan */
	NOPFS_PRELOAD_META_ABSENT, /* passed: this process has no usable metadata */
};
void nopfs_preload_count_meta(enum nopfs_preload_meta_count what);

/* Whether /proc/self/fd can reopen descriptors (freopen is served through it). */
bool nopfs_preload_can_reopen(void);

/* In a child just forked: drop the inherited agent connection and counts. */
void nopfs_preload_forget_after_fork(void);

/* At exit: with NOPFS_DEBUG=1, print this process' counts on stderr. */
void nopfs_preload_report(void);

#endif
