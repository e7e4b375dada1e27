/* Parsing and printing of byte sizes and counts given by users. */
#ifndef NOPFS_UNITS_H
#define NOPFS_UNITS_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "status.h"

/*
 * Parse a size: a non-negative decimal number (fractions allowed) with an
 * optional binary suffix K, M, G, T or P (also KB/KiB ..., case-insensitive);
 * no suffix means bytes. "1.5G" is 1610612736. NOPFS_ERR_INVALID for
 * anything else, NOPFS_ERR_RANGE above 2^64 - 1. Logs nothing: callers name
 * the option or key in their own message.
 */
nopfs_status nopfs_parse_size(const char *text, uint64_t *bytes);

/*
 * Parse a decimal unsigned integer in [@min, @max] with nothing after it.
 * Logs nothing.
 */
nopfs_status nopfs_parse_uint(const char *text, uint64_t min, uint64_t max, uint64_t *value);

/*
 * nopfs_parse_uint() for the value of command-line option --@option: false
 * after an error message that names the option and the range.
 */
bool nopfs_parse_uint_option(const char *option, const char *text, uint64_t min, uint64_t max,
                             uint64_t *value);

/* Format @bytes as "1.50 GiB" into @buffer; returns @buffer. */
char *nopfs_format_size(uint64_t bytes, char *buffer, size_t length);

#endif
