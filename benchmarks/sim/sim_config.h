/*
 * What-if configurations: a cluster and a dataset in a small JSON file.
 *
 *   {
 *     "name": "ImageNet-1k on 16 nodes",          optional
 *     "nodes": 16,                                 N, one worker each
 *     "compute_MBps": 64,                          c per worker
 *     "preprocess_MBps": 200,                      beta per thread; optional, 0 = none
 *     "network_MBps": 24000,                       b_c
 *     "pfs_MBps": {"1": 330, "4": 1540},           t(readers), or one number
 *     "pfs_client_limit_MBps": 0,                  b_fs per node; optional
 *     "staging": {"capacity_GB": 5, "threads": 8, "read_MBps": 111000},
 *     "tiers": [{"name": "ram", "capacity_GB": 120, "threads": 4,
 *                "read_MBps": 85000, "write_MBps": 85000}, ...],   optional
 *     "dataset": {"name": "ImageNet-1k", "samples": 1281167,
 *                 "mean_MB": 0.1077, "stddev_MB": 0.1, "size_seed": 1},
 *     "epochs": 10, "batch": 32, "seed": 0, "drop_last": false,
 *     "policies": ["nopfs", "nopfs-paper", "staging-buffer"]     optional, default all
 *   }
 *
 * MB and GB are decimal. A rate is a number (at the tier's thread count) or
 * {"threads": MBps, ...}; write_MBps defaults to read_MBps. Tiers may be
 * listed in any order: they are sorted fastest first. Every error names the
 * file and the key.
 */
#ifndef NOPFS_SIM_CONFIG_H
#define NOPFS_SIM_CONFIG_H

#include <stdint.h>

#include "sim.h"

struct sim_config {
	char name[SIM_TITLE_MAX];
	struct sim_workload workload;
	struct sim_system system;
	uint32_t policies;
};

/* Read and check @path. On success *config is filled. */
nopfs_status sim_config_load(const char *path, struct sim_config *config);

/* The same from @text; @origin names it in messages. */
nopfs_status sim_config_parse(const char *text, const char *origin, struct sim_config *config);

#endif
