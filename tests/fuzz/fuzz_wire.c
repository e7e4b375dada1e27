/*
 * The task wire protocol as the agent reads it from a task (and a task from
 * the agent): a header, then a decode. A message that decodes must encode
 * again to a message that decodes to the same fields.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "task/wire.h"

static uint8_t again[NOPFS_WIRE_HEADER_SIZE + NOPFS_WIRE_MAX_PAYLOAD];

/* The string of @m (its type's), or NULL and 0. */
static const char *text_of(const struct nopfs_wire_message *m, uint32_t *length)
{
	switch (m->type) {
	case NOPFS_WIRE_OPEN:
	case NOPFS_WIRE_OPEN_VAL:
		*length = m->u.open.path_length;
		return m->u.open.path;
	case NOPFS_WIRE_STATS_TEXT:
		*length = m->u.stats_text.length;
		return m->u.stats_text.text;
	case NOPFS_WIRE_ERROR:
		*length = m->u.error.length;
		return m->u.error.text;
	default:
		*length = 0;
		return NULL;
	}
}

static void check_round_trip(const struct nopfs_wire_message *message)
{
	struct nopfs_wire_message second;
	const char *why, *a, *b;
	uint32_t a_length, b_length;
	size_t length = nopfs_wire_encode(message, again);

	if (length == 0)
		return; /* decodable but not encodable: an empty path, say */
	if (nopfs_wire_decode(again, length, &second, &why) != NOPFS_OK)
		abort();
	a = text_of(message, &a_length);
	b = text_of(&second, &b_length);
	if (second.type != message->type || second.request_id != message->request_id ||
	    a_length != b_length || (a_length && memcmp(a, b, a_length) != 0))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nopfs_wire_message message;
	uint32_t payload_length;
	const char *why = NULL;

	if (size < NOPFS_WIRE_HEADER_SIZE)
		return 0;
	if (nopfs_wire_check_header(data, &payload_length, &why) != NOPFS_OK) {
		if (!why)
			abort(); /* every refusal says why */
		return 0;
	}
	if (payload_length > NOPFS_WIRE_MAX_PAYLOAD)
		abort();
	if (size > NOPFS_WIRE_HEADER_SIZE + (size_t)payload_length)
		size = NOPFS_WIRE_HEADER_SIZE + (size_t)payload_length;
	if (nopfs_wire_decode(data, size, &message, &why) == NOPFS_OK)
		check_round_trip(&message);
	else if (!why)
		abort();
	return 0;
}
