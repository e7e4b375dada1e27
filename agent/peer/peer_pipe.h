/*
 * Two processes wiring their data planes to each other without PMIx: the
 * job's secret and the packed record through a pipe (its length, then its
 * bytes). Used by the peer tests and the peer benchmark.
 */
#ifndef NOPFS_AGENT_PEER_PIPE_H
#define NOPFS_AGENT_PEER_PIPE_H

#include <stddef.h>
#include <stdint.h>

#include "common/fdio.h"
#include "peer.h"

/* Send @plane's record; receive the record of @node and connect @plane to it. */
int pipe_send_record(int fd, struct peer_plane *plane);
int pipe_receive_record(int fd, struct peer_plane *plane, uint32_t node);

/* Send or receive the job's secret, before the planes are created. */
int pipe_send_secret(int fd, const unsigned char secret[PEER_SECRET_BYTES]);
int pipe_receive_secret(int fd, unsigned char secret[PEER_SECRET_BYTES]);

#endif
