/*
 * The record an agent publishes through PMIx (its worker address, RAM tier
 * and state array and their keys, where its stream path listens) as one self-describing
 * little-endian buffer: packing and unpacking. Layout: docs/protocols.md.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "peer_internal.h"

#define RECORD_MAGIC    0x5250504eu /* "NPPR" read as little endian */
#define RECORD_VERSION  2
#define RECORD_HEADER   64
#define RECORD_BLOB_MAX UINT32_MAX

static void put_le(unsigned char *at, uint64_t value, unsigned int bytes)
{
	for (unsigned int i = 0; i < bytes; i++)
		at[i] = (unsigned char)(value >> (8 * i));
}

static uint64_t get_le(const unsigned char *at, unsigned int bytes)
{
	uint64_t value = 0;

	for (unsigned int i = 0; i < bytes; i++)
		value |= (uint64_t)at[i] << (8 * i);
	return value;
}

/*
 * An address, a key exactly for each region of non-zero length, and whole
 * stream addresses (at most PEER_STREAM_ADDRESSES_MAX).
 */
bool peer_record_is_valid(const struct peer_record *record)
{
	return record->address && record->address_length > 0 &&
	       (record->ram_key_length > 0) == (record->ram_bytes > 0) &&
	       (!record->ram_key_length || record->ram_key) &&
	       (record->state_key_length > 0) == (record->state_bytes > 0) &&
	       (!record->state_key_length || record->state_key) &&
	       record->stream_length % PEER_STREAM_ADDRESS_BYTES == 0 &&
	       record->stream_length <= PEER_STREAM_ADDRESSES_MAX * PEER_STREAM_ADDRESS_BYTES &&
	       (!record->stream_length || record->stream);
}

nopfs_status peer_record_pack(const struct peer_record *record, void **buffer, size_t *length)
{
	size_t total;
	unsigned char *out, *at;

	if (!peer_record_is_valid(record) || record->address_length > RECORD_BLOB_MAX ||
	    record->ram_key_length > RECORD_BLOB_MAX ||
	    record->state_key_length > RECORD_BLOB_MAX) {
		nopfs_error("cannot pack an invalid peer record");
		return NOPFS_ERR_INVALID;
	}
	total = RECORD_HEADER + record->address_length + record->ram_key_length +
	        record->state_key_length + record->stream_length;
	out = malloc(total);
	if (!out) {
		nopfs_error("no memory to pack a peer record of %zu bytes", total);
		return NOPFS_ERR_NOMEM;
	}
	put_le(out, RECORD_MAGIC, 4);
	put_le(out + 4, RECORD_VERSION, 2);
	put_le(out + 6, RECORD_HEADER, 2);
	put_le(out + 8, record->ram_base, 8);
	put_le(out + 16, record->ram_bytes, 8);
	put_le(out + 24, record->state_base, 8);
	put_le(out + 32, record->state_bytes, 8);
	put_le(out + 40, record->address_length, 4);
	put_le(out + 44, record->ram_key_length, 4);
	put_le(out + 48, record->state_key_length, 4);
	put_le(out + 52, record->stream_length, 4);
	put_le(out + 56, total, 8);
	at = out + RECORD_HEADER;
	memcpy(at, record->address, record->address_length);
	at += record->address_length;
	if (record->ram_key_length)
		memcpy(at, record->ram_key, record->ram_key_length);
	at += record->ram_key_length;
	if (record->state_key_length)
		memcpy(at, record->state_key, record->state_key_length);
	at += record->state_key_length;
	if (record->stream_length)
		memcpy(at, record->stream, record->stream_length);
	*buffer = out;
	*length = total;
	return NOPFS_OK;
}

nopfs_status peer_record_unpack(const void *buffer, size_t length, struct peer_record *record)
{
	const unsigned char *in = buffer;
	struct peer_record parsed;
	uint64_t blobs;

	if (!buffer || length < RECORD_HEADER) {
		nopfs_error("peer record of %zu bytes is shorter than its header", length);
		return NOPFS_ERR_FORMAT;
	}
	if (get_le(in, 4) != RECORD_MAGIC || get_le(in + 4, 2) != RECORD_VERSION ||
	    get_le(in + 6, 2) != RECORD_HEADER) {
		nopfs_error("not a peer record of version %d (magic, version or header differ)",
		            RECORD_VERSION);
		return NOPFS_ERR_FORMAT;
	}
	parsed = (struct peer_record){
		.ram_base = get_le(in + 8, 8),
		.ram_bytes = get_le(in + 16, 8),
		.state_base = get_le(in + 24, 8),
		.state_bytes = get_le(in + 32, 8),
		.address_length = get_le(in + 40, 4),
		.ram_key_length = get_le(in + 44, 4),
		.state_key_length = get_le(in + 48, 4),
		.stream_length = get_le(in + 52, 4),
	};
	/* Each length is below 2^32: the sum cannot overflow 64 bits. */
	blobs = (uint64_t)parsed.address_length + parsed.ram_key_length + parsed.state_key_length +
	        parsed.stream_length;
	if (get_le(in + 56, 8) != length || blobs != length - RECORD_HEADER) {
		nopfs_error("peer record of %zu bytes: its lengths do not add up", length);
		return NOPFS_ERR_FORMAT;
	}
	parsed.address = (void *)(in + RECORD_HEADER);
	parsed.ram_key =
	        parsed.ram_key_length ? (char *)parsed.address + parsed.address_length : NULL;
	parsed.state_key =
	        parsed.state_key_length
	                ? (char *)parsed.address + parsed.address_length + parsed.ram_key_length
	                : NULL;
	parsed.stream = parsed.stream_length
	                        ? (char *)parsed.address + parsed.address_length +
	                                  parsed.ram_key_length + parsed.state_key_length
	                        : NULL;
	if (!peer_record_is_valid(&parsed)) {
		nopfs_error("peer record without an address, with a key without a region, or "
		            "with a stream address list of the wrong length");
		return NOPFS_ERR_FORMAT;
	}
	*record = parsed;
	return NOPFS_OK;
}
