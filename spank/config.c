/*
 * plugstack.conf arguments, e.g.
 *   optional /usr/lib/slurm/spank_nopfs.so tiers=ram:40% ssd_base=/local report_dir=/scratch/r
 * A bad argument does not fail jobs that do not use nopfs: it is kept in
 * config->error and every nopfs option fails with it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "plugin.h"
#include "plan/tierspec.h"
#include "common/units.h"

#ifndef NOPFS_BINDIR
#define NOPFS_BINDIR "/usr/bin"
#endif
#ifndef NOPFS_PRELOAD
#define NOPFS_PRELOAD "/usr/lib/libnopfs_preload.so"
#endif

struct config_key {
	const char *name;
	const char *accepted;
	int (*parse)(struct spank_config *config, const struct config_key *key, const char *value);
	size_t offset; /* of the field parsed */
	size_t size;
};

static int fail(struct spank_config *config, const struct config_key *key, const char *value)
{
	snprintf(config->error, sizeof(config->error),
	         "plugstack.conf: %s=%.200s is not valid; accepted: %s", key->name, value,
	         key->accepted);
	return -1;
}

static int parse_path(struct spank_config *config, const struct config_key *key, const char *value)
{
	char *field = (char *)config + key->offset;

	if (value[0] != '/' || strlen(value) >= key->size)
		return fail(config, key, value);
	strcpy(field, value);
	return 0;
}

static int parse_bool(struct spank_config *config, const struct config_key *key, const char *value)
{
	bool *field = (bool *)((char *)config + key->offset);

	if (strcmp(value, "yes") == 0 || strcmp(value, "1") == 0)
		*field = true;
	else if (strcmp(value, "no") == 0 || strcmp(value, "0") == 0)
		*field = false;
	else
		return fail(config, key, value);
	return 0;
}

static int parse_seconds(struct spank_config *config, const struct config_key *key,
                         const char *value)
{
	unsigned int *field = (unsigned int *)((char *)config + key->offset);
	uint64_t seconds;

	if (nopfs_parse_uint(value, 0, 3600, &seconds) != NOPFS_OK)
		return fail(config, key, value);
	*field = (unsigned int)seconds;
	return 0;
}

static int parse_percent(struct spank_config *config, const struct config_key *key,
                         const char *value)
{
	char *end;
	double percent = strtod(value, &end);

	if (end == value || strcmp(end, "%") != 0 || !(percent > 0 && percent <= 100))
		return fail(config, key, value);
	config->ram_max_percent = percent;
	return 0;
}

static int parse_size(struct spank_config *config, const struct config_key *key, const char *value)
{
	char *field = (char *)config + key->offset;
	uint64_t bytes;

	if (nopfs_parse_size(value, &bytes) != NOPFS_OK || bytes == 0 || strlen(value) >= key->size)
		return fail(config, key, value);
	strcpy(field, value);
	return 0;
}

/* A size in bytes (K, M, G, T: powers of 1024); 0 for none. */
static int parse_bytes(struct spank_config *config, const struct config_key *key, const char *value)
{
	uint64_t *field = (uint64_t *)((char *)config + key->offset);
	uint64_t bytes;

	if (nopfs_parse_size(value, &bytes) != NOPFS_OK)
		return fail(config, key, value);
	*field = bytes;
	return 0;
}

/* A duration: N (at least 1) with s, m, h or d, into seconds. */
static int parse_duration(struct spank_config *config, const struct config_key *key,
                          const char *value)
{
	static const struct {
		char suffix;
		uint64_t seconds;
	} units[] = { { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 } };
	uint64_t *field = (uint64_t *)((char *)config + key->offset);
	size_t length = strlen(value);
	char number[24];
	uint64_t count;

	if (length < 2 || length - 1 >= sizeof(number))
		return fail(config, key, value);
	memcpy(number, value, length - 1);
	number[length - 1] = '\0';
	/* at most 100 years in any unit: no overflow, and no typo taken for "never" */
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (value[length - 1] == units[i].suffix) {
			if (nopfs_parse_uint(number, 1, 3155760000ull / units[i].seconds, &count) !=
			    NOPFS_OK)
				break;
			*field = count * units[i].seconds;
			return 0;
		}
	return fail(config, key, value);
}

static int parse_tiers(struct spank_config *config, const struct config_key *key, const char *value)
{
	struct nopfs_tier_list list = { 0 };
	nopfs_status status;
	const char *held;

	if (strlen(value) >= sizeof(config->tiers))
		return fail(config, key, value);
	/* held: shown only to users of nopfs, with the other plugstack.conf errors */
	nopfs_log_hold();
	status = nopfs_tierspec_parse(value, "tiers", false, &list);
	held = nopfs_log_release();
	if (status != NOPFS_OK) {
		if (config->error[0] == '\0')
			snprintf(config->error, sizeof(config->error), "plugstack.conf: %.400s",
			         held);
		return -1;
	}
	strcpy(config->tiers, value);
	return 0;
}

#define FIELD(name) offsetof(struct spank_config, name), sizeof(((struct spank_config *)0)->name)

static const struct config_key keys[] = {
	{ "enable", "yes or no", parse_bool, FIELD(enabled) },
	{ "bindir", "an absolute directory (nopfs-agent, nopfs-report)", parse_path,
	  FIELD(bindir) },
	{ "preload", "the absolute path of libnopfs_preload.so", parse_path, FIELD(preload) },
	{ "srun", "the absolute path of srun", parse_path, FIELD(srun) },
	{ "tiers", "a tier list such as ram:40%,ssd:200G", parse_tiers, FIELD(tiers) },
	{ "ram_max", "a share of node memory such as 50%", parse_percent, FIELD(ram_max_percent) },
	{ "ssd_base", "an absolute directory on node-local storage", parse_path, FIELD(ssd_base) },
	{ "probe_cache", "an absolute directory", parse_path, FIELD(probe_cache) },
	{ "max_sample_size", "a size such as 64M (larger samples are not staged)", parse_size,
	  FIELD(max_sample_size) },
	{ "report_dir", "an absolute directory every node and srun see", parse_path,
	  FIELD(report_dir) },
	{ "ready_timeout", "seconds, 0 to 3600", parse_seconds, FIELD(ready_timeout) },
	{ "report_wait", "seconds, 0 to 3600", parse_seconds, FIELD(report_wait) },
	{ "admin_comment", "yes or no", parse_bool, FIELD(admin_comment) },
	{ "sacctmgr", "the absolute path of sacctmgr", parse_path, FIELD(sacctmgr) },
	{ "cache_base",
	  "an absolute directory on node-local storage, owned by root, writable by root only",
	  parse_path, FIELD(cache_base) },
	{ "cache_limit", "a size such as 500G (0: no limit)", parse_bytes, FIELD(cache_limit) },
	{ "cache_max_age", "a duration such as 30d (a whole number, at least 1, and s, m, h or d)",
	  parse_duration, FIELD(cache_max_age) },
};

static void set_defaults(struct spank_config *config)
{
	memset(config, 0, sizeof(*config));
	config->enabled = true;
	snprintf(config->bindir, sizeof(config->bindir), "%s", NOPFS_BINDIR);
	snprintf(config->preload, sizeof(config->preload), "%s", NOPFS_PRELOAD);
	snprintf(config->srun, sizeof(config->srun), "%s", "/usr/bin/srun");
	snprintf(config->sacctmgr, sizeof(config->sacctmgr), "%s", "/usr/bin/sacctmgr");
	snprintf(config->tiers, sizeof(config->tiers), "%s", "ram:40%");
	config->ram_max_percent = 60;
	config->ready_timeout = 120;
	config->report_wait = 20;
}

void config_parse(struct spank_config *config, int argc, char **argv)
{
	set_defaults(config);
	for (int i = 0; i < argc && config->error[0] == '\0'; i++) {
		const char *equals = strchr(argv[i], '=');
		size_t length = equals ? (size_t)(equals - argv[i]) : strlen(argv[i]);
		const struct config_key *key = NULL;

		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if (strlen(keys[k].name) == length &&
			    strncmp(keys[k].name, argv[i], length) == 0)
				key = &keys[k];
		if (!key) {
			snprintf(config->error, sizeof(config->error),
			         "plugstack.conf: unknown key '%.*s'", (int)length, argv[i]);
			return;
		}
		if (!equals) {
			snprintf(config->error, sizeof(config->error),
			         "plugstack.conf: key '%s' needs a value (%s=...)", key->name,
			         key->name);
			return;
		}
		key->parse(config, key, equals + 1);
	}
	/* limits without a place for the caches are a slip: say which key is missing */
	if (config->error[0] == '\0' && config->cache_base[0] == '\0' &&
	    (config->cache_limit > 0 || config->cache_max_age > 0))
		snprintf(config->error, sizeof(config->error),
		         "plugstack.conf: %s needs cache_base (the directory of the kept caches)",
		         config->cache_limit > 0 ? "cache_limit" : "cache_max_age");
}
