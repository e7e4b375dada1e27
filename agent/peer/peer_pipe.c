/* The data plane's secret and record through a pipe, for the peer tests and benchmark. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "peer_pipe.h"

int pipe_send_record(int fd, struct peer_plane *plane)
{
	void *packed;
	size_t length;
	int rc;

	if (peer_record_pack(peer_plane_local_record(plane), &packed, &length) != NOPFS_OK)
		return -1;
	rc = nopfs_write_all(fd, &length, sizeof(length)) || nopfs_write_all(fd, packed, length);
	free(packed);
	return rc ? -1 : 0;
}

int pipe_receive_record(int fd, struct peer_plane *plane, uint32_t node)
{
	struct peer_record record;
	unsigned char packed[4096];
	size_t length;

	if (nopfs_read_exact(fd, &length, sizeof(length)) || length > sizeof(packed) ||
	    nopfs_read_exact(fd, packed, length) ||
	    peer_record_unpack(packed, length, &record) != NOPFS_OK)
		return -1;
	return peer_plane_connect(plane, node, &record) == NOPFS_OK ? 0 : -1;
}

int pipe_send_secret(int fd, const unsigned char secret[PEER_SECRET_BYTES])
{
	return nopfs_write_all(fd, secret, PEER_SECRET_BYTES) ? -1 : 0;
}

int pipe_receive_secret(int fd, unsigned char secret[PEER_SECRET_BYTES])
{
	return nopfs_read_exact(fd, secret, PEER_SECRET_BYTES) ? -1 : 0;
}
