/* Parsing of tier specifications ("ram:8G,ssd:/scratch:100G"). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "tierspec.h"
#include "common/units.h"

#define TIERSPEC_ACCEPTED "accepted: ram:SIZE, ram:N%%, ssd:DIR:SIZE (SIZE like 512M, 8G, 1.5T)"

const char *nopfs_tier_kind_name(nopfs_tier_kind kind)
{
	return kind == NOPFS_TIER_RAM ? "ram" : "ssd";
}

static nopfs_status parse_percent(const char *text, double *percent)
{
	char *end;
	double value = strtod(text, &end);

	if (end == text || strcmp(end, "%") != 0 || !isfinite(value) || value <= 0 || value > 100)
		return NOPFS_ERR_INVALID;
	*percent = value;
	return NOPFS_OK;
}

/* Parse one "kind:..." item of @length bytes at @text. */
static nopfs_status parse_one(const char *text, size_t length, const char *what, bool require_path,
                              struct nopfs_tier_spec *tier)
{
	char item[NOPFS_TIER_PATH_MAX + 64];
	char *colon, *size_text;

	if (length == 0 || length >= sizeof(item)) {
		nopfs_error("%s: tier '%.*s' is %s; " TIERSPEC_ACCEPTED, what, (int)length, text,
		            length ? "too long" : "empty");
		return NOPFS_ERR_INVALID;
	}
	memcpy(item, text, length);
	item[length] = '\0';
	memset(tier, 0, sizeof(*tier));

	colon = strchr(item, ':');
	if (!colon) {
		nopfs_error("%s: tier '%s' has no size; " TIERSPEC_ACCEPTED, what, item);
		return NOPFS_ERR_INVALID;
	}
	*colon = '\0';
	if (strcmp(item, "ram") == 0) {
		tier->kind = NOPFS_TIER_RAM;
		size_text = colon + 1;
		if (strchr(size_text, '%')) {
			if (parse_percent(size_text, &tier->percent) != NOPFS_OK) {
				nopfs_error("%s: tier 'ram:%s': percentage must be in (0, 100]",
				            what, size_text);
				return NOPFS_ERR_INVALID;
			}
			tier->is_percent = true;
			return NOPFS_OK;
		}
	} else if (strcmp(item, "ssd") == 0) {
		char *last = strrchr(colon + 1, ':');

		tier->kind = NOPFS_TIER_SSD;
		if (last) {
			*last = '\0';
			size_text = last + 1;
			if (colon[1] != '/') {
				nopfs_error("%s: tier 'ssd:%s:%s': the directory must be an "
				            "absolute path",
				            what, colon + 1, size_text);
				return NOPFS_ERR_INVALID;
			}
			snprintf(tier->path, sizeof(tier->path), "%s", colon + 1);
		} else if (require_path) {
			nopfs_error("%s: tier 'ssd:%s' names no directory; " TIERSPEC_ACCEPTED,
			            what, colon + 1);
			return NOPFS_ERR_INVALID;
		} else {
			size_text = colon + 1;
		}
	} else {
		nopfs_error("%s: unknown tier kind '%s'; " TIERSPEC_ACCEPTED, what, item);
		return NOPFS_ERR_INVALID;
	}
	switch (nopfs_parse_size(size_text, &tier->capacity)) {
	case NOPFS_OK:
		break;
	case NOPFS_ERR_RANGE:
		nopfs_error("%s: tier size '%s' is too large", what, size_text);
		return NOPFS_ERR_RANGE;
	default:
		nopfs_error("%s: tier size '%s' is not a size; " TIERSPEC_ACCEPTED, what,
		            size_text);
		return NOPFS_ERR_INVALID;
	}
	if (tier->capacity == 0) {
		nopfs_error("%s: tier '%.*s' has size 0", what, (int)length, text);
		return NOPFS_ERR_INVALID;
	}
	return NOPFS_OK;
}

nopfs_status nopfs_tierspec_parse(const char *text, const char *what, bool require_path,
                                  struct nopfs_tier_list *list)
{
	struct nopfs_tier_list parsed = *list;
	const char *cursor = text;

	for (;;) {
		size_t length = strcspn(cursor, ",");
		nopfs_status status;

		if (parsed.count == NOPFS_TIERS_MAX) {
			nopfs_error("%s: more than %d tiers in '%s'", what, NOPFS_TIERS_MAX, text);
			return NOPFS_ERR_RANGE;
		}
		status = parse_one(cursor, length, what, require_path, &parsed.tier[parsed.count]);
		if (status != NOPFS_OK)
			return status;
		parsed.count++;
		if (cursor[length] == '\0')
			break;
		cursor += length + 1;
	}
	*list = parsed;
	return NOPFS_OK;
}
