/*
 * Bootstrap of a job's agents through PMIx: the agents are the tasks of
 * their own step, one per node, so the PMIx rank is the node index. Each
 * agent publishes one small record (host, tier capacities, measured rates,
 * its data-plane address and keys) and gets everyone's after a collecting
 * fence. Every fence has a timeout: an agent that cannot complete it exits
 * cleanly and its node's tasks read the PFS; it never hangs the job.
 */
#ifndef NOPFS_AGENT_BOOTSTRAP_H
#define NOPFS_AGENT_BOOTSTRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

struct bootstrap {
	bool active;            /* PMIx initialized */
	bool broken;            /* a fence timed out: PMIx is left alone */
	uint32_t node;          /* our rank in the agent step */
	uint32_t nodes;         /* agents in the step */
	char nspace[256];       /* the step's PMIx namespace */
	unsigned int exchanges; /* so far: each publishes under its own key */
};

/* Whether this process was started with a PMIx server to talk to. */
bool bootstrap_available(void);

/* Initialize PMIx and learn our node index and the number of nodes. */
nopfs_status bootstrap_init(struct bootstrap *bootstrap);

/*
 * Publish @record (@length bytes) and collect every node's: on success
 * records[n] (malloc'd, caller frees each and the array) with lengths[n], for
 * n in 0..nodes-1. NOPFS_ERR_TIMEOUT when the fence does not complete within
 * @timeout_s seconds. Every node must make the same exchanges in the same
 * order: the k-th of each node's is matched with the k-th of the others'.
 */
nopfs_status bootstrap_exchange(struct bootstrap *bootstrap, const void *record, size_t length,
                                int timeout_s, void ***records, size_t **lengths);

/* A barrier of all agents, with a timeout (NOPFS_ERR_TIMEOUT). */
nopfs_status bootstrap_fence(struct bootstrap *bootstrap, int timeout_s);

/* Finalize PMIx (nothing when not active). */
void bootstrap_fini(struct bootstrap *bootstrap);

#endif
