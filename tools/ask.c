/* Asking a running agent for its statistics over its socket. */
#include "config.h"

#include "task/channel.h"
#include "ask.h"

json_t *tool_ask_stats(const char *socket_path, unsigned int timeout_ms, const char **why)
{
	static struct nopfs_channel channel; /* 64 KiB of buffer */
	struct nopfs_wire_message request = { .type = NOPFS_WIRE_STATS }, reply;
	json_t *status;

	if (!nopfs_channel_init(&channel, socket_path, -1, 0, timeout_ms)) {
		*why = "socket path too long";
		return NULL;
	}
	if (nopfs_channel_connect(&channel, why) != NOPFS_OK)
		return NULL;
	if (nopfs_channel_call(&channel, &request, NOPFS_WIRE_STATS_TEXT, &reply, NULL, why) !=
	    NOPFS_OK) {
		nopfs_channel_close(&channel);
		return NULL;
	}
	if (reply.type == NOPFS_WIRE_ERROR) {
		*why = "the agent refused to give its statistics";
		nopfs_channel_close(&channel);
		return NULL;
	}
	status = json_loadb((const char *)reply.u.stats_text.text, reply.u.stats_text.length, 0,
	                    NULL);
	nopfs_channel_close(&channel);
	if (!status)
		*why = "the agent's statistics are not JSON";
	return status;
}
