/* Reading samples from the parallel filesystem: checked, 64-bit, counted. */
#ifndef NOPFS_AGENT_PFS_H
#define NOPFS_AGENT_PFS_H

#include <stdint.h>

#include "catalog/catalog.h"
#include "stats.h"
#include "common/status.h"

/*
 * Read all of sample @index into @buffer (at least its catalog size). The
 * file must still have its catalog size: a file that changed is an error
 * naming it (the catalog is stale), as is any read error. Bytes read are
 * counted in stats->pfs_read.
 */
nopfs_status pfs_read_sample(const struct nopfs_catalog *catalog, nopfs_sample_id index,
                             void *buffer, struct agent_stats *stats);

/* The absolute path of sample @index into @path. */
nopfs_status pfs_sample_path(const struct nopfs_catalog *catalog, nopfs_sample_id index, char *path,
                             size_t length);

#endif
