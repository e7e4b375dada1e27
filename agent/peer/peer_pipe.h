/*
 * Two processes wiring their data planes to each other without PMIx: the
 * packed record through a pipe (its length, then its bytes). Used by the peer
 * tests and the peer benchmark.
 */
#ifndef NOPFS_AGENT_PEER_PIPE_H
#define NOPFS_AGENT_PEER_PIPE_H

#include <stddef.h>
#include <stdint.h>

#include "peer.h"

/* Write or read exactly @length bytes (EINTR retried); 0, or -1 on error or EOF. */
int pipe_write_all(int fd, const void *data, size_t length);
int pipe_read_all(int fd, void *data, size_t length);

/* Send @plane's record; receive the record of @node and connect @plane to it. */
int pipe_send_record(int fd, struct peer_plane *plane);
int pipe_receive_record(int fd, struct peer_plane *plane, uint32_t node);

#endif
