/*
 * What this agent exposes to the others: its regions (RAM arena and state
 * array) registered with UCX, and its record (the worker's address and the
 * regions' packed keys). A plane without one-sided reads registers nothing:
 * its record carries the address alone.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "peer_internal.h"

/* Register @bytes at @base for remote reads; nothing when either is zero. */
static nopfs_status region_map(struct peer_plane *plane, void *base, size_t bytes, const char *what,
                               ucp_mem_h *memh)
{
	ucp_mem_map_params_t params = {
		.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
		              UCP_MEM_MAP_PARAM_FIELD_PROT,
		.address = base,
		.length = bytes,
		.prot = UCP_MEM_MAP_PROT_LOCAL_READ | UCP_MEM_MAP_PROT_LOCAL_WRITE |
		        UCP_MEM_MAP_PROT_REMOTE_READ,
	};
	ucs_status_t status;

	*memh = NULL;
	if (!base || bytes == 0 || !plane->one_sided)
		return NOPFS_OK;
	status = ucp_mem_map(plane->context, &params, memh);
	if (status != UCS_OK) {
		nopfs_error("node %u: cannot register its %s (%zu bytes) with UCX: %s",
		            plane->config.node, what, bytes, ucs_status_string(status));
		*memh = NULL;
		return NOPFS_ERR_IO;
	}
	return NOPFS_OK;
}

void peer_regions_unmap(struct peer_plane *plane)
{
	if (plane->state_memh)
		ucp_mem_unmap(plane->context, plane->state_memh);
	if (plane->ram_memh)
		ucp_mem_unmap(plane->context, plane->ram_memh);
	plane->state_memh = plane->ram_memh = NULL;
}

nopfs_status peer_regions_map(struct peer_plane *plane)
{
	const struct peer_config *config = &plane->config;
	nopfs_status status;

	status = region_map(plane, config->ram_base, config->ram_bytes, "RAM arena",
	                    &plane->ram_memh);
	if (status != NOPFS_OK)
		return status;
	status = region_map(plane, config->state_base, config->state_bytes, "state array",
	                    &plane->state_memh);
	if (status != NOPFS_OK)
		peer_regions_unmap(plane);
	return status;
}

/* Packed remote keys, or none for a region not exposed (@memh NULL). */
static nopfs_status key_pack(struct peer_plane *plane, ucp_mem_h memh, const char *what, void **key,
                             size_t *length)
{
	ucs_status_t status;

	*key = NULL;
	*length = 0;
	if (!memh)
		return NOPFS_OK;
	status = ucp_rkey_pack(plane->context, memh, key, length);
	if (status != UCS_OK) {
		nopfs_error("node %u: cannot pack the remote key of its %s: %s", plane->config.node,
		            what, ucs_status_string(status));
		return NOPFS_ERR_IO;
	}
	return NOPFS_OK;
}

/* This agent's record: address and keys copied into one plane-owned blob. */
nopfs_status peer_record_build(struct peer_plane *plane)
{
	struct peer_record *record = &plane->record;
	ucp_address_t *address;
	void *ram_key, *state_key;
	size_t address_length, ram_key_length, state_key_length;
	nopfs_status result = NOPFS_ERR_IO;
	ucs_status_t status;
	char *blobs;

	status = ucp_worker_get_address(plane->worker, &address, &address_length);
	if (status != UCS_OK) {
		nopfs_error("node %u: no address for the UCX worker: %s", plane->config.node,
		            ucs_status_string(status));
		return NOPFS_ERR_IO;
	}
	if (key_pack(plane, plane->ram_memh, "RAM arena", &ram_key, &ram_key_length) != NOPFS_OK)
		goto out_release_address;
	if (key_pack(plane, plane->state_memh, "state array", &state_key, &state_key_length) !=
	    NOPFS_OK)
		goto out_release_ram_key;
	blobs = malloc(address_length + ram_key_length + state_key_length);
	if (!blobs) {
		nopfs_error("node %u: no memory for its record", plane->config.node);
		result = NOPFS_ERR_NOMEM;
		goto out_release_state_key;
	}
	*record = (struct peer_record){
		.address = blobs,
		.address_length = address_length,
		.ram_key = ram_key ? blobs + address_length : NULL,
		.ram_key_length = ram_key_length,
		.state_key = state_key ? blobs + address_length + ram_key_length : NULL,
		.state_key_length = state_key_length,
		.ram_base = plane->ram_memh ? (uintptr_t)plane->config.ram_base : 0,
		.state_base = plane->state_memh ? (uintptr_t)plane->config.state_base : 0,
		.ram_bytes = plane->ram_memh ? plane->config.ram_bytes : 0,
		.state_bytes = plane->state_memh ? plane->config.state_bytes : 0,
		.stream = plane->stream_record_length ? plane->stream_record : NULL,
		.stream_length = plane->stream_record_length,
	};
	memcpy(blobs, address, address_length);
	if (ram_key)
		memcpy(blobs + address_length, ram_key, ram_key_length);
	if (state_key)
		memcpy(blobs + address_length + ram_key_length, state_key, state_key_length);
	plane->record_blobs = blobs;
	result = NOPFS_OK;

out_release_state_key:
	if (state_key)
		ucp_rkey_buffer_release(state_key);
out_release_ram_key:
	if (ram_key)
		ucp_rkey_buffer_release(ram_key);
out_release_address:
	ucp_worker_release_address(plane->worker, address);
	return result;
}
