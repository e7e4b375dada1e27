/* Rank-to-node layouts the way Slurm distributes tasks. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "common/log.h"

static nopfs_status layout_alloc(uint32_t nodes, uint32_t world_size, struct nopfs_layout **out)
{
	struct nopfs_layout *layout = calloc(1, sizeof(*layout));

	if (!layout)
		goto out_nomem;
	layout->nodes = nodes;
	layout->world_size = world_size;
	layout->node_of_rank = calloc(world_size ? world_size : 1, sizeof(uint32_t));
	if (!layout->node_of_rank)
		goto out_free_layout;
	layout->tasks_on_node = calloc(nodes, sizeof(uint32_t));
	if (!layout->tasks_on_node)
		goto out_free_ranks;
	*out = layout;
	return NOPFS_OK;

out_free_ranks:
	free(layout->node_of_rank);
out_free_layout:
	free(layout);
out_nomem:
	nopfs_error("no memory for a layout of %" PRIu32 " ranks", world_size);
	return NOPFS_ERR_NOMEM;
}

void nopfs_layout_destroy(struct nopfs_layout *layout)
{
	if (!layout)
		return;
	free(layout->tasks_on_node);
	free(layout->node_of_rank);
	free(layout);
}

nopfs_status nopfs_layout_create(uint32_t nodes, const uint32_t *tasks_per_node,
                                 nopfs_distribution distribution, uint32_t plane_size,
                                 struct nopfs_layout **out)
{
	struct nopfs_layout *layout;
	uint64_t world = 0;
	uint32_t *left;
	uint32_t rank = 0;
	nopfs_status status;

	if (nodes == 0) {
		nopfs_error("a layout needs at least one node");
		return NOPFS_ERR_RANGE;
	}
	for (uint32_t n = 0; n < nodes; n++)
		world += tasks_per_node[n];
	if (world == 0 || world > UINT32_MAX) {
		nopfs_error("%" PRIu64 " tasks in all: need 1 .. %" PRIu32, world, UINT32_MAX);
		return NOPFS_ERR_RANGE;
	}
	if (distribution == NOPFS_DISTRIBUTION_PLANE && plane_size == 0) {
		nopfs_error("plane distribution needs a plane size of at least 1");
		return NOPFS_ERR_RANGE;
	}
	if (distribution == NOPFS_DISTRIBUTION_BLOCK)
		plane_size = UINT32_MAX;
	else if (distribution == NOPFS_DISTRIBUTION_CYCLIC)
		plane_size = 1;

	status = layout_alloc(nodes, (uint32_t)world, &layout);
	if (status != NOPFS_OK)
		return status;
	left = malloc(nodes * sizeof(*left));
	if (!left) {
		nopfs_error("no memory for a layout of %" PRIu32 " nodes", nodes);
		nopfs_layout_destroy(layout);
		return NOPFS_ERR_NOMEM;
	}
	memcpy(left, tasks_per_node, nodes * sizeof(*left));

	/* Deal blocks of plane_size ranks to the nodes that still have room. */
	while (rank < world) {
		for (uint32_t n = 0; n < nodes && rank < world; n++) {
			for (uint32_t i = 0; i < plane_size && left[n] > 0; i++) {
				layout->node_of_rank[rank++] = n;
				left[n]--;
			}
		}
	}
	memcpy(layout->tasks_on_node, tasks_per_node, nodes * sizeof(uint32_t));
	free(left);
	*out = layout;
	return NOPFS_OK;
}

nopfs_status nopfs_layout_from_map(uint32_t nodes, uint32_t world_size,
                                   const uint32_t *node_of_rank, struct nopfs_layout **out)
{
	struct nopfs_layout *layout;
	nopfs_status status;

	if (nodes == 0 || world_size == 0) {
		nopfs_error("a layout needs at least one node and one rank");
		return NOPFS_ERR_RANGE;
	}
	for (uint32_t r = 0; r < world_size; r++) {
		if (node_of_rank[r] >= nodes) {
			nopfs_error("rank %" PRIu32 " is on node %" PRIu32
			            ", but there are only %" PRIu32 " nodes",
			            r, node_of_rank[r], nodes);
			return NOPFS_ERR_RANGE;
		}
	}
	status = layout_alloc(nodes, world_size, &layout);
	if (status != NOPFS_OK)
		return status;
	memcpy(layout->node_of_rank, node_of_rank, world_size * sizeof(uint32_t));
	for (uint32_t r = 0; r < world_size; r++)
		layout->tasks_on_node[node_of_rank[r]]++;
	*out = layout;
	return NOPFS_OK;
}

/* Parse one decimal uint32 at *cursor, advancing it. */
static bool parse_count(const char **cursor, uint32_t *value)
{
	char *end;
	unsigned long parsed;

	if (**cursor < '0' || **cursor > '9')
		return false;
	errno = 0;
	parsed = strtoul(*cursor, &end, 10);
	if (errno || parsed > UINT32_MAX)
		return false;
	*value = (uint32_t)parsed;
	*cursor = end;
	return true;
}

nopfs_status nopfs_layout_parse_tasks(const char *text, uint32_t **counts, uint32_t *nodes)
{
	uint32_t *list = NULL;
	uint64_t total = 0;
	const char *cursor = text;

	/* Two passes: count the nodes, then fill. */
	for (int pass = 0; pass < 2; pass++) {
		uint64_t node = 0;

		cursor = text;
		while (*cursor) {
			uint32_t tasks, repeat = 1;

			if (!parse_count(&cursor, &tasks))
				goto out_malformed;
			if (cursor[0] == '(' && cursor[1] == 'x') {
				cursor += 2;
				if (!parse_count(&cursor, &repeat) || *cursor != ')' || repeat == 0)
					goto out_malformed;
				cursor++;
			}
			if (*cursor == ',' && cursor[1] != '\0')
				cursor++;
			else if (*cursor != '\0')
				goto out_malformed;
			if (pass == 1)
				for (uint32_t i = 0; i < repeat; i++)
					list[node + i] = tasks;
			node += repeat;
			if (node > UINT32_MAX)
				goto out_malformed;
		}
		if (node == 0)
			goto out_malformed;
		if (pass == 0) {
			total = node;
			list = malloc(total * sizeof(*list));
			if (!list) {
				nopfs_error("no memory for %" PRIu64 " task counts", total);
				return NOPFS_ERR_NOMEM;
			}
		}
	}
	*counts = list;
	*nodes = (uint32_t)total;
	return NOPFS_OK;

out_malformed:
	free(list);
	nopfs_error("task count list '%s' is malformed: expected counts like '2,2,1' or '2(x3),1'",
	            text);
	return NOPFS_ERR_FORMAT;
}

nopfs_status nopfs_layout_parse_distribution(const char *text, nopfs_distribution *distribution,
                                             uint32_t *plane_size)
{
	size_t length = strcspn(text, ":,");
	static const char plane[] = "plane=";

	if (length == strlen("block") && strncmp(text, "block", length) == 0) {
		*distribution = NOPFS_DISTRIBUTION_BLOCK;
		*plane_size = 0;
		return NOPFS_OK;
	}
	if (length == strlen("cyclic") && strncmp(text, "cyclic", length) == 0) {
		*distribution = NOPFS_DISTRIBUTION_CYCLIC;
		*plane_size = 0;
		return NOPFS_OK;
	}
	if (strncmp(text, plane, strlen(plane)) == 0) {
		const char *cursor = text + strlen(plane);
		uint32_t size;

		if (parse_count(&cursor, &size) && size > 0 &&
		    (*cursor == '\0' || *cursor == ':' || *cursor == ',')) {
			*distribution = NOPFS_DISTRIBUTION_PLANE;
			*plane_size = size;
			return NOPFS_OK;
		}
	}
	nopfs_error("distribution '%s' is not supported: use block, cyclic or plane=N", text);
	return NOPFS_ERR_INVALID;
}
