/*
 * The runtime contract between a node's agent and the tasks it serves.
 *
 * Environment of the tasks (set by the SPANK plugin, or by hand when the
 * agent runs standalone):
 *   NOPFS_SOCKET       the agent's Unix socket
 *   NOPFS_STAGE_DIR    the staging directory (tmpfs, 0700, the job user's)
 *   NOPFS_DATASET      the dataset root, as the training script names it
 *   NOPFS_TIMEOUT_MS   how long a task waits for the agent per request
 *                      (default 10000); then it reads the PFS
 *   NOPFS_RANK         the task's rank (else RANK, else SLURM_PROCID)
 *   NOPFS_DISABLE      set to 1 to turn the interposer off
 *   NOPFS_DEBUG        set to 1 for the interposer's debug log on stderr
 *
 * Staging: the agent stages each rank's next samples, in that rank's access
 * order, as complete files in the staging directory, named for the rank they
 * are staged for: "p<rank>.<escaped relative path>" ('%' is written "%25" and
 * '/' "%2F"), which the interposer computes from the path it is asked to
 * open, or "i<rank>.<index>" (decimal rank and sample index) when the path
 * name would not fit NAME_MAX or the dataset has no paths. Per-rank names let
 * the agent tell which rank read a copy (an open does not say who opened it),
 * and keep two ranks that need the same sample from sharing one copy. A task
 * that does not know its rank skips this fast path. A file appears under its
 * name only once complete (written under a temporary name, then linked). A
 * task opens it read-only; the agent sees the open (inotify) and removes the
 * name, so the memory is freed when the task closes it. Anything not staged
 * is asked of the agent over the socket (see wire.h); if that fails or times
 * out, the task reads the PFS itself. A C API process instead takes its
 * rank's samples from a staging ring it maps (ring.h).
 *
 * The agent also publishes "index" in the staging directory for the C API:
 * a header, then for every sample its size (u64) and label (i64), then
 * count + 1 path offsets (u64) into the blob of relative paths that follows
 * (not NUL-terminated; empty for synthetic datasets), so the API can read a
 * sample from the PFS when the agent cannot serve it. Precisely, in the
 * node's byte order: struct nopfs_stage_index_header; count sizes (u64);
 * count labels (i64); count + 1 offsets (u64: offsets[0] = 0, path i is
 * blob[offsets[i], offsets[i + 1]), offsets[count] = blob length); the blob.
 * The file size is exactly that. It is written under a temporary name and
 * renamed into place before tasks connect, and never modified afterwards
 * (tasks map it: truncating it in place would crash them).
 */
#ifndef NOPFS_RUNTIME_H
#define NOPFS_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

#define NOPFS_ENV_SOCKET     "NOPFS_SOCKET"
#define NOPFS_ENV_STAGE_DIR  "NOPFS_STAGE_DIR"
#define NOPFS_ENV_DATASET    "NOPFS_DATASET"
#define NOPFS_ENV_TIMEOUT_MS "NOPFS_TIMEOUT_MS"
#define NOPFS_ENV_RANK       "NOPFS_RANK"
#define NOPFS_ENV_DISABLE    "NOPFS_DISABLE"
#define NOPFS_ENV_DEBUG      "NOPFS_DEBUG"

#define NOPFS_DEFAULT_TIMEOUT_MS 10000

/*
 * The agent's exit status when its step should be started again: the step's
 * first PMIx fence did not complete (Slurm 22.05's slurmstepd can reject a
 * peer's credential while it runs as the job's user for a task launch, and
 * that fence then never completes). The SPANK plugin starts the agent step
 * again, a few times at most, when it ends with this status; tasks wait for
 * an agent that is missing for up to 25 s in a row (spank/tasks.c).
 */
#define NOPFS_AGENT_EXIT_RETRY 75

/*
 * The task's rank: $NOPFS_RANK, else $RANK, else $SLURM_PROCID (the first
 * that is set), -1 when none is set or it is not a number in 0..INT32_MAX.
 */
int32_t nopfs_env_rank(void);

/*
 * $NOPFS_TIMEOUT_MS when it is a number of milliseconds in 1..3600000, else
 * NOPFS_DEFAULT_TIMEOUT_MS; *invalid (may be NULL) is set true when the
 * variable is set but not valid, so the caller can say so.
 */
int nopfs_env_timeout_ms(bool *invalid);

/* File names inside the staging directory. */
#define NOPFS_STAGE_INDEX_NAME    "index"
#define NOPFS_STAGE_PATH_PREFIX   'p'
#define NOPFS_STAGE_SAMPLE_PREFIX 'i'

/*
 * Write the name of the sample at @relative_path staged for @rank
 * ("p<rank>." + escaped path) into @name of @length bytes. false when it does
 * not fit (NAME_MAX is 255): such samples are served over the socket only.
 */
bool nopfs_stage_name_for_path(uint32_t rank, const char *relative_path, char *name, size_t length);

/* Write the name of sample @index staged for @rank ("i<rank>.<index>") into @name. */
void nopfs_stage_name_for_index(uint32_t rank, uint64_t index, char *name, size_t length);

/*
 * Parse a staged name back: *rank, and *index for an "i" name or the
 * unescaped relative path into @path for a "p" name. Returns 'i', 'p', or 0
 * for anything else.
 */
char nopfs_stage_name_parse(const char *name, uint32_t *rank, uint64_t *index, char *path,
                            size_t length);

/*
 * The path of @path relative to @root when @path names something under it
 * (lexically: "." and "//" are normalized, ".." that leaves the root is not
 * under it), into @relative. false otherwise, or when it does not fit. Both
 * must be absolute, or both relative to the same directory. Trailing slashes
 * of @root do not matter; a @path that ends in "/", "/." or "/.." names a
 * directory, never a staged file: false. The root itself is not under it.
 */
bool nopfs_path_under_root(const char *root, const char *path, char *relative, size_t length);

/* The header of the staging "index" file (layout above). */
struct nopfs_stage_index_header {
	uint32_t magic; /* NOPFS_STAGE_INDEX_MAGIC */
	uint32_t version;
	uint64_t count;
};
#define NOPFS_STAGE_INDEX_MAGIC   0x4e504649u /* "IFPN" */
#define NOPFS_STAGE_INDEX_VERSION 1

#endif
