/*
 * The shared PFS (see sim_engine.h): gamma is the number of nodes reading
 * when a read is issued; a node's reads queue on its share t(gamma) / gamma.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>

#include "common/log.h"
#include "sim_engine.h"

nopfs_status sim_pfs_init(struct sim_pfs *pfs, const struct nopfs_model *model, uint32_t nodes,
                          unsigned int threads)
{
	*pfs = (struct sim_pfs){ .model = model, .room = (size_t)nodes * (threads ? threads : 1) };
	pfs->busy = calloc(nodes, sizeof(*pfs->busy));
	pfs->heap = malloc(pfs->room * sizeof(*pfs->heap));
	if (!pfs->busy || !pfs->heap) {
		sim_pfs_fini(pfs);
		nopfs_error("no memory for the PFS readers of %" PRIu32 " nodes", nodes);
		return NOPFS_ERR_NOMEM;
	}
	return NOPFS_OK;
}

void sim_pfs_fini(struct sim_pfs *pfs)
{
	free(pfs->busy);
	free(pfs->heap);
	pfs->busy = NULL;
	pfs->heap = NULL;
}

/* Forget reads that ended by @now; a node's latest read ends its busy period. */
static void expire(struct sim_pfs *pfs, double now)
{
	while (pfs->count && pfs->heap[0].end <= now) {
		struct sim_pfs_read top = pfs->heap[0];
		size_t at = 0;

		if (pfs->busy[top.node] == top.end)
			pfs->nodes_busy--;
		pfs->heap[0] = pfs->heap[--pfs->count];
		for (;;) {
			size_t left = 2 * at + 1, right = left + 1, least = at;

			if (left < pfs->count && pfs->heap[left].end < pfs->heap[least].end)
				least = left;
			if (right < pfs->count && pfs->heap[right].end < pfs->heap[least].end)
				least = right;
			if (least == at)
				break;
			struct sim_pfs_read swap = pfs->heap[at];

			pfs->heap[at] = pfs->heap[least];
			pfs->heap[least] = swap;
			at = least;
		}
	}
}

double sim_pfs_gamma(struct sim_pfs *pfs, uint32_t node, double now)
{
	expire(pfs, now);
	return (double)pfs->nodes_busy + (pfs->busy[node] > now ? 0 : 1);
}

double sim_pfs_read(struct sim_pfs *pfs, uint32_t node, double now, uint64_t size, double gamma,
                    double *begin)
{
	double seconds = nopfs_model_fetch_pfs(pfs->model, size, gamma);
	bool idle = !(pfs->busy[node] > now);
	size_t at;

	*begin = idle ? now : pfs->busy[node];
	pfs->busy[node] = *begin + seconds;
	pfs->nodes_busy += idle;
	pfs->bytes += size;
	/*
	 * Every read is issued right after sim_pfs_gamma() at the same time,
	 * which drops the reads that ended, and a thread issues its next read
	 * only after its last one ended: at most one entry per thread, so the
	 * heap should never grow.
	 */
	if (pfs->count == pfs->room) {
		struct sim_pfs_read *grown = realloc(pfs->heap, 2 * pfs->room * sizeof(*grown));

		if (!grown) {
			pfs->failed = true;
			return seconds;
		}
		pfs->heap = grown;
		pfs->room *= 2;
	}
	at = pfs->count++;
	pfs->heap[at] = (struct sim_pfs_read){ .end = pfs->busy[node], .node = node };
	while (at > 0 && pfs->heap[at].end < pfs->heap[(at - 1) / 2].end) {
		struct sim_pfs_read swap = pfs->heap[at];

		pfs->heap[at] = pfs->heap[(at - 1) / 2];
		pfs->heap[(at - 1) / 2] = swap;
		at = (at - 1) / 2;
	}
	return seconds;
}
