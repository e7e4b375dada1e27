/*
 * Tier specifications as users and admins write them:
 *   ram:SIZE          node memory (shared memory), SIZE as in units.h or N%
 *                     of the node's memory
 *   ssd:DIR:SIZE      a directory on node-local storage
 * several separated by commas: "ram:8G,ssd:/local/scratch:200G".
 */
#ifndef NOPFS_TIERSPEC_H
#define NOPFS_TIERSPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"

#define NOPFS_TIERS_MAX     4
#define NOPFS_TIER_PATH_MAX 1024

typedef enum nopfs_tier_kind {
	NOPFS_TIER_RAM = 0,
	NOPFS_TIER_SSD = 1,
} nopfs_tier_kind;

struct nopfs_tier_spec {
	nopfs_tier_kind kind;
	uint64_t capacity; /* bytes, when !is_percent */
	double percent;    /* share of node memory, when is_percent (ram only) */
	bool is_percent;
	char path[NOPFS_TIER_PATH_MAX]; /* ssd only */
};

struct nopfs_tier_list {
	unsigned int count;
	struct nopfs_tier_spec tier[NOPFS_TIERS_MAX];
};

/* The name of a kind: "ram" or "ssd". */
const char *nopfs_tier_kind_name(nopfs_tier_kind kind);

/*
 * Parse one tier (@text) or a comma-separated list and append to @list.
 * @require_path: ssd tiers must name a directory (the agent and plugin need
 * it; the planner accepts "ssd:SIZE"). On error, logs a message that quotes
 * the offending part and names @what (the option or key being parsed), and
 * @list is unchanged.
 */
nopfs_status nopfs_tierspec_parse(const char *text, const char *what, bool require_path,
                                  struct nopfs_tier_list *list);

#endif
