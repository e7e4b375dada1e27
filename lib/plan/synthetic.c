/* Synthetic sample sizes with a pinned generator. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "mt19937.h"
#include "synthetic.h"
#include "common/units.h"

/* A uniform double in (0, 1) from two 32-bit draws. */
static double uniform_open(struct nopfs_mt19937 *mt)
{
	uint64_t high = nopfs_mt19937_next(mt) >> 5, low = nopfs_mt19937_next(mt) >> 6;

	return ((double)(high * 67108864 + low) + 0.5) / 9007199254740992.0;
}

void nopfs_synthetic_sizes(const struct nopfs_synthetic *spec, uint64_t *sizes)
{
	struct nopfs_mt19937 mt;

	nopfs_mt19937_seed(&mt, spec->seed);
	for (uint64_t k = 0; k < spec->count; k++) {
		double size;

		if (spec->stddev == 0) {
			sizes[k] = spec->mean ? spec->mean : 1;
			continue;
		}
		do {
			double u = uniform_open(&mt), v = uniform_open(&mt);

			size = (double)spec->mean +
			       (double)spec->stddev * sqrt(-2 * log(u)) * cos(2 * M_PI * v);
		} while (size < 1);
		sizes[k] = (uint64_t)llround(size);
	}
}

nopfs_status nopfs_synthetic_parse(const char *text, const char *what, struct nopfs_synthetic *spec)
{
	char copy[128];
	char *count_text, *mean_text, *stddev_text, *save = NULL;
	struct nopfs_synthetic parsed = { .seed = 0 };

	if (strlen(text) >= sizeof(copy))
		goto out_malformed;
	strcpy(copy, text);
	count_text = strtok_r(copy, ":", &save);
	mean_text = strtok_r(NULL, ":", &save);
	stddev_text = strtok_r(NULL, ":", &save);
	if (!count_text || !mean_text || strtok_r(NULL, ":", &save))
		goto out_malformed;
	if (nopfs_parse_uint(count_text, 1, UINT32_MAX, &parsed.count) != NOPFS_OK) {
		nopfs_error("%s: sample count '%s' must be 1 .. %u", what, count_text, UINT32_MAX);
		return NOPFS_ERR_RANGE;
	}
	if (nopfs_parse_size(mean_text, &parsed.mean) != NOPFS_OK || parsed.mean == 0) {
		nopfs_error("%s: mean size '%s' is not a positive size (e.g. 110K)", what,
		            mean_text);
		return NOPFS_ERR_INVALID;
	}
	if (stddev_text && nopfs_parse_size(stddev_text, &parsed.stddev) != NOPFS_OK) {
		nopfs_error("%s: standard deviation '%s' is not a size (e.g. 20K)", what,
		            stddev_text);
		return NOPFS_ERR_INVALID;
	}
	*spec = parsed;
	return NOPFS_OK;

out_malformed:
	nopfs_error("%s: '%s' is not COUNT:MEAN[:STDDEV] (e.g. 1281167:110K:20K)", what, text);
	return NOPFS_ERR_FORMAT;
}
