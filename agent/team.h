/*
 * The agents of a job together: node 0 builds the catalog and shares it (a
 * serialized file in --share-dir, announced through PMIx, so the other nodes
 * never scan the PFS), and every agent learns every node's record (host,
 * tier capacities) before planning. Alone (no PMIx), this node plans with its
 * own capacities, the ranks it does not run living on a node without tiers.
 */
#ifndef NOPFS_AGENT_TEAM_H
#define NOPFS_AGENT_TEAM_H

#include "catalog/catalog.h"
#include "common/status.h"

struct agent;
struct agent_options;
struct nopfs_catalog;

/*
 * Give the job its catalog: built here, or received from node 0. The
 * dataset's metadata (catalog/meta.h) comes the same way, scanned by node 0
 * only, in two parts: its listings, shared in an exchange of their own and
 * put in the staging directory for the tasks at once ("meta", 0600, written
 * atomically), then the files' stats, with which node 0 builds the catalog
 * and which replace "meta" on every node. A node that cannot have it logs a
 * warning and its tasks ask the PFS. team_withdraw_metadata() removes it
 * when the agent stops serving.
 */
nopfs_status team_catalog(struct agent *agent);

/*
 * With --val-dataset: the validation set's catalog, built by node 0 (or a
 * node alone) and shared as SHARE_DIR/NAME.val.catalog for the others, into
 * agent->val (val.h) with every node's share of it.
 */
nopfs_status team_val_catalog(struct agent *agent);

void team_withdraw_metadata(struct agent *agent);

/*
 * Snapshot semantics: the agent that scanned the metadata (and one without
 * a data plane, which hears no notice) looks at its directories again
 * every AGENT_META_CHECK_MS (one statx each) and marks
 * those changed since the scan in STAGE/meta-changed, where the tasks see
 * them (and ask the PFS for paths through them), and tells the other agents
 * (AGENT_NOTICE_META_CHANGED), which mark them too. Called by the main
 * thread at every tick; team_metadata_notice() takes a peer's notice.
 */
void team_check_metadata(struct agent *agent);
void team_metadata_notice(struct agent *agent, uint32_t sender, const char *payload);

/*
 * Every node's tier capacities (the layout's nodes entries, malloc'd, caller
 * frees) in *tiers, exchanging this node's record when there are peers.
 */
nopfs_status team_exchange(struct agent *agent, struct nopfs_node_tiers **tiers);

/*
 * With --keep-dir: what each node holds from earlier jobs (keep_held()), the
 * layout's nodes entries in *held (malloc'd, each entry too, NULL where
 * nothing; caller frees), exchanged when there are peers.
 */
nopfs_status team_exchange_held(struct agent *agent, uint8_t ***held);

/*
 * With peers: create the data plane over this node's tiers, exchange the
 * agents' addresses and keys, and connect to every other agent.
 */
nopfs_status team_connect_peers(struct agent *agent);

/*
 * Read @sample from the node keeping its primary copy into @buffer (a
 * source_peer_read_fn; @arg is the agent): a one-sided read from a RAM tier
 * (state byte, then bytes), a request for any other tier. false when there is
 * no data plane, nobody else keeps it, it is not there yet, or the peer failed
 * or was too slow: the PFS then.
 */
bool team_read_from_peer(void *arg, nopfs_sample_id sample, void *buffer);

/* Close the data plane (before the tiers go). */
void team_disconnect_peers(struct agent *agent);

/*
 * Another plan (replan.c). Notices the agents send one another: a plan's
 * step description (AGENT_NOTICE_PLAN), the record of an agent that has
 * taken a plan on (AGENT_NOTICE_RECORD: its RAM tier's new keys), and where
 * node 0 shared the catalog of a plan's dataset (AGENT_NOTICE_CATALOG).
 */
enum agent_notice_kind {
	AGENT_NOTICE_PLAN = 1,
	AGENT_NOTICE_RECORD = 2,
	AGENT_NOTICE_CATALOG = 3,      /* node 0's shared catalog of a plan ("": none) */
	AGENT_NOTICE_META_CHANGED = 4, /* directories changed since node 0's scan ("D,D,...") */
};

/*
 * Node 0, another dataset for plan @generation: build its catalog, share it
 * in --share-dir and tell the others where (or that there is none, on
 * failure: they give up on the plan).
 */
nopfs_status team_share_plan_catalog(struct agent *agent, const struct agent_options *options,
                                     uint32_t generation, struct nopfs_catalog **catalog);

/* Load the catalog node 0 shared at @path. */
nopfs_status team_load_catalog(const char *path, struct nopfs_catalog **catalog);

/* Tell the other agents about plan @generation (@description: its step). */
void team_plan_notify(struct agent *agent, uint32_t generation, const char *description);

/*
 * How long peers' reads of this node's RAM tier may still be in flight once
 * they can no longer start (their deadline for the largest sample).
 */
unsigned int team_peer_grace_ms(struct agent *agent);

/*
 * This node has taken plan agent->generation on: expose its RAM tier, match
 * requests against the plan, and send its record to the other agents.
 */
void team_expose_plan(struct agent *agent);

/* Node @node has taken plan @generation on, with the record @packed. */
void team_apply_record(struct agent *agent, uint32_t node, uint32_t generation, const void *packed,
                       size_t length);

/* Remove what team_catalog() shared (node 0). */
void team_fini(struct agent *agent);

#endif
