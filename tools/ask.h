/* Asking a running agent for its statistics, as the tools do (nopfs-report --live, nopfs-stage). */
#ifndef NOPFS_TOOLS_ASK_H
#define NOPFS_TOOLS_ASK_H

#include <jansson.h>

/*
 * The statistics (the node report so far, JSON) of the agent listening on
 * @socket_path, waiting at most @timeout_ms for its answer; NULL with *why
 * (static text) when it cannot be asked or does not answer. The channel
 * checks that the process behind the socket runs as this user, and the agent
 * that the caller does.
 */
json_t *tool_ask_stats(const char *socket_path, unsigned int timeout_ms, const char **why);

#endif
