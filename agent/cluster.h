/*
 * The agents of a job together: node 0 builds the catalog and shares it (a
 * serialized file in --share-dir, announced through PMIx, so the other nodes
 * never scan the PFS), and every agent learns every node's record (host,
 * tier capacities) before planning. Alone (no PMIx), this node plans with its
 * own capacities, the ranks it does not run living on a node without tiers.
 */
#ifndef NOPFS_AGENT_CLUSTER_H
#define NOPFS_AGENT_CLUSTER_H

#include "status.h"

struct agent;

/* Give the job its catalog: built here, or received from node 0. */
nopfs_status cluster_catalog(struct agent *agent);

/*
 * Every node's tier capacities (the layout's nodes entries, malloc'd, caller
 * frees) in *tiers, exchanging this node's record when there are peers.
 */
nopfs_status cluster_exchange(struct agent *agent, struct nopfs_node_tiers **tiers);

/* Remove what cluster_catalog() shared (node 0). */
void cluster_fini(struct agent *agent);

#endif
