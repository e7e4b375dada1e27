/*
 * CRC32C (Castagnoli, the iSCSI and ext4 checksum): the end-to-end check of
 * a sample's bytes (the agent's --verify). The SSE4.2 instruction where the
 * CPU has it, else a table; both give the same value.
 */
#ifndef NOPFS_CRC32C_H
#define NOPFS_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC32C of @size bytes at @data (0 for none). */
uint32_t nopfs_crc32c(const void *data, size_t size);

/* The same by table only (to test that both ways agree). */
uint32_t nopfs_crc32c_table(const void *data, size_t size);

#endif
