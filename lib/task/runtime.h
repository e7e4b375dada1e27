/*
 * The runtime contract between a node's agent and the tasks it serves: the
 * environment variables, the names in the staging directory, the staging
 * index's header and the agent's exit status for "start the step again".
 * See docs/task-contract.md.
 */
#ifndef NOPFS_RUNTIME_H
#define NOPFS_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

#define NOPFS_ENV_SOCKET      "NOPFS_SOCKET"
#define NOPFS_ENV_STAGE_DIR   "NOPFS_STAGE_DIR"
#define NOPFS_ENV_DATASET     "NOPFS_DATASET"
#define NOPFS_ENV_VAL_DATASET "NOPFS_VAL_DATASET"
#define NOPFS_ENV_TIMEOUT_MS  "NOPFS_TIMEOUT_MS"
#define NOPFS_ENV_RANK        "NOPFS_RANK"
#define NOPFS_ENV_DISABLE     "NOPFS_DISABLE"
#define NOPFS_ENV_DEBUG       "NOPFS_DEBUG"
#define NOPFS_ENV_META_WAIT   "NOPFS_META_WAIT"
#define NOPFS_ENV_PLAN        "NOPFS_PLAN"

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
 * $NOPFS_PLAN (set by the plugin): the generation of the agents' plan this
 * task's step was planned under, 0..UINT32_MAX-1; NOPFS_WIRE_NO_PLAN when
 * unset or not valid (a step the agents did not plan for, or no plugin).
 */
uint32_t nopfs_env_plan(void);

/*
 * $NOPFS_TIMEOUT_MS when it is a number of milliseconds in 1..3600000, else
 * NOPFS_DEFAULT_TIMEOUT_MS; *invalid (may be NULL) is set true when the
 * variable is set but not valid, so the caller can say so.
 */
int nopfs_env_timeout_ms(bool *invalid);

/*
 * $NOPFS_META_WAIT, seconds (0..3600, set by the plugin when the tasks start
 * before their agent serves): how long the first metadata call into the
 * dataset waits for the agent's listings, in milliseconds; 0 when unset or
 * not valid.
 */
int nopfs_env_meta_wait_ms(void);

/*
 * The agent's "ready" file beside its socket: "PID GENERATION\n". Tasks use
 * the agent only when the process listening on the socket has that pid.
 */
#define NOPFS_RUNTIME_READY_NAME "ready"

/* File names inside the staging directory. */
#define NOPFS_STAGE_INDEX_NAME    "index"
#define NOPFS_STAGE_PATH_PREFIX   'p'
#define NOPFS_STAGE_SAMPLE_PREFIX 'i'
/* The dataset's metadata (catalog/meta.h), written by the agent. */
#define NOPFS_STAGE_META_NAME "meta"
/* One byte per directory of it, set by the agent when the directory changed since the scan. */
#define NOPFS_STAGE_META_CHANGED_NAME "meta-changed"
/*
 * A task process' metadata counts, left at its exit:
 * ".meta-RANK-PID-NS" holding "nopfs-meta 2 RANK SERVED PASSED STALE ABSENT\n".
 */
#define NOPFS_STAGE_META_COUNTS_PREFIX ".meta-"

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
