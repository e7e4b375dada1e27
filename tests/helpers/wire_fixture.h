/* Test helper: message buffers and valid messages for the wire tests. */
#ifndef NOPFS_TEST_WIRE_FIXTURE_H
#define NOPFS_TEST_WIRE_FIXTURE_H

#include <stdint.h>
#include <string.h>

#include "task/wire.h"

#define BUFFER_SIZE (NOPFS_WIRE_HEADER_SIZE + NOPFS_WIRE_MAX_PAYLOAD)

static uint8_t buffer[BUFFER_SIZE];
static uint8_t received[BUFFER_SIZE];

/* Encode a valid message of @type into buffer; its length. */
static inline size_t valid_message(nopfs_wire_type type)
{
	struct nopfs_wire_message m = { .type = type, .request_id = 5 };

	m.u.open.path = "cat/1.jpg";
	m.u.open.path_length = 9;
	if (type == NOPFS_WIRE_ERROR) {
		m.u.error.status = NOPFS_ERR_IO;
		m.u.error.text = "why";
		m.u.error.length = 3;
	}
	if (type == NOPFS_WIRE_STATS_TEXT) {
		m.u.stats_text.text = "{}";
		m.u.stats_text.length = 2;
	}
	return nopfs_wire_encode(&m, buffer);
}

/* Overwrite 4 bytes of buffer at @at with @value, little-endian. */
static inline void put32(size_t at, uint32_t value)
{
	for (int i = 0; i < 4; i++)
		buffer[at + i] = (uint8_t)(value >> (8 * i));
}

#endif
