/*
 * The catalog as one self-contained buffer, and the little-endian writer and
 * reader the catalog cache shares.
 *
 * Layout (integers little-endian):
 *   0  magic "NOPFSCAT"
 *   8  u32 version (1)
 *  12  u32 flags: bit 0 samples have paths, bit 1 a root follows
 *  16  u64 payload length (the bytes after this 32-byte header)
 *  24  u64 FNV-1a 64 of the 24 bytes above, continued over the payload
 *  32  payload: u64 count, u32 class count, [root], class names, count u64
 *      sizes, count i64 labels, [u64 length of the paths, the paths each
 *      NUL-terminated]. Strings are a u32 length and the bytes, no NUL.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_internal.h"
#include "common/log.h"

#define CATALOG_MAGIC     "NOPFSCAT"
#define CATALOG_VERSION   1
#define CATALOG_HEADER    32
#define CATALOG_HAS_PATHS 0x1u
#define CATALOG_HAS_ROOT  0x2u

static bool writer_reserve(struct catalog_writer *writer, size_t length)
{
	size_t capacity = writer->capacity ? writer->capacity : 256;
	uint8_t *data;

	if (writer->failed)
		return false;
	if (length > SIZE_MAX - writer->length)
		goto out_failed;
	if (writer->length + length <= writer->capacity)
		return true;
	while (capacity < writer->length + length) {
		if (capacity > SIZE_MAX / 2)
			goto out_failed;
		capacity *= 2;
	}
	data = realloc(writer->data, capacity);
	if (!data)
		goto out_failed;
	writer->data = data;
	writer->capacity = capacity;
	return true;

out_failed:
	writer->failed = true;
	return false;
}

void nopfs_catalog_write_bytes(struct catalog_writer *writer, const void *bytes, size_t length)
{
	if (!writer_reserve(writer, length))
		return;
	if (length)
		memcpy(writer->data + writer->length, bytes, length);
	writer->length += length;
}

void nopfs_catalog_write_u32(struct catalog_writer *writer, uint32_t value)
{
	uint8_t bytes[4];
	int i;

	for (i = 0; i < 4; i++)
		bytes[i] = (uint8_t)(value >> (8 * i));
	nopfs_catalog_write_bytes(writer, bytes, sizeof(bytes));
}

void nopfs_catalog_write_u64(struct catalog_writer *writer, uint64_t value)
{
	uint8_t bytes[8];
	int i;

	for (i = 0; i < 8; i++)
		bytes[i] = (uint8_t)(value >> (8 * i));
	nopfs_catalog_write_bytes(writer, bytes, sizeof(bytes));
}

void nopfs_catalog_write_string(struct catalog_writer *writer, const char *string)
{
	size_t length = strlen(string);

	if (length > UINT32_MAX) {
		writer->failed = true;
		return;
	}
	nopfs_catalog_write_u32(writer, (uint32_t)length);
	nopfs_catalog_write_bytes(writer, string, length);
}

const uint8_t *nopfs_catalog_read_bytes(struct catalog_reader *reader, size_t length)
{
	const uint8_t *bytes;

	if (reader->failed || length > reader->length - reader->offset) {
		reader->failed = true;
		return NULL;
	}
	bytes = reader->data + reader->offset;
	reader->offset += length;
	return bytes;
}

static uint64_t load_le(const uint8_t *bytes, int count)
{
	uint64_t value = 0;
	int i;

	for (i = 0; i < count; i++)
		value |= (uint64_t)bytes[i] << (8 * i);
	return value;
}

uint32_t nopfs_catalog_read_u32(struct catalog_reader *reader)
{
	const uint8_t *bytes = nopfs_catalog_read_bytes(reader, 4);

	return bytes ? (uint32_t)load_le(bytes, 4) : 0;
}

uint64_t nopfs_catalog_read_u64(struct catalog_reader *reader)
{
	const uint8_t *bytes = nopfs_catalog_read_bytes(reader, 8);

	return bytes ? load_le(bytes, 8) : 0;
}

char *nopfs_catalog_read_string(struct catalog_reader *reader)
{
	uint32_t length = nopfs_catalog_read_u32(reader);
	const uint8_t *bytes = nopfs_catalog_read_bytes(reader, length);
	char *string;

	if (!bytes || memchr(bytes, '\0', length)) {
		reader->failed = true;
		return NULL;
	}
	string = malloc((size_t)length + 1);
	if (!string) {
		reader->failed = true;
		return NULL;
	}
	memcpy(string, bytes, length);
	string[length] = '\0';
	return string;
}

/* FNV-1a 64 of the header before the checksum field, then of the payload. */
static uint64_t checksum(const uint8_t *data, size_t length)
{
	uint64_t hash = nopfs_catalog_fnv1a(CATALOG_FNV_INIT, data, 24);

	return nopfs_catalog_fnv1a(hash, data + CATALOG_HEADER, length - CATALOG_HEADER);
}

static void store_le(uint8_t *bytes, uint64_t value)
{
	int i;

	for (i = 0; i < 8; i++)
		bytes[i] = (uint8_t)(value >> (8 * i));
}

nopfs_status nopfs_catalog_serialize(const struct nopfs_catalog *catalog, void **buffer,
                                     size_t *length)
{
	struct catalog_writer writer = { 0 };
	uint64_t index, payload;
	uint32_t flags = 0, i;

	if (catalog->paths)
		flags |= CATALOG_HAS_PATHS;
	if (catalog->root)
		flags |= CATALOG_HAS_ROOT;
	writer_reserve(&writer, CATALOG_HEADER + 16 * catalog->count + catalog->paths_length + 64);
	nopfs_catalog_write_bytes(&writer, CATALOG_MAGIC, 8);
	nopfs_catalog_write_u32(&writer, CATALOG_VERSION);
	nopfs_catalog_write_u32(&writer, flags);
	nopfs_catalog_write_u64(&writer, 0); /* payload length, patched below */
	nopfs_catalog_write_u64(&writer, 0); /* checksum, patched below */
	nopfs_catalog_write_u64(&writer, catalog->count);
	nopfs_catalog_write_u32(&writer, catalog->class_count);
	if (catalog->root)
		nopfs_catalog_write_string(&writer, catalog->root);
	for (i = 0; i < catalog->class_count; i++)
		nopfs_catalog_write_string(&writer, catalog->class_names[i]);
	for (index = 0; index < catalog->count; index++)
		nopfs_catalog_write_u64(&writer, catalog->sizes[index]);
	for (index = 0; index < catalog->count; index++)
		nopfs_catalog_write_u64(&writer, (uint64_t)catalog->labels[index]);
	if (catalog->paths) {
		nopfs_catalog_write_u64(&writer, catalog->paths_length);
		nopfs_catalog_write_bytes(&writer, catalog->paths, catalog->paths_length);
	}
	if (writer.failed) {
		free(writer.data);
		nopfs_error("out of memory serializing a catalog of %" PRIu64 " samples",
		            catalog->count);
		return NOPFS_ERR_NOMEM;
	}
	payload = writer.length - CATALOG_HEADER;
	store_le(writer.data + 16, payload);
	store_le(writer.data + 24, checksum(writer.data, writer.length));
	*buffer = writer.data;
	*length = writer.length;
	return NOPFS_OK;
}

/* Check the header; on success the reader is positioned on the payload. */
static nopfs_status decode_header(struct catalog_reader *reader, uint32_t *flags,
                                  const char **reason)
{
	const uint8_t *magic = nopfs_catalog_read_bytes(reader, 8);
	uint32_t version = nopfs_catalog_read_u32(reader);
	uint64_t payload, sum;

	*flags = nopfs_catalog_read_u32(reader);
	payload = nopfs_catalog_read_u64(reader);
	sum = nopfs_catalog_read_u64(reader);
	if (reader->failed)
		*reason = "shorter than its header";
	else if (memcmp(magic, CATALOG_MAGIC, 8) != 0)
		*reason = "bad magic (not a serialized catalog)";
	else if (version != CATALOG_VERSION)
		*reason = "unsupported version";
	else if (*flags & ~(CATALOG_HAS_PATHS | CATALOG_HAS_ROOT))
		*reason = "unknown flags";
	else if (payload != reader->length - CATALOG_HEADER)
		*reason = "length does not match the header (truncated or padded)";
	else if (CATALOG_CHECKSUMS && checksum(reader->data, reader->length) != sum)
		*reason = "checksum mismatch (corrupt)";
	else
		return NOPFS_OK;
	return NOPFS_ERR_FORMAT;
}

static const char *decode_arrays(struct catalog_reader *reader, struct nopfs_catalog *catalog)
{
	uint64_t count = catalog->count, index;
	const uint8_t *sizes, *labels;

	if (count > (reader->length - reader->offset) / 16)
		return "sample arrays truncated";
	catalog->sizes = malloc(count * sizeof(*catalog->sizes));
	catalog->labels = malloc(count * sizeof(*catalog->labels));
	if (!catalog->sizes || !catalog->labels)
		return "out of memory";
	catalog->capacity = count;
	sizes = nopfs_catalog_read_bytes(reader, count * 8);
	labels = nopfs_catalog_read_bytes(reader, count * 8);
	for (index = 0; index < count; index++) {
		catalog->sizes[index] = load_le(sizes + 8 * index, 8);
		catalog->labels[index] = (int64_t)load_le(labels + 8 * index, 8);
		if (catalog->class_count &&
		    (catalog->labels[index] < 0 || catalog->labels[index] >= catalog->class_count))
			return "label out of the class range";
	}
	return NULL;
}

static const char *decode_paths(struct catalog_reader *reader, struct nopfs_catalog *catalog)
{
	uint64_t length = nopfs_catalog_read_u64(reader), offset = 0, index;
	const uint8_t *bytes;

	if (length > reader->length - reader->offset)
		return "paths truncated";
	bytes = nopfs_catalog_read_bytes(reader, length);
	catalog->paths = malloc(length ? length : 1);
	catalog->path_offsets = malloc(catalog->count * sizeof(*catalog->path_offsets));
	if (!catalog->paths || !catalog->path_offsets)
		return "out of memory";
	if (length)
		memcpy(catalog->paths, bytes, length);
	catalog->paths_length = length;
	catalog->paths_capacity = length ? length : 1;
	for (index = 0; index < catalog->count; index++) {
		const char *end;

		if (offset >= length)
			return "fewer paths than samples";
		end = memchr(catalog->paths + offset, '\0', length - offset);
		if (!end)
			return "unterminated path";
		if (end == catalog->paths + offset)
			return "empty path";
		catalog->path_offsets[index] = offset;
		offset = (uint64_t)(end - catalog->paths) + 1;
	}
	if (offset != length)
		return "more paths than samples";
	return NULL;
}

static const char *decode_payload(struct catalog_reader *reader, uint32_t flags,
                                  struct nopfs_catalog *catalog)
{
	uint32_t class_count, i;
	const char *reason;

	catalog->count = nopfs_catalog_read_u64(reader);
	class_count = nopfs_catalog_read_u32(reader);
	if (reader->failed)
		return "payload truncated";
	if (catalog->count == 0 || catalog->count > CATALOG_NO_SAMPLE)
		return "sample count out of range";
	if (flags & CATALOG_HAS_ROOT) {
		catalog->root = nopfs_catalog_read_string(reader);
		if (!catalog->root)
			return "bad root";
	}
	if (class_count > (reader->length - reader->offset) / 4)
		return "class names truncated";
	catalog->class_names = calloc(class_count ? class_count : 1, sizeof(char *));
	if (!catalog->class_names)
		return "out of memory";
	catalog->class_capacity = class_count;
	for (i = 0; i < class_count; i++) {
		catalog->class_names[i] = nopfs_catalog_read_string(reader);
		if (!catalog->class_names[i])
			return "bad class name";
		catalog->class_count++;
	}
	reason = decode_arrays(reader, catalog);
	if (reason)
		return reason;
	if (flags & CATALOG_HAS_PATHS) {
		reason = decode_paths(reader, catalog);
		if (reason)
			return reason;
	}
	if (reader->offset != reader->length)
		return "trailing bytes";
	return NULL;
}

nopfs_status nopfs_catalog_decode(const void *buffer, size_t length, struct nopfs_catalog **out,
                                  const char **reason)
{
	struct catalog_reader reader = { .data = buffer, .length = length };
	struct nopfs_catalog *catalog;
	uint64_t first, second;
	uint32_t flags;
	nopfs_status status;

	status = decode_header(&reader, &flags, reason);
	if (status)
		return status;
	catalog = calloc(1, sizeof(*catalog));
	if (!catalog) {
		*reason = "out of memory";
		return NOPFS_ERR_NOMEM;
	}
	*reason = decode_payload(&reader, flags, catalog);
	if (*reason) {
		status = strcmp(*reason, "out of memory") ? NOPFS_ERR_FORMAT : NOPFS_ERR_NOMEM;
		goto out_destroy;
	}
	status = nopfs_catalog_seal(catalog, &first, &second);
	if (status == NOPFS_ERR_DUPLICATE)
		*reason = "duplicate path";
	else if (status)
		*reason = nopfs_status_string(status);
	if (status)
		goto out_destroy;
	*out = catalog;
	return NOPFS_OK;

out_destroy:
	nopfs_catalog_destroy(catalog);
	return status == NOPFS_ERR_DUPLICATE ? NOPFS_ERR_FORMAT : status;
}

nopfs_status nopfs_catalog_deserialize(const void *buffer, size_t length,
                                       struct nopfs_catalog **out)
{
	const char *reason = NULL;
	nopfs_status status;

	status = nopfs_catalog_decode(buffer, length, out, &reason);
	if (status)
		nopfs_error("cannot load serialized catalog (%zu bytes): %s", length, reason);
	return status;
}
