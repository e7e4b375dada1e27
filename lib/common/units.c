/* Byte sizes and counts as users write them. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "units.h"

static int suffix_shift(const char *suffix)
{
	static const struct {
		char letter;
		int shift;
	} units[] = { { 'k', 10 }, { 'm', 20 }, { 'g', 30 }, { 't', 40 }, { 'p', 50 } };
	char letter = (char)tolower((unsigned char)suffix[0]);

	if (suffix[0] == '\0' || strcasecmp(suffix, "b") == 0)
		return 0;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (letter != units[i].letter)
			continue;
		if (suffix[1] == '\0' || strcasecmp(suffix + 1, "b") == 0 ||
		    strcasecmp(suffix + 1, "ib") == 0)
			return units[i].shift;
	}
	return -1;
}

nopfs_status nopfs_parse_size(const char *text, uint64_t *bytes)
{
	char *end;
	double number, scaled;
	int shift;

	if (!isdigit((unsigned char)text[0]) && text[0] != '.')
		return NOPFS_ERR_INVALID;
	errno = 0;
	number = strtod(text, &end);
	if (errno || end == text || !isfinite(number) || number < 0)
		return NOPFS_ERR_INVALID;
	shift = suffix_shift(end);
	if (shift < 0)
		return NOPFS_ERR_INVALID;
	scaled = ldexp(number, shift);
	if (scaled >= 18446744073709551616.0)
		return NOPFS_ERR_RANGE;
	*bytes = (uint64_t)llround(scaled);
	return NOPFS_OK;
}

nopfs_status nopfs_parse_uint(const char *text, uint64_t min, uint64_t max, uint64_t *value)
{
	unsigned long long parsed;
	char *end;

	if (!isdigit((unsigned char)text[0]))
		return NOPFS_ERR_INVALID;
	errno = 0;
	parsed = strtoull(text, &end, 10);
	if (*end != '\0')
		return NOPFS_ERR_INVALID;
	if (errno == ERANGE || parsed < min || parsed > max)
		return NOPFS_ERR_RANGE;
	*value = parsed;
	return NOPFS_OK;
}

char *nopfs_format_size(uint64_t bytes, char *buffer, size_t length)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double value = (double)bytes;
	unsigned int i = 0;

	while (value >= 1024 && i + 1 < sizeof(unit) / sizeof(unit[0])) {
		value /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buffer, length, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buffer, length, "%.2f %s", value, unit[i]);
	return buffer;
}

bool nopfs_parse_uint_option(const char *option, const char *text, uint64_t min, uint64_t max,
                             uint64_t *value)
{
	if (nopfs_parse_uint(text, min, max, value) == NOPFS_OK)
		return true;
	nopfs_error("--%s: '%s' is not an integer in %" PRIu64 " .. %" PRIu64, option, text, min,
	            max);
	return false;
}
