/* Which RDMA devices and ports this node has, for the report. */
#include <infiniband/verbs.h>
#include <jansson.h>

#include "common/log.h"
#include "rdma.h"

static const char *port_state_name(enum ibv_port_state state)
{
	switch (state) {
	case IBV_PORT_DOWN:
		return "down";
	case IBV_PORT_INIT:
		return "init";
	case IBV_PORT_ARMED:
		return "armed";
	case IBV_PORT_ACTIVE:
		return "active";
	case IBV_PORT_ACTIVE_DEFER:
		return "active_defer";
	default:
		return "unknown";
	}
}

static const char *link_layer_name(uint8_t link_layer)
{
	switch (link_layer) {
	case IBV_LINK_LAYER_INFINIBAND:
		return "infiniband";
	case IBV_LINK_LAYER_ETHERNET:
		return "ethernet";
	default:
		return "unspecified";
	}
}

/* One device's ports, or NULL (logged) when the device cannot be opened. */
static json_t *device_json(struct ibv_device *device, unsigned int *active)
{
	struct ibv_context *context = ibv_open_device(device);
	struct ibv_device_attr attributes;
	json_t *ports;

	if (!context) {
		nopfs_warning("rdma: cannot open device '%s': %m", ibv_get_device_name(device));
		return NULL;
	}
	if (ibv_query_device(context, &attributes) != 0) {
		nopfs_warning("rdma: cannot query device '%s': %m", ibv_get_device_name(device));
		ibv_close_device(context);
		return NULL;
	}
	ports = json_array();
	for (uint8_t p = 1; ports && p <= attributes.phys_port_cnt; p++) {
		struct ibv_port_attr port;

		if (ibv_query_port(context, p, &port) != 0) {
			nopfs_warning("rdma: cannot query port %u of '%s'", p,
			              ibv_get_device_name(device));
			continue;
		}
		if (port.state == IBV_PORT_ACTIVE)
			(*active)++;
		json_array_append_new(ports, json_pack("{s:i, s:s, s:s}", "port", p, "state",
		                                       port_state_name(port.state), "link_layer",
		                                       link_layer_name(port.link_layer)));
	}
	ibv_close_device(context);
	return json_pack("{s:s, s:o*}", "name", ibv_get_device_name(device), "ports", ports);
}

json_t *rdma_devices_json(void)
{
	int count = 0;
	struct ibv_device **list = ibv_get_device_list(&count);
	json_t *devices = json_array();
	unsigned int active = 0;

	/* No verbs provider or no device: an empty list, UCX then uses TCP. */
	for (int d = 0; list && devices && d < count; d++) {
		json_t *device = device_json(list[d], &active);

		if (device)
			json_array_append_new(devices, device);
	}
	if (list)
		ibv_free_device_list(list);
	return json_pack("{s:o*, s:I}", "devices", devices, "active_ports", (json_int_t)active);
}
