/* RDMA device detection (libibverbs) for the agent's report. */
#ifndef NOPFS_AGENT_RDMA_H
#define NOPFS_AGENT_RDMA_H

#include <jansson.h>

/*
 * {"devices": [{"name", "ports": [{"port", "state", "link_layer"}]}],
 *  "active_ports": n}: the verbs devices of this node and their ports. No
 * device (or no verbs provider) gives an empty list; a device that cannot be
 * opened is left out with a warning. NULL only without memory.
 */
json_t *rdma_devices_json(void);

#endif
