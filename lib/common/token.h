/*
 * A job's token: 32 random hexadecimal digits that name its agents' private
 * places (/tmp/nopfs-JOB.TOKEN, ...), so that nobody can create them first.
 * The plugin makes it and hands it to the agents in their environment
 * (NOPFS_AGENT_TOKEN), which only the job's user can read.
 */
#ifndef NOPFS_TOKEN_H
#define NOPFS_TOKEN_H

#include <stdbool.h>

#include "status.h"

#define NOPFS_TOKEN_LENGTH    32
#define NOPFS_ENV_AGENT_TOKEN "NOPFS_AGENT_TOKEN"

/* A new token into @token (NOPFS_TOKEN_LENGTH + 1 bytes), from getrandom(2). */
nopfs_status nopfs_token_make(char *token);

/* Is @text a token (NOPFS_TOKEN_LENGTH lowercase hexadecimal digits)? */
bool nopfs_token_is_valid(const char *text);

#endif
